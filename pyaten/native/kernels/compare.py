"""Comparisons: eq ne lt le gt ge against a Tensor or a Scalar (functional, in-place, out).

Structured through `TensorIteratorMeta.build_comparison_op`: inputs are promoted to their
common dtype and compared there; the result is bool (or, in place / into `out`, cast to that
tensor's dtype).
"""

from __future__ import annotations

import numpy as np

from pyaten.native.registry import native
from pyaten.native.runtime import wrapped_number

_COMPARE = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


def _define(name: str, ufunc) -> None:
    def meta_tensor(op, self, other):
        op.build_comparison_op(self, other)

    def meta_scalar(op, self, other):
        op.build_comparison_op(self, wrapped_number(other))

    def impl(op, self, other, out):
        a, b = op.input_arrays()
        with np.errstate(invalid="ignore"):
            op.write(ufunc(a, b))

    for fn, fn_name in (
        (meta_tensor, f"meta_{name}_Tensor"),
        (meta_scalar, f"meta_{name}_Scalar"),
        (impl, f"{name}_Tensor_out"),
    ):
        fn.__name__ = fn.__qualname__ = fn_name
        native(fn)
    # The Scalar impl is the same computation on the wrapped scalar meta built.
    scalar_impl = _scalar_impl(ufunc)
    scalar_impl.__name__ = scalar_impl.__qualname__ = f"{name}_Scalar_out"
    native(scalar_impl)


def _scalar_impl(ufunc):
    def impl(op, self, other, out):
        a, b = op.input_arrays()
        with np.errstate(invalid="ignore"):
            op.write(ufunc(a, b))

    return impl


for _name, _ufunc in _COMPARE.items():
    _define(_name, _ufunc)
