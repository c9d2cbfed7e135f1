"""Large NumPy buffers without page faults: glibc keeps freed memory for the next tensor.

Note: freed memory kept
    glibc serves an allocation above its mmap threshold (at most 32 MiB) with a fresh `mmap`
    and gives it back to the system on free, so every large temporary an operator makes is
    new memory and pays a page fault per 4 KiB when first written: on 8M float32 elements
    that is most of a pointwise backward's time (relu's backward 10.6 ms, 3.8 ms without).
    At import pyaten raises the mmap and trim thresholds (`mallopt`) so freed buffers stay in
    the heap and the next tensor of that size reuses them. The price is resident memory that
    stays at its peak. `PYATEN_KEEP_FREED_MEMORY=0` in the environment leaves glibc's defaults;
    elsewhere than glibc (macOS, musl) nothing changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = ["keep_freed_memory"]

# mallopt parameters (malloc.h) and the values pyaten sets: 1 GiB each.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_THRESHOLD = 1 << 30


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds (Note: freed memory kept); True if it did."""
    if os.environ.get("PYATEN_KEEP_FREED_MEMORY", "1") == "0":
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = libc.mallopt if libc is not None else None
    except (OSError, AttributeError):
        return False
    if mallopt is None:
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, _THRESHOLD))
