"""Sorting and searching: sort argsort msort topk, nonzero nonzero_static argwhere,
searchsorted bucketize isin (unique, bincount and histograms: `counting.py`).

Note: the order of NaN and of ties. As in ATen, NaN sorts above every number (last ascending,
first descending). With `stable=True` equal values keep their order of appearance (a descending
stable sort is an ascending stable sort of the reversed row, read backwards); the default
unstable sort and topk place them where ATen's libstdc++ algorithms do, replayed in
`quick_select.py` (Note: ties in sort and topk). float16/bfloat16 are ordered through float32
(which holds them exactly).

`nonzero`'s result size depends on the data: its Meta kernel refuses, as PyTorch's does.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.promotion import result_type
from pyaten.core.tensor import Tensor
from pyaten.core.views import empty_tensor
from pyaten.native.family import unsupported_dtype
from pyaten.native.kernels.copy import assign
from pyaten.native.kernels.quick_select import has_ties, stl_sort, stl_topk
from pyaten.native.kernels.shape import format_shape, wrap_dim
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import resize_output


def _is_meta(*tensors: Tensor) -> bool:
    return any(isinstance(t, Tensor) and t._device.type == "meta" for t in tensors)


def _ordered(arr: np.ndarray) -> np.ndarray:
    """Values NumPy can order: bfloat16 (and float16, faster) through float32."""
    if arr.dtype == np.float16 or arr.dtype.kind == "V" or str(arr.dtype) == "bfloat16":
        return arr.astype(np.float32)
    return arr


def _argsort_rows(rows: np.ndarray, descending: bool) -> np.ndarray:
    """Stable argsort along the last axis (NaN largest)."""
    if not descending:
        return np.argsort(rows, axis=-1, kind="stable")
    n = rows.shape[-1]
    backwards = np.argsort(rows[..., ::-1], axis=-1, kind="stable")
    return (n - 1) - backwards[..., ::-1]


def _store(t: Tensor, value: np.ndarray) -> None:
    target = t._numpy()
    assign(target, value.reshape(target.shape))


# --- sort, argsort, msort ---------------------------------------------------------------------


@native
def meta_sort_stable(op, self: Tensor, stable, dim: int = -1, descending: bool = False) -> None:
    wrap_dim(dim, self.dim())
    op.set_output(0, self._sizes, self._dtype, self._device)
    op.set_output(1, self._sizes, dt.int64, self._device)


@native
def sort_stable_out(op, self: Tensor, stable, dim: int, descending: bool, values: Tensor,
                    indices: Tensor) -> None:
    if self._dtype.is_complex:
        raise RuntimeError(" Sort does not support complex dtypes on CPU")
    if self.numel() == 0:
        return
    dim = wrap_dim(dim, self.dim())
    source = self._numpy()
    if source.ndim == 0:
        _store(values, source)
        _store(indices, np.zeros((), np.int64))
        return
    rows = np.moveaxis(source, dim, -1)
    order = _argsort_rows(_ordered(rows), descending)
    # ATen leaves the indices in order along an expanded (stride 0) dim, where all are equal
    if not stable and self._strides[dim] != 0 and not _radix_sorted(self, descending):
        order = _replay_ties(rows, order, descending)
    _store(values, np.moveaxis(np.take_along_axis(rows, order, -1), -1, dim))
    _store(indices, np.moveaxis(order, -1, dim))


def _radix_sorted(self: Tensor, descending: bool) -> bool:
    """ATen sorts a long 1-d integer tensor ascending with fbgemm's radix sort, which is
    stable; every other unstable sort is libstdc++'s std::sort (Note: ties in sort and topk)."""
    return (self.dim() == 1 and not descending and self._dtype.is_integral
            and self._dtype is not dt.bool and self.numel() >= 32768)


def _replay_keys(rows: np.ndarray) -> np.ndarray:
    """Values the replay compares exactly: float64 for floats, int64 for integers and bool."""
    ordered = _ordered(rows)
    return ordered.astype(np.float64 if ordered.dtype.kind == "f" else np.int64)


def _replay_ties(rows: np.ndarray, order: np.ndarray, descending: bool) -> np.ndarray:
    """`order` (a stable argsort) with each row that holds equal values re-sorted as std::sort
    leaves it; rows of at most 16 are insertion-sorted by std::sort, so stable already."""
    n = rows.shape[-1]
    if n <= 16:
        return order
    flat_order = order.reshape(-1, n)
    ordered = np.take_along_axis(_ordered(rows).reshape(-1, n), flat_order, -1)
    tied = np.flatnonzero(has_ties(ordered))
    if tied.size == 0:
        return order
    keys = _replay_keys(rows).reshape(-1, n)
    flat_order = flat_order.copy()
    for r in tied:
        row_keys = keys[r].copy()
        row_order = np.arange(n)
        stl_sort(row_keys, row_order, 0, n, descending)
        flat_order[r] = row_order
    return flat_order.reshape(order.shape)


