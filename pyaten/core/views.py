"""Allocation and view helpers: empty tensors, strided views, contiguity, overlap, resize.

Views share their base's storage and version counter and record `_base` (the root tensor
that owns the memory), as PyTorch's view ops do.
"""

from __future__ import annotations

from collections.abc import Callable

from pyaten.core.device import device as Device
from pyaten.core.dtypes import complex32 as _COMPLEX32
from pyaten.core.dtypes import dtype as DType
from pyaten.core.dtypes import warn_complex_half
from pyaten.core.storage import Storage
from pyaten.core.tensor import Tensor, _wrap_dim

__all__ = [
    "empty_tensor",
    "as_strided_view",
    "alias_view",
    "select_view",
    "contiguous_strides",
    "channels_last_strides",
    "is_contiguous_strides",
    "is_channels_last_strides",
    "is_non_overlapping_and_dense",
    "storage_nbytes_needed",
    "has_internal_overlap",
    "assert_no_internal_overlap",
    "get_overlap_status",
    "assert_no_partial_overlap",
    "assert_no_overlap",
    "resize_tensor_",
    "set_tensor_",
    "MemOverlap",
]

_CONTIGUOUS_CACHE: dict[tuple, tuple] = {}


def contiguous_strides(sizes: tuple) -> tuple:
    """Row-major strides in elements (size-0 dims count as 1, as in PyTorch)."""
    cached = _CONTIGUOUS_CACHE.get(sizes)
    if cached is not None:
        return cached
    strides = [1] * len(sizes)
    acc = 1
    for i in range(len(sizes) - 1, -1, -1):
        strides[i] = acc
        acc *= max(sizes[i], 1)
    result = tuple(strides)
    if len(_CONTIGUOUS_CACHE) < 4096:
        _CONTIGUOUS_CACHE[sizes] = result
    return result


def channels_last_strides(sizes: tuple) -> tuple:
    """NHWC strides for a 4-d NCHW shape."""
    if len(sizes) != 4:
        raise RuntimeError("required rank 4 tensor to use channels_last format")
    n, c, h, w = sizes
    s_c = 1
    s_w = max(c, 1)
    s_h = s_w * max(w, 1)
    s_n = s_h * max(h, 1)
    return (s_n, s_c, s_h, s_w)


def storage_nbytes_needed(sizes: tuple, strides: tuple, offset: int, itemsize: int) -> int:
    """Bytes a storage must hold for these sizes/strides/offset."""
    extent = 1
    for size, stride in zip(sizes, strides):
        if size == 0:
            return 0
        extent += (size - 1) * stride
    return (extent + offset) * itemsize


def empty_tensor(
    sizes: tuple, dtype: DType, device: Device, strides: tuple | None = None
) -> Tensor:
    """A new uninitialised tensor (CPU: NumPy bytes; Meta: no bytes). No validation."""
    if strides is None:
        strides = contiguous_strides(sizes)
        numel = 1
        for s in sizes:
            numel *= s
        nbytes = numel * dtype.itemsize
    else:
        nbytes = storage_nbytes_needed(sizes, strides, 0, dtype.itemsize)
    if dtype is _COMPLEX32:
        warn_complex_half()
    return Tensor._make(Storage._fresh(nbytes, device), sizes, strides, 0, dtype, device)


def as_strided_view(t: Tensor, sizes: tuple, strides: tuple, offset: int | None = None) -> Tensor:
    """A view of `t`'s storage with new geometry, sharing the version counter; `_base` set."""
    return Tensor._make_view(t, sizes, strides, t._offset if offset is None else offset)


def alias_view(t: Tensor) -> Tensor:
    """A view of all of `t` with the same geometry."""
    return as_strided_view(t, t._sizes, t._strides, t._offset)


