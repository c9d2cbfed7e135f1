"""What the generated autograd kernels call: running below autograd, in-place rules, views.

Note: in-place operations on views
    An in-place operation on a view changes its base too, so the base's history must learn
    of it. As in PyTorch, the base gets a `CopySlices` node: its backward takes the base's
    gradient, runs the in-place operation's backward on the slice the view covers, writes the
    result for the view's old value back into that slice, and passes the gradients for the
    operation's other inputs on. The view itself becomes an `AsStridedBackward0` of the base,
    so later uses of the view reach the base's new history. A leaf that requires grad (or a
    view of one) cannot be written in place while grad mode is on.

    The base's other views see the write too (a sibling written through, or the base itself):
    PyTorch regenerates a view's grad_fn on its next access once the shared version moved.
    pyaten does it at the write instead, which is the same graph: a differentiable view of a
    base with history is remembered on that base (`track_view`, weakly), and each write gives
    every other remembered view an `AsStridedBackward0` over the base's new node. A view that
    cannot be rebased (made in no_grad mode, or one of several outputs) gets a node whose
    backward raises PyTorch's error (PyTorch raises on reading its grad_fn).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from pyaten.autograd.accel_graph import ACCEL_GRAPH as _ACCEL_GRAPH
from pyaten.autograd.engine import empty_strided
from pyaten.autograd.forward_ad import FW, set_tangent
from pyaten.autograd.graph import NO_EDGE, Node, grad_accumulator, gradient_edge, set_history
from pyaten.core.dtypes import dtype as _dtype_class
from pyaten.core.tensor import CONJ_BIT, NEG_BIT, Tensor
from pyaten.dispatch.keys import AFTER_AUTOGRAD as _AFTER_AUTOGRAD_SET
from pyaten.dispatch.tls import call_below_autograd

AFTER_AUTOGRAD = _AFTER_AUTOGRAD_SET.raw

__all__ = [
    "AFTER_AUTOGRAD",
    "run_below",
    "make_node",
    "run_recorded",
    "run_recorded_view",
    "record_output",
    "check_inplace",
    "rebase_history",
    "raise_out_requires_grad",
    "NotImplementedBackward",
    "record_not_implemented",
    "any_requires_grad",
    "original",
    "set_outputs",
    "any_tangent",
    "tangent",
    "element_wise",
    "mark_views",
    "track_view",
    "NO_GRAD_VIEW",
    "view_geometry",
    "view_tangent_to_base",
]


# The call below autograd, with the autograd keys excluded for the calls it makes.
run_below = call_below_autograd


def make_node(cls: type, *inputs: Any) -> Node:
    """`cls()` with one edge per differentiable input (a tensor, None, or a list of them:
    one edge per element, and `_counts` says how many each input has)."""
    node = cls()
    edges = []
    counts = None
    for i, t in enumerate(inputs):
        if t is None:
            edges.append(NO_EDGE)
        elif isinstance(t, (list, tuple)):
            if counts is None:
                counts = [1] * len(inputs)
            items = tuple(t)
            edges += [gradient_edge(item) for item in items]
            counts[i] = len(items)
        elif t.grad_fn is not None:  # gradient_edge, inlined: every recorded call is here
            edges.append((t.grad_fn, t.output_nr))
        else:
            edges.append((grad_accumulator(t), 0) if t._requires_grad else NO_EDGE)
    node.next_functions = tuple(edges)
    if counts is not None:
        node._counts = tuple(counts)
    return node


def record_output(node: Node, out: Tensor, inputs: tuple, view: bool = False) -> None:
    """Make `out` the output 0 of `node`, unless it is not differentiable or is one of the
    call's `inputs`; a view is remembered on its base (`track_view`)."""
    kind = out._dtype
    if not (kind.is_floating_point or kind.is_complex):
        return
    for t in inputs:
        if t is out:
            return
    out.grad_fn = node
    out.output_nr = 0
    out._requires_grad = True
    node.input_meta = [(out._sizes, kind, out._device)]
    if view:
        track_view(out)


def run_recorded(node: Node, below: Callable, *args: Any) -> Any:
    """The call below autograd, its single result made the node's output."""
    out = call_below_autograd(below, *args)
    record_output(node, out, args)
    return out


def run_recorded_view(node: Node, below: Callable, *args: Any) -> Any:
    """`run_recorded` for a view operator: the view is also remembered on its base."""
    out = call_below_autograd(below, *args)
    record_output(node, out, args, True)
    return out


make_node_reference = make_node
run_recorded_reference = run_recorded
run_recorded_view_reference = run_recorded_view


