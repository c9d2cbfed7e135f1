"""`pyaten.mps` as PyTorch has it without an MPS backend (docs/cuda-and-compat.md).

`is_available()` is False, `device_count()` 0 and `manual_seed` a no-op; what needs the
device raises PyTorch's "Cannot execute ... without MPS backend." RuntimeError.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "current_allocated_memory", "device_count", "driver_allocated_memory", "empty_cache",
    "get_rng_state", "is_available", "manual_seed", "recommended_max_memory", "seed",
    "set_per_process_memory_fraction", "set_rng_state", "synchronize",
]


def is_available() -> bool:
    """False: pyaten has no MPS backend."""
    return False


def device_count() -> int:
    """0 MPS devices."""
    return 0


def manual_seed(seed: int) -> None:
    """Seed the MPS generator: a no-op without MPS, as in PyTorch."""
    return None


def _without_mps(name: str, what: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"Cannot execute {what}() without MPS backend.")

    call.__name__ = call.__qualname__ = name
    call.__module__ = __name__
    call.__doc__ = f"Needs the MPS backend (raises PyTorch's RuntimeError; calls `{what}`)."
    return call


seed = _without_mps("seed", "getDefaultGenerator")
get_rng_state = _without_mps("get_rng_state", "getDefaultGenerator")
set_rng_state = _without_mps("set_rng_state", "getDefaultGenerator")
synchronize = _without_mps("synchronize", "deviceSynchronize")
empty_cache = _without_mps("empty_cache", "emptyCache")
current_allocated_memory = _without_mps("current_allocated_memory", "getCurrentAllocatedMemory")
driver_allocated_memory = _without_mps("driver_allocated_memory", "getDriverAllocatedMemory")
recommended_max_memory = _without_mps("recommended_max_memory", "getRecommendedMaxMemory")
set_per_process_memory_fraction = _without_mps(
    "set_per_process_memory_fraction", "setMemoryFraction"
)
