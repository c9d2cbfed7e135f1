"""Capture with dynamic shapes: one run on FakeTensors whose sizes are symbols.

Note: a dynamic capture
    `pyaten.compile(fn, dynamic=True)` (or a second call with other sizes under the default
    `dynamic=None`) captures `fn` once for every size of the dims marked dynamic. The capture
    run (pyaten/_dynamo/capture.py, "Note: capture by running") then runs on FakeTensors:
    each tensor argument becomes a Meta tensor whose marked sizes are symbols of a
    `ShapeEnv` (pyaten/fx/experimental/symbolic_shapes.py), so only Meta kernels run, the
    graph reads sizes with `sym_size.int` where the program uses them, and every decision
    taken on a size becomes a guard of the entry. Tensors the function reads without
    receiving them (parameters) are lifted as for a static capture and seen by the kernels
    as Meta tensors of their (static) sizes. The call's result is then computed by the
    compiled graph itself, on the real inputs. Python side effects of the capture run see
    FakeTensors; a graph break aborts the run and the call runs eagerly.

    A Python `int` argument (not a bool) at a position `dynamic_dims` names becomes a symbol
    too, as PyTorch's `dynamic=True` does (its `specialize_int` is False): a graph input of
    its own, read wherever the program uses it, and a decision taken on it (a branch, a
    dim) is a guard like a size's. Unlike PyTorch's, 0 and 1 stay constants, as sizes do.
"""

from __future__ import annotations

import re
from typing import Any

from pyaten.core.symbolic import SymInt
from pyaten.core.tensor import Tensor
from pyaten.fx.experimental.symbolic_shapes import ShapeEnv, fake_tensor
from pyaten.fx.graph import Graph
from pyaten.fx.graph_module import GraphModule
from pyaten.fx.node import Node
from pyaten.utils import _pytree

from .capture import (
    _STATE,
    Capture,
    Joint,
    _BreakingCapture,
    _drop_tangents,
    add_tangents,
    eliminate_dead_code,
    graph_break_reason,
)
from .exc import Unsupported

__all__ = ["capture_symbolic"]


class _Break(Exception):
    def __init__(self, op: str, reason: str) -> None:
        super().__init__(f"{op}: {reason}")
        self.op = op
        self.reason = reason


def _static_fake(t: Tensor) -> Tensor:
    from pyaten.core.device import device as make_device
    from pyaten.core.views import empty_tensor

    fake = empty_tensor(tuple(t.shape), t.dtype, make_device("meta"), tuple(t.stride()))
    return fake.requires_grad_(True) if t.requires_grad else fake


