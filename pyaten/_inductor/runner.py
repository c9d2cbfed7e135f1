"""Running a graph without the call path: fused loops, direct kernels, reused buffers.

Note: what a compiled graph skips
    The eager call path binds arguments, computes a dispatch key set and looks up a kernel
    for every operator (docs/explain.md shows it). A compiled graph did all of that at
    build time: each node that is not in a fused loop keeps the CPU kernel its dispatch
    table selects (`OperatorEntry._target`, the same function eager dispatch would reach)
    and its arguments already bound to the schema, so running it is one Python call. The
    graph runs below autograd; the backends call it only where no input requires grad, or
    inside the autograd Function of the aot split.

Buffers: a fused loop writes into arrays the runner allocates. When such an intermediate's
last reader has run, its array goes back to a pool and the next loop output of the same
shape and dtype takes it, so a chain of groups touches a few buffers however long it is.
An array is pooled only when nothing can alias it: not an output of the graph, and not read
by a view operator.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from pyaten.core.creation import share_array
from pyaten.dispatch.keys import DispatchKey, DispatchKeySet
from pyaten.fx.graph_module import GraphModule
from pyaten.fx.node import Node, map_arg
from pyaten.native.runtime import wrapped_number

from .codegen import group_source, load_kernel, numba_available
from .scheduler import FusedGroup, fuse

__all__ = ["CompiledGraph", "compile_graph"]

_CPU = DispatchKeySet(DispatchKey.CPU).raw


def _direct_kernel(node: Node) -> tuple[Callable[..., Any], tuple, dict]:
    """The node's kernel and its arguments, bound once (Note: what a compiled graph skips);
    the dispatcher itself for what cannot be bound ahead."""
    target = node.target
    entry = getattr(target, "_entry", None)
    if entry is None or not getattr(target, "_raw_defaults_ok", False):
        return target, node.args, dict(node.kwargs)
    try:
        args = list(entry.normalize(node.args, dict(node.kwargs)))
        fn = entry._target(_CPU, True)
    except Exception:  # noqa: BLE001 - unusual binding: keep the dispatcher
        return target, node.args, dict(node.kwargs)
    for i, argument in enumerate(entry.schema.arguments):
        # a number where the schema takes a Tensor: the wrapped-number tensor binding makes
        if str(argument.type).startswith("Tensor") and isinstance(args[i], (bool, int, float,
                                                                           complex)):
            args[i] = wrapped_number(args[i])
    return fn, tuple(args), {}


def _aliasing_reader(node: Node) -> bool:
    target = node.target
    name = getattr(getattr(target, "overloadpacket", None), "__name__", "")
    return node.op != "call_function" or "view" in name or bool(getattr(target, "is_view",
                                                                        False))


class CompiledGraph:
    """A graph compiled by pyaten._inductor: call it with the graph's inputs."""

    def __init__(self, gm: GraphModule) -> None:
        self.graph_module = gm
        graph = gm.graph
        self.groups: list[FusedGroup] = fuse(graph) if numba_available() else []
        self.sources = [group_source(g) for g in self.groups]
        self.kernels = [load_kernel(s) for s in self.sources]
        nodes = graph.nodes
        slot = {n: i for i, n in enumerate(nodes)}
        self.n_slots = len(nodes)
        in_group = {m: g for g in self.groups for m in g.members}
        output = nodes[-1]
        returned = set(output.all_input_nodes)
        last_use: dict[Node, int] = {}
        steps: list[tuple] = []
        self.placeholders = [slot[n] for n in nodes if n.op == "placeholder"]
        group_at = {g.index: (i, g) for i, g in enumerate(self.groups)}
        for index, node in enumerate(nodes):
            if node.op in ("placeholder", "output"):
                continue
            if node in in_group:
                if index not in group_at:
                    continue
                k, group = group_at[index]
                steps.append(("fused", self._fused_step(k, group, slot, returned)))
                readers: list[Node] = group.inputs
            elif node.op == "call_function" and node.target is operator.getitem:
                steps.append(("getitem", (slot[node], slot[node.args[0]], node.args[1])))
                readers = [node.args[0]]
            else:
                fn, args, kwargs = _direct_kernel(node)
                args = map_arg(args, lambda n: _Slot(slot[n]))
                kwargs = map_arg(kwargs, lambda n: _Slot(slot[n]))
                steps.append(("call", (slot[node], fn, args, kwargs)))
                readers = node.all_input_nodes
            for reader in readers:
                last_use[reader] = len(steps) - 1
        poolable = set()
        for group in self.groups:
            for out in group.outputs:
                if out not in returned and not any(_aliasing_reader(u) and u not in in_group
                                                   for u in out.users):
                    poolable.add(slot[out])
        release: dict[int, list[int]] = {}
        for node, step in last_use.items():
            if node.op != "placeholder" and node not in returned:
                release.setdefault(step, []).append(slot[node])
        self.steps = [(kind, payload, [(s, s in poolable) for s in release.get(i, ())])
                      for i, (kind, payload) in enumerate(steps)]
        self.outputs = map_arg(output.args[0], lambda n: _Slot(slot[n]))
        self.pool: dict[tuple, list[tuple]] = {}
        self.allocations = 0  # loop outputs allocated (not taken from the pool)

    def _fused_step(self, k: int, group: FusedGroup, slot: dict[Node, int],
                    returned: set[Node]) -> tuple:
        shape = group.shape
        inner = shape[-1] if shape else 1
        outer = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        dtype = group.dtype
        np_dtype = np.dtype(dtype.name)
        return (self.kernels[k], [slot[n] for n in group.inputs],
                [slot[n] for n in group.outputs], shape, (outer, inner), dtype, np_dtype)

    def __call__(self, *inputs: Any) -> Any:
        env: list[Any] = [None] * self.n_slots
        for position, value in zip(self.placeholders, inputs):
            env[position] = value
        pool = self.pool
        for kind, payload, releases in self.steps:
            if kind == "call":
                target, fn, args, kwargs = payload
                env[target] = fn(*_fill(args, env), **_fill(kwargs, env))
            elif kind == "fused":
                kernel, ins, outs, shape, flat, dtype, np_dtype = payload
                arrays = []
                for s in ins:
                    array = env[s]._numpy()
                    if array.shape != shape or not array.flags.c_contiguous:
                        array = np.broadcast_to(array, shape)
                    arrays.append(array.reshape(flat))
                for s in outs:
                    free = pool.get((shape, np_dtype))
                    if free:
                        tensor, array = free.pop()
                    else:
                        array = np.empty(shape, np_dtype)
                        tensor = share_array(array, dtype)
                        self.allocations += 1
                    env[s] = tensor
                    arrays.append(array.reshape(flat))
                kernel(*arrays)
            else:
                target, source, index = payload
                env[target] = env[source][index]
            for s, pooled in releases:
                if pooled:
                    tensor = env[s]
                    pool.setdefault((tuple(tensor.shape), np.dtype(tensor.dtype.name)),
                                    []).append((tensor, tensor._numpy()))
                env[s] = None
        return _fill(self.outputs, env)

    def to_dot(self) -> str:
        """The graph as Graphviz DOT with each fused loop's nodes framed as one cluster."""
        return self.graph_module.to_dot([g.members for g in self.groups])

    def source(self) -> str:
        """The fused loops' source, each after a comment naming its nodes."""
        return "\n\n".join(self.sources)


class _Slot:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _fill(value: Any, env: list[Any]) -> Any:
    if isinstance(value, _Slot):
        return env[value.index]
    if isinstance(value, tuple):
        return tuple(_fill(v, env) for v in value)
    if isinstance(value, list):
        return [_fill(v, env) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, env) for k, v in value.items()}
    return value


def compile_graph(gm: GraphModule) -> CompiledGraph:
    """Compile a captured graph (docs/compile.md): pointwise chains into Numba loops when
    Numba is installed, every other node its kernel called directly."""
    return CompiledGraph(gm)
