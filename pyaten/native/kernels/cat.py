"""Concatenation and splitting: cat (structured), and the composites stack, split,
split_with_sizes, chunk and unbind (views made by slice/select, each a dispatched call).

Note: legacy empty tensors. For backward compatibility ATen skips 1-d tensors of size 0
(`torch.empty(0)`) when checking shapes, whatever the other tensors' rank; they still take
part in type promotion. When every input is such a tensor the result is one of them: shape
[0]. The result dtype is the promotion of all inputs (or the `out=` tensor's dtype, which
the inputs must be castable to); the layout is channels-last when the first shape-giving
input is, else contiguous.
"""

from __future__ import annotations

import numpy as np

from pyaten.core.accel import ACCEL
from pyaten.core.broadcast import new_row_major
from pyaten.core.device import CPU
from pyaten.core.promotion import can_cast, promote_types
from pyaten.core.tensor import Tensor
from pyaten.core.views import assert_no_overlap, channels_last_strides, is_channels_last_strides
from pyaten.native import fastpath
from pyaten.native.kernels.copy import assign, check_no_internal_overlap
from pyaten.native.kernels.shape import format_shape, wrap_dim
from pyaten.native.ops_handles import aten_ops
from pyaten.native.registry import native
from pyaten.native.structured import resize_output


def _is_legacy_empty(t: Tensor) -> bool:
    return t._sizes == (0,)


def _cat_dtype(tensors) -> object:
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = promote_types(dtype, t.dtype)
    return dtype


def _fast_cat_shape(tensors, dim: int):
    """Result sizes when every input has one dtype, device and rank (the common case), else
    None. Legacy empty inputs, 0-dim inputs and mismatches take the full path."""
    first = tensors[0]
    sizes = first._sizes
    ndim = len(sizes)
    if ndim == 0 or sizes == (0,) or not -ndim <= dim < ndim:
        return None
    d = dim + ndim if dim < 0 else dim
    dtype, device = first._dtype, first._device
    total = sizes[d]
    for t in tensors[1:]:
        other = t._sizes
        if t._dtype is not dtype or t._device is not device or len(other) != ndim:
            return None
        if other[:d] != sizes[:d] or other[d + 1 :] != sizes[d + 1 :]:
            return None
        total += other[d]
    return sizes[:d] + (total,) + sizes[d + 1 :]


@native
def meta_cat(op, tensors, dim: int = 0) -> None:
    if tensors and op.maybe_get_output(0) is None:
        sizes = _fast_cat_shape(tensors, dim)
        if sizes is not None and (len(sizes) != 4 or tensors[0].is_contiguous()):
            op.set_output(0, sizes, tensors[0]._dtype, tensors[0]._device)
            return
    if len(tensors) == 0:
        raise ValueError("pyaten.cat(): expected a non-empty list of Tensors")
    first_device = tensors[0].device
    for i, t in enumerate(tensors):
        if len(t._sizes) == 0:
            raise RuntimeError(
                f"zero-dimensional tensor (at position {i}) cannot be concatenated"
            )
        if t.device != first_device:
            raise RuntimeError(
                f"Tensor on device {t.device} is not on the expected device {first_device}!"
            )
    dtype = _cat_dtype(tensors)
    out = op.maybe_get_output(0)
    if out is not None:
        if not can_cast(dtype, out.dtype):
            raise TypeError(
                "pyaten.cat(): input types can't be cast to the desired output type "
                f"{out.dtype.scalar_name}"
            )
        check_no_internal_overlap(out)
        for t in tensors:
            assert_no_overlap(out, t)
        dtype = out.dtype
    valid = next((i for i, t in enumerate(tensors) if not _is_legacy_empty(t)), None)
    if valid is None:
        op.set_output(0, (0,), dtype, tensors[0].device)
        return
    reference = tensors[valid]
    ndim = len(reference._sizes)
    d = wrap_dim(dim, ndim)
    sizes = list(reference._sizes)
    total = 0
    for i, t in enumerate(tensors):
        if _is_legacy_empty(t):
            continue
        if len(t._sizes) != ndim:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {ndim} and {len(t._sizes)}"
            )
        for axis in range(ndim):
            if axis != d and t._sizes[axis] != sizes[axis]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{sizes[axis]} but got size {t._sizes[axis]} for tensor number {i} in the "
                    "list."
                )
        total += t._sizes[d]
    sizes[d] = total
    sizes = tuple(sizes)
    strides = None
    if ndim == 4 and is_channels_last_strides(reference._sizes, reference._strides) and not (
        reference.is_contiguous()
    ):
        strides = channels_last_strides(sizes)
    op.set_output(0, sizes, dtype, reference.device, strides)


@native
def cat_out_cpu(op, tensors, dim: int, out: Tensor) -> None:
    pieces = [t for t in tensors if not _is_legacy_empty(t)]
    if not pieces or out.numel() == 0:
        return
    d = wrap_dim(dim, len(pieces[0]._sizes))
    target = out._numpy()
    if all(t._dtype is out._dtype for t in pieces):
        # one NumPy call when no element needs a cast
        np.concatenate([t._numpy() for t in pieces], axis=d, out=target)
        return
    lead = (slice(None),) * d
    position = 0
    for t in pieces:
        size = t._sizes[d]
        if size:
            assign(target[lead + (slice(position, position + size),)], t._numpy())
        position += size


def _fast_cat(tensors, dim: int = 0):
    """cat's fast path (Note: the structured fast path): CPU tensors of one dtype and rank,
    sizes agreeing off `dim`, none 4-d (whose layout rule is the general path's), into a new
    row-major result with one NumPy call. The accelerator's `cat` replaces it (a memcpy per
    block for contiguous inputs; Note: the accelerator); this stays the reference."""
    if not tensors or tensors[0]._device is not CPU:
        return None
    sizes = _fast_cat_shape(tensors, dim)
    if sizes is None or len(sizes) == 4 or 0 in sizes:
        return None
    out = new_row_major(sizes, tensors[0]._dtype, CPU)
    np.concatenate([fastpath.array(t) for t in tensors], dim, out._np)
    return out


_fast_cat_reference = _fast_cat
if ACCEL is not None:
    _fast_cat = ACCEL.cat_function()  # noqa: F811

fastpath.register("cat", _fast_cat, None, __file__)


# --- composites: stack and the splits ----------------------------------------------------


@native
def stack(tensors, dim: int = 0) -> Tensor:
    if len(tensors) == 0:
        raise RuntimeError("stack expects a non-empty TensorList")
    first = tensors[0]._sizes
    for i, t in enumerate(tensors[1:], start=1):
        if t._sizes != first:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {format_shape(first)} at "
                f"entry 0 and {format_shape(t._sizes)} at entry {i}"
            )
    d = wrap_dim(dim, len(first) + 1)
    aten = aten_ops()
    return aten.cat.default([aten.unsqueeze.default(t, d) for t in tensors], d)


@native
def stack_out(tensors, dim: int = 0, out: Tensor = None) -> Tensor:
    result = stack(tensors, dim)
    resize_output(out, result._sizes, "stack")
    return aten_ops().copy_.default(out, result)


def _split_dim(self: Tensor, dim: int, op: str) -> int:
    if not self._sizes:
        raise RuntimeError(f"{op} expects at least a 1-dimensional tensor")
    return wrap_dim(dim, len(self._sizes))


@native
def split(self: Tensor, split_size: int, dim: int = 0) -> list:
    d = _split_dim(self, dim, "split")
    if split_size < 0:
        raise RuntimeError(
            f"split expects split_size be non-negative, but got split_size={split_size}"
        )
    size = self._sizes[d]
    if split_size == 0 and size != 0:
        raise RuntimeError(
            f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}"
        )
    count = max((size + split_size - 1) // split_size, 1) if split_size else 1
    slice_op = aten_ops().slice.Tensor
    return [
        slice_op(self, d, i * split_size, min((i + 1) * split_size, size), 1)
        for i in range(count)
    ]


@native
def split_with_sizes(self: Tensor, split_sizes: tuple, dim: int = 0) -> list:
    d = _split_dim(self, dim, "split_with_sizes")
    size = self._sizes[d]
    if any(s < 0 for s in split_sizes):
        raise RuntimeError(
            "split_with_sizes expects split_sizes have only non-negative entries, but got "
            f"split_sizes={format_shape(split_sizes)}"
        )
    if sum(split_sizes) != size:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
            f"size at dimension {d}), but got split_sizes={format_shape(split_sizes)}"
        )
    slice_op = aten_ops().slice.Tensor
    pieces = []
    start = 0
    for length in split_sizes:
        pieces.append(slice_op(self, d, start, start + length, 1))
        start += length
    return pieces


@native
def split_sizes(self: Tensor, split_size: tuple, dim: int = 0) -> list:
    return aten_ops().split_with_sizes.default(self, split_size, dim)


@native
def chunk(self: Tensor, chunks: int, dim: int = 0) -> list:
    if not self._sizes:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, len(self._sizes))
    size = self._sizes[d]
    split_size = (size + chunks - 1) // chunks
    if split_size == 0 and size == 0:
        # every chunk of an empty dim is empty, and there are `chunks` of them
        return aten_ops().split_with_sizes.default(self, (0,) * chunks, d)
    return aten_ops().split.Tensor(self, split_size, d)  # through the dispatcher, as ATen


@native
def unbind(self: Tensor, dim: int = 0) -> list:
    sizes = self._sizes
    if not sizes:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, len(sizes))
    select_op = aten_ops().select.int
    return [select_op(self, d, i) for i in range(sizes[d])]
