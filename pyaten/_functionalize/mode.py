"""FunctionalTensorMode: the dispatch mode that runs a program's operators without mutation.

Note: the three kinds of operator
    Every ATen call below autograd reaches the mode (docs/python-dispatch.md), which sorts
    the operator by its schema, once:
    - a **view** (its first return aliases an input without writing it: `transpose`,
      `select`, `split`...) runs on the input's current value (its `*_copy` twin when views
      are removed) and gives a FunctionalTensor that shares the input's storage, with one
      more ViewMeta on its chain;
    - an **in-place view** (`t_`, `transpose_`, `unsqueeze_`...) makes its input that view;
    - a **mutation** (an argument annotated `a!`: in-place and out= operators) syncs its
      arguments, runs the functional variant (`add_.Tensor` -> `add.Tensor`, `sin.out` ->
      `sin.default`, `copy_` -> `copy`), and replaces each written argument's value with
      the matching output, recording the write on its storage (Note: functional storage
      and lazy view regeneration, in wrapper.py);
    - anything else syncs its FunctionalTensor arguments and runs on their values; tensors
      it returns (factories included) become new FunctionalTensors.
    The calls the mode makes reach the next mode out, so a logging mode or `make_fx` around
    `functionalize(f)` sees only functional operators.
"""

from __future__ import annotations

from typing import Any

from pyaten.autograd.grad_mode import is_grad_enabled
from pyaten.core.tensor import Tensor
from pyaten.dispatch import python_key, tls
from pyaten.native.ops_handles import aten
from pyaten.schema.model import NO_DEFAULT
from pyaten.utils import _pytree
from pyaten.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

from .wrapper import FunctionalStorage, FunctionalTensor, FunctionalValue, ViewMeta

__all__ = ["Functionalizer", "FunctionalTensorMode"]

_VIEW, _INPLACE_VIEW, _MUTATION, _FUNCTIONAL = "view", "inplace_view", "mutation", "functional"
# Operators whose alias annotation is not a view to functionalization.
_NOT_VIEWS = {"lift_fresh.default"}
# In-place operators whose functional variant is not `name` without the trailing `_`.
_FUNCTIONAL_NAMES = {
    "normal_.default": "normal_functional.default",
    "bernoulli_.float": "bernoulli.p",
}
_KIND_CACHE: dict[Any, tuple[str, Any]] = {}
_RESIZE_ = aten.resize_.default


def _classify(func: Any) -> tuple[str, Any]:
    """(kind, functional variant or None) of an OpOverload, cached per overload."""
    known = _KIND_CACHE.get(func)
    if known is None:
        known = _KIND_CACHE[func] = _compute_kind(func)
    return known


def _compute_kind(func: Any) -> tuple[str, Any]:
    schema = func._schema
    name = func.__name__
    if "inplace_view" in func.tags:
        packet, _, overload = name.partition(".")
        return _INPLACE_VIEW, _sibling(packet.rstrip("_"), overload, schema.arguments)
    if any(a.annotation is not None and a.annotation.is_write for a in schema.arguments):
        return _MUTATION, _functional_variant(func)
    if func.is_view and name not in _NOT_VIEWS:
        return _VIEW, None
    return _FUNCTIONAL, None


def _functional_variant(func: Any) -> Any:
    """The functional operator an in-place or out= operator becomes, or None: `add_.Tensor`
    -> `add.Tensor`, `pow_.Tensor` -> `pow.Tensor_Tensor`, `__iand__` -> `__and__`,
    `sin.out` -> `sin.default`, `arange.out` -> `arange.default` (whose extra arguments
    keep their defaults)."""
    name = func.__name__
    packet, _, overload = name.partition(".")
    special = _FUNCTIONAL_NAMES.get(name)
    if special is not None:
        p, _, o = special.partition(".")
        return getattr(getattr(aten, p), o)
    args = func._schema.arguments
    if any(a.is_out for a in args):
        return _sibling(packet, None, [a for a in args if not a.is_out])
    if packet.startswith("__i"):  # __iand__ -> __and__
        return _sibling("__" + packet[3:], overload, args)
    return _sibling(packet[:-1], overload, args)


