"""`pyaten.profiler`: what each operator call, autograd node and marked range cost
(docs/profiler.md). Built on the dispatcher's trace: every operator call is one event,
named as PyTorch names it (`aten::linear`, with `aten::t` and `aten::addmm` below it)."""

from pyaten.profiler._recorder import record_function
from pyaten.profiler.events import EventList, FunctionEvent, FunctionEventAvg
from pyaten.profiler.profiler import (
    ProfilerAction,
    ProfilerActivity,
    is_fbcode,
    kineto_available,
    profile,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)

__all__ = [
    "EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerAction", "ProfilerActivity",
    "is_fbcode", "kineto_available", "profile", "record_function", "schedule",
    "supported_activities", "tensorboard_trace_handler",
]


def __getattr__(name: str) -> object:
    """A PyTorch name pyaten lacks says so (docs/coverage.md)."""
    from pyaten.utils.torch_api import module_getattr

    return module_getattr(__name__, "torch.profiler", name)