def select_view(t: Tensor, dim: int, index: int) -> Tensor:
    """`t.select(dim, index)` as a view (used by iteration and printing)."""
    ndim = len(t._sizes)
    if ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = _wrap_dim(dim, ndim)
    size = t._sizes[dim]
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(t._sizes)} at "
            f"dimension {dim}"
        )
    if index < 0:
        index += size
    sizes = t._sizes[:dim] + t._sizes[dim + 1 :]
    strides = t._strides[:dim] + t._strides[dim + 1 :]
    return as_strided_view(t, sizes, strides, t._offset + index * t._strides[dim])


def is_contiguous_strides(sizes: tuple, strides: tuple) -> bool:
    """PyTorch's contiguity: strides of dims with size != 1 are row-major; empty is True."""
    expected = 1
    for i in range(len(sizes) - 1, -1, -1):
        size = sizes[i]
        if size == 0:
            return True
        if size != 1:
            if strides[i] != expected:
                return _has_zero(sizes, i)
            expected *= size
    return True


def _has_zero(sizes: tuple, upto: int) -> bool:
    return any(s == 0 for s in sizes[:upto])


_CHANNELS_LAST_ORDER = {
    "channels_last": (4, (1, 3, 2, 0)),
    "channels_last_3d": (5, (1, 4, 3, 2, 0)),
}


def is_channels_last_strides(sizes: tuple, strides: tuple, fmt: str = "channels_last") -> bool:
    """Contiguous in NHWC order (dims 1, 3, 2, 0 fastest first) for 4-d tensors, or NDHWC
    (1, 4, 3, 2, 0) for 5-d with `fmt="channels_last_3d"`."""
    ndim, order = _CHANNELS_LAST_ORDER[fmt]
    if len(sizes) != ndim:
        return False
    expected = 1
    for d in order:
        size = sizes[d]
        if size != 1:
            if strides[d] != expected:
                return False
            expected *= size
    return True


def is_non_overlapping_and_dense(sizes: tuple, strides: tuple) -> bool:
    """Some permutation of the dims is contiguous (no gaps, no element visited twice)."""
    if is_contiguous_strides(sizes, strides):
        return True
    ndim = len(sizes)
    if ndim == 1:
        return sizes[0] < 2 or strides[0] == 1
    order = sorted((d for d in range(ndim) if sizes[d] >= 2), key=lambda d: strides[d])
    required = 1
    for d in order:
        if strides[d] != required:
            return False
        required *= sizes[d]
    return True


def dims_innermost_first(ndim: int, should_swap: Callable[[int, int], int]) -> list[int]:
    """The dims ordered innermost first by ATen's insertion sort (TensorIterator's output
    layout, infer_dense_strides): starting from the last dim, a dim moves in past another
    while `should_swap(outer, inner)` is positive and stops where it is negative."""
    perm = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            comparison = should_swap(perm[d0], perm[d1])
            if comparison > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif comparison < 0:
                break
    return perm


def infer_dense_strides(sizes: tuple, strides: tuple) -> tuple:
    """Dense strides that keep the order of `strides`' dims (ATen's infer_dense_strides, what
    `empty_like` with preserve_format gives a tensor that is not non-overlapping and dense):
    the dims sorted by stride, innermost first; a stride of 0 leaves two dims in their order,
    equal strides put the smaller size inside; sizes 0 and 1 add nothing to the strides."""
    ndim = len(sizes)

    def should_swap(d0: int, d1: int) -> int:
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if sizes[d0] > sizes[d1] else 0

    perm = dims_innermost_first(ndim, should_swap)
    out = [0] * ndim
    stride = 1
    for d in perm:
        out[d] = stride
        if sizes[d] > 1:
            stride *= sizes[d]
    return tuple(out)


class MemOverlap:
    """Results of the overlap checks (torch's MemOverlap / MemOverlapStatus)."""

    NO = "no"
    YES = "yes"
    TOO_HARD = "too_hard"
    FULL = "full"
    PARTIAL = "partial"


