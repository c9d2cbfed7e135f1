"""Bitwise ops: and, or, xor, not and the shifts, with the Python operators `& | ^ ~ << >>`.

`bitwise_and/or/xor.Tensor` and `bitwise_not` are structured through `TensorIteratorMeta`
and a `DispatchStub` each; the Scalar overloads and the dunder entries (`__and__`, `__iand__`,
...) are composites over them, as in PyTorch. Floating-point inputs are refused with
PyTorch's "not implemented for 'Float'" error.
"""

from __future__ import annotations

import numpy as np

from pyaten.core.stub import DispatchStub
from pyaten.native import family
from pyaten.native.kernels.shape import aten_ops
from pyaten.native.registry import native
from pyaten.native.runtime import wrapped_number
from pyaten.native.structured import TensorIteratorMeta


def _aten():
    from pyaten.ops import aten

    return aten


def _integral_only(kernel: str, dtype) -> None:
    if dtype.is_floating_point or dtype.is_complex:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{dtype.scalar_name}\'')


bitwise_not_stub = DispatchStub("bitwise_not_stub")


@bitwise_not_stub.register("cpu")
def bitwise_not_kernel(op) -> None:
    # the dtype is checked here, after the output checks of meta, as PyTorch's AT_DISPATCH
    _integral_only("bitwise_not_cpu", op.common_dtype)
    (a,) = op.input_arrays()
    op.compute(np.invert, a)


@native
def meta_bitwise_not(op, self):
    op.build_unary_op(self)


@native
def bitwise_not_out(op, self, out):
    bitwise_not_stub(op.device.type, op)


_UFUNCS = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


def _define(name: str, ufunc) -> None:
    stub = DispatchStub(f"bitwise_{name}_stub")
    kernel_name = f"bitwise_{name}_cpu"

    def bitwise_kernel(op) -> None:
        a, b = op.input_arrays()
        op.compute(ufunc, a, b)

    stub.register("cpu", bitwise_kernel)

    def meta(op, self, other):
        op.build_binary_op(self, other)
        _integral_only(kernel_name, op.common_dtype)

    def impl(op, self, other, out):
        stub(op.device.type, op)

    def scalar_out(self, other, out):
        return getattr(_aten(), f"bitwise_{name}").Tensor_out(self, wrapped_number(other),
                                                              out=out)

    def scalar(self, other):
        return getattr(_aten(), f"bitwise_{name}").Tensor(self, wrapped_number(other))

    def scalar_tensor(self, other):
        return getattr(_aten(), f"bitwise_{name}").Tensor(wrapped_number(self), other)

    def inplace_scalar(self, other):
        return getattr(_aten(), f"bitwise_{name}_").Tensor(self, wrapped_number(other))

    def dunder_scalar(self, other):
        return getattr(_aten(), f"bitwise_{name}").Scalar(self, other)

    def dunder_tensor(self, other):
        return getattr(_aten(), f"bitwise_{name}").Tensor(self, other)

    def idunder_scalar(self, other):
        return getattr(_aten(), f"bitwise_{name}_").Scalar(self, other)

    def idunder_tensor(self, other):
        return getattr(_aten(), f"bitwise_{name}_").Tensor(self, other)

    for fn, fn_name in (
        (meta, f"meta_bitwise_{name}_Tensor"),
        (impl, f"bitwise_{name}_out"),
        (scalar_out, f"bitwise_{name}_Scalar_out"),
        (scalar, f"bitwise_{name}_Scalar"),
        (scalar_tensor, f"bitwise_{name}_Scalar_Tensor"),
        (inplace_scalar, f"bitwise_{name}__Scalar"),
        (dunder_scalar, f"__{name}___Scalar"),
        (dunder_tensor, f"__{name}___Tensor"),
        (idunder_scalar, f"__i{name}___Scalar"),
        (idunder_tensor, f"__i{name}___Tensor"),
    ):
        fn.__name__ = fn.__qualname__ = fn_name
        native(fn)


for _name, _ufunc in _UFUNCS.items():
    _define(_name, _ufunc)


# --- shifts, gcd, lcm: rows of the family table -------------------------------------------------


def _in_range(b: np.ndarray, bits: int) -> bool:
    # Two reductions are much cheaper than building the masks.
    return b.size == 0 or (int(b.min()) >= 0 and int(b.max()) < bits)


