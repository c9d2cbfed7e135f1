"""The reparameterised gradients of the gamma and Dirichlet samplers:
`_standard_gamma_grad(alpha, x)` = -(d/dalpha cdf(x; alpha)) / pdf(x; alpha) for a standard
gamma sample x, and `_dirichlet_grad(x, alpha, total)` the same for the Beta(alpha,
total - alpha) marginal of a Dirichlet sample, divided by (1 - x).

Both are ATen's piecewise approximations (series for small x, saddle-point expansions for
large parameters, rational fits elsewhere), computed element by element in double and
rounded to the tensor's dtype, except where ATen computes in `scalar_t`: for a float32
tensor the Dirichlet gradient's series branches and its digammas run in float32 (NumPy
float32 scalars, libm's `logf`/`powf`/`tanf` through ctypes, as ATen's `std::log(float)`).
"""

from __future__ import annotations

import ctypes
import functools
import math

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native

_PSI_10 = 2.25175258906672110764  # digamma(10)
_DIGAMMA_ASYMPTOTIC = (8.33333333333333333333E-2, -2.10927960927960927961E-2,
                       7.57575757575757575758E-3, -4.16666666666666666667E-3,
                       3.96825396825396825397E-3, -8.33333333333333333333E-3,
                       8.33333333333333333333E-2)


def _digamma(x: float) -> float:
    """Cephes' digamma: recurrence up to 10, then the asymptotic series."""
    if x == 0:
        return math.inf
    extra = 0.0
    if x < 0:
        if x == math.floor(x):
            return math.inf
        extra = -math.pi / math.tan(math.pi * x)
        x = 1 - x
    result = 0.0
    while x < 10:
        result -= 1 / x
        x += 1
    if x == 10:
        return result + _PSI_10 + extra
    y = 0.0
    if x < 1.0e17:
        z = 1.0 / (x * x)
        poly = 0.0
        for coefficient in _DIGAMMA_ASYMPTOTIC:
            poly = poly * z + coefficient
        y = z * poly
    return result + math.log(x) - (0.5 / x) - y + extra


def _pow(base: float, exponent: float) -> float:
    try:
        return math.pow(base, exponent)
    except (ValueError, OverflowError):
        return math.nan if base < 0 else math.inf
    except ZeroDivisionError:
        return math.inf


def _log(x: float) -> float:
    if x > 0:
        return math.log(x)
    return -math.inf if x == 0 else math.nan


_GAMMA_UV = (
    (0.16009398, -0.094634809, 0.025146376, -0.0030648343,
     1, 0.32668115, 0.10406089, 0.0014179084),
    (0.53487893, 0.1298071, 0.065735949, -0.0015649758,
     0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
    (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
     0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07),
)


def _gamma_grad_one(alpha: float, x: float) -> float:
    if x < 0.8:  # Taylor series of the incomplete gamma function
        numer = 1.0
        denom = alpha
        series1 = numer / denom if denom else math.copysign(math.inf, numer)
        series2 = numer / (denom * denom) if denom else math.inf
        for i in range(1, 6):
            numer *= -x / i
            denom += 1
            series1 += numer / denom
            series2 += numer / (denom * denom)
        pow_x_alpha = _pow(x, alpha)
        gamma_pdf = _pow(x, alpha - 1) * math.exp(-x)
        gamma_cdf = pow_x_alpha * series1
        gamma_cdf_alpha = (_log(x) - _digamma(alpha)) * gamma_cdf - pow_x_alpha * series2
        try:
            result = -gamma_cdf_alpha / gamma_pdf
        except ZeroDivisionError:
            result = math.nan if gamma_cdf_alpha == 0 else -math.copysign(math.inf,
                                                                          gamma_cdf_alpha)
        return 0.0 if result != result else result
    if alpha > 8.0:  # Rice's saddle point expansion
        if 0.9 * alpha <= x <= 1.1 * alpha:
            numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
            numer_2 = (1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha
                       + alpha * (107 + 3600 * x))
            denom = 1244160 * (alpha * alpha) * (alpha * alpha)
            return numer_1 * numer_2 / denom
        denom = math.sqrt(8 * alpha)
        term2 = denom / (alpha - x)
        term3 = _pow(x - alpha - alpha * _log(x / alpha), -1.5)
        term23 = term2 - term3 if x < alpha else term2 + term3
        term1 = (_log(x / alpha) * term23
                 - math.sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x)))
        stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
        return -stirling * (x * term1) / denom
    # a bivariate rational fit in u = log(x / alpha), v = log(alpha)
    u = _log(x / alpha)
    v = _log(alpha)
    coef = [_GAMMA_UV[0][i] + u * (_GAMMA_UV[1][i] + u * _GAMMA_UV[2][i]) for i in range(8)]
    p = coef[0] + v * (coef[1] + v * (coef[2] + v * coef[3]))
    q = coef[4] + v * (coef[5] + v * (coef[6] + v * coef[7]))
    return math.exp(p / q)


