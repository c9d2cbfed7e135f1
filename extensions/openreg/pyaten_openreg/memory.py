"""openreg's memory: one arena per device index, carved by a free-list allocator.

Note: how the pool works
    A device's arena is a list of segments (each one block of host memory, standing in for
    device memory). A request is rounded up to `ALIGNMENT` bytes and served, in this order,
    from the cache of freed blocks of exactly that size (one dict lookup: the common case
    of a training loop, whose tensors have the same sizes every step), from the first free
    range of a segment that is large enough (first fit, the rest stays free), or from a new
    segment. A `Buffer` returns its block to the cache when it is garbage collected, as
    PyTorch's caching allocator keeps freed blocks for the next tensor of that size.
    `empty_cache()` gives the cached blocks back to their segments' free ranges (merging
    neighbours) and releases the segments that are then entirely free.

    pyaten core never reads a Buffer: it only stores it as `Storage.data`. openreg's kernels
    reach the bytes with `Buffer.bytes()` (a uint8 NumPy view of the block) and `host_array`.
"""

from __future__ import annotations

import threading
from bisect import insort

import numpy as np

__all__ = [
    "ALIGNMENT",
    "Buffer",
    "DevicePool",
    "allocate",
    "empty_cache",
    "grow",
    "max_memory_allocated",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "pool",
    "reset_peak_memory_stats",
]

ALIGNMENT = 64  # bytes; every block starts and ends on this boundary
SEGMENT_BYTES = 2 << 20  # the smallest segment; larger requests get a segment of their own
_U8 = np.dtype(np.uint8)


_ALIGN_MASK = ALIGNMENT - 1
_new_buffer = object.__new__


class _Segment:
    """One block of host memory of an arena and its free ranges (offset, size), sorted."""

    __slots__ = ("memory", "free", "live")

    def __init__(self, nbytes: int) -> None:
        self.memory = np.empty(nbytes, _U8)
        self.free: list[tuple[int, int]] = [(0, nbytes)]
        self.live = 0  # blocks handed out (live or cached), for empty_cache

    def take(self, size: int) -> int | None:
        """Carve `size` bytes from the first free range that holds them; its offset or None."""
        free = self.free
        for i, (offset, length) in enumerate(free):
            if length >= size:
                if length == size:
                    del free[i]
                else:
                    free[i] = (offset + size, length - size)
                self.live += 1
                return offset
        return None

    def give_back(self, offset: int, size: int) -> None:
        """Return a block to the free ranges, merged with the free neighbours it touches."""
        free = self.free
        insort(free, (offset, size))
        i = free.index((offset, size))
        if i + 1 < len(free) and offset + size == free[i + 1][0]:
            size += free[i + 1][1]
            free[i] = (offset, size)
            del free[i + 1]
        if i > 0 and free[i - 1][0] + free[i - 1][1] == offset:
            free[i - 1] = (free[i - 1][0], free[i - 1][1] + size)
            del free[i]
        self.live -= 1

    @property
    def nbytes(self) -> int:
        return self.memory.nbytes


class Buffer:
    """The bytes of one openreg Storage: a block of a device's arena.

    It is what the allocator hands pyaten (`Storage.data`); it is not an array. `bytes()` is
    the block as a uint8 NumPy view for openreg's kernels; `data_ptr()` its address.
    """

    __slots__ = ("pool", "segment", "offset", "nbytes", "size", "views", "_bytes", "__weakref__")

    def __init__(self, pool: DevicePool, segment: _Segment | None, offset: int, nbytes: int,
                 size: int) -> None:
        self.pool = pool
        self.segment = segment
        self.offset = offset
        self.nbytes = nbytes  # what was asked for
        self.size = size  # what the block holds (rounded up)
        self.views: dict = {}  # (sizes, strides, offset, dtype) -> NumPy view, for kernels
        self._bytes = None

    def bytes(self) -> np.ndarray:
        """The block as a writable 1-D uint8 NumPy array of `nbytes` elements."""
        view = self._bytes
        if view is None:
            if self.segment is None:
                view = np.empty(0, _U8)
            else:
                view = self.segment.memory[self.offset:self.offset + self.nbytes]
            self._bytes = view
        return view

    def data_ptr(self) -> int:
        if self.segment is None:
            return 0
        return self.segment.memory.__array_interface__["data"][0] + self.offset

    @property
    def device_index(self) -> int:
        return self.pool.index

    def __del__(self) -> None:
        # Interpreter shutdown may have cleared the pool's module globals; nothing to free then.
        pool = self.pool
        if pool is not None and self.segment is not None:
            pool.release(self)

    def __repr__(self) -> str:
        return (
            f"<pyaten_openreg.Buffer of {self.nbytes} bytes on openreg:{self.pool.index} "
            f"at offset {self.offset}>"
        )


