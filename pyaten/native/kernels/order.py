"""Order statistics along a dim: median, nanmedian, mode, kthvalue, quantile, nanquantile.

Each sorts (stably; NaN sorts last, as in ATen) and picks: the lower median at rank
`(n - 1) // 2`, the k-th smallest, the most frequent value (the smallest among equally
frequent ones, with the index of its last occurrence), or an interpolated quantile. `median`
and `quantile` propagate NaN; the `nan*` forms skip it. The values-and-indices forms return
`(values, indices)` and have `*_out` kernels; Meta kernels give the shapes.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor
from pyaten.core.views import empty_tensor
from pyaten.native.family import ALL_AND_REDUCED, unsupported_dtype
from pyaten.native.kernels.copy import assign
from pyaten.native.kernels.quick_select import kth_smallest
from pyaten.native.kernels.scan import resize_values_and_indices
from pyaten.native.kernels.shape import wrap_dim
from pyaten.native.reduction import reduced_sizes
from pyaten.native.registry import native
from pyaten.native.structured import resize_output

_ORDER_DTYPES = ALL_AND_REDUCED


def _acc(dtype: dt.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype in (dt.float16, dt.bfloat16) else dtype.numpy


def _rows(self: Tensor, dim: int) -> np.ndarray:
    """`self` with `dim` moved last (a 0-dim tensor as one row of one element)."""
    arr = self._numpy().astype(_acc(self._dtype), copy=False)
    return arr.reshape(1) if self.dim() == 0 else np.moveaxis(arr, dim, -1)


def _check_nonempty_dim(name: str, self: Tensor, dim: int) -> None:
    if self.dim() and self._sizes[dim] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")


def _outputs(self: Tensor, dim: int, keepdim: bool, values=None, indices=None,
             name: str = "") -> tuple[Tensor, Tensor]:
    """New (values, indices) of the reduced shape, or the given ones checked and resized."""
    shape = reduced_sizes(tuple(self._sizes), (dim,), keepdim)
    if values is None:
        return (empty_tensor(shape, self._dtype, self._device),
                empty_tensor(shape, dt.int64, self._device))
    resize_values_and_indices(values, indices, self._dtype, shape, name, prefix=f"{name}(): ")
    return values, indices


def _store(values: Tensor, indices: Tensor, v: np.ndarray, i: np.ndarray,
           keepdim: bool, dim: int, ndim: int) -> None:
    if keepdim and ndim:
        v, i = np.expand_dims(v, dim), np.expand_dims(i, dim)
    assign(values._numpy(), v.reshape(values._numpy().shape))
    assign(indices._numpy(), i.reshape(indices._numpy().shape))
    values._bump_version()
    indices._bump_version()


def _pick(rows: np.ndarray, ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The value and original index at sorted position `ranks` (one per row)."""
    order = np.argsort(rows, axis=-1, kind="stable")
    index = np.take_along_axis(order, ranks[..., None], axis=-1)[..., 0]
    value = np.take_along_axis(rows, index[..., None], axis=-1)[..., 0]
    return value, index


# --- median / nanmedian ------------------------------------------------------------------------


