"""The samplers behind pyaten.distributions: `_standard_gamma`, `_sample_dirichlet` and
`binomial`, drawing PyTorch's numbers from a seeded generator.

Note: PyTorch's rejection samplers, element by element.
    ATen runs these as serial kernels: for each element, in the output's memory order, a
    rejection loop draws 53-bit uniforms (`uniform_real_distribution<double>`) and, for the
    gamma, standard normals (`normal_distribution<double>`: Box-Muller on two uniforms, the
    sine half cached in the generator for the next normal). The number of draws per element
    is not known ahead, so the loops here run in Python on a `_Draws` stream that fetches
    uniforms in chunks and, when closed, leaves the generator exactly as far advanced as the
    loop consumed (and its normal cache as the loop left it).
    The arithmetic follows ATen's types: a float32 tensor runs the parts ATen computes in
    `scalar_t` in float32 (`alpha += 1.0f`, `alpha - 1.0f / 3.0f`, `count * prob`), the rest
    in double; `1.0f / 3.0f` is a float constant even for a double tensor.
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.generator import Generator, resolve_generator
from pyaten.core.tensor import Tensor
from pyaten.native import compiled
from pyaten.native.kernels.random_draws import UniformStream
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native

_F32 = np.float32
_THIRD_F = float(_F32(1.0) / _F32(3.0))  # ATen's `1.0f / 3.0f`
_C0331_F = float(_F32(0.0331))  # ATen's `0.0331f`
_TINY = {dt.float32: float(np.finfo(np.float32).tiny), dt.float64: float(np.finfo(np.float64).tiny)}
_BELOW_ONE = {dt.float32: float(np.nextafter(_F32(1.0), _F32(0.0))),
              dt.float64: float(np.nextafter(1.0, 0.0))}


def _compiled_loops():
    """pyaten/native/kernels/_gamma_numba.py when Numba and compiled loops are on (the same
    draws and arithmetic as the Python loops here, some hundred times faster)."""
    if compiled.available() is None:
        return None
    try:
        from pyaten.native.kernels import _gamma_numba
    except ImportError:
        return None
    return _gamma_numba


def _gammas(gen: Generator, alphas: list, single: bool, tiny: float) -> list:
    """max(tiny, gamma sample) per alpha, in order, from `gen`."""
    loops = _compiled_loops()
    if loops is not None:
        out = np.empty(len(alphas), dtype=np.float64)
        cached = gen.next_double_normal
        cache = np.array([0.0 if cached is None else 1.0, cached or 0.0])
        gen.draw_with(loops.gammas, np.asarray(alphas, dtype=np.float64), single, tiny,
                      cache, out)
        gen.next_double_normal = float(cache[1]) if cache[0] else None
        return out.tolist()
    draws = _Draws(gen, 3 * len(alphas))
    try:
        values = []
        for a in alphas:
            sample = _gamma_one(a, single, draws)
            if single:
                sample = float(_F32(sample))
            values.append(_floor_max(sample, tiny))
        return values
    finally:
        draws.close()


class _Draws:
    """Uniforms and normals for one kernel call (see Note: PyTorch's rejection samplers,
    element by element)."""

    def __init__(self, gen: Generator, expected: int) -> None:
        self._gen = gen
        self.uniform = UniformStream(gen, expected)
        self._cached = gen.next_double_normal

    def normal(self) -> float:
        if self._cached is not None:
            value, self._cached = self._cached, None
            return value
        u1 = self.uniform()
        u2 = self.uniform()
        radius = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self._cached = radius * math.sin(theta)
        return radius * math.cos(theta)

    def close(self) -> None:
        self.uniform.close()
        self._gen.next_double_normal = self._cached


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 else math.nan


def _log(x: float) -> float:
    if x > 0:
        return math.log(x)
    return -math.inf if x == 0 else math.nan


def _div(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _gamma_one(alpha: float, single: bool, draws: _Draws) -> float:
    """ATen's `sample_gamma` (Marsaglia and Tsang), in double except for the `scalar_t`
    steps, which are float32 when `single`."""
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        exponent = float(_F32(1.0) / _F32(alpha)) if single else _div(1.0, alpha)
        scale *= (1.0 - draws.uniform()) ** exponent
        alpha = float(_F32(alpha) + _F32(1.0)) if single else alpha + 1.0
    d = float(_F32(alpha) - _F32(_THIRD_F)) if single else alpha - _THIRD_F
    c = _div(1.0, _sqrt(9.0 * d))
    while True:
        while True:
            x = draws.normal()
            y = 1.0 + c * x
            if not y <= 0:
                break
        v = y * y * y
        u = 1.0 - draws.uniform()
        xx = x * x
        if u < 1.0 - _C0331_F * xx * xx:
            return scale * d * v
        if _log(u) < 0.5 * xx + d * (1.0 - v + _log(v)):
            return scale * d * v


def _floor_max(value: float, tiny: float) -> float:
    # std::max(min, sample): a NaN sample gives min
    return value if tiny < value else tiny


def _gen(generator, t: Tensor) -> Generator:
    return resolve_generator(generator, t._device)


def _not_implemented(kernel: str, d) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for \'{d.scalar_name}\'')


def _flat(t: Tensor) -> list:
    """The values in the order ATen's serial kernel visits them (a fresh contiguous output:
    row-major order)."""
    return np.ascontiguousarray(t._numpy()).reshape(-1).astype(np.float64).tolist()


def _result(values: list, like: Tensor, dtype: dt.DType) -> Tensor:
    out = _aten().empty.memory_format(list(like.shape), dtype, None, like._device, None, None)
    out._numpy()[...] = np.asarray(values, dtype=np.float64).reshape(tuple(like.shape))
    return out


@native
def _s_gamma_cpu(self: Tensor, generator=None) -> Tensor:
    d = self._dtype
    if d not in (dt.float32, dt.float64):
        raise _not_implemented("gamma_cpu", d)
    if self._device.type == "meta" or self.numel() == 0:
        return _aten().empty.memory_format(list(self.shape), d, None, self._device, None,
                                           None)
    values = _gammas(_gen(generator, self), _flat(self), d == dt.float32, _TINY[d])
    return _result(values, self, d)


@native
def _s_dirichlet_cpu(self: Tensor, generator=None) -> Tensor:
    d = self._dtype
    if d not in (dt.float32, dt.float64):
        raise _not_implemented("dirichlet", d)
    if self.numel() == 0:
        return _aten().empty.memory_format(list(self.shape), d, None, self._device, None,
                                           None)
    # the gammas in double whatever the dtype (ATen: against underflow)
    gammas = _gammas(_gen(generator, self), _flat(self), False, _TINY[dt.float64])
    shape = tuple(self.shape) if self.dim() else (1,)
    gamma = np.asarray(gammas, dtype=np.float64).reshape(shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (gamma / gamma.sum(-1, keepdims=True)).astype(np.float32 if d == dt.float32
                                                               else np.float64)
    # min(nextafter(1, 0), max(min, x)), NaN to min as std::max does
    ratio = np.where(ratio > _TINY[d], ratio, _TINY[d])
    ratio = np.minimum(ratio, _BELOW_ONE[d])
    return _result(ratio.reshape(-1).tolist(), self, d)


# --- binomial --------------------------------------------------------------------------------

_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
         0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
         0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k: float) -> float:
    """log k! minus its Stirling approximation (a table below 10)."""
    if k <= 9:
        return _TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _as(single: bool):
    return (lambda x: float(_F32(x))) if single else (lambda x: x)


def _binomial_inversion(count: float, prob: float, single: bool, uniform) -> float:
    """Count geometric waiting times until they pass `count` (small count * prob)."""
    cast = _as(single)
    logprob = cast(math.log1p(-prob))
    geom_sum = 0.0
    num_geom = 0.0
    while True:
        geom = math.ceil(_div(_log(uniform()), logprob))
        geom_sum += geom
        if geom_sum > count:
            return num_geom
        num_geom = cast(num_geom + 1)


def _btrs(count: float, prob: float, single: bool, uniform) -> float:
    """Hormann's transformed rejection with squeeze (count * prob >= 10)."""
    cast = _as(single)
    stddev = cast(math.sqrt(cast(cast(count * prob) * cast(1 - prob))))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = cast(count * prob) + 0.5
    v_r = 0.92 - 4.2 / b
    r = cast(prob / cast(1 - prob))
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(cast(cast(count + 1) * prob))
    while True:
        u = uniform() - 0.5
        v = uniform()
        us = 0.5 - abs(u)
        k = cast(math.floor((2 * a / us + b) * u + c))
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = _log(v * alpha / (a / (us * us) + b))
        upperbound = ((m + 0.5) * _log((m + 1) / (r * (count - m + 1)))
                      + (count + 1) * _log((count - m + 1) / (count - k + 1))
                      + (k + 0.5) * _log(r * (count - k + 1) / (k + 1))
                      + _stirling_tail(m) + _stirling_tail(count - m)
                      - _stirling_tail(k) - _stirling_tail(count - k))
        if v <= upperbound:
            return k


