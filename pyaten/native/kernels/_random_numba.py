"""The Numba loops behind pyaten/native/kernels/random_compiled.py (see Note: compiled random
loops there). Imported only when Numba is installed and the compiled loops are on; module
level, so Numba caches them between processes."""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.core import types
from numba.extending import intrinsic

# float32 constants (Numba freezes module globals with their NumPy types)
_F32 = np.float32
_ZERO, _ONE, _HALF, _MINUS_TWO = _F32(0.0), _F32(1.0), _F32(0.5), _F32(-2.0)
_UNIT = _F32(2.0**-24)
_TWO_PI = _F32(2.0 * math.pi)
_SQRT_HALF = _F32(0.707106781186547524)
_L0, _L1, _L2 = _F32(7.0376836292e-2), _F32(-1.1514610310e-1), _F32(1.1676998740e-1)
_L3, _L4, _L5 = _F32(-1.2420140846e-1), _F32(1.4249322787e-1), _F32(-1.6668057665e-1)
_L6, _L7, _L8 = _F32(2.0000714765e-1), _F32(-2.4999993993e-1), _F32(3.3333331174e-1)
_LN2_LOW, _LN2_HIGH = _F32(-2.12194440e-4), _F32(0.693359375)
_FOUR_OVER_PI = _F32(1.27323954473516)
_DP1, _DP2, _DP3 = _F32(-0.78515625), _F32(-2.4187564849853515625e-4), _F32(
    -3.77489497744594108e-8)
_C0, _C1, _C2 = _F32(2.443315711809948e-5), _F32(-1.388731625493765e-3), _F32(
    4.166664568298827e-2)
_S0, _S1, _S2 = _F32(-1.9515295891e-4), _F32(8.3321608736e-3), _F32(-1.6666654611e-1)
_UPPER, _LOWER, _MATRIX_A = np.uint32(0x80000000), np.uint32(0x7FFFFFFF), np.uint32(0x9908B0DF)



jit = numba.njit(cache=True, nogil=True)


@intrinsic
def fma_f32(typingctx, a, b, c):
    """LLVM's fused multiply-add on three float32 values (one rounding)."""

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return types.float32(types.float32, types.float32, types.float32), codegen


@jit
def fma(a, b, c):
    return fma_f32(_F32(a), _F32(b), _F32(c))


@jit
def twist(key):
    for k in range(624):
        y = (key[k] & _UPPER) | (key[(k + 1) % 624] & _LOWER)
        mixed = key[(k + 397) % 624] ^ (y >> np.uint32(1))
        key[k] = mixed ^ _MATRIX_A if y & np.uint32(1) else mixed


@jit
def words(key, pos, out):
    """Fill `out` (uint32) with the next tempered words; returns the new position."""
    done = 0
    count = out.shape[0]
    while done < count:
        if pos >= 624:
            twist(key)
            pos = 0
        take = min(624 - pos, count - done)
        for k in range(take):
            y = key[pos + k]
            y ^= y >> np.uint32(11)
            y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
            y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
            y ^= y >> np.uint32(18)
            out[done + k] = y
        pos += take
        done += take
    return pos


@jit
def uniforms(key, pos, out, start, count):
    """out[start:start + count] = 24-bit float32 uniforms; returns the new position."""
    raw = np.empty(count, dtype=np.uint32)
    pos = words(key, pos, raw)
    for i in range(count):
        out[start + i] = _F32(raw[i] & np.uint32(0xFFFFFF)) * _UNIT
    return pos


@jit
def log(x, exponent, mantissa_bits, result):
    """`log256_ps` of positive normal floats (cephes_f32.log); the middle two arrays are
    scratch of x's length."""
    bits = x.view(np.int32)
    for i in range(x.shape[0]):
        exponent[i] = _F32((bits[i] >> 23) - 0x7F) + _ONE
        mantissa_bits[i] = (bits[i] & np.int32(-2139095041)) | np.int32(0x3F000000)
    mantissa = mantissa_bits.view(_F32)
    for i in range(x.shape[0]):
        m = mantissa[i]
        small = m < _SQRT_HALF
        e = exponent[i] - (_ONE if small else _ZERO)
        m = (m - _ONE) + (m if small else _ZERO)
        z = m * m
        y = fma(_L0, m, _L1)
        y = fma(y, m, _L2)
        y = fma(y, m, _L3)
        y = fma(y, m, _L4)
        y = fma(y, m, _L5)
        y = fma(y, m, _L6)
        y = fma(y, m, _L7)
        y = fma(y, m, _L8)
        y = y * m
        y = fma(y, z, e * _LN2_LOW)
        y = fma(z, -_HALF, y)
        result[i] = fma(e, _LN2_HIGH, m + y)


