"""Formula helpers of the pointwise family (see formulas.py and docs/autograd.md).

The unary pointwise, special-function, complex and clamp operators: each helper is the
gradient PyTorch computes by the same name (its `FunctionsManual.cpp`), written over pyaten's
operators so the gradient is itself recorded when `create_graph=True`. Complex gradients
follow PyTorch's convention: the conjugate Wirtinger derivative, so a holomorphic `f` gives
`grad * f'(z).conj()`.
"""

from __future__ import annotations

import math
from typing import Any

import pyaten
from pyaten.core.tensor import Tensor
from pyaten.native.ops_handles import aten

__all__ = [
    "angle_backward",
    "clamp_backward",
    "clamp_backward_min_max",
    "clamp_jvp",
    "deg2rad_backward",
    "i1_backward",
    "i1e_backward",
    "logit_backward",
    "logit_formula",
    "infinitely_differentiable_logit_backward",
    "log1p_backward",
    "mvlgamma_backward",
    "no_derivative",
    "rad2deg_backward",
    "sgn_backward",
    "sigmoid_backward",
    "sinc_backward",
    "tanh_backward",
    "xlog1py_self_backward",
    "zero_where",
]

def _zero(like: Tensor) -> Tensor:
    """A 0-d zero of `like`'s dtype (PyTorch's `at::scalar_tensor(0., grad.options())`)."""
    return pyaten.scalar_tensor(0.0, dtype=like.dtype)


def zero_where(condition: Tensor, grad: Tensor) -> Tensor:
    """`grad` where `condition` holds, zero elsewhere."""
    return pyaten.where(condition, grad, _zero(grad))


# --- operators PyTorch declares for these gradients (kernels/pointwise_backward.py) -----------


def sigmoid_backward(grad_output: Tensor, output: Tensor) -> Tensor:
    return aten.sigmoid_backward.default(grad_output, output)


def tanh_backward(grad_output: Tensor, output: Tensor) -> Tensor:
    return aten.tanh_backward.default(grad_output, output)


def logit_backward(grad_output: Tensor, self: Tensor, eps: float | None = None) -> Tensor:
    return aten.logit_backward.default(grad_output, self, eps)


def no_derivative(qualified_name: str) -> Tensor:
    """What PyTorch raises for an operator its derivatives.yaml has no entry for (its
    `NotImplemented` node): `logit_backward`, whose gradient only a double backward without
    grad mode would need."""
    raise RuntimeError(f"derivative for {qualified_name} is not implemented")


def infinitely_differentiable_logit_backward(
    grad: Tensor, self: Tensor, eps: float | None
) -> Tensor:
    """logit's gradient from differentiable pieces: `grad / (x (1 - x))` inside the clamp
    range, zero outside it (with `eps`) or NaN outside [0, 1] (without)."""
    inside = grad / (self * (1.0 - self))
    if eps is not None:
        low, high = eps, 1.0 - eps
        keep = pyaten.logical_and(self >= low, self <= high)
        return pyaten.where(keep, inside, _zero(self))
    keep = pyaten.logical_and(self >= 0.0, self <= 1.0)
    return pyaten.where(keep, inside, pyaten.scalar_tensor(math.nan, dtype=self.dtype))


def logit_formula(grad: Tensor, self: Tensor, eps: float | None) -> Tensor:
    """PyTorch's choice: the differentiable form while grad mode is on (a double backward
    may follow), the fused operator otherwise."""
    if pyaten.is_grad_enabled():
        return infinitely_differentiable_logit_backward(grad, self, eps)
    return logit_backward(grad, self, eps)


# --- unary math --------------------------------------------------------------------------


def sgn_backward(x: Tensor, gx: Tensor, sgn: Tensor) -> Tensor:
    """sgn(z) = z / |z|: `(g - sgn^2 conj(g)) / (2 |z|)`, zero at z = 0 (zero for real z)."""
    magnitude = x.abs()
    value = (gx - (sgn * sgn) * gx.conj()) / (2.0 * magnitude)
    return pyaten.where(magnitude == 0.0, _zero(value), value)


def angle_backward(grad: Tensor, self: Tensor) -> Tensor:
    """angle(z) = atan2(im, re): `grad * i z / |z|^2` (zero at z = 0); zero for real z."""
    if self.dtype.is_complex:
        value = grad * self / self.abs().pow(2) * 1j
        return pyaten.where(self == 0.0, _zero(value), value)
    return pyaten.zeros_like(self)


def log1p_backward(grad: Tensor, self: Tensor) -> Tensor:
    return grad / (self + 1).conj()


def sinc_backward(grad: Tensor, self: Tensor) -> Tensor:
    """d/dx sin(pi x) / (pi x) = (pi x cos(pi x) - sin(pi x)) / (pi x^2), zero at x = 0."""
    self_pi = self * math.pi
    self_squared_pi = self * self * math.pi
    value = grad * ((self_pi * self_pi.cos() - self_pi.sin()) / self_squared_pi).conj()
    return pyaten.where(self_squared_pi == 0.0, _zero(value), value)


