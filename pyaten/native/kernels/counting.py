"""Counting values: unique (the `_unique`, `_unique2`, `unique_dim`, `unique_consecutive`,
`unique_dim_consecutive` kernels and the Python forms `unique`/`unique_consecutive`/
`nonzero(as_tuple=)` PyTorch binds by hand), bincount, histc and histogram.

Each NaN is a value of its own (NaN != NaN), as in ATen; values are ordered as in `sorting.py`.
The results' sizes depend on the data, so none of these has a Meta kernel except `histc`.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor
from pyaten.core.views import empty_tensor
from pyaten.native.family import unsupported_dtype
from pyaten.native.kernels.copy import _CPP_TYPE_NAMES, checked_scalar
from pyaten.native.kernels.shape import format_shape, wrap_dim
from pyaten.native.kernels.sorting import _is_meta, _ordered, _store
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import resize_output

# --- unique -------------------------------------------------------------------------------------


def _unique_dtype_check(self: Tensor, name: str) -> None:
    if self._dtype.is_complex:
        raise unsupported_dtype(name, self._dtype)


def _new(values: np.ndarray, dtype: dt.dtype, device) -> Tensor:
    out = empty_tensor(values.shape, dtype, device)
    if values.size:
        _store(out, values)
    return out


def _empty_long(device) -> Tensor:
    return empty_tensor((0,), dt.int64, device)


def _runs(ordered: np.ndarray) -> np.ndarray:
    """True where a new value starts (NaN equals nothing, so each NaN starts a run)."""
    new = np.ones(ordered.size, bool)
    if ordered.size:
        np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    return new


def _dense_unique(arr: np.ndarray, need_inverse: bool):
    """unique of integers spanning a range no wider than the array: counted, not sorted."""
    low, high = int(arr.min()), int(arr.max())
    if high - low > 2 * arr.size:
        return None
    shifted = arr.astype(np.int64) - low
    tally = np.bincount(shifted, minlength=high - low + 1)
    present = np.flatnonzero(tally)
    values = (present + low).astype(arr.dtype)
    inverse = None
    if need_inverse:
        inverse = (np.cumsum(tally > 0) - 1)[shifted]
    return values, inverse, tally[present]


def _flat_unique(arr: np.ndarray, consecutive: bool, need_inverse: bool = True):
    """(values, inverse, counts) of a 1-d array; each NaN is a value of its own. Without
    `need_inverse` the inverse is None and a plain sort suffices (no argsort)."""
    keyed = _ordered(arr)
    if consecutive:
        new = _runs(keyed)
        starts = np.flatnonzero(new)
        counts = np.diff(np.append(starts, keyed.size))
        return arr[starts], np.cumsum(new) - 1, counts
    if keyed.dtype.kind in "iub" and keyed.size:
        found = _dense_unique(keyed, need_inverse)
        if found is not None:
            return found
    if not need_inverse:
        ordered = np.sort(keyed)
        new = _runs(ordered)
        starts = np.flatnonzero(new)
        counts = np.diff(np.append(starts, ordered.size))
        return ordered[starts].astype(arr.dtype, copy=False), None, counts
    order = np.argsort(keyed, kind="stable")
    ordered = keyed[order]
    new = _runs(ordered)
    inverse = np.empty(ordered.size, np.int64)
    inverse[order] = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, ordered.size))
    return arr[order[starts]], inverse, counts


def _unique_flat(self: Tensor, return_inverse: bool, return_counts: bool, name: str,
                 consecutive: bool = False):
    _unique_dtype_check(self, name)
    arr = self._numpy().reshape(-1)
    values, inverse, counts = _flat_unique(arr, consecutive, return_inverse)
    device = self._device
    inverse_t = _new(inverse.reshape(self._sizes), dt.int64, device) if return_inverse \
        else _empty_long(device)
    counts_t = _new(counts, dt.int64, device) if return_counts else _empty_long(device)
    return _new(values, self._dtype, device), inverse_t, counts_t


@native
def _unique_cpu(self: Tensor, sorted: bool = True, return_inverse: bool = False):  # noqa: A002
    values, inverse, _ = _unique_flat(self, return_inverse, False, "unique")
    return values, inverse


@native
def _unique2_cpu(self: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
                 return_counts: bool = False):
    return _unique_flat(self, return_inverse, return_counts, "unique")


def _unique_along(self: Tensor, dim: int, consecutive: bool, name: str):
    dim = wrap_dim(dim, self.dim(), wrap_scalar=False)
    _unique_dtype_check(self, name)
    sizes = self._sizes
    device = self._device
    if sizes[dim] == 0:
        return (empty_tensor(sizes, self._dtype, device), _empty_long(device),
                _empty_long(device))
    if any(s == 0 for d, s in enumerate(sizes) if d != dim):
        raise RuntimeError(
            "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied"
        )
    slices = np.moveaxis(self._numpy(), dim, 0)
    rows = _ordered(slices.reshape(sizes[dim], -1))
    if consecutive:
        changed = np.ones(rows.shape[0], bool)
        changed[1:] = (rows[1:] != rows[:-1]).any(axis=1)
        starts = np.flatnonzero(changed)
        inverse = np.cumsum(changed) - 1
        counts = np.diff(np.append(starts, rows.shape[0]))
        picked = starts
    else:
        _, picked, inverse, counts = np.unique(rows, axis=0, return_index=True,
                                               return_inverse=True, return_counts=True)
    values = np.moveaxis(slices[picked], 0, dim)
    return (_new(np.ascontiguousarray(values), self._dtype, device),
            _new(inverse.reshape(-1), dt.int64, device), _new(counts, dt.int64, device))


@native
def unique_dim_cpu(self: Tensor, dim: int, sorted: bool = True,  # noqa: A002
                   return_inverse: bool = False, return_counts: bool = False):
    return _unique_along(self, dim, False, "unique_dim")


@native
def unique_dim_consecutive_cpu(self: Tensor, dim: int, return_inverse: bool = False,
                               return_counts: bool = False):
    return _unique_along(self, dim, True, "unique_dim")


@native
def unique_consecutive_cpu(self: Tensor, return_inverse: bool = False,
                           return_counts: bool = False, dim=None):
    if dim is not None:
        return _unique_along(self, dim, True, "unique_dim")
    return _unique_flat(self, return_inverse, return_counts, "unique", consecutive=True)


# --- bincount, histc, histogram -----------------------------------------------------------------


@native
def _bincount_cpu(self: Tensor, weights=None, minlength: int = 0) -> Tensor:
    if self._dtype is dt.bool or not self._dtype.is_integral:
        raise unsupported_dtype("bincount_cpu", self._dtype)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    arr = self._numpy()
    if self.dim() != 1 or (arr.size and arr.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.dim() != 1 or weights.numel() != self.numel()):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    length = max(minlength, int(arr.max()) + 1 if arr.size else 0)
    if weights is None:
        return _new(np.bincount(arr, minlength=length), dt.int64, self._device)
    dtype = weights._dtype if weights._dtype in (dt.float32, dt.float64) else dt.float64
    counted = np.bincount(arr, weights=weights._numpy().astype(np.float64), minlength=length)
    return _new(counted, dtype, self._device)


def _linspace(low: float, high: float, steps: int, dtype: np.dtype) -> np.ndarray:
    """PyTorch's linspace: from both ends towards the middle, in `dtype`."""
    start, end = np.asarray(low, dtype), np.asarray(high, dtype)
    step = (end - start) / dtype.type(steps - 1) if steps > 1 else dtype.type(0)
    i = np.arange(steps).astype(dtype)
    half = steps // 2
    return np.where(np.arange(steps) < half, start + step * i,
                    end - step * (dtype.type(steps - 1) - i)).astype(dtype)


def _format_number(value: float) -> str:
    return f"{value:g}" if np.isfinite(value) else ("inf" if value > 0 else
                                                    "-inf" if value < 0 else "nan")


def _histc_range(self: Tensor, bins: int, low, high) -> tuple[float, float]:
    if bins <= 0:
        raise RuntimeError(f"pyaten.histogram(): bins must be > 0, but got {bins} for dimension 0")
    low, high = float(low), float(high)
    if low > high:
        raise RuntimeError("pyaten.histc: max must be larger than min")
    if low == high and self.numel() and not _is_meta(self):
        arr = self._numpy()
        low, high = float(np.min(arr)), float(np.max(arr))
    if low == high:
        low, high = low - 1, high + 1
    if not (np.isfinite(low) and np.isfinite(high)):
        raise RuntimeError(
            f"pyaten.histc: range of [{_format_number(low)}, {_format_number(high)}] is not "
            "finite"
        )
    return low, high


def _histc_counts(self: Tensor, bins: int, low: float, high: float) -> np.ndarray:
    dtype = _ordered(self._numpy().reshape(-1)[:0]).dtype
    values = _ordered(self._numpy().reshape(-1))
    lo, hi = dtype.type(low), dtype.type(high)
    inside = values[(values >= lo) & (values <= hi)]
    with np.errstate(invalid="ignore", over="ignore"):
        pos = ((inside - lo) * dtype.type(bins) / (hi - lo)).astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    return np.bincount(pos, minlength=bins)[:bins].astype(np.float64)