@native
def sort(self: Tensor, dim: int = -1, descending: bool = False):
    return _aten().sort.stable(self, False, dim, descending)


@native
def sort_values(self: Tensor, dim: int = -1, descending: bool = False, values=None,
                indices=None):
    return _aten().sort.values_stable(self, False, dim, descending, values, indices)


@native
def argsort(self: Tensor, dim: int = -1, descending: bool = False) -> Tensor:
    return _aten().sort.stable(self, False, dim, descending)[1]


@native
def argsort_stable(self: Tensor, stable: bool, dim: int = -1, descending: bool = False):
    return _aten().sort.stable(self, stable, dim, descending)[1]


@native
def argsort_stable_out(self: Tensor, stable: bool, dim: int = -1, descending: bool = False,
                       out: Tensor = None) -> Tensor:
    aten = _aten()
    values = aten.empty.memory_format((0,), self._dtype, None, self._device, None, None)
    aten.sort.values_stable(self, stable, dim, descending, values, out)
    return out


@native
def msort(self: Tensor) -> Tensor:
    return _aten().sort.default(self, 0, False)[0]


@native
def msort_out(self: Tensor, out: Tensor) -> Tensor:
    aten = _aten()
    indices = aten.empty.memory_format((0,), dt.int64, None, self._device, None, None)
    aten.sort.values(self, 0, False, out, indices)
    return out


# --- topk -------------------------------------------------------------------------------------


@native
def meta_topk(op, self: Tensor, k: int, dim: int = -1, largest: bool = True,
              sorted: bool = True) -> None:  # noqa: A002 - the schema's name
    dim = wrap_dim(dim, self.dim())
    size = self._sizes[dim] if self._sizes else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    sizes = list(self._sizes)
    if sizes:
        sizes[dim] = k
    op.set_output(0, sizes, self._dtype, self._device)
    op.set_output(1, sizes, dt.int64, self._device)


def _topk_by_blocks(rows: np.ndarray, k: int, largest: bool) -> np.ndarray | None:
    """The k best of each long row, best first, or None (NaN present, rows too short).

    The k-th best of a row's block maxima (minima) bounds its k-th best value, so only the
    few elements past that bound need ordering: linear passes instead of a selection.
    """
    flat = rows.reshape(-1, rows.shape[-1])
    count, n = flat.shape
    blocks = max(8 * k, 32)
    size = n // blocks
    if size < 2:
        return None
    # block j holds the elements j, j + blocks, ...: a reduction over the middle axis, which
    # NumPy runs far faster than one over many short rows
    head = flat[:, : blocks * size].reshape(count, size, blocks)
    extremes = head.max(axis=1) if largest else head.min(axis=1)
    if flat.dtype.kind == "f" and (
        np.isnan(extremes).any() or np.isnan(flat[:, blocks * size:]).any()
    ):
        return None
    kth = blocks - k if largest else k - 1
    bound = np.partition(extremes, kth, axis=1)[:, kth:kth + 1]
    row, col = np.nonzero(flat >= bound if largest else flat <= bound)
    order = np.lexsort((flat[row, col], row))  # by row, then value (stable: then position)
    col = col[order]
    steps = np.arange(k)
    if largest:
        ends = np.searchsorted(row[order], np.arange(count), side="right")
        picked = col[ends[:, None] - 1 - steps]
    else:
        starts = np.searchsorted(row[order], np.arange(count), side="left")
        picked = col[starts[:, None] + steps]
    return picked.reshape(rows.shape[:-1] + (k,))


def _topk_rows(rows: np.ndarray, k: int, largest: bool) -> np.ndarray:
    """Indices of the k largest (smallest) of each row, best first; NaN counts as largest."""
    n = rows.shape[-1]
    if k == 0:
        return np.empty(rows.shape[:-1] + (0,), np.int64)
    if rows.size >= 65536 and 16 * k < n:
        found = _topk_by_blocks(rows, k, largest)
        if found is not None:
            return found
    if 4 * k < n:
        # select first (linear), then order only the k chosen
        kth = n - k if largest else k - 1
        chosen = np.argpartition(rows, kth, axis=-1)
        chosen = chosen[..., n - k:] if largest else chosen[..., :k]
        picked = np.take_along_axis(rows, chosen, -1)
        order = _argsort_rows(picked, largest)
        return np.take_along_axis(chosen, order, -1)
    return _argsort_rows(rows, largest)[..., :k]


