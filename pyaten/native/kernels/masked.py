"""Writes and reads by mask and by flat position: masked_fill masked_select masked_scatter,
take put, and take_along_dim (CompositeImplicitAutograd over `gather`).

Masks are bool (uint8 is refused with PyTorch's messages) and broadcast: to `self`'s shape in
place, both ways for `masked_select`. `take`/`put` read `self` as if flattened in row-major
order and accept negative positions. As in `gather.py`, positions are checked before anything
is written. `masked_select` has no Meta kernel (its size depends on the mask's values).
"""

from __future__ import annotations

import warnings

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.broadcast import infer_sizes
from pyaten.core.size import contiguous_format
from pyaten.core.tensor import Tensor
from pyaten.core.views import empty_tensor
from pyaten.native.kernels.copy import (
    assign,
    check_no_internal_overlap,
    checked_scalar,
)
from pyaten.native.kernels.gather import (
    _cast_to,
    _compute_dtype,
    _first_bad,
    _is_meta,
    _size1,
    warn_if_expanded,
)
from pyaten.native.kernels.shape import expand_strides, format_shape, wrap_dim
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import resize_output

# --- masked_fill, masked_select, masked_scatter -----------------------------------------------


def _broadcast_into(self: Tensor, mask: Tensor) -> None:
    shape = infer_sizes(self._sizes, mask._sizes)
    if shape != tuple(self._sizes):
        raise RuntimeError(
            f"output with shape {format_shape(self._sizes)} doesn't match the broadcast shape "
            f"{format_shape(shape)}"
        )


@native
def masked_fill_(self: Tensor, mask: Tensor, value) -> Tensor:
    if mask._dtype is not dt.bool:
        raise RuntimeError(
            "masked_fill_ only supports boolean masks, but got mask with dtype "
            f"{mask._dtype.cpp_name}"
        )
    if isinstance(value, Tensor):
        if value.dim():
            raise RuntimeError(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.dim()} dimension(s)."
            )
        fill = None if _is_meta(value) else checked_scalar(value._numpy().item(), self._dtype)
    else:
        fill = checked_scalar(value, self._dtype)
    warn_if_expanded(self, "masked_fill_")
    _broadcast_into(self, mask)
    if not _is_meta(self, mask) and self.numel():
        target = self._numpy()
        np.copyto(target, fill, where=np.broadcast_to(mask._numpy(), target.shape),
                  casting="unsafe")
    self._bump_version()
    return self


@native
def masked_fill(self: Tensor, mask: Tensor, value) -> Tensor:
    aten = _aten()
    shape = infer_sizes(mask._sizes, self._sizes)
    source = self if shape == tuple(self._sizes) else aten.expand.default(self, shape, False)
    result = aten.clone.default(source, contiguous_format if source is not self else None)
    if isinstance(value, Tensor):
        return aten.masked_fill_.Tensor(result, mask, value)
    return aten.masked_fill_.Scalar(result, mask, value)


def _masked_select_checks(self: Tensor, mask: Tensor) -> tuple:
    if mask._dtype is not dt.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    return infer_sizes(mask._sizes, self._sizes)


def _masked_select_values(self: Tensor, mask: Tensor, shape: tuple) -> np.ndarray:
    data = np.broadcast_to(self._numpy(), shape)
    return data[np.broadcast_to(mask._numpy(), shape)]


@native
def masked_select_cpu(self: Tensor, mask: Tensor) -> Tensor:
    shape = _masked_select_checks(self, mask)
    picked = _masked_select_values(self, mask, shape)
    out = empty_tensor((picked.size,), self._dtype, self._device)
    assign(out._numpy(), picked)
    return out


@native
def masked_select_out_cpu(self: Tensor, mask: Tensor, out: Tensor) -> Tensor:
    shape = _masked_select_checks(self, mask)
    if out._dtype is not self._dtype:
        raise RuntimeError(
            "masked_select(): self and result must have the same scalar type"
        )
    picked = _masked_select_values(self, mask, shape)
    resize_output(out, (picked.size,), "masked_select")
    assign(out._numpy(), picked)
    out._bump_version()
    return out


