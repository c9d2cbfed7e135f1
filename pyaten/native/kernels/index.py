"""Indexing: the `index.Tensor` (structured) and `index_put_` kernels, and Python's
`Tensor.__getitem__` / `Tensor.__setitem__`.

Note: how `t[...]` is routed. The Python index is walked left to right, as PyTorch does:
an int becomes `select`, a slice `slice`, None `unsqueeze`, Ellipsis skips dims, a Python
bool `unsqueeze` plus a one-or-zero-element index; integer and boolean tensors (and lists,
which become tensors) are collected and applied at the end by one `index.Tensor` call with
`None` for the dims they skip. Every step is an operator call, so it dispatches (and is
seen by tracing and autograd). `t[...] = v` walks the same way and finishes with `copy_` /
`fill_` on the view, or `index_put_` when tensors were collected.

Advanced indexing follows NumPy's placement rule, which PyTorch shares: when the indexed
dims are adjacent, the broadcast index shape replaces them in place; otherwise it goes first.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.broadcast import infer_sizes
from pyaten.core.creation import tensor as make_tensor
from pyaten.core.iterator_build import output_strides
from pyaten.core.tensor import Tensor
from pyaten.core.views import contiguous_strides, empty_tensor
from pyaten.dispatch.python_key import PYTHON_KEYS
from pyaten.dispatch.tls import STATE as _TLS
from pyaten.native.kernels.copy import assign, check_no_internal_overlap
from pyaten.native.kernels.shape import compute_view_strides, expand_strides, format_shape
from pyaten.native.ops_handles import LazyEntry
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native

_INDEX_DTYPES = (dt.int64, dt.int32, dt.uint8, dt.bool)
_INTEGER_INDEX_DTYPES = (dt.int64, dt.int32)

# --- index.Tensor ------------------------------------------------------------------------


def _broadcast_shapes(shapes: list[tuple]) -> tuple:
    try:
        return infer_sizes(*shapes)
    except RuntimeError:  # PyTorch names all the indices' shapes here, not two dims
        listed = ", ".join(format_shape(s) for s in shapes)
        raise IndexError(
            f"shape mismatch: indexing tensors could not be broadcast together with shapes "
            f"{listed}"
        ) from None


def expand_indices(self: Tensor, indices) -> list:
    """One entry per indexed dim: None (whole dim) or an integer Tensor/ndarray of positions.

    Boolean (and deprecated uint8) masks become one integer array per masked dim, which needs
    the mask's data: on Meta they raise NotImplementedError, as in PyTorch.
    """
    ndim = len(self._sizes)
    expanded: list = []
    for index in indices:
        if index is None:
            expanded.append(None)
            continue
        dtype = index.dtype
        if dtype not in _INDEX_DTYPES:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if dtype is dt.uint8 or dtype is dt.bool:
            if dtype is dt.uint8:
                warnings.warn(
                    "indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                    "torch.bool instead.",
                    UserWarning,
                    stacklevel=4,
                )
            start = len(expanded)
            for j, size in enumerate(index._sizes):
                if start + j >= ndim:
                    break
                if size != self._sizes[start + j]:
                    raise IndexError(
                        f"The shape of the mask {format_shape(index._sizes)} at index {j} does "
                        f"not match the shape of the indexed tensor {format_shape(self._sizes)} "
                        f"at index {start + j}"
                    )
            if index.device.type == "meta":
                raise NotImplementedError(
                    "aten::nonzero: boolean mask indexing needs the mask's data, which a meta "
                    "tensor does not have"
                )
            # ATen takes column j of nonzero()'s (n, k) result: strided like that here too
            positions = np.argwhere(index._numpy())
            expanded.extend(positions[:, j] for j in range(positions.shape[1]))
        else:
            expanded.append(index)
    if len(expanded) > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    return expanded


def _index_shape(self: Tensor, expanded: list) -> tuple:
    positions = [i for i, e in enumerate(expanded) if e is not None]
    if not positions:
        return self._sizes
    shapes = [tuple(expanded[i].shape if isinstance(expanded[i], np.ndarray)
                    else expanded[i]._sizes) for i in positions]
    broadcast = shapes[0] if len(shapes) == 1 else _broadcast_shapes(shapes)
    sizes = self._sizes
    rest_before = sizes[: positions[0]]
    if positions[-1] - positions[0] == len(positions) - 1:
        kept_after = sizes[positions[-1] + 1 :]
        return rest_before + broadcast + kept_after
    kept = tuple(s for i, s in enumerate(sizes) if i >= len(expanded) or expanded[i] is None)
    return broadcast + kept


def numpy_index(expanded: list) -> tuple:
    """The NumPy index tuple for `expanded` (bounds are checked when it is applied)."""
    items = []
    for entry in expanded:
        if entry is None:
            items.append(slice(None))
        elif isinstance(entry, np.ndarray):
            items.append(entry)
        else:
            items.append(entry._numpy())
    return tuple(items)


def _out_of_bounds(error: IndexError) -> IndexError:
    """NumPy's bounds error in PyTorch's words (dimension, not axis)."""
    return IndexError(str(error).replace(" for axis ", " for dimension "))


class _Geometry:
    """Sizes and strides of an operand, for the output-layout rule."""

    __slots__ = ("_sizes", "_strides")

    def __init__(self, sizes: tuple, strides: tuple) -> None:
        self._sizes = sizes
        self._strides = strides


def _index_output_strides(self: Tensor, expanded: list, shape: tuple):
    """The result layout ATen's index gets from its TensorIterator: self restrided (indexed
    dims replaced by the index shape with stride 0) and the indices drive the dim order."""
    positions = [i for i, e in enumerate(expanded) if e is not None]
    if not positions or len(shape) <= 1:
        return None
    entries = [expanded[i] for i in positions]
    if (
        len(entries) == 1
        and isinstance(entries[0], Tensor)
        and entries[0]._strides == contiguous_strides(entries[0]._sizes)
        and self._strides == contiguous_strides(self._sizes)
    ):
        # a row-major source indexed by one row-major index gives a row-major result
        return None
    sizes, strides = list(self._sizes), list(self._strides)
    if positions[-1] - positions[0] != len(positions) - 1:
        # non-adjacent indexed dims are moved to the front first
        order = positions + [d for d in range(len(sizes)) if d not in positions]
        sizes = [sizes[d] for d in order]
        strides = [strides[d] for d in order]
        positions = list(range(len(positions)))
    first, last = positions[0], positions[-1]
    index_ndim = len(shape) - (len(sizes) - (last - first + 1))
    index_shape = tuple(shape[first : first + index_ndim])
    operands = [
        _Geometry(
            tuple(shape),
            tuple(strides[:first]) + (0,) * index_ndim + tuple(strides[last + 1 :]),
        )
    ]
    after = len(sizes) - last - 1
    index_view_shape = (1,) * first + index_shape + (1,) * after
    for entry in entries:
        if isinstance(entry, np.ndarray):
            entry_sizes = entry.shape
            entry_strides = tuple(s // entry.itemsize for s in entry.strides)
        else:
            entry_sizes, entry_strides = entry._sizes, entry._strides
        # ATen broadcasts each index to the index shape, then reshapes it to the result's rank
        if tuple(entry_sizes) != index_shape:
            entry_sizes, entry_strides = expand_strides(
                entry_sizes, entry_strides, index_shape, "index"
            )
        view_strides = compute_view_strides(entry_sizes, entry_strides, index_view_shape)
        if view_strides is None:
            view_strides = contiguous_strides(index_view_shape)
        operands.append(_Geometry(index_view_shape, view_strides))
    return _layout_strides(operands, tuple(shape))


def _layout_strides(operands: list, shape: tuple):
    # PyTorch's output-permutation rule, as core's TensorIterator applies it
    return output_strides([None], operands, [True], shape, False)


@native
def meta_index_Tensor(op, self: Tensor, indices) -> None:  # noqa: N802
    expanded = expand_indices(self, indices)
    shape = _index_shape(self, expanded)
    strides = _index_output_strides(self, expanded, shape)
    out = op.maybe_get_output(0)
    if op.kind == "out" and out._dtype is not self._dtype:
        # ATen's index_out checks this itself (its meta does not compare dtypes)
        raise RuntimeError(
            f"index_out: self ({self._dtype.scalar_name}) and result "
            f"({out._dtype.scalar_name}) must have the same scalar type"
        )
    op.set_output(0, shape, self.dtype, self.device, strides)


@native
def index_out(op, self: Tensor, indices, out: Tensor) -> None:
    index = numpy_index(expand_indices(self, indices))
    try:
        gathered = self._numpy()[index]
    except IndexError as error:
        raise _out_of_bounds(error) from None
    assign(out._numpy(), gathered)


# --- index_put_ --------------------------------------------------------------------------


def _check_put(self: Tensor, indices, values: Tensor) -> list:
    if values.dtype is not self.dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{self.dtype.scalar_name} for the destination and {values.dtype.scalar_name} for "
            "the source."
        )
    check_no_internal_overlap(self)
    expanded = expand_indices(self, indices)
    shape = _index_shape(self, expanded)
    if not _broadcastable(values._sizes, shape):
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {format_shape(values._sizes)} cannot be "
            f"broadcast to indexing result of shape {format_shape(shape)}"
        )
    return expanded


def _broadcastable(src: tuple, dst: tuple) -> bool:
    if len(src) > len(dst):
        # leading ones of the value may be dropped
        extra = len(src) - len(dst)
        if any(s != 1 for s in src[:extra]):
            return False
        src = src[extra:]
    return all(s == 1 or s == d for s, d in zip(reversed(src), reversed(dst)))


@native
def index_put_impl_cpu_(
    self: Tensor, indices, values: Tensor, accumulate: bool = False, unsafe: bool = False
) -> Tensor:
    expanded = _check_put(self, indices, values)
    index = numpy_index(expanded)
    target = self._numpy()
    source = values._numpy()
    shape = _index_shape(self, expanded)
    if source.ndim > len(shape):
        source = source.reshape(source.shape[source.ndim - len(shape) :])
    try:
        if accumulate and target.dtype == dt.COMPLEX32_NUMPY:
            # NumPy cannot add complex32: accumulate in complex64, round once
            values = dt.compute_array(target)
            np.add.at(values, index, dt.compute_array(source))
            dt.store(target, values)
        elif accumulate:
            np.add.at(target, index, source)
        else:
            target[index] = source
    except IndexError as error:
        raise _out_of_bounds(error) from None
    self._bump_version()
    return self


@native
def index_put_impl_meta_(
    self: Tensor, indices, values: Tensor, accumulate: bool = False, unsafe: bool = False
) -> Tensor:
    # PyTorch's Meta kernel checks nothing here (dtype, shape and bounds need the CPU path)
    self._bump_version()
    return self


@native
def index_put_(self: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    return _aten()._index_put_impl_.default(self, indices, values, accumulate, False)


@native
def index_put(self: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    aten = _aten()
    return aten.index_put_.default(aten.clone.default(self), indices, values, accumulate)


# --- Python indexing ---------------------------------------------------------------------


def _is_int_like(obj) -> bool:
    if isinstance(obj, (bool, np.bool_)):
        return False
    if isinstance(obj, (int, np.integer)):
        return True
    return False


def _treat_as_tuple(index) -> bool:
    """PyTorch's (and old NumPy's) rule for when a list index means several indices."""
    if isinstance(index, tuple):
        return True
    if not isinstance(index, list) or len(index) >= 32:
        return False
    for item in index:
        if item is None or item is Ellipsis or isinstance(item, (slice, Tensor, list, tuple)):
            return True
    return False


def _as_index_tensor(item) -> Tensor:
    if isinstance(item, Tensor):
        return item
    if isinstance(item, str):
        raise TypeError("new(): invalid data type 'str'")
    if not isinstance(item, (list, tuple, np.ndarray)):
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
            f"are valid indices (got {type(item).__name__})"
        )
    try:
        return make_tensor(item)
    except (TypeError, ValueError, RuntimeError):
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
            f"are valid indices (got {type(item).__name__})"
        ) from None


def _count_specified(items) -> int:
    count = 0
    for item in items:
        # like PyTorch, several Ellipsis are accepted; each skips the unspecified dims
        if item is None or item is Ellipsis or isinstance(item, (bool, np.bool_)):
            continue
        if isinstance(item, Tensor) and item.dtype in (dt.bool, dt.uint8):
            count += len(item._sizes)
        else:
            count += 1
    return count


def _slice_args(item: slice, dim: int) -> tuple:
    def bound(v):
        return None if v is None else operator.index(v)

    step = 1 if item.step is None else operator.index(item.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if step < 0:
        raise ValueError("step must be greater than zero")
    return bound(item.start), bound(item.stop), step


def _bool_index(value: bool, device) -> Tensor:
    if value:
        return make_tensor([0], dtype=dt.int64, device=device)
    return empty_tensor((0,), dt.int64, device)


def _apply_slicing(self: Tensor, index):
    """Apply the basic part of `index` (views); return (view, [(dim, index tensor)...])."""
    aten = _aten()
    if _treat_as_tuple(index):
        if not isinstance(index, tuple):
            warnings.warn(
                "Using a non-tuple sequence for multidimensional indexing is deprecated and "
                "will be changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In "
                "pytorch 2.9 this will be interpreted as tensor index, x[torch.tensor(seq)], "
                "which will result either in an error or a different result",
                UserWarning,
                stacklevel=3,
            )
        items = tuple(index)
    else:
        items = (index,)
    self_ndim = len(self._sizes)
    specified = _count_specified(items)
    if specified > self_ndim:
        if self_ndim == 0 and len(items) == 1 and _is_int_like(items[0]):
            raise IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
            )
        raise IndexError(f"too many indices for tensor of dimension {self_ndim}")
    result = self
    dim = 0
    recorded: list = []
    # PyTorch's messages name an out-of-range int by its place in the index (`position`)
    for position, item in enumerate(items):
        if _is_int_like(item):
            i = int(item)
            size = result._sizes[dim]
            if i < -size or i >= size:
                raise IndexError(
                    f"index {i} is out of bounds for dimension {position} with size {size}"
                )
            result = aten.select.int(result, dim, i)
        elif isinstance(item, slice):
            start, stop, step = _slice_args(item, dim)
            if not (start is None and stop is None and step == 1):
                result = aten.slice.Tensor(result, dim, start, stop, step)
            dim += 1
        elif item is None:
            result = aten.unsqueeze.default(result, dim)
            dim += 1
        elif item is Ellipsis:
            dim += self_ndim - specified
        elif isinstance(item, (bool, np.bool_)):
            result = aten.unsqueeze.default(result, dim)
            recorded.append((dim, _bool_index(bool(item), self.device)))
            dim += 1
        else:
            tensor = _as_index_tensor(item)
            dtype = tensor.dtype
            if not tensor._sizes and dtype.is_integral and dtype not in (dt.bool, dt.uint8):
                # a 0-dim integer tensor indexes like an int (a view, via select)
                i = int(tensor.item())
                size = result._sizes[dim]
                if i < -size or i >= size:
                    raise IndexError(
                        f"index {i} is out of bounds for dimension {position} with size {size}"
                    )
                result = aten.select.int(result, dim, i)
            elif not tensor._sizes and dtype in (dt.bool, dt.uint8):
                result = aten.unsqueeze.default(result, dim)
                recorded.append((dim, _bool_index(bool(tensor.item()), self.device)))
                dim += 1
            else:
                recorded.append((dim, tensor))
                dim += len(tensor._sizes) if dtype in (dt.bool, dt.uint8) else 1
    return result, recorded


def _mask_aware_index_list(recorded: list) -> list:
    """Index list for index.Tensor: None fills skipped dims; a mask takes one slot."""
    indices: list = []
    covered = 0
    for dim, tensor in recorded:
        while covered < dim:
            indices.append(None)
            covered += 1
        indices.append(tensor)
        covered += len(tensor._sizes) if tensor.dtype in (dt.bool, dt.uint8) else 1
    return indices


def tensor_getitem(self: Tensor, index) -> Tensor:
    """`self[index]`: views for ints/slices/None/Ellipsis, then one `index` for tensors."""
    cls = index.__class__
    if cls is int:
        # the commonest case, x[i]: one select
        sizes = self._sizes
        if sizes and -sizes[0] <= index < sizes[0]:
            return (_SELECT.entry or _SELECT.resolve()).call(self, 0, index)
        return _select_first(_aten(), self, index)
    if cls is slice and self._sizes:
        # x[a:b], x[::k]: one slice of dim 0
        start, stop, step = index.start, index.stop, index.step
        if step is None:
            step = 1
        if (start is None or start.__class__ is int) and (
            stop is None or stop.__class__ is int
        ) and step.__class__ is int and step > 0 and (
            start is not None or stop is not None or step != 1
        ):
            return (_SLICE.entry or _SLICE.resolve()).call(self, 0, start, stop, step)
    elif cls is tuple and _is_basic(self, index):
        return _apply_basic(self, index)
    aten = _aten()
    if index.__class__ is Tensor and index._sizes and index._dtype in _INTEGER_INDEX_DTYPES:
        # x[indices]: one index.Tensor call
        return aten.index.Tensor(self, [index])
    result, recorded = _apply_slicing(self, index)
    if recorded:
        return aten.index.Tensor(result, _mask_aware_index_list(recorded))
    if result is self:
        # x[...] and x[:] still return a new tensor (a view), never self
        return aten.alias.default(self)
    return result


# Note: basic indexing without the walk
#     `t[i]`, `t[1:3]`, `t[:, 0]`: an index of Python ints and slices with int bounds, in
#     range, one per dim at most, makes the same `select` / `slice` calls `_apply_slicing`
#     makes, in the same order (so tracing and autograd see the same calls), straight to the
#     operator entries. Anything else (None, Ellipsis, tensors, lists, out-of-range ints,
#     steps that are not positive, `t[:]`) takes the walk, which raises PyTorch's errors.
_SELECT = LazyEntry("select", "int")
_SLICE = LazyEntry("slice", "Tensor")


def _is_basic(self: Tensor, items: tuple) -> bool:
    """`items` are ints and slices that `_apply_basic` takes (see the Note above)."""
    sizes = self._sizes
    if len(items) > len(sizes) or not items:
        return False
    whole = True
    for dim, item in enumerate(items):
        cls = item.__class__
        if cls is int:
            if item < -sizes[dim] or item >= sizes[dim]:
                return False
            whole = False
        elif cls is slice:
            start, stop, step = item.start, item.stop, item.step
            if not ((start is None or start.__class__ is int)
                    and (stop is None or stop.__class__ is int)
                    and (step is None or (step.__class__ is int and step > 0))):
                return False
            if start is not None or stop is not None or (step is not None and step != 1):
                whole = False
        else:
            return False
    return not whole  # `t[:]` is an alias: the walk makes it


def _apply_basic(self: Tensor, items: tuple) -> Tensor:
    result = self
    dim = 0
    for item in items:
        if item.__class__ is int:
            result = (_SELECT.entry or _SELECT.resolve()).call(result, dim, item)
            continue
        start, stop, step = item.start, item.stop, item.step
        if step is None:
            step = 1
        if start is not None or stop is not None or step != 1:
            result = (_SLICE.entry or _SLICE.resolve()).call(result, dim, start, stop, step)
        dim += 1
    return result


def _select_first(aten, self: Tensor, index: int) -> Tensor:
    sizes = self._sizes
    if not sizes:
        raise IndexError(
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
            "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
        )
    if index < -sizes[0] or index >= sizes[0]:
        raise IndexError(f"index {index} is out of bounds for dimension 0 with size {sizes[0]}")
    return (_SELECT.entry or _SELECT.resolve()).call(self, 0, index)


def tensor_setitem(self: Tensor, index, value) -> None:
    """`self[index] = value`: copy_/fill_ into the view, or index_put_ for tensor indices."""
    aten = _aten()
    if _TLS.included & PYTHON_KEYS and isinstance(value, (bool, int, float, complex)):
        # As PyTorch with a mode on: the number becomes a fresh 0-dim tensor handed to
        # `lift_fresh`, then copied as a tensor value is (the mode sees what torch's sees).
        value = make_tensor(value, dtype=self.dtype, device=self.device)
    cls = index.__class__
    if cls is int:
        result, recorded = _select_first(aten, self, index), None
    elif (cls is tuple or cls is slice) and _is_basic(self, index if cls is tuple else (index,)):
        result, recorded = _apply_basic(self, index if cls is tuple else (index,)), None
    else:
        result, recorded = _apply_slicing(self, index)
    if isinstance(value, Tensor):
        if not recorded:
            _copy_to(aten, result, value)
            return
        aten.index_put_.default(
            result, _mask_aware_index_list(recorded), _strip_leading_ones(aten, value)
        )
        return
    if not isinstance(value, (bool, int, float, complex, np.number, np.bool_)):
        try:
            value = make_tensor(value, dtype=self.dtype, device=self.device)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"can't assign a {type(value).__name__} to a "
                f"pyaten.{self.dtype.scalar_name}Tensor"
            ) from error
        tensor_setitem(self, index, value)
        return
    if not recorded:
        aten.fill_.Scalar(result, value)
        return
    scalar = aten.fill_.Scalar(empty_tensor((), self.dtype, self.device), value)
    aten.index_put_.default(result, _mask_aware_index_list(recorded), scalar)


def _strip_leading_ones(aten, value: Tensor) -> Tensor:
    sizes = value._sizes
    first = 0
    while first < len(sizes) and sizes[first] == 1:
        first += 1
    if first == 0:
        return value
    return aten.view.default(value, sizes[first:])


def _copy_to(aten, dst: Tensor, src: Tensor) -> None:
    """PyTorch's copy_to: same shape copies, 0-dim fills, else strip leading 1s and expand."""
    if dst._sizes == src._sizes:
        aten.copy_.default(dst, src)
        return
    if not src._sizes and src.device.type == "cpu":
        aten.fill_.Tensor(dst, src)
        return
    stripped = _strip_leading_ones(aten, src)
    expanded = aten.expand.default(stripped, dst._sizes)
    aten.copy_.default(dst, expanded)


Tensor.__getitem__ = tensor_getitem
Tensor.__setitem__ = tensor_setitem
