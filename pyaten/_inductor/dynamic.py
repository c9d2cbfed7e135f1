"""A symbolic graph (dynamic shapes) compiled once per set of sizes.

The fused loops take their sizes as arguments (`kernel(n0, n1, ...)`,
pyaten/_inductor/codegen.py), so the loops of a graph are the same code for every size; the
runner's buffer plan and the direct kernel calls are built for one shape. A
`DynamicCompiledGraph` therefore keeps one `CompiledGraph` per input shapes: each is built
from `specialize_graph` (the symbolic graph with the call's sizes filled in), and its loops
come from the table of loaded kernels, so a new batch size costs a graph walk, not a
Numba compile and not a new capture.
"""

from __future__ import annotations

from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.fx.experimental.symbolic_shapes import specialize_graph, symbol_values
from pyaten.fx.graph_module import GraphModule

from .runner import CompiledGraph

__all__ = ["DynamicCompiledGraph", "is_symbolic_graph"]


def is_symbolic_graph(gm: GraphModule) -> bool:
    """Whether some node's value has a symbolic size."""
    from pyaten.core.symbolic import SymInt

    for node in gm.graph.nodes:
        val = node.meta.get("val")
        if isinstance(val, SymInt) or (isinstance(val, Tensor) and any(
                isinstance(s, SymInt) for s in val._sizes)):
            return True
    return False


class DynamicCompiledGraph:
    """Call it with the graph's inputs; compiles the graph for their sizes on first sight."""

    def __init__(self, gm: GraphModule, limit: int = 64) -> None:
        self.graph_module = gm
        self.limit = limit
        self.compiled: dict[tuple, CompiledGraph] = {}
        self.last: CompiledGraph | None = None

    def _for(self, inputs: tuple) -> CompiledGraph:
        key = tuple(tuple(v.shape) if isinstance(v, Tensor) else v for v in inputs)
        found = self.compiled.get(key)
        if found is None:
            values = symbol_values(self.graph_module, inputs)
            if isinstance(values, str):
                raise RuntimeError(f"compiled graph called with inputs it was not traced "
                                   f"for: {values}")
            found = CompiledGraph(specialize_graph(self.graph_module, values))
            if len(self.compiled) >= self.limit:
                self.compiled.pop(next(iter(self.compiled)))
            self.compiled[key] = found
        self.last = found
        return found

    def __call__(self, *inputs: Any) -> Any:
        return self._for(inputs)(*inputs)

    @property
    def sources(self) -> list[str]:
        return self.last.sources if self.last is not None else []

    def source(self) -> str:
        return self.last.source() if self.last is not None else ""

    def to_dot(self) -> str:
        return self.last.to_dot() if self.last is not None else self.graph_module.to_dot()