def mvlgamma_backward(grad: Tensor, self: Tensor, p: int) -> Tensor:
    """d/dx log Gamma_p(x) = sum_{j<p} digamma(x - j/2)."""
    offsets = pyaten.arange(-p / 2.0 + 0.5, 0.5, 0.5, dtype=self.dtype)
    args = offsets + self.unsqueeze(-1)
    return grad * args.digamma().sum(-1)


# machine epsilon of each floating dtype (std::numeric_limits<T>::epsilon())
_EPSILON = {
    pyaten.float64: 2.0**-52,
    pyaten.float32: 2.0**-23,
    pyaten.float16: 2.0**-10,
    pyaten.bfloat16: 2.0**-7,
}


def _not_tiny(self: Tensor) -> tuple[Tensor, Tensor]:
    """`|x| > eps` and `x` with the tiny elements replaced by eps (the gradients of i1 and
    i1e divide by x; at 0 their limit is 1/2)."""
    eps = _EPSILON.get(self.dtype, _EPSILON[pyaten.float64])
    big = self.abs() > eps
    safe = pyaten.where(big, self, pyaten.scalar_tensor(eps, dtype=self.dtype))
    return big, safe


def i1_backward(grad: Tensor, self: Tensor, result: Tensor) -> Tensor:
    """I1'(x) = I0(x) - I1(x) / x, 1/2 at 0."""
    big, safe = _not_tiny(self)
    value = safe.i0() - result * safe.reciprocal()
    half = pyaten.scalar_tensor(0.5, dtype=self.dtype)
    return grad * pyaten.where(big, value, half)


def i1e_backward(grad: Tensor, self: Tensor, result: Tensor) -> Tensor:
    """(e^-|x| I1(x))' = i0e(x) - i1e(x) (sgn(x) + 1/x), 1/2 at 0."""
    big, safe = _not_tiny(self)
    value = pyaten.special.i0e(safe) - result * (safe.sgn() + safe.reciprocal())
    half = pyaten.scalar_tensor(0.5, dtype=self.dtype)
    return grad * pyaten.where(big, value, half)


def deg2rad_backward(grad: Tensor) -> Tensor:
    return grad * (math.pi / 180.0)


def rad2deg_backward(grad: Tensor) -> Tensor:
    return grad * (180.0 / math.pi)


def xlog1py_self_backward(grad: Tensor, self: Tensor, other: Any) -> Tensor:
    """xlog1py(x, y) = x log1p(y) with 0 at x = 0: the gradient in x is log1p(y), zero where
    x = 0 and y <= -1 (where log1p(y) is not finite)."""
    value = pyaten.special.xlog1py(grad, other)
    if isinstance(other, Tensor):
        return pyaten.where(pyaten.logical_and(self == 0.0, other <= -1.0), _zero(value), value)
    if other > -1.0:
        return value
    return pyaten.where(self == 0.0, _zero(value), value)


# --- clamp -------------------------------------------------------------------------------


def clamp_backward(grad: Tensor, self: Tensor, min: Any, max: Any) -> Tensor:
    """`grad` where `min <= self <= max` (the bounds themselves pass it: subgradient 1)."""
    if min is not None and max is not None:
        return zero_where(pyaten.logical_and(self >= min, self <= max), grad)
    if min is not None:
        return zero_where(self >= min, grad)
    if max is not None:
        return zero_where(self <= max, grad)
    return grad


def clamp_backward_min_max(
    grad: Tensor, self: Tensor, min: Tensor | None, max: Tensor | None, mask: Any
) -> tuple[Tensor | None, Tensor | None]:
    """The gradients of clamp.Tensor's bounds: `min` where `self < min` (and `min < max`),
    `max` where `self > max` or `max < min` (then max wins). `mask` is the node's mask over
    (self, min, max)."""
    want_min, want_max = mask[1], mask[2]
    g_min = g_max = None
    if min is not None and max is not None:
        if want_min:
            g_min = zero_where(pyaten.logical_and(self < min, min < max), grad)
        if want_max:
            g_max = zero_where(pyaten.logical_or(self > max, max < min), grad)
    elif min is not None and want_min:
        g_min = zero_where(self < min, grad)
    elif max is not None and want_max:
        g_max = zero_where(self > max, grad)
    return g_min, g_max


def clamp_jvp(
    self_p: Tensor, self_t: Tensor, min_p: Tensor | None, min_t: Tensor | None,
    max_p: Tensor | None, max_t: Tensor | None,
) -> Tensor:
    """Forward mode of clamp.Tensor: the tangent of whichever of self, min, max is the
    result."""
    if min_p is not None and max_p is not None:
        zero = _zero(self_t)
        low = min_t if min_t is not None else zero
        high = max_t if max_t is not None else zero
        inner = pyaten.where(self_p < min_p, low, self_t)
        return pyaten.where(pyaten.logical_or(self_p > max_p, max_p < min_p), high, inner)
    if min_p is not None:
        low = min_t if min_t is not None else _zero(self_t)
        return pyaten.where(self_p >= min_p, self_t, low)
    if max_p is not None:
        high = max_t if max_t is not None else _zero(self_t)
        return pyaten.where(self_p <= max_p, self_t, high)
    return self_t
