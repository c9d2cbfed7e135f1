"""`GraphModule`: an `nn.Module` whose `forward` is the code of a `Graph`.

The graph's `get_attr` nodes read attributes of the module (captured constants and
parameters); `recompile()` turns the graph into source (`code`) and that source into
`forward`, so a changed graph runs after `recompile()`, and the module runs on new inputs.
"""

from __future__ import annotations

import linecache
from typing import Any

from pyaten.fx.graph import Graph
from pyaten.nn.modules.module import Module

__all__ = ["GraphModule"]

_COUNTER = [0]


class GraphModule(Module):
    """A Module running `graph`; `root` gives the attributes `get_attr` nodes read (a Module
    or a dict of name -> tensor/module)."""

    def __init__(self, root: Module | dict[str, Any], graph: Graph,
                 class_name: str = "GraphModule") -> None:
        super().__init__()
        self.__class__ = type(class_name, (GraphModule,), {})
        for node in graph.nodes:
            if node.op not in ("get_attr", "call_module"):
                continue
            value = root[node.target] if isinstance(root, dict) else _fetch(root, node.target)
            _install(self, node.target, value)
        self.graph = graph

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, graph: Graph) -> None:
        object.__setattr__(self, "_graph", graph)
        self.recompile()

    @property
    def code(self) -> str:
        return self._code

    def recompile(self) -> str:
        """Generate `code` from the graph and compile it into this class's `forward`."""
        python = self._graph.python_code("self")
        _COUNTER[0] += 1
        filename = f"<eval_with_key>.{_COUNTER[0]}"
        linecache.cache[filename] = (len(python.src), None, python.src.splitlines(True), filename)
        namespace = dict(python.globals)
        exec(compile(python.src, filename, "exec"), namespace)  # noqa: S102 - generated code
        object.__setattr__(self, "_code", "\n\n\n" + python.src + "    ")  # PyTorch's layout
        type(self).forward = namespace["forward"]
        return self._code

    def print_readable(self, print_output: bool = True) -> str:
        """The module as a class with an annotated `forward` (shapes and dtypes from each
        node's `val`), as PyTorch prints it."""
        python = self._graph.python_code("self", annotate=True)
        body = "".join(f"    {line}\n" for line in python.src.splitlines())
        text = f"class {type(self).__name__}(pyaten.nn.Module):\n{body}"
        if print_output:
            print(text)
        return text

    def to_dot(self, clusters: list | None = None) -> str:
        """The graph as Graphviz DOT: a box per node (its name, what it calls, and the shape
        and dtype of its value when capture recorded one), an edge per input; each list of
        nodes in `clusters` (a compiled graph's fused groups) drawn as one framed cluster."""
        return graph_to_dot(self._graph, type(self).__name__, clusters)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def graph_to_dot(graph: Graph, name: str = "GraphModule", clusters: list | None = None) -> str:
    """Graphviz DOT text for `graph` (see `GraphModule.to_dot`)."""
    from pyaten.fx.node import qualified_name

    lines = [f'digraph "{name}" {{', "  rankdir=TB;",
             '  node [shape=box, style=rounded, fontname="monospace", fontsize=10];']
    for i, members in enumerate(clusters or ()):
        lines.append(f'  subgraph cluster_fused_{i} {{')
        lines.append(f'    label="fused loop {i}"; style=dashed; color=blue;')
        lines += [f'    "{member.name}";' for member in members]
        lines.append("  }")
    for node in graph.nodes:
        what = node.op if node.op in ("placeholder", "output") else (
            node.target if node.op in ("call_method", "call_module", "get_attr")
            else qualified_name(node.target).replace("pyaten.ops.", ""))
        label = [node.name, str(what)]
        val = node.meta.get("val")
        if hasattr(val, "shape") and hasattr(val, "dtype"):
            label.append(f"{val.dtype.name}[{', '.join(str(s) for s in val.shape)}]")
        text = "\\n".join(part.replace('"', '\\"') for part in label)
        shape = ', shape=ellipse' if node.op in ("placeholder", "output") else ""
        lines.append(f'  "{node.name}" [label="{text}"{shape}];')
        for source in node.all_input_nodes:
            lines.append(f'  "{source.name}" -> "{node.name}";')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _fetch(root: Module, qualified: str) -> Any:
    value: Any = root
    for part in qualified.split("."):
        value = getattr(value, part)
    return value


def _install(module: Module, qualified: str, value: Any) -> None:
    *path, last = qualified.split(".")
    owner = module
    for part in path:
        child = getattr(owner, part, None)
        if child is None:
            child = Module()
            setattr(owner, part, child)
        owner = child
    from pyaten.core.tensor import Tensor
    from pyaten.nn.parameter import Parameter

    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        owner.register_buffer(last, value)
    else:
        setattr(owner, last, value)
