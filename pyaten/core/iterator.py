"""TensorIterator: the shared front half of every elementwise kernel.

Given outputs (None to allocate, an `out=` tensor, or `self` for in-place) and inputs
(tensors or Python numbers), `build()` does what PyTorch's TensorIterator does before the
loop: memory-overlap checks, broadcasting, type promotion, device checks, output allocation
with strides that follow the inputs' layout, `out=` resizing, and it hands the kernel NumPy
views of every operand in the compute dtype. See docs/tensor-iterator.md.

Note: compute dtype. float16 and bfloat16 compute in float32: inputs are widened, results
are written to a float32 scratch array and rounded once into the output by `finish()`.

Note: output layout. Outputs take the layout of the inputs by PyTorch's rule: if every
operand is contiguous (or every one channels-last, or all share one dense layout) the
output copies it; otherwise dims are ordered by the operands' strides (smallest first,
broadcast dims ignored, ties to the smaller size) and the output is dense in that order.
"""

from __future__ import annotations

import warnings

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.device import CPU
from pyaten.core.device import device as Device
from pyaten.core.dtypes import dtype as DType
from pyaten.core.promotion import ResultTypeState, can_cast
from pyaten.core.storage import Storage
from pyaten.core.tensor import Size, Tensor
from pyaten.core.views import (
    assert_no_internal_overlap,
    assert_no_partial_overlap,
    channels_last_strides,
    contiguous_strides,
    empty_tensor,
    is_channels_last_strides,
    is_contiguous_strides,
    is_non_overlapping_and_dense,
    resize_tensor_,
)

__all__ = ["TensorIteratorConfig", "TensorIterator", "broadcast_shapes", "infer_size"]

_F32 = dt.float32
_HALF_TYPES = (dt.float16, dt.bfloat16)
# Python scalars promote as wrapped numbers; their own storage dtype (float -> float64).
_SCALAR_STORAGE = {bool: dt.bool, int: dt.int64, float: dt.float64, complex: dt.complex128}


def _compute_type(d: DType) -> DType:
    return _F32 if d is dt.float16 or d is dt.bfloat16 else d


def infer_size(a: tuple, b: tuple) -> tuple:
    """Broadcast two shapes; raises PyTorch's error naming the first bad dim."""
    na, nb = len(a), len(b)
    n = max(na, nb)
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
    return tuple(out)


def broadcast_shapes(*shapes: tuple | int) -> Size:
    """`torch.broadcast_shapes`: the common shape of several shapes (an int means (n,))."""
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


def _fmt(shape: tuple) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


class TensorIteratorConfig:
    """Builder: add outputs then inputs, set flags, call `build()`.

    Defaults follow PyTorch: check_all_same_dtype on, resize_outputs on, everything else off.
    """

    __slots__ = (
        "_outputs",
        "_inputs",
        "_check_mem_overlap",
        "_allow_cpu_scalars",
        "_check_all_same_dtype",
        "_check_all_same_device",
        "_promote_inputs",
        "_promote_int_to_float",
        "_cast_to_outputs",
        "_safe_cast_outputs",
        "_resize_outputs",
        "_static_dtype",
        "_static_device",
        "_static_shape",
        "_metadata_only",
    )

    def __init__(self) -> None:
        self._outputs: list = []
        self._inputs: list = []
        self._check_mem_overlap = True
        self._allow_cpu_scalars = False
        self._check_all_same_dtype = True
        self._check_all_same_device = True
        self._promote_inputs = False
        self._promote_int_to_float = False
        self._cast_to_outputs = False
        self._safe_cast_outputs = False
        self._resize_outputs = True
        self._static_dtype: DType | None = None
        self._static_device: Device | None = None
        self._static_shape: tuple | None = None
        self._metadata_only = False

    def add_output(self, t: Tensor | None) -> TensorIteratorConfig:
        """An output: None (allocate), an out= tensor, or self for in-place ops."""
        if self._inputs:
            raise RuntimeError("TensorIteratorConfig: add all outputs before any input")
        self._outputs.append(t)
        return self

    def add_input(self, t: Tensor | bool | int | float | complex) -> TensorIteratorConfig:
        """An input: a tensor, or a Python number (promotes as a wrapped scalar)."""
        self._inputs.append(t)
        return self

    add_const_input = add_input

    def set_check_mem_overlap(self, value: bool) -> TensorIteratorConfig:
        self._check_mem_overlap = value
        return self

    def allow_cpu_scalars(self, value: bool) -> TensorIteratorConfig:
        self._allow_cpu_scalars = value
        return self

    def check_all_same_dtype(self, value: bool) -> TensorIteratorConfig:
        self._check_all_same_dtype = value
        return self

    def check_all_same_device(self, value: bool) -> TensorIteratorConfig:
        self._check_all_same_device = value
        return self

    def promote_inputs_to_common_dtype(self, value: bool) -> TensorIteratorConfig:
        self._promote_inputs = value
        if value:
            self._check_all_same_dtype = False
        return self

    def promote_integer_inputs_to_float(self, value: bool) -> TensorIteratorConfig:
        self._promote_int_to_float = value
        return self

    def cast_common_dtype_to_outputs(self, value: bool) -> TensorIteratorConfig:
        self._cast_to_outputs = value
        if value:
            self._check_all_same_dtype = False
        return self

    def enforce_safe_casting_to_output(self, value: bool) -> TensorIteratorConfig:
        self._safe_cast_outputs = value
        return self

    def resize_outputs(self, value: bool) -> TensorIteratorConfig:
        self._resize_outputs = value
        return self

    def declare_static_dtype(self, d: DType) -> TensorIteratorConfig:
        """Undefined outputs get `d` (e.g. bool for comparisons) instead of the common dtype."""
        self._static_dtype = d
        self._check_all_same_dtype = False
        return self

    def declare_static_device(self, d: Device) -> TensorIteratorConfig:
        self._static_device = d
        return self

    def declare_static_shape(self, shape: tuple) -> TensorIteratorConfig:
        """Use `shape` as the iteration shape instead of broadcasting the operands."""
        self._static_shape = tuple(shape)
        return self

    def metadata_only(self, value: bool) -> TensorIteratorConfig:
        """Plan without touching outputs: no allocation, no resize, no NumPy views. The
        result's `output_dtypes`/`output_strides`/`will_resize` tell a structured wrapper
        what to allocate (used by `set_output`-style meta functions)."""
        self._metadata_only = value
        return self

    def build(self) -> TensorIterator:
        return _build(self)


