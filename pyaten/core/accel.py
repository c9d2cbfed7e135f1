"""The optional compiled accelerator, for the core layer and above: loaded by
`pyaten.dispatch.accel` (the lowest layer using it; Note: the accelerator is there)."""

from pyaten.dispatch.accel import ACCEL, DISABLED, LOAD_ERROR, VERSION

__all__ = ["ACCEL", "DISABLED", "LOAD_ERROR", "VERSION"]
