"""Batching rules: how an operator runs on BatchedTensors, by operator family.

Note: how a rule sees its arguments
    `dispatch_batched` finds the innermost level among the arguments and calls the rule
    registered for the operator (by overload, then by name; pointwise operators by their
    tag) with `BatchedCall`: the operator, its arguments, the level and the batch size. A
    rule works on the *physical* values (batch in dimension 0) and returns physical results,
    which are wrapped again at the level. A rule may return `NotImplemented` for a case it
    does not cover (an index tensor that is batched, a weight that is batched...), and the
    call then runs through the per-sample fallback loop, which is always correct: it calls
    the operator once per sample and stacks the results, warning as PyTorch does that a
    rule is missing. `batching_coverage()` lists which operators have a rule.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pyaten
from pyaten.core.tensor import Tensor
from pyaten.dispatch import trace
from pyaten.func._batched import BatchedTensor, _make_batched, level_info
from pyaten.native.gen_support import NONDEFAULT, PLAIN_CPU, PLAIN_KEY, Direct
from pyaten.utils._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["dispatch_batched", "batching_coverage", "pointwise_tensor_count", "RULES",
           "FALLBACK_CALLS"]

Rule = Callable[["BatchedCall"], Any]
RULES: dict[str, Rule] = {}
# operator name -> number of fallback-loop calls since the process started
FALLBACK_CALLS: dict[str, int] = {}
_WARNED: set[str] = set()
_SAMPLE_WARNING = (
    "There is a performance drop because we have not yet implemented the batching rule for "
    "{op}. Please file us an issue on GitHub so that we can prioritize its implementation."
)
_RANDOM_ERROR = (
    "vmap: called random operation while in randomness error mode. Please either use the "
    "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
    "of vmap"
)


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Register a batching rule for operators given as `name` or `name.overload`."""

    def register(fn: Rule) -> Rule:
        for name in names:
            RULES[name] = fn
        return fn

    return register


class BatchedCall:
    """One operator call on batched arguments, seen from one vmap level."""

    __slots__ = ("func", "args", "kwargs", "level", "batch_size", "name")

    def __init__(self, func: Any, args: tuple, kwargs: dict, level: int, batch_size: int,
                 name: str | None = None):
        self.func = func
        self.args = args
        self.kwargs = kwargs
        self.level = level
        self.batch_size = batch_size
        self.name = func.overloadpacket.__name__ if name is None else name

    def batched(self, x: Any) -> bool:
        return isinstance(x, BatchedTensor) and x.level == self.level

    def physical(self, x: Any) -> Any:
        """The batch of `x` with the batch in dimension 0; an unbatched tensor expanded."""
        if self.batched(x):
            return x.value
        if isinstance(x, pyaten.Tensor):
            return x.expand(self.batch_size, *x.shape)
        return x

    def value(self, x: Any) -> Any:
        """The batch of a batched `x`, an unbatched one as it is."""
        return x.value if self.batched(x) else x


_DIRECTS: dict[Any, Direct] = {}


def call_plain(func: Any, args: tuple) -> Any:
    """`func(*args)` for a rule's call on physical values: every argument a tensor, given
    positionally. With plain CPU tensors that need no grad and the thread's key sets at
    their defaults (rules run so), the binding's direct call (Note: the direct call, in
    pyaten/native/gen_support.py) instead of the dispatcher's path."""
    if not NONDEFAULT and len(args) == func._nargs:
        for a in args:
            if (a.__class__ is not Tensor or a._keyset != PLAIN_CPU or a._requires_grad
                    or a._fw_grad is not None):
                return func(*args)
        entry = func._entry
        direct = _DIRECTS.get(func)
        if direct is None:
            direct = _DIRECTS[func] = Direct()
        fast = direct.fast if entry._cache.get(PLAIN_KEY) is direct.checked else (
            direct.check(entry))
        if fast is not None:
            result = fast(*args)
            if result is not None:
                return result
    return func(*args)


def _innermost_level(args: tuple, kwargs: dict) -> int:
    level = 0
    for x in (*args, *kwargs.values()):
        if isinstance(x, BatchedTensor):
            if x.level > level:
                level = x.level
        elif isinstance(x, (list, tuple)):
            for y in x:
                if isinstance(y, BatchedTensor) and y.level > level:
                    level = y.level
    return level


def _is_inplace(func: Any) -> bool:
    returns = func._schema.returns
    return bool(returns) and returns[0].annotation is not None and returns[0].annotation.is_write


# func -> (rule or None, is random, is in place, is .item(), has a data-dependent shape,
# the operator's name): computed once per operator
_PLANS: dict[Any, tuple[Rule | None, bool, bool, bool, bool, str]] = {}
_ITEM_OPS = ("aten::_local_scalar_dense", "aten::item", "aten::is_nonzero")


def _plan(func: Any) -> tuple[Rule | None, bool, bool, bool, bool, str]:
    plan = _PLANS.get(func)
    if plan is None:
        plan = (_lookup(func), "nondeterministic_seeded" in func.tags, _is_inplace(func),
                func.name() in _ITEM_OPS, "dynamic_output_shape" in func.tags,
                func.overloadpacket.__name__)
        _PLANS[func] = plan
    return plan


