"""vmap's kernel on the dispatcher's FuncTorchBatched key.

Note: the FuncTorchBatched key
    A BatchedTensor's key set is its device's keys plus FuncTorchBatched plus the Python
    keys (PyTorch's BatchedTensorImpl carries FuncTorchBatched beside its value's backend
    keys). FuncTorchBatched sits above autograd, so a call on a BatchedTensor reaches this
    kernel first, with the boxed, schema-ordered arguments. It decides, per call:

    - autograd first: when an argument requires grad (grad mode on) or carries a forward
      gradient, or the operator writes into an argument, the call goes below the key with
      the thread's key sets remembered (what PyTorch's DynamicLayerFrontMode saves for the
      layer): autograd records it on the wrappers (what `vmap(grad(f))` differentiates), and
      the FuncTorchDynamicLayerBackMode kernel below autograd (`layer_back_kernel`) restores
      those key sets and runs the batching rule, so the calls on the values are recorded by
      autograd when a value requires grad;
    - a composite operator (CompositeImplicitAutograd) decomposes below the key unless a
      rule here covers it whole (`linear`, `matmul`): its parts come back to this key;
    - otherwise the batching rule, or the per-sample fallback loop, runs right here
      (`dispatch_batched`).

    Skipping autograd is exact there: with no argument requiring grad, autograd would
    record nothing, and the calls the rule makes on the values are recorded as usual when a
    value requires grad (`grad(vmap(f))`).

Note: the fast entry
    Most calls in a vmapped model are one batched tensor first, then plain tensors (weights,
    biases) or None, nothing requiring grad, no trace recording: `relu(x)`, `linear(x, w,
    b)`. For an operator whose rule has such a case that needs nothing but the batch (a
    pointwise operator of one tensor, `linear` with a shared weight), the operator's plan
    holds that case as a function of the values (`_fast_rule`), and `batched_kernel` runs it
    straight away: no boxed arguments, no `BatchedCall`, no search for the level or the
    rule, no checks for randomness, `.item()` or in-place writes (the plan excludes them).
    The function makes the same call on the values that the rule makes, with the same key
    sets (FuncTorchVmapMode off), and the result gets the same wrapper; any other call, and
    every call while a trace records, takes the general path, which stays the reference
    (tests/test_vmap_fast.py runs both and compares them).
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

import pyaten
from pyaten.autograd.grad_mode import GRAD
from pyaten.core.accel import ACCEL
from pyaten.core.tensor import Tensor
from pyaten.dispatch import tls, trace
from pyaten.dispatch.fallbacks import (
    functorch_batched_fallback,
    set_batched_kernel,
    set_layer_back_kernel,
)
from pyaten.dispatch.keys import KEY_BY_NAME, full_after
from pyaten.dispatch.rules import RUNTIME_KEYS
from pyaten.func._batched import (
    _STACK,
    VMAP_MODE_BIT,
    BatchedTensor,
    _make_batched,
    level_info,
)
from pyaten.func._composite_rules import COMPOSITE_RULES
from pyaten.func._rules import (
    _DIRECTS as DIRECTS,
)
from pyaten.func._rules import (
    BatchedCall,
    call_plain,
    dispatch_batched,
    pointwise_tensor_count,
)
from pyaten.native.gen_support import PLAIN_CPU, PLAIN_KEY, Direct
from pyaten.native.python_dispatch import overload_of, python_arguments

__all__ = ["batched_kernel", "binding_route", "binding_route_reference", "layer_back_kernel"]

_BELOW = full_after("FuncTorchBatched").raw
_AUTOGRAD_CPU_SLOT = RUNTIME_KEYS.index(KEY_BY_NAME["AutogradCPU"])


def _level_of(args: tuple) -> int:
    level = 0
    for x in args:
        if isinstance(x, BatchedTensor) and x.level > level:
            level = x.level
    return level


def _split_point(op: Any) -> int:
    """How many leading arguments are positional (the rest keyword-only), once per op."""
    split = op.__dict__.get("_vmap_split")
    if split is None:
        arguments = op.schema.arguments
        split = len(arguments)
        while split and (arguments[split - 1].kwarg_only or arguments[split - 1].is_out):
            split -= 1
        op._vmap_split = split
    return split


def _writes(schema: Any) -> bool:
    return any(a.annotation is not None and a.annotation.is_write for a in schema.arguments)


def _plan(op: Any) -> tuple[Any, Any, bool, bool, Any, int]:
    """(OpOverload, whole-operator rule, decomposes, writes an argument, the fast entry's
    function or None, its kind), once per op."""
    plan = op.__dict__.get("_vmap_plan")
    if plan is None:
        table = op.table
        decomposes = bool(table) and table[_AUTOGRAD_CPU_SLOT].rule == "math kernel"
        func, whole, writes = overload_of(op), COMPOSITE_RULES.get(op.name), _writes(op.schema)
        kind = _fast_kind(func, whole, decomposes, writes)
        plan = (func, whole, decomposes, writes, _fast_rule(func, kind), kind)
        op._vmap_plan = plan
    return plan


# The fast entry's cases (`_fast_kind`), numbered as csrc/accel.c's vmap route numbers them
ROUTE_NONE, ROUTE_LINEAR, ROUTE_POINTWISE, ROUTE_POINTWISE_PAIR = 0, 1, 2, 3


def _fast_kind(func: Any, whole: Any, decomposes: bool, writes: bool) -> int:
    """Which case of its rule the fast entry runs for an operator (Note: the fast entry)."""
    if writes or func is None:
        return ROUTE_NONE
    if whole is COMPOSITE_RULES["aten::linear"]:
        return ROUTE_LINEAR
    count = 0 if whole is not None or decomposes or func is _DETACH else (
        pointwise_tensor_count(func))
    return {1: ROUTE_POINTWISE, 2: ROUTE_POINTWISE_PAIR}.get(count, ROUTE_NONE)


def _fast_rule(func: Any, kind: int) -> Any:
    """The rule's case that the fast entry runs (Note: the fast entry), as a function of the
    values whose first is batched and the others plain tensors or None; None if the
    operator has none."""
    if kind == ROUTE_LINEAR:
        def linear(values: tuple) -> Any:  # `_linear` with the weight and bias unbatched
            return call_plain(func, (values[0].value, *values[1:]))
        return linear
    if kind == ROUTE_POINTWISE:
        def pointwise(values: tuple) -> Any:  # the pointwise rule on one batched tensor
            return call_plain(func, (values[0].value,))
        return pointwise
    if kind == ROUTE_POINTWISE_PAIR:
        def pointwise_pair(values: tuple) -> Any:
            # the pointwise rule's case where the batched sample has the most dims (the
            # other broadcasts against the batch as it is, nothing to pad) and no 0-dim sample
            # meets another dtype (it would promote as a dimensioned tensor)
            if len(values) != 2:
                return NotImplemented
            first, other = values
            if other is None or len(first._sizes) < len(other._sizes) or (
                    not first._sizes and first._dtype is not other._dtype):
                return NotImplemented
            return call_plain(func, (first.value, other))
        return pointwise_pair
    return None


def _autograd_first(values: tuple) -> bool:
    grad = GRAD.enabled
    for v in values:
        if isinstance(v, Tensor):
            if (grad and v._requires_grad) or v._fw_grad is not None:
                return True
        elif isinstance(v, (list, tuple)):
            for t in v:
                if isinstance(t, Tensor) and ((grad and t._requires_grad)
                                              or t._fw_grad is not None):
                    return True
    return False


_DETACH = pyaten.ops.aten.detach.default


def _detach(x: BatchedTensor) -> BatchedTensor:
    """`detach` of a wrapper, even one that requires grad: autograd would only drop the
    history, which a new wrapper has not (autograd detaches the outputs it saves: this
    spares each saved output the trip below autograd). It shares the version counter, as
    autograd's alias does."""
    value = x.value
    if value._requires_grad or value.grad_fn is not None:
        value = value.detach()
    out = BatchedTensor(value, x.level)
    out._version_counter = x._version_counter
    if trace.ACTIVE:
        trace.note("vmap", level=x.level, ran="detach: a new wrapper")
    return out


