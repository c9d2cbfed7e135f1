"""Indexing along a dim: index_select gather scatter scatter_add scatter_reduce index_add
index_copy index_fill (masks and flat positions: `masked.py`).

Note: positions along a dim. Every op here reads or writes `self` at positions given by an
integer `index` along one dim. The kernels move that dim last and work on flat positions
(`row * size + index`), so a write is one NumPy call on a 1-D buffer: fancy assignment for a
copy (the last duplicate wins, as ATen's serial CPU loop does), `ufunc.at` for `add`,
`multiply`, `amax`/`amin`. A 0-dim tensor behaves as a 1-element 1-d one. Indices are
checked before anything is written, so a bad index leaves every tensor unchanged.

Meta: the structured ops (gather, scatter*, index_add, index_copy) get their Meta kernel from
`meta_*`; the others run the same function, which stops after shaping its output.
"""

from __future__ import annotations

import warnings

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor
from pyaten.core.views import MemOverlap, empty_tensor, has_internal_overlap
from pyaten.native import compiled
from pyaten.native.compiled import same_size_uint
from pyaten.native.family import unsupported_dtype
from pyaten.native.kernels.copy import (
    assign,
    cast_scalar,
    check_no_internal_overlap,
    checked_scalar,
)
from pyaten.native.kernels.shape import format_shape, wrap_dim
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import resize_output

_INT_INDEX = (dt.int64, dt.int32)


def _is_meta(*tensors: Tensor) -> bool:
    return any(t._device.type == "meta" for t in tensors)


def _ndim1(t: Tensor) -> int:
    """ATen's ensure_nonempty_dim: a 0-dim tensor counts as one dim."""
    return max(len(t._sizes), 1)


def _size1(t: Tensor, d: int) -> int:
    return t._sizes[d] if t._sizes else 1


def _rows(arr: np.ndarray, dim: int) -> np.ndarray:
    """`arr` with `dim` moved last (a 0-dim array as one element)."""
    return arr.reshape(1) if arr.ndim == 0 else np.moveaxis(arr, dim, -1)


def _first_bad(index: np.ndarray, size: int, allow_negative: bool = False) -> int | None:
    """The first index outside `[0, size)` (or `[-size, size)`), in C order; None if none."""
    if index.size == 0:
        return None
    low = -size if allow_negative else 0
    if not allow_negative and index.dtype.kind == "i":
        # negatives read as huge unsigned numbers: one pass checks both bounds
        if index.view(index.dtype.str.replace("i", "u")).max() < size:
            return None
    elif index.min() >= low and index.max() < size:
        return None
    bad = (index < low) | (index >= size)
    return int(index.reshape(-1)[np.argmax(bad.reshape(-1))])


def _check_bounds(index: np.ndarray, dim: int, size: int, prefix: str = "",
                  error: type = RuntimeError, allow_negative: bool = False) -> None:
    bad = _first_bad(index, size, allow_negative)
    if bad is not None:
        raise error(f"{prefix}index {bad} is out of bounds for dimension {dim} with size {size}")


def _compute_dtype(dtype: dt.dtype) -> np.dtype:
    """The NumPy dtype a reduction runs in: float16/bfloat16 in float32, complex32 in
    complex64, anything else as it is stored."""
    if dtype in (dt.float16, dt.bfloat16):
        return np.dtype(np.float32)
    if dtype.numpy == dt.COMPLEX32_NUMPY:
        return np.dtype(np.complex64)
    return np.dtype(dtype.numpy)


# --- index_select -----------------------------------------------------------------------------


def _index_select_checks(self: Tensor, dim: int, index: Tensor) -> tuple[int, tuple]:
    dim = wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index._dtype not in _INT_INDEX:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if self.dim() and self._sizes[dim] == 0 and index.numel():
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    sizes = list(self._sizes)
    if sizes:
        sizes[dim] = index.numel()
    return dim, tuple(sizes)


