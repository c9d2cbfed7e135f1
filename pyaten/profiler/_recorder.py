"""The profiler's recorder: one event per operator call, autograd node and `record_function`.

Note: where the events come from
    PyTorch records an event for each operator call at the top of dispatch; redispatches
    below it (Autograd -> CPU) are not events of their own. pyaten's dispatcher already makes
    one trace node per call and per redispatch (pyaten/dispatch/trace.py), so while a
    profiler records, a trace recorder is active that keeps no nodes, and the trace's call
    hook (`trace.set_call_hook`) opens an event when a node that is not a redispatch starts
    and closes it when its call returns. The autograd engine runs each graph node through
    `engine.node_hook`, which makes PyTorch's pair of events
    `autograd::engine::evaluate_function: AddmmBackward0` > `AddmmBackward0`, and
    `record_function` ranges (the optimizers' `Optimizer.step#Adam.step`) open and close
    events on the same per-thread stack, so every event knows its parent.
    Times are `time.perf_counter_ns` read as the call starts and returns: an event's total
    includes the bookkeeping of the calls below it, as PyTorch's does.

Memory (`profile_memory=True`) is counted by storage: the bytes of a storage an operator
returns that no earlier call returned are that event's allocation; when such a storage is
freed its bytes are taken off the event running at that moment (as PyTorch shows frees as
negative self memory).
"""

from __future__ import annotations

import itertools
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.dispatch import trace as _trace

_clock = time.perf_counter_ns
_ids = itertools.count()


class RawEvent:
    """One recorded range: an operator call, an autograd node, or a user annotation."""

    __slots__ = (
        "id", "name", "kind", "start_ns", "end_ns", "parent", "children", "thread",
        "input_shapes", "stack", "self_memory", "sequence_nr",
    )

    def __init__(self, name: str, kind: str, parent: RawEvent | None, thread: int) -> None:
        self.id = next(_ids)
        self.name = name
        self.kind = kind  # "op", "autograd" or "user"
        self.parent = parent
        self.children: list[RawEvent] = []
        self.thread = thread
        self.input_shapes: list | None = None
        self.stack: list[str] | None = None
        self.self_memory = 0
        self.sequence_nr = -1
        self.start_ns = 0
        self.end_ns = 0


class _Stack(threading.local):
    open: list[RawEvent]

    def __init__(self) -> None:
        self.open = []


class _Discard(list):
    """A trace recorder's node list that keeps nothing (the profiler has its own events)."""

    def append(self, node: Any) -> None:
        pass