def _binomial_one(count: float, prob: float, single: bool, uniform) -> float:
    cast = _as(single)
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        if cast(count * prob) >= 10.0:
            return _btrs(count, prob, single, uniform)
        return _binomial_inversion(count, prob, single, uniform)
    if prob > 0.5:
        qprob = cast(1.0 - prob)
        if cast(count * qprob) >= 10.0:
            return cast(count - _btrs(count, qprob, single, uniform))
        return cast(count - _binomial_inversion(count, qprob, single, uniform))
    return math.nan


@native
def _s_binomial_cpu(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    for name, t in (("count", count), ("prob", prob)):
        if not t._dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{t._dtype.scalar_name}")
    if prob._dtype != count._dtype:
        raise RuntimeError(f"Found dtype {prob._dtype.scalar_name} but expected "
                           f"{count._dtype.scalar_name}")
    d = count._dtype
    if d not in (dt.float32, dt.float64):
        raise _not_implemented("binomial_cpu", d)
    shape = tuple(count.shape)
    try:
        probs = np.broadcast_to(prob._numpy(), shape)
    except ValueError:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast "
                           f"shape {list(np.broadcast_shapes(shape, tuple(prob.shape)))}"
                           ) from None
    counts = _flat(count)
    probs = np.ascontiguousarray(probs).reshape(-1).astype(np.float64).tolist()
    single = d == dt.float32
    gen = _gen(generator, count)
    loops = _compiled_loops()
    if loops is not None:
        out = np.empty(len(counts), dtype=np.float64)
        gen.draw_with(loops.binomials, np.asarray(counts, dtype=np.float64),
                      np.asarray(probs, dtype=np.float64), single, out)
        return _result(out.tolist(), count, d)
    uniform = UniformStream(gen, 2 * len(counts))
    try:
        values = [_binomial_one(n, p, single, uniform) for n, p in zip(counts, probs)]
    finally:
        uniform.close()
    return _result(values, count, d)
