"""The profiler's results: `FunctionEvent`s, their averages, and the table PyTorch prints.

`EventList.table()` lays its columns out as PyTorch 2.13's `key_averages().table()` does:
the name column as wide as the longest name plus 4 (at most 55, longer names cut with
"..."), 12-character number columns two spaces apart, "Input Shapes" when shapes were
recorded, "CPU Mem"/"Self CPU Mem" when memory was, "Source Location" when stacks were, and
the "Self CPU time total" line under it.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable
from typing import Any

_SORT_KEYS = (
    "cpu_time_total", "self_cpu_time_total", "cpu_time", "count", "cpu_memory_usage",
    "self_cpu_memory_usage",
)


def format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def format_share(time_us: float, total_us: float) -> str:
    return "NaN" if total_us == 0 else f"{time_us * 100.0 / total_us:.2f}%"


def format_memory(nbytes: int) -> str:
    for unit, size in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


class FunctionEvent:
    """One recorded event (PyTorch's `torch.autograd.profiler_util.FunctionEvent`)."""

    def __init__(
        self, id: int, name: str, thread: int, start_us: float, end_us: float,
        input_shapes: list | None = None, stack: list[str] | None = None,
        sequence_nr: int = -1, is_user_annotation: bool = False,
    ) -> None:
        self.id = id
        self.name = name
        self.thread = thread
        self.start_us = start_us
        self.end_us = end_us
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.sequence_nr = sequence_nr
        self.is_user_annotation = is_user_annotation
        self.trace_name = name
        self.cpu_parent: FunctionEvent | None = None
        self.cpu_children: list[FunctionEvent] = []
        self.self_cpu_memory_usage = 0
        self.count = 1
        self.is_async = False
        self.device_type = "CPU"

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    @property
    def cpu_memory_usage(self) -> int:
        return self.self_cpu_memory_usage + sum(c.cpu_memory_usage for c in self.cpu_children)

    def __repr__(self) -> str:
        return (
            f"<FunctionEvent id={self.id} name={self.name} "
            f"cpu_time={format_time(self.cpu_time_total)} input_shapes={self.input_shapes}>"
        )


class FunctionEventAvg:
    """The events of one key added up (`key_averages()`'s rows)."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.input_shapes: list | None = None
        self.stack: list[str] = []
        self.cpu_parent = None
        self.is_async = False
        self.is_user_annotation = False

    def add(self, event: FunctionEvent) -> None:
        if self.count == 0:
            self.input_shapes = event.input_shapes
            self.stack = event.stack
            self.is_user_annotation = event.is_user_annotation
        self.count += 1
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        self.cpu_memory_usage += event.cpu_memory_usage
        self.self_cpu_memory_usage += event.self_cpu_memory_usage

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (
            f"<FunctionEventAvg key={self.key} "
            f"self_cpu_time={format_time(self.self_cpu_time_total)} "
            f"cpu_time={format_time(self.cpu_time)} input_shapes={self.input_shapes}>"
        )


class EventList(list):
    """A list of events with `key_averages()`, `table()`, `export_chrome_trace()`."""

    def __init__(self, events: Iterable[Any] = (), profile_memory: bool = False) -> None:
        super().__init__(events)
        self._profile_memory = profile_memory

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(
        self, group_by_input_shape: bool = False, group_by_stack_n: int = 0
    ) -> EventList:
        rows: dict[tuple, FunctionEventAvg] = {}
        for event in self:
            key: tuple = (event.key,)
            if group_by_input_shape:
                key += (str(event.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(event.stack[:group_by_stack_n])
            row = rows.get(key)
            if row is None:
                row = rows[key] = FunctionEventAvg(event.key)
            row.add(event)
        if not group_by_input_shape:  # PyTorch's averages show shapes only when grouped by them
            for row in rows.values():
                row.input_shapes = None
        return EventList(rows.values(), profile_memory=self._profile_memory)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg("Total")
        for event in self:
            total.count += event.count
            total.cpu_time_total += event.cpu_time_total
            total.self_cpu_time_total += event.self_cpu_time_total
            total.cpu_memory_usage += event.cpu_memory_usage
            total.self_cpu_memory_usage += event.self_cpu_memory_usage
        return total

    def table(
        self,
        sort_by: str | None = None,
        row_limit: int = 100,
        max_src_column_width: int = 75,
        max_name_column_width: int = 55,
        max_shapes_column_width: int = 80,
        header: str | None = None,
        top_level_events_only: bool = False,
        time_unit: str | None = None,
    ) -> str:
        return build_table(
            list(self), sort_by=sort_by, row_limit=row_limit, header=header,
            max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width,
            profile_memory=self._profile_memory,
            top_level_events_only=top_level_events_only, time_unit=time_unit,
        )

    def __str__(self) -> str:
        return self.table()

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (JSON, "X" complete events in microseconds),
        which Perfetto (ui.perfetto.dev) and chrome://tracing open."""
        trace_events = []
        for event in self:
            if not isinstance(event, FunctionEvent):
                continue
            args: dict[str, Any] = {"External id": event.id}
            if event.input_shapes:
                args["Input Dims"] = event.input_shapes
            if event.sequence_nr >= 0:
                args["Sequence number"] = event.sequence_nr
            if event.stack:
                args["Call stack"] = ";".join(event.stack)
            trace_events.append({
                "ph": "X",
                "cat": "user_annotation" if event.is_user_annotation else "cpu_op",
                "name": event.trace_name,
                "pid": _PID,
                "tid": event.thread,
                "ts": event.start_us,
                "dur": event.cpu_time_total,
                "args": args,
            })
        document = {
            "schemaVersion": 1,
            "deviceProperties": [],
            "traceEvents": trace_events,
            "displayTimeUnit": "ms",
            "traceName": str(path),
        }
        if str(path).endswith(".gz"):  # compressed, as PyTorch writes a .gz path
            with gzip.open(path, "wt") as f:
                json.dump(document, f)
        else:
            with open(path, "w") as f:
                json.dump(document, f)


_PID = os.getpid()


# Accelerator columns PyTorch sorts by (`sort_by="cuda_time_total"`): 0 on the CPU.
_DEVICE_KEYS = frozenset(
    f"{self_}{device}_{what}" for self_ in ("", "self_") for device in
    ("cuda", "device", "xpu", "privateuse1") for what in ("time_total", "time", "memory_usage")
)


def _sort_value(event: Any, sort_by: str) -> float:
    if sort_by in _DEVICE_KEYS:
        return 0
    if sort_by not in _SORT_KEYS:
        raise AttributeError(
            f"'{type(event).__name__}' object has no attribute '{sort_by}'"
        )
    return getattr(event, sort_by)


def build_table(
    events: list[Any],
    sort_by: str | None = None,
    row_limit: int = 100,
    header: str | None = None,
    max_src_column_width: int = 75,
    max_name_column_width: int = 55,
    max_shapes_column_width: int = 80,
    profile_memory: bool = False,
    top_level_events_only: bool = False,
    time_unit: str | None = None,
) -> str:
    """The table PyTorch's `EventList.table()` prints."""
    if not events:
        return ""
    has_shapes = any(e.input_shapes for e in events)
    if sort_by is not None:
        events = sorted(events, key=lambda e: _sort_value(e, sort_by), reverse=True)
    name_width = min(max(len(e.key) for e in events) + 4, max_name_column_width)
    shapes_width = min(max(len(str(e.input_shapes)) for e in events) + 4, max_shapes_column_width)
    stacks = [e.stack for e in events if e.stack]
    src_width = 0
    if stacks:
        src_width = min(max(len(f) for s in stacks for f in s) + 4, max_src_column_width)

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    widths = [name_width] + [12] * 5
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        widths += [12, 12]
    headers.append("# of Calls")
    widths.append(12)
    aligns = [">"] * len(widths)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
        aligns.append(">")
    if stacks:
        headers.append("Source Location")
        widths.append(src_width)
        aligns.append("<")
    row_format = "".join(f"{{: {a}{w}}}  " for a, w in zip(aligns, widths))
    separator = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2

    def unit(time_us: float) -> str:
        if time_unit == "s":
            return f"{time_us / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{time_us / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{time_us:.3f}us"
        return format_time(time_us)

    def trim_path(path: str) -> str:
        if len(path) > src_width:
            path = path[len(path) - src_width :]
            if len(path) > 3:
                path = "..." + path[3:]
        return path

    total = sum(e.self_cpu_time_total for e in events)
    lines: list[str] = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [separator, row_format.format(*headers), separator]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if len(name) >= max_name_column_width - 3:
            name = name[: max_name_column_width - 3] + "..."
        row = [
            name,
            format_share(e.self_cpu_time_total, total),
            unit(e.self_cpu_time_total),
            format_share(e.cpu_time_total, total) if not e.is_async else 0,
            unit(e.cpu_time_total),
            unit(e.cpu_time),
        ]
        if profile_memory:
            row += [format_memory(e.cpu_memory_usage), format_memory(e.self_cpu_memory_usage)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_width])
        if stacks:
            row.append(trim_path(e.stack[0]) if e.stack else "")
        lines.append(row_format.format(*row))
        if stacks:
            blank = [""] * (len(headers) - 1)
            for frame in e.stack[1:]:
                lines.append(row_format.format(*(blank + [trim_path(frame)])))
            lines.append(row_format.format(*([""] * len(headers))))
    lines.append(separator)
    lines.append(f"Self CPU time total: {unit(total)}")
    return "\n".join(lines) + "\n"
