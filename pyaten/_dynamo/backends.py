"""Backends: what turns a captured graph into the callable a compiled function runs.

`"eager"` replays the graph through the dispatcher (every operator bound and dispatched
again, autograd included, so gradients are eager's). `"aot_eager"` splits a training
capture into a forward and a backward graph (pyaten/_dynamo/aot.py) and replays each.
`"pyaten"` (the default) does the same split and compiles each graph with
pyaten/_inductor (fused C or Numba loops, direct kernel calls, buffer reuse). A callable backend
gets `(graph_module, example_inputs)` and returns the callable, as PyTorch's custom
backends do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.fx.graph_module import GraphModule

from .aot import aot_function, partition_joint
from .capture import Capture, eliminate_dead_code

__all__ = ["BACKENDS", "build", "list_backends"]

BACKENDS = ("pyaten", "eager", "aot_eager")


def list_backends() -> list[str]:
    return list(BACKENDS)


def _identity(gm: GraphModule) -> Callable[..., Any]:
    return gm


def _inductor(gm: GraphModule) -> Callable[..., Any]:
    from pyaten._inductor import compile_graph
    from pyaten._inductor.dynamic import DynamicCompiledGraph, is_symbolic_graph

    if is_symbolic_graph(gm):  # dynamic shapes: compiled per size (pyaten/_inductor/dynamic.py)
        return DynamicCompiledGraph(gm)
    return compile_graph(gm)


def _mutates_input(gm: GraphModule) -> bool:
    placeholders = {n for n in gm.graph.nodes if n.op == "placeholder"}
    for node in gm.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if schema is None or node.op != "call_function":
            continue
        for arg, value in zip(schema.arguments, node.args):
            if arg.is_write and value in placeholders:
                return True
    return False


def build(backend: Any, cap: Capture, inputs: list[Any]) -> tuple[Callable[..., Any], str]:
    """The callable for a capture (over the graph inputs: the call's tensors, then the
    lifted constants) and a word on how it runs."""
    gm = cap.graph
    assert gm is not None
    if callable(backend) and not isinstance(backend, str):
        if cap.joint is not None:  # a custom backend gets the forward graph, as PyTorch's
            gm = _forward_only(gm, cap)
        return backend(gm, inputs), getattr(backend, "__name__", "custom")
    compile_one = _inductor if backend == "pyaten" else _identity
    needs_grad = any(isinstance(v, Tensor) and v.requires_grad for v in inputs)
    if cap.joint is not None and backend != "eager" and not _mutates_input(gm):
        n_outputs = len(gm.graph.nodes[-1].args[0]) - sum(g is not None for g in cap.joint.grads)
        forward, backward, n_saved = partition_joint(gm.graph, cap.joint, n_outputs)
        inputs_nodes = [n for n in gm.graph.nodes
                        if n.op == "placeholder" and not n.name.startswith("tangents_")]
        run = aot_function(compile_one(forward), compile_one(backward), cap.joint, inputs_nodes,
                           n_outputs, n_saved)
        return run, f"aot: forward and backward graphs ({n_saved} saved values)"
    if cap.joint is not None:
        gm = _forward_only(gm, cap)
    if needs_grad or backend == "eager":
        return gm, "replayed through the dispatcher"
    return compile_one(gm), ("compiled by pyaten._inductor" if backend == "pyaten"
                             else "replayed through the dispatcher")


def _forward_only(gm: GraphModule, cap: Capture) -> GraphModule:
    """The joint graph without its backward (for a backend that does not split)."""
    n_outputs = len(gm.graph.nodes[-1].args[0]) - sum(g is not None for g in cap.joint.grads)
    forward, _, _ = partition_joint(gm.graph, cap.joint, n_outputs)
    graph = forward.graph
    out = graph.nodes[-1]
    out.args = (out.args[0][:n_outputs],)
    eliminate_dead_code(graph)
    return GraphModule({}, graph, class_name=type(gm).__name__)
