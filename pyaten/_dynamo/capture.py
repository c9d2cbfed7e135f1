"""Capture: one run of a function under a recording dispatch mode, giving an FX graph.

Note: capture by running
    PyTorch's Dynamo reads Python bytecode; pyaten runs the function once, on the real
    inputs, functionalized (pyaten/_functionalize), under a `TorchDispatchMode` that records
    every ATen call below autograd (as `make_fx` does). The run's result is the call's
    result, so capturing costs one eager call and never runs the function twice. What the
    dispatcher does not see cannot be recorded: Python side effects (appending to a list,
    printing, `.tolist()`, `.numpy()`) happen during the capture run only, and Python control
    flow is frozen along the path this run took. Control flow that reads a tensor's value
    reaches the dispatcher as `_local_scalar_dense` (`.item()`, `bool()`, `int()`,
    `float()`), so capture sees it: such a call, an operator whose output shape depends on
    data (`nonzero`, boolean-mask indexing, `unique`...) and an operator returning a Python
    value (`equal`) are graph breaks, and so is an operator capture cannot
    take (one that raises NotImplementedError under it, such as a custom in-place operator
    without a functional variant: the function then runs again, eagerly). At a break
    recording stops and the rest of the run finishes eagerly, so the call's result is still
    right; the guard set is then remembered as eager (`pyaten.compile_report()` says why),
    and `fullgraph=True` raises `Unsupported` at the break instead.

Note: random operators in a graph
    A random operator (one tagged `nondeterministic_seeded`: `rand`, `bernoulli`,
    `native_dropout`...) is recorded like any other, with its `generator` argument. A graph
    runs its nodes in the captured order and calls each random node's own kernel, which draws
    from the generator then as eager's call would: with the same seed a compiled call gives
    eager's values and leaves the generator where eager leaves it. So a random node is never
    fused, reordered or removed as dead code (`eliminate_dead_code` below keeps it), and the
    backward reads the draws (a dropout mask) as saved values, never drawing again.

Tensors the function reads without receiving them (a module's parameters, closed-over
tensors) become extra graph inputs ("lifted constants"), held by identity: the graph reads
their current values on every call, and gradients reach them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.fx.experimental.proxy_tensor import _CaptureMode
from pyaten.fx.graph import Graph
from pyaten.fx.graph_module import GraphModule
from pyaten.fx.node import Node
from pyaten.utils import _pytree

from .exc import Unsupported

__all__ = ["Capture", "capture", "eliminate_dead_code", "graph_break_reason", "is_random"]

_STATE = {"compiling": 0}

# Operators whose output shape depends on the input's values.
_DATA_DEPENDENT_SHAPE = frozenset({
    "nonzero", "masked_select", "unique", "_unique", "_unique2", "unique_dim",
    "unique_consecutive", "argwhere", "nonzero_numpy", "_ragged_idx",
})


def is_random(target: Any) -> bool:
    """Whether an operator draws from a generator (Note: random operators in a graph)."""
    return "nondeterministic_seeded" in (getattr(target, "tags", None) or ())


def eliminate_dead_code(graph: Graph) -> None:
    """`graph.eliminate_dead_code()` keeping random nodes: a draw nobody reads still moves
    the generator, as eager's call does."""
    while True:
        changed = False
        for node in reversed(list(graph.nodes)):
            if node.op != "call_function" or node.users or is_random(node.target):
                continue
            schema = getattr(node.target, "_schema", None)
            if schema is not None and any(a.is_write for a in schema.returns):
                continue
            graph.erase_node(node)
            changed = True
        if not changed:
            return


def graph_break_reason(func: Any, args: tuple, kwargs: dict) -> str | None:
    """Why calling `func` on these arguments cannot go into a graph, or None."""
    name = getattr(getattr(func, "overloadpacket", None), "__name__", str(func))
    if name == "_local_scalar_dense":
        return ("data-dependent: a tensor's value read into Python (.item(), bool(), int(), "
                "float(): control flow on tensor values)")
    if name in _DATA_DEPENDENT_SHAPE or (name == "repeat_interleave" and "Tensor" in str(func)
                                         and kwargs.get("output_size") is None):
        return "data-dependent output shape"
    if name in ("index", "index_put", "_index_put_impl") and any(
            isinstance(i, Tensor) and i.dtype.name in ("bool", "uint8")
            for i in (args[1] if len(args) > 1 and isinstance(args[1], (list, tuple)) else ())):
        return "data-dependent output shape (indexing with a boolean mask)"
    schema = getattr(func, "_schema", None)
    if schema is not None and schema.returns and all(
            str(r.type) in ("bool", "int", "float", "Scalar", "SymInt") for r in schema.returns):
        return "data-dependent: the operator returns a Python value"
    return None


