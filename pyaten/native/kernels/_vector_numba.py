"""The Numba loops behind pyaten/native/kernels/vector_loops.py (see Note: vectorised float32
exp there). Imported only when Numba is installed and the compiled loops are on."""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

# error_model="numpy": a division by zero gives inf/NaN instead of a branch that raises,
# which is what lets LLVM vectorise the loops; "contract": a * b + c may be one FMA.
jit = numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
# For sums only: reassociation lets LLVM keep several vector accumulators.
jit_sum = numba.njit(cache=True, nogil=True, error_model="numpy",
                     fastmath={"contract", "reassoc"})

_F32 = np.float32
_ONE, _HALF = _F32(1.0), _F32(0.5)
_LOG2E = _F32(1.44269504088896341)
_LN2_HIGH, _LN2_LOW = _F32(0.693359375), _F32(-2.12194440e-4)
# Cephes' expf polynomial on [-ln2/2, ln2/2]
_P0, _P1, _P2 = _F32(1.9875691500e-4), _F32(1.3981999507e-3), _F32(8.3334519073e-3)
_P3, _P4, _P5 = _F32(4.1665795894e-2), _F32(1.6666665459e-1), _F32(5.0000001201e-1)
_ROUNDER = _F32(12582912.0)  # 1.5 * 2**23: adding and subtracting it rounds to an integer
_HIGH = _F32(89.0)  # exp is inf from 88.73 on
_LOW = _F32(-104.0)  # and 0 below -103.97


@intrinsic
def _bits_to_f32(typingctx, bits):
    """The float32 whose bits are the int32 `bits` (a register move, no memory)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


@numba.njit(inline="always", error_model="numpy", fastmath={"contract"})
def expf(x):
    """exp of a float32, within one ulp, written so that a loop of it vectorises (no libm
    call, no branch): x = n ln2 + r, exp(r) by Cephes' polynomial, 2^n from exponent bits
    in two halves (so that n = 128 overflows to inf and n < -126 gives subnormals)."""
    x = _LOW if x < _LOW else x
    x = _HIGH if x > _HIGH else x  # (NaN passes both tests and stays NaN)
    n = (x * _LOG2E + _ROUNDER) - _ROUNDER
    r = x - n * _LN2_HIGH - n * _LN2_LOW
    p = ((((_P0 * r + _P1) * r + _P2) * r + _P3) * r + _P4) * r + _P5
    p = p * (r * r) + r + _ONE
    k = np.int32(n)
    half = k >> np.int32(1)
    scale_a = _bits_to_f32((half + np.int32(127)) << np.int32(23))
    scale_b = _bits_to_f32((k - half + np.int32(127)) << np.int32(23))
    return (p * scale_a) * scale_b


@jit
def exp_f32(x, out):
    """out = exp(x), 1-d float32."""
    for i in range(x.size):
        out[i] = expf(x[i])


@jit
def sigmoid_f32(x, out):
    """out = 1 / (1 + exp(-x)), PyTorch's formula, 1-d float32."""
    for i in range(x.size):
        out[i] = _ONE / (_ONE + expf(-x[i]))


@jit
def silu_f32(x, out):
    """out = x / (1 + exp(-x)), 1-d float32."""
    for i in range(x.size):
        v = x[i]
        out[i] = v / (_ONE + expf(-v))


@jit
def silu_backward_f32(grad, x, out):
    """out = grad * s * (1 + x * (1 - s)), s = sigmoid(x), 1-d float32."""
    for i in range(x.size):
        v = x[i]
        s = _ONE / (_ONE + expf(-v))
        out[i] = grad[i] * s * (_ONE + v * (_ONE - s))


@jit
def relu(x, out):
    """out = max(x, 0) as PyTorch's clamp_min: -0.0 and NaN kept (1-d)."""
    zero = x.dtype.type(0)
    for i in range(x.size):
        v = x[i]
        out[i] = zero if v < zero else v