def _replay_topk(rows: np.ndarray, order: np.ndarray, k: int, largest: bool,
                 sorted: bool) -> np.ndarray:  # noqa: A002
    """`order` (the k best of each row, best first, ties by position) with the rows whose
    answer depends on ATen's algorithm replayed (Note: ties in sort and topk): rows where a
    chosen value repeats, or the k-th value also occurs outside the k chosen, and, with
    sorted=False on the nth_element path (64*k > n), every row, whose k come in the order
    nth_element leaves them."""
    n = rows.shape[-1]
    if k == 0:
        return order
    ordered_rows = _ordered(rows).reshape(-1, n)
    flat_order = order.reshape(-1, k)
    if not sorted and k * 64 > n:
        replay = np.arange(flat_order.shape[0])
    else:
        picked = np.take_along_axis(ordered_rows, flat_order, -1)
        kth = picked[:, -1:]
        kth_is_nan = np.isnan(kth) if kth.dtype.kind == "f" else np.zeros(kth.shape, bool)
        equal_kth = np.where(kth_is_nan, np.isnan(ordered_rows) if kth.dtype.kind == "f"
                             else False, ordered_rows == kth)
        picked_kth = np.where(kth_is_nan, np.isnan(picked) if kth.dtype.kind == "f"
                              else False, picked == kth)
        boundary = equal_kth.sum(-1) > picked_kth.sum(-1)
        replay = np.flatnonzero(has_ties(picked) | boundary)
    if replay.size == 0:
        return order
    keys = _replay_keys(rows).reshape(-1, n)
    flat_order = flat_order.copy()
    for r in replay:
        flat_order[r] = stl_topk(keys[r].copy(), k, largest, sorted)
    return flat_order.reshape(order.shape)


@native
def topk_out_cpu(op, self: Tensor, k: int, dim: int, largest: bool, sorted: bool,  # noqa: A002
                 values: Tensor, indices: Tensor) -> None:
    if self._dtype is dt.bool:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    if self._dtype.is_complex:
        raise RuntimeError(" topk does not support complex dtypes on CPU")
    if values.numel() == 0:
        return
    dim = wrap_dim(dim, self.dim())
    source = self._numpy()
    if source.ndim == 0:
        _store(values, source)
        _store(indices, np.zeros((), np.int64))
        return
    rows = np.moveaxis(source, dim, -1)
    order = _replay_topk(rows, _topk_rows(_ordered(rows), k, largest), k, largest, sorted)
    _store(values, np.moveaxis(np.take_along_axis(rows, order, -1), -1, dim))
    _store(indices, np.moveaxis(order, -1, dim))


# --- nonzero, argwhere --------------------------------------------------------------------------


def _nonzero_columns(self: Tensor) -> tuple[tuple, int]:
    """(one array of positions per dim, how many nonzero elements)."""
    arr = self._numpy()
    if arr.dtype == dt.COMPLEX32_NUMPY:
        arr = dt.compute_array(arr)
    if arr.ndim == 0:
        return (), int(bool(arr))
    columns = np.nonzero(arr)
    return columns, columns[0].size


def _write_columns(out: Tensor, columns: tuple) -> None:
    target = out._numpy()
    for d, column in enumerate(columns):
        target[:, d] = column


def _nonzero_positions(self: Tensor) -> np.ndarray:
    columns, count = _nonzero_columns(self)
    if not columns:
        return np.zeros((count, 0), np.int64)
    return np.stack(columns, axis=1)


def _meta_refuses(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"aten::{name}: the result's size depends on the tensor's values, which a meta tensor "
        "does not have"
    )


@native
def nonzero_cpu(self: Tensor) -> Tensor:
    columns, count = _nonzero_columns(self)
    out = empty_tensor((count, self.dim()), dt.int64, self._device)
    _write_columns(out, columns)
    return out


@native
def nonzero_out_cpu(self: Tensor, out: Tensor) -> Tensor:
    if out._dtype is not dt.int64:
        raise RuntimeError(
            "nonzero: Expected out tensor to have scalar type Long but got scalar type"
            f"{out._dtype.scalar_name}"
        )
    columns, count = _nonzero_columns(self)
    resize_output(out, (count, self.dim()), "nonzero")
    _write_columns(out, columns)
    out._bump_version()
    return out


