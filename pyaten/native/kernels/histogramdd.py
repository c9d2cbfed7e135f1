"""`histogramdd`: an N-dimensional histogram of the M points held by an (..., N) input.

As in ATen, `histogramdd` itself is `CompositeImplicitAutograd`: it asks `_histogramdd_bin_edges`
for the edges (bins given as counts) and `_histogramdd_from_bin_cts` or
`_histogramdd_from_bin_tensors` for the counts. Those three are CPU kernels only, with no Meta
kernel and no derivative, as in PyTorch (their outputs carry a NotImplemented node).

Note: the edges and the bins, bit for bit. The outer edges are each dimension's min and max (or
the given range), widened by 0.5 on both sides when they are equal, and the edges between come
from PyTorch's CPU `linspace` in the input's dtype (`factory.linspace_values`). A point belongs
to the bin whose left edge is the last edge at or below it (the rightmost bin also holds its
right edge); points outside the outer edges, or NaN in any coordinate, are left out. Each point
adds its weight (or 1) to its bin in the input's dtype, in order, as ATen's loop does.
`density` divides by the total and then by each dimension's bin widths, in the input's dtype,
in that order, as ATen's kernel does; the total itself is summed in float64 and rounded, where
ATen's vectorized float sum may differ in the last bit when fractional weights are summed.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor
from pyaten.core.views import empty_tensor
from pyaten.native.family import unsupported_dtype
from pyaten.native.kernels.copy import _CPP_TYPE_NAMES
from pyaten.native.kernels.factory import linspace_values
from pyaten.native.kernels.shape import format_shape
from pyaten.native.kernels.sorting import _ordered, _store
from pyaten.native.kernels.view_ops import _copy_pieces_out
from pyaten.native.ops_handles import aten_ops
from pyaten.native.registry import native


def _cpp_type(dtype: dt.dtype) -> str:
    return _CPP_TYPE_NAMES.get(dtype.scalar_name, dtype.scalar_name)


def _check_rank(self: Tensor) -> None:
    if self.dim() < 2:
        raise RuntimeError("pyaten.histogramdd: input tensor should have at least 2 dimensions")


def _check_inputs(self: Tensor, bins: list, weight: Tensor | None) -> None:
    """ATen's checks of the input, the edge tensors and the weight."""
    _check_rank(self)
    n = self._sizes[-1]
    if len(bins) != n:
        raise RuntimeError(
            f"pyaten.histogramdd: expected {n} sequences of bin edges for a {n}-dimensional "
            f"histogram but got {len(bins)}"
        )
    for d, edges in enumerate(bins):
        if edges._dtype is not self._dtype:
            raise RuntimeError(
                "pyaten.histogramdd: input tensor and bins tensors should have the same dtype, "
                f"but got input with dtype {self._dtype.cpp_name} and bins for dimension {d} "
                f"with dtype {edges._dtype.cpp_name}"
            )
        if edges.dim() != 1:
            raise RuntimeError(
                "pyaten.histogramdd: bins tensor should have one dimension, but got "
                f"{edges.dim()} dimensions in the bins tensor for dimension {d}"
            )
        if edges.numel() == 0:
            raise RuntimeError(
                "pyaten.histogramdd: bins tensor should have at least 1 element, but got 0 "
                f"elements in the bins tensor for dimension {d}"
            )
    if weight is None:
        return
    if weight._dtype is not self._dtype:
        raise RuntimeError(
            "pyaten.histogramdd: if weight tensor is provided, input tensor and weight tensor "
            f"should have the same dtype, but got input({_cpp_type(self._dtype)}), and "
            f"weight({_cpp_type(weight._dtype)})"
        )
    if tuple(weight._sizes or (1,)) != tuple(self._sizes[:-1]):
        raise RuntimeError(
            "pyaten.histogramdd: if weight tensor is provided it should have the same shape as "
            "the input tensor excluding its innermost dimension, but got input with shape "
            f"{format_shape(self._sizes)} and weight with shape {format_shape(weight._sizes)}"
        )