def _left_shift(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # PyTorch: a shift by a negative amount or by the width or more gives 0.
    bits = a.dtype.itemsize * 8
    if _in_range(b, bits):
        return np.left_shift(a, b)
    outside = (b < 0) | (b >= bits)
    return np.where(outside, 0, np.left_shift(a, np.where(outside, 0, b).astype(b.dtype)))


def _right_shift(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # PyTorch: a shift by a negative amount or by the width or more fills with the sign bit.
    bits = a.dtype.itemsize * 8
    if _in_range(b, bits):
        return np.right_shift(a, b)
    outside = (b < 0) | (b >= bits)
    fill = np.right_shift(a, bits - 1) if a.dtype.kind == "i" else np.zeros_like(a)
    return np.where(outside, fill, np.right_shift(a, np.where(outside, 0, b).astype(b.dtype)))


def _lcm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # |a / gcd * b| in the integer type (wrapping as PyTorch's), 0 when gcd is 0.
    g = np.gcd(a, b)
    with np.errstate(all="ignore"):
        result = np.abs(np.floor_divide(a, np.where(g == 0, 1, g)) * b)
    return np.where(g == 0, 0, result)


_SHIFT_ROWS = {
    "lshift": family.Pointwise("bitwise_left_shift.Tensor", _left_shift, family.INTEGRAL,
                               impl="bitwise_left_shift_out", stub="lshift_stub",
                               dispatch_name="lshift_cpu"),
    "rshift": family.Pointwise("bitwise_right_shift.Tensor", _right_shift, family.INTEGRAL,
                               impl="bitwise_right_shift_out", stub="rshift_stub",
                               dispatch_name="rshift_cpu"),
}
_STUBS = family.register(
    *_SHIFT_ROWS.values(),
    family.Pointwise("gcd", np.gcd, family.INTEGRAL),
    family.Pointwise("lcm", _lcm, family.INTEGRAL),
)


def _define_shift_overloads(name: str) -> None:
    def tensor_scalar(self, other):
        return getattr(aten_ops(), name).Tensor(self, wrapped_number(other))

    def inplace_tensor_scalar(self, other):
        return getattr(aten_ops(), name + "_").Tensor(self, wrapped_number(other))

    def tensor_scalar_out(self, other, out):
        return getattr(aten_ops(), name).Tensor_out(self, wrapped_number(other), out)

    def scalar_tensor(self, other):
        return getattr(aten_ops(), name).Tensor(wrapped_number(self), other)

    for fn, fn_name in (
        (tensor_scalar, f"{name}_Tensor_Scalar"),
        (inplace_tensor_scalar, f"{name}__Tensor_Scalar"),
        (tensor_scalar_out, f"{name}_Tensor_Scalar_out"),
        (scalar_tensor, f"{name}_Scalar_Tensor"),
    ):
        fn.__name__ = fn.__qualname__ = fn_name
        native(fn)


for _name in ("bitwise_left_shift", "bitwise_right_shift"):
    _define_shift_overloads(_name)


# --- the dunders `<<`, `>>` and their in-place forms: CPU and Meta kernels (not structured in
# PyTorch), computed by the rows' stubs.


def _shift(name: str, kind: str, self, other):
    op = TensorIteratorMeta(kind, (None,) if kind == "functional" else (self,),
                            f"__{name}__", self.device.type)
    op.build_binary_op(self, other)
    if op.outputs[0]._storage.data is not None:
        _STUBS[f"{name}_stub"](op.device.type, op, (self, other))
    elif op.common_dtype not in family.INTEGRAL:
        raise family.unsupported_dtype(f"{name}_cpu", op.common_dtype)
    if kind == "inplace":
        self._bump_version()
    return op.outputs[0]


def _define_shift(name: str) -> None:
    def functional_tensor(self, other):
        return _shift(name, "functional", self, other)

    def functional_scalar(self, other):
        return _shift(name, "functional", self, wrapped_number(other))

    def inplace_tensor(self, other):
        return _shift(name, "inplace", self, other)

    def inplace_scalar(self, other):
        return _shift(name, "inplace", self, wrapped_number(other))

    for fn, fn_name in (
        (functional_tensor, f"__{name}___Tensor"),
        (functional_scalar, f"__{name}___Scalar"),
        (inplace_tensor, f"__i{name}___Tensor"),
        (inplace_scalar, f"__i{name}___Scalar"),
    ):
        fn.__name__ = fn.__qualname__ = fn_name
        native(fn)


for _name in _SHIFT_ROWS:
    _define_shift(_name)
