"""`pyaten.signal`, as `torch.signal`: the window functions of `pyaten.signal.windows`."""

from pyaten.signal import windows

__all__ = ["windows"]
