"""PyTorch's CPU transforms from raw mt19937 words to samples, as array expressions.

Every function here takes a `pyaten.Generator` and a count and returns a flat NumPy array of
samples in the order PyTorch's serial kernel produces them (the caller writes them in the
TensorIterator's order, pyaten/native/kernels/random.py). The rules, from ATen's
`DistributionsHelper.h`, `TransformationHelper.h` and `cpu/DistributionTemplates.h`:

- uniform: a double takes a 64-bit draw and keeps 53 bits; float, half and bfloat16 take a
  32-bit draw and keep 24, 11 and 8 bits; `x * (to - from) + from` in float (double for
  double), `to - from` rounded to the dtype first.
- normal, contiguous and at least 16 elements: fill with uniforms, then Box-Muller in blocks
  of 16 (the first 8 are radii, the last 8 angles) and, when the size is not a multiple of
  16, draw 16 fresh uniforms for the last 16 slots and transform them again. float32 on an
  AVX2 machine uses the Cephes polynomials of `avx_mathfun.h` (pyaten/native/kernels/
  cephes_f32.py); other dtypes use libm in the dtype's own precision.
- normal otherwise (and log_normal): double Box-Muller on two 53-bit uniforms, the sine
  half cached in the generator and returned by the next call.
- integers: `draw % range + from`, a 64-bit draw when the range is 2**28 or more (PyTorch
  bounds the modulo's skew so), else a 32-bit one.
- bernoulli, exponential, cauchy, geometric: one 53-bit uniform per element, in double
  (bernoulli with a float probability tensor: a 24-bit float uniform).
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.generator import Generator
from pyaten.native.kernels import cephes_f32, random_compiled
from pyaten.native.kernels.fma import fma32, fma64

__all__ = [
    "uniform", "unit_float64", "unit_float32", "normal_fill", "normal_scalar", "integers",
    "bernoulli_double", "bernoulli_float", "exponential", "cauchy", "geometric",
]

_F32 = np.float32
_DIGITS = {dt.float16: 11, dt.bfloat16: 8, dt.float32: 24, dt.float64: 53}
_MASK53 = np.uint64((1 << 53) - 1)


def unit_float64(gen: Generator, count: int) -> np.ndarray:
    """`count` doubles in [0, 1): 53 bits of a 64-bit draw."""
    words = gen.random64(count)
    words &= _MASK53
    values = words.astype(np.float64)
    values *= 2.0**-53
    return values


def unit_float32(gen: Generator, count: int, out: np.ndarray | None = None) -> np.ndarray:
    """`count` floats in [0, 1): the low 24 bits of a 32-bit draw (float16 and bfloat16 too:
    they draw a float and round it); into `out` (flat float32) when given."""
    fast = random_compiled.loops(count)
    if fast is not None:
        values = np.empty(count, dtype=_F32) if out is None else out
        gen.draw_with(fast.uniforms, values, 0, count)
        return values
    words = gen.random32(count)
    words &= np.uint64(0xFFFFFF)
    values = np.empty(count, dtype=_F32) if out is None else out
    np.multiply(words, _F32(2.0**-24), out=values, casting="unsafe")
    return values


def uniform(gen: Generator, count: int, dtype: dt.DType, low: float, high: float,
            out: np.ndarray | None = None) -> np.ndarray:
    """`uniform_(low, high)` samples of a real floating dtype, in that dtype: computed in
    float (double for double), cast, and a value that rounds up to `high` becomes `low`.
    A float32 [0, 1) draw goes straight into `out` when given (it never reaches 1)."""
    if dtype is dt.float32 and (low, high) == (0.0, 1.0):
        return unit_float32(gen, count, out)
    if dtype is dt.float64:
        x = unit_float64(gen, count)
        if (low, high) != (0.0, 1.0):
            x = fma64(x, high - low, low)
    else:
        x = unit_float32(gen, count)
        if (low, high) != (0.0, 1.0):
            lo, hi = _F32(low), _F32(high)
            x = fma32(x, _F32(hi - lo), lo)
        if dtype is not dt.float32:
            x = x.astype(dtype.numpy)
    top = np.asarray(high, dtype=np.float64 if dtype is dt.float64 else _F32).astype(dtype.numpy)
    bottom = np.asarray(low, dtype=np.float64 if dtype is dt.float64 else _F32).astype(
        dtype.numpy)
    x[x == top] = bottom
    return x


# --- normal ----------------------------------------------------------------------------------


def _box_muller_16(data: np.ndarray, mean: float, std: float) -> np.ndarray:
    """`NormalFill16` on rows of 16 uniforms (a (k, 16) float32 or float64 array): the first
    8 of a row give the radii, the last 8 the angles; cosines fill the first half."""
    head, tail = data[:, :8], data[:, 8:]
    out = np.empty_like(data)
    if data.dtype == np.float64:
        radius = np.sqrt(-2.0 * np.log(1.0 - head))
        theta = 2.0 * math.pi * tail
        out[:, :8] = fma64(radius * np.cos(theta), std, mean)
        out[:, 8:] = fma64(radius * np.sin(theta), std, mean)
        return out
    u1 = _F32(1.0) - head
    if cephes_f32.AVX2:
        radius = np.sqrt(_F32(-2.0) * cephes_f32.log(u1))
        sin, cos = cephes_f32.sincos(_F32(2.0 * math.pi) * tail)
    else:  # logf, cosf and sinf, taken here as the float64 functions rounded to float
        radius = np.sqrt(_F32(-2.0) * np.log(u1.astype(np.float64)).astype(_F32))
        theta = (2.0 * math.pi * tail.astype(np.float64)).astype(_F32).astype(np.float64)
        sin, cos = np.sin(theta).astype(_F32), np.cos(theta).astype(_F32)
    out[:, :8] = fma32(radius * cos, _F32(std), _F32(mean))
    out[:, 8:] = fma32(radius * sin, _F32(std), _F32(mean))
    return out


def _units(gen: Generator, count: int, dtype: dt.DType) -> np.ndarray:
    return unit_float64(gen, count) if dtype is dt.float64 else unit_float32(gen, count)


def normal_fill(gen: Generator, count: int, dtype: dt.DType, mean: float, std: float,
                out: np.ndarray | None = None) -> np.ndarray:
    """`normal_fill` (contiguous, count >= 16): float64 values for float64, else float32
    (float16 and bfloat16 compute in float and round once on store). float and double draw
    a uniform for every element first; float16 and bfloat16 only for the whole blocks. The
    compiled float32 loop writes into `out` (flat float32) when given."""
    whole = count - count % 16
    draw_all = dtype in (dt.float32, dt.float64)
    fast = None
    if cephes_f32.AVX2 and dtype is not dt.float64:
        fast = random_compiled.loops(count, any_size=True)
    if fast is not None:
        values = np.empty(count, dtype=_F32) if out is None else out
        gen.draw_with(fast.normal_fill, values, draw_all, _F32(mean), _F32(std))
        return values
    data = _units(gen, count if draw_all else whole, dtype)
    out = np.empty(count, dtype=data.dtype)
    out[:whole] = _box_muller_16(data[:whole].reshape(-1, 16), mean, std).reshape(-1)
    if whole != count:
        # the last 16 slots get fresh uniforms, transformed again
        last = _units(gen, 16, dtype).reshape(1, 16)
        out[count - 16:] = _box_muller_16(last, mean, std).reshape(-1)
    return out


def normal_scalar(gen: Generator, count: int, mean: float, std: float) -> np.ndarray:
    """`count` draws of `normal_distribution<double>` (the serial path, log_normal too):
    Box-Muller pairs, the sine half cached in the generator between calls."""
    values = np.empty(count, dtype=np.float64)
    start = 0
    if count and gen.next_double_normal is not None:
        values[0] = gen.next_double_normal
        gen.next_double_normal = None
        start = 1
    pairs = (count - start + 1) // 2
    if pairs:
        u = unit_float64(gen, 2 * pairs).reshape(pairs, 2)
        radius = np.sqrt(-2.0 * np.log1p(-u[:, 1]))
        theta = 2.0 * math.pi * u[:, 0]
        both = np.empty((pairs, 2), dtype=np.float64)
        both[:, 0] = radius * np.cos(theta)
        both[:, 1] = radius * np.sin(theta)
        flat = both.reshape(-1)
        values[start:] = flat[: count - start]
        if (count - start) % 2:
            gen.next_double_normal = float(flat[-1])
    if std != 1.0 or mean != 0.0:
        values = fma64(values, std, mean)
    return values


# --- integers ---------------------------------------------------------------------------------

def integers(gen: Generator, count: int, dtype: dt.DType, span: int, base: int,
             out: np.ndarray | None = None) -> np.ndarray:
    """`random_(from, to)`: `draw % span + base` as int64 (span = to - from, >= 1); the
    dtype does not change the draw. The compiled loop writes into `out` (flat int64) when
    given."""
    if span >= 1 << 28:  # PyTorch's bound on the modulo skew (any dtype)
        words = gen.random64(count)
    else:
        fast = random_compiled.loops(count)
        if fast is not None and -(2**62) < base < 2**62:  # no int64 overflow in the loop
            values = np.empty(count, dtype=np.int64) if out is None else out
            gen.draw_with(fast.integers32, values, span, base)
            return values
        words = gen.random32(count)
    words %= np.uint64(span)
    values = words.view(np.int64) if words.flags.c_contiguous else words.astype(np.int64)
    # int64 wraps as C++'s unsigned arithmetic does
    return values + np.int64(base) if base else values


def full_range(gen: Generator, count: int) -> np.ndarray:
    """`random_(-2**63, None)`: a whole 64-bit draw as int64."""
    return np.ascontiguousarray(gen.random64(count)).view(np.int64)


def default_range(gen: Generator, count: int, dtype: dt.DType) -> np.ndarray:
    """`random_()` without bounds: [0, 2**digits] for floating dtypes, [0, max] for integers,
    the low bit for bool; int64 values."""
    if dtype is dt.bool:
        return (gen.random32(count) & np.uint64(1)).astype(np.int64)
    if dtype in (dt.float64, dt.int64):
        words = gen.random64(count)
    else:
        words = gen.random32(count)
    if dtype.is_floating_point:
        modulus = (1 << _DIGITS[dtype]) + 1
    else:
        modulus = int(np.iinfo(dtype.numpy).max) + 1
    words %= np.uint64(modulus)
    return words.astype(np.int64)


# --- the one-uniform samplers ---------------------------------------------------------------


def bernoulli_double(gen: Generator, count: int, p: np.ndarray | float) -> np.ndarray:
    """`bernoulli_distribution<double>`: a 53-bit uniform below p."""
    return unit_float64(gen, count) < p


def bernoulli_float(gen: Generator, count: int, p: np.ndarray) -> np.ndarray:
    """`bernoulli_distribution<float>` (a float probability tensor): a 24-bit uniform."""
    return unit_float32(gen, count) < p.astype(_F32)


def exponential(gen: Generator, count: int, lambd: float) -> np.ndarray:
    u = unit_float64(gen, count)
    return -1.0 / lambd * np.log1p(-u)


def cauchy(gen: Generator, count: int, median: float, sigma: float) -> np.ndarray:
    u = unit_float64(gen, count)
    return median + sigma * np.tan(math.pi * (u - 0.5))


def geometric(gen: Generator, count: int, p: float) -> np.ndarray:
    u = unit_float64(gen, count)
    with np.errstate(divide="ignore"):
        return np.ceil(np.log(u) / math.log1p(-p))


# --- randperm ---------------------------------------------------------------------------------

_SMALL_PERMUTATION = (2**32 - 1) // 20  # below it: swaps with 32-bit draws


def permutation(gen: Generator, n: int) -> np.ndarray:
    """`randperm(n)` as int64: for small n, a Fisher-Yates pass from the front swapping slot i
    with i + draw % (n - i); beyond 2**32 / 20, the inside-out variant on 64-bit draws."""
    if n < _SMALL_PERMUTATION:
        if n <= 1:
            return np.arange(n, dtype=np.int64)
        fast = random_compiled.loops(n, any_size=True)
        if fast is not None:
            values = np.empty(n, dtype=np.int64)
            gen.draw_with(fast.permutation32, values)
            return values
        offsets = gen.random32(n - 1)
        offsets %= np.arange(n, 1, -1, dtype=np.uint64)
        offsets += np.arange(n - 1, dtype=np.uint64)
        return _swap_python(np.arange(n, dtype=np.int64), offsets.view(np.int64))
    picks = gen.random64(n)
    picks %= np.arange(1, n + 1, dtype=np.uint64)
    return _inside_out_python(np.ascontiguousarray(picks).view(np.int64))


def _swap_python(values: np.ndarray, targets: np.ndarray) -> np.ndarray:
    out = values.tolist()
    for i, j in enumerate(targets.tolist()):
        out[i], out[j] = out[j], out[i]
    return np.asarray(out, dtype=np.int64)


def _inside_out_python(picks: np.ndarray) -> np.ndarray:
    out = [0] * len(picks)
    for i, z in enumerate(picks.tolist()):
        out[i] = out[z]
        out[z] = i
    return np.asarray(out, dtype=np.int64)


# --- rejection samplers -----------------------------------------------------------------------


class UniformStream:
    """53-bit uniforms drawn one at a time by a loop whose draw count is not known ahead (a
    rejection sampler): words are fetched in chunks, and `close` leaves the generator exactly
    as many draws ahead as were used."""

    def __init__(self, gen: Generator, expected: int) -> None:
        self._gen = gen
        self._start = gen._bits.state
        self._chunk = max(16, expected)
        self._values: list[float] = []
        self._next = 0
        self._used = 0

    def __call__(self) -> float:
        if self._next == len(self._values):
            self._values = unit_float64(self._gen, self._chunk).tolist()
            self._next = 0
            self._chunk *= 2
        value = self._values[self._next]
        self._next += 1
        self._used += 1
        return value

    def close(self) -> None:
        self._gen._bits.state = self._start
        if self._used:
            self._gen.random64(self._used)


def _poisson_one(lam: float, uniform: UniformStream) -> float:
    """`sample_poisson`: Hormann's transformed rejection from 10 up, else Knuth's product
    of uniforms."""
    if not lam >= 0:
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if lam >= 10:
        slam = math.sqrt(lam)
        loglam = math.log(lam) if math.isfinite(lam) else math.inf
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = uniform() - 0.5
            v = uniform()
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43) if math.isfinite(lam) else None
            if k is None:
                return -(2.0**63)  # an infinite rate: C++'s int64 cast of infinity
            if us >= 0.07 and v <= vr:
                return float(k)
            if k < 0 or (us < 0.013 and v > us):
                continue
            if (math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)
                    <= -lam + k * loglam - math.lgamma(k + 1.0)):
                return float(k)
    if lam == 0:
        return 0.0
    limit = math.exp(-lam)
    count = 0
    product = 1.0
    while True:
        product *= uniform()
        if product > limit:
            count += 1
        else:
            return float(count)


def poisson(gen: Generator, rates: np.ndarray) -> np.ndarray:
    """One Poisson sample per rate (float64 rates, in iteration order)."""
    flat = rates.reshape(-1).tolist()
    expected = int(sum(min(r, 10.0) + 2 for r in flat if r == r))
    uniform = UniformStream(gen, expected)
    try:
        return np.array([_poisson_one(r, uniform) for r in flat], dtype=np.float64)
    finally:
        uniform.close()