class TensorIterator:
    """A built iteration: operands, shape, dtypes and NumPy views for the kernel.

    Attributes kernels use: `shape`, `common_dtype`, `compute_dtype`, `device`,
    `tensors` (outputs then inputs; Python-number inputs stay numbers), `np_inputs`,
    `np_outputs` (write here, then call `finish()`), `is_meta`.
    """

    __slots__ = (
        "shape",
        "common_dtype",
        "compute_dtype",
        "device",
        "num_outputs",
        "tensors",
        "np_inputs",
        "np_outputs",
        "_writeback",
        "is_meta",
        "output_dtypes",
        "output_strides",
        "will_resize",
    )

    # ---- builders matching PyTorch's TensorIteratorBase::build_*_op -------------------
    @staticmethod
    def binary_op(out: Tensor | None, a: object, b: object) -> TensorIterator:
        """add/sub/mul style: promote inputs, cast to out, refuse unsafe out dtypes."""
        fast = _fast_binary(out, a, b, False)
        if fast is not None:
            return fast
        return (
            TensorIteratorConfig()
            .add_output(out)
            .add_input(a)
            .add_input(b)
            .allow_cpu_scalars(True)
            .promote_inputs_to_common_dtype(True)
            .cast_common_dtype_to_outputs(True)
            .enforce_safe_casting_to_output(True)
            .build()
        )

    borrowing_binary_op = binary_op

    @staticmethod
    def binary_float_op(out: Tensor | None, a: object, b: object) -> TensorIterator:
        """div/atan2 style: like binary_op, but integer/bool inputs compute in the default
        float dtype."""
        fast = _fast_binary(out, a, b, True)
        if fast is not None:
            return fast
        return (
            TensorIteratorConfig()
            .add_output(out)
            .add_input(a)
            .add_input(b)
            .allow_cpu_scalars(True)
            .promote_inputs_to_common_dtype(True)
            .cast_common_dtype_to_outputs(True)
            .enforce_safe_casting_to_output(True)
            .promote_integer_inputs_to_float(True)
            .build()
        )

    @staticmethod
    def comparison_op(out: Tensor | None, a: object, b: object) -> TensorIterator:
        """eq/lt style: inputs promoted to their common dtype, output bool (or out's dtype).

        `np_outputs[0]` is in the output's own dtype; NumPy comparisons write there."""
        cfg = (
            TensorIteratorConfig()
            .add_output(out)
            .add_input(a)
            .add_input(b)
            .allow_cpu_scalars(True)
            .promote_inputs_to_common_dtype(True)
        )
        if out is None:
            cfg.declare_static_dtype(dt.bool)
        return cfg.build()

    @staticmethod
    def unary_op(out: Tensor | None, a: Tensor) -> TensorIterator:
        """neg/abs style: output in the input's dtype (or out's, if safely castable)."""
        return (
            TensorIteratorConfig()
            .add_output(out)
            .add_input(a)
            .cast_common_dtype_to_outputs(True)
            .enforce_safe_casting_to_output(True)
            .promote_inputs_to_common_dtype(True)
            .build()
        )

    @staticmethod
    def unary_float_op(out: Tensor | None, a: Tensor) -> TensorIterator:
        """exp/sin/sigmoid style: integer/bool inputs compute in the default float dtype."""
        return (
            TensorIteratorConfig()
            .add_output(out)
            .add_input(a)
            .cast_common_dtype_to_outputs(True)
            .enforce_safe_casting_to_output(True)
            .promote_inputs_to_common_dtype(True)
            .promote_integer_inputs_to_float(True)
            .build()
        )

    @staticmethod
    def nullary_op(out: Tensor) -> TensorIterator:
        """fill/random style: one output, no inputs."""
        return (
            TensorIteratorConfig()
            .add_output(out)
            .check_all_same_dtype(False)
            .resize_outputs(False)
            .build()
        )

    # ---- accessors -----------------------------------------------------------------------
    def output(self, i: int = 0) -> Tensor:
        """The i-th output tensor (allocated or given)."""
        return self.tensors[i]

    def input(self, i: int = 0) -> Tensor | object:
        """The i-th input as given (a tensor or a Python number)."""
        return self.tensors[self.num_outputs + i]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def dtype(self, i: int = 0) -> DType:
        """dtype of operand i (outputs first); Python numbers report their wrapped dtype."""
        t = self.tensors[i]
        return t._dtype if isinstance(t, Tensor) else _SCALAR_STORAGE[type(t)]

    def finish(self) -> Tensor:
        """Write scratch results back into the outputs (casting/rounding once); returns
        output 0. Call after the kernel wrote `np_outputs`."""
        wb = self._writeback
        if wb:
            with np.errstate(over="ignore", invalid="ignore"):  # overflow -> inf, as in torch
                for i, scratch in wb:
                    np.copyto(self.tensors[i]._numpy(), scratch, casting="unsafe")
            self._writeback = None
        return self.tensors[0]

    def assign(self, value: object, i: int = 0) -> Tensor:
        """Store a computed array (or number) into output i, broadcasting and casting."""
        if self.is_meta:
            return self.tensors[i]
        target = self.tensors[i]._numpy()
        np.copyto(target, value, casting="unsafe")
        if self._writeback:
            self._writeback = [(j, s) for j, s in self._writeback if j != i] or None
        return self.tensors[i]

    def __repr__(self) -> str:
        return (
            f"TensorIterator(shape={list(self.shape)}, common_dtype={self.common_dtype}, "
            f"compute_dtype={self.compute_dtype}, device={self.device})"
        )