class Session:
    """What one profiler run records; at most one is recording at a time."""

    def __init__(self, record_shapes: bool, profile_memory: bool, with_stack: bool) -> None:
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.events: list[RawEvent] = []
        self._stack = _Stack()
        self._trace: Any = None
        self._seen_storages: dict[int, weakref.ref] = {}

    # --- opening and closing events ----------------------------------------------------

    def open(self, name: str, kind: str) -> RawEvent:
        stack = self._stack.open
        event = RawEvent(name, kind, stack[-1] if stack else None, threading.get_ident())
        if event.parent is not None:
            event.parent.children.append(event)
        if self.with_stack:
            event.stack = _user_frames()
        self.events.append(event)
        stack.append(event)
        event.start_ns = _clock()
        return event

    def close(self, event: RawEvent) -> None:
        event.end_ns = now = _clock()
        stack = self._stack.open
        if stack and stack[-1] is event:
            stack.pop()
        elif event in stack:  # ranges left open inside it (an exception skipped their end)
            while stack[-1] is not event:
                stack.pop().end_ns = now
            stack.pop()

    # --- the hooks --------------------------------------------------------------------------

    def _on_call(self, node: _trace.Node, args: tuple) -> Callable[[Any], None] | None:
        if node.redispatch:
            return None
        event = self.open(_event_name(node.operator), "op")
        if self.record_shapes:
            event.input_shapes = [_shape_of(a) for a in args]
        if self.profile_memory:
            inputs = {id(a._storage) for a in args if isinstance(a, Tensor)}

            def on_end(result: Any) -> None:
                self.close(event)
                self._count_new_storages(event, result, inputs)

            return on_end
        return lambda result: self.close(event)

    # the autograd engine's `node_hook`: PyTorch's two events per graph node
    def begin(self, node: Any) -> None:
        name = node.name()
        self.open(f"autograd::engine::evaluate_function: {name}", "autograd")
        inner = self.open(name, "autograd")
        inner.sequence_nr = getattr(node, "_sequence_nr", -1)

    def called(self, node: Any) -> None:
        stack = self._stack.open
        if stack:
            self.close(stack[-1])

    end = called

    def _count_new_storages(self, event: RawEvent, result: Any, inputs: set[int]) -> None:
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        for out in outputs:
            if not isinstance(out, Tensor):
                continue
            storage = out._storage
            key = id(storage)
            if key in inputs or key in self._seen_storages:
                continue
            try:
                self._seen_storages[key] = weakref.ref(storage, self._freed(key, storage.nbytes))
            except TypeError:
                continue
            event.self_memory += storage.nbytes

    def _freed(self, key: int, nbytes: int) -> Callable[[Any], None]:
        def callback(_ref: Any) -> None:
            self._seen_storages.pop(key, None)
            stack = self._stack.open
            if stack and _ACTIVE is self:
                stack[-1].self_memory -= nbytes

        return callback

    # --- starting and stopping --------------------------------------------------------------

    def start(self) -> None:
        global _ACTIVE
        from pyaten.autograd import engine

        if _ACTIVE is not None:
            raise RuntimeError("Profiler is already enabled on this thread")
        _ACTIVE = self
        self._trace = _trace.Trace(record_results=False)  # timing only: no result text
        self._trace.nodes = _Discard()
        self._previous_hook = _trace.set_call_hook(self._on_call)
        engine.node_hook = self
        self._trace.__enter__()

    def stop(self) -> None:
        global _ACTIVE
        from pyaten.autograd import engine

        if _ACTIVE is not self:
            return
        self._trace.__exit__(None, None, None)
        _trace.set_call_hook(self._previous_hook)
        engine.node_hook = None
        _ACTIVE = None
        now = _clock()
        for event in self._stack.open:  # ranges still open when recording stops
            event.end_ns = now
        self._stack.open.clear()


_ACTIVE: Session | None = None


def active() -> Session | None:
    """The recording session, or None (a `record_function` outside one records nothing)."""
    return _ACTIVE


def _event_name(operator: str) -> str:
    """PyTorch's event name: the operator without its overload (`aten::add_.Tensor` ->
    `aten::add_`)."""
    namespace, sep, rest = operator.partition("::")
    return f"{namespace}{sep}{rest.split('.', 1)[0]}" if sep else operator.split(".", 1)[0]


def _shape_of(value: Any) -> list:
    if isinstance(value, Tensor):
        return list(value._sizes)
    return []  # other arguments, tensor lists included, show as [] (as PyTorch's do)


_PACKAGE_DIR = __file__.rsplit("/pyaten/", 1)[0] + "/pyaten/"


def _user_frames() -> list[str]:
    """The Python stack outside pyaten, innermost first, as `file(line): function`."""
    frames = []
    for frame in reversed(traceback.extract_stack()):
        if frame.filename.startswith(_PACKAGE_DIR):
            continue
        frames.append(f"{frame.filename}({frame.lineno}): {frame.name}")
    return frames


class record_function:  # noqa: N801 (PyTorch's name)
    """Mark a range of code as an event named `name` in the profiler's results; a context
    manager or a decorator. Outside a profiler it records nothing."""

    def __init__(self, name: str, args: str | None = None) -> None:
        if not isinstance(name, str):
            raise TypeError(
                f"record_function(): argument 'name' must be str, not {type(name).__name__}"
            )
        self.name = name
        self.args = args
        self._event: RawEvent | None = None
        self._session: Session | None = None

    def __enter__(self) -> record_function:
        session = _ACTIVE
        if session is not None:
            self._session = session
            self._event = session.open(self.name, "user")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._event is not None and self._session is not None:
            self._session.close(self._event)
        self._event = self._session = None

    def __call__(self, fn: Callable) -> Callable:
        import functools

        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapped
