"""Tensor properties and Python operators that are compositions of generated bindings.

`T`, `mT`, `H`, `mH` are views built from `permute`/`transpose`; the reflected and floor
division operators call the generated functions (so every step still dispatches). Attached to
`Tensor` by `pyaten.native.loader` after the generated methods.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from pyaten.native.arg_parser import ArgumentParseError
from pyaten.native.runtime import Tensor


def _T(self: Tensor) -> Tensor:  # noqa: N802 - Tensor.T
    ndim = len(self._sizes)
    if ndim != 2 and ndim != 0:
        warnings.warn(
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
            "deprecated and it will throw an error in a future release. Consider `x.mT` to "
            "transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to "
            "reverse the dimensions of a tensor.",
            UserWarning,
            stacklevel=2,
        )
    return self.permute(tuple(range(ndim - 1, -1, -1)))


def _mT(self: Tensor) -> Tensor:  # noqa: N802 - Tensor.mT
    ndim = len(self._sizes)
    if ndim < 2:
        raise RuntimeError(
            "tensor.mT is only supported on matrices or batches of matrices. Got "
            f"{ndim}-D tensor."
        )
    return self.transpose(-2, -1)


def _invert(self: Tensor) -> Tensor:
    """`~t`: bitwise not, for integer and bool tensors only (as PyTorch's operator checks)."""
    if self._dtype.is_floating_point or self._dtype.is_complex:
        raise TypeError(
            "~ (operator.invert) is only implemented on integer and Boolean-type tensors"
        )
    return self.bitwise_not()


def _operator(fn: Callable[[Tensor, Any], Any]) -> Callable[[Tensor, Any], Any]:
    # A wrong operand type makes Python try the other operand's method, as for torch.
    def operator_method(self: Tensor, other: Any) -> Any:
        try:
            return fn(self, other)
        except ArgumentParseError:
            return NotImplemented

    operator_method.__name__ = fn.__name__
    operator_method.__doc__ = fn.__doc__
    return operator_method


def attach(functions: dict[str, Callable[..., Any]]) -> None:
    """Attach the properties and composite operators, given the generated functions."""
    rsub = functions.get("rsub")
    div = functions["div"]
    floor_divide = functions["floor_divide"]
    remainder = functions.get("remainder")
    power = functions.get("pow")

    def __rmod__(self, other):
        """`other % self`."""
        return remainder(other, self)

    def __rpow__(self, other):
        """`other ** self`."""
        return power(other, self)

    def __rsub__(self, other):
        """`other - self` as `rsub(self, other)`."""
        return rsub(self, other)

    def __rtruediv__(self, other):
        """`other / self`."""
        return div(other, self)

    def __floordiv__(self, other):
        """`self // other`: `floor_divide`, as PyTorch's operator calls it."""
        return floor_divide(self, other)

    def __rfloordiv__(self, other):
        """`other // self`."""
        return floor_divide(other, self)

    def __ifloordiv__(self, other):
        """`self //= other`."""
        return self.floor_divide_(other)

    left_shift = functions.get("bitwise_left_shift")
    right_shift = functions.get("bitwise_right_shift")

    def __rlshift__(self, other):
        """`other << self`."""
        return left_shift(other, self)

    def __rrshift__(self, other):
        """`other >> self`."""
        return right_shift(other, self)

    optional = ((__rsub__, rsub), (__rmod__, remainder), (__rpow__, power),
                (__rlshift__, left_shift), (__rrshift__, right_shift))
    for fn in (__rtruediv__, __floordiv__, __rfloordiv__, __ifloordiv__) + tuple(
        f for f, needed in optional if needed is not None
    ):
        setattr(Tensor, fn.__name__, _operator(fn))
    Tensor.__rdiv__ = Tensor.__rtruediv__
    if "bitwise_not" in functions:
        Tensor.__invert__ = _invert
    Tensor.T = property(_T, doc="The tensor with its dimensions reversed (a view).")
    Tensor.mT = property(_mT, doc="The last two dimensions transposed (a view).")
    Tensor.H = property(lambda self: _T(self).conj() if self.is_complex() else _T(self),
                        doc="Conjugate transpose (real tensors: T).")
    Tensor.mH = property(lambda self: _mT(self).conj() if self.is_complex() else _mT(self),
                         doc="Matrix conjugate transpose (real: mT).")