def check_inplace(t: Tensor) -> None:
    """PyTorch's errors for writing in place into a leaf that requires grad, or a view of one,
    or a view autograd cannot rebase (made in no_grad mode, or one of several outputs)."""
    if t._view_creation is not None:
        _check_view_creation(t)
    if t.grad_fn is None and t._requires_grad:
        base = t._base
        if base is not None and base.grad_fn is None and base._requires_grad:
            raise RuntimeError(
                "a view of a leaf Variable that requires grad is being used in an in-place "
                "operation."
            )
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation."
        )
    base = t._base
    if base is not None and base.grad_fn is None and base._requires_grad:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        )


def _check_view_creation(t: Tensor) -> None:
    how = t._view_creation
    if t._base is None or not t._base.requires_grad:
        return
    if how[0] == "no_grad":
        raise RuntimeError(
            "A view was created in no_grad mode and is being modified inplace with grad mode "
            "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
            "You can clarify your code by moving both the view and the inplace either both "
            "inside the no_grad block (if you don't want the inplace to be tracked) or both "
            "outside (if you want the inplace to be tracked)."
        )
    raise RuntimeError(
        f"Output {t.output_nr} of {how[1]} is a view and is being modified inplace. This view "
        "is the output of a function that returns multiple views. Such functions do not allow "
        "the output views to be modified inplace. You should replace the inplace operation by "
        "an out-of-place one."
    )


def mark_views(outputs: Any, how: tuple) -> None:
    """Remember how these views were made (Note: in-place operations on views)."""
    if isinstance(outputs, Tensor):
        if outputs._base is not None:
            outputs._view_creation = how
            track_view(outputs)
        return
    for t in outputs:
        if isinstance(t, Tensor) and t._base is not None:
            t._view_creation = how
            track_view(t)


_VIEWS = "_autograd_views"  # the base's __dict__ entry: weak references to its views
_LIMIT = "_autograd_views_limit"  # the length at which the dead references are dropped


def track_view(view: Tensor) -> None:
    """Remember `view` on its base when the base has history, so that an in-place write into
    the base gives it a new grad_fn (Note: in-place operations on views)."""
    base = view._base
    if base is None or base.grad_fn is None:
        return
    state = base.__dict__
    found = state.get(_VIEWS)
    if found is None:
        state[_VIEWS] = [weakref.ref(view)]
        return
    if len(found) >= state.get(_LIMIT, 64):  # drop the views that died; amortised O(1)
        found[:] = [ref for ref in found if ref() is not None]
        state[_LIMIT] = max(64, 2 * len(found))
    found.append(weakref.ref(view))


def _regenerate_views(base: Tensor, written: Tensor) -> None:
    # `base` was just written (directly or through `written`): its other views now read the
    # new values, so their gradients flow through the base's new node.
    found = base.__dict__.get(_VIEWS)
    if not found:
        return
    alive = []
    for ref in found:
        view = ref()
        if view is None:
            continue
        alive.append(ref)
        if view is written:
            continue
        old, old_nr = view.grad_fn, view.output_nr
        if view._view_creation is not None:
            node: Node = _RefusedView(view._view_creation, view.output_nr)
            node.next_functions = (gradient_edge(base),)
        else:
            node = AsStridedBackward0(base, view)
            node.next_functions = (gradient_edge(base),)
        set_history((view,), node)
        _move_retained(view, old, old_nr)
    found[:] = alive


NO_GRAD_VIEW = ("no_grad",)


def view_geometry(t: Tensor) -> tuple | None:
    """A view's geometry before an in-place view operation (transpose_) changes it."""
    if t._base is None:
        return None
    return (t._sizes, t._strides, t._offset)


def view_tangent_to_base(view: Tensor) -> None:
    """Forward mode after an in-place write into a view: the base's tangent takes the view's
    (zeros elsewhere when the base had none), and the view's tangent becomes a view of it."""
    tangent = view._fw_grad
    if tangent is None:
        return
    base = view._base
    level, FW[0] = FW[0], -1
    try:
        whole = base._fw_grad
        if whole is None or whole._strides != base._strides or whole._offset != 0:
            fresh = empty_strided(base._sizes, base._strides, tangent)
            if whole is None:
                fresh.zero_()
            else:
                fresh.copy_(whole)
            whole = fresh
            set_tangent(base, whole)
        region = whole.as_strided(view._sizes, view._strides, view._offset - base._offset)
        if region is not tangent:
            region.copy_(tangent)
        view._fw_grad = region
    finally:
        FW[0] = level


def raise_out_requires_grad(name: str) -> None:
    raise RuntimeError(
        f"{name}(): functions with out=... arguments don't support automatic differentiation, "
        "but one of the arguments requires grad."
    )