def pointwise_tensor_count(func: Any) -> int:
    """1 or 2 when `func` is `op(Tensor self[, Tensor other]) -> Tensor` whose rule is the
    pointwise rule, which calls the operator on the batch as it is when only the first
    tensor is batched and its sample has the most dims (vmap's fast entry, Note: the fast
    entry, in _key.py); 0 otherwise, and for anything random, in place, data-dependent or
    `.item()`-like."""
    fn, random, inplace, item, dynamic, _ = _plan(func)
    schema = func._schema
    arguments, returns = schema.arguments, schema.returns
    if (fn is None or fn is not RULES.get("<pointwise>") or random or inplace or item or dynamic
            or len(returns) != 1 or str(returns[0].type) != "Tensor"
            or returns[0].annotation is not None or len(arguments) > 2):
        return 0
    if all(str(a.type) == "Tensor" and a.annotation is None for a in arguments):
        return len(arguments)
    return 0


def dispatch_batched(func: Any, args: tuple, kwargs: dict, level: int = 0) -> Any:
    """Run `func` on batched arguments: its rule, else the per-sample loop. `level` (the
    innermost among the arguments) when the caller knows it."""
    if not level:
        level = _innermost_level(args, kwargs)
    info = level_info(level)
    fn, random, inplace, item, dynamic, name = _plan(func)
    call = BatchedCall(func, args, kwargs, level, info.batch_size, name)
    if random and not _dropout_off(func, args):
        return _random(call, info.randomness)
    if item:
        raise RuntimeError(
            "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap "
            "over calling .item() on a Tensor, please try to rewrite what you're doing with "
            "other operations. If error is occurring somewhere inside PyTorch internals, "
            "please file a bug report."
        )
    if inplace:
        _check_inplace(call)
    if dynamic and name in _DYNAMIC_CHECKED:
        _refuse_dynamic_shape(call)
    if fn is not None:
        out = fn(call)
        if out is not NotImplemented:
            if trace.ACTIVE:  # explain/trace show which rule ran
                trace.note("vmap", level=level, ran=f"rule {fn.__name__}")
            if inplace:
                return args[0]
            if isinstance(out, pyaten.Tensor):
                return _make_batched(out, level)
            return _wrap_out(out, level)
    return fallback(call)


# The data-dependent operators vmap refuses, as PyTorch's: these always (their shape depends
# on each sample's values), indexing and masked_select with a batched boolean mask. The
# others tagged so run their rules (lstsq, ctc_loss, one_hot) or the loop, whose stack
# fails where the samples' shapes differ (bincount), as PyTorch's fallback does.
_DYNAMIC_REFUSED = frozenset({"nonzero", "_unique", "_unique2", "unique_consecutive",
                              "unique_dim", "unique_dim_consecutive"})
_DYNAMIC_CHECKED = _DYNAMIC_REFUSED | {"index", "masked_select"}


def _refuse_dynamic_shape(call: BatchedCall) -> None:
    """Operators whose output shape depends on the data cannot be batched (PyTorch's errors);
    indexing with integer tensors has a static shape and goes on."""
    if call.name == "masked_select":  # an unbatched mask selects as many from each sample
        if not call.batched(call.args[1]):
            return
        raise RuntimeError(
            "vmap: Attempted to vmap over `mask` in torch.masked_select(self, mask) We cannot "
            "support this because for each batch this would return a differently shaped "
            "Tensor. Please file an issue at https://github.com/pytorch/pytorch/issues if you "
            "need this feature."
        )
    if call.name == "index":
        masks = [i for i in call.args[1] if i is not None and i.dtype in (pyaten.bool,
                                                                          pyaten.uint8)]
        if not masks:
            return
        raise RuntimeError(
            "vmap: We do not support batching operators that can support dynamic shape. "
            "Attempting to batch over indexing with a boolean mask."
        )
    raise RuntimeError(
        "vmap: We do not support batching operators that can output dynamic shape. Attempted "
        f"to vmap over aten::{call.name}. Please file an issue at "
        "https://github.com/pytorch/pytorch/issues if you need this feature."
    )


def _dropout_off(func: Any, args: tuple) -> bool:
    """native_dropout with train=False draws nothing (eval mode under vmap)."""
    return func.overloadpacket.__name__ == "native_dropout" and len(args) > 2 and not args[2]


def _lookup(func: Any) -> Rule | None:
    overload = str(func)[len("aten.") :]
    fn = RULES.get(overload)
    if fn is None:
        fn = RULES.get(func.overloadpacket.__name__)
    if fn is None and "pointwise" in func.tags:
        fn = RULES.get("<pointwise>")
    return fn


def _wrap_out(out: Any, level: int) -> Any:
    return tree_map(
        lambda x: BatchedTensor(x, level) if isinstance(x, pyaten.Tensor) else x, out
    )


