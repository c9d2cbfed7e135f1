"""The Functionalize key's kernel, and PyTorch's functionalization helpers
(`torch._to_functional_tensor`, `torch._sync`, `torch._enable_functionalization`...).

Note: the Functionalize key
    A call on a FunctionalTensorWrapper (tensor_wrapper.py), or any call while
    `_enable_functionalization()` has put Functionalize in this thread's included set,
    reaches the key's boxed fallback below autograd and ADInplaceOrView. PyTorch registers
    one generated kernel per view and per mutating operator there plus a boxed fallback for
    the rest; pyaten registers the one fallback (pyaten/dispatch/fallbacks.py), which sorts
    the operator by its schema (Note: the three kinds of operator, in mode.py) and runs the
    same `Functionalizer` as the mode: a mutation runs its functional variant and commits the
    result to the written wrapper and its storage; a view records a ViewMeta on a new wrapper
    of the same storage; anything else syncs its wrappers and runs on their values, its
    results wrapped as new bases. A call with tensor arguments none of which is functional
    goes on below the key as written, its results plain, as ATen's fallback leaves them (so a
    transform's wrapper, a BatchedTensor, reaches its own kernel with the thread's included
    set as it was); a factory's results are wrapped.

    Its own calls run with Functionalize excluded (ATen's AutoDispatchSkipFunctionalize), so
    they reach the keys below: a logging mode or `make_fx` around a functionalized program
    sees only functional operators. They run with autograd on again, unless autograd was
    off when functionalization was enabled: the autograd kernel above the key recorded
    nothing for the wrapper (it never requires grad), so the values carry the graph and
    `functionalize(f)(x)` backpropagates into `x`, as torch.func.functionalize does.

    The kernel also keeps, for the wrappers, the bookkeeping ADInplaceOrView keeps for
    tensors: a view shares its base's version counter and names the root as `_base`, and a
    write bumps the counter. Autograd above the key (a transform inside functionalize,
    `functionalize(grad(f))`) then records on wrappers as on plain tensors. With views
    replayed as copies a view wrapper has its copy's geometry (as torch's), which autograd's
    strided window through the base would misread: such a recorded write is refused.

    Whether views are replayed as views or as their `*_copy` operators is this thread's
    setting (`_enable_functionalization(reapply_views=...)`), as ATen's
    FunctionalizationReapplyViews TLS.
"""

from __future__ import annotations

import threading
from typing import Any

from pyaten.autograd.grad_mode import is_grad_enabled
from pyaten.core.tensor import Tensor
from pyaten.dispatch import tls, trace
from pyaten.dispatch.fallbacks import set_functionalize_kernel
from pyaten.dispatch.keys import full_after
from pyaten.native.python_dispatch import overload_of, python_arguments
from pyaten.utils import _pytree

from .mode import Functionalizer, _classify
from .tensor_wrapper import FUNCTIONALIZE_BIT, GRAD_ABOVE, FunctionalTensorWrapper
from .wrapper import FunctionalStorage, FunctionalTensor, FunctionalValue

__all__ = [
    "functionalize_kernel",
    "_to_functional_tensor",
    "_from_functional_tensor",
    "_is_functional_tensor",
    "_functionalize_sync",
    "_sync",
    "_functionalize_replace",
    "_functionalize_commit_update",
    "_functionalize_has_data_mutation",
    "_functionalize_has_metadata_mutation",
    "_functionalize_is_multi_output_view",
    "_functionalize_mutation_counter",
    "_enable_functionalization",
    "_disable_functionalization",
]

_AUTOGRAD_KEYS = tls.AUTOGRAD_BITS | tls.AD_INPLACE_OR_VIEW_BIT
_BELOW_KEY = full_after("Functionalize").raw


class _Settings(threading.local):
    reapply_views: bool = False  # ATen's default, `_enable_functionalization()`'s too
    autograd_on_values: bool = True


_SETTINGS = _Settings()


class _KeyFunctionalizer(Functionalizer):
    """The Functionalizer of the key: FunctionalTensorWrappers, this thread's view setting."""

    wrapper_cls = FunctionalTensorWrapper
    refuses_mixed_writes = True

    @property
    def reapply_views(self) -> bool:  # type: ignore[override]
        return _SETTINGS.reapply_views

    def _mutation(self, func: Any, functional: Any, args: tuple, kwargs: dict) -> Any:
        if not _SETTINGS.reapply_views and GRAD_ABOVE.seen and is_grad_enabled():
            _refuse_recorded_write_through_copy(func, args, kwargs)
        return super()._mutation(func, functional, args, kwargs)

    def _view_of(self, base: Any, value: Tensor, meta: Any) -> Any:
        view = super()._view_of(base, value, meta)
        # a view of its base to autograd too (one version counter, `_base` the root), as
        # ADInplaceOrView makes it: a write into it above the key rebases its base's history
        view._vc = base._version_counter
        if meta.name != "detach.default":  # detach: one counter, no autograd view (torch's)
            view._base = base if base._base is None else base._base
        return view