# ---- the fast path ---------------------------------------------------------------------
_new_iter = object.__new__


def _fast_binary(out: object, a: object, b: object, int_to_float: bool) -> TensorIterator | None:
    # Same-shape contiguous CPU tensors of one dtype and no out=: nothing to decide.
    if out is not None or type(a) is not Tensor or type(b) is not Tensor:
        return None
    d = a._dtype
    sizes = a._sizes
    if (
        b._dtype is not d
        or b._sizes != sizes
        or a._device is not CPU
        or b._device is not CPU
        or d is dt.float16
        or d is dt.bfloat16
        or (int_to_float and d.category <= dt.INT_CATEGORY)
    ):
        return None
    strides = contiguous_strides(sizes)
    if a._strides != strides or b._strides != strides:
        return None
    numel = 1
    for s in sizes:
        numel *= s
    result = Tensor._make(
        Storage._fresh(numel * d.itemsize, CPU), sizes, strides, 0, d, CPU
    )
    it = _new_iter(TensorIterator)
    it.shape = sizes
    it.common_dtype = d
    it.compute_dtype = d
    it.device = CPU
    it.num_outputs = 1
    it.tensors = [result, a, b]
    it.np_inputs = [a._numpy(), b._numpy()]
    it.np_outputs = [result._numpy()]
    it._writeback = None
    it.is_meta = False
    it.output_dtypes = [d]
    it.output_strides = None
    it.will_resize = [False]
    return it


# ---- the general path ------------------------------------------------------------------
def _op_dtype(op: object) -> DType:
    return op._dtype if isinstance(op, Tensor) else _SCALAR_STORAGE.get(type(op)) or _py_dtype(op)