def _points(self: Tensor) -> np.ndarray:
    """The input as an (M, N) array NumPy can compare."""
    return _ordered(self._numpy().reshape(-1, self._sizes[-1]))


def _format_edge(value: float) -> str:
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:g}"


def _outer_edges(self: Tensor, bin_range) -> list[tuple[float, float]]:
    """Each dimension's leftmost and rightmost edge (ATen's select_outer_bin_edges)."""
    n = self._sizes[-1]
    low, high = [0.0] * n, [1.0] * n
    if bin_range is not None:
        if len(bin_range) != 2 * n:
            raise RuntimeError(
                f"pyaten.histogramdd: for a {n}-dimensional histogram range should have {2 * n} "
                f"elements, but got {len(bin_range)}"
            )
        low = [float(v) for v in bin_range[0::2]]
        high = [float(v) for v in bin_range[1::2]]
    elif self.numel() > 0:
        if self._dtype not in (dt.float32, dt.float64):
            raise unsupported_dtype("histogramdd", self._dtype)
        points = _points(self)
        nan = np.isnan(points).any(axis=0)  # aminmax propagates NaN
        low = [float("nan") if nan[d] else float(v) for d, v in enumerate(points.min(axis=0))]
        high = [float("nan") if nan[d] else float(v) for d, v in enumerate(points.max(axis=0))]
    edges = []
    for d in range(n):
        lo, hi = low[d], high[d]
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(
                f"pyaten.histogramdd: dimension {d}'s range [{_format_edge(lo)}, "
                f"{_format_edge(hi)}] is not finite"
            )
        if lo > hi:
            raise RuntimeError(
                "pyaten.histogramdd: min should not exceed max, but got min "
                f"{_format_edge(lo)} max {_format_edge(hi)} for dimension {d}"
            )
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges.append((lo, hi))
    return edges


def _numpy_dtype(self: Tensor) -> np.dtype:
    return self._numpy().dtype


def _edge_arrays(self: Tensor, bins: list[int], bin_range) -> list[np.ndarray]:
    _check_rank(self)
    n = self._sizes[-1]
    if len(bins) != n:
        raise RuntimeError(
            "histogramdd: The size of bins must be equal to the innermost dimension of the input."
        )
    for d, count in enumerate(bins):
        if count <= 0:
            raise RuntimeError(
                f"pyaten.histogram(): bins must be > 0, but got {count} for dimension {d}"
            )
    if self._dtype not in (dt.float32, dt.float64, dt.float16, dt.bfloat16):
        if bin_range is None and self.numel() > 0:
            raise unsupported_dtype("histogramdd", self._dtype)
        raise unsupported_dtype("linspace_cpu" if self._dtype is dt.bool else "histogram_cpu",
                                self._dtype)
    outer = _outer_edges(self, bin_range)
    dtype = _numpy_dtype(self)
    return [linspace_values(lo, hi, count + 1, dtype) for (lo, hi), count in zip(outer, bins)]