def has_internal_overlap(t: Tensor) -> str:
    """YES if two indices of `t` surely share memory (a broadcast dim), else NO/TOO_HARD."""
    if is_non_overlapping_and_dense(t._sizes, t._strides):
        return MemOverlap.NO
    for size, stride in zip(t._sizes, t._strides):
        if size > 1 and stride == 0:
            return MemOverlap.YES
    return MemOverlap.TOO_HARD


def assert_no_internal_overlap(t: Tensor) -> None:
    """Raise PyTorch's error when writing to `t` would write one location twice."""
    if has_internal_overlap(t) == MemOverlap.YES:
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation."
        )


def get_overlap_status(a: Tensor, b: Tensor) -> str:
    """FULL (same elements), PARTIAL, NO or TOO_HARD, as PyTorch computes it."""
    if a is b:
        return MemOverlap.FULL
    if a.numel() == 0 or b.numel() == 0:
        return MemOverlap.NO
    if not is_non_overlapping_and_dense(a._sizes, a._strides) or not is_non_overlapping_and_dense(
        b._sizes, b._strides
    ):
        return MemOverlap.TOO_HARD
    if a._storage is b._storage:
        a_begin = a._offset * a._dtype.itemsize
        a_end = a_begin + a.numel() * a._dtype.itemsize
        b_begin = b._offset * b._dtype.itemsize
        b_end = b_begin + b.numel() * b._dtype.itemsize
        if a_begin == b_begin and a_end == b_end:
            return MemOverlap.FULL if a._strides == b._strides else MemOverlap.PARTIAL
        if a_begin < b_end and b_begin < a_end:
            return MemOverlap.PARTIAL
    return MemOverlap.NO


def assert_no_partial_overlap(a: Tensor, b: Tensor) -> None:
    if get_overlap_status(a, b) == MemOverlap.PARTIAL:
        raise RuntimeError(
            "unsupported operation: some elements of the input tensor and the written-to tensor "
            "refer to a single memory location. Please clone() the tensor before performing the "
            "operation."
        )


def assert_no_overlap(a: Tensor, b: Tensor) -> None:
    status = get_overlap_status(a, b)
    if status in (MemOverlap.PARTIAL, MemOverlap.FULL):
        raise RuntimeError(
            "unsupported operation: some elements of the input tensor and the written-to tensor "
            "refer to a single memory location. Please clone() the tensor before performing the "
            "operation."
        )


def resize_tensor_(t: Tensor, sizes: tuple, strides: tuple | None = None) -> Tensor:
    """Resize in place as `Tensor.resize_` does: new contiguous geometry (or `strides`),
    growing the storage when it is too small. Shrinking never frees bytes."""
    sizes = tuple(sizes)
    for s in sizes:
        if s < 0:
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {s}: {list(sizes)}"
            )
    if strides is None:
        if sizes == t._sizes:
            return t  # PyTorch keeps the strides (even non-contiguous) when the shape is equal
        strides = contiguous_strides(sizes)
    needed = storage_nbytes_needed(sizes, strides, t._offset, t._dtype.itemsize)
    if needed > t._storage.nbytes:
        if needed > (1 << 63) - 1:  # PyTorch's check before it allocates
            raise RuntimeError(
                "Storage size calculation overflowed with sizes="
                f"[{', '.join(str(s) for s in sizes)}]"
            )
        t._storage.resize_(needed)
    t._sizes = sizes
    t._strides = tuple(strides)
    t._np = None
    return t


def set_tensor_(
    t: Tensor, storage: Storage, offset: int, sizes: tuple, strides: tuple | None = None
) -> Tensor:
    """Point `t` at `storage` with the given geometry (`Tensor.set_`)."""
    if strides is None:
        strides = contiguous_strides(tuple(sizes))
    t._storage = storage
    t._offset = offset
    t._sizes = tuple(sizes)
    t._strides = tuple(strides)
    t._np = None
    needed = storage_nbytes_needed(t._sizes, t._strides, offset, t._dtype.itemsize)
    if needed > storage.nbytes:
        storage.resize_(needed)
    return t