@native
def masked_scatter__cpu(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    if mask._dtype is dt.uint8:
        warnings.warn(
            "masked_scatter_ received a mask with dtype torch.uint8, this behavior is now "
            "deprecated,please use a mask with dtype torch.bool instead.",
            UserWarning,
            stacklevel=3,
        )
    if mask._dtype is not dt.bool:
        raise RuntimeError(
            "masked_scatter_ only supports boolean masks, but got mask with dtype "
            f"{mask._dtype.scalar_name}"
        )
    if self._dtype is not source._dtype:
        raise RuntimeError(
            "masked_scatter: expected self and source to have same dtypes but got"
            f"{self._dtype.scalar_name} and {source._dtype.scalar_name}"
        )
    check_no_internal_overlap(self)
    # ATen expands the mask to self's shape (expand's error, not a broadcast one)
    expand_strides(mask._sizes, mask._strides, self._sizes, "masked_scatter_")
    if not _is_meta(self, mask, source) and self.numel():
        target = self._numpy()
        where = np.broadcast_to(mask._numpy(), target.shape)
        count = int(np.count_nonzero(where))
        if count > source.numel():
            raise RuntimeError("Number of elements of source < number of ones in mask")
        values = np.ascontiguousarray(source._numpy()).reshape(-1)[:count]
        target[where] = _cast_to(values, target.dtype)
    self._bump_version()
    return self


@native
def masked_scatter(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    aten = _aten()
    shape = infer_sizes(self._sizes, mask._sizes)
    expanded = self if shape == tuple(self._sizes) else aten.expand.default(self, shape, False)
    result = aten.clone.default(expanded, contiguous_format)
    return aten.masked_scatter_.default(result, mask, source)


# --- take, put, take_along_dim ------------------------------------------------------------------


def _flat_index(name: str, self: Tensor, index: Tensor) -> np.ndarray | None:
    if index._dtype is not dt.int64:
        raise RuntimeError(
            f"{name}(): Expected a long tensor for index, but got {index._dtype.scalar_name}"
        )
    if _is_meta(self, index) or index.numel() == 0:
        return None
    numel = self.numel()
    if numel == 0:
        raise IndexError(f"{name}(): tried to take from an empty tensor")
    positions = index._numpy().reshape(-1)
    bad = _first_bad(positions, numel, allow_negative=True)
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {numel} "
                         "elements.")
    return np.where(positions < 0, positions + numel, positions)


@native
def take(self: Tensor, index: Tensor) -> Tensor:
    out = empty_tensor(index._sizes, self._dtype, self._device)
    positions = _flat_index("take", self, index)
    if positions is not None:
        flat = np.ascontiguousarray(self._numpy()).reshape(-1)
        assign(out._numpy(), flat[positions].reshape(index._sizes))
    return out


@native
def take_out(self: Tensor, index: Tensor, out: Tensor) -> Tensor:
    if out._dtype is not self._dtype:
        raise RuntimeError(
            f"take(): self and out expected to have the same dtype, but got self.dtype = "
            f"{self._dtype.scalar_name} and out.dtype = {out._dtype.scalar_name}"
        )
    positions = _flat_index("take", self, index)
    resize_output(out, index._sizes, "take")
    if positions is not None:
        flat = np.ascontiguousarray(self._numpy()).reshape(-1)
        assign(out._numpy(), flat[positions].reshape(index._sizes))
    out._bump_version()
    return out


@native
def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    if index._dtype is not dt.int64:
        raise RuntimeError(
            f"put_(): Expected a long tensor for index, but got {index._dtype.scalar_name}"
        )
    if self._dtype is not source._dtype:
        raise RuntimeError(
            "put_(): self and source expected to have the same dtype, but got self.dtype = "
            f"{self._dtype.scalar_name} and source.dtype = {source._dtype.scalar_name}"
        )
    if index.numel() != source.numel():
        raise IndexError(
            "put_(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source.numel()}, index.numel() = {index.numel()}"
        )
    check_no_internal_overlap(self)
    positions = _flat_index("put_", self, index)
    if positions is not None:
        target = self._numpy()
        flat = np.ascontiguousarray(target).reshape(-1).copy()
        values = np.ascontiguousarray(source._numpy()).reshape(-1)
        if accumulate:
            compute = _compute_dtype(self._dtype)
            work = flat.astype(compute)
            if compute == np.bool_:
                np.logical_or.at(work, positions, values)
            else:
                np.add.at(work, positions, values.astype(compute))
            assign(flat, work)
        else:
            flat[positions] = values
        assign(target, flat.reshape(target.shape))
    self._bump_version()
    return self


@native
def put(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    aten = _aten()
    return aten.put_.default(aten.clone.default(self, None), index, source, accumulate)


def _take_along_dim_indices(self: Tensor, indices: Tensor, dim):
    if indices._dtype is not dt.int64:
        raise RuntimeError(
            "pyaten.take_along_dim(): dtype of indices should be Long but got "
            f"{indices._dtype.scalar_name}"
        )
    aten = _aten()
    if dim is None:
        flat = aten.reshape.default(self, (-1,))
        return flat, aten.reshape.default(indices, (-1,)), 0
    dim = wrap_dim(dim, self.dim())
    if self.dim() != indices.dim():
        raise RuntimeError(
            "pyaten.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {self.dim()} dimensions for input, and {indices.dim()} "
            "dimensions for indices"
        )
    self_sizes = list(self._sizes)
    index_sizes = list(indices._sizes)
    if self_sizes:
        self_sizes[dim] = indices._sizes[dim]
        broadcast = list(infer_sizes(tuple(self_sizes), tuple(indices._sizes)))
        index_sizes = list(broadcast)
        broadcast[dim] = self._sizes[dim]
        source = aten.expand.default(self, tuple(broadcast), False)
        indices = aten.expand.default(indices, tuple(index_sizes), False)
    else:
        source = self
    return source, indices, dim


def _wrap_negative(aten, indices: Tensor, size: int) -> Tensor:
    return aten.where.self(aten.lt.Scalar(indices, 0),
                           aten.add.Scalar(indices, size, 1), indices)


@native
def take_along_dim(self: Tensor, indices: Tensor, dim=None) -> Tensor:
    aten = _aten()
    source, indices, d = _take_along_dim_indices(self, indices, dim)
    indices = _wrap_negative(aten, indices, _size1(source, d))
    return aten.gather.default(source, d, indices, False)


@native
def take_along_dim_out(self: Tensor, indices: Tensor, dim=None, out: Tensor = None) -> Tensor:
    aten = _aten()
    source, indices, d = _take_along_dim_indices(self, indices, dim)
    indices = _wrap_negative(aten, indices, _size1(source, d))
    return aten.gather.out(source, d, indices, False, out)
