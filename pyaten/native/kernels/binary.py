"""Arithmetic: add, sub, mul, div (Tensor and Scalar overloads, alpha, rounding modes), rsub.

Structured through `TensorIteratorMeta` (`structured_inherits: TensorIteratorBase`): the
`meta_*` functions broadcast and promote; the `*_out` impls call a `DispatchStub` for the
device (`add_stub`, `mul_stub`, `div_*_stub`) whose CPU loop computes with NumPy in the common
dtype (float16/bfloat16 in float32) and writes the result, cast, into the output. Integer
overflow wraps as in PyTorch; integer division by zero raises `ZeroDivisionError`.
"""

from __future__ import annotations

import numpy as np

from pyaten.core.stub import DispatchStub
from pyaten.native import family
from pyaten.native.registry import native
from pyaten.native.runtime import wrapped_number
from pyaten.native.structured import quiet_call

_ROUNDING_MODES = (None, "trunc", "floor")


def _check_alpha(op_name: str, dtype, alpha) -> None:
    # PyTorch's alpha_check: a bool alpha needs a bool result, integral results an integral alpha.
    if isinstance(alpha, bool) and dtype.name != "bool":
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if not (dtype.is_floating_point or dtype.is_complex) and isinstance(alpha, (float, complex)):
        raise RuntimeError(
            "For integral input tensors, argument alpha must not be a floating point number."
        )
    if not dtype.is_complex and isinstance(alpha, complex):
        raise RuntimeError(
            "For non-complex input tensors, argument alpha must not be a complex number."
        )


def _check_sub(self, other) -> None:
    if self.dtype.name == "bool" and other.dtype.name == "bool":
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
            "or `logical_xor()` operator instead."
        )
    if self.dtype.name == "bool" or other.dtype.name == "bool":
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


def _scaled(op, b: np.ndarray, alpha) -> np.ndarray:
    if alpha == 1 and alpha.__class__ is not complex:
        return b
    return b * np.asarray(alpha).astype(op.compute_dtype())


# --- stubs: the device loops the impls call (PyTorch's add_stub, mul_stub, div_*_stub) -----

add_stub = DispatchStub("add_stub")
mul_stub = DispatchStub("mul_stub")
div_true_stub = DispatchStub("div_true_stub")
div_trunc_stub = DispatchStub("div_trunc_stub")
div_floor_stub = DispatchStub("div_floor_stub")


@add_stub.register("cpu")
def add_kernel(op, alpha) -> None:
    a, b = op.input_arrays()
    op.compute(np.add, a, _scaled(op, b, alpha))


@mul_stub.register("cpu")
def mul_kernel(op) -> None:
    a, b = op.input_arrays()
    op.compute(np.multiply if a.dtype.kind != "b" else np.logical_and, a, b)


@div_true_stub.register("cpu")
def div_true_kernel(op) -> None:
    a, b = op.input_arrays()
    op.compute(np.true_divide, a, b)


def _integer_quotient(op, trunc: bool) -> bool:
    a, b = op.input_arrays()
    if a.dtype.kind not in "iub":
        return False
    if np.any(b == 0):
        raise RuntimeError("ZeroDivisionError")
    if a.dtype.kind == "b":
        a, b = a.astype(np.int64), b.astype(np.int64)
    quotient = quiet_call(np.floor_divide, a, b)
    if trunc:
        # Floor and truncation differ where the signs differ and the division isn't exact.
        fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
        quotient = quotient + fix.astype(quotient.dtype)
    op.write(quotient)
    return True


@div_trunc_stub.register("cpu")
def div_trunc_kernel(op) -> None:
    if not _integer_quotient(op, trunc=True):
        a, b = op.input_arrays()
        op.write(quiet_call(lambda: np.trunc(a / b)))


@div_floor_stub.register("cpu")
def div_floor_kernel(op) -> None:
    if not _integer_quotient(op, trunc=False):
        a, b = op.input_arrays()
        op.write(quiet_call(_floor_divide_float, a, b))


# --- structured meta and impl ---------------------------------------------------------------


@native
def meta_add_Tensor(op, self, other, alpha):
    op.build_binary_op(self, other)
    if alpha.__class__ is not int or alpha != 1:
        _check_alpha("add", op.common_dtype, alpha)


@native
def add_out(op, self, other, alpha, out):
    add_stub(op.device.type, op, alpha)


@native
def meta_sub_Tensor(op, self, other, alpha):
    _check_sub(self, other)
    op.build_binary_op(self, other)
    _check_alpha("sub", op.common_dtype, alpha)


@native
def sub_out(op, self, other, alpha, out):
    # a - alpha*b is a + (-alpha)*b, as PyTorch computes it.
    add_stub(op.device.type, op, -alpha)


@native
def meta_mul_Tensor(op, self, other):
    op.build_binary_op(self, other)


@native
def mul_out(op, self, other, out):
    mul_stub(op.device.type, op)


@native
def meta_div_Tensor(op, self, other):
    op.build_binary_float_op(self, other)


@native
def div_out(op, self, other, out):
    div_true_stub(op.device.type, op)


def _check_rounding_mode(mode) -> None:
    if mode not in _ROUNDING_MODES:
        raise RuntimeError(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"'{mode}'"
        )


@native
def meta_div_Tensor_mode(op, self, other, rounding_mode):
    _check_rounding_mode(rounding_mode)
    if rounding_mode is None:
        op.build_binary_float_op(self, other)
    else:
        op.build_binary_op(self, other)


