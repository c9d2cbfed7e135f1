"""`pyaten.autograd.profiler.profile`: the older profiler API, a context manager that records
while it is open and then answers `key_averages()`, `table()`, `export_chrome_trace()`."""

from __future__ import annotations

from typing import Any

from pyaten.profiler._recorder import RawEvent, Session
from pyaten.profiler.events import EventList, FunctionEvent, FunctionEventAvg


def to_function_events(raw: list[RawEvent]) -> EventList:
    """The recorded ranges as `FunctionEvent`s (times in microseconds), parents linked."""
    by_id: dict[int, FunctionEvent] = {}
    events = []
    for r in sorted(raw, key=lambda r: (r.start_ns, r.id)):
        # PyTorch lists each `ProfilerStep#N` as `ProfilerStep*` (its trace keeps the number)
        name = "ProfilerStep*" if r.name.startswith("ProfilerStep#") else r.name
        event = FunctionEvent(
            r.id, name, r.thread, r.start_ns / 1000.0, r.end_ns / 1000.0,
            input_shapes=r.input_shapes, stack=r.stack, sequence_nr=r.sequence_nr,
            is_user_annotation=r.kind == "user",
        )
        event.self_cpu_memory_usage = r.self_memory
        event.trace_name = r.name
        by_id[r.id] = event
        if r.parent is not None and r.parent.id in by_id:
            parent = by_id[r.parent.id]
            event.cpu_parent = parent
            parent.cpu_children.append(event)
        events.append(event)
    return EventList(events)


class profile:  # noqa: N801 (PyTorch's name)
    """Record operator calls, autograd nodes and `record_function` ranges while open."""

    def __init__(
        self,
        enabled: bool = True,
        *,
        use_cuda: bool = False,
        use_device: str | None = None,
        record_shapes: bool = False,
        with_flops: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_modules: bool = False,
        use_kineto: bool = False,
        use_cpu: bool = True,
        experimental_config: Any = None,
        acc_events: bool = False,
        custom_trace_id_callback: Any = None,
    ) -> None:
        if use_cuda:
            raise RuntimeError("Requested use_cuda=True but CUDA is not available in pyaten")
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.use_cpu = use_cpu
        self.entered = False
        self._session: Session | None = None
        self._function_events: EventList | None = None

    def __enter__(self) -> profile:
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._session = Session(self.record_shapes, self.profile_memory, self.with_stack)
        self._session.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.enabled or self._session is None:
            return
        self._session.stop()
        self._function_events = to_function_events(self._session.events)
        self._function_events._profile_memory = self.profile_memory
        self.entered = False

    def _check_finish(self) -> EventList:
        if self._function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self._function_events

    @property
    def function_events(self) -> EventList:
        return self._check_finish()

    def events(self) -> EventList:
        return self._check_finish()

    def key_averages(
        self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
        group_by_overload_name: bool = False,
    ) -> EventList:
        return self._check_finish().key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self) -> FunctionEventAvg:
        return self._check_finish().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self._check_finish().self_cpu_time_total

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs: Any) -> str:
        return self._check_finish().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path: str) -> None:
        self._check_finish().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write "frame;frame;...;event value" lines (flame-graph input), outermost first."""
        if not self.with_stack:
            raise RuntimeError("export_stacks() requires with_stack=True")
        with open(path, "w") as f:
            for event in self._check_finish():
                if event.stack:
                    frames = ";".join(reversed(event.stack))
                    f.write(f"{frames};{event.name} {int(getattr(event, metric))}\n")

    def __str__(self) -> str:
        return str(self._check_finish())
