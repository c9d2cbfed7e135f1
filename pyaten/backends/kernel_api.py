"""What a device's kernels build tensors with: the public side of `Storage` and `Tensor`.

A device's kernels get at memory through their own API (`t.untyped_storage().data` is the
buffer their allocator returned); these helpers are the few places they need core: a new
tensor on the device, a view sharing a tensor's storage (for `as_strided` and `view`),
pointing a tensor at a storage (`set_`), and growing a storage (`resize_`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from pyaten.core import views as _views
from pyaten.core.device import as_device
from pyaten.core.device import device as Device
from pyaten.core.device import device as make_device
from pyaten.core.dtypes import dtype as DType
from pyaten.core.storage import Storage
from pyaten.core.tensor import Tensor

__all__ = [
    "contiguous_strides",
    "empty_tensor",
    "make_tensor",
    "make_view",
    "new_storage",
    "set_geometry",
    "resize_storage",
    "set_storage",
    "storage_nbytes_needed",
    "view_tensor",
    "with_index",
]

contiguous_strides = _views.contiguous_strides
storage_nbytes_needed = _views.storage_nbytes_needed


def empty_tensor(
    sizes: Any, dtype: DType, device: Any, strides: Any = None
) -> Tensor:
    """A new uninitialised tensor; its storage's data comes from the device's allocator."""
    if type(sizes) is not tuple:
        sizes = tuple(int(s) for s in sizes)
    if sizes and min(sizes) < 0:
        bad = min(sizes)
        raise RuntimeError(
            f"Trying to create tensor with negative dimension {bad}: {list(sizes)}"
        )
    if strides is not None and type(strides) is not tuple:
        strides = tuple(int(s) for s in strides)
    if type(device) is not Device or device.index is None:
        device = with_index(device)
    return _views.empty_tensor(sizes, dtype, device, strides)


def with_index(device: Any) -> Any:
    """`device` with its index filled in: a plug-in tensor is always on one numbered device
    (`"openreg"` means the current one, as `"cuda"` does)."""
    dev = as_device(device)
    if dev.index is not None or dev.type in ("cpu", "meta"):
        return dev
    runtime = sys.modules.get(f"pyaten.{dev.type}")
    current = runtime.current_device() if runtime is not None else 0
    return make_device(dev.type, int(current))


def view_tensor(base: Tensor, sizes: Any, strides: Any, offset: int | None = None) -> Tensor:
    """A view of `base`'s storage with new geometry (shares its version counter and base)."""
    return _views.as_strided_view(
        base, tuple(int(s) for s in sizes), tuple(int(s) for s in strides),
        None if offset is None else int(offset),
    )  # fmt: skip


def set_storage(
    t: Tensor, storage: Storage, storage_offset: int, sizes: Any, strides: Any = ()
) -> Tensor:
    """Point `t` at `storage` with new geometry (the body of a device's `set_` kernel)."""
    sizes = tuple(int(s) for s in sizes)
    strides = tuple(int(s) for s in strides) if len(strides) else None
    if strides is not None and len(strides) != len(sizes):
        raise RuntimeError(
            f"set_: size and stride must have the same length, got {len(sizes)} and "
            f"{len(strides)}"
        )
    return _views.set_tensor_(t, storage, int(storage_offset), sizes, strides)


def resize_storage(
    t: Tensor, sizes: Any, grow: Callable[[Storage, int], None] | None = None
) -> Tensor:
    """`t.resize_(sizes)` for a device: contiguous geometry; when the storage is too small,
    `grow(storage, nbytes)` (default: the one given to `register_device`) must give it a
    bigger buffer holding the old bytes (replacing `storage.data`, setting `storage.nbytes`)."""
    sizes = tuple(int(s) for s in sizes)
    for s in sizes:
        if s < 0:
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {s}: {list(sizes)}"
            )
    if sizes == t._sizes:
        return t
    strides = _views.contiguous_strides(sizes)
    needed = _views.storage_nbytes_needed(sizes, strides, t._offset, t._dtype.itemsize)
    storage = t._storage
    if needed > storage.nbytes:
        if not storage.resizable:
            raise RuntimeError("Trying to resize storage that is not resizable")
        if grow is None:
            storage.resize_(needed)  # the device's registered grow
        else:
            grow(storage, needed)
        if storage.nbytes < needed:
            raise RuntimeError(
                f"resize_: the device's grow() left the storage at {storage.nbytes} bytes, "
                f"{needed} are needed"
            )
    return set_storage(t, storage, t._offset, sizes, strides)


def new_storage(nbytes: int, device: Any) -> Storage:
    """A storage of `nbytes` on `device` (its data from the device's allocator)."""
    return Storage(int(nbytes), with_index(device))


def make_tensor(
    storage: Storage, sizes: Any, strides: Any, offset: int, dtype: DType, device: Any
) -> Tensor:
    """A new tensor over `storage` (a fresh version counter, no autograd history)."""
    return Tensor._make(
        storage, tuple(int(s) for s in sizes), tuple(int(s) for s in strides), int(offset),
        dtype, with_index(device),
    )  # fmt: skip


make_view = view_tensor  # (base, sizes, strides, offset=None), the name openreg asked for


def set_geometry(t: Tensor, storage: Storage, sizes: Any, strides: Any, offset: int) -> Tensor:
    """Replace `t`'s storage and geometry in place (`set_`, `resize_`)."""
    return set_storage(t, storage, offset, sizes, strides)
