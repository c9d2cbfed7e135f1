"""The graph cache: captures kept on disk, so that a new process skips capture.

Note: what a cached capture is keyed by
    A capture (pyaten/_dynamo/capture.py) depends on the function's code, on everything the
    code reads without receiving it, on pyaten itself and on the guard inputs of the call.
    The key is a SHA-256 over all of them:
    - pyaten: its version, and the size and modification time of every `.py` and `.yaml`
      file of the package (any change to pyaten, its kernels or declarations misses;
      `PYATEN_FX_GRAPH_CACHE_STAMP`, when set, stands in for the files);
      Python's version; `PYATEN_NO_ACCEL`;
    - the function: its bytecode, constants, names and nested code objects, recursively
      through the globals and closure cells it names (a helper function's code, a number,
      a string); a module is read as a module, a class as its qualified name, a function of
      pyaten by its name (pyaten's own files are in the key already);
    - a module (a compiled `nn.Module`, or the module of a bound method): for every
      submodule its class (with the code of every method the user's classes define), its
      attributes (numbers, strings, flags: what a graph bakes in, `eps`, `p`,
      `negative_slope`), its hooks' code, and each parameter's and buffer's name, shape,
      strides, dtype and `requires_grad`; parameters and buffers are graph inputs, never
      constants, so their values are not in the key;
    - the guard inputs: the argument structure, each tensor argument's type, shape,
      strides, dtype, device and `requires_grad`, each other argument's value, grad mode
      and autocast (pyaten/_dynamo/guards.py), and the backend and `fullgraph`.
    Whatever cannot be named across processes makes the call *uncacheable* (it is captured
    as before, counted as a bypass): an object the key cannot read (an unknown global
    object whose attributes the code may read), an argument held by identity, a tensor
    the graph lifts that is neither a module's parameter, buffer or tensor attribute nor a
    global or closure variable, a custom backend, a dynamic capture (its guards live in a
    ShapeEnv).

Note: what the cache stores
    The capture without its result: the graph's nodes (operation, name, target, arguments,
    and each value's shape, strides and dtype as Meta tensors), where each lifted tensor is
    found (`("param", "0.weight")`, `("global", "w")`...), how the result is rebuilt from
    the graph's outputs, the joint graph's bookkeeping (tangents, gradients), or the graph
    break that made the entry eager. A new process whose key matches rebuilds the graph,
    looks the lifted tensors up again (their current values are read on every call, as
    after a capture), hands the capture to the backend as a fresh capture would, and runs
    it for the call's result; the backend finds its compiled loops in the loops' cache
    beside (pyaten/_inductor/cloops.py). A file that cannot be read is ignored with a
    warning and overwritten by the next capture. `pyaten._dynamo.config.fx_graph_cache =
    False` turns the cache off, and `PYATEN_FX_GRAPH_CACHE=0` sets that default (PyTorch's
    `torch._inductor.config.fx_graph_cache` and `TORCHINDUCTOR_FX_GRAPH_CACHE`).
"""

from __future__ import annotations

import enum
import functools
import hashlib
import io
import os
import pickle
import sys
import types
import warnings
from pathlib import Path
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.fx.graph import Graph
from pyaten.fx.graph_module import GraphModule
from pyaten.fx.node import Node
from pyaten.native.ops_handles import OpOverload

from . import config
from .capture import Capture, Joint

__all__ = ["Uncacheable", "cache_key", "counters", "enabled", "lifted_sources", "load",
           "store"]

_FORMAT = 1
_MAX_DEPTH = 4  # how deep the key follows functions through globals
_STATE: dict[str, Any] = {}

# PyTorch's `counters["inductor"]["fxgraph_cache_hit"]`...: hits, misses, bypasses
counters = {"hit": 0, "miss": 0, "bypass": 0}


class Uncacheable(Exception):
    """The capture cannot be named across processes (Note: what a cached capture is keyed
    by); the message says why."""


def enabled() -> bool:
    return bool(config.fx_graph_cache)


