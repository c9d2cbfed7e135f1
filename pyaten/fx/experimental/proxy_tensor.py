"""`make_fx`: capture the ATen operator calls of a function into a `GraphModule`.

The function runs once under a `TorchDispatchMode` (docs/python-dispatch.md), so capture
sees what the Python key sees: every `OpOverload` call below autograd, composite operators
already decomposed. Each tensor the function computes is mapped to the node that made it;
tensors the function did not receive or compute (closed-over weights) become `get_attr`
constants (`_tensor_constant0`). Every node's `meta["val"]` holds its value: the real tensor
(`tracing_mode="real"`) or a Meta tensor with its shape, dtype and strides
(`tracing_mode="fake"`: the inputs are replaced by Meta tensors, so only Meta kernels run).
With `tracing_mode="symbolic"` the Meta inputs have symbolic sizes (`SymInt`s of a
`ShapeEnv`, pyaten/fx/experimental/symbolic_shapes.py): where the program passes a size it
read (`x.view(x.shape[0], -1)`) the graph reads it from the tensor at run time
(`aten.sym_size.int(x_1, 0)`, recorded where first needed, as PyTorch's), sizes computed
from sizes become `operator` nodes, and the decisions taken on sizes are the ShapeEnv's
guards (`gm.shape_env`).
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from typing import Any

from pyaten.core.device import device
from pyaten.core.symbolic import SymInt, sym_max, sym_min
from pyaten.core.tensor import Tensor
from pyaten.fx.experimental.symbolic_shapes import ShapeEnv, fake_tensor
from pyaten.fx.graph import Graph
from pyaten.fx.graph_module import GraphModule
from pyaten.fx.node import Node
from pyaten.native.ops_handles import aten
from pyaten.utils import _pytree
from pyaten.utils._python_dispatch import TorchDispatchMode

__all__ = ["make_fx"]

_MODES = ("real", "fake", "symbolic")
_LIFT_FRESH = aten.lift_fresh.default
_LIFT_FRESH_COPY = aten.lift_fresh_copy.default
_SYM_SIZE = aten.sym_size.int
_META = device("meta")
_OPAQUE_TARGETS = {"//": operator.floordiv, "%": operator.mod, "max": sym_max, "min": sym_min}


class _CaptureMode(TorchDispatchMode):
    """Records each operator call as a `call_function` node."""

    def __init__(self, graph: Graph, decompositions: dict | None = None) -> None:
        super().__init__()
        self.graph = graph
        self.decompositions = decompositions or {}
        self.nodes: dict[int, tuple[Tensor, Node]] = {}  # id(tensor) -> (tensor, its node)
        self.constants: dict[str, Tensor] = {}
        # symbolic sizes: expression key -> its node, or where to read it (tensor node, dim)
        self.sym_nodes: dict[tuple, Node] = {}
        self.sym_sources: dict[tuple, tuple[Node, int]] = {}

    def node_of(self, value: Any) -> Any:
        if isinstance(value, SymInt):
            return self.sym_node_of(value)
        if not isinstance(value, Tensor):
            return value
        symbolic = value.__dict__.get("_symbolic_value") if value._wrapped_number else None
        if symbolic is not None:  # a size passed where a Tensor goes: the size's node
            return self.sym_node_of(symbolic)
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
            for dim, size in enumerate(value._sizes):
                if isinstance(size, SymInt):  # the first tensor seen with a size reads it
                    self.sym_sources.setdefault(size.node.expr.key(), (node, dim))

    def sym_node_of(self, value: SymInt) -> Node:
        """The node computing a symbolic size: `sym_size.int` of the first tensor that had
        it, else `operator` nodes over such reads (a polynomial, or `//`, `%` of them)."""
        key = value.node.expr.key()
        node = self.sym_nodes.get(key)
        if node is not None:
            return node
        source = self.sym_sources.get(key)
        if source is not None:
            node = self.graph.create_node("call_function", _SYM_SIZE, source,
                                          name="sym_size_int")
        else:
            node = self._rebuild(value)
        node.meta["val"] = value
        self.sym_nodes[key] = node
        return node

    def _rebuild(self, value: SymInt) -> Node:
        poly = value.node.expr
        env = value.node.shape_env
        total: Any = None
        for monomial, coefficient in sorted(poly.terms.items(), key=lambda mc: mc[0]):
            term: Any = None
            for atom in monomial:
                factor = self._atom_node(atom, poly.atoms[atom], env)
                term = factor if term is None else self.graph.call_function(
                    operator.mul, (term, factor))
            if term is None:
                term = coefficient
            elif coefficient != 1:
                term = self.graph.call_function(operator.mul, (term, coefficient))
            total = term if total is None else self.graph.call_function(
                operator.add, (total, term))
        if not isinstance(total, Node):
            raise RuntimeError(f"make_fx: cannot compute the symbolic size {value} in the graph")
        return total

    def _atom_node(self, atom: str, kind: str, env: Any) -> Node:
        key = (((atom,), 1),)
        if key in self.sym_nodes:
            return self.sym_nodes[key]
        if key in self.sym_sources:
            node = self.graph.create_node("call_function", _SYM_SIZE, self.sym_sources[key],
                                          name="sym_size_int")
            self.sym_nodes[key] = node
            return node
        parts = getattr(env, "opaque", {}).get(atom) if kind == "opaque" else None
        if parts is None:
            raise RuntimeError(f"make_fx: no tensor of the trace has the size {atom}")
        op, a, b = parts
        args = tuple(self.node_of(v) for v in (a, b))
        node = self.graph.call_function(_OPAQUE_TARGETS[op], args)
        self.sym_nodes[key] = node
        return node

    def _fake_factory(self, func: Any, args: tuple, kwargs: dict) -> dict:
        """A factory given symbolic sizes (`pyaten.zeros(x.shape[0])`) runs on the Meta
        device, as FakeTensorMode's do; the graph keeps the device asked for."""
        flat = _pytree.tree_leaves((args, kwargs))
        if not any(isinstance(v, SymInt) for v in flat) or any(isinstance(v, Tensor)
                                                               for v in flat):
            return kwargs
        schema = getattr(func, "_schema", None)
        if schema is None or not any(a.name == "device" for a in schema.arguments):
            return kwargs
        return {**kwargs, "device": _META}

    def __torch_dispatch__(self, func: Any, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if func is _LIFT_FRESH:  # a fresh tensor becomes a copy in the graph, as PyTorch's
            func = _LIFT_FRESH_COPY
        decomposition = self.decompositions.get(func)
        if decomposition is not None:
            with self:  # the decomposition's own calls are captured (and decomposed) in turn
                return decomposition(*args, **kwargs)
        out = func(*args, **self._fake_factory(func, args, kwargs))
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
        raise ValueError(f"Unexpected tracing type: {tracing_mode}")

    def trace(*args: Any) -> GraphModule:
        graph = Graph()
        mode = _CaptureMode(graph, decomposition_table)
        names = _parameter_names(fn, len(args))
        shape_env = None
        if tracing_mode == "symbolic":
            shape_env = ShapeEnv()
            flat_args, args_spec = _pytree.tree_flatten(args)
            inputs = _pytree.tree_unflatten(
                [fake_tensor(v, shape_env, f"L['{names[i] if i < len(names) else i}']")
                 if isinstance(v, Tensor) else v for i, v in enumerate(flat_args)], args_spec)
        else:
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
        gm = GraphModule(mode.constants, graph, class_name=getattr(fn, "__name__", "fn"))
        if shape_env is not None:
            gm.shape_env = shape_env
        return gm

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
