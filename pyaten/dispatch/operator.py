"""Operator entries: an operator's schema, its kernels per key, its table, and calling it.

Note: the call path
    `entry.call(*args)` reads the `_keyset` int of each tensor argument (positions known from
    the schema; lists and optionals included), ORs them with the thread-local included set,
    clears the excluded functionality bits, and looks the result up in a per-entry dict that
    maps those raw bits to a ready-to-call kernel. A miss resolves the bits the slow way
    (fallthrough mask of the backend row, table index, with_keyset / boxed-fallback binding,
    tracing wrapper) and fills the dict. Registrations rebuild the table under the registry
    lock and clear the dict in place, so the generated `call` function, built once per
    schema with `exec`, never needs to change. The cache key is the key set *after* TLS, and
    what follows from it (mask, slot, kernel) depends on nothing else, so guards never
    invalidate it.

Note: nothing per operator is built before it is needed
    Import defines ~1,900 operators and registers ~4,500 kernels, and a program calls a few
    hundred of them. So a schema may be defined as an `UnparsedSchema` (its name, and how to
    parse it), parsed when `entry.schema` is first read; an operator's `call` function is
    generated on its first call (`set_schema` installs `_first_call`, which builds the real
    one and replaces itself); and a `batch()` of registrations marks each touched entry stale
    instead of computing its table (the `table` property and `dispatch_keyset` compute it on
    first use, under the lock). The kernels the generated modules declare are not even
    registered at import: `registry.defer_kernels` leaves a function on the entry that the
    `kernels` property runs first, so every reader and every later registration sees the
    stacks in the order eager registration would have built. What a caller, `dump_table`
    or a trace sees is the same as if all four had been built eagerly.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from pyaten.dispatch import errors, trace
from pyaten.dispatch.keys import (
    BACKEND_MASK,
    FULL_RAW,
    NUM_BACKENDS,
    RUNTIME_KEYS,
    SLOT_BITS,
    TABLE_SIZE,
    DispatchKey,
    DispatchKeySet,
    display_name,
    table_index,
)
from pyaten.dispatch.rules import AMBIGUOUS, Kernel, Resolution, table_and_fallthroughs
from pyaten.dispatch.tls import DEFAULT_INCLUDED, DEFAULT_KEEP, NONDEFAULT, STATE
from pyaten.schema.model import NO_DEFAULT

_CACHE_LIMIT = 4096  # distinct key sets seen by one operator before its cache is reset
# The registry lock: held by every registration and by cache fills (never by a cache hit).
LOCK = threading.RLock()


class UnparsedSchema:
    """A schema defined before it is parsed: its qualified name, and a function that parses
    it (Note: nothing per operator is built before it is needed)."""

    __slots__ = ("name", "parse")

    def __init__(self, name: str, parse: Callable[[], Any]) -> None:
        self.name = name
        self.parse = parse

    def __str__(self) -> str:
        return str(self.parse())


class OperatorEntry:
    """One operator (`ns::name.overload`): schema, kernels, computed table, `call`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._schema: Any = None  # a FunctionSchema (or an UnparsedSchema) once defined
        self._defined_by: Any = None  # what `define` was given, for its handle's undo
        self.schema_debug = ""
        self.tags: tuple[str, ...] = ()
        self._kernels: dict[DispatchKey, list[Kernel]] = {}
        # Registrations deferred to first use (registry.defer_kernels), run by `kernels`.
        self._deferred: Callable[[OperatorEntry], None] | None = None
        self._table: tuple[Resolution, ...] = ()
        self._masks: tuple[int, ...] = (FULL_RAW,) * NUM_BACKENDS
        self._stale = False  # a global fallback changed since the table was computed
        self._fallbacks: list[Kernel | None] = []
        self._cache: dict[int, Callable] = {}
        self._redispatch_cache: dict[int, Callable] = {}
        self.call: Callable[..., Any] = self._undefined_call

    @property
    def schema(self) -> Any:
        """The pyaten.schema.FunctionSchema, or None while the operator is not defined."""
        schema = self._schema
        if type(schema) is UnparsedSchema:
            schema = self._schema = schema.parse()
        return schema

    @property
    def defined(self) -> bool:
        """Whether a schema is defined (without parsing one that waits)."""
        return self._schema is not None

    @property
    def schema_name(self) -> str:
        """The name without namespace, as `Library.impl` takes it."""
        return self.name.split("::", 1)[1]

    def __repr__(self) -> str:
        return f"<OperatorEntry {self.name}>"

    # -- registration side (called with the registry lock held) ------------------------------

    def set_schema(self, schema: Any, debug: str, tags: tuple[str, ...]) -> None:
        self._schema = self._defined_by = schema
        self.schema_debug = debug
        self.tags = tags
        self.__dict__.pop("_positions", None)
        self.__dict__.pop("_arg_names", None)
        self.call = self._first_call  # (Note: nothing per operator is built before it is needed)

    @functools.cached_property
    def _positions(self) -> tuple[tuple[int, str], ...]:
        return _tensor_positions(self.schema)

    @functools.cached_property
    def _arg_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.schema.arguments)

    def _first_call(self, *args: Any, **kwargs: Any) -> Any:
        with LOCK:
            if self.call == self._first_call:  # not rebuilt by another thread meanwhile
                self.call = _build_call(self)
        return self.call(*args, **kwargs)

    def clear_schema(self) -> None:
        self._schema = self._defined_by = None
        self.schema_debug = ""
        self.tags = ()
        self.call = self._undefined_call

    @property
    def kernels(self) -> dict[DispatchKey, list[Kernel]]:
        """The kernel stacks by key (newest last); registrations deferred at import are made
        first (Note: nothing per operator is built before it is needed)."""
        if self._deferred is not None:
            with LOCK:
                if self._deferred is not None:
                    self._deferred(self)  # clears `_deferred` (registry._run_deferred)
        return self._kernels

    def active_kernels(self) -> dict[DispatchKey, Kernel]:
        return {key: stack[-1] for key, stack in self.kernels.items() if stack}

    @property
    def table(self) -> tuple[Resolution, ...]:
        if self._stale:
            self._refresh()
        return self._table

    def mark_stale(self, fallbacks: list[Kernel | None]) -> None:
        """A global fallback changed: drop cached call targets now, recompute the table when
        next needed (one fallback registration need not recompute every operator's)."""
        self._fallbacks = fallbacks
        self._stale = True
        self._cache.clear()
        self._redispatch_cache.clear()

    def _refresh(self) -> None:
        with LOCK:
            if self._stale:
                self.rebuild(self._fallbacks)

    def rebuild(self, fallbacks: list[Kernel | None]) -> None:
        """Recompute the table, the fallthrough masks, and drop cached call targets."""
        self._fallbacks = fallbacks
        self._table, fallthroughs = table_and_fallthroughs(self.active_kernels(), fallbacks)
        masks = [FULL_RAW] * NUM_BACKENDS
        every_row = 0  # functionality bits that fall through in every backend's row
        for slot in fallthroughs:
            if slot:
                bits = SLOT_BITS[slot]
                functionality = bits & ~BACKEND_MASK
                backend = (bits & BACKEND_MASK).bit_length()
                if backend:  # a per-backend key falls through only in its own backend's row
                    masks[backend - 1] &= ~functionality
                else:
                    every_row |= functionality
        self._masks = tuple(m & ~every_row for m in masks)
        self._cache.clear()
        self._redispatch_cache.clear()
        # Last: a reader that sees the entry fresh without the lock sees the new table too.
        self._stale = False

    def drop_caches(self) -> None:
        self._cache.clear()
        self._redispatch_cache.clear()

    # -- call side ---------------------------------------------------------------------------

    def dispatch_keyset(self, raw: int) -> int:
        """The key set after the fallthrough mask of the backend row of `raw` (post-TLS)."""
        if self._stale:
            self._refresh()
        row = (raw & BACKEND_MASK).bit_length()
        return raw & self._masks[row - 1 if row else 0]

    def _miss(self, raw: int) -> Callable:
        # Under the registry lock, so a rebuild cannot clear the cache between our reading
        # the table and storing what we derived from it (misses are rare: first call per set).
        with LOCK:
            fn = self._target(self.dispatch_keyset(raw), redispatch=False)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[raw] = fn
        return fn

    def _target(self, ks: int, redispatch: bool) -> Callable:
        slot = table_index(ks)
        res = self.table[slot] if self.table else Resolution(None, "missing")
        kernel = res.kernel
        if kernel is None:
            fn: Callable = functools.partial(_raise_missing, self, ks)
        elif res.rule == AMBIGUOUS:
            fn = functools.partial(_raise_ambiguous, self)
        elif kernel.fallthrough:
            fn = _raise_fallthrough
        elif kernel.boxed_fallback:
            below = getattr(kernel.fn, "redispatch_mask", None)
            if below is not None and not trace.ACTIVE:
                # A fallback that only redispatches below its key: go there directly (same
                # kernel, same key set; traces still show the hop).
                return self._target(ks & below, redispatch)
            fn = functools.partial(kernel.fn, self, DispatchKeySet.from_raw(ks))
        elif kernel.with_keyset:
            fn = functools.partial(kernel.fn, DispatchKeySet.from_raw(ks))
        elif getattr(kernel.fn, "below_mask", None) is not None:
            # A kernel that calls on below its own key (autograd's) gets, once per key set,
            # the kernel it would redispatch to, instead of redispatching on every call.
            fn = functools.partial(kernel.fn, self._target(ks & kernel.fn.below_mask, True))
        else:
            fn = kernel.fn
        if trace.ACTIVE:
            fn = _traced(self, fn, ks, slot, res, redispatch)
        return fn

    def redispatch(self, keyset: DispatchKeySet | int, *args: Any, **kwargs: Any) -> Any:
        """Call the kernel of the table slot `keyset` selects, as is (no TLS, no mask)."""
        raw = keyset if isinstance(keyset, int) else keyset.raw
        if kwargs:
            args = self.normalize(args, kwargs)
        fn = self._redispatch_cache.get(raw)
        if fn is None:
            with LOCK:
                fn = self._target(raw, redispatch=True)
                if len(self._redispatch_cache) >= _CACHE_LIMIT:
                    self._redispatch_cache.clear()
                self._redispatch_cache[raw] = fn
        return fn(*args)

    def _slow_call(self, args: tuple, kwargs: dict[str, Any]) -> Any:
        """`call` with keywords, missing defaults or extra arguments: bind, then dispatch."""
        while args and args[-1] is _UNSET:
            args = args[:-1]
        return self.call(*self.normalize(args, kwargs))

    def normalize(self, args: tuple, kwargs: dict[str, Any]) -> tuple:
        """Bind positional and keyword arguments to the schema; fill defaults."""
        schema = self.schema
        if schema is None:
            raise RuntimeError(f"Could not find schema for {self.name}.")
        arguments = schema.arguments
        if len(args) > len(arguments):
            raise TypeError(
                f"{self.name}() takes {len(arguments)} arguments but {len(args)} were given"
            )
        values = list(args)
        for arg in arguments[len(args) :]:
            if arg.name in kwargs:
                values.append(kwargs[arg.name])
            elif arg.default is not NO_DEFAULT:
                values.append(arg.default)
            else:
                raise TypeError(f"{self.name}() missing required argument '{arg.name}'")
        unknown = set(kwargs) - {a.name for a in arguments[len(args) :]}
        if unknown:
            name = sorted(unknown)[0]
            if name in self._arg_names:
                raise TypeError(f"{self.name}() got multiple values for argument '{name}'")
            raise TypeError(f"{self.name}() got an unexpected keyword argument '{name}'")
        return tuple(values)

    def bad_argument(self, args: tuple) -> None:
        """Raise the TypeError for a non-tensor value where the schema wants a tensor."""
        for i, kind in self._positions:
            if i >= len(args):
                continue
            value = args[i]
            items = value if kind == "list" else [value]
            if kind == "list" and not isinstance(value, (list, tuple)):
                items = [value]
            for item in items:
                if item is None and kind != "tensor":
                    continue
                if not isinstance(getattr(item, "_keyset", None), int):
                    arg = self.schema.arguments[i]
                    raise TypeError(
                        f"{self.name}(): argument '{arg.name}' (position {i}) must be "
                        f"{arg.type}, not {type(item).__name__}"
                    ) from None
        raise TypeError(f"{self.name}(): invalid arguments") from None

    def _undefined_call(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"Could not find schema for {self.name}."
            + (
                " But we found an implementation; did you forget to def() the operator?"
                if any(self.kernels.values())
                else ""
            )
        )