_FUNCTIONALIZER = _KeyFunctionalizer()


def _refuse_recorded_write_through_copy(func: Any, args: tuple, kwargs: dict) -> None:
    """Autograd above the key (`functionalize(grad(f))`) rebases a written view's base
    through the view's strided window; with views replayed as copies the window is the
    copy's, not the view's, and the gradient would be wrong: refused instead. (Called only
    once a wrapper was made a leaf that requires grad: plain tensors that require grad are
    recorded on the values, below the key, exactly.)"""
    recorded = any(isinstance(t, FunctionalTensorWrapper) and t.requires_grad
                   for t in _pytree.tree_leaves((args, kwargs)))
    for i, arg in enumerate(func._schema.arguments):
        if arg.annotation is None or not arg.annotation.is_write:
            continue
        value = args[i] if i < len(args) else kwargs.get(arg.name)
        if isinstance(value, FunctionalTensorWrapper) and value._base is not None \
                and (recorded or value._base.requires_grad):
            raise NotImplementedError(
                f"{func}: functionalize(remove='mutations_and_views') cannot record the "
                "gradient of a write through a view of a tensor that requires grad above "
                "functionalization (views are copies there); use remove='mutations'"
            )


class _BelowFunctionalize(tls._Guard):
    """Functionalize skipped; autograd on unless it was off when functionalization began
    (Note: the Functionalize key)."""

    __slots__ = ()

    def _apply(self, included: int, excluded: int) -> tuple[int, int]:
        excluded |= FUNCTIONALIZE_BIT
        if _SETTINGS.autograd_on_values:
            excluded &= ~_AUTOGRAD_KEYS
        return included & ~FUNCTIONALIZE_BIT, excluded


def _has_functional_and_tensor(values: tuple) -> tuple[bool, bool]:
    functional = tensor = False
    for v in values:
        for t in (v if isinstance(v, (list, tuple)) else (v,)):
            if isinstance(t, Tensor):
                tensor = True
                if isinstance(t, FunctionalValue):
                    functional = True
    return functional, tensor


def functionalize_kernel(op: Any, keyset: Any, *values: Any) -> Any:
    """The Functionalize fallback (Note: the Functionalize key)."""
    functional, tensor = _has_functional_and_tensor(values)
    if tensor and not functional:
        # plain tensors (reaching the key through the thread's included set): the operator
        # runs as written and its results stay plain, as ATen's fallback leaves them
        if trace.ACTIVE:
            trace.note("functionalize", ran="no functional argument: passed below the key")
        return op.redispatch(keyset.raw & _BELOW_KEY, *values)
    func = overload_of(op)
    args, kwargs = python_arguments(op, values)
    if trace.ACTIVE:
        trace.note("functionalize", ran=_explain(func))
    with _BelowFunctionalize():
        out = _FUNCTIONALIZER._dispatch(func, args, kwargs)
    for i in _written(op):
        # a write is a new version of the wrapper, as ADInplaceOrView counts it: autograd
        # above the key refuses a saved wrapper written since (its value was replaced)
        if i < len(values):
            for t in values[i] if isinstance(values[i], (list, tuple)) else (values[i],):
                if isinstance(t, FunctionalTensorWrapper):
                    t._bump_version()
    return out


def _written(op: Any) -> tuple[int, ...]:
    """The positions of the arguments the operator writes (cached on the entry)."""
    written = op.__dict__.get("_functionalize_written")
    if written is None:
        written = op._functionalize_written = tuple(
            i for i, a in enumerate(op.schema.arguments)
            if a.annotation is not None and a.annotation.is_write)
    return written


set_functionalize_kernel(functionalize_kernel)


def _explain(func: Any) -> str:
    """What the kernel does with `func`, for explain()'s notes."""
    kind, functional = _classify(func)
    if kind == "mutation":
        return (f"mutation: runs {functional} and commits the result to the written tensor"
                if functional is not None else "mutation without a functional variant")
    if kind == "view":
        return "view: a new functional tensor of the same storage, one ViewMeta longer"
    if kind == "inplace_view":
        return "in-place view: the tensor's ViewMeta chain grows"
    return "functional: the wrappers synced, the operator run on their values"


# -- PyTorch's helpers --------------------------------------------------------------------------


def _check_functional(name: str, t: Any) -> FunctionalTensorWrapper:
    if not isinstance(t, FunctionalTensorWrapper):
        raise RuntimeError(
            f"{name}: expected a functional tensor (made by torch._to_functional_tensor), "
            f"got {'a plain tensor' if isinstance(t, Tensor) else type(t).__name__}"
        )
    return t