def _counts(self: Tensor, edges: list[np.ndarray], weight: Tensor | None,
            density: bool) -> np.ndarray:
    """The histogram of `self`'s points over `edges`, in `self`'s dtype."""
    if self._dtype not in (dt.float32, dt.float64, dt.float16, dt.bfloat16):
        raise unsupported_dtype("histogram_cpu", self._dtype)
    points = _points(self)
    shape = tuple(e.size - 1 for e in edges)
    keep = np.ones(points.shape[0], dtype=bool)
    for d, e in enumerate(edges):
        column, ordered = points[:, d], _ordered(e)
        keep &= (column >= ordered[0]) & (column <= ordered[-1])
    flat = np.zeros(int(np.count_nonzero(keep)), np.int64)
    for d, e in enumerate(edges):
        ordered = _ordered(e)
        pos = np.searchsorted(ordered, points[keep, d], side="right") - 1
        flat = flat * shape[d] + np.minimum(pos, shape[d] - 1)
    size = int(np.prod(shape))
    dtype = _numpy_dtype(self)
    if weight is None and dtype.itemsize >= 4:
        hist = np.bincount(flat, minlength=size)[:size].astype(dtype)
    else:
        # ATen adds each weight (or 1) to its bin in the input's dtype, point by point
        acc = np.float32 if dtype.kind == "V" or str(dtype) == "bfloat16" else dtype
        hist = np.zeros(size, acc)
        ones = np.ones(flat.size, acc)
        w = ones if weight is None else weight._numpy().reshape(-1)[keep].astype(acc)
        np.add.at(hist, flat, w)
        hist = hist.astype(dtype)
    hist = hist.reshape(shape)
    if density:
        with np.errstate(divide="ignore", invalid="ignore"):
            hist = hist / dtype.type(_ordered(hist).sum(dtype=np.float64))
            for d, e in enumerate(edges):
                widths = np.diff(e).astype(dtype)
                hist = (hist / widths.reshape([-1 if k == d else 1 for k in range(len(edges))]))
                hist = hist.astype(dtype)
    return hist


def _tensor(values: np.ndarray, like: Tensor) -> Tensor:
    out = empty_tensor(values.shape, like._dtype, like._device)
    _store(out, values)
    return out


# --- the three kernels --------------------------------------------------------------------------


@native
def histogramdd_bin_edges(self: Tensor, bins: list, range=None,  # noqa: A002
                          weight: Tensor | None = None, density: bool = False) -> list:
    return [_tensor(e, self) for e in _edge_arrays(self, list(bins), range)]


@native
def histogramdd_bin_edges_out(self: Tensor, bins: list, range=None,  # noqa: A002
                              weight: Tensor | None = None, density: bool = False,
                              out: list | None = None) -> None:
    edges = aten_ops()._histogramdd_bin_edges.default(self, bins, range=range, weight=weight,
                                                      density=density)
    _copy_pieces_out(edges, out, "_histogramdd_bin_edges.out")


@native
def histogramdd_from_bin_cts(self: Tensor, bins: list, range=None,  # noqa: A002
                             weight: Tensor | None = None, density: bool = False) -> Tensor:
    edges = _edge_arrays(self, list(bins), range)
    _check_inputs(self, [_tensor(e, self) for e in edges], weight)
    return _tensor(_counts(self, edges, weight, density), self)


@native
def histogramdd_from_bin_tensors(self: Tensor, bins: list, weight: Tensor | None = None,
                                 density: bool = False) -> Tensor:
    _check_inputs(self, list(bins), weight)
    edges = [b._numpy() for b in bins]
    return _tensor(_counts(self, edges, weight, density), self)


# --- histogramdd (CompositeImplicitAutograd) ---------------------------------------------------


@native
def histogramdd(self: Tensor, bins: list, range=None,  # noqa: A002
                weight: Tensor | None = None, density: bool = False) -> tuple:
    aten = aten_ops()
    edges = aten._histogramdd_bin_edges.default(self, bins, range=range, weight=weight,
                                                density=density)
    hist = aten._histogramdd_from_bin_cts.default(self, bins, range=range, weight=weight,
                                                  density=density)
    return hist, tuple(edges)  # PyTorch's binding gives the edges as a tuple


@native
def histogramdd_int_bins(self: Tensor, bins: int, range=None,  # noqa: A002
                         weight: Tensor | None = None, density: bool = False) -> tuple:
    _check_rank(self)
    return histogramdd(self, [bins] * self._sizes[-1], range, weight, density)


@native
def histogramdd_TensorList_bins(self: Tensor, bins: list, range=None,  # noqa: A002, N802
                                weight: Tensor | None = None, density: bool = False) -> tuple:
    hist = aten_ops()._histogramdd_from_bin_tensors.default(self, bins, weight=weight,
                                                            density=density)
    return hist, tuple(bins)