def _beta_grad_alpha_small(x: float, alpha: float, beta: float) -> float:
    factor = _digamma(alpha) - _digamma(alpha + beta) - _log(x)
    numer = 1.0
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer *= (i - beta) * x / i
        denom = alpha + i
        series += numer / denom * (factor + 1 / denom)
    result = x * _pow(1 - x, -beta) * series
    return 0.0 if result != result else result


def _beta_grad_beta_small(x: float, alpha: float, beta: float) -> float:
    factor = _digamma(alpha + beta) - _digamma(beta)
    numer, betas, dbetas, series = 1.0, 1.0, 0.0, factor / alpha
    for i in range(1, 9):
        numer *= -x / i
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series += numer / (alpha + i) * (dbetas + factor * betas)
    result = -_pow(1 - x, 1 - beta) * series
    return 0.0 if result != result else result


def _beta_grad_alpha_mid(x: float, alpha: float, beta: float) -> float:
    total = alpha + beta
    mean = alpha / total
    std = math.sqrt(alpha * beta / (total + 1)) / total
    if mean - 0.1 * std <= x <= mean + 0.1 * std:  # around the singularity at the mean
        poly = (47 * x * (beta * beta) * (beta * beta) + alpha * (
            (43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta + alpha * (
                3 * (59 + 180 * beta - 90 * x) * (beta * beta) + alpha * (
                    (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (
                        8 * (1 - x) * (135 * beta - 11))))))
        prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
        prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
        return prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / math.sqrt(2 * alpha * beta / total)
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha))
                * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta)
    axbx = alpha * (x - 1) + beta * x
    term1_den = math.sqrt(2 * alpha / beta) * _pow(total, 1.5) * axbx * axbx
    term1 = term1_num / term1_den
    term2 = 0.5 * _log(alpha / (total * x))
    term3 = math.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4_base = (beta * _log(beta / (total * (1 - x)))
                  + alpha * _log(alpha / (total * x)))
    term4 = _pow(term4_base, -1.5)
    term1234 = term1 + term2 * (term3 + (term4 if x < mean else -term4))
    return stirling * prefactor * term1234