def _index_select_into(self: Tensor, dim: int, index: Tensor, out: Tensor) -> Tensor:
    if _is_meta(self, index, out) or out.numel() == 0 and index.numel() == 0:
        return out
    positions = index._numpy().reshape(-1)
    size = _size1(self, dim)
    if _first_bad(positions, size) is not None:
        raise IndexError("index out of range in self")
    source = self._numpy()
    target = out._numpy()
    if source.ndim and target.flags.c_contiguous and target.dtype == source.dtype:
        np.take(source, positions, axis=dim, out=target, mode="clip")  # bounds checked above
        return out
    picked = source.reshape(1)[positions] if source.ndim == 0 else np.take(source, positions,
                                                                          axis=dim)
    assign(target, picked.reshape(target.shape))
    return out


@native
def index_select_cpu_(self: Tensor, dim: int, index: Tensor) -> Tensor:
    dim, sizes = _index_select_checks(self, dim, index)
    out = empty_tensor(sizes, self._dtype, self._device)
    return _index_select_into(self, dim, index, out)


@native
def index_select_out_cpu_(self: Tensor, dim: int, index: Tensor, out: Tensor) -> Tensor:
    dim, sizes = _index_select_checks(self, dim, index)
    if out._dtype is not self._dtype:
        raise RuntimeError("index_select(): self and result must have the same scalar type")
    resize_output(out, sizes, "index_select")
    _index_select_into(self, dim, index, out)
    out._bump_version()
    return out


# --- gather -----------------------------------------------------------------------------------


def _check_index_dtype(name: str, index: Tensor) -> None:
    if index._dtype not in _INT_INDEX and index.numel():
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


@native
def meta_gather(op, self: Tensor, dim: int, index: Tensor, sparse_grad: bool = False) -> None:
    dim = wrap_dim(dim, self.dim())
    _check_index_dtype("gather", index)
    if index.numel():
        if _ndim1(index) != _ndim1(self):
            raise RuntimeError(
                "Index tensor must have the same number of dimensions as input tensor"
            )
        for d in range(_ndim1(self)):
            if d != dim and _size1(index, d) > _size1(self, d):
                raise RuntimeError(
                    f"Size does not match at dimension {d} expected index "
                    f"{format_shape(index._sizes)} to be no larger than self "
                    f"{format_shape(self._sizes)} apart from dimension {dim}"
                )
    op.set_output(0, index._sizes, self._dtype, self._device)


@native
def gather_out(op, self: Tensor, dim: int, index: Tensor, sparse_grad: bool, out: Tensor) -> None:
    if index.numel() == 0:
        return
    dim = wrap_dim(dim, self.dim())
    positions = index._numpy()
    fast = compiled.loops(positions.size)
    if fast is not None and _compiled_gather(fast, self._numpy(), positions, dim, out._numpy()):
        return
    _check_bounds(positions, dim, _size1(self, dim))
    source = np.ascontiguousarray(self._numpy())
    shape = source.shape or (1,)
    # one flat take (NumPy's take_along_axis is several times slower on large inputs)
    flat = _flat_positions(shape, positions.reshape(positions.shape or (1,)), dim)
    target = out._numpy()
    if target.flags.c_contiguous and target.dtype == source.dtype:
        np.take(source.reshape(-1), flat, out=target.reshape(-1), mode="clip")
        return
    assign(target, np.take(source.reshape(-1), flat).reshape(target.shape))


def _three_d(arr: np.ndarray, dim: int) -> np.ndarray | None:
    """A row-major `arr` as a (before dim, dim, after dim) view; None if not row-major."""
    if not arr.flags.c_contiguous:
        return None
    shape = arr.shape or (1,)
    before = after = 1
    for n in shape[:dim]:
        before *= n
    for n in shape[dim + 1:]:
        after *= n
    return arr.reshape(before, shape[dim], after)


def _spans(index_shape: tuple, shape: tuple, dim: int) -> bool:
    """The index covers `shape` in every dim but `dim` (the compiled loops need it)."""
    return len(index_shape) == len(shape) and all(
        i == s for d, (i, s) in enumerate(zip(index_shape, shape)) if d != dim)


def _compiled_gather(fast, source: np.ndarray, positions: np.ndarray, dim: int,
                     target: np.ndarray) -> bool:
    """gather by the compiled loop (Note: compiled loops); False: take the NumPy path."""
    shape, index_shape = source.shape or (1,), positions.shape or (1,)
    if target.dtype != source.dtype or not _spans(index_shape, shape, dim):
        return False
    src = same_size_uint(np.ascontiguousarray(source))
    out = None if src is None else _three_d(same_size_uint(target), dim)
    index = _three_d(np.ascontiguousarray(positions), dim)
    if out is None or index is None:
        return False
    if fast.gather(_three_d(src, dim), index, out) >= 0:
        _check_bounds(positions, dim, shape[dim])
    return True


