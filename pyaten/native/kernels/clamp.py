"""clamp, clamp_min, clamp_max (Scalar and Tensor overloads) and the `clip` alias.

The Scalar overloads promote by hand, as PyTorch's meta functions do: a floating `self` keeps
its dtype; otherwise the bounds take part in type promotion (`clamp(int_tensor, 0.5)` is
float), which an in-place call refuses. The bounds are converted to the result dtype with
ATen's overflow check. `clamp_min.Tensor`/`clamp_max.Tensor` are rows of the family table
(PyTorch computes them with `maximum`/`minimum`).

On a tie (`clamp(-0.0, 0.0)`) the result is `self`'s element, as PyTorch's scalar loops
(`std::max(a, bound)`) give it: `np.maximum(bound, a)` returns its second argument on a tie.
(PyTorch's vectorized loop for the Tensor overloads with one bound returns the bound instead,
so there its sign of zero depends on the tensor's length; relu and the Scalar overloads keep
`self`'s at every length.) NaN propagates from either side, as in PyTorch.
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core.promotion import result_type
from pyaten.core.stub import DispatchStub
from pyaten.native import family
from pyaten.native.kernels.copy import checked_scalar
from pyaten.native.kernels.shape import aten_ops
from pyaten.native.registry import native
from pyaten.native.structured import TensorIteratorMeta

# caffe2::TypeMeta names, which PyTorch prints for self's dtype in the in-place refusal.
_TYPE_META_NAMES = {
    "Bool": "bool",
    "Byte": "unsigned char",
    "Char": "signed char",
    "Short": "short int",
    "Int": "int",
    "Long": "long int",
}

_NONE_GIVEN = "pyaten.clamp: At least one of 'min' or 'max' must not be None"
_COMPLEX = "clamp is not supported for complex types"


def _scalar_result_source(op: TensorIteratorMeta, self, bounds: tuple, complex_bounds: bool):
    """`self`, converted to the dtype the Scalar bounds promote it to (PyTorch's manual
    promotion in the clamp metas). clamp_min/clamp_max refuse complex bounds first; clamp
    only after the in-place check."""
    if self.dtype.is_complex:
        raise NotImplementedError(_COMPLEX)
    if not complex_bounds and any(isinstance(b, complex) for b in bounds):
        raise NotImplementedError(_COMPLEX)
    if self.dtype.is_floating_point:
        return self
    found = result_type(self, *(b for b in bounds if b is not None))
    if found is self.dtype:
        return self
    if op.maybe_get_output() is self:
        raise RuntimeError(
            f"result type {found.scalar_name} can't be cast to the desired output type "
            f"{_TYPE_META_NAMES[self.dtype.scalar_name]}"
        )
    if found.is_complex:
        raise NotImplementedError(_COMPLEX)
    return aten_ops()._to_copy.default(self, found, None, None, None, False, None)


@native
def meta_clamp(op: TensorIteratorMeta, self, min, max) -> None:
    if min is None and max is None:
        raise RuntimeError(_NONE_GIVEN)
    op.build_unary_op(_scalar_result_source(op, self, (min, max), True))


@native
def meta_clamp_min(op: TensorIteratorMeta, self, min) -> None:
    op.build_unary_op(_scalar_result_source(op, self, (min,), False))


@native
def meta_clamp_max(op: TensorIteratorMeta, self, max) -> None:
    op.build_unary_op(_scalar_result_source(op, self, (max,), False))


def _bound(value, op: TensorIteratorMeta) -> np.ndarray:
    """A Scalar bound in the result dtype (ATen's checked conversion), then in the compute
    dtype, as a 0-d array."""
    common = op.common_dtype
    if isinstance(value, complex):  # read as a double first (Scalar::to<double>)
        if value.imag != 0:
            raise RuntimeError("value cannot be converted to type double without overflow")
        value = value.real
    if common.itemsize == 2 and common.is_floating_point and isinstance(value, float):
        # checked_scalar reads a half bound through float32, where 1e40 is already inf
        if math.isfinite(value) and abs(value) > np.finfo(np.float32).max:
            raise RuntimeError(
                f"value cannot be converted to type c10::{common.scalar_name} without overflow"
            )
    converted = np.asarray(checked_scalar(value, common))
    return converted.astype(op.compute_dtype(), copy=False)


def _check_dtype(op: TensorIteratorMeta, name: str) -> None:
    if op.common_dtype not in family.ALL_AND_REDUCED:
        raise family.unsupported_dtype(name, op.common_dtype)


clamp_scalar_stub = DispatchStub("clamp_scalar_stub")
clamp_min_scalar_stub = DispatchStub("clamp_min_scalar_stub")
clamp_max_scalar_stub = DispatchStub("clamp_max_scalar_stub")


@clamp_scalar_stub.register("cpu")
def clamp_scalar_kernel(op: TensorIteratorMeta, min, max) -> None:
    _check_dtype(op, "clamp_scalar_cpu")
    low, high = _bound(min, op), _bound(max, op)
    (a,) = op.input_arrays()
    # np.clip is minimum(maximum(a, low), high) in one pass: `a` on a tie, NaN kept, `high`
    # where low > high, as PyTorch
    op.compute(np.clip, a, low, high)


@clamp_min_scalar_stub.register("cpu")
def clamp_min_scalar_kernel(op: TensorIteratorMeta, min) -> None:
    _check_dtype(op, "clamp_min_scalar_cpu")
    low = _bound(min, op)
    (a,) = op.input_arrays()
    op.compute(np.maximum, low, a)


@clamp_max_scalar_stub.register("cpu")
def clamp_max_scalar_kernel(op: TensorIteratorMeta, max) -> None:
    _check_dtype(op, "clamp_max_scalar_cpu")
    high = _bound(max, op)
    (a,) = op.input_arrays()
    op.compute(np.minimum, high, a)


def _is_nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


@native
def clamp_out(op: TensorIteratorMeta, self, min, max, out) -> None:
    device = op.device.type
    if min is not None and max is not None:
        if _is_nan(min) or _is_nan(max):
            op.write(np.asarray(math.nan))  # PyTorch fills the result with NaN
            return
        clamp_scalar_stub(device, op, min, max)
    elif max is not None:
        clamp_max_scalar_stub(device, op, max)
    else:
        clamp_min_scalar_stub(device, op, min)


@native
def clamp_min_out(op: TensorIteratorMeta, self, min, out) -> None:
    clamp_min_scalar_stub(op.device.type, op, min)


@native
def clamp_max_out(op: TensorIteratorMeta, self, max, out) -> None:
    clamp_max_scalar_stub(op.device.type, op, max)


# --- Tensor bounds --------------------------------------------------------------------------


@native
def meta_clamp_Tensor(op: TensorIteratorMeta, self, min, max) -> None:
    if min is None and max is None:
        raise RuntimeError(_NONE_GIVEN)
    if self.dtype.is_complex:
        raise NotImplementedError(_COMPLEX)
    op.build(tuple(t for t in (self, min, max) if t is not None))


clamp_tensor_stub = DispatchStub("clamp_tensor_stub")


@clamp_tensor_stub.register("cpu")
def clamp_tensor_kernel(op: TensorIteratorMeta, has_min: bool, has_max: bool) -> None:
    arrays = op.input_arrays()
    if has_min and has_max:
        if op.common_dtype not in family.ALL_AND_REDUCED:
            raise family.unsupported_dtype("clamp_cpu", op.common_dtype)
        a, low, high = arrays
        op.compute(np.minimum, high, np.maximum(low, a))
    elif has_min:
        a, low = arrays
        op.compute(np.maximum, low, a)
    else:
        a, high = arrays
        op.compute(np.minimum, high, a)


@native
def clamp_Tensor_out(op: TensorIteratorMeta, self, min, max, out) -> None:
    clamp_tensor_stub(op.device.type, op, min is not None, max is not None)


def _at_least(a: np.ndarray, bound: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return np.maximum(bound, a, out=out)  # `a` on a tie


def _at_most(a: np.ndarray, bound: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return np.minimum(bound, a, out=out)


_MIN_MAX_DTYPES = family.ALL_AND_REDUCED_BOOL  # maximum/minimum: complex refused

family.register(
    family.Pointwise(
        "clamp_min.Tensor", _at_least, _MIN_MAX_DTYPES, takes_out=True,
        dispatch_name="maximum_cpu", impl="clamp_min_Tensor_out", stub="clamp_min_tensor_stub",
    ),
    family.Pointwise(
        "clamp_max.Tensor", _at_most, _MIN_MAX_DTYPES, takes_out=True,
        dispatch_name="minimum_cpu", impl="clamp_max_Tensor_out", stub="clamp_max_tensor_stub",
    ),
)


# --- clip: CompositeImplicitAutograd alias of clamp ------------------------------------------


@native
def clip(self, min=None, max=None):
    return aten_ops().clamp.default(self, min, max)


@native
def clip_Tensor(self, min=None, max=None):
    return aten_ops().clamp.Tensor(self, min, max)


@native
def clip_(self, min=None, max=None):
    return aten_ops().clamp_.default(self, min, max)


@native
def clip__Tensor(self, min=None, max=None):
    return aten_ops().clamp_.Tensor(self, min, max)


@native
def clip_out(self, min, max, out):
    return aten_ops().clamp.out(self, min, max, out)


@native
def clip_Tensor_out(self, min, max, out):
    return aten_ops().clamp.Tensor_out(self, min, max, out)

