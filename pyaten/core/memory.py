"""Host memory: opt-in allocator tuning, and PyTorch's errors for allocations that cannot be.

Note: freed memory kept
    glibc serves an allocation above its mmap threshold (at most 32 MiB) with a fresh `mmap`
    and gives it back to the system on free, so every large temporary an operator makes is
    new memory and pays a page fault per 4 KiB when first written: on 8M float32 elements
    that is most of a pointwise backward's time (relu's backward 10.6 ms, 3.8 ms without).
    `keep_freed_memory()` raises the mmap and trim thresholds (`mallopt`) so freed buffers
    stay in the heap and the next tensor of that size reuses them. The price is resident
    memory that stays at its peak, for the whole process: a library must not change that
    behind its host program's back, so `import pyaten` leaves glibc alone unless the
    environment says `PYATEN_MALLOC_TUNING=1`; a program can also call the function itself.
    `PYATEN_KEEP_FREED_MEMORY=0` vetoes both. Elsewhere than glibc (macOS, musl) nothing
    changes. docs/performance.md (Large buffers and masks) has the numbers.

Note: allocation errors
    NumPy refuses an impossible buffer with its own errors (`ValueError: Maximum allowed
    dimension exceeded` past 2**63 bytes, `_ArrayMemoryError` when the system says no).
    PyTorch raises `RuntimeError` for both: "Storage size calculation overflowed with
    sizes=[...]" when the byte count does not fit int64 (checked before allocating), and the
    CPU allocator's "can't allocate memory: you tried to allocate N bytes" otherwise.
    `allocate_host(nbytes)` is NumPy's allocation with PyTorch's errors; the hot allocation
    in `core/broadcast.py` calls `allocation_error` only after NumPy failed, so a successful
    allocation pays nothing.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["keep_freed_memory", "malloc_tuned", "allocate_host", "allocation_error",
           "check_storage_size"]

# mallopt parameters (malloc.h) and the values pyaten sets: 1 GiB each.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_THRESHOLD = 1 << 30
_TUNED = False
_INT64_MAX = (1 << 63) - 1
_U8 = np.dtype(np.uint8)


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds so freed large buffers are reused (Note: freed
    memory kept). Returns True if it did; False where there is no glibc `mallopt` or
    `PYATEN_KEEP_FREED_MEMORY=0` vetoes it. Affects the whole process, for its lifetime."""
    global _TUNED
    if os.environ.get("PYATEN_KEEP_FREED_MEMORY", "1") == "0":
        return False
    import ctypes.util  # here, not at import: ~10 ms that most programs never need

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = libc.mallopt if libc is not None else None
    except (OSError, AttributeError):
        return False
    if mallopt is None:
        return False
    done = bool(mallopt(_M_MMAP_THRESHOLD, _THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, _THRESHOLD))
    _TUNED = _TUNED or done
    return done


def malloc_tuned() -> bool:
    """Whether this process's glibc thresholds were raised by `keep_freed_memory()`."""
    return _TUNED


def tune_from_environment() -> bool:
    """At import: `keep_freed_memory()` only when `PYATEN_MALLOC_TUNING=1` asks for it."""
    if os.environ.get("PYATEN_MALLOC_TUNING", "0") != "1":
        return False
    return keep_freed_memory()


# --- allocation errors (Note: allocation errors) ------------------------------------------------


def _sizes_text(sizes: tuple | None) -> str:
    return "[" + ", ".join(str(s) for s in (sizes or ())) + "]"


def check_storage_size(sizes: tuple, itemsize: int) -> int:
    """The byte count of a row-major tensor of `sizes`, or PyTorch's overflow error."""
    nbytes = itemsize
    for s in sizes:
        nbytes *= s
    if nbytes > _INT64_MAX:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={_sizes_text(sizes)}")
    return nbytes


def allocation_error(nbytes: int, sizes: tuple | None = None) -> RuntimeError:
    """PyTorch's error for a host allocation of `nbytes` that NumPy could not make."""
    if nbytes > _INT64_MAX:
        shown = sizes if sizes is not None else (nbytes,)
        return RuntimeError(f"Storage size calculation overflowed with sizes={_sizes_text(shown)}")
    return RuntimeError(
        "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
        f"memory: you tried to allocate {nbytes} bytes. Error code 12 (Cannot allocate memory)"
    )


def allocate_host(nbytes: int, sizes: tuple | None = None) -> np.ndarray:
    """`nbytes` of uninitialised host memory (a uint8 array), failing as PyTorch does."""
    try:
        return np.empty(nbytes, _U8)
    except (MemoryError, ValueError):
        raise allocation_error(nbytes, sizes) from None