# --- scatter, scatter_add, scatter_reduce -----------------------------------------------------


def warn_if_expanded(self: Tensor, name: str) -> None:
    """masked_fill_/index_fill_ still write into an expanded tensor, with PyTorch's warning."""
    if has_internal_overlap(self) == MemOverlap.YES:
        warnings.warn(
            f"Use of {name} on expanded tensors is deprecated. Please clone() the tensor before "
            "performing this operation. This also applies to advanced indexing e.g. "
            "tensor[mask] = scalar",
            UserWarning,
            stacklevel=4,
        )


def _check_written(op, self: Tensor) -> None:
    """In place, `self` must not have elements sharing memory (an expanded tensor)."""
    if op.kind == "inplace":
        check_no_internal_overlap(self)


def _scatter_checks(name: str, self: Tensor, dim: int, index: Tensor, src) -> int:
    dim = wrap_dim(dim, self.dim())
    _check_index_dtype(name, index)
    if isinstance(src, Tensor) and src._dtype is not self._dtype:
        raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
    if index.numel() == 0:
        return dim
    if _ndim1(index) != _ndim1(self):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, Tensor) and _ndim1(src) != _ndim1(index):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    for d in range(_ndim1(self)):
        too_big = d != dim and _size1(index, d) > _size1(self, d)
        if isinstance(src, Tensor):
            if too_big or _size1(index, d) > _size1(src, d):
                raise RuntimeError(
                    f"Expected index {format_shape(index._sizes)} to be no larger than self "
                    f"{format_shape(self._sizes)} apart from dimension {dim} and to be no "
                    f"larger size than src {format_shape(src._sizes)}"
                )
        elif too_big:
            raise RuntimeError(
                f"Expected index {format_shape(index._sizes)} to be no larger than self "
                f"{format_shape(self._sizes)} apart from dimension {dim}"
            )
    return dim


def _flat_positions(shape: tuple, index_arr: np.ndarray, dim: int) -> np.ndarray:
    """Flat positions in a row-major buffer of `shape` for each element of `index_arr`."""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    flat = index_arr.astype(np.int64, copy=False)
    if strides[dim] != 1:
        flat = flat * strides[dim]
    for d, s in enumerate(index_arr.shape):
        if d != dim and s > 1:
            view = [1] * index_arr.ndim
            view[d] = s
            flat = flat + (np.arange(s, dtype=np.int64) * strides[d]).reshape(view)
    return np.broadcast_to(flat, index_arr.shape).reshape(-1)


class _Scattered:
    """`out` as a flat row-major buffer and the flat positions `index` names along `dim`."""

    def __init__(self, out: Tensor, dim: int, index: Tensor) -> None:
        self.out = out
        target = out._numpy()
        self.shape = target.shape if target.ndim else (1,)
        positions = index._numpy()
        _check_bounds(positions, dim, self.shape[dim])
        self.positions = _flat_positions(self.shape, positions.reshape(positions.shape or (1,)),
                                         dim)
        self.index_shape = positions.shape or (1,)
        self.dim = dim
        self.direct = False

    def values(self, src) -> np.ndarray:
        if not isinstance(src, Tensor):
            return src
        arr = src._numpy()
        arr = arr.reshape(1) if arr.ndim == 0 else arr
        return arr[tuple(slice(0, s) for s in self.index_shape)].reshape(-1)

    def buffer(self, dtype: np.dtype | None = None) -> np.ndarray:
        """`out` as a flat array (in `dtype`) to compute into: `out` itself when it is
        row-major of that dtype, else a copy that `store` writes back."""
        target = self.out._numpy()
        self.direct = target.flags.c_contiguous and (dtype is None or dtype == target.dtype)
        if self.direct:
            return target.reshape(-1)
        flat = np.ascontiguousarray(target).reshape(-1)
        return flat.astype(dtype) if dtype is not None and dtype != flat.dtype else flat.copy()

    def store(self, flat: np.ndarray) -> None:
        if self.direct:
            return
        target = self.out._numpy()
        assign(target, flat.reshape(target.shape))