def _median_rows(rows: np.ndarray, ignore_nan: bool) -> tuple[np.ndarray, np.ndarray]:
    n = rows.shape[-1]
    if rows.dtype.kind == "f":
        nan = np.isnan(rows)
        valid = n - nan.sum(axis=-1)
    else:
        nan = None
        valid = np.full(rows.shape[:-1], n)
    counted = valid if ignore_nan else np.full(rows.shape[:-1], n)
    ranks = np.maximum((counted - 1) // 2, 0)
    value, index = _pick(rows, ranks)
    if nan is not None and not ignore_nan:
        has_nan = valid < n
        if has_nan.any():  # the median is NaN, indexed at the row's first NaN
            value = np.where(has_nan, np.nan, value)
            index = np.where(has_nan, np.argmax(nan, axis=-1), index)
    return value, index


def _median_dim(self, dim, keepdim, values, indices, ignore_nan: bool):
    ndim = self.dim()
    dim = wrap_dim(dim, ndim)
    _check_nonempty_dim("median", self, dim)  # nanmedian's message says median() too
    if self._dtype not in _ORDER_DTYPES:
        raise unsupported_dtype("median_out", self._dtype)
    values, indices = _outputs(self, dim, keepdim, values, indices, "median")
    if self._device.type == "meta" or self.numel() == 0:
        return values, indices
    v, i = _median_rows(_rows(self, dim), ignore_nan)
    _store(values, indices, v, i, keepdim, dim, ndim)
    return values, indices


def _median_all(self: Tensor, ignore_nan: bool) -> Tensor:
    result = empty_tensor((), self._dtype, self._device)
    if self._device.type == "meta":
        return result
    if self.numel() == 0:  # NaN, cast as C++ casts it, whatever the dtype
        assign(result._numpy(), np.asarray(np.nan))
        return result
    if self._dtype not in _ORDER_DTYPES:
        raise unsupported_dtype("median_cpu", self._dtype)
    flat = self._numpy().astype(_acc(self._dtype), copy=False).reshape(1, -1)
    value, _ = _median_rows(flat, ignore_nan)
    assign(result._numpy(), value.reshape(()))
    return result


@native
def median_cpu(self: Tensor) -> Tensor:
    return _median_all(self, False)


@native
def nanmedian_cpu(self: Tensor) -> Tensor:
    return _median_all(self, True)


@native
def median_all_meta(self: Tensor) -> Tensor:
    return empty_tensor((), self._dtype, self._device)


@native
def median(self: Tensor, dim: int, keepdim: bool = False):
    """median.dim (CompositeExplicitAutograd): new outputs, then `median.dim_values`."""
    return _median_dim(self, dim, keepdim, None, None, False)


@native
def nanmedian(self: Tensor, dim: int, keepdim: bool = False):
    return _median_dim(self, dim, keepdim, None, None, True)


@native
def median_out_cpu(self: Tensor, dim: int, keepdim: bool = False, values=None, indices=None):
    return _median_dim(self, dim, keepdim, values, indices, False)


@native
def nanmedian_out_cpu(self: Tensor, dim: int, keepdim: bool = False, values=None,
                      indices=None):
    return _median_dim(self, dim, keepdim, values, indices, True)


# --- mode, kthvalue ----------------------------------------------------------------------------


def _mode_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    flat = rows.reshape(-1, rows.shape[-1])
    values = np.empty(flat.shape[0], rows.dtype)
    indices = np.empty(flat.shape[0], np.int64)
    for r, row in enumerate(flat):
        order = np.argsort(row, kind="stable")
        ordered = row[order]
        # runs of equal values (NaN equals nothing, so each NaN is a run of its own)
        starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        counts = np.diff(np.append(starts, len(row)))
        best = int(np.argmax(counts))  # the first longest run: the smallest value
        start, count = starts[best], counts[best]
        values[r] = ordered[start]
        indices[r] = order[start:start + count].max()  # the value's last occurrence
    return values.reshape(rows.shape[:-1]), indices.reshape(rows.shape[:-1])


def _mode(self, dim, keepdim, values, indices):
    ndim = self.dim()
    dim = wrap_dim(dim, ndim)
    _check_nonempty_dim("mode", self, dim)
    values, indices = _outputs(self, dim, keepdim, values, indices, "mode")
    if self._device.type == "meta" or self.numel() == 0:
        return values, indices
    if ndim and self._dtype not in _ORDER_DTYPES | {dt.bool}:  # 0-dim: the value itself
        raise unsupported_dtype("mode_cpu", self._dtype)
    v, i = _mode_rows(_rows(self, dim))
    _store(values, indices, v, i, keepdim, dim, ndim)
    return values, indices


@native
def mode(self: Tensor, dim: int = -1, keepdim: bool = False):
    return _mode(self, dim, keepdim, None, None)


@native
def mode_out(self: Tensor, dim: int = -1, keepdim: bool = False, values=None, indices=None):
    return _mode(self, dim, keepdim, values, indices)


def _kthvalue(self, k, dim, keepdim, values, indices):
    ndim = self.dim()
    dim = wrap_dim(dim, ndim)
    size = self._sizes[dim] if ndim else 1
    _check_nonempty_dim("kthvalue", self, dim)
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    if ndim and self._dtype not in _ORDER_DTYPES:  # a 0-dim tensor is its own k-th value
        raise unsupported_dtype("kthvalue_cpu", self._dtype)
    values, indices = _outputs(self, dim, keepdim, values, indices, "kthvalue")
    if self._device.type == "meta" or self.numel() == 0:
        return values, indices
    v, i = kth_smallest(_rows(self, dim), k - 1)  # ties: see Note: ties in kthvalue
    _store(values, indices, v, i, keepdim, dim, ndim)
    return values, indices


@native
def kthvalue(self: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    """kthvalue (CompositeExplicitAutograd): new outputs, then `kthvalue.values`."""
    return _kthvalue(self, k, dim, keepdim, None, None)


@native
def kthvalue_out_cpu(self: Tensor, k: int, dim: int = -1, keepdim: bool = False, values=None,
                     indices=None):
    return _kthvalue(self, k, dim, keepdim, values, indices)


# --- quantile / nanquantile --------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_checks(self: Tensor, q, interpolation: str) -> None:
    if self.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if isinstance(q, Tensor):
        if q.dim() > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if self._dtype not in (dt.float32, dt.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if isinstance(q, Tensor) and q._dtype is not self._dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(
            "quantile() interpolation must be one of linear, lower, higher, midpoint or "
            f"nearest, but got {interpolation}"
        )
    if isinstance(q, Tensor) and q._device.type == "meta":
        return
    if isinstance(q, Tensor):
        values = q._host_values()  # a composite kernel: read through math bits
        if not ((values >= 0) & (values <= 1)).all():
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
    elif not 0 <= q <= 1:
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")


def _quantile_shape(self: Tensor, q, dim, keepdim: bool) -> tuple:
    q_shape = tuple(q._sizes) if isinstance(q, Tensor) else ()
    if dim is None:
        rest = (1,) * self.dim() if keepdim else ()
    else:
        rest = reduced_sizes(tuple(self._sizes), (wrap_dim(dim, self.dim()),), keepdim)
    return q_shape + rest


def _lerp(low: np.ndarray, high: np.ndarray, weight: np.ndarray) -> np.ndarray:
    # ATen's lerp: from the nearer end, so weight 1 gives `high` exactly
    return np.where(weight < 0.5, low + weight * (high - low), high - (high - low) * (1 - weight))


def _quantile_rows(rows: np.ndarray, qs: np.ndarray, interpolation: str,
                   ignore_nan: bool) -> np.ndarray:
    """Quantiles of each row (last axis): shape `qs.shape + rows.shape[:-1]`."""
    ordered = np.sort(rows, axis=-1)  # NaN last
    n = rows.shape[-1]
    nan_count = np.isnan(rows).sum(axis=-1)
    valid = n - nan_count if ignore_nan else np.full(rows.shape[:-1], n)
    last = np.maximum(valid - 1, 0).astype(rows.dtype)
    ranks = qs.reshape(qs.shape + (1,) * last.ndim) * last
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)  # half to even, as ATen's round
    below = np.floor(ranks).astype(np.int64)
    above = np.ceil(ranks).astype(np.int64)
    expanded = np.broadcast_to(ordered, qs.shape + ordered.shape)
    low = np.take_along_axis(expanded, below[..., None], axis=-1)[..., 0]
    high = np.take_along_axis(expanded, above[..., None], axis=-1)[..., 0]
    if interpolation == "midpoint":
        result = _lerp(low, high, np.full(low.shape, 0.5, rows.dtype))
    else:
        result = _lerp(low, high, (ranks - below).astype(rows.dtype))
    # NaN where the row has one (quantile) or has nothing else (nanquantile)
    poisoned = (valid == 0) if ignore_nan else (nan_count > 0)
    return np.where(poisoned, np.nan, result).astype(rows.dtype)


def _quantile_graph(self: Tensor, q, dim, keepdim: bool, interpolation: str,
                    ignore_nan: bool) -> Tensor:
    """quantile as ATen composes it (sort the rows, rank, gather at the ranks, lerp), in
    tensor operations only, so that autograd records its pieces and vmap batches them (no
    value is read: `vmap(grad(quantile))` runs); used when `self` requires grad (the values
    are the NumPy path's)."""
    from pyaten.native.ops_handles import aten_ops

    ops = aten_ops()
    ndim = self.dim()
    d = None if dim is None else wrap_dim(dim, ndim)
    if d is None:
        rows = ops.reshape.default(self, [-1])
    elif d == ndim - 1:
        rows = self
    else:
        rows = ops.transpose.int(ops.unsqueeze.default(self, -1), d, -1)
    ordered = ops.sort.default(rows, -1, False)[0]  # NaN last
    if isinstance(q, Tensor):
        qs = ops.reshape.default(q, [-1])
    else:
        qs = empty_tensor((1,), self._dtype, self._device)
        assign(qs._numpy(), np.asarray([q], dtype=self._dtype.numpy))
    nans = ops.isnan.default(ordered)
    last = ordered._sizes[-1] - 1
    if ignore_nan:  # rank q * (valid - 1), at least 0 (all NaN: the first, a NaN)
        valid = ops.sum.dim_IntList(ops.logical_not.default(nans), [-1], True)
        ranks = ops.clamp_min.default(ops.mul.Tensor(qs, ops.sub.Scalar(valid, 1)), 0)
    else:  # rank q * (n - 1), the last (a NaN) where the row has one
        ranks = ops.where.ScalarSelf(ops.any.dim(nans, -1, True), last,
                                     ops.mul.Scalar(qs, last))
    if interpolation == "lower":
        ranks = ops.floor.default(ranks)
    elif interpolation == "higher":
        ranks = ops.ceil.default(ranks)
    elif interpolation == "nearest":
        ranks = ops.round.default(ranks)  # half to even, as ATen's round
    below = ops._to_copy.default(ranks, dtype=dt.int64)
    result = ops.gather.default(ordered, -1, below, False)
    if interpolation in ("linear", "midpoint"):
        above = ops._to_copy.default(ops.ceil.default(ranks), dtype=dt.int64)
        upper = ops.gather.default(ordered, -1, above, False)
        weights = (ops.full_like.default(ranks, 0.5) if interpolation == "midpoint"
                   else ops.sub.Tensor(ranks, below))
        result = ops.lerp.Tensor(result, upper, weights)
    if isinstance(q, Tensor) and q.dim() > 0:
        result = ops.movedim.int(result, -1, 0)  # the quantiles first
    else:
        result = ops.squeeze.dim(result, -1)
    return ops.reshape.default(result, list(_quantile_shape(self, q, dim, keepdim)))


def _quantile(self, q, dim, keepdim, interpolation, out, ignore_nan: bool) -> Tensor:
    _quantile_checks(self, q, interpolation)
    shape = _quantile_shape(self, q, dim, keepdim)
    # A graph (or a forward-mode tangent) needs the differentiable composition.
    differentiated = self._requires_grad or self._fw_grad is not None
    if out is None and differentiated and self._device.type != "meta":
        return _quantile_graph(self, q, dim, keepdim, interpolation, ignore_nan)
    if out is None:
        out = empty_tensor(shape, self._dtype, self._device)
    else:
        if out._dtype is not self._dtype:
            raise RuntimeError("quantile() out tensor must be same dtype as the input tensor")
        resize_output(out, shape, "quantile")
    if self._device.type == "meta":
        return out
    arr = self._host_values()  # a composite kernel: read through math bits (Note: math bits)
    if dim is None:
        rows = arr.reshape(-1)
    else:
        d = wrap_dim(dim, self.dim())
        rows = arr.reshape(1) if self.dim() == 0 else np.moveaxis(arr, d, -1)
    qs = np.asarray(q._host_values() if isinstance(q, Tensor) else q, dtype=arr.dtype)
    with np.errstate(invalid="ignore"):
        result = _quantile_rows(rows, qs, interpolation, ignore_nan)
    assign(out._numpy(), result.reshape(shape))
    out._bump_version()
    return out


@native
def quantile(self: Tensor, q: Tensor, dim=None, keepdim: bool = False,
             interpolation: str = "linear") -> Tensor:
    """quantile: sort each row, pick or interpolate at rank `q * (n - 1)`."""
    return _quantile(self, q, dim, keepdim, interpolation, None, False)


@native
def quantile_scalar(self: Tensor, q: float, dim=None, keepdim: bool = False,
                    interpolation: str = "linear") -> Tensor:
    return _quantile(self, q, dim, keepdim, interpolation, None, False)


@native
def quantile_out(self: Tensor, q: Tensor, dim=None, keepdim: bool = False,
                 interpolation: str = "linear", out: Tensor = None) -> Tensor:
    return _quantile(self, q, dim, keepdim, interpolation, out, False)


@native
def quantile_scalar_out(self: Tensor, q: float, dim=None, keepdim: bool = False,
                        interpolation: str = "linear", out: Tensor = None) -> Tensor:
    return _quantile(self, q, dim, keepdim, interpolation, out, False)


@native
def nanquantile(self: Tensor, q: Tensor, dim=None, keepdim: bool = False,
                interpolation: str = "linear") -> Tensor:
    return _quantile(self, q, dim, keepdim, interpolation, None, True)


@native
def nanquantile_scalar(self: Tensor, q: float, dim=None, keepdim: bool = False,
                       interpolation: str = "linear") -> Tensor:
    return _quantile(self, q, dim, keepdim, interpolation, None, True)


@native
def nanquantile_out(self: Tensor, q: Tensor, dim=None, keepdim: bool = False,
                    interpolation: str = "linear", out: Tensor = None) -> Tensor:
    return _quantile(self, q, dim, keepdim, interpolation, out, True)


@native
def nanquantile_scalar_out(self: Tensor, q: float, dim=None, keepdim: bool = False,
                           interpolation: str = "linear", out: Tensor = None) -> Tensor:
    return _quantile(self, q, dim, keepdim, interpolation, out, True)


# --- Meta: the same functions, which stop after shaping their outputs --------------------------


@native
def median_out_meta(self: Tensor, dim: int, keepdim: bool = False, values=None, indices=None):
    return _median_dim(self, dim, keepdim, values, indices, False)


@native
def nanmedian_out_meta(self: Tensor, dim: int, keepdim: bool = False, values=None,
                       indices=None):
    return _median_dim(self, dim, keepdim, values, indices, True)


@native
def mode_meta(self: Tensor, dim: int = -1, keepdim: bool = False):
    return _mode(self, dim, keepdim, None, None)


@native
def kthvalue_out_meta(self: Tensor, k: int, dim: int = -1, keepdim: bool = False, values=None,
                      indices=None):
    return _kthvalue(self, k, dim, keepdim, values, indices)