class DevicePool:
    """The arena of one openreg device index and its statistics."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.segments: list[_Segment] = []
        self.cached: dict[int, list[tuple[_Segment, int]]] = {}  # size -> freed blocks
        self.allocated = 0  # bytes in live blocks (rounded sizes, as PyTorch counts)
        self.peak = 0
        self.allocations = 0  # number of live buffers
        # Reentrant: a Buffer collected by the garbage collector while this pool holds the lock
        # (collection can run at any allocation) releases its block from the same thread.
        self._lock = threading.RLock()

    def allocate(self, nbytes: int) -> Buffer:
        if nbytes <= 0:
            if nbytes < 0:
                raise RuntimeError(
                    f"openreg: cannot allocate a negative number of bytes ({nbytes})"
                )
            return Buffer(self, None, 0, 0, 0)
        size = (nbytes + _ALIGN_MASK) & ~_ALIGN_MASK
        lock = self._lock
        lock.acquire()
        try:
            blocks = self.cached.get(size)
            if blocks:
                segment, offset = blocks.pop()
            else:
                segment, offset = self._carve(size)
            self.allocated += size
            self.allocations += 1
            if self.allocated > self.peak:
                self.peak = self.allocated
        finally:
            lock.release()
        # Buffer.__init__ written out (this runs for every new openreg tensor)
        buffer = _new_buffer(Buffer)
        buffer.pool = self
        buffer.segment = segment
        buffer.offset = offset
        buffer.nbytes = nbytes
        buffer.size = size
        buffer.views = {}
        buffer._bytes = None
        return buffer

    def _carve(self, size: int) -> tuple[_Segment, int]:
        for segment in self.segments:
            offset = segment.take(size)
            if offset is not None:
                return segment, offset
        segment = _Segment(max(SEGMENT_BYTES, size))
        self.segments.append(segment)
        return segment, segment.take(size)

    def release(self, buffer: Buffer) -> None:
        """Called when a Buffer dies: its block goes to the cache for its size."""
        lock = self._lock
        lock.acquire()
        try:
            blocks = self.cached.get(buffer.size)
            if blocks is None:
                blocks = self.cached[buffer.size] = []
            blocks.append((buffer.segment, buffer.offset))
            self.allocated -= buffer.size
            self.allocations -= 1
        finally:
            lock.release()
        buffer.segment = None

    def empty_cache(self) -> None:
        """Return cached blocks to their segments; release segments with no block in use."""
        with self._lock:
            # Swapped out first: a block released meanwhile (by a collection) lands in the new
            # cache, not in the dict being walked.
            cached, self.cached = self.cached, {}
            for size, blocks in cached.items():
                for segment, offset in blocks:
                    segment.give_back(offset, size)
            self.segments = [s for s in self.segments if s.live]

    def reserved(self) -> int:
        return sum(s.nbytes for s in self.segments)

    def stats(self) -> dict[str, int]:
        return {
            "allocated_bytes.current": self.allocated,
            "allocated_bytes.peak": self.peak,
            "allocation.current": self.allocations,
            "reserved_bytes.current": self.reserved(),
            "segment.current": len(self.segments),
            "cached_blocks.current": sum(len(b) for b in self.cached.values()),
        }


DEVICE_COUNT = 2
_POOLS = [DevicePool(i) for i in range(DEVICE_COUNT)]


def pool(device: object = None) -> DevicePool:
    """The pool of a device index (an int, "openreg:1", a pyaten.device; None = index 0)."""
    if device is None:
        index = 0
    elif isinstance(device, int):
        index = device
    else:
        text = str(device)
        kind, _, number = text.partition(":")
        if kind != "openreg":
            raise ValueError(f"openreg memory: expected an openreg device, got '{text}'")
        index = int(number) if number else 0
    if not 0 <= index < DEVICE_COUNT:
        raise RuntimeError(
            f"openreg: invalid device index {index} (there are {DEVICE_COUNT} devices)"
        )
    return _POOLS[index]


def allocate(nbytes: int, index: int | None = 0) -> Buffer:
    """The allocator openreg registers with pyaten: `nbytes` on device `index`."""
    return _POOLS[0 if index is None else index].allocate(nbytes)


def grow(storage: object, nbytes: int) -> None:
    """Give an openreg `storage` a bigger Buffer on its device holding its old bytes (what
    `resize_` and pyaten's `Storage.resize_` call; registered as the device's `grow`)."""
    old = storage.data
    new = allocate(nbytes, storage.device.index)
    keep = min(old.nbytes, nbytes)
    new.bytes()[:keep] = old.bytes()[:keep]
    storage.data = new
    storage.nbytes = nbytes


def memory_allocated(device: object = None) -> int:
    """Bytes held by live openreg tensors on a device (rounded block sizes)."""
    return pool(device).allocated


def max_memory_allocated(device: object = None) -> int:
    """The peak of `memory_allocated` since start or `reset_peak_memory_stats`."""
    return pool(device).peak


def reset_peak_memory_stats(device: object = None) -> None:
    p = pool(device)
    p.peak = p.allocated


def memory_reserved(device: object = None) -> int:
    """Bytes of the device's arena segments (live blocks, cached blocks and free ranges)."""
    return pool(device).reserved()


def memory_stats(device: object = None) -> dict[str, int]:
    return pool(device).stats()


def empty_cache(device: object = None) -> None:
    """Release cached blocks (all devices when `device` is None), as torch.cuda.empty_cache."""
    for p in _POOLS if device is None else [pool(device)]:
        p.empty_cache()
