"""`pyaten.compile`: a function or module wrapped so that its calls run captured graphs.

Each call flattens its arguments and looks for a cache entry whose guards pass
(pyaten/_dynamo/guards.py). None passes: the call is captured (pyaten/_dynamo/capture.py),
which also computes its result, and the backend builds what later calls with the same
guards run. A capture that met a graph break leaves an *eager* entry: calls matching it run
the function as written. Past `config.cache_size_limit` entries a function runs eagerly.
Everything is counted in a `FunctionReport` (`pyaten.compile_report()`).
"""

from __future__ import annotations

import functools
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyaten.amp.autocast_mode import get_autocast_dtype, is_autocast_enabled
from pyaten.autograd.grad_mode import GRAD
from pyaten.core.tensor import Tensor
from pyaten.dispatch import python_key
from pyaten.nn.modules.module import Module
from pyaten.nn.parameter import Parameter
from pyaten.utils import _pytree
from pyaten.utils import explain as _explain

from . import config, graph_cache
from .backends import BACKENDS, build
from .capture import Capture, capture
from .exc import InvalidBackend, Unsupported
from .guards import DynamicGuardSet, GuardSet, build_dynamic_guards, build_guards, call_guard
from .symbolic_capture import capture_symbolic

__all__ = ["compile", "compile_report", "reset", "OptimizedModule", "CompiledFunction",
           "mark_dynamic", "maybe_mark_dynamic"]

_MODES = (None, "default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs",
          "max-autotune")
_ALL: weakref.WeakSet = weakref.WeakSet()
_PLAIN = (Tensor, Parameter)


@dataclass
class GraphBreak:
    op: str
    reason: str

    def __str__(self) -> str:
        return f"{self.op}: {self.reason}"


@dataclass
class FunctionReport:
    """What happened to one compiled function."""

    name: str
    backend: str
    captures: int = 0
    compiled_calls: int = 0
    eager_calls: int = 0
    guard_failures: list[str] = field(default_factory=list)
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    capture_seconds: list[float] = field(default_factory=list)
    # dynamic captures that failed (then captured with static shapes), with the error
    dynamic_fallbacks: list[str] = field(default_factory=list)
    # the graph cache on disk (pyaten/_dynamo/graph_cache.py): entries loaded from it,
    # captures it did not have, and why a capture could not be cached
    cache_hits: int = 0
    cache_misses: int = 0
    cache_bypasses: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"{self.name} (backend={self.backend}): {self.captures} capture(s), "
                 f"{self.compiled_calls} compiled call(s), {self.eager_calls} eager call(s)"]
        lines += [f"  recompiled: {why}" for why in self.guard_failures]
        lines += [f"  graph break: {b}" for b in self.graph_breaks]
        lines += [f"  dynamic shapes failed, static: {why}" for why in self.dynamic_fallbacks]
        if self.cache_hits or self.cache_misses or self.cache_bypasses:
            lines.append(f"  graph cache: {self.cache_hits} hit(s), {self.cache_misses} "
                         f"miss(es), {len(self.cache_bypasses)} bypass(es)")
            lines += [f"  not cached: {why}" for why in self.cache_bypasses]
        return "\n".join(lines)


class CompileReport(list):
    """`pyaten.compile_report()`: a list of `FunctionReport`, printed one per function."""

    def __str__(self) -> str:
        return "\n".join(str(r) for r in self) if self else "no compiled function has run"


@dataclass
class _Entry:
    guards: GuardSet
    run: Callable[..., Any] | None  # None: a graph break; run the function eagerly
    capture: Capture
    how: str
    constants: list[Tensor]
    # each lifted constant's requires_grad at capture (a parameter switched on or off later
    # changes whether the graph must be differentiable)
    constants_grad: tuple[bool, ...] = ()
    # the lean call (Note: the call guard, pyaten/_dynamo/guards.py): the generated guard
    # over the positional arguments (None: only `check`), whether they are all tensors (so
    # the runner takes them as they come), and the result's rebuild
    call_guard: Callable[[tuple, tuple], bool] | None = None
    all_tensors: bool = False
    rebuild: Callable[[Any], Any] | None = None
    # where the graph's inputs are among the flattened arguments (None: the tensors; a
    # dynamic capture adds its symbolic int arguments)
    input_positions: tuple[int, ...] | None = None

    def check(self, spec: Any, flat: list[Any], state: tuple, module: Any) -> str | None:
        why = self.guards.check(spec, flat, state, module)
        if why is None and tuple(c.requires_grad for c in self.constants) != \
                self.constants_grad:
            why = "requires_grad of a tensor the function reads (a parameter) changed"
        return why


