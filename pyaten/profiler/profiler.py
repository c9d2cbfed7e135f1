"""`pyaten.profiler.profile`: PyTorch's profiler API (activities, schedule, on_trace_ready,
`step()`), recording through pyaten/profiler/_recorder.py."""

from __future__ import annotations

import enum
import os
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from pyaten.profiler._recorder import Session, record_function
from pyaten.profiler.events import EventList
from pyaten.profiler.legacy import to_function_events


class ProfilerActivity(enum.Enum):
    """What a profiler records; pyaten has CPU activity only."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What a schedule asks for at a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set[ProfilerActivity]:
    return {ProfilerActivity.CPU}


def kineto_available() -> bool:
    """Whether the Kineto library records: pyaten's profiler is its own (the dispatcher's
    trace), so no."""
    return False


def is_fbcode() -> bool:
    return False


def schedule(
    *, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
    skip_first_wait: int = 0,
) -> Callable[[int], ProfilerAction]:
    """A step -> action function: skip `skip_first` steps, then cycles of `wait` idle,
    `warmup` and `active` recorded steps (the last one saves), `repeat` times (0: forever)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0)."
        )
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    cycle = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(
    dir_name: str, worker_name: str | None = None, use_gzip: bool = False
) -> Callable[[profile], None]:
    """An `on_trace_ready` that writes each trace as `<worker>.<ms>.pt.trace.json` in
    `dir_name` (what TensorBoard's profiler plug-in reads)."""

    def handler(prof: profile) -> None:
        import socket

        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{int(time.time() * 1000)}.pt.trace.json"
        if use_gzip:
            name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler


class profile:  # noqa: N801 (PyTorch's name)
    """Record operator calls (`aten::...` events), autograd nodes and `record_function`
    ranges; with a `schedule`, only in the steps it marks, calling `on_trace_ready` after
    each active cycle."""

    def __init__(
        self,
        *,
        activities: Iterable[ProfilerActivity] | None = None,
        schedule: Callable[[int], ProfilerAction] | None = None,
        on_trace_ready: Callable[[profile], Any] | None = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        experimental_config: Any = None,
        execution_trace_observer: Any = None,
        acc_events: bool = False,
        use_cuda: bool | None = None,
        custom_trace_id_callback: Any = None,
    ) -> None:
        self.activities = set(activities) if activities is not None else supported_activities()
        for activity in self.activities:
            if not isinstance(activity, ProfilerActivity):
                raise TypeError(f"profile(): activities must be ProfilerActivity, got {activity!r}")
        if use_cuda:
            raise RuntimeError("Requested use_cuda=True but CUDA is not available in pyaten")
        self.record_steps = schedule is not None
        self.schedule = schedule if schedule is not None else _always_record
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._session: Session | None = None
        self._events: EventList | None = None
        self._step_range: record_function | None = None

    # --- recording ---------------------------------------------------------------------------

    def _start_trace(self) -> None:
        if self._session is None:
            self._session = Session(self.record_shapes, self.profile_memory, self.with_stack)
            self._session.start()

    def _stop_trace(self) -> None:
        if self._session is not None:
            self._session.stop()
            events = to_function_events(self._session.events)
            if self.acc_events and self._events is not None:
                events = EventList([*self._events, *events])
            events._profile_memory = self.profile_memory
            self._events = events
            self._session = None

    def _trace_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _transit(self, previous: ProfilerAction, current: ProfilerAction | None) -> None:
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if previous == ProfilerAction.RECORD_AND_SAVE and current is not None:
            self._stop_trace()
            self._trace_ready()
            if current in recording:
                self._start_trace()
            return
        if previous in recording and current not in recording:
            if current is not None:
                warnings.warn(f"Incorrect schedule: {previous.name} followed by {current.name}",
                              stacklevel=3)
            self._stop_trace()
            if current is None:
                self._trace_ready()
            return
        if previous not in recording and current in recording:
            self._start_trace()
        if previous == ProfilerAction.WARMUP and current is None:
            self._start_trace()
            self._stop_trace()

    def start(self) -> None:
        self._transit(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def stop(self) -> None:
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Mark the end of a training step: the schedule decides what the next one does."""
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(previous, self.current_action)
        if self.record_steps:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- results -----------------------------------------------------------------------------

    def events(self) -> EventList:
        if self._events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self._events

    def key_averages(
        self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
        group_by_overload_name: bool = False,
    ) -> EventList:
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        self.events().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        if not self.with_stack:
            raise RuntimeError("export_stacks() requires with_stack=True")
        with open(path, "w") as f:
            for event in self.events():
                if event.stack:
                    frames = ";".join(reversed(event.stack))
                    f.write(f"{frames};{event.name} {int(getattr(event, metric))}\n")