_DIV_STUBS = {None: div_true_stub, "trunc": div_trunc_stub, "floor": div_floor_stub}


@native
def div_out_mode(op, self, other, rounding_mode, out):
    _DIV_STUBS[rounding_mode](op.device.type, op)


def _floor_divide_float(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # PyTorch's div_floor for floats: division by zero gives a/b (inf or nan), not nan.
    result = np.floor_divide(a, b)
    zero = b == 0
    if np.any(zero):
        result = np.where(zero, a / b, result)
    return result


# --- Scalar overloads: composites over the Tensor overloads ------------------------------------


def _aten():
    from pyaten.native.kernels.shape import aten_ops

    return aten_ops()  # handles that take keyword-only arguments positionally, as in C++


@native
def add_Scalar(self, other, alpha):
    return _aten().add.Tensor(self, wrapped_number(other), alpha)


@native
def add__Scalar(self, other, alpha):
    return _aten().add_.Tensor(self, wrapped_number(other), alpha)


@native
def sub_Scalar(self, other, alpha):
    return _aten().sub.Tensor(self, wrapped_number(other), alpha)


@native
def sub__Scalar(self, other, alpha):
    return _aten().sub_.Tensor(self, wrapped_number(other), alpha)


@native
def mul_Scalar(self, other):
    return _aten().mul.Tensor(self, wrapped_number(other))


@native
def mul__Scalar(self, other):
    return _aten().mul_.Tensor(self, wrapped_number(other))


@native
def div_Scalar(self, other):
    return _aten().div.Tensor(self, wrapped_number(other))


@native
def div__Scalar(self, other):
    return _aten().div_.Tensor(self, wrapped_number(other))


@native
def div_Scalar_mode(self, other, rounding_mode):
    return _aten().div.Tensor_mode(self, wrapped_number(other), rounding_mode=rounding_mode)


@native
def div__Scalar_mode(self, other, rounding_mode):
    return _aten().div_.Tensor_mode(self, wrapped_number(other), rounding_mode=rounding_mode)


@native
def rsub_Tensor(self, other, alpha):
    return _aten().sub.Tensor(other, self, alpha)


@native
def rsub_Scalar(self, other, alpha):
    return _aten().sub.Tensor(wrapped_number(other), self, alpha)


# --- remainder and pow -------------------------------------------------------------------------

remainder_stub = DispatchStub("remainder_stub")
pow_stub = DispatchStub("pow_stub")


@remainder_stub.register("cpu")
def remainder_kernel(op) -> None:
    a, b = op.input_arrays()
    if a.dtype.kind == "b":
        raise NotImplementedError("\"remainder_cpu\" not implemented for 'Bool'")
    if a.dtype.kind in "iu" and np.any(b == 0):
        raise RuntimeError("ZeroDivisionError")
    # NumPy's remainder takes the divisor's sign, as Python's % and PyTorch's remainder do.
    op.write(quiet_call(np.remainder, a, b))


@native
def meta_remainder_Tensor(op, self, other):
    op.build_binary_op(self, other)


@native
def remainder_out(op, self, other, out):
    remainder_stub(op.device.type, op)


@native
def remainder_Scalar(self, other):
    return _aten().remainder.Tensor(self, wrapped_number(other))


@native
def remainder_Scalar_out(self, other, out):
    return _aten().remainder.Tensor_out(self, wrapped_number(other), out=out)


@native
def remainder__Scalar(self, other):
    return _aten().remainder_.Tensor(self, wrapped_number(other))


@native
def remainder_Scalar_Tensor(self, other):
    return _aten().remainder.Tensor(wrapped_number(self), other)


@pow_stub.register("cpu")
def pow_kernel(op) -> None:
    base, exponent = op.input_arrays()
    if base.dtype.kind == "b":
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    if base.dtype.kind in "iu" and np.any(exponent < 0):
        # Integer powers with negative exponents: 1 for base 1, +-1 for base -1, else 0.
        safe = np.where(exponent < 0, 0, exponent)
        result = np.power(base, safe)
        negative = exponent < 0
        odd = np.remainder(exponent, 2) != 0
        special = np.where(base == 1, 1, np.where(base == -1, np.where(odd, -1, 1), 0))
        op.write(np.where(negative, special, result))
        return
    op.write(quiet_call(np.power, base, exponent))


def _check_integer_power(self, exponent) -> None:
    integral = not (self.dtype.is_floating_point or self.dtype.is_complex)
    if integral and isinstance(exponent, int) and not isinstance(exponent, bool) and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")


@native
def meta_pow_Tensor_Tensor(op, self, exponent):
    op.build_binary_op(self, exponent)


@native
def pow_Tensor_Tensor_out(op, self, exponent, out):
    pow_stub(op.device.type, op)


@native
def meta_pow_Tensor_Scalar(op, self, exponent):
    _check_integer_power(self, exponent)
    op.build((self, wrapped_number(exponent)))


@native
def pow_Tensor_Scalar_out(op, self, exponent, out):
    pow_stub(op.device.type, op)


@native
def meta_pow_Scalar(op, self, exponent):
    op.build((wrapped_number(self), exponent))


@native
def pow_Scalar_out(op, self, exponent, out):
    pow_stub(op.device.type, op)


# --- the family table: one row per operator (pyaten.native.family, docs/operators.md) -------

family.register(
    family.Pointwise("hypot", np.hypot, family.FLOATING_AND_REDUCED),
)