class CompiledFunction:
    """A compiled function (what `pyaten.compile(fn)` returns)."""

    def __init__(self, fn: Callable[..., Any], backend: Any, fullgraph: bool,
                 module: Any = None, dynamic: bool | None = None) -> None:
        self._fn = fn
        self._backend = backend
        self._fullgraph = fullgraph
        self._module = module
        self._dynamic = dynamic
        self._dynamic_marks: dict[int, set[int]] = {}  # automatic dynamic: dims seen to vary
        self._dynamic_ints: set[int] = set()  # and int arguments seen to vary
        self._static_ints = False  # an int symbol failed a capture: ints stay constants
        self._entries: list[_Entry] = []
        name = getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))
        backend_name = backend if isinstance(backend, str) else getattr(
            backend, "__name__", "custom")
        self.report = FunctionReport(name, backend_name)
        self.last_entry: _Entry | None = None
        if not isinstance(fn, Module):
            functools.update_wrapper(self, fn, updated=())  # type: ignore[arg-type]
        _ALL.add(self)

    def reset(self) -> None:
        self._entries.clear()
        self.last_entry = None

    def _find(self, spec: Any, flat: list[Any], grad: bool) -> tuple[_Entry | None, str | None]:
        failure = None
        for entry in self._entries:
            why = entry.check(spec, flat, grad, self._module)
            if why is None:
                return entry, None
            failure = failure or why
        return None, failure

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        result = self._call(args, kwargs)
        if _explain.OPEN and self.last_entry is not None:  # inside `with pyaten.explain()`
            from .explain import describe_entry

            text = describe_entry(self.report.name, self.report.backend, self.last_entry)
            for explanation in _explain.OPEN:
                explanation.compiled.append(text)
        return result

    def _call(self, args: tuple, kwargs: dict) -> Any:
        if not kwargs and not python_key._MODES.stack:
            state = _global_state()
            for entry in self._entries:  # one generated check per entry, nothing allocated
                guard = entry.call_guard
                if guard is not None and guard(args, state):
                    self.last_entry = entry
                    if entry.run is None:
                        break  # an eager entry: the general path counts and runs it
                    self.report.compiled_calls += 1
                    if entry.all_tensors:
                        return entry.rebuild(entry.run(*args, *entry.constants))
                    return entry.rebuild(entry.run(
                        *[a for a in args if isinstance(a, Tensor)], *entry.constants))
        flat, spec = _pytree.tree_flatten((args, kwargs))
        if python_key.stack_len() or any(type(v) not in _PLAIN for v in flat
                                         if isinstance(v, Tensor)):
            # a dispatch mode or a tensor subclass wants to see each operator: a graph
            # would run below it, so the function runs as written
            self.last_entry = None
            self.report.eager_calls += 1
            return self._fn(*args, **kwargs)
        grad = _global_state()
        entry, failure = self._find(spec, flat, grad)
        if entry is None:
            if len(self._entries) >= config.cache_size_limit:
                self.last_entry = None
                self.report.eager_calls += 1
                return self._fn(*args, **kwargs)
            if failure is not None:
                self.report.guard_failures.append(failure)
            dims = self._dynamic_dims(spec, flat)
            if dims is not None:
                return self._capture_dynamic(args, kwargs, spec, flat, grad, dims)
            return self._capture(args, kwargs, spec, flat, grad)
        self.last_entry = entry
        if entry.run is None:
            self.report.eager_calls += 1
            return self._fn(*args, **kwargs)
        self.report.compiled_calls += 1
        if entry.input_positions is None:
            inputs = [v for v in flat if isinstance(v, Tensor)]
        else:
            inputs = [flat[i] for i in entry.input_positions]
        outs = entry.run(*inputs, *entry.constants)
        return _rebuild(entry.capture, outs)

    def _capture(self, args: tuple, kwargs: dict, spec: Any, flat: list[Any],
                 grad: bool) -> Any:
        start = time.perf_counter()
        guards = build_guards(spec, flat, grad, self._module)  # before the run can change them
        key, sources = self._cache_key(spec, flat, grad)
        cap = None if key is None else graph_cache.load(key, self._fn, self._module)
        if cap is not None:  # from disk: no capture run, the graph computes the result
            graph_cache.counters["hit"] += 1
            self.report.cache_hits += 1
            entry = self._make_entry(guards, cap, flat, " (from the graph cache)",
                                     len(args) if not kwargs else -1)
            self.report.capture_seconds.append(time.perf_counter() - start)
            if entry.run is None:
                self.report.eager_calls += 1
                return self._fn(*args, **kwargs)
            self.report.compiled_calls += 1
            tensors = [v for v in flat if isinstance(v, Tensor)]
            return _rebuild(cap, entry.run(*tensors, *entry.constants))
        backward = self._backend != "eager"
        cap = capture(self._fn, args, kwargs, fullgraph=self._fullgraph, backward=backward)
        if key is not None:
            try:
                graph_cache.store(key, cap, graph_cache.lifted_sources(cap, sources))
                graph_cache.counters["miss"] += 1
                self.report.cache_misses += 1
            except graph_cache.Uncacheable as why:
                self._bypass(str(why))
        self._make_entry(guards, cap, flat, "", len(args) if not kwargs else -1)
        self.report.capture_seconds.append(time.perf_counter() - start)
        result, cap.result = cap.result, None  # the entry must not keep this call's outputs
        return result

    def _make_entry(self, guards: GuardSet, cap: Capture, flat: list[Any], how: str,
                    n_args: int) -> _Entry:
        """The cache entry of a capture (made now or read from the graph cache)."""
        self.report.captures += 1
        if cap.graph is None:
            self.report.graph_breaks.append(GraphBreak(cap.break_op or "?",
                                                       cap.break_reason or "?"))
            entry = _Entry(guards, None, cap, "eager (graph break)" + how, [])
        else:
            inputs = [v for v in flat if isinstance(v, Tensor)] + cap.constants
            run, built = build(self._backend, cap, inputs)
            entry = _Entry(guards, run, cap, built + how, cap.constants,
                           tuple(c.requires_grad for c in cap.constants))
        self._lean(entry, flat, n_args)
        self._entries.append(entry)
        self.last_entry = entry
        return entry

    def _lean(self, entry: _Entry, flat: list[Any], n_args: int) -> None:
        """The entry's lean call (Note: the call guard): built when the call's arguments
        are `n_args` positional leaves (-1: keyword arguments, never)."""
        if n_args < 0:
            return
        entry.call_guard = call_guard(entry.guards, n_args, self._module, entry.constants)
        entry.all_tensors = all(isinstance(v, Tensor) for v in flat)
        entry.rebuild = _rebuilder(entry.capture)

    def _cache_key(self, spec: Any, flat: list[Any],
                   grad: tuple) -> tuple[str | None, dict[int, tuple[str, str]]]:
        """The graph cache's key for this call (None when the cache is off or the call
        cannot be cached) and where the tensors the function reads are found."""
        if not graph_cache.enabled():
            return None, {}
        try:
            return graph_cache.cache_key(self._fn, self._module, spec, flat, grad,
                                         self._backend, self._fullgraph)
        except graph_cache.Uncacheable as why:
            self._bypass(str(why))
            return None, {}

    def _bypass(self, why: str) -> None:
        graph_cache.counters["bypass"] += 1
        self.report.cache_bypasses.append(why)

    def _dynamic_dims(self, spec: Any, flat: list[Any]) -> dict[int, Any] | None:
        """Which dims of which tensor arguments a new capture gives symbols (Note: a dynamic
        capture, pyaten/_dynamo/symbolic_capture.py): every dim with `dynamic=True`; with
        `dynamic=None` the dims whose size differs from a static capture of the same
        arguments' structure and ranks (PyTorch's automatic dynamic shapes); None for a
        static capture."""
        if self._dynamic is False:
            return None
        if self._dynamic:  # every size, and every int argument (Note: a dynamic capture)
            return {i: None for i, v in enumerate(flat) if isinstance(v, Tensor) or
                    type(v) is int and not self._static_ints}
        marked = {i: {d % max(v.dim(), 1) for d in v.__dict__.get("_dynamo_dynamic_indices", ())}
                  for i, v in enumerate(flat) if isinstance(v, Tensor)}
        for i, dims in marked.items():  # mark_dynamic: symbols from the first capture on
            if dims:
                self._dynamic_marks.setdefault(i, set()).update(dims)
        for entry in self._entries:
            guards = entry.guards
            if isinstance(guards, DynamicGuardSet) or guards.spec != spec or \
                    len(guards.leaves) != len(flat):
                continue
            for i, (value, key) in enumerate(zip(flat, guards.leaves)):
                if isinstance(value, Tensor) and key[0] == "tensor" and \
                        len(key[2]) == value.dim():
                    changed = {d for d, (a, b) in enumerate(zip(key[2], value.shape)) if a != b}
                    if changed:
                        self._dynamic_marks.setdefault(i, set()).update(changed)
                elif type(value) is int and key[:2] == ("value", int) and key[2] != value \
                        and not self._static_ints:
                    self._dynamic_ints.add(i)  # an int argument seen to vary: a symbol
        if not self._dynamic_marks and not self._dynamic_ints:
            return None
        dims: dict[int, Any] = {i: frozenset(d) for i, d in self._dynamic_marks.items()}
        return dims | {i: None for i in self._dynamic_ints}

    def _capture_dynamic(self, args: tuple, kwargs: dict, spec: Any, flat: list[Any],
                         grad: tuple, dims: dict[int, Any]) -> Any:
        try:
            return self._try_capture_dynamic(args, kwargs, spec, flat, grad, dims)
        except Unsupported:
            raise
        except Exception as error:  # noqa: BLE001 - a Meta kernel that cannot take symbols
            ints = [i for i in dims if not isinstance(flat[i], Tensor)]
            if ints:  # int arguments constants from now on, the sizes still symbolic
                self._static_ints = True
                self._dynamic_ints.clear()
                self.report.dynamic_fallbacks.append(
                    f"{type(error).__name__}: {error} (int arguments made constants)")
                sizes = {i: d for i, d in dims.items() if i not in ints}
                if sizes:
                    return self._capture_dynamic(args, kwargs, spec, flat, grad, sizes)
                return self._capture(args, kwargs, spec, flat, grad)
            # the call is captured with static shapes instead, and so are the next ones
            self._dynamic = False if self._dynamic is None else self._dynamic
            self._dynamic_marks.clear()
            self._dynamic_ints.clear()
            self.report.dynamic_fallbacks.append(f"{type(error).__name__}: {error}")
            return self._capture(args, kwargs, spec, flat, grad)

    def _try_capture_dynamic(self, args: tuple, kwargs: dict, spec: Any, flat: list[Any],
                             grad: tuple, dims: dict[int, Any]) -> Any:
        start = time.perf_counter()
        backward = self._backend != "eager"
        cap = capture_symbolic(self._fn, args, kwargs, fullgraph=self._fullgraph,
                               backward=backward, dynamic_dims=dims)
        self.report.captures += 1
        guards = build_dynamic_guards(spec, flat, grad, self._module, cap.fakes, cap.shape_env)
        positions = tuple(i for i, (v, fake) in enumerate(zip(flat, cap.fakes))
                          if isinstance(v, Tensor) or fake is not None)
        tensors = [flat[i] for i in positions]  # the graph's inputs: symbolic ints too
        if cap.graph is None:
            self.report.graph_breaks.append(GraphBreak(cap.break_op or "?",
                                                       cap.break_reason or "?"))
            entry = _Entry(guards, None, cap, "eager (graph break)", [])
        else:
            run, how = build(self._backend, cap, tensors + cap.constants)
            entry = _Entry(guards, run, cap, f"{how}, dynamic shapes", cap.constants,
                           tuple(c.requires_grad for c in cap.constants),
                           input_positions=positions)
        self.report.capture_seconds.append(time.perf_counter() - start)
        self._entries.append(entry)
        self.last_entry = entry
        if graph_cache.enabled():  # reported once the entry stands (a failed one goes static)
            self._bypass("dynamic shapes (the guards live in a ShapeEnv)")
        if entry.run is None:
            return self._fn(*args, **kwargs)
        try:
            return _rebuild(cap, entry.run(*tensors, *entry.constants))
        except Exception:
            self._entries.remove(entry)
            self.report.captures -= 1  # counted again by the static capture
            if graph_cache.enabled():
                graph_cache.counters["bypass"] -= 1
                self.report.cache_bypasses.pop()
            raise


