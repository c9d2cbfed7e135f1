"""AOTAutograd's split: a joint forward+backward graph cut into a forward graph and a
backward graph, run as one custom `autograd.Function`.

Note: the partition
    In the joint graph (pyaten/_dynamo/capture.py) a node belongs to the backward when it
    depends on a tangent, else to the forward. Every forward value a backward node reads
    (an input, an activation, `detach` of a value an operator's derivative saved) is a
    *saved value*: the forward graph returns it after the call's outputs, the backward
    graph takes it as an input before the tangents. So what the backward keeps alive is
    exactly the graph's saved values, explicit in both graphs' signatures.

    Neither graph records autograd, so a `detach` in them is only an alias, and so is
    `t(t(x))`: a value reached through such identities is saved as the value itself (the
    joint graph saves `relu` and `detach(detach(relu))` for one ReLU: one saved value, no
    copy), and inside each graph a reader of an identity reads its source instead.

Note: double backward
    The backward graph runs without recording autograd, as PyTorch's AOTAutograd runs its
    compiled backward. A backward with `create_graph=True` still returns gradients that
    require grad (when the inputs do), through one `CompiledFunctionBackward` node; only
    differentiating those gradients again raises PyTorch's "torch.compile with aot_autograd
    does not currently support double backward". The `eager` backend replays the forward
    through the dispatcher, so double backward works there, as in PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.core.views import is_contiguous_strides
from pyaten.fx.graph import Graph
from pyaten.fx.graph_module import GraphModule
from pyaten.fx.node import Node, map_arg

from .capture import eliminate_dead_code

__all__ = ["partition_joint", "aot_function"]


def _copy_node(graph: Graph, node: Node, env: dict[Node, Node]) -> Node:
    new = graph.create_node(node.op, node.target, map_arg(node.args, env.__getitem__),
                            map_arg(node.kwargs, env.__getitem__), name=node.name)
    new.meta = dict(node.meta)
    return new


_DETACH = "detach.default"
_TRANSPOSE = "t.default"


def _aten_call(node: Node, name: str) -> bool:
    return node.op == "call_function" and not node.kwargs and len(node.args) == 1 and \
        isinstance(node.args[0], Node) and getattr(node.target, "__name__", "") == name and \
        getattr(node.target, "namespace", None) == "aten"


def _identity_source(node: Node) -> Node:
    """What `node` is an alias of through `detach` and `t(t(...))` (Note: the partition)."""
    while True:
        if _aten_call(node, _DETACH):
            node = node.args[0]
        elif _aten_call(node, _TRANSPOSE) and _aten_call(node.args[0], _TRANSPOSE):
            node = node.args[0].args[0]
        else:
            return node


def _read_sources(graph: Graph, outputs: bool = False) -> None:
    """Readers of an identity read its source (Note: the partition). The graph's outputs
    keep their own nodes unless `outputs` (the backward's gradients): then an output that
    is an identity of an operator's fresh result, returned nowhere else, is that result."""
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        swap = {a: _identity_source(a) for a in node.all_input_nodes}
        if any(a is not b for a, b in swap.items()):
            node.args = map_arg(node.args, swap.__getitem__)
            node.kwargs = map_arg(node.kwargs, swap.__getitem__)
    if not outputs:
        return
    output = graph.nodes[-1]
    values = list(output.args[0])
    for i, value in enumerate(values):
        source = _identity_source(value) if isinstance(value, Node) else value
        if source is not value and source.op == "call_function" and source not in values:
            values[i] = source
    output.args = (tuple(values),)


def partition_joint(joint_graph: Graph, joint: Any,
                    n_outputs: int) -> tuple[GraphModule, GraphModule, int]:
    """Split the joint graph (Note: the partition). Returns the forward graph (inputs ->
    outputs then saved values), the backward graph (saved values then tangents -> the
    gradients that exist) and the number of saved values."""
    nodes = joint_graph.nodes
    output = nodes[-1]
    backward: set[Node] = set(joint.tangents)
    for node in nodes:
        if node.op != "output" and any(a in backward for a in node.all_input_nodes):
            backward.add(node)
    fwd_outputs = list(output.args[0][:n_outputs])
    saved: list[Node] = []
    for node in nodes:
        if node in backward or node.op == "output":
            continue
        if any(user in backward for user in node.users):
            source = _identity_source(node)
            if source not in saved:
                saved.append(source)

    forward = Graph()
    env: dict[Node, Node] = {}
    for node in nodes:
        if node in backward or node.op == "output":
            continue
        env[node] = _copy_node(forward, node, env)
    forward.output(tuple(env[n] for n in fwd_outputs + saved))
    _read_sources(forward)
    eliminate_dead_code(forward)
    forward.lint()

    back = Graph()
    benv: dict[Node, Node] = {}
    for node in saved:
        benv[node] = back.placeholder(node.name)
        benv[node].meta = dict(node.meta)
    for node in joint.tangents:
        benv[node] = back.placeholder(node.name)
        benv[node].meta = dict(node.meta)
    for node in nodes:
        if node in backward and node.op != "placeholder":
            benv[node] = _copy_node(back, node, benv)
        elif node not in benv and _identity_source(node) in benv:
            benv[node] = benv[_identity_source(node)]  # an identity of a saved value
    back.output(tuple(benv[g] for g in joint.grads if g is not None))
    _read_sources(back, outputs=True)
    eliminate_dead_code(back)
    back.lint()
    return (GraphModule({}, forward, class_name="GraphModule"),
            GraphModule({}, back, class_name="GraphModule"), len(saved))


def _contiguous(tangent: Any) -> Any:
    """`tangent.contiguous()`, without the call for a plain tensor that already is."""
    if tangent.__class__ is Tensor and is_contiguous_strides(tangent._sizes, tangent._strides):
        return tangent
    return tangent.contiguous()


_SAVED = object()  # where a saved value is one of ctx.saved_tensors


def aot_function(forward_fn: Callable[..., Any], backward_fn: Callable[..., Any], joint: Any,
                 input_nodes: list[Node], n_outputs: int, n_saved: int) -> Callable[..., Any]:
    """A callable over the graph inputs that runs `forward_fn` in an autograd Function whose
    backward runs `backward_fn` on the saved values and the tangents."""
    from pyaten.autograd.function import Function
    from pyaten.autograd.grad_mode import is_grad_enabled

    position = {node: i for i, node in enumerate(input_nodes)}
    grad_slots = [position[n] for n, g in zip(joint.grad_inputs, joint.grads) if g is not None]
    diff = set(joint.diff_outputs)
    frozen = [i for i in range(n_outputs) if i not in diff]
    n_inputs = len(input_nodes)

    class CompiledFunctionBackward(Function):
        """The backward graph as a node of its own (Note: double backward)."""

        @staticmethod
        def forward(ctx: Any, *values: Any) -> Any:
            return tuple(backward_fn(*values))

        @staticmethod
        def backward(ctx: Any, *grad_outputs: Any) -> Any:
            raise RuntimeError("torch.compile with aot_autograd does not currently support "
                               "double backward")

    class CompiledFunction(Function):
        @staticmethod
        def forward(ctx: Any, *inputs: Any) -> Any:
            values = forward_fn(*inputs)
            outs = tuple(values[:n_outputs])
            saved = values[n_outputs:]
            # tensors through save_for_backward: their versions are checked in backward, so
            # an in-place write between forward and backward raises eager's error
            if all(isinstance(v, Tensor) for v in saved):  # the common case: tensors only
                ctx.save_for_backward(*saved)
                ctx.saved_others = None
            else:
                ctx.save_for_backward(*(v for v in saved if isinstance(v, Tensor)))
                ctx.saved_others = tuple(_SAVED if isinstance(v, Tensor) else v for v in saved)
            if frozen:
                ctx.mark_non_differentiable(*(outs[i] for i in frozen))
            return outs

        @staticmethod
        def backward(ctx: Any, *grad_outputs: Any) -> Any:
            tangents = [_contiguous(grad_outputs[i]) for i in joint.diff_outputs]
            if ctx.saved_others is None:
                saved = ctx.saved_tensors
            else:
                tensors = iter(ctx.saved_tensors)
                saved = [next(tensors) if v is _SAVED else v for v in ctx.saved_others]
            values = (*saved, *tangents)
            if is_grad_enabled() and any(ctx.needs_input_grad) or \
                    any(t.requires_grad for t in tangents):
                # create_graph=True: the gradients get a node that refuses to differentiate
                grads = CompiledFunctionBackward.apply(*values)
                grads = grads if isinstance(grads, tuple) else (grads,)
            else:
                grads = backward_fn(*values)
            result: list[Any] = [None] * n_inputs
            for slot, value in zip(grad_slots, grads):
                result[slot] = value
            return tuple(result)

    def run(*inputs: Any) -> tuple:
        outs = CompiledFunction.apply(*inputs)
        return outs if isinstance(outs, tuple) else (outs,)

    run.n_saved = n_saved  # type: ignore[attr-defined]
    run.forward_fn = forward_fn  # type: ignore[attr-defined]
    run.backward_fn = backward_fn  # type: ignore[attr-defined]
    return run
