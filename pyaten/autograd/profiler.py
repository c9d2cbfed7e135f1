"""`pyaten.autograd.profiler`: PyTorch's older profiler names (`profile`, `record_function`),
the same recorder as `pyaten.profiler` (docs/profiler.md)."""

from pyaten.profiler._recorder import record_function
from pyaten.profiler.events import EventList, FunctionEvent, FunctionEventAvg
from pyaten.profiler.legacy import profile
from pyaten.profiler.profiler import kineto_available

__all__ = [
    "EventList", "FunctionEvent", "FunctionEventAvg", "kineto_available", "profile",
    "record_function",
]