def mark_dynamic(t: Tensor, index: int | list[int] | tuple[int, ...], **_: Any) -> None:
    """Mark dims of `t` dynamic (PyTorch's `torch._dynamo.mark_dynamic`): a capture of a call
    that receives `t` gives those dims symbols from the first call on."""
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_dynamic(): expected a Tensor, got {type(t).__name__}")
    for i in index if isinstance(index, (list, tuple)) else (index,):
        t.__dict__.setdefault("_dynamo_dynamic_indices", set()).add(i)


maybe_mark_dynamic = mark_dynamic


def _global_state() -> tuple:
    """The thread state a graph bakes in: grad mode, and CPU autocast with its dtype."""
    if is_autocast_enabled("cpu"):
        return (GRAD.enabled, True, get_autocast_dtype("cpu"))
    return (GRAD.enabled, False, None)


def _rebuilder(cap: Capture) -> Callable[[Any], Any]:
    """`_rebuild` for one capture; the common single-tensor result without the pytree."""
    if cap.out_spec is not None and cap.out_spec.is_leaf() and cap.out_leaves == [0]:
        def first(outs: Any) -> Any:
            return outs[0] if isinstance(outs, (tuple, list)) else outs
        return first
    return functools.partial(_rebuild, cap)


def _rebuild(cap: Capture, outs: Any) -> Any:
    if not isinstance(outs, (tuple, list)):
        outs = (outs,)
    leaves = [outs[leaf] if isinstance(leaf, int) else leaf[1] for leaf in cap.out_leaves]
    return _pytree.tree_unflatten(leaves, cap.out_spec)


