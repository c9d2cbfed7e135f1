"""Numba loops for the rejection samplers of pyaten/native/kernels/random_gamma.py: the same
arithmetic as its Python loops (see Note: PyTorch's rejection samplers, element by element,
there), compiled, drawing from the generator's 624 state words in place
(`Generator.draw_with`). Imported only when Numba is installed and compiled loops are on."""

from __future__ import annotations

import math

import numba
import numpy as np

from pyaten.native.kernels._random_numba import twist

_F32 = np.float32
_MASK53 = np.uint64((1 << 53) - 1)
_THIRD_F = float(_F32(1.0) / _F32(3.0))
_C0331_F = float(_F32(0.0331))
_TAIL = np.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287])

# IEEE division (inf, nan) as the C++ loops get, not ZeroDivisionError
jit = numba.njit(cache=True, nogil=True, error_model="numpy")


@jit
def _word(key, st):
    pos = st[0]
    if pos >= 624:
        twist(key)
        pos = 0
    y = key[pos]
    y ^= y >> np.uint32(11)
    y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
    y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
    y ^= y >> np.uint32(18)
    st[0] = pos + 1
    return y


@jit
def _uniform(key, st):
    """A 53-bit double in [0, 1) from a 64-bit draw (the first word high)."""
    high = np.uint64(_word(key, st))
    low = np.uint64(_word(key, st))
    return float(((high << np.uint64(32)) | low) & _MASK53) * 2.0**-53


@jit
def _normal(key, st, cache):
    """normal_distribution<double>: the cached sine half first, else a Box-Muller pair."""
    if cache[0] != 0.0:
        cache[0] = 0.0
        return cache[1]
    u1 = _uniform(key, st)
    u2 = _uniform(key, st)
    radius = math.sqrt(-2.0 * math.log1p(-u2))
    theta = 2.0 * math.pi * u1
    cache[0] = 1.0
    cache[1] = radius * math.sin(theta)
    return radius * math.cos(theta)


@jit
def _gamma_one(alpha, single, key, st, cache):
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        if single:
            exponent = float(_F32(1.0) / _F32(alpha))
        else:
            exponent = 1.0 / alpha
        scale *= (1.0 - _uniform(key, st)) ** exponent
        alpha = float(_F32(alpha) + _F32(1.0)) if single else alpha + 1.0
    d = float(_F32(alpha) - _F32(_THIRD_F)) if single else alpha - _THIRD_F
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            x = _normal(key, st, cache)
            y = 1.0 + c * x
            if not y <= 0:
                break
        v = y * y * y
        u = 1.0 - _uniform(key, st)
        xx = x * x
        if u < 1.0 - _C0331_F * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


@jit
def gammas(key, pos, alphas, single, tiny, cache, out):
    """out[i] = max(tiny, gamma(alphas[i])) (rounded to float32 first when `single`)."""
    st = np.empty(1, dtype=np.int64)
    st[0] = pos
    for i in range(alphas.shape[0]):
        sample = _gamma_one(alphas[i], single, key, st, cache)
        if single:
            sample = float(_F32(sample))
        out[i] = sample if tiny < sample else tiny
    return st[0]


@jit
def _stirling_tail(k):
    if k <= 9:
        return _TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


@jit
def _cast(x, single):
    return float(_F32(x)) if single else x


@jit
def _inversion(count, prob, single, key, st):
    logprob = _cast(math.log1p(-prob), single)
    geom_sum = 0.0
    num_geom = 0.0
    while True:
        geom = math.ceil(math.log(_uniform(key, st)) / logprob)
        geom_sum += geom
        if geom_sum > count:
            return num_geom
        num_geom = _cast(num_geom + 1, single)


@jit
def _btrs(count, prob, single, key, st):
    stddev = _cast(math.sqrt(_cast(_cast(count * prob, single) * _cast(1 - prob, single),
                                   single)), single)
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = _cast(count * prob, single) + 0.5
    v_r = 0.92 - 4.2 / b
    r = _cast(prob / _cast(1 - prob, single), single)
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(_cast(_cast(count + 1, single) * prob, single))
    while True:
        u = _uniform(key, st) - 0.5
        v = _uniform(key, st)
        us = 0.5 - abs(u)
        k = _cast(math.floor((2 * a / us + b) * u + c), single)
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = math.log(v * alpha / (a / (us * us) + b))
        upperbound = ((m + 0.5) * math.log((m + 1) / (r * (count - m + 1)))
                      + (count + 1) * math.log((count - m + 1) / (count - k + 1))
                      + (k + 0.5) * math.log(r * (count - k + 1) / (k + 1))
                      + _stirling_tail(m) + _stirling_tail(count - m)
                      - _stirling_tail(k) - _stirling_tail(count - k))
        if v <= upperbound:
            return k


@jit
def binomials(key, pos, counts, probs, single, out):
    st = np.empty(1, dtype=np.int64)
    st[0] = pos
    for i in range(counts.shape[0]):
        count = counts[i]
        prob = probs[i]
        if count <= 0.0 or prob <= 0.0:
            out[i] = 0.0
        elif prob >= 1.0:
            out[i] = count
        elif prob <= 0.5:
            if _cast(count * prob, single) >= 10.0:
                out[i] = _btrs(count, prob, single, key, st)
            else:
                out[i] = _inversion(count, prob, single, key, st)
        elif prob > 0.5:
            qprob = _cast(1.0 - prob, single)
            if _cast(count * qprob, single) >= 10.0:
                out[i] = _cast(count - _btrs(count, qprob, single, key, st), single)
            else:
                out[i] = _cast(count - _inversion(count, qprob, single, key, st), single)
        else:
            out[i] = math.nan
    return st[0]
