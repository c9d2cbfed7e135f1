"""Bitwise ops: and, or, xor, not and the shifts, with the Python operators `& | ^ ~ << >>`.

`bitwise_and/or/xor.Tensor` and `bitwise_not` are structured through `TensorIteratorMeta`
and a `DispatchStub` each; the Scalar overloads and the dunder entries (`__and__`, `__iand__`,
...) are composites over them, as in PyTorch. Floating-point inputs are refused with
PyTorch's "not implemented for 'Float'" error.
"""

from __future__ import annotations

import numpy as np

from pyaten.core.stub import DispatchStub
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
    (a,) = op.input_arrays()
    op.compute(np.invert, a)


@native
def meta_bitwise_not(op, self):
    _integral_only("bitwise_not_cpu", self.dtype)
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


# --- shifts: CPU and Meta kernels (not structured in PyTorch) -----------------------------------

_SHIFTS = {"lshift": np.left_shift, "rshift": np.right_shift}


def _shift(name: str, kind: str, self, other):
    op = TensorIteratorMeta(kind, (None,) if kind == "functional" else (self,),
                            f"__{name}__", self.device.type)
    op.build_binary_op(self, other)
    _integral_only(f"{name}_cpu", op.common_dtype)
    if op.outputs[0]._storage.data is not None:
        a, b = op.input_arrays()
        if a.dtype.kind == "b":
            a, b = a.astype(np.int64), b.astype(np.int64)
        op.write(_SHIFTS[name](a, b))
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


for _name in _SHIFTS:
    _define_shift(_name)
