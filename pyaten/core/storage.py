"""Storage: the bytes behind tensors, shared by views.

On the CPU the bytes are a 1-D NumPy `uint8` array; on Meta there are no bytes, only a byte
count. A plug-in device registers its own allocator (`register_device_allocator`), and its
storages hold whatever that allocator returns: a buffer object owned by the device, which
core never reads as NumPy (the device's kernels reach it through the device's own API, and
`is_host_memory` tells core which storages it may view). Resizing replaces `data` with a
bigger buffer holding the old bytes; tensors notice because their cached NumPy view's `.base`
is no longer `storage.data`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pyaten.core.memory import allocate_host, allocation_error

__all__ = [
    "Storage",
    "is_host_memory",
    "read_to_host",
    "register_allocator",
    "register_device_allocator",
    "register_host_reader",
    "unregister_allocator",
]

_U8 = np.dtype(np.uint8)

# device type -> fn(nbytes, index) -> the storage's data (None for data-less devices)
_ALLOCATORS: dict[str, Callable[[int, int], object]] = {"meta": lambda nbytes, index: None}


def register_allocator(device_type: str, allocate: Callable[[int], np.ndarray | None]) -> None:
    """Make `allocate(nbytes)` (a 1-D uint8 NumPy array) the allocator of `device_type`."""
    _ALLOCATORS[device_type] = lambda nbytes, index: allocate(nbytes)


# device type -> grow(storage, nbytes): give the storage a bigger buffer holding its bytes
_GROWERS: dict[str, Callable[[Storage, int], None]] = {}


def register_device_allocator(
    device_type: str,
    allocate: Callable[[int, int], object],
    grow: Callable[[Storage, int], None] | None = None,
) -> None:
    """Make `allocate(nbytes, index)` the allocator of a plug-in `device_type`; what it returns
    is the storage's `data`, an object only the device's own kernels interpret. `grow(storage,
    nbytes)`, when given, is how `Storage.resize_` enlarges such a storage (it sets
    `storage.data` to a bigger buffer holding the old bytes, and `storage.nbytes`)."""
    for what, fn in (("allocate", allocate), ("grow", grow)):
        if fn is not None and not callable(fn):
            raise TypeError(
                f"register_device_allocator(): {what} must be callable, got {type(fn).__name__}"
            )
    _ALLOCATORS[device_type] = allocate
    if grow is not None:
        _GROWERS[device_type] = grow


def unregister_allocator(device_type: str) -> None:
    """Forget the allocator of `device_type` (a plug-in being unregistered)."""
    if device_type not in ("cpu", "meta"):
        _ALLOCATORS.pop(device_type, None)
        _HOST_READERS.pop(device_type, None)
        _GROWERS.pop(device_type, None)


def is_host_memory(data: object) -> bool:
    """Whether core may view `data` (a storage's data) as NumPy bytes."""
    return type(data) is np.ndarray


# device type -> fn(tensor) -> a NumPy array of the tensor's values (a host copy)
_HOST_READERS: dict[str, Callable[[object], np.ndarray]] = {}


def register_host_reader(device_type: str, read: Callable[[object], np.ndarray]) -> None:
    """How core reads a plug-in tensor's values for printing, `tolist()`, `item()`, pickling:
    `read(tensor)` returns a NumPy array of them (pyaten.backends registers one per device,
    copying through the device's `_copy_from`)."""
    _HOST_READERS[device_type] = read


def read_to_host(tensor: object) -> np.ndarray:
    """The values of `tensor` (whose storage is not host memory) as a NumPy array."""
    device = tensor.device  # type: ignore[attr-defined]
    read = _HOST_READERS.get(device.type)
    if read is None:
        raise RuntimeError(
            f"Cannot read the values of a tensor on device '{device}': the device registered "
            "no way to copy them to the host. Use .cpu() first."
        )
    return read(tensor)


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
            data = _allocate(nbytes, device)
        self.data = data

    @classmethod
    def _fresh(cls, nbytes: int, device: object) -> Storage:
        # The per-op path: a CPU allocation without the allocator lookup.
        self = object.__new__(cls)
        self.nbytes = nbytes
        self.device = device
        self.resizable = True
        if device.type != "cpu":
            self.data = _allocate(nbytes, device)
            return self
        try:
            self.data = np.empty(nbytes, _U8)
        except (MemoryError, ValueError):
            raise allocation_error(nbytes) from None  # Note: allocation errors
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
            if type(old) is not np.ndarray:
                grow = _GROWERS.get(self.device.type)
                if grow is None:
                    raise RuntimeError(
                        f"Storage.resize_(): the memory of device '{self.device}' belongs to "
                        "the device, which registered no grow function; its resize_ kernel "
                        "replaces the storage's data itself"
                    )
                if nbytes > self.nbytes:
                    grow(self, nbytes)
                self.nbytes = nbytes
                return
            new = _allocate(nbytes, self.device)
            keep = min(nbytes, self.nbytes)
            new[:keep] = old[:keep]
            self.data = new
        self.nbytes = nbytes

    def data_ptr(self) -> int:
        """Address of the first byte (0 on Meta)."""
        data = self.data
        if data is None:
            return 0
        if type(data) is not np.ndarray:  # a device buffer: its own address, if it has one
            ptr = getattr(data, "data_ptr", None)
            return int(ptr() if callable(ptr) else ptr or 0)
        return data.__array_interface__["data"][0]

    def size(self) -> int:
        return self.nbytes

    def __len__(self) -> int:
        return self.nbytes

    def __repr__(self) -> str:
        return f"<pyaten.Storage of {self.nbytes} bytes on {self.device}>"


def _allocate(nbytes: int, device: object) -> object:
    allocate = _ALLOCATORS.get(device.type)
    if allocate is None:
        return allocate_host(nbytes)  # PyTorch's errors (Note: allocation errors)
    index = device.index
    return allocate(nbytes, 0 if index is None else index)