def _sibling(packet: str, overload: str | None, args: list) -> Any:
    """The overload of `aten.<packet>` that takes `args` and writes nothing: `overload`
    itself when it exists, else the first whose arguments are `args` (by name and type)
    plus only arguments with defaults."""
    handle = getattr(aten, packet, None)
    if handle is None:
        return None
    if overload is not None:
        exact = getattr(handle, overload, None) if overload in handle.overloads() else None
        if exact is not None:
            return exact
    wanted = [(a.name, str(a.type).replace("(a!)", "")) for a in args]
    wanted_names = {n for n, _ in wanted}
    for candidate_name in handle.overloads():
        candidate = getattr(handle, candidate_name)
        cargs = candidate._schema.arguments
        if any(a.is_out or (a.annotation is not None and a.annotation.is_write) for a in cargs):
            continue
        given = [(a.name, str(a.type)) for a in cargs if a.name in wanted_names]
        extra_required = [a for a in cargs if a.name not in wanted_names
                          and a.default is NO_DEFAULT]
        if given == wanted and not extra_required:
            return candidate
    return None


class Functionalizer:
    """The functionalization of one operator call (Note: the three kinds of operator), on
    wrappers of class `wrapper_cls`; shared by the mode and by the Functionalize key's
    kernel (key.py). `reapply_views=False` replays views as their `*_copy` operators."""

    wrapper_cls: type = FunctionalTensor
    reapply_views: bool = True
    # a write into a plain tensor from a functional one raises (the key's, as ATen's)
    refuses_mixed_writes: bool = False

    def wrap(self, value: Any) -> Any:
        if isinstance(value, Tensor) and not isinstance(value, FunctionalValue):
            return self.wrapper_cls(value, FunctionalStorage(value, self.reapply_views))
        return value

    def _dispatch(self, func: Any, args: tuple, kwargs: dict) -> Any:
        kind, functional = _classify(func)
        if kind == _VIEW:
            return self._view(func, args, kwargs)
        if kind == _INPLACE_VIEW:
            if func is _RESIZE_ and isinstance(args[0], FunctionalValue):
                return self._resize(args[0], args[1], kwargs)
            return self._inplace_view(func, functional, args, kwargs)
        _sync_all(args, kwargs)
        if kind == _MUTATION:
            return self._mutation(func, functional, args, kwargs)
        out = func(*_map_args(_unwrap, args), **_map_kwargs(_unwrap, kwargs))
        return _map_result(self.wrap, out)

    def _view(self, func: Any, args: tuple, kwargs: dict) -> Any:
        base = args[0]
        if not isinstance(base, FunctionalValue):
            return _map_result(self.wrap, func(*args, **kwargs))
        packet, _, overload = func.__name__.partition(".")
        op = func if self.reapply_views else getattr(getattr(aten, f"{packet}_copy"), overload)
        out = op(base.elem, *args[1:], **kwargs)
        name = func.__name__
        if isinstance(out, (list, tuple)):
            return type(out)(
                self._view_of(base, item, ViewMeta(name, tuple(args[1:]), kwargs, i))
                for i, item in enumerate(out)
            )
        return self._view_of(base, out, ViewMeta(name, tuple(args[1:]), kwargs))

    def _view_of(self, base: Any, value: Tensor, meta: ViewMeta) -> Any:
        # generation 0, as ATen's view wrappers start: regenerated on first read once the
        # storage has seen a write (Note: functional storage and lazy view regeneration)
        return self.wrapper_cls(value, base.functional_storage, (*base.view_metas, meta))

    def _inplace_view(self, func: Any, view: Any, args: tuple, kwargs: dict) -> Any:
        t = args[0]
        if not isinstance(t, FunctionalValue):
            return func(*args, **kwargs)
        op = view if self.reapply_views else getattr(
            getattr(aten, f"{view.__name__.partition('.')[0]}_copy"),
            view.__name__.partition(".")[2])
        t.mutate_view_meta(ViewMeta(view.__name__, tuple(args[1:]), kwargs),
                           op(t.elem, *args[1:], **kwargs))
        return t

    def _resize(self, t: Any, size: Any, kwargs: dict) -> Any:
        """`resize_`, as ATen's functionalization does it: the functional `resize` runs; a
        tensor that fits in its current value becomes an `as_strided` view of it, a larger
        one becomes the base of a new storage holding the resized value."""
        t.sync()
        resized = aten.resize.default(t.elem, size, **kwargs)
        if resized.numel() <= t.elem.numel():
            size = list(resized.shape)
            stride = list(resized.stride())
            op = aten.as_strided.default if self.reapply_views else aten.as_strided_copy.default
            t.mutate_view_meta(ViewMeta("as_strided.default", (size, stride)),
                               op(t.elem, size, stride))
            return t
        # a storage of its own, as ATen's resize_ gives the grown tensor
        t.functional_storage = FunctionalStorage(resized, self.reapply_views)
        t.view_metas = ()
        t.generation = 0
        t.replace_(resized)
        t.has_metadata_mutation = True
        return t

    def _mutation(self, func: Any, functional: Any, args: tuple, kwargs: dict) -> Any:
        targets = [  # the written arguments (a tensor or a list of them), in schema order
            args[i] if i < len(args) else kwargs.get(a.name)
            for i, a in enumerate(func._schema.arguments)
            if a.annotation is not None and a.annotation.is_write
        ]
        if not all(_all_functional(v) for v in targets):
            if self.refuses_mixed_writes and any(
                    isinstance(x, FunctionalValue) for x in _pytree.tree_leaves((args, kwargs))):
                raise RuntimeError(
                    f"{func._schema.name}: mutating a non-functional tensor with a functional "
                    "tensor is not allowed. Please ensure that all of your inputs are wrapped "
                    "inside of a functionalize() call."
                )
            # a write into a tensor functionalize() did not wrap: it happens as written
            return func(*_map_args(_unwrap, args), **_map_kwargs(_unwrap, kwargs))
        if functional is None:
            raise NotImplementedError(
                f"functionalize: {func} has no functional variant to run in its place"
            )
        fargs, fkwargs = _functional_call_args(func, functional, args, kwargs)
        out = functional(*_map_args(_unwrap, fargs), **_map_kwargs(_unwrap, fkwargs))
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        flat_targets = [t for v in targets for t in (v if isinstance(v, (list, tuple)) else [v])]
        if any(isinstance(o, Tensor) and (tuple(o.shape) != tuple(t.shape) or o.dtype != t.dtype)
               for o, t in zip(outs, flat_targets)):
            _check_on_meta(func, args, kwargs)  # eager's error for a shape/dtype it refuses
        for target, value in zip(flat_targets, outs):
            target.replace_(value)
            target.commit_update()
            target.sync()
        return _result(func, targets)