# c[numerator | denominator][power of u][power of a][power of b]
_DIRICHLET_C = (
    (((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
      (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
      (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
     ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
      (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
      (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
     ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
      (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
      (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))),
    (((1, -0.02924021934, -0.04438342661, 0.007285809825),
      (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
      (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
     ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
      (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
      (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
     ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
      (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
      (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))),
)


def _dirichlet_grad_one(x: float, alpha: float, total: float) -> float:
    beta = total - alpha
    boundary = total * x * (1 - x)
    if x <= 0.5 and boundary < 2.5:
        return _beta_grad_alpha_small(x, alpha, beta)
    if x >= 0.5 and boundary < 0.75:
        return -_beta_grad_beta_small(1 - x, beta, alpha)
    if alpha > 6 and beta > 6:
        return _beta_grad_alpha_mid(x, alpha, beta)
    return _rational_correction(x, alpha, total, x * (_digamma(total) - _digamma(alpha)) / beta)


def _rational_correction(x: float, alpha: float, total: float, approx: float) -> float:
    """The analytic approximation `approx` times a rational fit in log x, log(alpha / x),
    log(total) (the fallback region)."""
    u = _log(x)
    a = _log(alpha) - u
    b = _log(total) - a
    pow_u = (1.0, u, u * u)
    pow_a = (1.0, a, a * a)
    p = 0.0
    q = 0.0
    for i in range(3):
        for j in range(3):
            ua = pow_u[i] * pow_a[j]
            cp = _DIRICHLET_C[0][i][j]
            cq = _DIRICHLET_C[1][i][j]
            p += ua * (cp[0] + b * (cp[1] + b * (cp[2] + b * cp[3])))
            q += ua * (cq[0] + b * (cq[1] + b * (cq[2] + b * cq[3])))
    return p / q * approx


# --- float32: ATen's scalar_t steps -----------------------------------------------------------

_F = np.float32
_PI_F = _F(math.pi)


@functools.cache
def _libm() -> ctypes.CDLL:
    # Found on first use: find_library runs `ldconfig -p` (~6 ms) and ctypes.util costs
    # another ~10 ms of `import pyaten` (docs/performance.md, "Import").
    import ctypes.util

    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    for name, nargs in (("logf", 1), ("tanf", 1), ("powf", 2)):
        getattr(libm, name).restype = ctypes.c_float
        getattr(libm, name).argtypes = [ctypes.c_float] * nargs
    return libm


def _logf(x):
    return _F(_libm().logf(float(x)))


def _powf(a, b):
    return _F(_libm().powf(float(a), float(b)))


def _digamma_f(x) -> np.float32:
    """`digamma_one<float, double>`: x steps in float, the sum in double."""
    x = _F(x)
    if x == 0:
        return _F(math.inf)
    extra = 0.0
    if x < 0:
        if x == _F(math.floor(x)):
            return _F(math.inf)
        extra = float(-_PI_F / _F(_libm().tanf(float(_PI_F * x))))
        x = _F(1) - x
    result = 0.0
    while x < 10:
        result -= float(_F(1) / x)
        x = x + _F(1)
    if x == 10:
        return _F(result + _PSI_10 + extra)
    y = 0.0
    if x < _F(1e17):
        z = 1.0 / float(x * x)
        poly = 0.0
        for coefficient in _DIGAMMA_ASYMPTOTIC:
            poly = poly * z + coefficient
        y = z * poly
    return _F(result + float(_logf(x)) - float(_F(0.5) / x) - y + extra)


def _beta_grad_alpha_small_f(x, alpha, beta):
    factor = _digamma_f(alpha) - _digamma_f(alpha + beta) - _logf(x)
    numer = _F(1)
    series = numer / alpha * (factor + _F(1) / alpha)
    for i in range(1, 11):
        ci = _F(i)
        numer = numer * ((ci - beta) * x / ci)
        denom = alpha + ci
        series = series + numer / denom * (factor + _F(1) / denom)
    result = x * _powf(_F(1) - x, -beta) * series
    return _F(0) if result != result else result


def _beta_grad_beta_small_f(x, alpha, beta):
    factor = _digamma_f(alpha + beta) - _digamma_f(beta)
    numer, betas, dbetas, series = _F(1), _F(1), _F(0), factor / alpha
    for i in range(1, 9):
        ci = _F(i)
        numer = numer * (-x / ci)
        dbetas = dbetas * (beta - ci) + betas
        betas = betas * (beta - ci)
        series = series + numer / (alpha + ci) * (dbetas + factor * betas)
    result = -_powf(_F(1) - x, _F(1) - beta) * series
    return _F(0) if result != result else result


def _dirichlet_grad_one_f(x: float, alpha: float, total: float) -> float:
    """`dirichlet_grad_one<float, double>`."""
    xf, af, tf = _F(x), _F(alpha), _F(total)
    beta = tf - af
    boundary = tf * xf * (_F(1) - xf)
    with np.errstate(all="ignore"):
        if xf <= _F(0.5) and boundary < _F(2.5):
            return float(_beta_grad_alpha_small_f(xf, af, beta))
        if xf >= _F(0.5) and boundary < _F(0.75):
            return float(-_beta_grad_beta_small_f(_F(1) - xf, beta, af))
        if af > 6 and beta > 6:
            return _beta_grad_alpha_mid(x, alpha, total - alpha)
        digammas = float(_digamma_f(tf) - _digamma_f(af))
    return _rational_correction(x, alpha, total, x * digammas / (total - alpha))


def _elementwise(kernel: str, fn, *tensors: Tensor) -> Tensor:
    d = tensors[0]._dtype
    if d not in (dt.float32, dt.float64):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{d.scalar_name}\'')
    for t in tensors[1:]:
        if t._dtype != d:
            raise RuntimeError(f"Found dtype {t._dtype.scalar_name} but expected "
                               f"{d.scalar_name}")
    arrays = np.broadcast_arrays(*(t._numpy() for t in tensors))
    shape = arrays[0].shape
    flat = [np.ascontiguousarray(a).reshape(-1).astype(np.float64).tolist() for a in arrays]
    with np.errstate(all="ignore"):
        values = np.asarray([fn(*row) for row in zip(*flat)], dtype=np.float64)
    out = _aten().empty.memory_format(list(shape), d, None, tensors[0]._device, None, None)
    with np.errstate(all="ignore"):
        out._numpy()[...] = values.reshape(shape)
    return out


@native
def _standard_gamma_grad_cpu(self: Tensor, output: Tensor) -> Tensor:
    return _elementwise("_standard_gamma_grad_cpu", _gamma_grad_one, self, output)


@native
def _dirichlet_grad_cpu(x: Tensor, alpha: Tensor, total: Tensor) -> Tensor:
    one = _dirichlet_grad_one_f if x._dtype == dt.float32 else _dirichlet_grad_one
    return _elementwise("_dirichlet_grad_cpu", one, x, alpha, total)
