"""Recording dispatch decisions: `with pyaten.dispatch.trace() as t: ...; print(t)`.

While a trace is active every operator call and redispatch becomes a node: the operator,
each tensor argument's keys, the thread-local include/exclude sets, the call's key set, the
key chosen, the rule that filled that table entry, the kernel and where it was registered,
the result or the exception. Redispatches nest under the call that made them. Other layers
attach notes to the node being dispatched with `trace.note(kind, **fields)`, or to the node
of the next call with `trace.note_next(kind, **fields)`.

When no trace is active the call path pays nothing: operator entries keep a cache from key
sets to kernels, and that cache holds tracing wrappers only while `ACTIVE` is true (the
caches are dropped whenever tracing starts or stops).
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

ACTIVE = False  # module global, cheap to test: `if trace.ACTIVE: trace.note(...)`

# Functions run when ACTIVE flips; the operator registry adds one that drops call caches.
_ON_TOGGLE: list[Callable[[], None]] = []
_LOCK = threading.Lock()
_RECORDERS: list[Trace] = []


class _ThreadStack(threading.local):
    nodes: list[Node] | None = None
    pending: list[dict[str, Any]] | None = None  # notes for the next node (note_next)


_STACK = _ThreadStack()

# Set by a tool above dispatch (pyaten.utils.explain) to record a call's return value as a
# `result` note at return time, before later calls can change it in place; None: repr only.
describe_result: Callable[[Any], dict[str, Any]] | None = None

# Set by the profiler (pyaten/profiler) through `set_call_hook`: called as `hook(node, args)`
# when a node starts; what it returns (if not None) is called with the call's result (None
# if it raised) when the call ends.
_CALL_HOOK: Callable[[Node, tuple], Callable[[Any], None] | None] | None = None


@dataclass(slots=True)
class Node:
    """One dispatch decision."""

    operator: str
    arguments: list[dict[str, str]]
    tls_included: str
    tls_excluded: str
    keyset: str
    key: str
    rule: str
    kernel: str
    registered_at: str
    redispatch: bool = False
    notes: list[dict[str, Any]] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)
    result: str | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "operator": self.operator,
            "redispatch": self.redispatch,
            "arguments": [dict(a) for a in self.arguments],
            "tls_included": self.tls_included,
            "tls_excluded": self.tls_excluded,
            "keyset": self.keyset,
            "key": self.key,
            "rule": self.rule,
            "kernel": self.kernel,
            "registered_at": self.registered_at,
            "notes": [dict(n) for n in self.notes],
            "result": self.result,
            "error": self.error,
            "children": [c.as_dict() for c in self.children],
        }

    def lines(self, depth: int = 0) -> list[str]:
        pad = "  " * depth
        verb = "redispatch" if self.redispatch else "call"
        out = [f"{pad}{verb} {self.operator} -> {self.key} [{self.rule}] {self.kernel}"]
        if self.registered_at:
            out.append(f"{pad}  registered at {self.registered_at}")
        for arg in self.arguments:
            out.append(f"{pad}  arg {arg['name']}: {arg['keys']}")
        if not self.redispatch:
            out.append(f"{pad}  tls included: {self.tls_included}")
            out.append(f"{pad}  tls excluded: {self.tls_excluded}")
        out.append(f"{pad}  keyset: {self.keyset}")
        for n in self.notes:
            fields = ", ".join(f"{k}={v}" for k, v in n.items() if k != "kind")
            out.append(f"{pad}  note {n['kind']}: {fields}")
        for child in self.children:
            out += child.lines(depth + 1)
        if self.error is not None:
            out.append(f"{pad}  raised {self.error}")
        else:
            out.append(f"{pad}  returned {self.result}")
        return out


class Trace:
    """A context manager collecting the dispatch nodes of calls made inside it."""

    def __init__(self, record_results: bool = True) -> None:
        self.nodes: list[Node] = []
        self._thread = threading.get_ident()
        # Whether nodes keep their results' text (repr and `describe_result`); a recorder
        # that only times calls (the profiler) turns it off: the text is most of the cost.
        self.record_results = record_results

    def __enter__(self) -> Trace:
        _start(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _stop(self)

    def as_dicts(self) -> list[dict[str, Any]]:
        return [n.as_dict() for n in self.nodes]

    def __str__(self) -> str:
        lines: list[str] = []
        for node in self.nodes:
            lines += node.lines()
        return "\n".join(lines)

    def print(self) -> None:
        print(str(self))


def trace() -> Trace:
    """Record every dispatch decision made in this thread inside the `with` block."""
    return Trace()


def _set_active(value: bool) -> None:
    global ACTIVE
    if ACTIVE != value:
        ACTIVE = value
        for hook in list(_ON_TOGGLE):
            hook()


_WANT_RESULTS = [True]  # any active recorder records results (see Trace.record_results)


def _start(recorder: Trace) -> None:
    with _LOCK:
        _RECORDERS.append(recorder)
        _WANT_RESULTS[0] = any(r.record_results for r in _RECORDERS)
        _set_active(True)


def _stop(recorder: Trace) -> None:
    with _LOCK:
        if recorder in _RECORDERS:
            _RECORDERS.remove(recorder)
        _WANT_RESULTS[0] = not _RECORDERS or any(r.record_results for r in _RECORDERS)
        _set_active(bool(_RECORDERS))


def note(kind: str, **fields: Any) -> None:
    """Attach a note to the node of the operator call being dispatched (no-op when off)."""
    if not ACTIVE:
        return
    stack = _STACK.nodes
    if stack:
        stack[-1].notes.append({"kind": kind, **fields})


def note_next(kind: str, **fields: Any) -> None:
    """Attach a note to the node of the next operator call made in this thread (no-op when
    off). For layers that run before the dispatcher makes the node, like the Python bindings;
    call `clear_next()` afterwards so a call that never reached the dispatcher leaves none."""
    if not ACTIVE:
        return
    pending = _STACK.pending
    if pending is None:
        _STACK.pending = [{"kind": kind, **fields}]
    else:
        pending.append({"kind": kind, **fields})


def clear_next() -> None:
    """Drop the notes `note_next` left for a call that did not happen."""
    _STACK.pending = None


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 100 else text[:97] + "..."


def _short(value: Any) -> str:
    return _clip(repr(value))


def set_call_hook(
    hook: Callable[[Node, tuple], Callable[[Any], None] | None] | None,
) -> Callable[[Node, tuple], Callable[[Any], None] | None] | None:
    """Install `hook(node, args) -> on_end` around every traced call (None removes it);
    returns the hook it replaces. The profiler times calls with it."""
    global _CALL_HOOK
    previous, _CALL_HOOK = _CALL_HOOK, hook
    return previous


def run_traced(node: Node, fn: Callable, args: tuple, kwargs: dict) -> Any:
    """Run `fn(*args, **kwargs)` as `node`: nested calls become its children."""
    state = _STACK
    stack = state.nodes
    if stack is None:
        stack = state.nodes = []
    if state.pending is not None:
        node.notes[:0] = state.pending
        state.pending = None
    if stack:
        stack[-1].children.append(node)
    else:
        ident = threading.get_ident()
        for recorder in list(_RECORDERS):
            if recorder._thread == ident:
                recorder.nodes.append(node)
    stack.append(node)
    on_end = _CALL_HOOK(node, args) if _CALL_HOOK is not None else None
    result = None
    try:
        result = fn(*args, **kwargs)
    except BaseException as exc:
        first_line = str(exc).split("\n", 1)[0]
        node.error = f"{type(exc).__name__}: {_clip(first_line)}"
        raise
    finally:
        if on_end is not None:
            on_end(result)
        stack.pop()
    if _WANT_RESULTS[0]:
        node.result = _short(result)
        if describe_result is not None:
            node.notes.append({"kind": "result", **describe_result(result)})
    return result


class _CallableModule(types.ModuleType):
    """Lets `pyaten.dispatch.trace()` work while `pyaten.dispatch.trace.ACTIVE` stays a module
    global (the function and the module share one public name)."""

    def __call__(self) -> Trace:
        return Trace()


sys.modules[__name__].__class__ = _CallableModule
