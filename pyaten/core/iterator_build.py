"""The general path of `TensorIteratorConfig.build()`, in PyTorch's order of decisions.

1. overlap checks (outputs against themselves and the inputs), 2. broadcast shape (the rule
is broadcast.py's), 3. which outputs get resized (in-place outputs must already have the
shape), 4. dtypes and device, 5. output layout and allocation (see Note: output layout in
iterator.py), 6. NumPy views in the compute dtype. Kept apart from iterator.py, which holds
the public API; the shortcut for calls with nothing to decide is broadcast.py's.
"""

from __future__ import annotations

import warnings

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.broadcast import infer_size
from pyaten.core.device import CPU
from pyaten.core.device import device as Device
from pyaten.core.dtypes import dtype as DType
from pyaten.core.promotion import ResultTypeState, can_cast
from pyaten.core.tensor import Tensor
from pyaten.core.views import (
    assert_no_internal_overlap,
    assert_no_partial_overlap,
    channels_last_strides,
    dims_innermost_first,
    empty_tensor,
    is_channels_last_strides,
    is_contiguous_strides,
    is_non_overlapping_and_dense,
    resize_tensor_,
)

__all__ = ["build_into", "compute_type", "output_strides", "scalar_storage_dtype"]

_F32 = dt.float32
_INT_CATEGORY = dt.INT_CATEGORY
# Python scalars promote as wrapped numbers; their own storage dtype (float -> float64).
_SCALAR_STORAGE = {bool: dt.bool, int: dt.int64, float: dt.float64, complex: dt.complex128}


def compute_type(d: DType) -> DType:
    """The dtype arithmetic runs in: float32 for float16/bfloat16, else `d`."""
    return _F32 if d is dt.float16 or d is dt.bfloat16 else d


def scalar_storage_dtype(value: object) -> DType:
    """The dtype a Python number is held in (bool, int64, float64, complex128)."""
    d = _SCALAR_STORAGE.get(type(value))
    if d is not None:
        return d
    for cls, found in _SCALAR_STORAGE.items():
        if isinstance(value, cls):
            return found
    raise TypeError(
        f"TensorIterator: expected a Tensor or a Python number, got {type(value).__name__}"
    )


_LAYOUT_CACHE: dict[tuple, tuple | None] = {}
_CACHE_LIMIT = 4096  # the decisions are pure functions of shapes/strides: memoise them


def _fmt(shape: tuple) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def build_into(it: object, cfg: object, outs: list, ins: list) -> None:
    """Fill the TensorIterator `it` for outputs `outs` (None = allocate) and inputs `ins`."""
    nout = len(outs)
    tensor_ins = [i for i in ins if isinstance(i, Tensor)]
    defined_outs = [o for o in outs if o is not None]

    if cfg._check_mem_overlap:
        for o in defined_outs:
            assert_no_internal_overlap(o)
            for i in tensor_ins:
                if i is not o and i._storage is o._storage:
                    assert_no_partial_overlap(o, i)

    # -- shape
    if cfg._static_shape is not None:
        shape, all_same, all_scalars = cfg._static_shape, False, False
    else:
        shape = None
        all_same = True
        has_scalars = False
        has_tensors = False
        for op in ins if cfg._resize_outputs else defined_outs + ins:
            sizes = op._sizes if isinstance(op, Tensor) else ()
            if sizes:
                has_tensors = True
            else:
                has_scalars = True
            if not shape:
                shape = sizes
            elif sizes != shape:
                all_same = False
                shape = infer_size(shape, sizes)
        if has_scalars and has_tensors:
            all_same = False
        if shape is None:
            shape = ()
        all_scalars = not has_tensors

    will_resize = [False] * nout
    for k, o in enumerate(outs):
        if o is not None and o._sizes != shape:
            read_write = any(o is i for i in tensor_ins)
            if cfg._resize_outputs and not read_write:
                will_resize[k] = True
            else:
                raise RuntimeError(
                    f"output with shape {_fmt(o._sizes)} doesn't match the broadcast shape "
                    f"{_fmt(shape)}"
                )

    common, device, out_dtypes = _compute_types(cfg, outs, defined_outs, ins, tensor_ins,
                                                all_scalars)
    it.shape = shape
    it.common_dtype = common
    it.compute_dtype = compute_type(common) if common is not None else None
    it.device = device
    it.num_outputs = nout
    it.is_meta = device.type == "meta"
    it.output_dtypes = out_dtypes
    it.will_resize = will_resize
    it._writeback = None

    needs_layout = len(defined_outs) < nout or any(will_resize)
    strides = None
    if needs_layout:
        strides = output_strides(outs, tensor_ins, will_resize, shape, all_same)
    it.output_strides = strides
    if cfg._metadata_only:
        it.tensors = outs + ins
        it.np_inputs = []
        it.np_outputs = []
        return
    if needs_layout:
        _allocate(outs, out_dtypes, will_resize, shape, strides, device)
    it.tensors = outs + ins
    _numpy_views(cfg, it, outs, ins)