class _SymbolicCapture(_BreakingCapture):
    """The capture mode over FakeTensors: a real tensor reaching an operator (a parameter,
    a closed-over tensor, a factory's result) is seen as a Meta tensor of its sizes."""

    def __init__(self, graph: Graph, fullgraph: bool) -> None:
        self.by_fake_memory: dict[tuple, Node] = {}
        super().__init__(graph, fullgraph)
        self.fakes: dict[int, tuple[Tensor, Tensor]] = {}  # id(real) -> (real, its fake)

    def track(self, value: Any, node: Node) -> None:
        super().track(value, node)
        key = _fake_memory_key(value)
        if key is not None:
            self.by_fake_memory.setdefault(key, node)

    def node_of(self, value: Any) -> Any:
        if isinstance(value, SymInt):  # a size: read from a tensor of the graph
            return self.sym_node_of(value)
        if isinstance(value, Tensor) and value.device.type == "meta":
            known = self.nodes.get(id(value))
            if known is not None and known[0] is value:
                return known[1]
            # another tensor object over a recorded fake's storage, same geometry (what
            # autograd unpacks for a value it saved): the same value
            node = self.by_fake_memory.get(_fake_memory_key(value))
            if node is None:
                raise _Break("lift", "a FakeTensor the capture did not make")
            return node
        return super().node_of(value)

    def fake_of(self, value: Any) -> Any:
        if not isinstance(value, Tensor) or value.device.type == "meta":
            return value
        known = self.fakes.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        node = self.node_of(value)  # a tracked value's node, else lifted as an input
        fake = _static_fake(value)
        self.track(fake, node)  # the node's value: the fake (no data kept alive)
        self.fakes[id(value)] = (value, fake)
        return fake

    def __torch_dispatch__(self, func: Any, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        reason = graph_break_reason(func, args, kwargs)
        if reason is not None:
            if self.fullgraph:
                raise Unsupported(f"graph break at {func}: {reason} (fullgraph=True)")
            raise _Break(str(func), reason)
        args = _pytree.tree_map(self.fake_of, args)
        kwargs = _pytree.tree_map(self.fake_of, kwargs)
        return super().__torch_dispatch__(func, types, args, kwargs)


def _fake_memory_key(value: Any) -> tuple | None:
    if not isinstance(value, Tensor) or value.device.type != "meta":
        return None
    return (id(value._storage), value._offset, tuple(value._sizes), tuple(value._strides),
            value.dtype)


def capture_symbolic(fn: Any, args: tuple, kwargs: dict, *, fullgraph: bool, backward: bool,
                     dynamic_dims: dict[int, frozenset[int] | None]) -> Capture:
    """Capture `fn` on FakeTensors (Note: a dynamic capture). `dynamic_dims` maps the
    position of each tensor among the flattened arguments to the dims given symbols (None:
    every dim), and an int argument's position to None to make it a symbol. The Capture's
    `result` is None (the caller runs the compiled graph); its `shape_env` and `fakes` (per
    flattened argument: the FakeTensor, the int's SymInt, or None) make the guards. A
    graph break gives a Capture without graph."""
    from pyaten.autograd.grad_mode import no_grad
    from pyaten.func import functionalize

    flat, spec = _pytree.tree_flatten((args, kwargs))
    shape_env = ShapeEnv()
    graph = Graph()
    mode = _SymbolicCapture(graph, fullgraph)
    fakes: list[Tensor | None] = []
    call_flat: list[Any] = []
    with no_grad():
        for i, value in enumerate(flat):
            if isinstance(value, Tensor):
                dims = dynamic_dims.get(i, frozenset())
                static = frozenset() if dims is None else frozenset(
                    d for d in range(value.dim()) if d not in dims)
                fake = fake_tensor(value.detach(), shape_env, f"L['arg{i}']", static)
                fake.requires_grad_(value.requires_grad)
                mode.track(fake, graph.placeholder(f"arg{i}"))
                fakes.append(fake)
                call_flat.append(fake)
            elif type(value) is int and i in dynamic_dims:
                sym = shape_env.create_symbol(value, f"L['arg{i}']")
                if isinstance(sym, SymInt):
                    node = graph.placeholder(f"arg{i}")
                    node.meta["val"] = sym
                    mode.sym_nodes.setdefault(sym.node.expr.key(), node)
                fakes.append(sym if isinstance(sym, SymInt) else None)
                call_flat.append(sym)
            else:
                fakes.append(None)
                call_flat.append(value)
    call_args, call_kwargs = _pytree.tree_unflatten(call_flat, spec)
    _STATE["compiling"] += 1
    try:
        try:
            with mode:
                result = functionalize(fn)(*call_args, **call_kwargs)
        except _Break as stop:
            return _with_env(Capture(None, None, break_op=stop.op, break_reason=stop.reason),
                             shape_env, fakes)
        except NotImplementedError as error:
            if fullgraph:
                raise Unsupported(f"graph break: unsupported operator: {error} "
                                  "(fullgraph=True)") from error
            return _with_env(Capture(None, None, break_op="unsupported operator",
                                     break_reason=f"unsupported operator: {error}"),
                             shape_env, fakes)
        out_flat, out_spec = _pytree.tree_flatten(result)
        if any(_is_symbolic(v) for v in out_flat):
            return _with_env(Capture(None, None, break_op="output",
                                     break_reason="a symbolic size returned as a Python value"),
                             shape_env, fakes)
        outputs: list[Node] = []
        leaves: list[Any] = []
        for value in out_flat:
            if isinstance(value, Tensor):
                leaves.append(len(outputs))
                try:
                    outputs.append(mode.node_of(value))
                except _Break as stop:
                    return _with_env(Capture(None, None, break_op=stop.op,
                                             break_reason=stop.reason), shape_env, fakes)
            else:
                leaves.append(("const", value))
        joint = None
        if backward:
            try:
                joint = _capture_backward(mode, graph, out_flat, outputs)
            except _Break:
                joint = None
        graph.output(tuple(outputs))
    finally:
        _STATE["compiling"] -= 1
    eliminate_dead_code(graph)
    if joint is None:
        _drop_tangents(graph)
    graph.lint()
    _check_int_uses(graph, shape_env)
    module = GraphModule({}, graph, class_name=getattr(fn, "__name__", "fn"))
    module.shape_env = shape_env
    return _with_env(Capture(None, module, list(mode.lifted), out_spec, leaves, None, None,
                             joint), shape_env, fakes)


# where an int symbol may go: besides integer arguments (sizes, dims) and size arithmetic,
# the number operand of these operators, whose Meta kernels promote a symbol as an int
_INT_OPERAND_OPS = frozenset({"add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor"})


def _check_int_uses(graph: Graph, shape_env: ShapeEnv) -> None:
    """Refuse a graph where a symbolic int argument (or size arithmetic on one) reaches an
    operator argument that is not an integer one (a `full` fill value...), or was made a
    Python float on the way (`n ** x`): there it would not be typed as an int. The caller
    then captures with the int arguments constant (pyaten/_dynamo/eval_frame.py)."""
    derived = {n for n in graph.nodes if n.op == "placeholder" and
               isinstance(n.meta.get("val"), SymInt)}
    for node in derived:
        name = node.meta["val"].node.expr.text
        for guard in shape_env.guards:
            if guard.value and re.fullmatch(rf"{re.escape(name)} == -?\d+\.\d*", guard.expr):
                raise TypeError(f"an int argument ({name}) was used as a float")
    for node in graph.nodes:
        used = [a for a in node.all_input_nodes if a in derived]
        if not used or node.op == "output":
            continue
        schema = getattr(node.target, "_schema", None)
        if schema is None:  # size arithmetic (operator.mul...): a symbol again
            derived.add(node)
            continue
        name = getattr(node.target, "__name__", "")
        given = list(zip(schema.arguments, node.args))
        given += [(a, node.kwargs[a.name]) for a in schema.arguments if a.name in node.kwargs]
        for argument, value in given:
            if not isinstance(value, Node) or value not in used:
                continue
            if not str(argument.type).startswith(("int", "SymInt")) and \
                    not (name in _INT_OPERAND_OPS and argument.name == "other"):
                raise TypeError(f"an int argument reaches {node.target}'s argument "
                                f"'{argument.name}' ({argument.type}) as a symbol")


def _with_env(cap: Capture, shape_env: ShapeEnv, fakes: list[Any]) -> Capture:
    cap.shape_env = shape_env  # type: ignore[attr-defined]
    cap.fakes = fakes  # type: ignore[attr-defined]
    return cap


def _is_symbolic(value: Any) -> bool:
    from pyaten.core.symbolic import is_symbolic

    return is_symbolic(value)


def _capture_backward(mode: _SymbolicCapture, graph: Graph, out_flat: list[Any],
                      outputs: list[Node]) -> Joint | None:
    """The joint graph's backward, as capture.py's, differentiating the real parameters
    (autograd recorded the forward on them, not on their fakes)."""
    from pyaten.autograd import grad as autograd_grad
    from pyaten.autograd.grad_mode import is_grad_enabled

    if not is_grad_enabled():
        return None
    tensors = [v for v in out_flat if isinstance(v, Tensor)]
    diff = [i for i, t in enumerate(tensors) if t.requires_grad and t.dtype.is_floating_point]
    real_of = {id(fake): real for real, fake in mode.fakes.values()}
    inputs: list[tuple[Node, Tensor]] = []
    for node in graph.nodes:
        value = node.meta.get("val") if node.op == "placeholder" else None
        if isinstance(value, Tensor):
            value = real_of.get(id(value), value)
            if value.requires_grad:
                inputs.append((node, value))
    if not diff or not inputs:
        return None
    tangents, seeds = add_tangents(graph, mode, tensors, diff)
    try:
        with mode:
            grads = autograd_grad([tensors[i] for i in diff], [v for _, v in inputs], seeds,
                                  retain_graph=True, allow_unused=True)
    except (RuntimeError, TypeError, ValueError):
        return None  # the forward stands alone: its replay differentiates eagerly
    grad_nodes = [None if g is None else mode.node_of(mode.fake_of(g)) for g in grads]
    outputs.extend(n for n in grad_nodes if n is not None)
    return Joint(diff, tangents, [n for n, _ in inputs], grad_nodes)
