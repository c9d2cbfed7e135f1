"""The process-wide registry: operators by name, global backend fallbacks, registration handles.

Every change happens under one re-entrant lock and ends with the affected tables recomputed;
calls never take the lock (they read the tables and caches that a change replaces or clears).
Each registration returns a `RegistrationHandle` whose `remove()` undoes exactly that
registration, as PyTorch's `RegistrationHandleRAII` does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pyaten.dispatch import trace
from pyaten.dispatch.keys import (
    KEY_BY_NAME,
    RUNTIME_KEYS,
    TABLE_SIZE,
    DispatchKey,
    display_name,
)
from pyaten.dispatch.operator import LOCK, OperatorEntry
from pyaten.dispatch.rules import CIA, Kernel, alias_slots

_OPERATORS: dict[str, OperatorEntry] = {}
_FALLBACKS: list[Kernel | None] = [None] * TABLE_SIZE
_AUTOGRAD_PRIVATEUSE1 = RUNTIME_KEYS.index(KEY_BY_NAME["AutogradPrivateUse1"])
_NO_OVERRIDE_WARNING = {KEY_BY_NAME["Meta"], KEY_BY_NAME["MTIA"]}
_override_warned = False
# Entries whose tables wait for the end of a `batch()` (None: rebuild at once).
_PENDING: dict[OperatorEntry, None] | None = None


class RegistrationHandle:
    """Undoes one registration when `remove()` is called (idempotent)."""

    __slots__ = ("_undo", "description")

    def __init__(self, undo: Callable[[], None], description: str) -> None:
        self._undo: Callable[[], None] | None = undo
        self.description = description

    def remove(self) -> None:
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()

    @property
    def active(self) -> bool:
        return self._undo is not None

    def __repr__(self) -> str:
        state = "active" if self._undo is not None else "removed"
        return f"<RegistrationHandle {self.description} ({state})>"


def qualified_name(schema: Any) -> str:
    return str(schema.name)


def _entry(name: str) -> OperatorEntry:
    entry = _OPERATORS.get(name)
    if entry is None:
        entry = _OPERATORS[name] = OperatorEntry(name)
        _rebuild(entry)
    return entry


def _rebuild(entry: OperatorEntry) -> None:
    # Called with LOCK held; inside `batch()` the work waits for the block's end.
    if _PENDING is None:
        entry.rebuild(_FALLBACKS)
    else:
        _PENDING[entry] = None


@contextlib.contextmanager
def batch() -> Iterator[None]:
    """Register many kernels; each touched operator's table is computed once, when it is
    first needed after the block (import registers ~4,500 kernels, and a program calls a
    few hundred operators: see operator.py's Note: nothing per operator is built ...).
    Holds the registry lock for the whole block, so no other thread registers meanwhile."""
    global _PENDING
    with LOCK:
        if _PENDING is not None:  # nested: the outer block rebuilds
            yield
            return
        _PENDING = {}
        try:
            yield
        finally:
            pending, _PENDING = _PENDING, None
            for entry in pending:  # computed on first use (Note: nothing per operator ...)
                entry.mark_stale(_FALLBACKS)


def _forget_if_empty(entry: OperatorEntry) -> None:
    if not entry.defined and not any(entry.kernels.values()):
        _OPERATORS.pop(entry.name, None)


# Counts definitions and their undos: what was derived from the set of defined operators (an
# overload packet's binding) is current while the count has not moved.
DEFINITIONS = [0]


def get_operator(qualified_name: str) -> OperatorEntry | None:
    """The defined operator `ns::name` or `ns::name.overload`, or None."""
    entry = _OPERATORS.get(qualified_name)
    if entry is None or not entry.defined:
        return None
    return entry


def find_operator(qualified_name: str) -> OperatorEntry | None:
    """The entry even when it only has (dangling) kernels and no schema yet."""
    return _OPERATORS.get(qualified_name)


def list_operators(namespace: str | None = None) -> list[str]:
    """Qualified names of defined operators, optionally only those of one namespace."""
    names = [n for n, e in _OPERATORS.items() if e.defined]
    if namespace is not None:
        names = [n for n in names if n.split("::", 1)[0] == namespace]
    return sorted(names)


def find_dangling_impls() -> list[str]:
    """Operators that have kernels but no schema."""
    return sorted(n for n, e in _OPERATORS.items() if not e.defined and any(e.kernels.values()))


def define(schema: Any, debug: str = "", tags: tuple[str, ...] = ()) -> RegistrationHandle:
    """Register a schema (namespace required). RuntimeError if that name is already defined.
    `schema` may be an `UnparsedSchema`, parsed when first read (operator.py's Note: nothing
    per operator is built before it is needed)."""
    name = qualified_name(schema)
    if "::" not in name:
        raise ValueError(f"define: schema {schema} has no namespace")
    with LOCK:
        entry = _entry(name)
        if entry.defined:
            raise RuntimeError(
                f"Tried to register an operator ({schema}) with the same name and overload "
                "name multiple times. Each overload's schema should only be registered with a "
                f"single call to def(). Duplicate registration: {debug}. Original registration: "
                f"{entry.schema_debug}"
            )
        entry.set_schema(schema, debug, tuple(tags))
        _rebuild(entry)
        DEFINITIONS[0] += 1

    def undo() -> None:
        with LOCK:
            if entry._defined_by is schema:
                entry.clear_schema()
                _rebuild(entry)
                _forget_if_empty(entry)
                DEFINITIONS[0] += 1

    return RegistrationHandle(undo, f"def {name}")


def register_kernel(
    name: str,
    key: DispatchKey,
    fn: Callable | None,
    *,
    fallthrough: bool = False,
    with_keyset: bool = False,
    debug: str = "no debug info",
) -> RegistrationHandle:
    """Push a kernel onto `name`'s stack for `key` (newest wins); the handle pops exactly it."""
    global _override_warned
    kernel = Kernel(fn, key, fallthrough=fallthrough, with_keyset=with_keyset, debug=debug)
    with LOCK:
        entry = _entry(name)
        if entry._deferred is not None:  # those deferred at this key go first
            _run_deferred(entry, key)
        stack = entry._kernels.setdefault(key, [])
        if stack and not _override_warned and key not in _NO_OVERRIDE_WARNING:
            _override_warned = True
            schema = entry.schema if entry.schema is not None else name
            warnings.warn(
                "Warning only once for all operators,  other operators may also be overridden.\n"
                "  Overriding a previously registered kernel for the same operator and the same "
                "dispatch key\n"
                f"  operator: {schema}\n"
                f"    {entry.schema_debug}\n"
                f"  dispatch key: {display_name(key)}\n"
                f"  previous kernel: {stack[-1].debug}\n"
                f"       new kernel: {debug}",
                UserWarning,
                stacklevel=3,
            )
        stack.append(kernel)
        _rebuild(entry)

    def undo() -> None:
        with LOCK:
            stack = entry.kernels.get(key, [])
            for i in range(len(stack) - 1, -1, -1):
                if stack[i] is kernel:
                    del stack[i]
                    break
            if not stack:
                entry.kernels.pop(key, None)
            _rebuild(entry)
            _forget_if_empty(entry)

    return RegistrationHandle(undo, f"impl {name} at {key.name}")


# Registrations waiting for their operator's first use, by operator name: (the keys each one
# registers, the function that registers them), in the order they were deferred.
_DEFERRED: dict[str, list[tuple[frozenset[DispatchKey], Callable[[], None]]]] = {}
_RUNNING_DEFERRED = [False]


def defer_kernels(name: str, keys: Iterable[DispatchKey], register: Callable[[], None]) -> None:
    """Run `register()`, which registers kernels for the operator `name` at `keys`, when the
    operator's kernels are first read (its table computed, `dump_table`) or another kernel is
    registered for it at one of `keys`: import declares ~5,000 kernels and a program uses a
    few hundred operators (operator.py's Note: nothing per operator is built before it is
    needed). Each key's stack ends up in the order of eager registration."""
    with LOCK:
        entry = _entry(name)
        _DEFERRED.setdefault(name, []).append((frozenset(keys), register))
        entry._deferred = _run_deferred
        entry.mark_stale(_FALLBACKS)


def _run_deferred(entry: OperatorEntry, key: DispatchKey | None = None) -> None:
    """Run the entry's deferred registrations: all of them, or (`key`) those up to the last
    one that registers at `key`. With LOCK held; clears `entry._deferred` when none wait."""
    waiting = _DEFERRED.get(entry.name)
    if not waiting or _RUNNING_DEFERRED[0]:
        return
    upto = len(waiting)
    if key is not None:
        upto = next((i + 1 for i in range(len(waiting) - 1, -1, -1) if key in waiting[i][0]), 0)
        if not upto:
            return
    run, rest = waiting[:upto], waiting[upto:]
    if rest:
        _DEFERRED[entry.name] = rest
        entry._deferred = _run_deferred
    else:
        del _DEFERRED[entry.name]
        entry._deferred = None
    _RUNNING_DEFERRED[0] = True  # they register in their own order, not each other's
    try:
        with batch():
            for _, register in run:
                register()
    finally:
        _RUNNING_DEFERRED[0] = False


def fallback_slots(key: DispatchKey) -> list[int]:
    """Slots a fallback under `key` fills: the key itself, or every runtime key of an alias."""
    return sorted(alias_slots(key))


def register_fallback(
    key: DispatchKey,
    fn: Callable | None,
    *,
    fallthrough: bool = False,
    debug: str = "no debug info",
    handles: list[RegistrationHandle] | None = None,
) -> RegistrationHandle:
    """Register a boxed fallback `fn(op, keyset, *args)` for every operator on `key`.

    An alias key registers one fallback per runtime key it covers, in table order, stopping
    at the first key that already has one (those registered so far stay, as in PyTorch, and
    the handle, appended to `handles` first, still removes them).
    """
    done: list[int] = []
    handle = RegistrationHandle(lambda: _clear_fallbacks(done), f"fallback {key.name}")
    if handles is not None:
        handles.append(handle)
    with LOCK:
        for slot in fallback_slots(key):
            previous = _FALLBACKS[slot]
            if previous is not None and slot != _AUTOGRAD_PRIVATEUSE1:
                _rebuild_all()
                raise RuntimeError(
                    "Tried to register multiple backend fallbacks for the same dispatch key "
                    f"{display_name(RUNTIME_KEYS[slot])}; previous registration "
                    f"{previous.debug}, new registration {debug}"
                )
            _FALLBACKS[slot] = Kernel(
                fn,
                RUNTIME_KEYS[slot],
                fallthrough=fallthrough,
                debug=debug,
                boxed_fallback=True,
            )
            done.append(slot)
        _rebuild_all()
    return handle


def _clear_fallbacks(slots: list[int]) -> None:
    # Like PyTorch, deregistering clears the slot; an overridden fallback is not restored.
    with LOCK:
        for slot in slots:
            _FALLBACKS[slot] = None
        _rebuild_all()


def _rebuild_all() -> None:
    for entry in _OPERATORS.values():
        entry.mark_stale(_FALLBACKS)


def global_fallback(slot: int) -> Kernel | None:
    return _FALLBACKS[slot]


def _drop_all_caches() -> None:
    with LOCK:
        for entry in _OPERATORS.values():
            entry.drop_caches()


trace._ON_TOGGLE.append(_drop_all_caches)


def with_namespace(schema: Any, namespace: str) -> Any:
    """The schema with `namespace` filled in when it has none."""
    if schema.name.namespace:
        return schema
    return dataclasses.replace(schema, name=dataclasses.replace(schema.name, namespace=namespace))


CATCH_ALL = CIA  # registrations under "" / Undefined land here