def _tensor_positions(schema: Any) -> tuple[tuple[int, str], ...]:
    positions = []
    for i in schema.tensor_arg_indices:
        t = schema.arguments[i].type
        kind = "list" if t.is_list() else "optional" if t.is_optional() else "tensor"
        positions.append((i, kind))
    return tuple(positions)


_UNSET = object()  # marks a parameter of a generated `call` that the caller did not pass
_CALL_CODE: dict[str, Any] = {}  # source of a generated `call` -> its compiled module code


def _build_call(entry: OperatorEntry) -> Callable[..., Any]:
    """Generate `call` specialised to the schema: one parameter per argument, the tensor
    positions read inline, then one dict lookup and the kernel call (see the module note)."""
    n = len(entry.schema.arguments)
    params = [f"_a{i}" for i in range(n)]
    pre: list[str] = []
    parts: list[str] = []
    for i, kind in entry._positions:
        if kind == "list":
            pre += [
                f"        k{i} = 0",
                f"        for t in _a{i}:",
                "            if t is not None:",
                f"                k{i} |= t._keyset",
            ]
            parts.append(f"k{i}")
        elif kind == "optional":
            parts.append(f"(0 if _a{i} is None else _a{i}._keyset)")
        else:
            parts.append(f"_a{i}._keyset")
    signature = ", ".join([f"{p}=_UNSET" for p in params] + ["*rest", "**kwargs"])
    last_missing = f" or _a{n - 1} is _UNSET" if n else ""
    args = ", ".join(params)
    lines = [
        f"def call({signature}):",
        f"    if kwargs or rest{last_missing}:",
        f"        return slow(({args}{',' if n == 1 else ''}) + rest, kwargs)",
        "    try:",
        *pre,
        f"        raw = {' | '.join(parts) if parts else '0'}",
        "    except (AttributeError, TypeError):",
        f"        bad_argument(({args}{',' if n == 1 else ''}))",
        "    if nondefault:",
        "        raw = (raw | state.included) & state.keep",
        "    else:",
        "        raw = (raw | DEFAULT_INCLUDED) & DEFAULT_KEEP",
        "    try:",
        "        fn = cache[raw]",
        "    except KeyError:",
        "        fn = miss(raw)",
        f"    return fn({args})",
    ]
    namespace: dict[str, Any] = {
        "_UNSET": _UNSET,
        "slow": entry._slow_call,
        "bad_argument": entry.bad_argument,
        "state": STATE,
        "nondefault": NONDEFAULT,
        "DEFAULT_INCLUDED": DEFAULT_INCLUDED,
        "DEFAULT_KEEP": DEFAULT_KEEP,
        "cache": entry._cache,
        "miss": entry._miss,
    }
    source = "\n".join(lines)
    code = _CALL_CODE.get(source)
    if code is None:  # schemas of one shape share the compiled code (import compiles ~40)
        code = _CALL_CODE[source] = compile(source, "<pyaten call>", "exec")
    exec(code, namespace)
    call = namespace["call"]
    # Tracebacks and profiles name the operator.
    call.__code__ = call.__code__.replace(co_filename=f"<pyaten call {entry.name}>")
    call.__qualname__ = call.__name__ = entry.name.replace("::", "_").replace(".", "_")
    call.__doc__ = f"Dispatch {entry.schema}"
    return call


