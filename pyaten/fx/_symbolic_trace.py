"""`symbolic_trace`: a module's `forward` run on proxies, recorded at the public API.

Unlike `make_fx` (ATen calls under the Python key), symbolic tracing records what the
`forward` wrote: `self.lin(x)` stays one `call_module` node for a leaf module (the `nn`
layers), `pyaten.cat(...)` and `F.relu(...)` `call_function` nodes, `x.view(...)` a
`call_method` node, a parameter read `self.w` a `get_attr` node. Modules that are not leaves
(Sequential, user modules) are traced through. While tracing, `Module.__call__` and
`Module.__getattr__` are patched so that these calls and reads reach the tracer, as in
PyTorch's `Tracer`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.fx.graph import Graph
from pyaten.fx.graph_module import GraphModule
from pyaten.fx.node import Node
from pyaten.fx.proxy import Proxy
from pyaten.nn.modules.module import Module
from pyaten.nn.parameter import Parameter

__all__ = ["Tracer", "symbolic_trace"]

_CONTAINERS = ("Sequential", "ModuleList", "ModuleDict")


class Tracer:
    """Records a module's or function's forward into a Graph (PyTorch's `torch.fx.Tracer`)."""

    def __init__(self) -> None:
        self.graph = Graph()
        self.root: Module | None = None
        self.constants: dict[str, Tensor] = {}

    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """`nn` layers are leaves (one call_module node); containers and user modules are
        traced through."""
        module = type(m).__module__
        return module.startswith("pyaten.nn") and type(m).__name__ not in _CONTAINERS

    # -- nodes ----------------------------------------------------------------------------

    def create_arg(self, value: Any) -> Any:
        if isinstance(value, Proxy):
            return value.node
        if isinstance(value, tuple):
            return tuple(self.create_arg(v) for v in value)
        if isinstance(value, list):
            return [self.create_arg(v) for v in value]
        if isinstance(value, dict):
            return {k: self.create_arg(v) for k, v in value.items()}
        if isinstance(value, slice):
            return slice(*(self.create_arg(v) for v in (value.start, value.stop, value.step)))
        if isinstance(value, Tensor):
            return self._tensor_attr(value)
        return value

    def _tensor_attr(self, value: Tensor) -> Node:
        if self.root is not None:
            for name, p in self.root.named_parameters():
                if p is value:
                    return self.graph.get_attr(name)
            for name, b in self.root.named_buffers():
                if b is value:
                    return self.graph.get_attr(name)
        name = f"_tensor_constant{len(self.constants)}"
        self.constants[name] = value
        return self.graph.get_attr(name)

    def create_proxy(self, kind: str, target: Any, args: tuple, kwargs: dict) -> Proxy:
        node = self.graph.create_node(kind, target, self.create_arg(tuple(args)),
                                      self.create_arg(dict(kwargs)))
        return Proxy(node, self)

    # -- tracing --------------------------------------------------------------------------

    def trace(self, root: Module | Callable[..., Any]) -> Graph:
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            bound_self: tuple = (root,)
        else:
            fn = root
            bound_self = ()
        params = list(inspect.signature(fn).parameters.values())[len(bound_self):]
        proxies = []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise NotImplementedError("symbolic_trace: *args and **kwargs in forward are "
                                          "not supported")
            default = () if p.default is inspect.Parameter.empty else (p.default,)
            node = self.graph.create_node("placeholder", p.name, default, name=p.name)
            proxies.append(Proxy(node, self))
        paths = {id(m): name for name, m in (root.named_modules() if self.root else ())}
        tracer = self

        original_call, original_getattr = Module.__call__, Module.__getattr__

        def module_call(module: Module, *args: Any, **kwargs: Any) -> Any:
            path = paths.get(id(module))
            if path is not None and path and tracer.is_leaf_module(module, path):
                return tracer.create_proxy("call_module", path, args, kwargs)
            return original_call(module, *args, **kwargs)

        def module_getattr(module: Module, name: str) -> Any:
            value = original_getattr(module, name)
            if isinstance(value, Parameter) and tracer.root is not None:
                prefix = paths.get(id(module), "")
                qualified = f"{prefix}.{name}" if prefix else name
                return Proxy(tracer.graph.get_attr(qualified), tracer)
            return value

        Module.__call__, Module.__getattr__ = module_call, module_getattr
        try:
            result = fn(*bound_self, *proxies)
        finally:
            Module.__call__, Module.__getattr__ = original_call, original_getattr
        self.graph.output(self.create_arg(result))
        return self.graph


def symbolic_trace(root: Module | Callable[..., Any]) -> GraphModule:
    """Trace `root` (a Module or a function) with proxies into a GraphModule whose code reads
    as the forward did (`docs/fx.md`)."""
    tracer = Tracer()
    graph = tracer.trace(root)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    module = root if isinstance(root, Module) else Module()
    gm = GraphModule(module, graph, class_name=name) if not tracer.constants else \
        GraphModule({**_attrs(module, graph), **tracer.constants}, graph, class_name=name)
    return gm


def _attrs(module: Module, graph: Graph) -> dict[str, Any]:
    found = {}
    for node in graph.nodes:
        if node.op in ("get_attr", "call_module") and not node.target.startswith("_tensor_"):
            value: Any = module
            for part in node.target.split("."):
                value = getattr(value, part)
            found[node.target] = value
    return found
