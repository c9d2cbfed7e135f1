"""Comparisons: eq ne lt le gt ge against a Tensor or a Scalar (functional, in-place, out).

Structured through `TensorIteratorMeta.build_comparison_op`: inputs are promoted to their
common dtype and compared there; the result is bool (or, in place / into `out`, cast to that
tensor's dtype).
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.stub import DispatchStub
from pyaten.native import family, fastpath
from pyaten.native.kernels.shape import aten_ops
from pyaten.native.registry import native
from pyaten.native.runtime import Tensor, empty_tensor, wrapped_number
from pyaten.native.structured import quiet_call

_COMPARE = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


def _define(name: str, ufunc) -> None:
    stub = DispatchStub(f"{name}_stub")

    def compare_kernel(op) -> None:
        a, b = op.input_arrays()
        op.write(quiet_call(ufunc, a, b))

    compare_kernel.__name__ = compare_kernel.__qualname__ = f"{name}_kernel"
    stub.register("cpu", compare_kernel)

    ordered = name in ("lt", "le", "gt", "ge")

    def meta_tensor(op, self, other):
        op.build_comparison_op(self, other)
        if ordered and op.common_dtype.is_complex:
            raise NotImplementedError(
                f'"{name}_cpu" not implemented for \'{op.common_dtype.scalar_name}\''
            )

    def meta_scalar(op, self, other):
        meta_tensor(op, self, wrapped_number(other))

    def impl_tensor(op, self, other, out):
        stub(op.device.type, op)

    def impl_scalar(op, self, other, out):
        stub(op.device.type, op)

    for fn, fn_name in (
        (meta_tensor, f"meta_{name}_Tensor"),
        (meta_scalar, f"meta_{name}_Scalar"),
        (impl_tensor, f"{name}_Tensor_out"),
        (impl_scalar, f"{name}_Scalar_out"),
    ):
        fn.__name__ = fn.__qualname__ = fn_name
        native(fn)


    # (Note: the structured fast path) `a < b` of one dtype and shape: a new bool result
    dtypes = fastpath.FLOATS | fastpath.INTEGERS if ordered else fastpath.DIRECT
    functional, _ = fastpath.binary(ufunc, stub, dtypes, dt.bool)
    fastpath.register(f"{name}.Tensor", functional, None, __file__)


for _name, _ufunc in _COMPARE.items():
    _define(_name, _ufunc)


# --- aliases of the comparisons (CompositeImplicitAutograd, as PyTorch declares them) --------

_ALIASES = {
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne",
}


def _define_alias(alias: str, target: str) -> None:
    def tensor(self, other):
        return getattr(aten_ops(), target).Tensor(self, other)

    def scalar(self, other):
        return getattr(aten_ops(), target).Scalar(self, other)

    def tensor_out(self, other, out):
        return getattr(aten_ops(), target).Tensor_out(self, other, out)

    def scalar_out(self, other, out):
        return getattr(aten_ops(), target).Scalar_out(self, other, out)

    def inplace_tensor(self, other):
        return getattr(aten_ops(), target + "_").Tensor(self, other)

    def inplace_scalar(self, other):
        return getattr(aten_ops(), target + "_").Scalar(self, other)

    for fn, fn_name in (
        (tensor, f"{alias}_Tensor"),
        (scalar, f"{alias}_Scalar"),
        (tensor_out, f"{alias}_Tensor_out"),
        (scalar_out, f"{alias}_Scalar_out"),
        (inplace_tensor, f"{alias}__Tensor"),
        (inplace_scalar, f"{alias}__Scalar"),
    ):
        fn.__name__ = fn.__qualname__ = fn_name
        native(fn)


for _alias, _target in _ALIASES.items():
    _define_alias(_alias, _target)


# --- maximum, minimum, fmax, fmin; logical and/or/xor: rows of the family table --------------


def _refuse_complex(name: str):
    def check(self: Tensor, other: Tensor) -> None:
        if self.dtype.is_complex or other.dtype.is_complex:
            raise RuntimeError(f"{name} not implemented for complex tensors.")

    return check


# NaN propagates through maximum/minimum; fmax/fmin take the other operand, computed as
# maximum/minimum then NumPy's fmax/fmin where that gave a NaN (one pass when there is none).
# Of an equal pair (0.0, -0.0) PyTorch's vectorized loop returns the second operand, its
# scalar loop the first; NumPy returns the second, as the loop that runs most elements.


def _ignoring_nan(pick: np.ufunc, skip_nan: np.ufunc):
    def fn(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        result = pick(a, b, out=out)
        if result.dtype.kind == "f":
            nan = np.isnan(result)
            if nan.any():
                np.copyto(result, skip_nan(a, b), where=nan)
        return result

    return fn


family.register(
    family.Pointwise("maximum", np.maximum, family.ALL_AND_REDUCED_BOOL,
                     check=_refuse_complex("maximum")),
    family.Pointwise("minimum", np.minimum, family.ALL_AND_REDUCED_BOOL,
                     check=_refuse_complex("minimum")),
    family.Pointwise("fmax", _ignoring_nan(np.maximum, np.fmax), family.ALL_AND_REDUCED_BOOL,
                     takes_out=True, check=_refuse_complex("fmax")),
    family.Pointwise("fmin", _ignoring_nan(np.minimum, np.fmin), family.ALL_AND_REDUCED_BOOL,
                     takes_out=True, check=_refuse_complex("fmin")),
    # Only the out variants are kernels; the functional and in-place ones call them (below).
    family.Pointwise("logical_and.out", np.logical_and, family.EVERY, build="bool"),
    family.Pointwise("logical_or.out", np.logical_or, family.EVERY, build="bool"),
    family.Pointwise("logical_xor.out", np.logical_xor, family.EVERY, build="bool"),
)


def _define_logical(name: str) -> None:
    def functional(self, other):
        result = empty_tensor((0,), dt.bool, self.device)
        return getattr(aten_ops(), name).out(self, other, result)

    def inplace(self, other):
        return getattr(aten_ops(), name).out(self, other, self)

    for fn, fn_name in ((functional, name), (inplace, name + "_")):
        fn.__name__ = fn.__qualname__ = fn_name
        native(fn)


for _name in ("logical_and", "logical_or", "logical_xor"):
    _define_logical(_name)


# --- isclose, allclose, equal ------------------------------------------------------------------


@native
def isclose(self, other, rtol, atol, equal_nan):
    # PyTorch's composite: |self - other| <= atol + rtol * |other|, or exactly equal.
    ops = aten_ops()
    if self.dtype is not other.dtype:
        raise RuntimeError(f"{self.dtype.scalar_name} did not match {other.dtype.scalar_name}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {_num(rtol)}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {_num(atol)}")
    close = ops.eq.Tensor(self, other)
    if equal_nan and (self.dtype.is_floating_point or self.dtype.is_complex):
        both_nan = ops.logical_and.default(ops.ne.Tensor(self, self), ops.ne.Tensor(other, other))
        close = ops.logical_or.default(close, both_nan)
    if rtol == 0 and atol == 0:
        return close
    if self.dtype is dt.bool:
        default = dt.get_default_dtype()
        self = ops.to.dtype(self, default, False, False, None)
        other = ops.to.dtype(other, default, False, False, None)
    allowed = ops.add.Scalar(ops.abs.default(ops.mul.Scalar(other, rtol)), atol, 1)
    actual = ops.abs.default(ops.sub.Tensor(self, other, 1))
    finite = ops.lt.Scalar(actual, float("inf"))  # |x| < inf: finite and not NaN
    within = ops.logical_and.default(finite, ops.le.Tensor(actual, allowed))
    return ops.logical_or.default(close, within)


def _num(x: float) -> str:
    # C++ prints a double like -1.0 as "-1".
    return str(int(x)) if float(x).is_integer() else repr(float(x))


@native
def allclose(self, other, rtol, atol, equal_nan):
    close = aten_ops().isclose.default(self, other, rtol, atol, equal_nan)
    if close.device.type == "meta":
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")
    return bool(np.all(close._numpy()))


@native
def cpu_equal(self, other):
    if self.device != other.device:
        raise RuntimeError(
            f"Cannot compare two tensors on different devices. Got: {self.device} and "
            f"{other.device}"
        )
    if tuple(self.shape) != tuple(other.shape):
        return False
    if self.dtype.scalar_name == "ComplexHalf" and other.dtype is self.dtype:
        # eq computes complex32; PyTorch's equal has no loop for it
        kernel = "equal_notnan_cpu" if self is other else "equal_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'ComplexHalf\'')
    return bool(np.all(aten_ops().eq.Tensor(self, other)._numpy()))