def rebase_history(t: Tensor, node: Node, before: tuple | None = None) -> None:
    """`t` was just written in place by the call `node` records (Note: in-place on views);
    `before`: the view's geometry before an in-place view operation changed it."""
    base = t._base
    if base is None:
        old = t.grad_fn, t.output_nr
        set_history((t,), node)
        _move_retained(t, *old)
        _regenerate_views(t, t)
        return
    old_base = base.grad_fn, base.output_nr
    old_view = t.grad_fn, t.output_nr
    copy = CopySlices(base, t, node)
    if before is not None:
        scale = 1 if t._dtype is base._dtype else 2  # a real view's offsets count real parts
        copy.before = (before[0], before[1], before[2] - scale * base._offset)
    copy.next_functions = (gradient_edge(base),) + node.next_functions[1:]
    set_history((base,), copy)
    view = AsStridedBackward0(base, t)
    view.next_functions = ((copy, 0),)
    set_history((t,), view)
    _move_retained(base, *old_base)
    _move_retained(t, *old_view)
    _regenerate_views(base, t)


def _move_retained(t: Tensor, old: Node | None, old_nr: int) -> None:
    # retain_grad() keeps the gradient of the tensor's newest value: it moves to its new node
    if not t.retains_grad or old is None or old is t.grad_fn:
        return
    ref = old._retains_grad.pop(old_nr, None) if old._retains_grad else None
    node = t.grad_fn
    if node._retains_grad is None:
        node._retains_grad = {}
    node._retains_grad[t.output_nr] = ref if ref is not None else weakref.ref(t)


def _geometry(base: Tensor, view: Tensor) -> tuple:
    if view._dtype is not base._dtype:  # x.real / x.imag: offsets in the real parts' units
        return (view._sizes, view._strides, view._offset - 2 * base._offset)
    return (view._sizes, view._strides, view._offset - base._offset)


def _window(result: Tensor, view_dtype: object, geometry: tuple) -> Tensor:
    # The view's elements in the base-shaped gradient `result`; a real view of a complex
    # base (.real, .imag) is a window of its real pairs, as PyTorch's view replay gives.
    if view_dtype is not result._dtype:
        from pyaten.native.ops_handles import aten_ops

        result = aten_ops().view_as_real.default(result)
    return result.as_strided(*geometry)


def _view_bits(base: Tensor, view: Tensor) -> int:
    # A conj or neg view of its base (x.conj(), x.conj().imag): its gradient window reads and
    # writes the base's gradient through the same bits (Note: math bits, native/mathbits.py).
    return (view._keyset ^ base._keyset) & (CONJ_BIT | NEG_BIT)


def _through_bits(window: Tensor, bits: int) -> Tensor:
    if bits & CONJ_BIT:
        window = window.conj()
    if bits & NEG_BIT:
        window = window._neg_view()
    return window


class CopySlices(Node):
    """The base's node after an in-place write through one of its views."""

    __slots__ = ("base_sizes", "base_strides", "view", "before", "fn", "bits", "view_dtype")

    def name(self) -> str:
        return "torch::autograd::CopySlices"  # PyTorch's C++ name, as its name() reports

    def __init__(self, base: Tensor, view: Tensor, fn: Node) -> None:
        super().__init__()
        self.base_sizes = base._sizes
        self.base_strides = base._strides
        self.view = _geometry(base, view)
        self.before = None
        self.fn = fn
        self.bits = _view_bits(base, view)
        self.view_dtype = view._dtype

    def apply(self, grads: tuple) -> tuple:
        grad = grads[0]
        result = empty_strided(self.base_sizes, self.base_strides, grad)
        result.copy_(grad)
        grad_slice = _through_bits(_window(result, self.view_dtype, self.view), self.bits)
        inner = self.fn.apply((grad_slice.clone(),))
        outputs = [result]
        if self.before is not None:  # the input had the view's old geometry (transpose_)
            grad_slice.zero_()
            grad_slice = _through_bits(_window(result, self.view_dtype, self.before), self.bits)
        if inner and inner[0] is not None:
            grad_slice.copy_(inner[0])
        else:
            grad_slice.zero_()
        outputs.extend(inner[1:])
        return tuple(outputs)

    def release_variables(self) -> None:
        self.fn.release_variables()
        super().release_variables()


class AsStridedBackward0(Node):
    """A view's node after an in-place write: the view as a strided window of its base."""

    __slots__ = ("base_sizes", "base_strides", "view", "bits", "view_dtype", "base_dtype")

    def __init__(self, base: Tensor, view: Tensor) -> None:
        super().__init__()
        self.base_sizes = base._sizes
        self.base_strides = base._strides
        self.view = _geometry(base, view)
        self.bits = _view_bits(base, view)
        self.view_dtype = view._dtype
        self.base_dtype = base._dtype

    def apply(self, grads: tuple) -> tuple:
        grad = grads[0]
        if self.base_dtype is not grad._dtype:  # .real/.imag: the base's gradient is complex
            from pyaten.native.ops_handles import aten

            result = aten.empty_strided.default(list(self.base_sizes), list(self.base_strides),
                                                dtype=self.base_dtype, device=grad._device)
        else:
            result = empty_strided(self.base_sizes, self.base_strides, grad)
        result.zero_()
        _through_bits(_window(result, self.view_dtype, self.view), self.bits).copy_(grad)
        return (result,)


