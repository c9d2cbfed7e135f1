"""pyaten.fx: graphs of operator calls (PyTorch's `torch.fx`): `Graph`, `Node`, `GraphModule`,
and `pyaten.fx.experimental.proxy_tensor.make_fx` to capture a function's ATen calls through
the Python key (docs/fx.md)."""

from pyaten.fx._symbolic_trace import Tracer, symbolic_trace
from pyaten.fx.graph import Graph, PythonCode
from pyaten.fx.graph_module import GraphModule
from pyaten.fx.node import Node, map_arg
from pyaten.fx.proxy import Proxy, TraceError

__all__ = ["Graph", "GraphModule", "Node", "Proxy", "PythonCode", "TraceError", "Tracer",
           "map_arg", "symbolic_trace"]