def _below(op: Any, keyset: Any, values: tuple, why: str) -> Any:
    if trace.ACTIVE:
        trace.note("vmap", ran=why)
    return op.redispatch(keyset.raw & _BELOW, *values)


class _LayerEntry(threading.local):
    # (included, excluded) key sets of the user's call, while it runs below autograd
    saved: tuple[int, int] | None = None


_ENTRY = _LayerEntry()


def _autograd_then_back(op: Any, keyset: Any, values: tuple) -> Any:
    """Let autograd record the call on the wrappers, then batch it below autograd
    (`layer_back_kernel`) with the key sets this call saw (Note: the FuncTorchBatched key)."""
    if trace.ACTIVE:
        trace.note("vmap", ran="autograd first, batched below autograd")
    state = tls.STATE
    previous = _ENTRY.saved
    _ENTRY.saved = (state.included, state.excluded)
    try:
        return op.redispatch(keyset.raw & _BELOW, *values)
    finally:
        _ENTRY.saved = previous


def layer_back_kernel(op: Any, keyset: Any, *values: Any) -> Any:
    """FuncTorchDynamicLayerBackMode: a call on BatchedTensors that autograd has recorded
    runs its batching rule here, with the key sets of the user's call restored, so that the
    calls on the values are recorded when a value requires grad (`grad(vmap(f))`)."""
    saved = _ENTRY.saved
    args, kwargs, level = _arguments(op, values)
    func = _plan(op)[0]
    if saved is None:
        return dispatch_batched(func, args, kwargs, level)
    state = tls.STATE
    here = (state.included, state.excluded)
    _ENTRY.saved = None
    tls._set(saved[0] & ~VMAP_MODE_BIT, saved[1])
    try:
        return dispatch_batched(func, args, kwargs, level)
    finally:
        tls._set(*here)
        _ENTRY.saved = saved