def _histc(self: Tensor, bins: int, low, high, out) -> Tensor:
    if self._dtype is dt.bool:
        raise unsupported_dtype("linspace_cpu", self._dtype)  # ATen fails making the edges
    if self._dtype.is_complex and float(low) == float(high):
        raise unsupported_dtype("aminmax_cpu", self._dtype)  # the range comes from the data
    if not self._dtype.is_floating_point:
        if not self._dtype.is_signed and min(float(low), float(high)) < 0:
            raise RuntimeError(
                f"value cannot be converted to type {_cpp_type(self._dtype)} without overflow"
            )
        checked_scalar(low, self._dtype)  # ATen converts the range to the dtype first
        checked_scalar(high, self._dtype)
        raise unsupported_dtype("histogram_cpu", self._dtype)
    low, high = _histc_range(self, bins, low, high)
    if out is None:
        out = empty_tensor((bins,), self._dtype, self._device)
    else:
        if out._dtype is not self._dtype:
            raise RuntimeError(
                "pyaten.histogram: input tensor and hist tensor should have the same dtype, but "
                f"got input {self._dtype.cpp_name} and hist {out._dtype.cpp_name}"
            )
        resize_output(out, (bins,), "histc")
        out._bump_version()
    if not _is_meta(self, out):
        _store(out, _histc_counts(self, bins, low, high))
    return out


@native
def histogram_histc(self: Tensor, bins: int = 100, min=0, max=0) -> Tensor:  # noqa: A002
    return _histc(self, bins, min, max, None)


@native
def histogram_histc_out(self: Tensor, bins: int = 100, min=0, max=0,  # noqa: A002
                        out: Tensor = None) -> Tensor:
    return _histc(self, bins, min, max, out)


def _histogram_checks(self: Tensor, bins, bin_range, weight) -> None:
    if weight is not None and weight._dtype is not self._dtype:
        raise RuntimeError(
            "pyaten.histogramdd: if weight tensor is provided, input tensor and weight tensor "
            f"should have the same dtype, but got input({_cpp_type(self._dtype)}), and "
            f"weight({_cpp_type(weight._dtype)})"
        )
    # the edges come from the data (ATen's aminmax, float/double only) unless given
    edges_given = isinstance(bins, Tensor) or bin_range is not None or self.numel() == 0
    if edges_given and self._dtype in (dt.float16, dt.bfloat16):
        return
    if self._dtype not in (dt.float32, dt.float64):
        # which ATen step refuses first depends on whether the edges come from the data
        if bin_range is not None and self._dtype.is_integral:
            for bound in bin_range:
                checked_scalar(bound, self._dtype)
        if edges_given:
            step = "linspace_cpu" if self._dtype is dt.bool and bin_range else "histogram_cpu"
            raise unsupported_dtype(step, self._dtype)
        raise unsupported_dtype("histogramdd", self._dtype)
    if isinstance(bins, Tensor) and bins._dtype is not self._dtype:
        raise RuntimeError(
            "pyaten.histogramdd: input tensor and bins tensors should have the same dtype, but "
            f"got input with dtype {self._dtype.cpp_name} and bins for dimension 0 with dtype "
            f"{bins._dtype.cpp_name}"
        )
    if weight is not None and tuple(weight._sizes) != tuple(self._sizes):
        raise RuntimeError(
            "pyaten.histogramdd: if weight tensor is provided it should have the same shape as "
            "the input tensor excluding its innermost dimension, but got input with shape "
            f"{format_shape(tuple(self._sizes) + (1,))} and weight with shape "
            f"{format_shape(weight._sizes)}"
        )


def _cpp_type(dtype: dt.dtype) -> str:
    return _CPP_TYPE_NAMES.get(dtype.scalar_name, dtype.scalar_name)


def _histogram_counts(self: Tensor, edges: np.ndarray, weight, density: bool) -> np.ndarray:
    values = _ordered(self._numpy().reshape(-1))
    edges = _ordered(edges)
    keep = (values >= edges[0]) & (values <= edges[-1])
    bins = edges.size - 1
    pos = np.minimum(np.searchsorted(edges, values[keep], side="right") - 1, bins - 1)
    w = None if weight is None else _ordered(weight._numpy().reshape(-1))[keep]
    hist = np.bincount(pos, weights=w, minlength=bins)[:bins].astype(np.float64)
    if density:
        widths = np.diff(edges.astype(np.float64))
        with np.errstate(divide="ignore", invalid="ignore"):
            hist = hist / (hist.sum() * widths)
    return hist


