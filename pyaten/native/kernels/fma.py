"""Fused multiply-add on arrays: `a * b + c` rounded once, as the FMA instructions that
PyTorch's compiled CPU kernels use where the compiler contracts a product and a sum.

float32: the product of two floats is exact in float64, so one float64 sum rounded to
float32 gives the fused result (but for a double rounding once in about 2**29 sums).
float64: Dekker's split gives the product's rounding error exactly, Knuth's two-sum the sum's;
adding the errors back gives the fused result (off only when the error terms themselves round
across a halfway point, far rarer than a sampler's 10**4 draws can show).
"""

from __future__ import annotations

import numpy as np

__all__ = ["fma32", "fma64"]

_SPLITTER = 134217729.0  # 2**27 + 1: splits a double into two 26-bit halves


def fma32(a, b, c) -> np.ndarray:
    exact = np.multiply(a, b, dtype=np.float64)
    exact += c
    return exact.astype(np.float32)


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = _SPLITTER * x
    high = t - (t - x)
    return high, x - high


def fma64(a, b, c) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    product = a * b
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(b)
    product_err = ((a_hi * b_hi - product) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    total = product + c
    back = total - product
    sum_err = (product - (total - back)) + (c - back)
    with np.errstate(invalid="ignore", over="ignore"):
        fused = total + (sum_err + product_err)
    # infinities and NaN: the plain expression already has the right special value
    return np.where(np.isfinite(fused), fused, product + c)
