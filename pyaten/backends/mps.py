"""`pyaten.backends.mps` as PyTorch has it without MPS: `is_available()` and `is_built()`
are False."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: pyaten has no MPS backend."""
    return False


def is_built() -> bool:
    """False: pyaten is not built with MPS."""
    return False