_DEFAULT_INCLUDED, _DEFAULT_EXCLUDED = tls.DEFAULT_INCLUDED, tls.DEFAULT_EXCLUDED
_NONDEFAULT = tls.NONDEFAULT


def _outside_vmap_mode(fn: Any, *args: Any) -> Any:
    """`fn(*args)` with FuncTorchVmapMode off: a rule's calls on the physical values are
    no random factories of the user's to batch, and with the thread's key sets back to
    their defaults they take the operators' fast paths."""
    state = tls.STATE
    included = state.included
    if not included & VMAP_MODE_BIT:
        return fn(*args)
    # `tls._set` inlined: only `included` changes, and the thread's sets become the
    # defaults exactly when they were the defaults plus this one key
    off = included & ~VMAP_MODE_BIT
    default = off == _DEFAULT_INCLUDED and state.excluded == _DEFAULT_EXCLUDED
    state.included = off
    if default:
        _NONDEFAULT.pop()
    try:
        return fn(*args)
    finally:
        if default and state.included == _DEFAULT_INCLUDED:
            _NONDEFAULT.append(None)
            state.included = included
        else:
            tls._set(included, state.excluded)


class general_path_only:  # noqa: N801 - used as a context manager, like torch's guards
    """Within `with general_path_only():` every call on BatchedTensors takes the general path
    (Note: the fast entry): what tests compare the fast entry with."""

    on = False

    def __enter__(self) -> None:
        self._was = general_path_only.on
        general_path_only.on = True

    def __exit__(self, *exc: object) -> None:
        general_path_only.on = self._was


def _run_fast(fast: Any, values: tuple) -> Any:
    """The fast entry (Note: the fast entry): `fast`, the plan's case of the rule, on the
    values when the first is batched, at a live level, the others plain tensors or None, and
    nothing that autograd must record; NotImplemented when the call is not its case."""
    first = values[0]
    grad = GRAD.enabled
    if (first.__class__ is BatchedTensor and first._fw_grad is None
            and not (grad and first._requires_grad)
            and first.level <= len(_STACK.levels)):
        for v in values[1:]:
            if v is not None and (v.__class__ is not Tensor or (grad and v._requires_grad)
                                  or v._fw_grad is not None):
                return NotImplemented
        out = _outside_vmap_mode(fast, values)
        if out is not NotImplemented:
            return _make_batched(out, first.level)
    return NotImplemented