def _check_inplace(call: BatchedCall) -> None:
    if not call.args or call.batched(call.args[0]):
        return
    flat, _ = tree_flatten((call.args[1:], call.kwargs))
    if any(call.batched(x) for x in flat):
        # PyTorch names the in-place pointwise operators by their family
        pointwise = "pointwise" in call.func.tags or call.name in ("copy_", "fill_")
        name = "inplace arithmetic" if pointwise else call.name
        raise RuntimeError(
            f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor "
            "`other` in extra_args that has more elements than `self`. This happened due to "
            "`other` being vmapped over but `self` not being vmapped over in a vmap. Please "
            f"try to use out-of-place operators instead of {name}. If said operator is being "
            "called inside the PyTorch framework, please file a bug report instead."
        )


def fallback(call: BatchedCall, *, warn: bool = True) -> Any:
    """Run the operator once per sample and stack the results (in place: write each sample)."""
    name = str(call.func)
    FALLBACK_CALLS[name] = FALLBACK_CALLS.get(name, 0) + 1
    if trace.ACTIVE:
        trace.note("vmap", level=call.level, ran="per-sample fallback loop")
    if warn and name not in _WARNED:
        _WARNED.add(name)
        # named as PyTorch names operators: aten::argwhere, aten::add.Tensor
        warnings.warn(_SAMPLE_WARNING.format(op=call.func._schema.name), UserWarning,
                      stacklevel=2)
    func = call.func
    results = [func(*args, **kwargs) for args, kwargs in _samples(call)]
    if _is_inplace(func):
        return call.args[0]
    return _stack_results(results, call)


def _samples(call: BatchedCall) -> list[tuple[list, dict]]:
    """Each sample's (args, kwargs): the batched arguments split once with `unbind` (one
    call, views of the batch), the others as they are."""
    args, kwargs, level = call.args, call.kwargs, call.level
    flat_top = [*args, *kwargs.values()]
    if any(isinstance(x, (list, tuple)) and any(isinstance(y, BatchedTensor) for y in x)
           for x in flat_top):
        flat, spec = tree_flatten((args, kwargs))
        columns = [x.value.unbind(0) if isinstance(x, BatchedTensor) and x.level == level
                   else None for x in flat]
        return [tree_unflatten([x if c is None else c[i] for x, c in
                                zip(flat, columns, strict=True)], spec)
                for i in range(call.batch_size)]
    split_args = [(j, x.value.unbind(0)) for j, x in enumerate(args)
                  if isinstance(x, BatchedTensor) and x.level == level]
    split_kwargs = [(k, x.value.unbind(0)) for k, x in kwargs.items()
                    if isinstance(x, BatchedTensor) and x.level == level]
    samples = []
    for i in range(call.batch_size):
        sample_args = list(args)
        for j, column in split_args:
            sample_args[j] = column[i]
        sample_kwargs = kwargs
        if split_kwargs:
            sample_kwargs = dict(kwargs)
            for k, column in split_kwargs:
                sample_kwargs[k] = column[i]
        samples.append((sample_args, sample_kwargs))
    return samples


def _stack_results(results: list[Any], call: BatchedCall) -> Any:
    first_flat, spec = tree_flatten(results[0])
    columns = [tree_flatten(r)[0] for r in results]
    out = []
    for j, item in enumerate(first_flat):
        if isinstance(item, pyaten.Tensor):
            out.append(BatchedTensor(pyaten.stack([col[j] for col in columns]), call.level))
        else:
            out.append(item)
    return tree_unflatten(out, spec)


def _random(call: BatchedCall, randomness: str) -> Any:
    if randomness == "error":
        raise RuntimeError(_RANDOM_ERROR)
    if randomness == "different":
        return fallback(call, warn=False)
    # "same": every sample draws from the same generator state.
    state = pyaten.get_rng_state()
    results = []
    for args, kwargs in _samples(call):
        pyaten.set_rng_state(state)
        results.append(call.func(*args, **kwargs))
    if _is_inplace(call.func):
        return call.args[0]
    return _stack_results(results, call)


def batching_coverage() -> dict[str, list[str]]:
    """Which aten operators vmap runs by a batching rule (random operators count: vmap's
    `randomness` decides them), which it never sees because they decompose above the Python
    key (CompositeImplicitAutograd, their parts are batched), and which run through the
    per-sample fallback loop."""
    from pyaten.dispatch import find_operator, list_operators

    report: dict[str, list[str]] = {"rule": [], "decomposed": [], "fallback": []}
    for qualified in sorted(list_operators()):
        if not qualified.startswith("aten::"):
            continue
        name, _, overload = qualified[len("aten::") :].partition(".")
        packet = getattr(pyaten.ops.aten, name, None)
        func = getattr(packet, overload or "default", None) if packet is not None else None
        if func is None:
            continue
        if "nondeterministic_seeded" in func.tags or _lookup(func) is not None:
            report["rule"].append(qualified)
        elif any(k.name == "CompositeImplicitAutograd" for k in
                 find_operator(qualified).kernels):
            report["decomposed"].append(qualified)
        else:
            report["fallback"].append(qualified)
    return report