def _directory() -> Path:
    from pyaten._inductor.codegen import cache_dir

    return cache_dir() / "graphs"


# -- the key ------------------------------------------------------------------------------------


def _pyaten_stamp() -> str:
    """pyaten's version and the size and mtime of each of its files, hashed once per
    process; `PYATEN_FX_GRAPH_CACHE_STAMP` stands in for the files when set (tests pin it
    while the tree is edited under them)."""
    pinned = os.environ.get("PYATEN_FX_GRAPH_CACHE_STAMP")
    if pinned:
        return f"pinned {pinned} {sys.version}"
    stamp = _STATE.get("pyaten")
    if stamp is None:
        import pyaten

        digest = hashlib.sha256(f"{pyaten.__version__} {sys.version}".encode())
        root = Path(pyaten.__file__).parent
        stack = [str(root)]
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in sorted(entries, key=lambda e: e.name):
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name != "__pycache__":
                            stack.append(entry.path)
                    elif entry.name.endswith((".py", ".yaml")):
                        info = entry.stat()
                        digest.update(f"{entry.path} {info.st_size} {info.st_mtime_ns}\n"
                                      .encode())
        stamp = _STATE["pyaten"] = digest.hexdigest()
    return stamp


def _is_pyaten(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module == "pyaten" or module.startswith("pyaten.")


class _Key:
    """Collects the tokens of a key; `seen` stops cycles through globals."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.seen: set[int] = set()
        self.sources: dict[int, tuple[str, str]] = {}  # id(tensor) -> where it is found

    def add(self, *parts: Any) -> None:
        self.parts.append(" ".join(str(p) for p in parts))

    def tensor(self, t: Tensor, source: tuple[str, str] | None) -> str:
        if source is not None:
            self.sources.setdefault(id(t), source)
        return (f"tensor({type(t).__qualname__} {tuple(t.shape)} {t.stride()} {t.dtype} "
                f"{t.device} {t.requires_grad})")

    def code(self, code: types.CodeType, scope: dict[str, Any], depth: int) -> str:
        """The code object's text, with the globals it names read from `scope`."""
        parts = [code.co_name, code.co_code.hex(), repr(code.co_names),
                 repr(code.co_varnames), repr(code.co_freevars)]
        for const in code.co_consts:
            parts.append(self.code(const, scope, depth) if isinstance(const, types.CodeType)
                         else f"{type(const).__name__}:{const!r}")
        for name in code.co_names:
            if name in scope:
                parts.append(f"global {name}={self.value(scope[name], depth, ('global', name))}")
        return "(" + " ".join(parts) + ")"

    def function(self, fn: types.FunctionType, depth: int) -> str:
        if _is_pyaten(fn):
            return f"pyaten:{fn.__module__}.{fn.__qualname__}"
        if depth > _MAX_DEPTH:
            raise Uncacheable(f"functions nested past {_MAX_DEPTH} levels of globals")
        if id(fn) in self.seen:
            return f"seen:{fn.__qualname__}"
        self.seen.add(id(fn))
        parts = [str(fn.__module__), fn.__qualname__,
                 self.code(fn.__code__, fn.__globals__, depth + 1),
                 self.value(fn.__defaults__, depth + 1),
                 self.value(fn.__kwdefaults__, depth + 1)]
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                content = cell.cell_contents
            except ValueError:  # a cell not filled yet
                content = None
            parts.append(f"cell {name}={self.value(content, depth + 1, ('closure', name))}")
        return "function(" + " ".join(parts) + ")"

    def value(self, value: Any, depth: int, source: tuple[str, str] | None = None) -> str:
        """A value the code reads, as text that changes when what a capture bakes in
        changes; `Uncacheable` for what cannot be read so."""
        from pyaten.nn.modules.module import Module

        if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
            return f"{type(value).__name__}:{value!r}"
        if isinstance(value, Tensor):
            return self.tensor(value, source)
        if isinstance(value, (tuple, list)):
            inner = ", ".join(self.value(v, depth) for v in value)
            return f"{type(value).__name__}[{inner}]"
        if isinstance(value, (set, frozenset)):
            inner = ", ".join(sorted(self.value(v, depth) for v in value))
            return f"{type(value).__name__}{{{inner}}}"
        if isinstance(value, dict):
            inner = ", ".join(f"{self.value(k, depth)}: {self.value(v, depth)}"
                              for k, v in value.items())
            return f"{type(value).__name__}{{{inner}}}"
        if isinstance(value, types.ModuleType):
            return f"module:{value.__name__}"
        if isinstance(value, type):
            return f"class:{value.__module__}.{value.__qualname__}"
        if isinstance(value, types.FunctionType):
            return self.function(value, depth)
        if isinstance(value, types.MethodType):
            return (f"method({self.value(value.__func__, depth)} of "
                    f"{self.value(value.__self__, depth + 1)})")
        if isinstance(value, functools.partial):
            return (f"partial({self.value(value.func, depth)}, {self.value(value.args, depth)}"
                    f", {self.value(value.keywords, depth)})")
        if isinstance(value, Module):
            if id(value) in self.seen:
                return f"seen-module:{type(value).__qualname__}"
            self.seen.add(id(value))
            return "module(" + "; ".join(self.module(value, owned=False)) + ")"
        if isinstance(value, (types.BuiltinFunctionType, types.WrapperDescriptorType,
                              types.MethodDescriptorType, enum.Enum)) or _is_pyaten(value):
            # builtins, enums and pyaten's own objects (dtypes, devices, formats): by name
            text = f"{type(value).__qualname__}:{value!r}"
            if " at 0x" not in text:
                return text
        raise Uncacheable(f"the key cannot read a {type(value).__qualname__} the code uses")

    def module(self, root: Any, owned: bool = True) -> list[str]:
        """Every submodule's class, attributes, hooks, parameters and buffers, as lines.
        `owned`: the compiled module, whose tensors are found by their path; another module
        the code reaches (a global) gives its tensors no source."""
        lines = []
        for path, module in root.named_modules(remove_duplicate=False):
            cls = type(module)
            lines.append(f"submodule {path} {cls.__module__}.{cls.__qualname__}")
            for klass in cls.__mro__:
                if klass is object or _is_pyaten(klass):
                    continue
                for name, attr in sorted(vars(klass).items()):
                    if isinstance(attr, (types.FunctionType, staticmethod, classmethod,
                                         property)):
                        fn = attr.fget if isinstance(attr, property) else \
                            getattr(attr, "__func__", attr)
                        if isinstance(fn, types.FunctionType):
                            lines.append(f"method {name} {self.function(fn, 0)}")
            prefix = f"{path}." if path else ""
            state = module.__dict__
            for name, value in state.items():
                if name in ("_parameters", "_buffers", "_modules", "_compiled_call_impl"):
                    continue
                where = ("attr", prefix + name) if owned and isinstance(value, Tensor) else None
                lines.append(f"attr {path} {name} {self.value(value, 1, where)}")
            for kind in ("param", "buffer"):
                for name, t in state["_parameters" if kind == "param" else "_buffers"].items():
                    where = (kind, prefix + name) if owned else None
                    lines.append(f"{kind} {path} {name} "
                                 f"{'None' if t is None else self.tensor(t, where)}")
            lines.append(f"children {path} {list(state['_modules'])}")
        return lines


def cache_key(fn: Any, module: Any, spec: Any, flat: list[Any], state: tuple, backend: Any,
              fullgraph: bool) -> tuple[str, dict[int, tuple[str, str]]]:
    """The key of a capture of `fn` for this call (Note: what a cached capture is keyed
    by), and where each tensor the function can read without receiving it is found."""
    from pyaten.nn.modules.module import Module

    if not isinstance(backend, str):
        raise Uncacheable("a custom backend")
    key = _Key()
    key.add("format", _FORMAT, _pyaten_stamp(), os.environ.get("PYATEN_NO_ACCEL", ""))
    key.add("backend", backend, fullgraph, state)
    key.add("spec", spec)
    for value in flat:
        if isinstance(value, Tensor):
            key.add("arg", key.tensor(value, None))
        elif value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
            key.add("arg", key.value(value, 0))
        else:
            raise Uncacheable(f"an argument of type {type(value).__qualname__} (held by "
                              "identity)")
    if module is not None:
        key.parts += key.module(module)
        key.seen.add(id(module))  # a bound method of it: the module is read already
    if not isinstance(fn, Module):
        key.add("fn", key.value(fn, 0))
    digest = hashlib.sha256("\n".join(key.parts).encode()).hexdigest()
    return digest, key.sources


def lifted_sources(cap: Capture, sources: dict[int, tuple[str, str]]) -> list[tuple[str, str]]:
    """Where each tensor the capture lifted is found; `Uncacheable` when one is not."""
    found = []
    for t in cap.constants:
        source = sources.get(id(t))
        if source is None:
            raise Uncacheable("the graph reads a tensor that is neither an argument, a "
                              "module's parameter, buffer or attribute, nor a global or "
                              "closure variable")
        found.append(source)
    return found


def resolve(source: tuple[str, str], fn: Any, module: Any) -> Tensor:
    """The tensor a stored source names, in this process."""
    kind, name = source
    if kind in ("param", "buffer", "attr"):
        path, _, leaf = name.rpartition(".")
        owner = module.get_submodule(path) if path else module
        value = getattr(owner, leaf)
    else:
        function = getattr(fn, "__func__", fn)
        if kind == "closure":
            cells = dict(zip(function.__code__.co_freevars, function.__closure__ or ()))
            value = cells[name].cell_contents
        else:
            value = function.__globals__[name]
    if not isinstance(value, Tensor):
        raise Uncacheable(f"{kind} {name} is no longer a tensor")
    return value


# -- the stored form ----------------------------------------------------------------------------


_PLAIN_TYPES = (type(None), bool, int, float, complex, str, bytes, tuple, list, dict, slice,
                type)


class _Pickler(pickle.Pickler):
    """Nodes by name, operators by qualified name, pyaten's named objects (dtypes, memory
    formats, layouts) by name, Meta tensors by geometry; plain values as themselves. Any
    other object (a generator, a user's object) is held by identity in the graph, which a
    file cannot keep: `Uncacheable`."""

    def persistent_id(self, obj: Any) -> Any:
        from pyaten.core.device import device
        from pyaten.utils._pytree import TreeSpec

        if type(obj) in _PLAIN_TYPES or isinstance(obj, (device, TreeSpec)):
            return None
        if isinstance(obj, Node):
            return ("node", obj.name)
        if isinstance(obj, Tensor):
            if obj.device.type != "meta":
                raise Uncacheable("a tensor with data in the graph")
            return ("meta", tuple(obj.shape), tuple(obj.stride()), str(obj.dtype),
                    obj.requires_grad)
        if isinstance(obj, OpOverload):
            return ("op", str(obj))
        if isinstance(obj, types.BuiltinFunctionType) and \
                getattr(obj, "__module__", None) in ("_operator", "operator", "builtins", "math"):
            return None  # operator.getitem...: pickled by reference
        if _is_pyaten(type(obj)):
            import pyaten

            name = getattr(obj, "name", None)
            if isinstance(name, str) and getattr(pyaten, name, None) is obj:
                return ("pyaten", name)
            if isinstance(obj, tuple):  # pyaten.Size
                return None
        raise Uncacheable(f"the graph holds a {type(obj).__qualname__} (kept by identity)")


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, nodes: dict[str, Node]) -> None:
        super().__init__(io.BytesIO(data))
        self.nodes = nodes

    def persistent_load(self, pid: Any) -> Any:
        import pyaten

        kind = pid[0]
        if kind == "node":
            return self.nodes[pid[1]]
        if kind == "op":
            namespace, name, overload = pid[1].split(".")
            return getattr(getattr(getattr(pyaten.ops, namespace), name), overload)
        if kind == "meta":
            from pyaten.core.device import device
            from pyaten.core.views import empty_tensor

            _, shape, stride, dtype, requires_grad = pid
            t = empty_tensor(shape, getattr(pyaten, dtype.split(".")[-1]), device("meta"),
                             stride)
            return t.requires_grad_(True) if requires_grad else t
        if kind == "pyaten":
            return getattr(pyaten, pid[1])
        raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")