def batched_kernel(op: Any, keyset: Any, *values: Any) -> Any:
    """The FuncTorchBatched fallback (Note: the FuncTorchBatched key)."""
    plan = op.__dict__.get("_vmap_plan") or _plan(op)
    fast = plan[4]
    if fast is not None and not trace.ACTIVE and not general_path_only.on:
        out = _run_fast(fast, values)
        if out is not NotImplemented:
            return out
    func, whole, decomposes, writes = plan[:4]
    if func is _DETACH and len(values) == 1:
        x = values[0]
        if isinstance(x, BatchedTensor) and x._fw_grad is None:
            return _detach(x)
    if decomposes and whole is None:
        return _below(op, keyset, values, "decomposed (CompositeImplicitAutograd)")
    if writes or _autograd_first(values):
        if decomposes:
            return _below(op, keyset, values, "decomposed (CompositeImplicitAutograd)")
        return _autograd_then_back(op, keyset, values)
    if whole is not None:
        args, kwargs = python_arguments(op, values)
        level = _level_of(args)
        call = BatchedCall(func, args, kwargs, level, level_info(level).batch_size)
        out = _outside_vmap_mode(whole, call)
        if out is not NotImplemented:
            if trace.ACTIVE:
                trace.note("vmap", level=level, ran=f"rule {whole.__name__.lstrip('_')} "
                           "(whole composite)")
            return BatchedTensor(out, level)
        return _below(op, keyset, values, "decomposed (CompositeImplicitAutograd)")
    args, kwargs, level = _arguments(op, values)
    return _outside_vmap_mode(dispatch_batched, func, args, kwargs, level)


# Note: the binding route
#     The generated bindings hand a call whose first tensor is a BatchedTensor to
#     `binding_route` just before they would call the dispatcher (Note: vmap's binding
#     route, in pyaten/native/gen_support.py). When the dispatcher would run this key's
#     kernel straight away — the thread's key sets those of a vmapped function and nothing
#     else (no mode, no autocast, no_grad, functionalization...), no trace recording, the
#     other tensors plain CPU ones, and the operator's cached kernel for that key set
#     `functorch_batched_fallback` itself, not a kernel of the user's above or at the key —
#     the route runs the fast entry (`_run_fast`) as `batched_kernel` would, without the
#     dispatcher's hops; anything else answers NotImplemented and the binding calls the
#     dispatcher, whose path stays the reference. `binding_route_off()` turns the route off
#     (tests/test_vmap_route.py compares both ways, mode logs included). With the accelerator
#     loaded the route is `_accel.vmap_route` (csrc/accel.c): `binding_route_reference` in C,
#     reading the operator's case from `_route_plan` (kept on the entry as `_vmap_c`); the
#     tests run the Python reference beside it.
_VMAP_INCLUDED = _DEFAULT_INCLUDED | VMAP_MODE_BIT
_STATE = tls.STATE


def _route_kernel_ok(entry: Any, kernel: Any) -> bool:
    """Whether the dispatcher's cached kernel `kernel` for a batched call of `entry` is vmap's
    fallback itself (not a kernel of the user's above or at the key); remembered per entry."""
    if (kernel is None or kernel.__class__ is not partial
            or kernel.func is not functorch_batched_fallback or kernel.args[0] is not entry):
        return False
    entry._vmap_route = kernel
    route = entry.__dict__.get("_vmap_c")
    if route is not None:
        route[7][0] = kernel  # (the C route's copy)
    return True


