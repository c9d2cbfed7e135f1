"""`pyaten.backends.cudnn` as a CPU-only PyTorch has it: flags that can be read and set.

    pyaten.backends.cudnn.benchmark = True         # accepted; no cuDNN, so no effect
    pyaten.backends.cudnn.is_available()           # False

The module's flags are properties, as PyTorch's (its module object is a `CudnnModule`):
setting one to a non-bool raises PyTorch's RuntimeError.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from typing import Any

__all__ = ["flags", "is_acceptable", "is_available", "version"]

_FLAGS = {"enabled": True, "benchmark": False, "deterministic": False, "allow_tf32": True}
_SETTER_NAMES = {
    "enabled": "set_enabled_cudnn", "benchmark": "set_benchmark_cudnn",
    "deterministic": "set_deterministic_cudnn", "allow_tf32": "set_allow_tf32_cudnn",
}


def is_available() -> bool:
    """False: pyaten has no cuDNN."""
    return False


def version() -> None:
    """cuDNN's version: None without cuDNN."""
    return None


def is_acceptable(tensor: Any) -> bool:
    """Whether cuDNN could take `tensor`: never without cuDNN."""
    return False


@contextlib.contextmanager
def flags(
    enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10,
    deterministic: bool = False, allow_tf32: bool = True,
) -> Iterator[None]:
    """Set the flags for a block, restoring them after (as PyTorch's `cudnn.flags`)."""
    saved = dict(_FLAGS)
    new = {"enabled": enabled, "benchmark": benchmark, "deterministic": deterministic,
           "allow_tf32": allow_tf32}
    for name, value in new.items():
        _set(name, value)
    try:
        yield
    finally:
        _FLAGS.update(saved)


def _set(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise RuntimeError(f"{_SETTER_NAMES[name]} expects a bool, but got {type(value).__name__}")
    _FLAGS[name] = value


def _flag(name: str) -> property:
    return property(lambda self: _FLAGS[name], lambda self, value: _set(name, value),
                    doc=f"cuDNN's `{name}` flag (no effect without cuDNN).")


class CudnnModule(types.ModuleType):
    """This module's class: its flags are properties."""

    enabled = _flag("enabled")
    benchmark = _flag("benchmark")
    deterministic = _flag("deterministic")
    allow_tf32 = _flag("allow_tf32")
    benchmark_limit = None
    fp32_precision = "none"


sys.modules[__name__].__class__ = CudnnModule