class _BreakingCapture(_CaptureMode):
    """`make_fx`'s recording mode, stopping at the first graph break and lifting unknown
    tensors into graph inputs."""

    def __init__(self, graph: Graph, fullgraph: bool) -> None:
        super().__init__(graph)
        self.fullgraph = fullgraph
        self.break_op: str | None = None
        self.break_reason: str | None = None
        self.lifted: list[Tensor] = []
        self.recording = True
        self.by_memory: dict[tuple, Node] = {}

    def track(self, value: Any, node: Node) -> None:
        super().track(value, node)
        key = _memory_key(value)
        if key is not None:
            self.by_memory.setdefault(key, node)

    def node_of(self, value: Any) -> Any:
        if not isinstance(value, Tensor):
            return value
        known = self.nodes.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        # another tensor object over a recorded value's memory, same geometry (what
        # autograd unpacks for a value it saved): the same value
        key = _memory_key(value)
        if key is not None and key in self.by_memory:
            return self.by_memory[key]
        node = self.graph.placeholder(f"const{len(self.lifted)}")
        self.lifted.append(value)
        self.track(value, node)
        return node

    def __torch_dispatch__(self, func: Any, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if self.recording:
            reason = graph_break_reason(func, args, kwargs)
            if reason is not None:
                if self.fullgraph:
                    raise Unsupported(f"graph break at {func}: {reason} (fullgraph=True)")
                self.break_op, self.break_reason, self.recording = str(func), reason, False
        if not self.recording:
            return func(*args, **kwargs)
        return super().__torch_dispatch__(func, types, args, kwargs)


def _memory_key(value: Any) -> tuple | None:
    if not isinstance(value, Tensor) or value.device.type != "cpu":
        return None
    try:
        return (value.data_ptr(), tuple(value.shape), value.stride(), value.dtype)
    except RuntimeError:
        return None


@dataclass
class Capture:
    """What one capture run produced.

    `graph` takes the call's tensor inputs (flattened, in order) then `constants`, and
    returns the output tensors flat; `out_spec` and `out_leaves` rebuild the result (a leaf
    is an int, the position among the graph's outputs, or `("const", value)`). With a
    backward captured, `joint` holds the forward ops, the tangents and the gradients
    (pyaten/_dynamo/aot.py splits it)."""

    result: Any
    graph: GraphModule | None
    constants: list[Tensor] = field(default_factory=list)
    out_spec: Any = None
    out_leaves: list[Any] = field(default_factory=list)
    break_op: str | None = None
    break_reason: str | None = None
    joint: Any = None


def is_compiling() -> bool:
    return _STATE["compiling"] > 0


def capture(fn: Any, args: tuple, kwargs: dict, *, fullgraph: bool, backward: bool) -> Capture:
    """Run `fn(*args, **kwargs)` once, recording its ATen calls (Note: capture by running).
    With `backward`, also record the gradients of the outputs that require grad with
    respect to every graph input that requires grad (AOTAutograd's joint graph)."""
    from pyaten._functionalize import functionalize
    from pyaten.autograd import grad as autograd_grad

    flat, spec = _pytree.tree_flatten((args, kwargs))
    graph = Graph()
    mode = _BreakingCapture(graph, fullgraph)
    for i, value in enumerate(flat):
        if isinstance(value, Tensor):
            mode.track(value, graph.placeholder(f"arg{i}"))
    call_args, call_kwargs = _pytree.tree_unflatten(flat, spec)
    _STATE["compiling"] += 1
    try:
        try:
            with mode:
                result = functionalize(fn)(*call_args, **call_kwargs)
        except NotImplementedError as error:
            # an operator capture cannot take (no functional variant...): a graph break.
            # Functionalized, the aborted run wrote no input (writes come at its end), so
            # the function runs again, eagerly, for the call's result.
            if fullgraph:
                raise Unsupported(f"graph break: unsupported operator: {error} "
                                  "(fullgraph=True)") from error
            result = fn(*args, **kwargs)
            return Capture(result, None, break_op=mode.break_op or "unsupported operator",
                           break_reason=f"unsupported operator: {error}")
        if not mode.recording:
            return Capture(result, None, break_op=mode.break_op, break_reason=mode.break_reason)
        out_flat, out_spec = _pytree.tree_flatten(result)
        outputs: list[Node] = []
        leaves: list[Any] = []
        for value in out_flat:
            if isinstance(value, Tensor):
                leaves.append(len(outputs))
                outputs.append(mode.node_of(value))
            else:
                leaves.append(("const", value))
        joint = None
        if backward:
            joint = _capture_backward(mode, graph, out_flat, outputs, autograd_grad)
            if not mode.recording:  # a break inside the backward: the forward stands alone
                joint = None
                mode.recording = True
        graph.output(tuple(outputs))
    finally:
        _STATE["compiling"] -= 1
    if joint is None:
        _drop_tangents(graph)
    eliminate_dead_code(graph)
    graph.lint()
    _keep_metadata_only(graph)
    module = GraphModule({}, graph, class_name=getattr(fn, "__name__", "fn"))
    return Capture(result, module, list(mode.lifted), out_spec, leaves, mode.break_op,
                   mode.break_reason, joint)


@dataclass
class Joint:
    """The joint graph's bookkeeping: which outputs are differentiable, the tangent
    placeholders, the graph inputs differentiated and the nodes of their gradients."""

    diff_outputs: list[int]
    tangents: list[Node]
    grad_inputs: list[Node]
    grads: list[Node | None]


def add_tangents(graph: Graph, mode: Any, tensors: list[Tensor],
                 diff: list[int]) -> tuple[list[Node], list[Tensor]]:
    """A `tangents_<k>` placeholder for each differentiable output `tensors[i]` (i in `diff`),
    and the all-ones seed the capture `mode` tracks as its value: (placeholders, seeds)."""
    tangents: list[Node] = []
    seeds: list[Tensor] = []
    for i in diff:
        seed = tensors[i].detach().new_ones(tensors[i].shape)
        node = graph.placeholder(f"tangents_{len(tangents) + 1}")
        mode.track(seed, node)
        tangents.append(node)
        seeds.append(seed)
    return tangents, seeds


def _capture_backward(mode: _BreakingCapture, graph: Graph, out_flat: list[Any],
                      outputs: list[Node], autograd_grad: Any) -> Joint | None:
    from pyaten.autograd.grad_mode import is_grad_enabled

    if not is_grad_enabled():
        return None
    tensors = [v for v in out_flat if isinstance(v, Tensor)]
    diff = [i for i, t in enumerate(tensors) if t.requires_grad and t.dtype.is_floating_point]
    inputs = [(n, v) for n in graph.nodes if n.op == "placeholder"
              for v in [n.meta.get("val")] if isinstance(v, Tensor) and v.requires_grad]
    if not diff or not inputs:
        return None
    tangents, seeds = add_tangents(graph, mode, tensors, diff)
    with mode:
        grads = autograd_grad([tensors[i] for i in diff], [v for _, v in inputs], seeds,
                              retain_graph=True, allow_unused=True)
    if not mode.recording:
        _drop_tangents(graph)
        return None
    grad_nodes = [None if g is None else mode.node_of(g) for g in grads]
    outputs.extend(n for n in grad_nodes if n is not None)
    return Joint(diff, tangents, [n for n, _ in inputs], grad_nodes)


def _keep_metadata_only(graph: Graph) -> None:
    """Each node's `val` as a Meta tensor (shape, dtype, strides, no data): the graph must
    not keep the capture run's inputs and activations alive."""
    import pyaten
    from pyaten.autograd.grad_mode import no_grad

    def shell(value: Any) -> Any:
        if isinstance(value, Tensor) and value.device.type != "meta":
            # one factory call, not `detach().to("meta")`'s chain of operators
            return pyaten.empty_strided(value.shape, value.stride(), dtype=value.dtype,
                                        device="meta")
        if isinstance(value, (tuple, list)):
            return type(value)(shell(v) for v in value)
        return value

    with no_grad():
        for node in graph.nodes:
            if "val" in node.meta:
                node.meta["val"] = shell(node.meta["val"])


def _drop_tangents(graph: Graph) -> None:
    for node in reversed(graph.nodes):
        if node.op == "placeholder" and node.name.startswith("tangents_") and not node.users:
            graph.erase_node(node)

