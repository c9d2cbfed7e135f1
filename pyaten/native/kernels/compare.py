"""Comparisons: eq ne lt le gt ge against a Tensor or a Scalar (functional, in-place, out).

Structured through `TensorIteratorMeta.build_comparison_op`: inputs are promoted to their
common dtype and compared there; the result is bool (or, in place / into `out`, cast to that
tensor's dtype).
"""

from __future__ import annotations

import numpy as np

from pyaten.core.stub import DispatchStub
from pyaten.native.registry import native
from pyaten.native.runtime import wrapped_number
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


for _name, _ufunc in _COMPARE.items():
    _define(_name, _ufunc)