def _compute_types(
    cfg: object, outs: list, defined_outs: list, ins: list, tensor_ins: list, all_scalars: bool
) -> tuple[DType | None, Device, list]:
    # Operand order is outputs then inputs, as in PyTorch: the first non-CPU device wins.
    device: Device = CPU
    out_dtype: DType | None = None
    different_outputs = False
    for o in defined_outs:
        if device is CPU and o._device is not CPU and o._device.type != "cpu":
            device = o._device
        if out_dtype is None:
            out_dtype = o._dtype
        elif o._dtype is not out_dtype:
            different_outputs = True
    common: DType | None = None
    different_inputs = False
    for i in ins:
        if isinstance(i, Tensor):
            d = i._dtype
            if device is CPU and i._device is not CPU and i._device.type != "cpu":
                device = i._device
        else:
            d = scalar_storage_dtype(i)
        if common is None:
            common = d
        elif d is not common:
            different_inputs = True
    if cfg._static_device is not None:
        device = cfg._static_device

    if cfg._check_all_same_dtype and (
        different_inputs
        or different_outputs
        or (out_dtype is not None and common is not None and out_dtype is not common)
    ):
        expected = common if common is not None else out_dtype
        for op in defined_outs + ins:
            d = op._dtype if isinstance(op, Tensor) else scalar_storage_dtype(op)
            if d is not expected:
                raise RuntimeError(
                    f"Found dtype {d.scalar_name} but expected {expected.scalar_name}"
                )

    if cfg._promote_inputs:
        if different_inputs or all_scalars:
            common = _common_dtype(ins)
    elif different_inputs:
        common = None
    if cfg._promote_int_to_float and common is not None and common.category <= _INT_CATEGORY:
        common = dt.get_default_dtype()

    if cfg._check_all_same_device:
        _check_devices(cfg, device, defined_outs, tensor_ins)

    out_dtypes = []
    static = cfg._static_dtype
    for o in outs:
        if o is None:
            target = static or common
            if target is None:
                raise RuntimeError("TensorIterator: cannot infer the dtype of an output")
            out_dtypes.append(target)
            continue
        od = o._dtype
        if cfg._safe_cast_outputs and common is not None and od is not common:
            if not can_cast(common, od):
                raise RuntimeError(
                    f"result type {common.scalar_name} can't be cast to the desired output "
                    f"type {od.scalar_name}"
                )
        out_dtypes.append(od)
    return common, device, out_dtypes


_PROMOTION_CACHE: dict[tuple, DType | None] = {}


def _common_dtype(ins: list) -> DType | None:
    # Promotion depends only on each input's dtype and priority class (and the default
    # dtype, for Python floats): memoise on exactly that.
    key = [dt.get_default_dtype()]
    for i in ins:
        if isinstance(i, Tensor):
            key.append((i._dtype, 2 if i._wrapped_number else 1 if i._sizes else 0))
        else:
            key.append(type(i))
    key = tuple(key)
    found = _PROMOTION_CACHE.get(key, _MISSING)
    if found is not _MISSING:
        return found
    state = ResultTypeState()
    for i in ins:
        state.update(i)
    result = state.result()
    if len(_PROMOTION_CACHE) < _CACHE_LIMIT:
        _PROMOTION_CACHE[key] = result
    return result


_MISSING = object()


def _check_devices(cfg: object, device: Device, defined_outs: list, tensor_ins: list) -> None:
    cpu_scalars = 0
    for op in defined_outs:
        if op._device is not device and op._device != device:
            _device_error(device, op._device)
    for op in tensor_ins:
        if op._device is device or op._device == device:
            continue
        if (
            device.type != "cpu"
            and cfg._allow_cpu_scalars
            and not op._sizes
            and op._device.type == "cpu"
        ):
            cpu_scalars += 1
            if cpu_scalars > 1:
                raise RuntimeError("Trying to pass too many CPU scalars to non-CPU kernel!")
            continue
        _device_error(device, op._device)


def _device_error(common: Device, other: Device) -> None:
    raise RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{common} and {other}!"
    )