def _histogram(self, bins, bin_range, weight, density, hist, bin_edges):
    _histogram_checks(self, bins, bin_range, weight)
    dtype = _ordered(self._numpy().reshape(-1)[:0]).dtype if not _is_meta(self) else None
    if isinstance(bins, Tensor):
        edges = bins._numpy()
        count = bins.numel() - 1
    else:
        if bins <= 0:
            raise RuntimeError(
                f"pyaten.histogramdd(): bins must be > 0, but got {bins} for dimension 0"
            )
        count = bins
        if bin_range is not None:
            low, high = float(bin_range[0]), float(bin_range[1])
            if low > high:
                raise RuntimeError(
                    "pyaten.histogramdd: min should not exceed max, but got min "
                    f"{_format_number(low)} max {_format_number(high)} for dimension 0"
                )
        elif self.numel():
            arr = _ordered(self._numpy())
            low, high = float(arr.min()), float(arr.max())
        else:
            low, high = 0.0, 1.0
        if low == high:
            low, high = low - 0.5, high + 0.5
        edges = _linspace(low, high, count + 1, dtype)
    device = self._device
    if hist is None:
        hist = empty_tensor((count,), self._dtype, device)
        bin_edges = empty_tensor((count + 1,), self._dtype, device)
    else:
        resize_output(hist, (count,), "histogram")
        resize_output(bin_edges, (count + 1,), "histogram")
        hist._bump_version()
        bin_edges._bump_version()
    _store(bin_edges, np.asarray(edges))
    _store(hist, _histogram_counts(self, np.asarray(edges), weight, density))
    return hist, bin_edges


@native
def histogram_tensor_bins(self: Tensor, bins: Tensor, weight=None, density: bool = False):
    return _histogram(self, bins, None, weight, density, None, None)


@native
def histogram_tensor_bins_out(self: Tensor, bins: Tensor, weight=None, density: bool = False,
                              hist=None, bin_edges=None):
    return _histogram(self, bins, None, weight, density, hist, bin_edges)


@native
def histogram_bin_ct(self: Tensor, bins: int = 100, range=None, weight=None,  # noqa: A002
                     density: bool = False):
    return _histogram(self, bins, range, weight, density, None, None)


@native
def histogram_bin_ct_out(self: Tensor, bins: int = 100, range=None, weight=None,  # noqa: A002
                         density: bool = False, hist=None, bin_edges=None):
    return _histogram(self, bins, range, weight, density, hist, bin_edges)


# --- the Python forms PyTorch binds by hand: unique, unique_consecutive, nonzero(as_tuple) -------


def attach_python_forms(namespace: dict) -> None:
    """`pyaten.unique`/`Tensor.unique` (torch.functional's wrapper over `_unique2` and
    `unique_dim`), `unique_consecutive` returning only what was asked for, and
    `nonzero(as_tuple=True)`; each calls the op handles, so every step dispatches."""
    aten = _aten()
    generated_nonzero = namespace["nonzero"]

    def unique(input, sorted=True, return_inverse=False, return_counts=False,  # noqa: A002
               dim=None):
        if dim is not None:
            result = aten.unique_dim.default(input, dim, sorted, return_inverse, return_counts)
        else:
            result = aten._unique2.default(input, sorted, return_inverse, return_counts)
        return _pick(result, return_inverse, return_counts)

    def unique_consecutive(input, return_inverse=False, return_counts=False,  # noqa: A002
                           dim=None):
        result = aten.unique_consecutive.default(input, return_inverse, return_counts, dim)
        return _pick(result, return_inverse, return_counts)

    def nonzero(input, *, out=None, as_tuple=False):  # noqa: A002
        if as_tuple:
            return aten.nonzero_numpy.default(input)
        if out is None:
            return generated_nonzero(input)
        return generated_nonzero(input, out=out)

    def tensor_unique(self, sorted=True, return_inverse=False, return_counts=False,  # noqa: A002
                      dim=None):
        return unique(self, sorted, return_inverse, return_counts, dim)

    def tensor_unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
        return unique_consecutive(self, return_inverse, return_counts, dim)

    def tensor_nonzero(self, *, as_tuple=False):
        return nonzero(self, as_tuple=as_tuple)

    namespace["unique"] = unique
    namespace["unique_consecutive"] = unique_consecutive
    namespace["nonzero"] = nonzero
    Tensor.unique = tensor_unique
    Tensor.unique_consecutive = tensor_unique_consecutive
    Tensor.nonzero = tensor_nonzero


def _pick(result: tuple, return_inverse: bool, return_counts: bool):
    output, inverse, counts = result
    if return_inverse and return_counts:
        return output, inverse, counts
    if return_inverse:
        return output, inverse
    if return_counts:
        return output, counts
    return output