def binding_route_reference(entry: Any, values: tuple) -> Any:
    """The binding route (Note: the binding route): the fast entry's result, or
    NotImplemented for the binding to call the dispatcher. With the accelerator loaded the
    route is its C version (`_accel.vmap_route`, reading `_route_plan`); this is the
    reference."""
    plan = entry.__dict__.get("_vmap_plan") or _plan(entry)
    state = _STATE
    first = values[0]  # (the binding tested its first tensor: the schema's first, mostly)
    if (plan[4] is None or first.__class__ is not BatchedTensor
            or state.included != _VMAP_INCLUDED or state.excluded != _DEFAULT_EXCLUDED
            or trace.ACTIVE or general_path_only.on or binding_route_off.on):
        return NotImplemented
    kernel = entry._cache.get((first._keyset | _VMAP_INCLUDED) & state.keep)
    if kernel is None or (kernel is not entry.__dict__.get("_vmap_route")
                          and not _route_kernel_ok(entry, kernel)):
        return NotImplemented  # (the dispatcher's answer, checked once per cached kernel)
    # `_run_fast` and `_outside_vmap_mode` inlined: the thread's sets are those of a vmapped
    # function, so FuncTorchVmapMode off puts them back to the defaults
    grad = GRAD.enabled
    if (first._fw_grad is not None or (grad and first._requires_grad)
            or first.level > len(_STACK.levels)):
        return NotImplemented
    for v in values[1:]:
        if v is not None and (v.__class__ is not Tensor or v._keyset != PLAIN_CPU
                              or (grad and v._requires_grad) or v._fw_grad is not None):
            return NotImplemented  # (a plain tensor's keys are in the batched one's)
    state.included = _DEFAULT_INCLUDED
    _NONDEFAULT.pop()
    try:
        out = plan[4](values)
    finally:
        if state.included == _DEFAULT_INCLUDED and state.excluded == _DEFAULT_EXCLUDED:
            _NONDEFAULT.append(None)
            state.included = _VMAP_INCLUDED
        else:
            tls._set(_VMAP_INCLUDED, state.excluded)
    if out is NotImplemented:
        return out
    return _make_batched(out, first.level)


def _route_plan(entry: Any) -> tuple:
    """The C route's plan of `entry` (kept on it as `_vmap_c`): (kind, OpOverload, its
    `Direct`, its entry, its positional argument count, `entry`'s kernel cache, the
    OpOverload's entry's, a one-item list holding the kernel `_route_kernel_ok` accepted);
    the kind ROUTE_NONE where the fast entry has no case."""
    plan = entry.__dict__.get("_vmap_plan") or _plan(entry)
    func, kind = plan[0], plan[5]
    checked = [entry.__dict__.get("_vmap_route")]
    if kind == ROUTE_NONE:
        route = (ROUTE_NONE, None, None, None, 0, entry._cache, entry._cache, checked)
    else:
        direct = DIRECTS.get(func)
        if direct is None:
            direct = DIRECTS[func] = Direct()
        route = (kind, func, direct, func._entry, func._nargs, entry._cache,
                 func._entry._cache, checked)
    entry._vmap_c = route
    return route


class binding_route_off:  # noqa: N801 - used as a context manager, like torch's guards
    """Within `with binding_route_off():` the route declines every call and the bindings
    call the dispatcher for BatchedTensors (Note: the binding route): what tests compare the
    route with. (A flag the route reads: rebinding `Direct.vmap_class` would change the
    `Direct` type and make every binding's cached attribute lookups on it start over.)"""

    on = False

    def __enter__(self) -> None:
        self._was = binding_route_off.on
        binding_route_off.on = True

    def __exit__(self, *exc: object) -> None:
        binding_route_off.on = self._was


def _arguments(op: Any, values: tuple) -> tuple[tuple, dict, int]:
    """The schema-ordered values as a rule's (args, kwargs), and their innermost level (0:
    not looked for). Tensors only, all positional: the values as they are."""
    level = 0
    for v in values:
        if type(v) is BatchedTensor:
            if v.level > level:
                level = v.level
        elif not isinstance(v, Tensor) or v._wrapped_number:
            break  # a number, a list, a None: the general conversion
    else:
        if len(values) <= _split_point(op):
            return values, {}, level
    args, kwargs = python_arguments(op, values)
    return args, kwargs, 0


binding_route = binding_route_reference
if ACCEL is not None:
    ACCEL.setup_route(_VMAP_INCLUDED, PLAIN_CPU, PLAIN_KEY, vars(trace), general_path_only,
                      binding_route_off, _STACK, GRAD, _route_plan, _route_kernel_ok, tls._set,
                      Direct)
    binding_route = ACCEL.vmap_route
set_batched_kernel(batched_kernel)
Direct.vmap_class, Direct.vmap_route = BatchedTensor, binding_route
set_layer_back_kernel(layer_back_kernel)
