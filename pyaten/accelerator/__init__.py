"""`pyaten.accelerator` as a CPU-only PyTorch has it: there is no accelerator.

    use_accel = pyaten.accelerator.is_available()              # False
    device = pyaten.accelerator.current_accelerator() if use_accel else pyaten.device("cpu")

`is_available()` is False, `current_accelerator()` None, `device_count()` 0; what needs the
device raises PyTorch's "Cannot access accelerator device when none is available." A plug-in
device (docs/backends.md) is not PyTorch's accelerator here: this module answers for a build
without one, as pyaten.cuda does (docs/cuda-and-compat.md).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "current_accelerator", "current_device_index", "current_stream", "device_count",
    "device_index", "empty_cache", "empty_host_cache", "get_device_capability",
    "get_memory_info", "is_available", "max_memory_allocated", "max_memory_reserved",
    "memory_allocated", "memory_reserved", "memory_stats", "reset_accumulated_memory_stats",
    "reset_peak_memory_stats", "set_device_index", "set_stream", "synchronize",
]

NO_ACCELERATOR = "Cannot access accelerator device when none is available."


def is_available() -> bool:
    """False: no accelerator."""
    return False


def current_accelerator(check_available: bool = False) -> None:
    """The accelerator's device type: None."""
    return None


def device_count() -> int:
    """0 accelerator devices."""
    return 0


def _needs_accelerator(name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(NO_ACCELERATOR)

    call.__name__ = call.__qualname__ = name
    call.__module__ = __name__
    call.__doc__ = "Needs an accelerator: raises PyTorch's RuntimeError without one."
    return call


current_device_index = _needs_accelerator("current_device_index")
set_device_index = _needs_accelerator("set_device_index")
current_stream = _needs_accelerator("current_stream")
set_stream = _needs_accelerator("set_stream")
synchronize = _needs_accelerator("synchronize")
empty_cache = _needs_accelerator("empty_cache")
empty_host_cache = _needs_accelerator("empty_host_cache")
get_device_capability = _needs_accelerator("get_device_capability")
get_memory_info = _needs_accelerator("get_memory_info")
memory_allocated = _needs_accelerator("memory_allocated")
max_memory_allocated = _needs_accelerator("max_memory_allocated")
memory_reserved = _needs_accelerator("memory_reserved")
max_memory_reserved = _needs_accelerator("max_memory_reserved")
memory_stats = _needs_accelerator("memory_stats")
reset_accumulated_memory_stats = _needs_accelerator("reset_accumulated_memory_stats")
reset_peak_memory_stats = _needs_accelerator("reset_peak_memory_stats")


class device_index:  # noqa: N801 - named like torch.accelerator.device_index
    """`with pyaten.accelerator.device_index(i):`: None is a no-op; an index needs a device."""

    def __init__(self, device: int | None, /) -> None:
        self.idx = device

    def __enter__(self) -> None:
        if self.idx is not None:
            raise RuntimeError(NO_ACCELERATOR)

    def __exit__(self, *exc: object) -> bool:
        return False