def _broadcast_strides(op: Tensor, shape: tuple) -> tuple:
    ndim = len(shape)
    sizes = op._sizes
    offset = ndim - len(sizes)
    strides = [0] * ndim
    op_strides = op._strides
    for k, size in enumerate(sizes):
        if size == 1 and shape[offset + k] != 1:
            continue
        strides[offset + k] = op_strides[k]
    return tuple(strides)


def output_strides(
    outs: list, tensor_ins: list, will_resize: list, shape: tuple, all_same: bool
) -> tuple | None:
    """Strides for new outputs (None = contiguous), by PyTorch's layout rule (Note: output
    layout, in iterator.py). Operands need only `_sizes` and `_strides`."""
    operands = [o for k, o in enumerate(outs) if o is not None and not will_resize[k]]
    operands += tensor_ins
    key = (shape, all_same, *[(op._sizes, op._strides) for op in operands])
    try:
        return _LAYOUT_CACHE[key]
    except KeyError:
        pass
    result = _layout(operands, shape, all_same)
    if len(_LAYOUT_CACHE) < _CACHE_LIMIT:
        _LAYOUT_CACHE[key] = result
    return result


def _layout(operands: list, shape: tuple, all_same: bool) -> tuple | None:
    if all_same:
        if all(is_contiguous_strides(op._sizes, op._strides) for op in operands):
            return None
        if all(is_channels_last_strides(op._sizes, op._strides) for op in operands):
            return channels_last_strides(shape)
        if all(is_non_overlapping_and_dense(op._sizes, op._strides) for op in operands):
            first = operands[-1]._strides
            if all(op._strides == first for op in operands):
                return first
    ndim = len(shape)
    if ndim <= 1:
        return None
    bstrides = [_broadcast_strides(op, shape) for op in operands]

    def should_swap(d0: int, d1: int) -> int:
        for st in bstrides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 < s1:
                return -1
            if s0 > s1:
                return 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = dims_innermost_first(ndim, should_swap)
    if perm == list(range(ndim - 1, -1, -1)):
        return None
    strides = [0] * ndim
    acc = 1
    for d in perm:
        strides[d] = acc
        acc *= shape[d]
    return tuple(strides)


def _allocate(
    outs: list, out_dtypes: list, will_resize: list, shape: tuple, strides: tuple | None,
    device: Device,
) -> None:
    for k, o in enumerate(outs):
        if o is None:
            outs[k] = empty_tensor(shape, out_dtypes[k], device, strides)
        elif will_resize[k]:
            if o.numel() != 0:
                warnings.warn(
                    f"An output with one or more elements was resized since it had shape "
                    f"{_fmt(o._sizes)}, which does not match the required output shape "
                    f"{_fmt(shape)}. This behavior is deprecated, and in a future PyTorch "
                    "release outputs will not be resized unless they have zero elements. You "
                    "can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                    "elements with t.resize_(0).",
                    UserWarning,
                    stacklevel=5,
                )
            resize_tensor_(o, shape)
            if strides is not None:
                resize_tensor_(o, shape, strides)


def _numpy_views(cfg: object, it: object, outs: list, ins: list) -> None:
    compute = it.compute_dtype
    if it.is_meta:
        it.np_inputs = []
        it.np_outputs = []
        return
    promote = cfg._promote_inputs and compute is not None
    np_inputs = []
    for i in ins:
        if isinstance(i, Tensor):
            if i._storage.data is None:
                it.is_meta = True
                it.np_inputs = []
                it.np_outputs = []
                return
            d = i._dtype
            target = compute if promote else compute_type(d)
            arr = i._numpy()
            if d is not target:
                arr = arr.astype(target.numpy)
        else:
            target = compute if compute is not None else compute_type(scalar_storage_dtype(i))
            if isinstance(i, complex) and not target.is_complex:
                i = i.real
            arr = np.array(i).astype(target.numpy)
        np_inputs.append(arr)
    np_outputs = []
    writeback = None
    cast = cfg._cast_to_outputs and compute is not None
    for k, o in enumerate(outs):
        if o._storage.data is None:
            it.is_meta = True
            it.np_inputs = []
            it.np_outputs = []
            return
        d = o._dtype
        target = compute if cast else compute_type(d)
        if target is not d:
            scratch = np.empty(o._sizes, target.numpy)
            if writeback is None:
                writeback = []
            writeback.append((k, scratch))
            np_outputs.append(scratch)
        else:
            np_outputs.append(o._numpy())
    it.np_inputs = np_inputs
    it.np_outputs = np_outputs
    it._writeback = writeback
