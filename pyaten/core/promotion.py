"""Type promotion as PyTorch does it (not NumPy).

Note: promotion by priority. Operands fall into three priority classes: tensors with at
least one dimension, zero-dim tensors, and Python scalars ("wrapped numbers"). Each class
is promoted within itself; a lower class only changes the result when it brings a higher
category (bool < integer < floating < complex). A Python float counts as the default dtype,
a Python complex as the default complex dtype, a Python int as int64.
"""

from __future__ import annotations

import builtins

from pyaten.core import dtypes as dt
from pyaten.core.dtypes import BOOL_CATEGORY, COMPLEX_CATEGORY, FLOAT_CATEGORY, INT_CATEGORY, dtype

__all__ = ["promote_types", "result_type", "can_cast", "scalar_dtype", "ResultTypeState"]


def _build_int_promotion(a: dtype, b: dtype) -> dtype:
    if a.is_signed == b.is_signed:
        return a if a.itemsize >= b.itemsize else b
    signed, unsigned = (a, b) if a.is_signed else (b, a)
    if signed.itemsize > unsigned.itemsize:
        return signed
    # uint8 with int8 needs int16 to hold both ranges.
    return {1: dt.int16, 2: dt.int32, 4: dt.int64, 8: dt.int64}[unsigned.itemsize]


def _build_promotion(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.category != b.category:
        high, low = (a, b) if a.category > b.category else (b, a)
        if high.category == COMPLEX_CATEGORY and low.category == FLOAT_CATEGORY:
            # The complex counterpart of the promoted real parts: complex32 with float32 is
            # complex64, complex64 with float64 is complex128.
            return _build_promotion(high.to_real(), low).to_complex()
        return high
    if a.category == INT_CATEGORY:
        return _build_int_promotion(a, b)
    if a.category == FLOAT_CATEGORY:
        if {a, b} == {dt.float16, dt.bfloat16}:
            return dt.float32
        return a if a.itemsize >= b.itemsize else b
    return a if a.itemsize >= b.itemsize else b  # complex: complex32 < complex64 < complex128


# Precomputed so the per-call path is one tuple index.
_TABLE: tuple[tuple[dtype, ...], ...] = tuple(
    tuple(_build_promotion(a, b) for b in dt.ALL_DTYPES) for a in dt.ALL_DTYPES
)


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both can be converted to (torch.promote_types)."""
    if not isinstance(type1, dtype) or not isinstance(type2, dtype):
        raise TypeError(
            "promote_types(): argument 'type1' and 'type2' must be pyaten.dtype, not "
            f"{type(type1).__name__} and {type(type2).__name__}"
        )
    return _TABLE[type1.index][type2.index]


def _promote(a: dtype | None, b: dtype) -> dtype:
    return b if a is None else _TABLE[a.index][b.index]


def can_cast(from_: dtype, to: dtype) -> bool:
    """Whether casting `from_` to `to` is allowed by promotion (no category downgrade)."""
    if not isinstance(from_, dtype) or not isinstance(to, dtype):
        raise TypeError(
            f"can_cast(): arguments must be pyaten.dtype, not {type(from_).__name__} and "
            f"{type(to).__name__}"
        )
    return from_.category <= to.category


def scalar_dtype(value: object) -> dtype:
    """The dtype a Python number stands for in promotion (float -> default dtype)."""
    cls = type(value)
    if cls is builtins.bool:
        return dt.bool
    if cls is builtins.int:
        return dt.int64
    if cls is builtins.float:
        return dt.get_default_dtype()
    if cls is builtins.complex:
        return dt.default_complex_dtype()
    if isinstance(value, builtins.bool):
        return dt.bool
    if isinstance(value, builtins.int):
        return dt.int64
    if isinstance(value, builtins.float):
        return dt.get_default_dtype()
    if isinstance(value, builtins.complex):
        return dt.default_complex_dtype()
    raise TypeError(f"expected a Tensor or a Python number, got {cls.__name__}")


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # A lower priority class matters only when it brings a higher category.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == COMPLEX_CATEGORY:
        return higher
    if lower.category == COMPLEX_CATEGORY:
        if higher.category == FLOAT_CATEGORY:
            return higher.to_complex()
        return lower
    if higher.category == FLOAT_CATEGORY:
        return higher
    if higher.category == BOOL_CATEGORY or lower.category == FLOAT_CATEGORY:
        return _TABLE[higher.index][lower.index]
    return higher


class ResultTypeState:
    """Accumulates operands one at a time (torch's ResultTypeState)."""

    __slots__ = ("dim_result", "zero_result", "wrapped_result")

    def __init__(self) -> None:
        self.dim_result: dtype | None = None
        self.zero_result: dtype | None = None
        self.wrapped_result: dtype | None = None

    def update(self, operand: object) -> None:
        sizes = getattr(operand, "_sizes", None)
        if sizes is None:
            self.wrapped_result = _promote(self.wrapped_result, scalar_dtype(operand))
            return
        d = operand._dtype
        if operand._wrapped_number:
            if d.category == COMPLEX_CATEGORY:
                d = dt.default_complex_dtype()
            elif d.category == FLOAT_CATEGORY:
                d = dt.get_default_dtype()
            self.wrapped_result = _promote(self.wrapped_result, d)
        elif sizes:
            self.dim_result = _promote(self.dim_result, d)
        else:
            self.zero_result = _promote(self.zero_result, d)

    def result(self) -> dtype | None:
        return _combine(self.dim_result, _combine(self.zero_result, self.wrapped_result))


def result_type(*operands: object) -> dtype:
    """The dtype an elementwise op on `operands` (tensors or Python numbers) computes in."""
    if not operands:
        raise TypeError("result_type() missing required arguments 'tensor' and 'other'")
    state = ResultTypeState()
    for operand in operands:
        state.update(operand)
    found = state.result()
    assert found is not None
    return found