def _py_dtype(op: object) -> DType:
    if isinstance(op, bool):
        return dt.bool
    if isinstance(op, int):
        return dt.int64
    if isinstance(op, float):
        return dt.float64
    if isinstance(op, complex):
        return dt.complex128
    raise TypeError(
        f"TensorIterator: expected a Tensor or a Python number, got {type(op).__name__}"
    )


def _compute_shape(cfg: TensorIteratorConfig, outs: list, ins: list) -> tuple[tuple, bool, bool]:
    shape: tuple | None = None
    same = True
    has_scalars = False
    has_tensors = False
    ops = ins if cfg._resize_outputs else [o for o in outs if o is not None] + ins
    for op in ops:
        sizes = op._sizes if isinstance(op, Tensor) else ()
        if sizes:
            has_tensors = True
        else:
            has_scalars = True
        if has_scalars and has_tensors:
            same = False
        if not shape:
            shape = sizes
        elif sizes != shape:
            same = False
            shape = infer_size(shape, sizes)
    return (shape if shape is not None else ()), same, not has_tensors


def _build(cfg: TensorIteratorConfig) -> TensorIterator:
    outs = list(cfg._outputs)
    ins = cfg._inputs
    nout = len(outs)
    read_write = [o is not None and any(o is i for i in ins) for o in outs]

    if cfg._check_mem_overlap:
        for o in outs:
            if o is None:
                continue
            assert_no_internal_overlap(o)
            for i in ins:
                if isinstance(i, Tensor):
                    assert_no_partial_overlap(o, i)

    if cfg._static_shape is not None:
        shape, all_same, all_scalars = cfg._static_shape, False, False
    else:
        shape, all_same, all_scalars = _compute_shape(cfg, outs, ins)

    will_resize = [False] * nout
    for k, o in enumerate(outs):
        if o is not None and o._sizes != shape:
            if cfg._resize_outputs and not read_write[k]:
                will_resize[k] = True
            else:
                raise RuntimeError(
                    f"output with shape {_fmt(o._sizes)} doesn't match the broadcast shape "
                    f"{_fmt(shape)}"
                )

    common_dtype, device, out_dtypes = _compute_types(cfg, outs, ins, all_scalars)

    it = _new_iter(TensorIterator)
    it.shape = shape
    it.common_dtype = common_dtype
    it.device = device
    it.num_outputs = nout
    it.is_meta = device.type == "meta"
    it.output_dtypes = out_dtypes
    it.will_resize = will_resize
    if cfg._metadata_only:
        needs = any(o is None or will_resize[k] for k, o in enumerate(outs))
        it.output_strides = (
            _output_strides(outs, ins, will_resize, shape, all_same) if needs else None
        )
        it.tensors = outs + list(ins)
        it.compute_dtype = _compute_type(common_dtype) if common_dtype is not None else None
        it.np_inputs = []
        it.np_outputs = []
        it._writeback = None
        return it

    it.output_strides = _allocate_outputs(
        cfg, outs, ins, out_dtypes, will_resize, shape, all_same, device
    )
    it.tensors = outs + list(ins)
    _make_numpy_views(cfg, it, outs, ins)
    return it


def _compute_types(
    cfg: TensorIteratorConfig, outs: list, ins: list, all_scalars: bool
) -> tuple[DType | None, Device, list]:
    common: DType | None = None
    different_inputs = False
    out_dtype: DType | None = None
    different_outputs = False
    device: Device = CPU
    for o in outs:
        if o is None:
            continue
        if device.type == "cpu" and o._device.type != "cpu":
            device = o._device
        if out_dtype is None:
            out_dtype = o._dtype
        elif o._dtype is not out_dtype:
            different_outputs = True
    for i in ins:
        d = _op_dtype(i)
        if isinstance(i, Tensor) and device.type == "cpu" and i._device.type != "cpu":
            device = i._device
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
        for op in [o for o in outs if o is not None] + list(ins):
            d = _op_dtype(op)
            if d is not expected:
                raise RuntimeError(
                    f"Found dtype {d.scalar_name} but expected {expected.scalar_name}"
                )

    if (different_inputs or all_scalars) and cfg._promote_inputs:
        state = ResultTypeState()
        for i in ins:
            state.update(i)
        common = state.result()
    elif not cfg._promote_inputs and different_inputs:
        common = None
    if cfg._promote_int_to_float and common is not None and common.category <= dt.INT_CATEGORY:
        common = dt.get_default_dtype()

    if cfg._check_all_same_device:
        cpu_scalars = 0
        operands = [(o, False) for o in outs if o is not None]
        operands += [(i, True) for i in ins if isinstance(i, Tensor)]
        for op, is_input in operands:
            if op._device == device:
                continue
            if (
                device.type != "cpu"
                and cfg._allow_cpu_scalars
                and is_input
                and not op._sizes
                and op._device.type == "cpu"
            ):
                cpu_scalars += 1
                if cpu_scalars > 1:
                    raise RuntimeError("Trying to pass too many CPU scalars to non-CPU kernel!")
                continue
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least two "
                f"devices, {device} and {op._device}!"
            )

    out_dtypes = []
    for o in outs:
        if o is None:
            target = cfg._static_dtype or common
            if target is None:
                raise RuntimeError("TensorIterator: cannot infer the dtype of an output")
            out_dtypes.append(target)
            continue
        if cfg._safe_cast_outputs and common is not None and o._dtype is not common:
            if not can_cast(common, o._dtype):
                raise RuntimeError(
                    f"result type {common.scalar_name} can't be cast to the desired output "
                    f"type {o._dtype.scalar_name}"
                )
        out_dtypes.append(o._dtype)
    return common, device, out_dtypes


