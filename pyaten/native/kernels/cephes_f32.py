"""The float32 log and sincos that PyTorch's AVX2 `normal_` uses, step for step in NumPy.

Note: why a polynomial copy of avx_mathfun.
    On a CPU with AVX2, PyTorch's float32 `normal_fill` (contiguous, 16 elements or more)
    computes Box-Muller with `log256_ps` and `sincos256_ps` from `avx_mathfun.h`: Cephes
    polynomials evaluated in float32, compiled with FMA, where the compiler fuses each
    `a * b + c` into one rounding. Their results differ from libm's in the last bit, so to
    print PyTorch's numbers pyaten evaluates the same polynomials with the same roundings:
    every float32 product and sum is a NumPy float32 operation, and a fused one is computed
    exactly in float64 (a float32 product is exact there) and rounded once. `AVX2` says
    whether PyTorch takes this path here (its CPU capability, `ATEN_CPU_CAPABILITY`
    included); without it PyTorch uses libm, and so does pyaten.
"""

from __future__ import annotations

import os

import numpy as np

from pyaten.native.kernels.fma import fma32 as fma

__all__ = ["AVX2", "fma", "log", "sincos"]

_F32 = np.float32


def _has_avx2() -> bool:
    wanted = os.environ.get("ATEN_CPU_CAPABILITY", "").lower()
    if wanted == "default":
        return False
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # NumPy 1.x
        from numpy.core._multiarray_umath import __cpu_features__ as features
    return bool(features.get("AVX2") and features.get("FMA3"))


AVX2 = _has_avx2()


# log: frexp-style split into mantissa in [sqrt(1/2), sqrt(2)) and exponent, then a degree-9
# polynomial in the mantissa minus one
_SQRT_HALF = _F32(0.707106781186547524)
_LOG_POLY = tuple(_F32(c) for c in (
    7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
    -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1,
))
_LN2_LOW = _F32(-2.12194440e-4)
_LN2_HIGH = _F32(0.693359375)
_SMALLEST_NORMAL = np.array(0x00800000, dtype=np.int32).view(_F32)


def log(x: np.ndarray) -> np.ndarray:
    """`log256_ps` on float32 values (NaN for x <= 0)."""
    invalid = x <= 0
    x = np.maximum(x, _SMALLEST_NORMAL)
    bits = x.view(np.int32)
    exponent = ((bits >> 23) - 0x7F).astype(_F32) + _F32(1.0)
    mantissa = ((bits & ~0x7F800000) | 0x3F000000).view(_F32)  # in [0.5, 1)
    small = mantissa < _SQRT_HALF
    exponent -= small.astype(_F32)
    m = (mantissa - _F32(1.0)) + np.where(small, mantissa, _F32(0.0))
    z = m * m
    y = np.full_like(m, _LOG_POLY[0])
    for coefficient in _LOG_POLY[1:]:
        y = fma(y, m, coefficient)
    y *= m
    y = fma(y, z, exponent * _LN2_LOW)
    y = fma(z, _F32(-0.5), y)
    result = fma(exponent, _LN2_HIGH, m + y)
    result[invalid] = np.nan
    return result


_FOUR_OVER_PI = _F32(1.27323954473516)
_PI_PARTS = (_F32(-0.78515625), _F32(-2.4187564849853515625e-4), _F32(-3.77489497744594108e-8))
_COS_POLY = (_F32(2.443315711809948e-5), _F32(-1.388731625493765e-3),
             _F32(4.166664568298827e-2))
_SIN_POLY = (_F32(-1.9515295891e-4), _F32(8.3321608736e-3), _F32(-1.6666654611e-1))


def sincos(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`sincos256_ps` on float32 values: (sin, cos)."""
    negative = np.signbit(x)
    x = np.abs(x)
    octant = (x * _FOUR_OVER_PI).astype(np.int32)
    octant = (octant + 1) & ~1
    y = octant.astype(_F32)
    sin_flip = ((octant & 4) != 0) ^ negative
    cos_flip = ((octant - 2) & 4) == 0
    use_cos_poly = (octant & 2) == 0  # for the sine; the cosine takes the other one
    for part in _PI_PARTS:  # extended-precision reduction by pi/4 steps
        x = fma(y, part, x)
    z = x * x
    c = fma(np.full_like(z, _COS_POLY[0]), z, _COS_POLY[1])
    c = fma(c, z, _COS_POLY[2])
    c *= z
    c = fma(c, z, -(z * _F32(0.5)))
    c += _F32(1.0)
    s = fma(np.full_like(z, _SIN_POLY[0]), z, _SIN_POLY[1])
    s = fma(s, z, _SIN_POLY[2])
    s *= z
    s = fma(s, x, x)
    sin = np.where(use_cos_poly, s, c)
    cos = np.where(use_cos_poly, c, s)
    np.negative(sin, out=sin, where=sin_flip)
    np.negative(cos, out=cos, where=cos_flip)
    return sin, cos