class FunctionalTensorMode(Functionalizer, TorchDispatchMode):
    """Runs every operator on FunctionalTensors functionally (Note: the three kinds of
    operator). `reapply_views=False` replays views as their `*_copy` operators."""

    functionalizes = True  # how wrapper.py's helpers recognise the mode

    def __init__(self, reapply_views: bool = True) -> None:
        super().__init__()
        self.reapply_views = reapply_views

    def __torch_dispatch__(self, func: Any, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if is_grad_enabled() and _any_requires_grad((args, kwargs)):
            with _AutogradOnValues():
                return self._dispatch(func, args, kwargs)
        return self._dispatch(func, args, kwargs)


def _functional_call_args(func: Any, functional: Any, args: tuple,
                          kwargs: dict) -> tuple[tuple, dict]:
    """The call of the functional variant: the same arguments, out= ones left out; a
    factory's `out=` gives its dtype, layout and device (`arange.out` -> `arange(...,
    dtype=out.dtype)`), as ATen's functionalization does."""
    names = {a.name for a in functional._schema.arguments}
    schema_args = func._schema.arguments
    fargs = tuple(v for a, v in zip(schema_args, args) if not a.is_out)
    fkwargs = {k: v for k, v in kwargs.items() if k in names}
    defaults = {a.name: a.default for a in schema_args if a.default is not NO_DEFAULT}
    for a in functional._schema.arguments[len(fargs):]:
        # an argument the in-place call left at its default that the variant requires
        # (`bernoulli_.float`'s p=0.5 -> `bernoulli.p`)
        if a.name not in fkwargs and a.default is NO_DEFAULT and a.name in defaults:
            fkwargs[a.name] = defaults[a.name]
    out = next((kwargs.get(a.name) for a in schema_args if a.is_out), None)
    if isinstance(out, Tensor) and "layout" in names and "dtype" not in fkwargs:
        fkwargs.update(dtype=out.dtype, layout=out.layout, device=out.device)
    return fargs, fkwargs


def _result(func: Any, targets: list) -> Any:
    """What the mutating operator returns: the written arguments its returns alias."""
    returns = func._schema.returns
    if not returns:
        return None
    if len(returns) == 1:
        return targets[0]
    return tuple(targets[: len(returns)])


def _check_on_meta(func: Any, args: tuple, kwargs: dict) -> None:
    """Run the mutating operator on Meta copies, out of sight of every mode, so that a
    shape or dtype eager refuses raises eager's error."""

    def to_meta(x: Any) -> Any:
        if isinstance(x, FunctionalValue):
            x = x.elem
        return x.to("meta") if isinstance(x, Tensor) else x

    with _disable_current_modes():
        try:
            meta_args, meta_kwargs = _pytree.tree_map(to_meta, (args, kwargs))
        except (RuntimeError, NotImplementedError):
            return
        try:
            func(*meta_args, **meta_kwargs)
        except NotImplementedError:  # no Meta kernel: nothing to learn
            return


def _all_functional(v: Any) -> bool:
    if isinstance(v, (list, tuple)):
        return all(isinstance(t, FunctionalValue) for t in v)
    return isinstance(v, FunctionalValue)


# An operator's arguments and results are tensors, scalars and one level of lists (Tensor[],
# Tensor?[]): mapped directly, without the general pytree walk, on every call.


def _map_one(fn: Any, v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return type(v)(fn(x) for x in v)
    return fn(v)


def _map_args(fn: Any, args: tuple) -> tuple:
    return tuple(_map_one(fn, v) for v in args)


def _map_kwargs(fn: Any, kwargs: dict) -> dict:
    return {k: _map_one(fn, v) for k, v in kwargs.items()} if kwargs else kwargs


def _map_result(fn: Any, out: Any) -> Any:
    return _map_one(fn, out)


def _sync_all(args: tuple, kwargs: dict) -> None:
    for v in (*args, *kwargs.values()):
        for x in v if isinstance(v, (list, tuple)) else (v,):
            if isinstance(x, FunctionalValue):
                x.sync()


def _unwrap(x: Any) -> Any:
    return x.elem if isinstance(x, FunctionalValue) else x


class _AutogradOnValues(tls._Guard):
    """Run the mode's calls with the exclusions the user's call had on entry (autograd
    included), so that autograd records the computation on the values: gradients reach the
    inputs of functionalize(f), as PyTorch's functionalization runs below autograd."""

    __slots__ = ()

    def _apply(self, included: int, excluded: int) -> tuple[int, int]:
        return included, python_key.tls_on_entry()[1].raw


def _any_requires_grad(tree: Any) -> bool:
    for x in _pytree.tree_leaves(tree):
        if isinstance(x, FunctionalValue):
            if x.elem.requires_grad or x.functional_storage.base.requires_grad:
                return True
        elif isinstance(x, Tensor) and x.requires_grad:
            return True
    return False
