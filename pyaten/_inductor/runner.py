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

import ctypes
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from pyaten.core.broadcast import new_row_major
from pyaten.core.device import CPU
from pyaten.core.tensor import Tensor
from pyaten.dispatch.keys import DispatchKey, DispatchKeySet
from pyaten.fx.graph_module import GraphModule
from pyaten.fx.node import Node, map_arg
from pyaten.native.runtime import wrapped_number

from . import cloops, cross_entropy
from .codegen import cache_dir, group_source, load_kernel, numba_available
from .scheduler import FusedGroup, _contiguous, fuse

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
        if not str(argument.type).startswith("Tensor"):
            continue
        # a number where the schema takes a Tensor: the wrapped-number tensor binding makes
        if isinstance(args[i], (bool, int, float, complex)):
            args[i] = wrapped_number(args[i])
        elif isinstance(args[i], Node) and not isinstance(args[i].meta.get("val"), Tensor):
            # a graph input that is a number (a symbolic int argument): the dispatcher wraps it
            return target, node.args, dict(node.kwargs)
    return fn, tuple(args), {}


def loops_available() -> bool:
    """Whether fused loops can be built: by the C compiler, else by Numba."""
    return cloops.available() or numba_available()


def _build_loops(groups: list[FusedGroup], pools: list[tuple],
                 extra: list[str]) -> tuple[list[Any], list[str], str, Any]:
    """The groups' loop callables, their source, what built them and the C library (which
    also holds the max-pool kernels `pools` names and the `extra` C functions): one C
    library per graph where a compiler is found (pyaten/_inductor/cloops.py, Note: why C
    beside Numba), else Numba loops and no library."""
    if cloops.available():
        try:
            kernels, _, library = cloops.load_loops(groups, cache_dir() / "cloops", pools,
                                                    extra)
            return kernels, [cloops.group_c_source(g, f"k{i}")
                             for i, g in enumerate(groups)] + list(extra), "c", library
        except (NotImplementedError, RuntimeError, OSError):
            if not numba_available():  # nothing can build the loops: run unfused
                return [], [], "none", None
    sources = [group_source(g) for g in groups]
    return [load_kernel(s) for s in sources], sources, "numba", None


_POOLS = ("max_pool2d_with_indices.default", "max_pool2d_with_indices_backward.default")


def _pair(value: Any) -> tuple[int, int] | None:
    if isinstance(value, int):
        return (value, value)
    if isinstance(value, (list, tuple)) and len(value) in (1, 2) and \
            all(isinstance(v, int) for v in value):
        return (value[0], value[-1])
    return None


def _dense(node: Any, dtype: Any = None) -> Any:
    """The tensor_meta of a contiguous float32/float64 4-d node (of `dtype` when given)."""
    meta = node.meta.get("tensor_meta") if isinstance(node, Node) else None
    if meta is None or len(meta["shape"]) != 4 or \
            not _contiguous(tuple(meta["shape"]), tuple(meta["stride"])):
        return None
    if (meta["dtype"].name not in ("float32", "float64")) if dtype is None else \
            meta["dtype"] != dtype:
        return None
    return meta


def _pool_inputs(node: Node) -> list[Node]:
    if node.target.__name__ == _POOLS[0]:
        return [node.args[0]]
    args = list(node.target._entry.normalize(node.args, dict(node.kwargs)))
    return [args[0], args[7]]


def _pool_spec(node: Node) -> tuple | None:
    """(kind, dtype, kernel, stride, padding) and the shapes when a 2-d max pool (or its
    backward) can run the C kernel written for its window (cloops.py): contiguous NCHW
    float planes, dilation 1, no ceil_mode."""
    if node.op != "call_function" or getattr(node.target, "namespace", None) != "aten" or \
            node.target.__name__ not in _POOLS:
        return None
    forward = node.target.__name__ == _POOLS[0]
    try:
        args = list(node.target._entry.normalize(node.args, dict(node.kwargs)))
    except Exception:  # noqa: BLE001 - unusual arguments: the operator's own kernel
        return None
    first = 0 if forward else 1
    meta = _dense(args[first])
    kernel, stride, padding, dilation = (_pair(a) for a in args[first + 1:first + 5])
    stride = stride or kernel
    if meta is None or kernel is None or padding is None or dilation != (1, 1) or \
            args[first + 5] or stride is None:
        return None
    if forward:
        values = node.meta.get("val")
        if not isinstance(values, tuple) or len(values) != 2:
            return None
        out_shape = tuple(values[0].shape)
    else:
        grad = _dense(args[0], meta["dtype"])
        index = args[7].meta.get("tensor_meta") if isinstance(args[7], Node) else None
        if grad is None or index is None or index["dtype"].name != "int64" or \
                not _contiguous(tuple(index["shape"]), tuple(index["stride"])):
            return None
        out_shape = tuple(grad["shape"])
    return (("pool" if forward else "pool_backward", meta["dtype"].name, kernel, stride,
             padding), tuple(meta["shape"]), out_shape, meta["dtype"])


