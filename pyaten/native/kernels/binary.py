"""Arithmetic: add, sub, mul, div (Tensor and Scalar overloads, alpha, rounding modes), rsub.

Structured through `TensorIteratorMeta` (`structured_inherits: TensorIteratorBase`): the
`meta_*` functions broadcast and promote; the `*_out` impls call a `DispatchStub` for the
device (`add_stub`, `mul_stub`, `div_*_stub`) whose CPU loop computes with NumPy in the common
dtype (float16/bfloat16 in float32) and writes the result, cast, into the output. Integer
overflow wraps as in PyTorch; integer division by zero raises `ZeroDivisionError`.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.promotion import can_cast, result_type
from pyaten.core.stub import DispatchStub
from pyaten.native import family, fastpath
from pyaten.native.kernels.shape import aten_ops
from pyaten.native.registry import native
from pyaten.native.runtime import Tensor, empty_tensor, wrapped_number
from pyaten.native.structured import broadcast_shapes, quiet_call, resize_output

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
    if alpha == -1 and alpha.__class__ is int:  # sub: a - b is a + (-1)*b, in one pass
        op.compute(np.subtract, a, b)
        return
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
    common = op.common_dtype
    if common.is_complex or common is dt.bool:
        raise family.unsupported_dtype("div_trunc_cpu" if trunc else "div_floor_cpu", common)
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
        quotient = quiet_call(np.true_divide, a, b)
        if quotient.dtype != op.common_dtype.numpy:
            # float16/bfloat16: PyTorch rounds the quotient to the dtype before truncating.
            quotient = quotient.astype(op.common_dtype.numpy).astype(quotient.dtype)
        op.compute(np.trunc, quotient)


@div_floor_stub.register("cpu")
def div_floor_kernel(op) -> None:
    if not _integer_quotient(op, trunc=False):
        a, b = op.input_arrays()
        op.write(quiet_call(_floor_divide_float, a, b))


# --- fast paths of the CPU wrappers (Note: the structured fast path) ------------------------


def _register_fast() -> None:
    site = family.caller_site(1)
    for name, fn, stub, dtypes, alpha in (
        ("add.Tensor", np.add, add_stub, fastpath.DIRECT, True),
        ("sub.Tensor", np.subtract, add_stub, fastpath.DIRECT, True),
        ("mul.Tensor", np.multiply, mul_stub, fastpath.DIRECT, False),
        ("div.Tensor", np.true_divide, div_true_stub, fastpath.FLOATS | fastpath.COMPLEX, False),
    ):
        functional, inplace = fastpath.binary(fn, stub, dtypes, alpha=alpha)
        fastpath.register(name, functional, inplace, site)


_register_fast()


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


# Handles that take keyword-only arguments positionally, as in C++; every call dispatches.
_aten = aten_ops


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

pow_stub = DispatchStub("pow_stub")


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
    # PyTorch: exponent 0 fills ones and exponent 1 copies, for every dtype (bool included).
    if exponent == 0 or exponent == 1:
        result = op.outputs[0]
        if result._storage.data is not None:
            a = op.input_arrays()[0]
            op.write(np.ones_like(a) if exponent == 0 else a)
        return
    special = _SCALAR_POWERS.get(exponent) if exponent.__class__ in (int, float) else None
    if (special is not None and op.common_dtype in (dt.float32, dt.float64)
            and pow_stub.kernel("cpu") is pow_kernel):
        # PyTorch's pow_tensor_scalar_optimized_kernel (float and double only: float16 and
        # bfloat16 take powf, whose pow(-0.0, -0.5) is inf): these exponents as products,
        # sqrt or reciprocals, straight into the output (np.power's powf: 8x slower)
        op.compute(special, op.input_arrays()[0])
        return
    if (exponent.__class__ in (int, float) and exponent in (0.5, -0.5)
            and op.common_dtype in (dt.float16, dt.bfloat16)
            and pow_stub.kernel("cpu") is pow_kernel):
        # bfloat16 takes sqrt and rsqrt for these (PyTorch's pow_tensor_scalar_kernel);
        # float16 takes powf, whose pow(-0.0, 0.5) is +0.0 and pow(-inf, 0.5) +inf, where
        # NumPy's float32 power computes 0.5 as a square root
        if op.common_dtype is dt.bfloat16:
            op.compute(np.sqrt if exponent == 0.5 else _inverse_sqrt, op.input_arrays()[0])
        else:
            op.compute(_powf_half if exponent == 0.5 else np.power,
                       *op.input_arrays())
        return
    pow_stub(op.device.type, op)


def _powf_half(a: np.ndarray, exponent: np.ndarray, out: np.ndarray | None = None):
    """powf(a, 0.5): a square root, but +0.0 for -0.0 and +inf for -inf."""
    root = np.sqrt(a, out=out)
    root[(a == 0) | (a == -np.inf)] = np.abs(a[(a == 0) | (a == -np.inf)])
    return root


def _cube(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return np.multiply(a * a, a, out=out)  # (out may be a: in place)


def _inverse_square(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    square = np.multiply(a, a, out=out)
    return np.reciprocal(square, out=square)


def _inverse_sqrt(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    root = np.sqrt(a, out=out)
    return np.reciprocal(root, out=root)


# exponent -> the computation PyTorch's CPU kernel uses for it on floating tensors
_SCALAR_POWERS = {2: np.square, 3: _cube, 0.5: np.sqrt, -0.5: _inverse_sqrt,
                  -1: np.reciprocal, -2: _inverse_square}


@native
def meta_pow_Scalar(op, self, exponent):
    op.build((wrapped_number(self), exponent))


@native
def pow_Scalar_out(op, self, exponent, out):
    pow_stub(op.device.type, op)


# --- array functions of the rows below ------------------------------------------------------


def _remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # Python's %: a nonzero result takes the divisor's sign.
    if a.dtype.kind in "iu":
        if not np.all(b):
            raise RuntimeError("ZeroDivisionError")
        return np.remainder(a, b)
    # PyTorch's float formula is fmod, then + b where the signs differ: NumPy's remainder
    # except that a zero result keeps the dividend's sign (NumPy gives it the divisor's).
    result = np.asarray(np.remainder(a, b))  # 0-d inputs give a NumPy scalar
    np.copysign(result, a, out=result, where=result == 0)
    return result


def _nextafter(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == np.float16:  # NumPy's half loop returns a, not b, for a == b (0.0, -0.0)
        return np.where(a == b, b, np.nextafter(a, b))
    return np.nextafter(a, b)


def _fmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # C's fmod: the result takes the dividend's sign (remainder takes the divisor's).
    if a.dtype.kind in "iu" and not np.all(b):
        raise RuntimeError("ZeroDivisionError")
    return np.fmod(a, b)


def _logaddexp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "c":
        return np.logaddexp(a, b)
    # Complex: factor out the operand with the larger real part, as PyTorch does.
    a, b = np.broadcast_arrays(a, b)
    larger = a.real >= b.real
    big, small = np.where(larger, a, b), np.where(larger, b, a)
    return big + np.log1p(np.exp(small - big))


def _xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    # 0 * log(y) is 0 unless y is NaN.
    result = x * np.log(y)
    return np.where((x == 0) & ~np.isnan(y), 0, result)


def _heaviside(x: np.ndarray, values: np.ndarray) -> np.ndarray:
    # `values` where x == 0, else x > 0 (NaN > 0 is false, so NaN gives 0 as in PyTorch).
    return np.where(x == 0, values, x > 0)


def _check_heaviside(op, self: Tensor, values: Tensor) -> None:
    out = op.maybe_get_output()
    dtypes = (self.dtype, values.dtype) if out is None else (self.dtype, values.dtype, out.dtype)
    if any(d.is_complex for d in dtypes):
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if any(d is not self.dtype for d in dtypes):
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")


# --- the family table: one row per operator (pyaten.native.family, docs/operators.md) -------

F = family
family.register(
    F.Pointwise("hypot", np.hypot, F.FLOATING_AND_REDUCED),
    F.Pointwise("remainder.Tensor", _remainder, F.ALL_AND_REDUCED, impl="remainder_out"),
    F.Pointwise("fmod.Tensor", _fmod, F.ALL_AND_REDUCED, impl="fmod_out"),
    F.Pointwise("atan2", np.arctan2, F.FLOATING_AND_REDUCED, build="float"),
    F.Pointwise("copysign.Tensor", np.copysign, F.FLOATING_AND_REDUCED, build="float",
                impl="copysign_out"),
    F.Pointwise("nextafter", _nextafter, F.FLOATING_AND_REDUCED, upcast=False),
    F.Pointwise("logaddexp", _logaddexp, F.FLOATING_COMPLEX_AND_REDUCED),
    F.Pointwise("logaddexp2", np.logaddexp2, F.FLOATING_AND_REDUCED),
    F.Pointwise("xlogy.Tensor", _xlogy, F.FLOATING_AND_REDUCED, build="float", impl="xlogy_out"),
    F.Pointwise("heaviside", _heaviside, F.ALL_AND_REDUCED_BOOL, meta_check=_check_heaviside),
)


# --- Scalar overloads of the rows: composites over the Tensor overloads ----------------------


@native
def fmod_Scalar(self, other):
    return _aten().fmod.Tensor(self, wrapped_number(other))


@native
def fmod__Scalar(self, other):
    return _aten().fmod_.Tensor(self, wrapped_number(other))


@native
def fmod_Scalar_out(self, other, out):
    return _aten().fmod.Tensor_out(self, wrapped_number(other), out)


@native
def copysign_Scalar(self, other):
    return _aten().copysign.Tensor(self, wrapped_number(other))


@native
def copysign__Scalar(self, other):
    return _aten().copysign_.Tensor(self, wrapped_number(other))


@native
def copysign_Scalar_out(self, other, out):
    return _aten().copysign.out(self, wrapped_number(other), out)


@native
def xlogy_Scalar_Self(self, other):
    return _aten().xlogy.Tensor(wrapped_number(self), other)


@native
def xlogy_Scalar_Other(self, other):
    return _aten().xlogy.Tensor(self, wrapped_number(other))


@native
def xlogy__Scalar_Other(self, other):
    return _aten().xlogy_.Tensor(self, wrapped_number(other))


@native
def xlogy_OutScalar_Self(self, other, out):
    return _aten().xlogy.OutTensor(wrapped_number(self), other, out)


@native
def xlogy_OutScalar_Other(self, other, out):
    return _aten().xlogy.OutTensor(self, wrapped_number(other), out)


# --- aliases (CompositeImplicitAutograd, as PyTorch declares them) -----------------------------


@native
def arctan2(self, other):
    return _aten().atan2.default(self, other)


@native
def arctan2_(self, other):
    return _aten().atan2_.default(self, other)


@native
def arctan2_out(self, other, out):
    return _aten().atan2.out(self, other, out)


@native
def true_divide_Tensor(self, other):
    return _aten().div.Tensor(self, other)


@native
def true_divide__Tensor(self, other):
    return _aten().div_.Tensor(self, other)


@native
def true_divide_out(self, other, out):
    return _aten().div.out(self, other, out)


@native
def true_divide_Scalar(self, other):
    return _aten().div.Scalar(self, other)


@native
def true_divide__Scalar(self, other):
    return _aten().div_.Scalar(self, other)


@native
def divide_Tensor(self, other):
    return _aten().div.Tensor(self, other)


@native
def divide__Tensor(self, other):
    return _aten().div_.Tensor(self, other)


@native
def divide_out(self, other, out):
    return _aten().div.out(self, other, out)


@native
def divide_Scalar(self, other):
    return _aten().div.Scalar(self, other)


@native
def divide__Scalar(self, other):
    return _aten().div_.Scalar(self, other)


@native
def divide_Tensor_mode(self, other, rounding_mode):
    return _aten().div.Tensor_mode(self, other, rounding_mode)


@native
def divide__Tensor_mode(self, other, rounding_mode):
    return _aten().div_.Tensor_mode(self, other, rounding_mode)


@native
def divide_out_mode(self, other, rounding_mode, out):
    return _aten().div.out_mode(self, other, rounding_mode, out)


@native
def divide_Scalar_mode(self, other, rounding_mode):
    return _aten().div.Scalar_mode(self, other, rounding_mode)


@native
def divide__Scalar_mode(self, other, rounding_mode):
    return _aten().div_.Scalar_mode(self, other, rounding_mode)


@native
def multiply_Tensor(self, other):
    return _aten().mul.Tensor(self, other)


@native
def multiply__Tensor(self, other):
    return _aten().mul_.Tensor(self, other)


@native
def multiply_out(self, other, out):
    return _aten().mul.out(self, other, out)


@native
def multiply_Scalar(self, other):
    return _aten().mul.Scalar(self, other)


@native
def multiply__Scalar(self, other):
    return _aten().mul_.Scalar(self, other)


@native
def subtract_Tensor(self, other, alpha):
    return _aten().sub.Tensor(self, other, alpha)


@native
def subtract__Tensor(self, other, alpha):
    return _aten().sub_.Tensor(self, other, alpha)


@native
def subtract_out(self, other, alpha, out):
    return _aten().sub.out(self, other, alpha, out)


@native
def subtract_Scalar(self, other, alpha):
    return _aten().sub.Scalar(self, other, alpha)


@native
def subtract__Scalar(self, other, alpha):
    return _aten().sub_.Scalar(self, other, alpha)


# --- floor_divide: div with rounding_mode='floor' (PyTorch's CPU kernels do the same) -------


@native
def floor_divide(self, other):
    return _aten().div.Tensor_mode(self, other, "floor")


@native
def floor_divide__Tensor(self, other):
    return _aten().div_.Tensor_mode(self, other, "floor")


@native
def floor_divide_out(self, other, out):
    return _aten().div.out_mode(self, other, "floor", out)


@native
def floor_divide_Scalar(self, other):
    return _aten().div.Tensor_mode(self, wrapped_number(other), "floor")


@native
def floor_divide__Scalar(self, other):
    return _aten().div_.Tensor_mode(self, wrapped_number(other), "floor")


# --- ldexp: self * 2**other --------------------------------------------------------------------


@native
def ldexp_Tensor(self, other):
    return _aten().mul.Tensor(self, _aten().pow.Scalar(2.0, other))


@native
def ldexp_out(self, other, out):
    power = _aten().pow.Scalar(2.0, other)
    if not can_cast(result_type(self, power), out.dtype):
        raise RuntimeError(
            f"ldexp can't be cast to the desired output type {out.dtype.scalar_name}"
        )
    return _aten().mul.out(self, power, out)


@native
def ldexp_(self, other):
    return ldexp_out(self, other, self)


# --- float_power: pow computed in double (complex double when a complex operand) ------------


def _float_power_dtype(*operands) -> dt.dtype:
    for x in operands:
        if x.dtype.is_complex if isinstance(x, Tensor) else isinstance(x, complex):
            return dt.complex128
    return dt.float64


def _as(t: Tensor, dtype: dt.dtype) -> Tensor:
    return t if t.dtype is dtype else _aten().to.dtype(t, dtype, False, False, None)


def _scalar_as(value, dtype: dt.dtype):
    return complex(value) if dtype.is_complex else float(value)


def _check_float_power_result(what: str, name: str, t: Tensor, dtype: dt.dtype) -> None:
    if t.dtype is not dtype:
        raise RuntimeError(
            f"the {what} given to {name} has dtype {t.dtype.scalar_name} but the operation's "
            f"result requires dtype {dtype.scalar_name}"
        )


@native
def float_power_Tensor_Tensor(self, exponent):
    dtype = _float_power_dtype(self, exponent)
    return _aten().pow.Tensor_Tensor(_as(self, dtype), _as(exponent, dtype))


@native
def float_power_Tensor_Tensor_out(self, exponent, out):
    dtype = _float_power_dtype(self, exponent)
    _check_float_power_result("output", "float_power", out, dtype)
    return _aten().pow.Tensor_Tensor_out(_as(self, dtype), _as(exponent, dtype), out)


@native
def float_power_Tensor_Scalar(self, exponent):
    dtype = _float_power_dtype(self, exponent)
    return _aten().pow.Tensor_Scalar(_as(self, dtype), _scalar_as(exponent, dtype))


@native
def float_power_Tensor_Scalar_out(self, exponent, out):
    dtype = _float_power_dtype(self, exponent)
    _check_float_power_result("output", "float_power", out, dtype)
    return _aten().pow.Tensor_Scalar_out(_as(self, dtype), _scalar_as(exponent, dtype), out)


@native
def float_power_Scalar(self, exponent):
    dtype = _float_power_dtype(self, exponent)
    return _aten().pow.Scalar(_scalar_as(self, dtype), _as(exponent, dtype))


@native
def float_power_Scalar_out(self, exponent, out):
    dtype = _float_power_dtype(self, exponent)
    _check_float_power_result("output", "float_power", out, dtype)
    return _aten().pow.Scalar_out(_scalar_as(self, dtype), _as(exponent, dtype), out)


@native
def float_power__Tensor(self, exponent):
    dtype = _float_power_dtype(self, exponent)
    _check_float_power_result("base", "float_power_", self, dtype)
    return _aten().pow_.Tensor(self, _as(exponent, dtype))


@native
def float_power__Scalar(self, exponent):
    dtype = _float_power_dtype(self, exponent)
    _check_float_power_result("base", "float_power_", self, dtype)
    return _aten().pow_.Scalar(self, _scalar_as(exponent, dtype))


# --- complex and polar: two real tensors make one complex tensor ------------------------------

_COMPLEX_INPUTS = frozenset({dt.float16, dt.float32, dt.float64})


def _check_complex_inputs(a: Tensor, b: Tensor) -> None:
    if a.dtype not in _COMPLEX_INPUTS or b.dtype not in _COMPLEX_INPUTS:
        raise RuntimeError(
            "Expected both inputs to be Half, Float or Double tensors but got "
            f"{a.dtype.scalar_name} and {b.dtype.scalar_name}"
        )
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {a.dtype.scalar_name} but got scalar type "
            f"{b.dtype.scalar_name} for second argument"
        )


def _check_half(name: str, a: Tensor) -> None:
    # complex(float16) gives complex32 (ComplexHalf); polar's kernel has no ComplexHalf case.
    if a.dtype is dt.float16 and name == "polar":
        raise NotImplementedError("\"polar_cpu\" not implemented for 'Half'")


def _complex_pair(name: str, a: Tensor, b: Tensor, out: Tensor, fn) -> Tensor:
    _check_complex_inputs(a, b)
    expected = a.dtype.to_complex()
    shape = broadcast_shapes(name, a._sizes, b._sizes)
    if out.dtype is not expected:
        raise RuntimeError(
            f"Expected object of scalar type {expected.scalar_name} but got scalar type "
            f"{out.dtype.scalar_name} for argument 'out'"
        )
    _check_half(name, a)
    resize_output(out, shape, name)
    if out._storage.data is not None and out.numel() > 0:
        quiet_call(fn, a._numpy(), b._numpy(), out._numpy())
    out._bump_version()
    return out


def _complex_values(real: np.ndarray, imag: np.ndarray, out: np.ndarray) -> None:
    if out.dtype.names:  # complex32: NumPy holds it as a (real, imag) float16 record
        out["real"], out["imag"] = real, imag
        return
    out.real, out.imag = real, imag


def _polar_values(magnitude: np.ndarray, angle: np.ndarray, out: np.ndarray) -> None:
    np.multiply(magnitude, np.cos(angle), out=out.real)
    np.multiply(magnitude, np.sin(angle), out=out.imag)


@native
def complex_out(real, imag, out):
    return _complex_pair("complex", real, imag, out, _complex_values)


@native
def complex_composite(real, imag):
    _check_complex_inputs(real, imag)
    _check_half("complex", real)
    shape = broadcast_shapes("complex", real._sizes, imag._sizes)
    out = empty_tensor(shape, real.dtype.to_complex(), real.device)
    return _aten().complex.out(real, imag, out)


@native
def polar_out(abs, angle, out):  # noqa: A002 - PyTorch's argument name
    return _complex_pair("polar", abs, angle, out, _polar_values)


@native
def polar_composite(abs, angle):  # noqa: A002 - PyTorch's argument name
    _check_complex_inputs(abs, angle)
    _check_half("polar", abs)
    shape = broadcast_shapes("polar", abs._sizes, angle._sizes)
    out = empty_tensor(shape, abs.dtype.to_complex(), abs.device)
    return _aten().polar.out(abs, angle, out)