def _broadcast_strides(op: Tensor, shape: tuple) -> tuple:
    ndim = len(shape)
    sizes = op._sizes
    offset = ndim - len(sizes)
    strides = [0] * ndim
    for k, size in enumerate(sizes):
        if size == 1 and shape[offset + k] != 1:
            continue
        strides[offset + k] = op._strides[k]
    return tuple(strides)


def _output_strides(
    outs: list, ins: list, will_resize: list, shape: tuple, all_same: bool
) -> tuple | None:
    """Strides for a new output (None means contiguous), by PyTorch's layout rule."""
    operands = [o for k, o in enumerate(outs) if o is not None and not will_resize[k]]
    operands += [i for i in ins if isinstance(i, Tensor)]
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

    perm = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            cmp = should_swap(perm[d0], perm[d1])
            if cmp > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif cmp < 0:
                break
    if perm == list(range(ndim - 1, -1, -1)):
        return None
    strides = [0] * ndim
    acc = 1
    for d in perm:
        strides[d] = acc
        acc *= shape[d]
    return tuple(strides)


def _allocate_outputs(
    cfg: TensorIteratorConfig,
    outs: list,
    ins: list,
    out_dtypes: list,
    will_resize: list,
    shape: tuple,
    all_same: bool,
    device: Device,
) -> tuple | None:
    if all(o is not None and not will_resize[k] for k, o in enumerate(outs)):
        return None
    strides = _output_strides(outs, ins, will_resize, shape, all_same)
    for k, o in enumerate(outs):
        if o is None:
            st = contiguous_strides(shape) if strides is None else strides
            outs[k] = empty_tensor(shape, out_dtypes[k], device, st)
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
                    stacklevel=4,
                )
            resize_tensor_(o, shape)
            if strides is not None:
                resize_tensor_(o, shape, strides)
    return strides


def _make_numpy_views(cfg: TensorIteratorConfig, it: TensorIterator, outs: list, ins: list) -> None:
    common = it.common_dtype
    compute = _compute_type(common) if common is not None else None
    it.compute_dtype = compute
    it._writeback = None
    if it.is_meta or any(
        isinstance(t, Tensor) and t._storage.data is None for t in outs + list(ins)
    ):
        it.is_meta = True
        it.np_inputs = []
        it.np_outputs = []
        return
    np_inputs = []
    for i in ins:
        if isinstance(i, Tensor):
            target = compute if cfg._promote_inputs and compute is not None else _compute_type(
                i._dtype
            )
            arr = i._numpy()
            if i._dtype is not target:
                arr = arr.astype(target.numpy)
        else:
            target = compute if compute is not None else _compute_type(_op_dtype(i))
            arr = np.array(i)
            if target.category < dt.COMPLEX_CATEGORY and isinstance(i, complex):
                arr = arr.real
            arr = arr.astype(target.numpy)
        np_inputs.append(arr)
    it.np_inputs = np_inputs
    np_outputs = []
    writeback = []
    for k, o in enumerate(outs):
        view = o._numpy()
        if cfg._cast_to_outputs and compute is not None:
            target = compute
        else:
            target = _compute_type(o._dtype)
        if target is not o._dtype:
            scratch = np.empty(view.shape, target.numpy)
            writeback.append((k, scratch))
            np_outputs.append(scratch)
        else:
            np_outputs.append(view)
    it.np_outputs = np_outputs
    it._writeback = writeback or None