@jit
def threshold_backward(grad, x, threshold, out):
    """out = 0 where x <= threshold, else grad (a NaN x passes grad), 1-d."""
    zero = grad.dtype.type(0)
    for i in range(x.size):
        out[i] = zero if x[i] <= threshold else grad[i]


# Abramowitz and Stegun 7.1.26 (erf to 1.5e-7): the polynomial of PyTorch's vectorised
# float32 gelu, as the NumPy path in kernels/activation.py evaluates it
_AS_P = _F32(0.3275911)
_AS_1, _AS_2, _AS_3 = _F32(1.061405429), _F32(-1.453152027), _F32(1.421413741)
_AS_4, _AS_5 = _F32(-0.284496736), _F32(0.254829592)
_SQRT_HALF = _F32(0.7071067811865476)
_INV_SQRT_2PI = _F32(0.3989422804014327)


@numba.njit(inline="always", error_model="numpy", fastmath={"contract"})
def _gelu_cdf(v):
    """(0.5 (1 + erf(v / sqrt 2)), exp(-v^2 / 2)) of a float32."""
    z = v * _SQRT_HALF
    t = _ONE / (_AS_P * abs(z) + _ONE)
    r = ((((_AS_1 * t + _AS_2) * t + _AS_3) * t + _AS_4) * t + _AS_5) * t
    e = expf(-(z * z))
    erf = math.copysign(_ONE - r * e, z)
    return _HALF * (_ONE + erf), e


@jit
def gelu_f32(x, out):
    """out = x * 0.5 * (1 + erf(x / sqrt 2)), 1-d float32."""
    for i in range(x.size):
        v = x[i]
        cdf, _ = _gelu_cdf(v)
        out[i] = v * cdf


@jit
def gelu_backward_f32(grad, x, out):
    """out = grad * (cdf(x) + x * pdf(x)), 1-d float32."""
    for i in range(x.size):
        v = x[i]
        cdf, e = _gelu_cdf(v)
        out[i] = grad[i] * (cdf + v * (e * _INV_SQRT_2PI))


# Cephes' erff polynomial for |x| < 1: erf(x) = x T(x^2), to 1e-9 in exact arithmetic
_T0, _T1, _T2 = _F32(7.853861353153693e-5), _F32(-8.010193625184903e-4), _F32(
    5.188327685732524e-3)
_T3, _T4, _T5 = _F32(-2.685381193529856e-2), _F32(1.128358514861418e-1), _F32(
    -3.761262582423300e-1)
_T6 = _F32(1.128379165726710)


@jit
def erf_f32(x, out):
    """out = erf(x), 1-d float32: Cephes' odd polynomial below 1 in magnitude (within an ulp
    or two), 1 - A&S 7.1.26's erfc above (within 1.5e-7 relative: 2.5 ulp at most)."""
    for i in range(x.size):
        v = x[i]
        a = abs(v)
        z = v * v
        inner = v * ((((((_T0 * z + _T1) * z + _T2) * z + _T3) * z + _T4) * z + _T5) * z + _T6)
        t = _ONE / (_AS_P * a + _ONE)
        r = ((((_AS_1 * t + _AS_2) * t + _AS_3) * t + _AS_4) * t + _AS_5) * t
        outer = math.copysign(_ONE - r * expf(-z), v)
        out[i] = inner if a < _ONE else outer


@jit_sum
def _sum_f32(a):
    total = _F32(0.0)
    for i in range(a.size):
        total += a[i]
    return total


@jit_sum
def _max_f32(a):
    """The row's max; NaN if any element is NaN."""
    top = a[0]
    nan = False
    for i in range(a.size):
        v = a[i]
        top = v if v > top else top
        nan |= v != v
    return np.float32(np.nan) if nan else top


@jit
def _shifted_exp(a, shift, out):
    for i in range(a.size):
        out[i] = expf(a[i] - shift)


@jit
def _scale(a, factor):
    for i in range(a.size):
        a[i] = a[i] * factor


@jit
def _subtract(a, top, log_total, out):
    for i in range(a.size):
        out[i] = (a[i] - top) - log_total  # (in this order: x - max is exact)