def _pool_specs(nodes: list[Node]) -> list[tuple[Node, tuple]]:
    """The max-pool nodes that the C kernels written for their window take, with their
    spec (`_pool_spec`)."""
    return [(node, spec) for node in nodes for spec in [_pool_spec(node)] if spec is not None]


def _pool_caller(fn: Any, spec: tuple) -> Callable[..., Any]:
    """The call of a max-pool kernel's `_py` twin, which takes the arrays themselves
    (cloops.py, Note: arrays passed as objects)."""
    (kind, _, _, _, _), in_shape, out_shape, dtype = spec
    n, c, height, width = in_shape
    out_h, out_w = out_shape[2], out_shape[3]
    planes = n * c
    c_int, c_obj = ctypes.c_int64, ctypes.py_object
    if kind == "pool":
        fn.argtypes = [c_int] * 5 + [c_obj] * 3
        fn.restype = None
        from pyaten.core.dtypes import int64

        def pool(x: Any) -> tuple:
            array = np.ascontiguousarray(x._numpy())
            out, index = new_row_major(out_shape, dtype, CPU), new_row_major(out_shape, int64,
                                                                             CPU)
            fn(planes, height, width, out_h, out_w, array, out._np, index._np)
            return out, index

        return pool
    fn.argtypes = [c_int] * 3 + [c_obj] * 3
    fn.restype = None

    def pool_backward(grad: Any, index: Any) -> Any:
        grad_array = np.ascontiguousarray(grad._numpy())
        index_array = np.ascontiguousarray(index._numpy())
        out = new_row_major(in_shape, dtype, CPU)
        fn(planes, height * width, out_h * out_w, grad_array, index_array, out._np)
        return out

    return pool_backward


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
        self.pool: dict[tuple, list[tuple]] = {}
        self.allocations = 0  # loop outputs allocated (not taken from the pool)
        c_loops = cloops.available()
        self.groups: list[FusedGroup] = fuse(graph, 1 if c_loops else 2) \
            if loops_available() else []
        found = _pool_specs(graph.nodes) if c_loops else []
        matches = cross_entropy.find(graph.nodes) if c_loops else []
        self.loops = "none"
        self.kernels: list[Any] = []
        self.sources: list[str] = []
        pools: dict[Node, Callable[..., Any]] = {}
        pairs: dict[Node, tuple] = {}  # fused cross-entropy: its node -> (callable, match)
        if self.groups or found or matches:
            self.kernels, self.sources, self.loops, library = _build_loops(
                self.groups, [spec[0] for _, spec in found], cross_entropy.sources(matches))
            if self.loops == "none":
                self.groups = []
            if library is not None:
                pools = {node: _pool_caller(getattr(library, f"p{i}_py"), spec)
                         for i, (node, spec) in enumerate(found)}
                for i, match in enumerate(matches):
                    pairs[match.at] = (cross_entropy.caller(getattr(library, f"x{i}"), match),
                                       match)
        skipped = {node for _, match in pairs.values() for node in match.taken}
        nodes = graph.nodes
        slot = {n: i for i, n in enumerate(nodes)}
        self.n_slots = len(nodes)
        in_group = {m: g for g in self.groups
                    for m in g.members + ([g.reduction] if g.reduction is not None else [])}
        output = nodes[-1]
        returned = set(output.all_input_nodes)
        last_use: dict[Node, int] = {}
        steps: list[tuple] = []
        self.placeholders = [slot[n] for n in nodes if n.op == "placeholder"]
        group_at = {g.index: (i, g) for i, g in enumerate(self.groups)}
        for index, node in enumerate(nodes):
            if node.op in ("placeholder", "output") or node in skipped:
                continue
            if node in pairs:
                run_pair, match = pairs[node]
                steps.append(("fused", (run_pair, [slot[n] for n in match.inputs],
                                        [slot[n] for n in match.outputs])))
                readers = match.inputs
            elif node in pools:
                steps.append(("call", (slot[node], pools[node],
                                       tuple(_Slot(slot[a]) for a in _pool_inputs(node)), {})))
                readers = node.all_input_nodes
            elif node in in_group:
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
        self.outputs = map_arg(output.args[0], lambda n: _Slot(slot[n]))
        self._run = self._emit([(kind, payload, [(s, s in poolable)
                                                 for s in release.get(i, ())])
                                for i, (kind, payload) in enumerate(steps)])

    def _fused_step(self, k: int, group: FusedGroup, slot: dict[Node, int],
                    returned: set[Node]) -> tuple:
        shape = group.shape
        inner = shape[-1] if shape else 1
        outer = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        outputs = list(group.outputs)
        reduced = None
        if group.reduction is not None:
            outputs.append(group.reduction)
            reduced = (tuple(group.reduction.meta["tensor_meta"]["shape"]),
                       (1,) if group.reduce_all else (inner,) if group.reduce_rows
                       else (outer,))
        return (self._group_runner(self.kernels[k], shape, (outer, inner), group.dtype,
                                   len(group.outputs), reduced),
                [slot[n] for n in group.inputs], [slot[n] for n in outputs])

    def _group_runner(self, kernel: Any, shape: tuple, flat: tuple, dtype: Any,
                      n_out: int, reduced: tuple | None) -> Callable[..., Any]:
        """One fused loop's call: 2-d views of the inputs, outputs from the pool or new,
        and the trailing reduction's result (never pooled)."""
        np_dtype = np.dtype(dtype.name)
        key = (shape, np_dtype)
        pool = self.pool.setdefault(key, [])
        n0, n1 = flat

        def run_group(*inputs: Any) -> tuple:
            arrays = []
            for t in inputs:
                array = t._numpy()
                if array.shape != shape:  # (the loop reads any strides)
                    array = np.broadcast_to(array, shape)
                arrays.append(array.reshape(flat))
            outs = []
            for _ in range(n_out):
                if pool:
                    tensor, array = pool.pop()
                else:
                    tensor = new_row_major(shape, dtype, CPU)
                    array = tensor._np
                    self.allocations += 1
                outs.append(tensor)
                arrays.append(array.reshape(flat))
            if reduced is not None:
                tensor = new_row_major(reduced[0], dtype, CPU)
                outs.append(tensor)
                arrays.append(tensor._np.reshape(reduced[1]))
            kernel(n0, n1, *arrays)
            return tuple(outs)

        return run_group

    def _give_back(self, tensor: Any) -> None:
        array = tensor._numpy()
        self.pool.setdefault((array.shape, array.dtype), []).append((tensor, array))

    def _emit(self, steps: list[tuple]) -> Callable[..., Any]:
        """The graph as one straight-line Python function (Note: what a compiled graph
        skips): a line per kernel call or fused loop, values released after their last
        use, loop buffers given back to the pool."""
        namespace: dict[str, Any] = {"_give_back": self._give_back}

        def constant(value: Any) -> str:
            name = f"c{len(namespace)}"
            namespace[name] = value
            return name

        def render(value: Any) -> str:
            if isinstance(value, _Slot):
                return f"v{value.index}"
            if isinstance(value, tuple):
                inner = ", ".join(render(v) for v in value)
                return f"({inner},)" if len(value) == 1 else f"({inner})"
            if isinstance(value, list):
                return "[" + ", ".join(render(v) for v in value) + "]"
            if value is None or type(value) in (bool, int, str):
                return repr(value)
            if type(value) is float and np.isfinite(value):
                return repr(value)
            return constant(value)

        lines = [f"def run({', '.join(f'v{p}' for p in self.placeholders)}):"]
        for kind, payload, releases in steps:
            if kind == "call":
                target, fn, args, kwargs = payload
                parts = [render(a) for a in args]
                parts += [f"{k}={render(v)}" for k, v in kwargs.items()]
                lines.append(f"    v{target} = {constant(fn)}({', '.join(parts)})")
            elif kind == "fused":
                run_group, ins, outs = payload
                targets = "".join(f"v{o}, " for o in outs)
                lines.append(f"    {targets}= {constant(run_group)}"
                             f"({', '.join(f'v{i}' for i in ins)})")
            else:
                target, source, index = payload
                lines.append(f"    v{target} = v{source}[{index!r}]")
            for slot_index, pooled in releases:
                if pooled:
                    lines.append(f"    _give_back(v{slot_index})")
                lines.append(f"    v{slot_index} = None")
        lines.append(f"    return {render(self.outputs)}")
        self.code = "\n".join(lines) + "\n"
        exec(compile(self.code, "<pyaten._inductor graph>", "exec"), namespace)  # noqa: S102
        return namespace["run"]

    def __call__(self, *inputs: Any) -> Any:
        return self._run(*inputs)

    def to_dot(self) -> str:
        """The graph as Graphviz DOT with each fused loop's nodes framed as one cluster."""
        return self.graph_module.to_dot([
            g.members + ([g.reduction] if g.reduction is not None else []) for g in self.groups])

    def source(self) -> str:
        """The fused loops' source, each after a comment naming its nodes."""
        return "\n\n".join(self.sources)


class _Slot:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def compile_graph(gm: GraphModule) -> CompiledGraph:
    """Compile a captured graph (docs/compile.md): pointwise chains into Numba loops when
    Numba is installed, every other node its kernel called directly."""
    return CompiledGraph(gm)