@native
def nonzero_meta(self: Tensor, out: Tensor | None = None) -> Tensor:
    raise _meta_refuses("nonzero")


def _nonzero_static(self: Tensor, size: int, fill_value: int) -> np.ndarray | None:
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    if _is_meta(self):
        return None
    positions = _nonzero_positions(self)[:size]
    if positions.shape[0] < size:
        pad = np.full((size - positions.shape[0], positions.shape[1]), fill_value, np.int64)
        positions = np.concatenate([positions, pad])
    return positions


@native
def nonzero_static_cpu(self: Tensor, size: int, fill_value: int = -1) -> Tensor:
    positions = _nonzero_static(self, size, fill_value)
    out = empty_tensor((size, self.dim()), dt.int64, self._device)
    if positions is not None:
        _store(out, positions)
    return out


@native
def nonzero_static_out_cpu(self: Tensor, size: int, fill_value: int = -1,
                           out: Tensor = None) -> Tensor:
    positions = _nonzero_static(self, size, fill_value)
    resize_output(out, (size, self.dim()), "nonzero_static")
    if positions is not None:
        _store(out, positions)
    out._bump_version()
    return out


@native
def nonzero_numpy(self: Tensor) -> tuple:
    aten = _aten()
    if self.dim() == 0:
        return tuple(aten.unbind.int(aten.nonzero.default(aten.unsqueeze.default(self, 0)), 1))
    return tuple(aten.unbind.int(aten.nonzero.default(self), 1))


@native
def argwhere(self: Tensor) -> Tensor:
    return _aten().nonzero.default(self)


# --- searchsorted, bucketize --------------------------------------------------------------------

def _search_checks(boundaries: Tensor, values, out_int32: bool, right: bool, side,
                   sorter) -> bool:
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(
                f"pyaten.searchsorted(): side can only be 'left' or 'right' but got {side}"
            )
        if right and side == "left":
            raise RuntimeError(
                "pyaten.searchsorted(): side and right can't be set to opposites, got side of "
                "left while right was True"
            )
        right = side == "right"
    if boundaries.dim() == 0:
        raise RuntimeError(
            "pyaten.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
            "dimension"
        )
    if isinstance(values, Tensor) and boundaries.dim() != 1:
        if (boundaries.dim() != values.dim()
                or tuple(boundaries._sizes[:-1]) != tuple(values._sizes[:-1])):
            raise RuntimeError(
                "pyaten.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                "dimensions of boundaries tensor and input value tensor must match, but we got "
                f"boundaries tensor {format_shape(boundaries._sizes)} and input value tensor "
                f"{format_shape(values._sizes)}"
            )
    if sorter is not None:
        if sorter._dtype is not dt.int64:
            raise RuntimeError("pyaten.searchsorted(): sorter must be a tensor of long dtype.")
        if tuple(sorter._sizes) != tuple(boundaries._sizes):
            raise RuntimeError(
                "pyaten.searchsorted(): boundary and sorter must have the same size, but got "
                f"boundary tensor {format_shape(boundaries._sizes)}and got sorter tensor "
                f"{format_shape(sorter._sizes)}"
            )
    common = result_type(boundaries, values)
    if common is dt.bool or common.is_complex:
        raise unsupported_dtype("searchsorted_out_cpu", common)
    return right


def _search(boundaries: Tensor, values, right: bool, sorter, shape: tuple) -> np.ndarray:
    edges = _ordered(boundaries._numpy())
    if sorter is not None:
        order = sorter._numpy()
        size = edges.shape[-1]
        if order.size and (order.min() < 0 or order.max() >= size):
            raise RuntimeError("pyaten.searchsorted(): sorter index out of range")
        edges = np.take_along_axis(edges, order, -1)
    if isinstance(values, Tensor):
        points = _ordered(values._numpy())
    else:
        points = np.asarray(values)
    side = "right" if right else "left"
    if edges.ndim == 1:
        return np.searchsorted(edges, points, side=side).reshape(shape)
    flat_edges = edges.reshape(-1, edges.shape[-1])
    flat_points = points.reshape(flat_edges.shape[0], -1)
    result = np.empty(flat_points.shape, np.int64)
    for row in range(flat_edges.shape[0]):
        result[row] = np.searchsorted(flat_edges[row], flat_points[row], side=side)
    return result.reshape(shape)