@jit
def sincos(x, sin_out, cos_out):
    """`sincos256_ps` of non-negative floats (cephes_f32.sincos)."""
    for i in range(x.shape[0]):
        v = x[i]
        octant = np.int32(v * _FOUR_OVER_PI)
        octant = (octant + 1) & -2
        y = _F32(octant)
        v = fma(y, _DP1, v)
        v = fma(y, _DP2, v)
        v = fma(y, _DP3, v)
        z = v * v
        c = fma(_C0, z, _C1)
        c = fma(c, z, _C2)
        c = c * z
        c = fma(c, z, -(z * _HALF))
        c = c + _ONE
        s = fma(_S0, z, _S1)
        s = fma(s, z, _S2)
        s = s * z
        s = fma(s, v, v)
        use_cos_poly = (octant & 2) == 0
        sin = s if use_cos_poly else c
        cos = c if use_cos_poly else s
        sin_out[i] = -sin if (octant & 4) != 0 else sin
        cos_out[i] = -cos if ((octant - 2) & 4) == 0 else cos


@jit
def box_muller(raw, count, out, start, scratch, mean, std):
    """`NormalFill16` with the AVX2 polynomials: `count` raw words (whole rows of 16)
    become uniforms and then normals in out[start:start + count]."""
    pairs = count // 2
    u1, theta, logs = scratch[0, :pairs], scratch[1, :pairs], scratch[2, :pairs]
    sin, cos, exponent = scratch[3, :pairs], scratch[4, :pairs], scratch[5, :pairs]
    mantissa_bits = scratch[6, :pairs].view(np.int32)
    for b in range(count // 16):
        for j in range(8):
            u1[b * 8 + j] = _ONE - _F32(raw[b * 16 + j] & np.uint32(0xFFFFFF)) * _UNIT
            uniform = _F32(raw[b * 16 + 8 + j] & np.uint32(0xFFFFFF)) * _UNIT
            theta[b * 8 + j] = _TWO_PI * uniform
    log(u1, exponent, mantissa_bits, logs)
    sincos(theta, sin, cos)
    for b in range(count // 16):
        for j in range(8):
            k = b * 8 + j
            radius = np.sqrt(_MINUS_TWO * logs[k])
            out[start + b * 16 + j] = fma(radius * cos[k], std, mean)
            out[start + b * 16 + 8 + j] = fma(radius * sin[k], std, mean)


@jit
def normal_fill(key, pos, out, draw_all, mean, std):
    """PyTorch's float32 `normal_fill` into `out`, a cache-sized chunk of rows at a time
    (each row's transform needs only its own 16 draws); returns the new position."""
    count = out.shape[0]
    whole = count - count % 16
    chunk = 4096
    raw = np.empty(chunk, dtype=np.uint32)
    scratch = np.empty((7, chunk // 2), dtype=_F32)
    start = 0
    while start < whole:
        n = min(chunk, whole - start)
        pos = words(key, pos, raw[:n])
        box_muller(raw, n, out, start, scratch, mean, std)
        start += n
    if whole != count:
        if draw_all:  # float draws the partial row's uniforms too, then overwrites them
            pos = words(key, pos, raw[: count - whole])
        pos = words(key, pos, raw[:16])
        box_muller(raw, 16, out, count - 16, scratch, mean, std)
    return pos


@jit
def integers32(key, pos, out, span, base):
    """out[i] = word % span + base (int64), one 32-bit word each; returns the new position.
    The remainder comes from a float64 quotient corrected by one either way (a word and the
    span fit in 53 bits, so the estimate is off by at most one): it vectorises, a division
    does not."""
    chunk = 4096
    raw = np.empty(chunk, dtype=np.uint32)
    done = 0
    count = out.shape[0]
    inverse = 1.0 / span
    while done < count:
        n = min(chunk, count - done)
        pos = words(key, pos, raw[:n])
        for i in range(n):
            word = np.int64(raw[i])
            rest = word - np.int64(np.float64(word) * inverse) * span
            if rest < 0:
                rest += span
            elif rest >= span:
                rest -= span
            out[done + i] = rest + base
        done += n
    return pos


@jit
def permutation32(key, pos, out):
    """randperm's small-n shuffle into `out` (int64, length n < 2**32 / 20): slot i swapped
    with i + word % (n - i), one 32-bit word per slot but the last; returns the new
    position."""
    n = out.shape[0]
    for i in range(n):
        out[i] = i
    chunk = 4096
    raw = np.empty(chunk, dtype=np.uint32)
    done = 0
    while done < n - 1:
        m = min(chunk, n - 1 - done)
        pos = words(key, pos, raw[:m])
        for k in range(m):
            i = done + k
            j = i + np.int64(raw[k] % np.uint32(n - i))
            kept = out[i]
            out[i] = out[j]
            out[j] = kept
        done += m
    return pos
