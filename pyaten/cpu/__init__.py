"""`pyaten.cpu`: the CPU device module; `pyaten.cpu.amp` holds its deprecated AMP names."""

from pyaten.cpu import amp

__all__ = ["amp"]
