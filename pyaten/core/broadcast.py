"""Broadcasting, in one place: the shape rule of every elementwise op (and of
`torch.broadcast_shapes`), and the shortcut taken when the operands leave nothing else to decide.

Note: the row-major shortcut
    TensorIterator's general plan (`iterator_build.build_into`) decides overlap, shape, dtypes,
    device and output layout one by one. For the commonest call, all of that is known at a
    glance: no `out=`, tensors of one dtype and device, each row-major (or all of one shape and
    strides), any wrapped number (or Python number) of the tensors' category or lower. Then the
    shape is the broadcast shape, the dtype the tensors', and the output row-major: PyTorch's
    layout rule gives row-major for row-major operands. In place (`a.op_(b)`) the output is a
    row-major `a` of the broadcast shape that no other operand partially overlaps.

    `row_major_plan` recognises that case in a few comparisons and `new_row_major` allocates the
    output with its NumPy view built; core's `TensorIterator` builders and native's structured
    `TensorIteratorMeta` both take it, and fall back to the general plan for everything else
    (the structured path does so while tracing too, so a trace shows every decision). It must
    decide exactly what the general plan decides: `tests/test_perf_paths.py` compares the two,
    `tests/test_core_iterator.py` compares both with PyTorch.

    Benchmark: `benchmarks/bench_core.py` (rows "add 4x4 + 4x4", "add 4x4 + (4,) broadcast")
    and `benchmarks/bench_ops.py` (add, sigmoid, relu, a.add_(b), ... on 4x4), beside PyTorch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.accel import ACCEL as _ACCEL
from pyaten.core.dtypes import dtype as DType
from pyaten.core.memory import allocation_error
from pyaten.core.size import Size
from pyaten.core.storage import Storage
from pyaten.core.tensor import Tensor
from pyaten.core.views import contiguous_strides, is_contiguous_strides

__all__ = [
    "broadcast_shapes",
    "infer_size",
    "infer_sizes",
    "new_row_major",
    "number_keeps_dtype",
    "row_major_plan",
]

_CACHE_LIMIT = 4096  # shapes recur call after call: memoise the pure decisions

# ---- the shape rule ----------------------------------------------------------------------

_INFER_CACHE: dict[tuple, tuple] = {}


def infer_size(a: tuple, b: tuple) -> tuple:
    """Broadcast two shapes (ATen's `infer_size`); raises PyTorch's error naming the first
    mismatching dimension of the result."""
    found = _INFER_CACHE.get((a, b))
    if found is not None:
        return found
    na, nb = len(a), len(b)
    n = na if na > nb else nb
    out = [0] * n
    for i in range(n - 1, -1, -1):
        offset = n - 1 - i
        da, db = na - 1 - offset, nb - 1 - offset
        sa = a[da] if da >= 0 else 1
        sb = b[db] if db >= 0 else 1
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(
                f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at "
                f"non-singleton dimension {i}"
            )
        out[i] = sb if sa == 1 else sa
    result = tuple(out)
    if len(_INFER_CACHE) < _CACHE_LIMIT:
        _INFER_CACHE[(a, b)] = result
    return result


def infer_sizes(*shapes: tuple) -> tuple:
    """Broadcast any number of shapes, left to right, as TensorIterator does (the error names
    the shape so far as tensor a and the next operand's as tensor b)."""
    result: tuple = ()
    for shape in shapes:
        if shape != result:
            result = infer_size(result, tuple(shape))
    return result


def broadcast_shapes(*shapes: tuple | int) -> Size:
    """`torch.broadcast_shapes`: the common shape of several shapes (an int means (n,)), with
    that function's own error texts."""
    given = [(s,) if isinstance(s, int) else s for s in shapes if s is not None]
    if not given:
        return Size(())
    common = [1] * max(len(s) for s in given)
    for arg_index, shape in enumerate(given):
        for idx in range(-1, -1 - len(shape), -1):
            size = shape[idx]
            if size < 0:
                raise ValueError("Attempting to broadcast a dimension with negative length!")
            if size == 1:
                continue
            if common[idx] == 1:
                common[idx] = size
            elif size != common[idx]:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {size} at {idx}! Mismatching "
                    f"argument at index {arg_index} had {shape!r}; but expected shape should be "
                    f"broadcastable to {common!r}"
                )
    return Size(common)


# ---- the row-major shortcut (see the Note above) -----------------------------------------

_PY_CATEGORY = {bool: dt.BOOL_CATEGORY, int: dt.INT_CATEGORY, float: dt.FLOAT_CATEGORY}
_INT_CATEGORY = dt.INT_CATEGORY
_FLOAT16 = dt.float16
_BFLOAT16 = dt.bfloat16
_COMPLEX32 = dt.complex32  # computed in complex64, like float16 in float32


def row_major_plan(
    inputs: Sequence[Tensor], promote_to_float: bool = False, inplace: bool = False
) -> tuple[tuple, DType, bool] | None:
    """`(shape, dtype, direct)` when the shortcut applies to the tensors `inputs`, else None.

    `inputs[0]` is a dimensioned tensor (the output too when `inplace`); a Python number is
    passed as its wrapped-number tensor. `promote_to_float`: integer inputs would compute in a
    float dtype (declined). `direct`: the inputs' arrays are already in the compute dtype (no
    wrapped number to cast; not float16, bfloat16 or complex32, which compute wider). Never
    raises: what the shortcut cannot prove fine goes the general way.
    """
    first = inputs[0]
    if first._wrapped_number:
        return None
    sizes = first._sizes
    strides = first._strides
    dtype = first._dtype
    if promote_to_float and dtype.category <= _INT_CATEGORY:
        return None
    device = first._device
    direct = dtype is not _FLOAT16 and dtype is not _BFLOAT16 and dtype is not _COMPLEX32
    broadcast = False
    for t in inputs:
        if t is first:
            continue
        if t._wrapped_number:
            if t._dtype.category > dtype.category:
                return None  # a number of a higher category changes the dtype
            direct = False
        elif t._dtype is not dtype or t._device is not device:
            return None
        elif t._sizes != sizes or t._strides != strides:
            broadcast = True
        elif inplace and t._storage is first._storage and t._offset != first._offset:
            return None  # a partial overlap of the output with an input: the general error
    if broadcast:
        shape = _broadcast_row_major(inputs, sizes, inplace)
        return None if shape is None else (shape, dtype, direct)
    if inplace or len(sizes) > 1:
        geometry = _GEOMETRY.get(sizes)
        if geometry is None:
            geometry = _geometry(sizes)
        if strides != geometry[0] and (not inplace or not is_contiguous_strides(sizes, strides)):
            # In place, the general plan decides on overlap (an expanded `self` raises);
            # otherwise the output follows the inputs' layout, which the general plan decides.
            return None
    return sizes, dtype, direct


def number_keeps_dtype(value: object, dtype: DType) -> bool:
    """A Python number (bool, int, float) of `dtype`'s category or lower: it promotes like a
    wrapped number and leaves `dtype` as it is (the shortcut's rule for numbers)."""
    category = _PY_CATEGORY.get(type(value))
    return category is not None and category <= dtype.category


def _broadcast_row_major(inputs: Sequence[Tensor], sizes: tuple, inplace: bool) -> tuple | None:
    # Tensors of different shapes: each must be exactly row-major (a size-1 dim's stride can
    # steer PyTorch's layout rule), the result non-empty (empty results take PyTorch's
    # strides from the general plan); in place, the result is `inputs[0]`'s shape and no
    # other operand shares its storage.
    shape = sizes
    for t in inputs:
        if t._wrapped_number:
            continue
        t_sizes = t._sizes
        geometry = _GEOMETRY.get(t_sizes)
        if geometry is None:
            geometry = _geometry(t_sizes)
        if t._strides != geometry[0]:
            return None
        if t_sizes != shape:
            found = _INFER_CACHE.get((shape, t_sizes))
            if found is None:
                try:
                    found = infer_size(shape, t_sizes)
                except RuntimeError:
                    return None  # the general plan raises, after its overlap checks
            shape = found
    if inplace:
        first = inputs[0]
        if shape != sizes:
            return None
        for t in inputs:
            if t is not first and t._storage is first._storage:
                return None
    geometry = _GEOMETRY.get(shape)
    if geometry is None:
        geometry = _geometry(shape)
    return shape if geometry[1] else None


# sizes -> (row-major strides, numel, {itemsize: byte strides}): output shapes recur per call.
_GEOMETRY: dict[tuple, tuple[tuple, int, dict[int, tuple]]] = {}
_U8 = np.dtype(np.uint8)
_np_empty = np.empty
_ndarray = np.ndarray
_make = Tensor._make
_new_storage = object.__new__


def _geometry(sizes: tuple) -> tuple[tuple, int, dict[int, tuple]]:
    numel = 1
    for s in sizes:
        numel *= s
    found = (contiguous_strides(sizes), numel, {})
    if len(_GEOMETRY) < _CACHE_LIMIT:
        _GEOMETRY[sizes] = found
    return found


def new_row_major(sizes: tuple, dtype: DType, device: object) -> Tensor:
    """A new row-major tensor; on the CPU its NumPy view comes built (kernels write into it)."""
    geometry = _GEOMETRY.get(sizes)
    if geometry is None:
        geometry = _geometry(sizes)
    itemsize = dtype.itemsize
    if dtype is _COMPLEX32:
        dt.warn_complex_half()
    if device.type != "cpu":
        strides, numel, _ = geometry
        return _make(Storage._fresh(numel * itemsize, device), sizes, strides, 0, dtype, device)
    # Storage._fresh written out: this runs for every new CPU result.
    storage = _new_storage(Storage)
    storage.nbytes = nbytes = geometry[1] * itemsize
    storage.device = device
    storage.resizable = True
    try:
        data = storage.data = _np_empty(nbytes, _U8)
    except (MemoryError, ValueError):
        raise allocation_error(nbytes, sizes) from None  # Note: allocation errors
    t = _make(storage, sizes, geometry[0], 0, dtype, device)
    byte_strides = geometry[2].get(itemsize)
    if byte_strides is None:
        byte_strides = geometry[2][itemsize] = tuple([s * itemsize for s in geometry[0]])
    t._np = _ndarray(sizes, dtype.numpy, data, 0, byte_strides)
    return t


# The compiled accelerator's allocation replaces the Python one above, which stays the
# reference and its fallback (Note: the accelerator, in pyaten/core/accel.py).
new_row_major_reference = new_row_major
if _ACCEL is not None:
    _ACCEL.setup_alloc(
        {d: d.numpy for d in dt.ALL_DTYPES if d is not _COMPLEX32},
        new_row_major_reference, lambda sizes: _geometry(sizes)[0],
    )
    new_row_major = _ACCEL.new_row_major  # noqa: F811 - the accelerated replacement