def _dumps(value: Any) -> bytes:
    out = io.BytesIO()
    _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return out.getvalue()


def _graph_record(cap: Capture) -> list[tuple]:
    """Per node its operation, name, and its target, arguments and metadata pickled alone
    (its arguments name earlier nodes, which the loader has made by then)."""
    record = []
    for node in cap.graph.graph.nodes:
        meta = {k: node.meta[k] for k in ("val", "tensor_meta") if k in node.meta}
        record.append((node.op, node.name, _dumps((node.target, node.args, dict(node.kwargs),
                                                   meta))))
    return record


def store(key: str, cap: Capture, sources: list[tuple[str, str]]) -> None:
    """Write the capture under `key` (Note: what the cache stores); a capture whose graph
    holds something that cannot be written raises `Uncacheable`."""
    joint = None
    if cap.joint is not None:
        joint = (cap.joint.diff_outputs, [n.name for n in cap.joint.tangents],
                 [n.name for n in cap.joint.grad_inputs],
                 [None if g is None else g.name for g in cap.joint.grads])
    try:
        graph = None if cap.graph is None else _graph_record(cap)
        payload = _dumps({"graph": graph, "name": type(cap.graph).__name__ if cap.graph
                          else None, "sources": sources, "out_spec": cap.out_spec,
                          "out_leaves": cap.out_leaves, "break_op": cap.break_op,
                          "break_reason": cap.break_reason, "joint": joint})
    except (pickle.PicklingError, TypeError, AttributeError) as error:
        raise Uncacheable(f"the graph holds what cannot be written: {error}") from error
    data = pickle.dumps((_FORMAT, key, payload), protocol=pickle.HIGHEST_PROTOCOL)
    folder = _directory()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / f"{key}.{os.getpid()}.tmp"
        temporary.write_bytes(data)
        os.replace(temporary, folder / f"{key}.pkl")
    except OSError as error:
        warnings.warn(f"pyaten.compile: could not write the graph cache: {error}",
                      stacklevel=4)