def _copy_self(op, self: Tensor, out: Tensor) -> None:
    """Functional and out= forms start from a copy of `self` (in place it is `self`)."""
    if out is not self:
        assign(out._numpy(), self._numpy())


# The dtypes the compiled loop adds and multiplies in directly (others: the NumPy path).
_ARITHMETIC = frozenset(np.dtype(k) for k in (
    "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "complex64", "complex128"))


def _compiled_scatter(out: Tensor, dim: int, index: Tensor, src, reduce: str | None) -> bool:
    """scatter/scatter_add by the compiled loop (Note: compiled loops); False: NumPy path."""
    positions = index._numpy()
    fast = compiled.loops(positions.size)
    target = out._numpy()
    shape, index_shape = target.shape or (1,), positions.shape or (1,)
    if fast is None or not _spans(index_shape, shape, dim):
        return False
    values = src._numpy() if isinstance(src, Tensor) else np.asarray(src)
    if values.dtype != target.dtype:
        return False
    if reduce is None:
        dst, values, mode = same_size_uint(target), same_size_uint(values), 0
    elif target.dtype in _ARITHMETIC:
        dst, mode = target, 1 if reduce == "add" else 2
    else:
        return False
    dst = None if dst is None else _three_d(dst, dim)
    flat_index = _three_d(np.ascontiguousarray(positions), dim)
    if dst is None or flat_index is None or fast.check(flat_index, shape[dim]) >= 0:
        return False  # the NumPy path (which also raises the bad index's error)
    if isinstance(src, Tensor):
        values = values.reshape(values.shape or (1,))
        if values.shape != index_shape:
            values = values[tuple(slice(0, n) for n in index_shape)]
        values = _three_d(np.ascontiguousarray(values), dim)
    else:
        values = values.reshape(1, 1, 1)
    fast.scatter(dst, flat_index, values, mode)
    return True


def _scatter_write(out: Tensor, dim: int, index: Tensor, src, reduce: str | None) -> None:
    if index.numel() == 0 or out.numel() == 0:
        return
    if _compiled_scatter(out, dim, index, src, reduce):
        return
    place = _Scattered(out, dim, index)
    values = place.values(src)
    if reduce is None:
        flat = place.buffer()
        is_array = isinstance(values, np.ndarray)
        flat[place.positions] = _cast_to(values, flat.dtype) if is_array else values
        place.store(flat)
        return
    compute = _compute_dtype(out._dtype)
    flat = place.buffer(compute)
    values = values.astype(compute, copy=False) if isinstance(values, np.ndarray) else values
    if flat.dtype == np.bool_:
        if reduce == "add":
            np.logical_or.at(flat, place.positions, values)
        else:
            np.logical_and.at(flat, place.positions, values)
    elif reduce == "add":
        np.add.at(flat, place.positions, values)
    else:
        np.multiply.at(flat, place.positions, values)
    place.store(flat)


def _cast_to(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if values.dtype == dtype:
        return values
    result = np.empty(values.shape, dtype)
    assign(result, values)
    return result


_SCATTER_REDUCES = {"add": "add", "multiply": "multiply"}


def _scatter_reduce_name(reduce: str) -> str:
    if reduce not in _SCATTER_REDUCES:
        raise RuntimeError("reduce argument must be either add or multiply.")
    return _SCATTER_REDUCES[reduce]


@native
def meta_scatter_src(op, self: Tensor, dim: int, index: Tensor, src: Tensor) -> None:
    _scatter_checks("scatter", self, dim, index, src)
    _check_written(op, self)
    op.set_output(0, self._sizes, self._dtype, self._device)


@native
def scatter_src_out(op, self: Tensor, dim: int, index: Tensor, src: Tensor, out: Tensor) -> None:
    _copy_self(op, self, out)
    _scatter_write(out, wrap_dim(dim, self.dim()), index, src, None)


@native
def meta_scatter_value(op, self: Tensor, dim: int, index: Tensor, value) -> None:
    _scatter_checks("scatter", self, dim, index, value)
    _check_written(op, self)
    op.set_output(0, self._sizes, self._dtype, self._device)


@native
def scatter_value_out(op, self: Tensor, dim: int, index: Tensor, value, out: Tensor) -> None:
    _copy_self(op, self, out)
    _scatter_write(out, wrap_dim(dim, self.dim()), index, cast_scalar(value, self._dtype), None)


@native
def meta_scatter_reduce(op, self: Tensor, dim: int, index: Tensor, src: Tensor,
                        reduce: str) -> None:
    _scatter_checks("scatter", self, dim, index, src)
    _scatter_reduce_name(reduce)
    warnings.warn(
        "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed "
        "in a future PyTorch release. Use torch.scatter_reduce instead for more reduction "
        "options.",
        UserWarning,
        stacklevel=4,
    )
    _check_written(op, self)
    op.set_output(0, self._sizes, self._dtype, self._device)


@native
def scatter_reduce_out(op, self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str,
                       out: Tensor) -> None:
    _copy_self(op, self, out)
    _scatter_write(out, wrap_dim(dim, self.dim()), index, src, _scatter_reduce_name(reduce))


@native
def meta_scatter_value_reduce(op, self: Tensor, dim: int, index: Tensor, value,
                              reduce: str) -> None:
    _scatter_checks("scatter", self, dim, index, value)
    _scatter_reduce_name(reduce)
    _check_written(op, self)
    op.set_output(0, self._sizes, self._dtype, self._device)


@native
def scatter_value_reduce_out(op, self: Tensor, dim: int, index: Tensor, value, reduce: str,
                             out: Tensor) -> None:
    _copy_self(op, self, out)
    value = cast_scalar(value, self._dtype)
    _scatter_write(out, wrap_dim(dim, self.dim()), index, value, _scatter_reduce_name(reduce))


@native
def meta_scatter_add(op, self: Tensor, dim: int, index: Tensor, src: Tensor) -> None:
    _scatter_checks("scatter", self, dim, index, src)
    _check_written(op, self)
    op.set_output(0, self._sizes, self._dtype, self._device)


@native
def scatter_add_out(op, self: Tensor, dim: int, index: Tensor, src: Tensor, out: Tensor) -> None:
    _copy_self(op, self, out)
    _scatter_write(out, wrap_dim(dim, self.dim()), index, src, "add")


_TWO_REDUCES = ("sum", "prod", "mean", "amax", "amin")


@native
def meta_scatter_reduce_two(op, self: Tensor, dim: int, index: Tensor, src: Tensor,
                            reduce: str, include_self: bool = True) -> None:
    _scatter_checks("scatter_reduce", self, dim, index, src)
    if reduce not in _TWO_REDUCES:
        raise RuntimeError(
            "reduce argument must be either sum, prod, mean, amax or amin, got " + reduce
        )
    _check_written(op, self)
    op.set_output(0, self._sizes, self._dtype, self._device)


def _identity(reduce: str, dtype: np.dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    if dtype.kind == "b":
        return reduce == "amin"
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


@native
def scatter_reduce_two_out(op, self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str,
                           include_self: bool, out: Tensor) -> None:
    if reduce in ("amax", "amin") and self._dtype.is_complex or (
        reduce == "mean" and self._dtype is dt.bool
    ):
        raise unsupported_dtype(f"scatter_gather_tensor_cpu_reduce_{reduce}", self._dtype)
    _copy_self(op, self, out)
    if index.numel() == 0 or out.numel() == 0:
        return
    dim = wrap_dim(dim, self.dim())
    place = _Scattered(out, dim, index)
    compute = _compute_dtype(out._dtype)
    flat = place.buffer(compute)
    values = place.values(src).astype(compute, copy=False)
    positions = place.positions
    if not include_self:
        flat[positions] = _identity(reduce, compute)
    if compute == np.bool_:
        ufunc = {"sum": np.logical_or, "mean": np.logical_or, "prod": np.logical_and,
                 "amax": np.logical_or, "amin": np.logical_and}[reduce]
    else:
        ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
                 "amin": np.minimum}[reduce]
    ufunc.at(flat, positions, values)
    if reduce == "mean":
        counts = np.bincount(positions, minlength=flat.size)
        if include_self:
            counts += 1
        counts = np.maximum(counts, 1)
        if compute.kind in "iu":
            np.floor_divide(flat, counts.astype(compute), out=flat)
        elif compute.kind != "b":
            np.divide(flat, counts, out=flat, casting="unsafe")
    place.store(flat)


# --- index_add, index_copy, index_fill ----------------------------------------------------------


def _index_vector_1d(name: str, index: Tensor) -> None:
    if index.dim() > 1:
        raise IndexError(
            f"{name}(): Index is supposed to be a vector, but got dim: {index.dim()} with type: "
            f"{index._dtype.scalar_name} and size: {format_shape(index._sizes)}"
        )


def _index_source_shape(self: Tensor, dim: int, source: Tensor) -> None:
    if self.dim() and source.dim() and any(
        s != t for d, (s, t) in enumerate(zip(self._sizes, source._sizes)) if d != dim
    ) or (self.dim() != source.dim() and self.dim() > 1 and source.dim() > 0):
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified "
            f"dimension. Got self.shape = {format_shape(self._sizes)} source.shape = "
            f"{format_shape(source._sizes)}"
        )


@native
def meta_index_add(op, self: Tensor, dim: int, index: Tensor, source: Tensor, alpha=1) -> dict:
    dim = wrap_dim(dim, self.dim())
    _index_vector_1d("index_add_", index)
    if index._dtype not in _INT_INDEX:
        raise RuntimeError(
            f"index_add_(): Expected dtype int32/int64 for index but got: "
            f"{index._dtype.scalar_name}"
        )
    if self._dtype is not source._dtype:
        raise RuntimeError(
            f"index_add_(): self ({self._dtype.scalar_name}) and source "
            f"({source._dtype.scalar_name}) must have the same scalar type"
        )
    if index.numel() != _size1(source, dim if source.dim() else 0):
        raise RuntimeError(
            f"index_add_(): Number of indices ({index.numel()}) should be equal to "
            f"source.size(dim): ({_size1(source, dim if source.dim() else 0)}), for dim: {dim}"
        )
    _index_source_shape(self, dim, source)
    _check_written(op, self)
    op.set_output(0, self._sizes, self._dtype, self._device)
    return {"dim": dim}


def _slices_first(arr: np.ndarray, dim: int) -> np.ndarray:
    """A view of `arr` with `dim` first (a 0-dim array as one element)."""
    return arr.reshape(1) if arr.ndim == 0 else np.moveaxis(arr, dim, 0)


def _add_slices(rows: np.ndarray, positions: np.ndarray, values: np.ndarray, add) -> None:
    """rows[positions[i]] += values[i] for every i, duplicates included: each round adds the
    first remaining occurrence of every position (one vectorised fancy-index update)."""
    pending = np.arange(positions.size)
    while pending.size:
        _, first = np.unique(positions[pending], return_index=True)
        chosen = pending[first]
        where = positions[chosen]
        rows[where] = add(rows[where], values[chosen])
        pending = np.delete(pending, first)


@native
def index_add_cpu_out(op, self: Tensor, dim: int, index: Tensor, source: Tensor, alpha,
                      out: Tensor) -> None:
    _copy_self(op, self, out)
    if index.numel() == 0 or out.numel() == 0:
        return
    positions = index._numpy().reshape(-1)
    if self.dim() <= 1 and _first_bad(positions, _size1(self, dim), False) is not None:
        raise IndexError("index out of range in self")  # PyTorch's 1-d index_add_cpu_ loop
    _check_bounds(positions, dim, _size1(self, dim))
    compute = _compute_dtype(out._dtype)
    target = out._numpy()
    direct = target.dtype == compute
    work = target if direct else target.astype(compute)
    values = _slices_first(source._numpy(), dim).astype(compute, copy=False)
    fast = compiled.loops(values.size)
    if fast is not None and compute in _ARITHMETIC and work.flags.c_contiguous:
        if alpha != 1:
            values = values * cast_scalar(alpha, out._dtype).astype(compute)
        shape = work.shape or (1,)
        before = int(np.prod(shape[:dim], dtype=np.int64))
        fast.index_add(work.reshape(before, shape[dim], -1), np.ascontiguousarray(positions),
                       np.moveaxis(values, 0, dim).reshape(before, positions.size, -1))
    elif compute == np.bool_:
        _add_slices(_slices_first(work, dim), positions, values & bool(alpha), np.logical_or)
    else:
        if alpha != 1:
            values = values * cast_scalar(alpha, out._dtype).astype(compute)
        _add_slices(_slices_first(work, dim), positions, values, np.add)
    if not direct:
        assign(target, work)


@native
def meta_index_copy(op, self: Tensor, dim: int, index: Tensor, source: Tensor) -> dict:
    dim = wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError("index_copy_(): Index should have dimension 1 or 0 (got "
                         f"{index.dim()})")
    if index._dtype is not dt.int64:
        raise RuntimeError(
            f"index_copy_(): Expected a long tensor for index, but got {index._dtype.scalar_name}"
        )
    if self._dtype is not source._dtype:
        raise RuntimeError(
            "index_copy_(): self and source expected to have the same dtype, but got (self) "
            f"{self._dtype.scalar_name} and (source) {source._dtype.scalar_name}"
        )
    if self.dim() != source.dim() and self.dim() and source.dim():
        raise IndexError(
            "index_copy_(): When source and destination are not scalars, their "
            f"dimensionality must match. Source dimensionality ({source.dim()}), destination "
            f"dimensionality ({self.dim()})"
        )
    if self.dim() and source.dim():
        for d in range(self.dim()):
            if d != dim and self._sizes[d] != source._sizes[d]:
                raise RuntimeError(
                    f"index_copy_(): Source/destination tensor must have same slice shapes. "
                    f"Destination slice shape: {_slice_shape(self, dim)} at dimension {dim} "
                    f"and source slice shape: {_slice_shape(source, dim)} at dimension 0."
                )
    count = _size1(source, dim if source.dim() else 0)
    if index.numel() != count:
        raise IndexError(
            f"index_copy_(): Number of indices ({index.numel()}) should be equal to "
            f"source.size(dim) ({count})"
        )
    _check_written(op, self)
    op.set_output(0, self._sizes, self._dtype, self._device)
    return {"dim": dim}


def _slice_shape(t: Tensor, dim: int) -> str:
    return ", ".join(str(s) for d, s in enumerate(t._sizes) if d != dim)


@native
def index_copy_out(op, self: Tensor, dim: int, index: Tensor, source: Tensor,
                   out: Tensor) -> None:
    _copy_self(op, self, out)
    if index.numel() == 0 or out.numel() == 0:
        return
    positions = index._numpy().reshape(-1)
    _check_bounds(positions, dim, _size1(self, dim), "index_copy_(): ", IndexError)
    rows = _slices_first(out._numpy(), dim)
    rows[positions] = _slices_first(source._numpy(), dim)  # the last duplicate wins


def _index_fill_checks(self: Tensor, dim: int, index: Tensor, value) -> int:
    dim = wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if index._dtype is not dt.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if isinstance(value, Tensor) and value.dim():
        raise RuntimeError(
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.dim()} dimension(s)."
        )
    return dim


@native
def index_fill_(self: Tensor, dim: int, index: Tensor, value) -> Tensor:
    dim = _index_fill_checks(self, dim, index, value)
    warn_if_expanded(self, "index_fill_")
    if isinstance(value, Tensor):
        fill = None if _is_meta(value) else cast_scalar(value._numpy().item(), self._dtype)
    else:
        fill = checked_scalar(value, self._dtype)
    if not _is_meta(self, index) and index.numel() and self.numel():
        positions = index._numpy().reshape(-1)
        size = _size1(self, dim)
        _check_bounds(positions, dim, size, error=IndexError, allow_negative=True)
        positions = np.where(positions < 0, positions + size, positions)
        target = self._numpy()
        _rows(target, dim)[..., positions] = fill
    self._bump_version()
    return self


@native
def index_fill(self: Tensor, dim: int, index: Tensor, value) -> Tensor:
    aten = _aten()
    result = aten.clone.default(self, None)
    if isinstance(value, Tensor):
        return aten.index_fill_.int_Tensor(result, dim, index, value)
    return aten.index_fill_.int_Scalar(result, dim, index, value)