@jit
def softmax_rows_f32(x, out, log):
    """softmax (or log_softmax) of each row of x (m, n) float32 into out: the row's max
    subtracted (NaN propagates), the exponentials summed in float32 as PyTorch does."""
    for i in range(x.shape[0]):
        row, target = x[i], out[i]
        top = _max_f32(row)
        _shifted_exp(row, top, target)  # (kept: LLVM does not vectorise expf into a sum)
        total = _sum_f32(target)
        if log:
            _subtract(row, top, np.float32(math.log(total)), target)
        else:
            _scale(target, _ONE / total)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def max_pool2d_backward(grad, indices, grad_input):
    """grad_input (B, H*W) = 0, then += grad (B, L) at indices (B, L); False (nothing
    written) when an index is outside the plane."""
    plane = grad_input.shape[1]
    for c in range(indices.shape[0]):
        for k in range(indices.shape[1]):
            j = indices[c, k]
            if j < 0 or j >= plane:
                return False
    grad_input[...] = 0
    for c in range(grad.shape[0]):
        for k in range(grad.shape[1]):
            grad_input[c, indices[c, k]] += grad[c, k]
    return True


@numba.njit(cache=True, nogil=True, error_model="numpy")
def adam_step(param, grad, exp_avg, exp_avg_sq, weight, beta2, rest, step_size, bias2_sqrt,
              eps):
    """One Adam update of 1-d arrays in one pass, each step as PyTorch's single-tensor Adam
    writes it (the scalars in the arrays' dtype; weight = 1 - beta1, rest = 1 - beta2):
    lerp_, mul_ and addcmul_, sqrt, div_ and add_, addcdiv_."""
    for i in range(param.size):
        g = grad[i]
        m = exp_avg[i]
        m = m + weight * (g - m)
        v = exp_avg_sq[i] * beta2
        v = v + rest * g * g
        exp_avg[i] = m
        exp_avg_sq[i] = v
        denom = math.sqrt(v) / bias2_sqrt + eps
        param[i] = param[i] + step_size * m / denom


@numba.njit(cache=True, nogil=True, error_model="numpy")
def col2im_last_2d(cols, sh, sw, dh, dw, gx):
    """gx (N, Hp, Wp, C) += each tap of cols (N, OH, OW, KH, KW, C) at its window position
    (the padded image; every position in bounds): one pass instead of one strided NumPy add
    per tap, whose inner runs are only C long."""
    n, oh, ow, kh, kw, c = cols.shape
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for a in range(kh):
                    y = i * sh + a * dh
                    for e in range(kw):
                        z = j * sw + e * dw
                        src = cols[b, i, j, a, e]
                        dst = gx[b, y, z]
                        for k in range(c):
                            dst[k] += src[k]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def max_pool_2x2(x, out, indices):
    """ATen's max_pool2d with 2x2 windows, stride 2, no padding or dilation, every window
    inside x (B, H, W): out and indices (B, OH, OW). The four taps in the window's order, a
    larger value or a NaN taking the place (the last NaN wins), as ATen's loop. (The fixed
    trip count unrolls; a loop over runtime window sizes measured slower than NumPy.)"""
    b, h, w = x.shape
    oh, ow = out.shape[1], out.shape[2]
    for c in range(b):
        plane = x[c]
        for i in range(oh):
            top = plane[2 * i]
            below = plane[2 * i + 1]
            for j in range(ow):
                z = 2 * j
                best = top[z]  # (ATen's start, -inf at the first tap, gives this too)
                where = 2 * i * w + z
                v = top[z + 1]
                take = (v > best) | (v != v)
                best = v if take else best
                where = where + 1 if take else where
                v = below[z]
                take = (v > best) | (v != v)
                best = v if take else best
                where = (2 * i + 1) * w + z if take else where
                v = below[z + 1]
                take = (v > best) | (v != v)
                best = v if take else best
                where = (2 * i + 1) * w + z + 1 if take else where
                out[c, i, j] = best
                indices[c, i, j] = where
