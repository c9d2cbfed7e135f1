"""Formula helpers of the binary family (see pyaten/autograd/formulas.py and docs/autograd.md).

The binary, ternary and comparison operators' entries in derivatives.yaml call these by name.
They follow PyTorch's conventions: the gradient flowing to an input is `grad` times the
conjugate of the partial derivative, and a complex gradient reaching a real input keeps its
real part (`handle_r_to_c`). A `Scalar` argument arrives as a Python number.
"""

from __future__ import annotations

import cmath
import math
from typing import Any

import pyaten
from pyaten.core.tensor import Tensor

__all__ = [
    "conj",
    "div_self_backward",
    "div_other_backward",
    "pow_backward",
    "pow_backward_self",
    "pow_backward_exponent",
    "atan2_backward",
    "copysign_self_backward",
    "polar_backward",
    "xlogy_scalar_other_backward",
    "lerp_scalar_self_backward",
]


def _r_to_c(like: Any, grad: Tensor) -> Tensor:
    dtype = like if isinstance(like, pyaten.dtype) else like.dtype
    if not dtype.is_complex and grad.dtype.is_complex:
        return grad.real
    return grad


def conj(value: Any) -> Any:
    """The complex conjugate of a tensor or a Python number (real numbers unchanged)."""
    if isinstance(value, Tensor):
        return value.conj()
    if isinstance(value, complex):
        return value.conjugate()
    return value


def div_self_backward(grad: Tensor, other: Any, self_dtype: Any,
                      rounding_mode: str | None = None) -> Tensor:
    """d(self / other)/d self; a rounded quotient is piecewise constant: zero."""
    if rounding_mode is not None:
        return pyaten.zeros_like(grad, dtype=self_dtype)
    return _r_to_c(self_dtype, grad / conj(other))


def div_other_backward(grad: Tensor, self: Tensor, other: Tensor,
                       rounding_mode: str | None = None) -> Tensor:
    """d(self / other)/d other = -self / other**2 (zero for a rounded quotient)."""
    if rounding_mode is not None:
        return pyaten.zeros_like(grad, dtype=other.dtype)
    return _r_to_c(other, -grad * ((self / other) / other).conj())


def pow_backward(grad: Tensor, self: Tensor, exponent: Any) -> Tensor:
    """d(self ** exponent)/d self for a Scalar exponent; exponent 0 gives zeros."""
    if exponent == 0:
        return pyaten.zeros_like(self)
    exp = complex(exponent) if isinstance(exponent, complex) else float(exponent)
    return _r_to_c(self, grad * (exp * self.pow(exp - 1)).conj())


def pow_backward_self(grad: Tensor, self: Tensor, exponent: Tensor) -> Tensor:
    """d(self ** exponent)/d self, zero wherever the exponent is 0 (even at self = 0)."""
    out = pyaten.where(exponent == 0, 0.0, grad * (exponent * self.pow(exponent - 1)).conj())
    return _r_to_c(self, out)


def _nonnegative_real(exponent: Tensor) -> Tensor:
    if exponent.dtype.is_complex:
        return pyaten.logical_and(exponent.imag == 0, exponent.real >= 0)
    return exponent >= 0


def _scalar_log(base: Any, complex_result: bool) -> Any:
    if complex_result or isinstance(base, complex):
        base = complex(base)
        return complex(-math.inf, 0.0) if base == 0 else cmath.log(base)
    base = float(base)
    if base == 0:
        return -math.inf
    return math.log(base) if base > 0 else math.nan


def pow_backward_exponent(grad: Tensor, self: Any, exponent: Tensor, result: Tensor) -> Tensor:
    """d(self ** exponent)/d exponent = result * log(self).

    At self = 0 with a non-negative real exponent the derivative is 0 (by continuity from
    positive exponents); at self = 0 with a negative exponent it is -inf, as in PyTorch.
    `self` is a tensor (pow.Tensor_Tensor) or a Python number (pow.Scalar).
    """
    if isinstance(self, Tensor):
        cond = pyaten.logical_and(self == 0, _nonnegative_real(exponent))
        base = self.to(pyaten.result_type(self, exponent))
        out = grad * pyaten.where(cond, 0.0, (result * base.log()).conj())
        return _r_to_c(exponent, out)
    log_base = _scalar_log(self, exponent.dtype.is_complex)
    partial = (result * log_base).conj()
    if self == 0:
        partial = pyaten.where(_nonnegative_real(exponent), 0.0, partial)
    return _r_to_c(exponent, grad * partial)


def atan2_backward(grad: Tensor, self: Tensor, other: Tensor,
                   mask: Any) -> tuple[Tensor | None, Tensor | None]:
    """atan2(y, x): d/dy = x / (x² + y²), d/dx = -y / (x² + y²); 0 where x² + y² is 0."""
    denominator = self * self + other * other
    recip = pyaten.where(denominator == 0, 0.0, 1 / denominator)
    return (grad * other * recip if mask[0] else None,
            grad * -self * recip if mask[1] else None)


def copysign_self_backward(grad: Tensor, self: Tensor, result: Tensor) -> Tensor:
    """d copysign(self, s)/d self = result / self: ±1, and 0 where self is 0."""
    return grad * pyaten.where(self == 0, 0.0, result / self)


def polar_backward(grad: Tensor, result: Tensor) -> tuple[Tensor, Tensor]:
    """polar(abs, angle) = abs·e^(i·angle), as PyTorch differentiates it:
    d/d abs = Re(conj(grad)·sgn(result)), d/d angle = Re(conj(grad)·i·result)."""
    grad_conj = grad.conj()
    return (grad_conj * result.sgn()).real, (grad_conj * (result * 1j)).real


def xlogy_scalar_other_backward(grad: Tensor, self: Tensor, other: Any) -> Tensor:
    """d xlogy(self, y)/d self = log(y), taken as 0 at self = 0 when y <= 0."""
    out = pyaten.xlogy(grad, other)
    if float(other) > 0:
        return out
    return pyaten.where(self == 0, 0.0, out)


def lerp_scalar_self_backward(grad: Tensor, weight: Any) -> Tensor:
    """d lerp(self, end, w)/d self = 1 - w (conjugated for a complex weight)."""
    if isinstance(weight, complex):
        return grad * (1 - weight.conjugate())
    return grad * (1 - float(weight))