def _searchsorted(boundaries, values, out_int32, right, side, sorter, out):
    right = _search_checks(boundaries, values, out_int32, right, side, sorter)
    shape = tuple(values._sizes) if isinstance(values, Tensor) else ()
    dtype = dt.int32 if out_int32 else dt.int64
    if out is None:
        out = empty_tensor(shape, dtype, boundaries._device)
    else:
        if out._dtype is not dtype:
            raise RuntimeError(
                "pyaten.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) "
                f"or Long(int64) depending on whether out_int32 flag is True, but we got output "
                f"tensor's dtype {out._dtype.scalar_name} and out_int32 flag is "
                f"{'True' if out_int32 else 'False'}"
            )
        resize_output(out, shape, "searchsorted")
        out._bump_version()
    if _is_meta(boundaries, values, out) or out.numel() == 0:
        return out
    _store(out, _search(boundaries, values, right, sorter, shape))
    return out


@native
def searchsorted_cpu(sorted_sequence: Tensor, self, out_int32: bool = False,
                     right: bool = False, side=None, sorter=None) -> Tensor:
    return _searchsorted(sorted_sequence, self, out_int32, right, side, sorter, None)


@native
def searchsorted_out_cpu(sorted_sequence: Tensor, self, out_int32: bool = False,
                         right: bool = False, side=None, sorter=None, out=None) -> Tensor:
    return _searchsorted(sorted_sequence, self, out_int32, right, side, sorter, out)


def _bucketize_checks(boundaries: Tensor) -> None:
    if boundaries.dim() != 1:
        raise RuntimeError(
            f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})"
        )


@native
def bucketize_cpu(self, boundaries: Tensor, out_int32: bool = False,
                  right: bool = False) -> Tensor:
    _bucketize_checks(boundaries)
    return _searchsorted(boundaries, self, out_int32, right, None, None, None)


@native
def bucketize_out_cpu(self: Tensor, boundaries: Tensor, out_int32: bool = False,
                      right: bool = False, out: Tensor = None) -> Tensor:
    _bucketize_checks(boundaries)
    return _searchsorted(boundaries, self, out_int32, right, None, None, out)


# --- isin ---------------------------------------------------------------------------------------


def _isin_check(*dtypes) -> None:
    for dtype in dtypes:
        if dtype is dt.bool or dtype.is_complex:
            raise RuntimeError(
                f"Unsupported input type encountered for isin(): {dtype.scalar_name}"
            )


def _isin_write(elements, test_elements, invert: bool, out: Tensor) -> None:
    left = elements._numpy() if isinstance(elements, Tensor) else np.asarray(elements)
    right = test_elements._numpy() if isinstance(test_elements, Tensor) else \
        np.asarray(test_elements)
    result = np.isin(_ordered(left), _ordered(right).reshape(-1), invert=invert)
    _store(out, np.asarray(result))


def _scalar_dtype(value) -> dt.dtype:
    if isinstance(value, bool):
        return dt.bool
    if isinstance(value, int):
        return dt.int64
    if isinstance(value, complex):
        return dt.complex64
    return dt.float32


@native
def meta_isin_Tensor_Tensor(op, elements: Tensor, test_elements: Tensor,  # noqa: N802
                            assume_unique: bool = False, invert: bool = False) -> None:
    _isin_check(elements._dtype, test_elements._dtype)
    op.set_output(0, elements._sizes, dt.bool, elements._device)


@native
def isin_Tensor_Tensor_out(op, elements, test_elements, assume_unique, invert,  # noqa: N802
                           out) -> None:
    _isin_write(elements, test_elements, invert, out)


@native
def meta_isin_Tensor_Scalar(op, elements: Tensor, test_element, assume_unique: bool = False,  # noqa: N802
                            invert: bool = False) -> None:
    _isin_check(elements._dtype, _scalar_dtype(test_element))
    op.set_output(0, elements._sizes, dt.bool, elements._device)


@native
def isin_Tensor_Scalar_out(op, elements, test_element, assume_unique, invert,  # noqa: N802
                           out) -> None:
    _isin_write(elements, test_element, invert, out)


@native
def meta_isin_Scalar_Tensor(op, element, test_elements: Tensor, assume_unique: bool = False,  # noqa: N802
                            invert: bool = False) -> None:
    _isin_check(_scalar_dtype(element), test_elements._dtype)
    op.set_output(0, (), dt.bool, test_elements._device)


@native
def isin_Scalar_Tensor_out(op, element, test_elements, assume_unique, invert,  # noqa: N802
                           out) -> None:
    _isin_write(element, test_elements, invert, out)
