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

`binary_op`/`binary_float_op` take the row-major shortcut first (Note: the row-major shortcut,
in broadcast.py); `broadcast_shapes` and `infer_size` are broadcast.py's, re-exported here.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.broadcast import (
    broadcast_shapes,
    infer_size,
    new_row_major,
    number_keeps_dtype,
    row_major_plan,
)
from pyaten.core.device import CPU
from pyaten.core.device import device as Device
from pyaten.core.dtypes import dtype as DType
from pyaten.core.iterator_build import build_into, scalar_storage_dtype
from pyaten.core.tensor import Tensor

__all__ = ["TensorIteratorConfig", "TensorIterator", "broadcast_shapes", "infer_size"]


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
        it = _new_iter(TensorIterator)
        build_into(it, self, list(self._outputs), list(self._inputs))
        return it


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
        return _run(_BINARY, [out], [a, b])

    borrowing_binary_op = binary_op

    @staticmethod
    def binary_float_op(out: Tensor | None, a: object, b: object) -> TensorIterator:
        """div/atan2 style: like binary_op, but integer/bool inputs compute in the default
        float dtype."""
        fast = _fast_binary(out, a, b, True)
        if fast is not None:
            return fast
        return _run(_BINARY_FLOAT, [out], [a, b])

    @staticmethod
    def comparison_op(out: Tensor | None, a: object, b: object) -> TensorIterator:
        """eq/lt style: inputs promoted to their common dtype, output bool (or out's dtype).

        `np_outputs[0]` is in the output's own dtype; NumPy comparisons write there."""
        return _run(_COMPARISON_NEW if out is None else _COMPARISON_OUT, [out], [a, b])

    @staticmethod
    def unary_op(out: Tensor | None, a: Tensor) -> TensorIterator:
        """neg/abs style: output in the input's dtype (or out's, if safely castable)."""
        return _run(_UNARY, [out], [a])

    @staticmethod
    def unary_float_op(out: Tensor | None, a: Tensor) -> TensorIterator:
        """exp/sin/sigmoid style: integer/bool inputs compute in the default float dtype."""
        return _run(_UNARY_FLOAT, [out], [a])

    @staticmethod
    def nullary_op(out: Tensor) -> TensorIterator:
        """fill/random style: one output (its own shape), no inputs."""
        return _run(_NULLARY, [out], [])

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
        return t._dtype if isinstance(t, Tensor) else scalar_storage_dtype(t)

    def broadcast_inputs(self) -> list[np.ndarray]:
        """`np_inputs` expanded to `shape` (read-only broadcast views, no copies)."""
        shape = self.shape
        return [a if a.shape == shape else np.broadcast_to(a, shape) for a in self.np_inputs]

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


def _run(cfg: TensorIteratorConfig, outs: list, ins: list) -> TensorIterator:
    it = _new_iter(TensorIterator)
    build_into(it, cfg, outs, ins)
    return it


def _template(**flags: bool) -> TensorIteratorConfig:
    # Flag sets of the builders, made once; build_into never mutates a config.
    cfg = TensorIteratorConfig()
    for name, value in flags.items():
        getattr(cfg, name)(value)
    return cfg


_ELEMENTWISE = dict(
    allow_cpu_scalars=True,
    promote_inputs_to_common_dtype=True,
    cast_common_dtype_to_outputs=True,
    enforce_safe_casting_to_output=True,
)
_BINARY = _template(**_ELEMENTWISE)
_BINARY_FLOAT = _template(**_ELEMENTWISE, promote_integer_inputs_to_float=True)
_COMPARISON_OUT = _template(allow_cpu_scalars=True, promote_inputs_to_common_dtype=True)
_COMPARISON_NEW = _template(allow_cpu_scalars=True, promote_inputs_to_common_dtype=True)
_COMPARISON_NEW.declare_static_dtype(dt.bool)
_UNARY = _template(
    cast_common_dtype_to_outputs=True,
    enforce_safe_casting_to_output=True,
    promote_inputs_to_common_dtype=True,
)
_UNARY_FLOAT = _template(
    cast_common_dtype_to_outputs=True,
    enforce_safe_casting_to_output=True,
    promote_inputs_to_common_dtype=True,
    promote_integer_inputs_to_float=True,
)
_NULLARY = _template(check_all_same_dtype=False, resize_outputs=False)


# Computed in a wider dtype and rounded once by finish(): the general path's scratch arrays.
_SCRATCH_DTYPES = (dt.float16, dt.bfloat16, dt.complex32)


def _fast_binary(out: object, a: object, b: object, int_to_float: bool) -> TensorIterator | None:
    # broadcast.py's row-major shortcut, for new CPU outputs that need no float32 scratch.
    if out is not None:
        return None
    if isinstance(a, Tensor) and not a._wrapped_number:
        first, other = a, b
    elif isinstance(b, Tensor) and not b._wrapped_number:
        first, other = b, a
    else:
        return None
    other_is_tensor = isinstance(other, Tensor)
    if other_is_tensor:
        plan = row_major_plan((first, other), int_to_float)
    elif number_keeps_dtype(other, first._dtype):
        plan = row_major_plan((first,), int_to_float)
    else:
        return None
    if plan is None or first._device is not CPU:
        return None
    shape, d, direct = plan
    if d in _SCRATCH_DTYPES:
        return None
    if not other_is_tensor:
        value = np.array(other).astype(d.numpy)
    elif direct:
        value = other._numpy()
    else:  # a wrapped number, cast to the tensors' dtype
        value = other._numpy().astype(d.numpy)
    result = new_row_major(shape, d, CPU)
    it = _new_iter(TensorIterator)
    it.shape = shape
    it.common_dtype = d
    it.compute_dtype = d
    it.device = CPU
    it.num_outputs = 1
    it.tensors = [result, a, b]
    it.np_inputs = [first._numpy(), value] if first is a else [value, first._numpy()]
    it.np_outputs = [result._np]
    it._writeback = None
    it.is_meta = False
    it.output_dtypes = [d]
    it.output_strides = None
    it.will_resize = [False]
    return it
