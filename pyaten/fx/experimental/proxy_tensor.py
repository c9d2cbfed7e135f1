"""`make_fx`: capture the ATen operator calls of a function into a `GraphModule`.

The function runs once under a `TorchDispatchMode` (docs/python-dispatch.md), so capture
sees what the Python key sees: every `OpOverload` call below autograd, composite operators
already decomposed. Each tensor the function computes is mapped to the node that made it;
tensors the function did not receive or compute (closed-over weights) become `get_attr`
constants (`_tensor_constant0`). Every node's `meta["val"]` holds its value: the real tensor
(`tracing_mode="real"`) or a Meta tensor with its shape, dtype and strides
(`tracing_mode="fake"`: the inputs are replaced by Meta tensors, so only Meta kernels run).
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.fx.graph import Graph
from pyaten.fx.graph_module import GraphModule
from pyaten.fx.node import Node
from pyaten.native.ops_handles import aten
from pyaten.utils import _pytree
from pyaten.utils._python_dispatch import TorchDispatchMode

__all__ = ["make_fx"]

_MODES = ("real", "fake")
_LIFT_FRESH = aten.lift_fresh.default
_LIFT_FRESH_COPY = aten.lift_fresh_copy.default


class _CaptureMode(TorchDispatchMode):
    """Records each operator call as a `call_function` node."""

    def __init__(self, graph: Graph, decompositions: dict | None = None) -> None:
        super().__init__()
        self.graph = graph
        self.decompositions = decompositions or {}
        self.nodes: dict[int, tuple[Tensor, Node]] = {}  # id(tensor) -> (tensor, its node)
        self.constants: dict[str, Tensor] = {}

    def node_of(self, value: Any) -> Any:
        if not isinstance(value, Tensor):
            return value
        known = self.nodes.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        name = f"_tensor_constant{len(self.constants)}"
        self.constants[name] = value
        node = self.graph.get_attr(name)
        self.track(value, node)
        return node

    def track(self, value: Any, node: Node) -> None:
        if isinstance(value, Tensor):
            self.nodes[id(value)] = (value, node)
            node.meta["val"] = value
            node.meta["tensor_meta"] = _tensor_meta(value)

    def __torch_dispatch__(self, func: Any, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if func is _LIFT_FRESH:  # a fresh tensor becomes a copy in the graph, as PyTorch's
            func = _LIFT_FRESH_COPY
        decomposition = self.decompositions.get(func)
        if decomposition is not None:
            with self:  # the decomposition's own calls are captured (and decomposed) in turn
                return decomposition(*args, **kwargs)
        out = func(*args, **kwargs)
        node = self.graph.call_function(
            func, _pytree.tree_map(self.node_of, args), _pytree.tree_map(self.node_of, kwargs)
        )
        if isinstance(out, Tensor):
            self.track(out, node)
        elif isinstance(out, (tuple, list)):
            node.meta["val"] = out
            for i, item in enumerate(out):
                if isinstance(item, Tensor):
                    getter = self.graph.call_function(operator.getitem, (node, i))
                    self.track(item, getter)
        return out


def _tensor_meta(t: Tensor) -> dict[str, Any]:
    return {"shape": tuple(t.shape), "dtype": t.dtype, "stride": t.stride(),
            "requires_grad": t.requires_grad}


def _as_meta(value: Any) -> Any:
    if isinstance(value, Tensor):
        fake = value.detach().to("meta")
        return fake.requires_grad_(True) if value.requires_grad else fake
    return value


def make_fx(fn: Callable[..., Any], tracing_mode: str = "real",
            decomposition_table: dict | None = None, **_: Any) -> Callable[..., GraphModule]:
    """`make_fx(fn)(*example_inputs)`: run `fn` once on the inputs and return a GraphModule of
    the ATen calls it made (placeholders named after `fn`'s parameters, `x_1`...). An operator
    in `decomposition_table` (pyaten._decomp) is recorded as the calls of its decomposition."""
    if tracing_mode not in _MODES:
        raise ValueError(
            f"Unexpected tracing type: {tracing_mode}; pyaten supports {', '.join(_MODES)} "
            "(symbolic shapes are not built)"
        )

    def trace(*args: Any) -> GraphModule:
        graph = Graph()
        mode = _CaptureMode(graph, decomposition_table)
        names = _parameter_names(fn, len(args))
        inputs = _pytree.tree_map(_as_meta, args) if tracing_mode == "fake" else args
        flat, spec = _pytree.tree_flatten(inputs)
        for i, value in enumerate(flat):
            node = graph.placeholder(f"{names[i] if i < len(names) else 'arg' + str(i)}_1")
            if isinstance(value, Tensor):
                mode.track(value, node)
            else:
                node.meta["val"] = value
        rebuilt = _pytree.tree_unflatten(flat, spec)
        with mode:
            result = fn(*rebuilt)
        graph.output(_pytree.tree_map(mode.node_of, result))
        graph.lint()
        return GraphModule(mode.constants, graph, class_name=getattr(fn, "__name__", "fn"))

    return trace


def _parameter_names(fn: Callable[..., Any], count: int) -> list[str]:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return [f"arg{i}" for i in range(count)]
    names = []
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            names += [f"{p.name}{i}" for i in range(count - len(names))]
            break
        names.append(p.name)
    return names
