"""Pointwise ternary operators: lerp (Scalar and Tensor weight), addcmul, addcdiv.

Each is a row of the pointwise family table (`pyaten.native.family`): the `TensorIterator`
broadcasts and promotes the three tensor operands; a Scalar argument (`weight`, `value`) goes
to the array function as the Python number, converted to the compute type with PyTorch's
overflow check ("value cannot be converted to type float without overflow").
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.native import family, fastpath
from pyaten.native.runtime import Tensor

# The C++ type a Scalar is converted to per compute dtype (PyTorch's opmath type), and its
# finite range; `None`: no range check.
_SCALAR_TYPES: dict[dt.dtype, tuple[str, tuple | None]] = {
    dt.bool: ("bool", None),
    dt.uint8: ("uint8_t", (-255, 255)),  # negative values wrap, as c10's unsigned check allows
    dt.int8: ("int8_t", (-(2**7), 2**7 - 1)),
    dt.int16: ("int16_t", (-(2**15), 2**15 - 1)),
    dt.int32: ("int32_t", (-(2**31), 2**31 - 1)),
    dt.int64: ("int64_t", (-(2**63), 2**63 - 1)),
    dt.float16: ("float", (-3.4028234663852886e38, 3.4028234663852886e38)),
    dt.bfloat16: ("float", (-3.4028234663852886e38, 3.4028234663852886e38)),
    dt.float32: ("float", (-3.4028234663852886e38, 3.4028234663852886e38)),
    dt.float64: ("double", None),
    dt.complex64: ("c10::complex<float>", None),
    dt.complex128: ("c10::complex<double>", None),
}


def check_scalar(value: object, dtype: dt.dtype) -> None:
    """PyTorch's `Scalar.to<T>()` check: the value must fit the compute type of `dtype`."""
    name, limits = _SCALAR_TYPES[dtype]
    if dtype.is_complex:
        return
    overflow = isinstance(value, complex) and value.imag != 0
    if not overflow and limits is not None:
        real = value.real if isinstance(value, complex) else value
        overflow = math.isfinite(real) and not (limits[0] <= real <= limits[1])
    if overflow:
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


def _scalar(value: object, like: np.ndarray) -> np.ndarray:
    """A Python number as a 0-d array of `like`'s dtype (0.5 becomes 0 for integers, as C++)."""
    if like.dtype.kind in "iub" and isinstance(value, float):
        value = int(value)
    elif like.dtype.kind != "c" and isinstance(value, complex):
        value = value.real
    return np.asarray(value).astype(like.dtype)


# --- lerp: self + weight * (end - self), computed from the nearer end as PyTorch does ---------


def _lerp(start: np.ndarray, end: np.ndarray, weight: np.ndarray) -> np.ndarray:
    # |weight| < 0.5: start + weight * diff, else end - diff * (1 - weight): exact at both ends.
    diff = end - start
    result = np.asarray(start + weight * diff)  # 0-d inputs give a NumPy scalar
    near_end = np.abs(weight) >= 0.5
    if near_end.any():  # the second formula, computed only where it applies
        near_end = np.broadcast_to(near_end, result.shape)
        tail = np.multiply(diff, 1 - weight, where=near_end,
                           out=np.empty(result.shape, result.dtype))
        np.subtract(end, tail, out=result, where=near_end)
    return result


def _lerp_scalar(start: np.ndarray, end: np.ndarray, weight: object,
                 out: np.ndarray | None = None) -> np.ndarray:
    check_scalar(weight, _dtype_of(start))
    w = _scalar(weight, start)
    diff = np.asarray(end - start)  # before `out` (may be `start`: lerp_) is written; 0-d ok
    if abs(weight) < 0.5:  # one weight: one branch of `_lerp`
        return np.add(start, np.multiply(diff, w, out=diff), out=out)
    return np.subtract(end, np.multiply(diff, 1 - w, out=diff), out=out)


def _dtype_of(array: np.ndarray) -> dt.dtype:
    return dt.from_numpy_dtype(array.dtype)


def _check_lerp_end(self: Tensor, end: Tensor, *rest: object) -> None:
    if self.dtype is not end.dtype:
        raise RuntimeError(
            f"expected dtype {self.dtype.cpp_name} for `end` but got dtype {end.dtype.cpp_name}"
        )


def _check_lerp_weight(self: Tensor, end: Tensor, weight: Tensor) -> None:
    _check_lerp_end(self, end)
    if self.dtype is not weight.dtype and weight.dim() > 0:
        raise RuntimeError(
            f"expected dtype {self.dtype.cpp_name} for `weight` but got dtype "
            f"{weight.dtype.cpp_name}"
        )


# --- addcmul, addcdiv: self + value * tensor1 (* or /) tensor2 ----------------------------------


def _addcmul(a: np.ndarray, b: np.ndarray, c: np.ndarray, value: object,
            out: np.ndarray | None = None) -> np.ndarray:
    check_scalar(value, _dtype_of(a))
    product = b * c
    if value != 1 or value.__class__ is complex:
        product *= _scalar(value, a)
    return np.add(a, product, out=out)  # `out` may be `a` (addcmul_): added last


def _addcdiv(a: np.ndarray, b: np.ndarray, c: np.ndarray, value: object,
            out: np.ndarray | None = None) -> np.ndarray:
    check_scalar(value, _dtype_of(a))
    quotient = b / c
    if value != 1 or value.__class__ is complex:
        quotient *= _scalar(value, a)
    return np.add(a, quotient, out=out)


def _check_addcdiv(self: Tensor, tensor1: Tensor, tensor2: Tensor, value: object) -> None:
    if not _is_floating_or_complex(tensor1) and not _is_floating_or_complex(tensor2):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * pyaten.trunc(tensor1 / tensor2))."
            "to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes."
        )


def _is_floating_or_complex(t: Tensor) -> bool:
    return t.dtype.is_floating_point or t.dtype.is_complex


F = family
_STUBS = family.register(
    # lerp.Tensor's iterator wants one dtype (a given output too): the "exact" build.
    F.Pointwise("lerp.Scalar", _lerp_scalar, F.FLOATING_COMPLEX_AND_REDUCED,
                impl="lerp_Scalar", stub="lerp_kernel_scalar_weight",
                dispatch_name="lerp_kernel_scalar", check=_check_lerp_end, takes_out=True),
    F.Pointwise("lerp.Tensor", _lerp, F.FLOATING_COMPLEX_AND_REDUCED, build="exact",
                impl="lerp_Tensor", stub="lerp_kernel_tensor_weight",
                dispatch_name="lerp_kernel_tensor", check=_check_lerp_weight),
    F.Pointwise("addcmul", _addcmul, F.EVERY - {dt.bool}, dispatch_name="addcmul_cpu_out",
                takes_out=True),
    F.Pointwise("addcdiv", _addcdiv, F.FLOATING_COMPLEX_AND_REDUCED, check=_check_addcdiv,
                dispatch_name="addcdiv_cpu_out", takes_out=True),
)


def _register_fast() -> None:
    # (Note: the structured fast path) Adam's calls: lerp_, addcmul_, addcdiv_ on parameters
    for name, fn, stub, tensors in (
        ("lerp.Scalar", _lerp_scalar, "lerp_kernel_scalar_weight", 2),
        ("addcmul", _addcmul, "addcmul_stub", 3),
        ("addcdiv", _addcdiv, "addcdiv_stub", 3),
    ):
        functional, inplace = fastpath.with_scalars(fn, _STUBS[stub], fastpath.FLOATS, tensors)
        fastpath.register(name, functional, inplace, family.caller_site(1))


_register_fast()