class _RefusedView(Node):
    """A view that cannot be rebased, after a write into its base: backward raises."""

    __slots__ = ("how", "nr")

    def __init__(self, how: tuple, nr: int) -> None:
        super().__init__()
        self.how = how
        self.nr = nr

    def name(self) -> str:
        return "AsStridedBackward0"

    def apply(self, grads: tuple) -> tuple:
        if self.how[0] == "no_grad":
            raise RuntimeError(
                "A view was created in no_grad mode and its base or another view of its base "
                "has been modified inplace with grad mode enabled. Given that this use case is "
                "ambiguous and error-prone, it is forbidden. You can clarify your code by "
                "moving both the view and the inplace either both inside the no_grad block (if "
                "you don't want the inplace to be tracked) or both outside (if you want the "
                "inplace to be tracked)."
            )
        raise RuntimeError(
            f"Output {self.nr} of {self.how[1]} is a view and its base or another view of its "
            "base has been modified inplace. This view is the output of a function that "
            "returns multiple views. Such functions do not allow the output views to be "
            "modified inplace. You should replace the inplace operation by an out-of-place one."
        )


class NotImplementedBackward(Node):
    """Recorded for an operator without a derivative: backward through it raises."""

    __slots__ = ("op",)

    def __init__(self, op: str) -> None:
        super().__init__()
        self.op = op

    def name(self) -> str:
        return "NotImplemented"

    def apply(self, grads: tuple) -> tuple:
        raise RuntimeError(f"derivative for {self.op} is not implemented")


def record_not_implemented(op: str, inputs: list, outputs: Any, written: Any = None) -> Any:
    """Attach a NotImplemented node to the differentiable outputs of `op`."""
    node = NotImplementedBackward(op)
    node.next_functions = tuple(gradient_edge(t) for t in inputs)
    if written is not None:
        rebase_history(written, node)
        return outputs
    results = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    set_outputs(node, tuple(results), (True,) * len(results), tuple(inputs))
    return outputs


def any_requires_grad(tensors: Any) -> bool:
    for t in tensors:
        if t is not None and t._requires_grad:
            return True
    return False


def original(t: Tensor) -> Tensor:
    """A copy of `t` taken before an in-place write (for formulas that read the old value).

    The copy is recorded (CloneBackward0), as PyTorch's `original_self` is, so a gradient
    computed from it can be differentiated again."""
    return t.clone()


def set_outputs(node: Node, outputs: tuple, wanted: tuple, inputs: tuple) -> None:
    """Make the differentiable outputs the node's; an output that is an input is left alone."""
    chosen = []
    for t, want in zip(outputs, wanted):
        if (
            want
            and isinstance(t, Tensor)
            and (t._dtype.is_floating_point or t._dtype.is_complex)
            and not any(t is i for i in inputs)
        ):
            chosen.append(t)
        else:
            chosen.append(None)
    if any(t is not None for t in chosen):
        set_history(chosen, node)


def any_tangent(tensors: Any) -> bool:
    for t in tensors:
        if t is not None and t._fw_grad is not None:
            return True
    return False


def tangent(t: Tensor | None) -> Tensor | None:
    """`t`'s tangent, zeros when it has none (None for an absent optional input)."""
    if t is None:
        return None
    found = t._fw_grad
    if found is not None:
        return found
    return t.detach().new_zeros(t.shape) if hasattr(t, "new_zeros") else None


def element_wise(backward: Callable, t: Tensor | None) -> Tensor | None:
    """The forward tangent of an element-wise op from its backward formula (PyTorch's
    auto_element_wise): the formula applied to the tangent, conjugated around for complex."""
    if t is None:
        return None
    if t.is_complex():
        return backward(t.conj()).conj()
    return backward(t)


if _ACCEL_GRAPH is not None:  # Note: the compiled recording calls (autograd/accel_graph.py)
    _ACCEL_GRAPH.setup(Tensor, Node, _dtype_class, NO_EDGE, gradient_edge, grad_accumulator,
                       call_below_autograd, record_output, track_view)
    make_node = _ACCEL_GRAPH.make_node  # noqa: F811
    run_recorded = _ACCEL_GRAPH.run_recorded  # noqa: F811
    run_recorded_view = _ACCEL_GRAPH.run_recorded_view  # noqa: F811