def _raise_missing(entry: OperatorEntry, ks: int, *args: Any) -> Any:
    raise errors.missing_kernel_error(entry, ks, args, (STATE.included, STATE.excluded))


def _raise_ambiguous(entry: OperatorEntry, *args: Any) -> Any:
    raise RuntimeError(errors.ambiguous_autogradother_message(entry))


def _raise_fallthrough(*args: Any) -> Any:
    raise RuntimeError(errors.FALLTHROUGH_EXECUTED)


def _kernel_name(kernel: Kernel | None) -> str:
    if kernel is None:
        return "(none)"
    if kernel.fallthrough:
        return "fallthrough_kernel"
    fn = kernel.fn
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _traced(
    entry: OperatorEntry, fn: Callable, ks: int, slot: int, res: Resolution, redispatch: bool
) -> Callable:
    key = display_name(RUNTIME_KEYS[slot]) if slot < TABLE_SIZE else "?"
    keyset_text = str(DispatchKeySet.from_raw(ks))
    debug = res.kernel.debug if res.kernel is not None else ""
    site = debug[len("registered at ") :] if debug.startswith("registered at ") else debug

    def traced(*args: Any) -> Any:
        arguments = []
        if entry.schema is not None:
            for i, kind in entry._positions:
                if i < len(args):
                    value = args[i]
                    items = value if kind == "list" and value is not None else [value]
                    raw = 0
                    for item in items:
                        raw |= getattr(item, "_keyset", 0) if item is not None else 0
                    arguments.append(
                        {
                            "name": entry.schema.arguments[i].name,
                            "keys": str(DispatchKeySet.from_raw(raw)),
                        }
                    )
        node = trace.Node(
            operator=entry.name,
            arguments=arguments,
            tls_included=str(DispatchKeySet.from_raw(STATE.included)),
            tls_excluded=str(DispatchKeySet.from_raw(STATE.excluded)),
            keyset=keyset_text,
            key=key,
            rule=res.rule,
            kernel=_kernel_name(res.kernel),
            registered_at=site,
            redispatch=redispatch,
        )
        return trace.run_traced(node, fn, args, {})

    return traced