def _to_functional_tensor(t: Tensor) -> FunctionalTensorWrapper:
    """`t` wrapped as the base of a new functional storage (torch._to_functional_tensor)."""
    if not isinstance(t, Tensor):
        raise TypeError(
            f"_to_functional_tensor(): argument 't' must be Tensor, not {type(t).__name__}"
        )
    if isinstance(t, FunctionalTensorWrapper):
        raise RuntimeError("_to_functional_tensor: the tensor is already a functional tensor")
    return FunctionalTensorWrapper(t, FunctionalStorage(t, _SETTINGS.reapply_views))


def _from_functional_tensor(t: Tensor) -> Tensor:
    """A functional tensor's current value, without applying pending writes (call `_sync`
    first for those), as torch._from_functional_tensor."""
    return _check_functional("_from_functional_tensor", t).elem


def _is_functional_tensor(t: Any) -> bool:
    return isinstance(t, FunctionalTensorWrapper)


def _functionalize_sync(t: Tensor) -> None:
    """Apply the pending writes of `t`'s storage and regenerate `t` from its base
    (torch._functionalize_sync). The mode's FunctionalTensors are synced too."""
    if isinstance(t, FunctionalTensor):
        from .wrapper import _functionalize_sync as mode_sync

        mode_sync(t)
        return
    wrapper = _check_functional("_functionalize_sync", t)
    with _BelowFunctionalize():
        wrapper.sync()


def _sync(t: Tensor) -> None:
    """torch._sync: `_functionalize_sync` of a functional tensor."""
    _check_functional("_sync", t)
    _functionalize_sync(t)


def _functionalize_replace(self: Tensor, other: Tensor) -> None:
    """Make the plain tensor `other` the value of the functional tensor `self`
    (torch._functionalize_replace); `_functionalize_commit_update` records the write."""
    wrapper = _check_functional("_functionalize_replace", self)
    if isinstance(other, FunctionalTensorWrapper):
        raise RuntimeError(
            "_functionalize_replace: 'other' must be a plain tensor, not a functional tensor"
        )
    with _BelowFunctionalize():
        wrapper.replace_(other)


def _functionalize_commit_update(t: Tensor) -> None:
    """Record a functional tensor's new value on its storage, for its base and the other
    views of it to see on their next sync (torch._functionalize_commit_update)."""
    _check_functional("_functionalize_commit_update", t).commit_update()


def _functionalize_has_data_mutation(t: Tensor) -> bool:
    """Whether anything was written into `t`'s storage (through `t` or another view of it)."""
    return _check_functional("_functionalize_has_data_mutation", t).functional_storage \
        .generation > 0


def _functionalize_mutation_counter(t: Tensor) -> int:
    """The count of writes committed to `t`'s storage."""
    return _check_functional("_functionalize_mutation_counter", t).functional_storage.generation


def _functionalize_has_metadata_mutation(t: Tensor) -> bool:
    """Whether an in-place view operator (`t_`, `unsqueeze_`...) or `resize_` changed `t`'s
    geometry."""
    return _check_functional("_functionalize_has_metadata_mutation", t).has_metadata_mutation


def _functionalize_is_multi_output_view(t: Tensor) -> bool:
    """Whether `t` is, or is a view of, an output of a view operator with several (`split`,
    `unbind`...)."""
    metas = _check_functional("_functionalize_is_multi_output_view", t).view_metas
    return any(meta.out_index >= 0 for meta in metas)


def _enable_functionalization(reapply_views: bool = False) -> None:
    """Put Functionalize in this thread's included key set: every operator runs through
    functionalization, its tensor results wrapped (torch._enable_functionalization)."""
    state = tls.STATE
    if not state.included & FUNCTIONALIZE_BIT:
        _SETTINGS.autograd_on_values = not state.excluded & tls.AUTOGRAD_BITS
    _SETTINGS.reapply_views = bool(reapply_views)
    tls._set(state.included | FUNCTIONALIZE_BIT, state.excluded)


def _disable_functionalization() -> None:
    state = tls.STATE
    _SETTINGS.reapply_views = False
    _SETTINGS.autograd_on_values = True
    tls._set(state.included & ~FUNCTIONALIZE_BIT, state.excluded)


class _Functionalization:
    """`_enable_functionalization` for a block, the previous setting restored after it."""

    __slots__ = ("reapply_views", "saved")

    def __init__(self, reapply_views: bool) -> None:
        self.reapply_views = reapply_views

    def __enter__(self) -> None:
        state = tls.STATE
        self.saved = (state.included & FUNCTIONALIZE_BIT, _SETTINGS.reapply_views,
                      _SETTINGS.autograd_on_values, GRAD_ABOVE.seen)
        GRAD_ABOVE.seen = False
        _enable_functionalization(self.reapply_views)

    def __exit__(self, *exc: object) -> None:
        was_on, reapply, autograd, GRAD_ABOVE.seen = self.saved
        state = tls.STATE
        included = state.included | FUNCTIONALIZE_BIT if was_on else \
            state.included & ~FUNCTIONALIZE_BIT
        tls._set(included, state.excluded)
        _SETTINGS.reapply_views = reapply
        _SETTINGS.autograd_on_values = autograd