class OptimizedModule(Module):
    """A compiled module (what `pyaten.compile(module)` returns), an `nn.Module` as PyTorch's
    `torch._dynamo.eval_frame.OptimizedModule`: the original module is its one child
    `_orig_mod` (so `parameters()` and `state_dict()` carry the `_orig_mod.` prefix), its
    `forward` is the module's `__call__` compiled, and other attributes read and write
    through to the original module, `training` included (so `train()`/`eval()` change the
    guarded state and the next call re-captures)."""

    _opt_mod_attributes = frozenset({"_orig_mod", "_compiled", "forward", "__dict__",
                                     "_super_module_initialized"})

    def __init__(self, module: Module, backend: Any, fullgraph: bool,
                 dynamic: bool | None = None) -> None:
        object.__setattr__(self, "_orig_mod", module)  # attribute reads need it from now on
        object.__setattr__(self, "_super_module_initialized", False)
        super().__init__()
        object.__setattr__(self, "_super_module_initialized", True)
        del self.__dict__["_orig_mod"]
        self._modules["_orig_mod"] = module
        compiled = CompiledFunction(module, backend, fullgraph, module=module, dynamic=dynamic)
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "forward", compiled)

    @property  # type: ignore[override]
    def training(self) -> bool:
        return self._orig_mod.training

    @training.setter
    def training(self, value: bool) -> None:
        # Module.__init__ sets the default; afterwards the flag is the original module's
        if self.__dict__.get("_super_module_initialized"):
            self._orig_mod.training = value

    def __getattr__(self, name: str) -> Any:
        if name == "_orig_mod":
            return self.__dict__["_modules"]["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            super().__setattr__(name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            super().__delattr__(name)
        else:
            delattr(self._orig_mod, name)

    def __len__(self) -> int:
        if hasattr(self._orig_mod, "__len__"):
            return len(self._orig_mod)
        raise TypeError(f"{type(self._orig_mod).__name__} does not support len()")

    def __dir__(self) -> list[str]:
        own = self._orig_mod.__dir__()
        return own + [a for a in super().__dir__() if a not in own]


def compile(model: Any = None, *, fullgraph: bool = False, dynamic: bool | None = None,
            backend: Any = "pyaten", mode: str | None = None, options: dict | None = None,
            disable: bool = False) -> Any:
    """Compile a function or module (PyTorch's `torch.compile`); also a decorator, bare or
    with arguments. See docs/compile.md."""
    if model is None:
        def decorate(fn: Any) -> Any:
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                           options=options, disable=disable)
        return decorate
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(str(m) for m in _MODES[1:])}")
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    if isinstance(backend, str) and backend not in BACKENDS:
        raise InvalidBackend(f"Invalid backend: '{backend}', see "
                             "`pyaten._dynamo.list_backends()` for available backends.")
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, backend, fullgraph, dynamic)
    owner = getattr(model, "__self__", None)  # a module's bound method: guard the module too
    return CompiledFunction(model, backend, fullgraph,
                            module=owner if isinstance(owner, Module) else None,
                            dynamic=dynamic)


def compile_report() -> CompileReport:
    """What every live compiled function did: captures, guard failures (why each recapture
    happened), graph breaks (operator and reason), compiled and eager call counts."""
    return CompileReport(f.report for f in list(_ALL))


def reset() -> None:
    """Forget every capture and every report (PyTorch's `torch._dynamo.reset`), and the
    graph cache's counters (its files stay)."""
    for key in graph_cache.counters:
        graph_cache.counters[key] = 0
    for fn in list(_ALL):
        fn.reset()
        fn.report = FunctionReport(fn.report.name, fn.report.backend)