def load(key: str, fn: Any, module: Any) -> Capture | None:
    """The capture stored under `key`, its lifted tensors looked up in this process; None
    when there is none. A file that cannot be read is ignored with a warning."""
    path = _directory() / f"{key}.pkl"
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        version, stored_key, payload = pickle.loads(data)
        if version != _FORMAT or stored_key != key:
            raise ValueError("written for another key or format")
        record = _Unpickler(payload, {}).load()
        constants = [resolve(s, fn, module) for s in record["sources"]]
        graph_module = None
        nodes: dict[str, Node] = {}
        if record["graph"] is not None:
            graph = Graph()
            for op, name, blob in record["graph"]:
                target, args, kwargs, meta = _Unpickler(blob, nodes).load()
                node = graph.create_node(op, target, args, kwargs, name=name)
                node.meta.update(meta)
                nodes[name] = node
            graph_module = GraphModule({}, graph, class_name=record["name"])
        joint = None
        if record["joint"] is not None:
            diff, tangents, grad_inputs, grads = record["joint"]
            joint = Joint(diff, [nodes[n] for n in tangents], [nodes[n] for n in grad_inputs],
                          [None if g is None else nodes[g] for g in grads])
    except Exception as error:  # noqa: BLE001 - any damage: capture again
        warnings.warn(f"pyaten.compile: ignoring the unreadable graph cache file {path} "
                      f"({type(error).__name__}: {error})", stacklevel=4)
        return None
    return Capture(None, graph_module, constants, record["out_spec"], record["out_leaves"],
                   record["break_op"], record["break_reason"], joint)

