"""Storage: the bytes behind tensors, shared by views.

On the CPU (and on simulated plug-in devices) the bytes are a 1-D NumPy `uint8` array; on
Meta there are no bytes, only a byte count. A device type may register its own allocator.
Resizing replaces `data` with a bigger buffer holding the old bytes; tensors notice because
their cached NumPy view's `.base` is no longer `storage.data`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["Storage", "register_allocator"]

_U8 = np.dtype(np.uint8)

# device type -> fn(nbytes) -> 1-D uint8 NumPy array (or None for data-less devices)
_ALLOCATORS: dict[str, Callable[[int], np.ndarray | None]] = {"meta": lambda nbytes: None}


def register_allocator(device_type: str, allocate: Callable[[int], np.ndarray | None]) -> None:
    """Make `allocate(nbytes)` the allocator of `device_type` (plug-in backends)."""
    _ALLOCATORS[device_type] = allocate


class Storage:
    """A run of bytes on one device; `data` is a uint8 NumPy array, or None on Meta."""

    __slots__ = ("data", "nbytes", "device", "resizable", "__weakref__")

    def __init__(
        self, nbytes: int, device: object, data: np.ndarray | None = None, resizable: bool = True
    ) -> None:
        self.nbytes = nbytes
        self.device = device
        self.resizable = resizable
        if data is None:
            allocate = _ALLOCATORS.get(device.type)
            data = np.empty(nbytes, _U8) if allocate is None else allocate(nbytes)
        self.data = data

    @classmethod
    def _fresh(cls, nbytes: int, device: object) -> Storage:
        # The per-op path: a CPU allocation without the allocator lookup.
        self = object.__new__(cls)
        self.nbytes = nbytes
        self.device = device
        self.resizable = True
        self.data = np.empty(nbytes, _U8) if device.type == "cpu" else _allocate(nbytes, device)
        return self

    def resize_(self, nbytes: int) -> None:
        """Grow or shrink to `nbytes`, keeping the common prefix of the old bytes."""
        if nbytes == self.nbytes:
            return
        if not self.resizable:
            raise RuntimeError(
                "Trying to resize storage that is not resizable"
            )
        old = self.data
        if old is not None:
            new = _allocate(nbytes, self.device)
            keep = min(nbytes, self.nbytes)
            new[:keep] = old[:keep]
            self.data = new
        self.nbytes = nbytes

    def data_ptr(self) -> int:
        """Address of the first byte (0 on Meta)."""
        if self.data is None:
            return 0
        return self.data.__array_interface__["data"][0]

    def size(self) -> int:
        return self.nbytes

    def __len__(self) -> int:
        return self.nbytes

    def __repr__(self) -> str:
        return f"<pyaten.Storage of {self.nbytes} bytes on {self.device}>"


def _allocate(nbytes: int, device: object) -> np.ndarray | None:
    allocate = _ALLOCATORS.get(device.type)
    return np.empty(nbytes, _U8) if allocate is None else allocate(nbytes)
