"""Special functions: the error function, gamma family, Bessel functions and `torch.special`.

Most operators are one family row (`pyaten.native.family`): a SciPy ufunc, PyTorch's
`AT_DISPATCH` dtypes and the name its dtype error gives. Integer and bool inputs promote to
the default float dtype (`build="float"`), float16/bfloat16 compute in float32. Where SciPy's
edge values differ from PyTorch's (lgamma(-inf), erfinv(-0.0), zeta(x, inf), trigamma's
reflection) a small array function fixes them up beside the row.

The `special_*` operators live in `pyaten.special` (`python_module: special`). Those PyTorch
declares as `CompositeImplicitAutograd` aliases (`special_expit` -> `sigmoid`,
`special_psi` -> `digamma`) are the one-line composites at the end of the module.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from pyaten.core.stub import DispatchStub
from pyaten.native import family
from pyaten.native.kernels import vector_loops
from pyaten.native.lazy import LazyModule
from pyaten.native.ops_handles import aten_ops
from pyaten.native.registry import native, native_at
from pyaten.native.runtime import Tensor, wrapped_number
from pyaten.native.structured import quiet_call, resize_output

sc = LazyModule("scipy.special")  # imported on the first special-function call

FLOAT_AND_REDUCED = family.FLOATING_AND_REDUCED
FLOAT = family.FLOATING

# --- array functions where SciPy's edge values differ from PyTorch's --------------------------
#
# Each takes `out=` like a ufunc (the family row says `takes_out=True`), so its result lands in
# the output without a copy; without `out` it allocates one (0-d inputs included).


def _result(x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    return np.empty(x.shape, x.dtype) if out is None else out


def _lgamma(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    result = sc.gammaln(x, out=_result(x, out))
    infinite = np.isinf(result)
    if infinite.any():
        # SciPy's -inf at x = -inf is +inf in C's lgamma; near 0 (denormal x) SciPy overflows
        # where lgamma(x) = -log|x| still holds.
        result[infinite] = np.inf
        tiny = infinite & (x != 0) & (np.abs(x) < 1e-300)
        result[tiny] = -np.log(np.abs(x[tiny]))
    return result


def _erfinv(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    result = sc.erfinv(x, out=_result(x, out))
    return np.copysign(result, x, out=result)  # erfinv is odd: erfinv(-0.0) is -0.0


def _zeta(x: np.ndarray, q: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Hurwitz zeta with PyTorch's values where its series does not converge (q = inf, or
    x = inf with q > 1, give NaN; SciPy gives 0)."""
    if out is None:
        out = np.empty(np.broadcast_shapes(x.shape, q.shape), np.result_type(x, q))
    result = sc.zeta(x, q, out=out)
    if np.isposinf(q).any() or np.isposinf(x).any():
        diverges = (x > 1) & (np.isposinf(q) | (np.isposinf(x) & (q > 1)))
        np.copyto(result, np.nan, where=diverges)
    return result


def _trigamma(x: np.ndarray) -> np.ndarray:
    """polygamma(1, x) as PyTorch computes it: reflection below 0.5, six recurrence steps,
    then the asymptotic series (so its rounding and its poles match PyTorch's)."""
    one = x.dtype.type(1)
    reflect = x < 0.5
    z = np.where(reflect, one - x, x)
    total = np.zeros_like(z)
    for _ in range(6):
        total += one / (z * z)
        z = z + one
    inv_sq = one / (z * z)
    series = one + one / (2 * z) + inv_sq * (one / 6 - inv_sq * (one / 30 - inv_sq * (one / 42)))
    total += series / z
    if reflect.any():
        sin_pi_x = np.sin(x.dtype.type(math.pi) * x)
        pole = x.dtype.type(math.pi * math.pi) / (sin_pi_x * sin_pi_x)
        total = np.where(reflect, pole - total, total)
    return total


def _polygamma(n: int, x: np.ndarray) -> np.ndarray:
    if n == 0:
        return sc.psi(x)
    if n == 1:
        return _trigamma(x)
    # (-1)^(n+1) n! zeta(n + 1, x), as PyTorch defines it.
    factor = (-1.0) ** (n + 1) * math.gamma(n + 1)
    return factor * _zeta(np.asarray(n + 1, dtype=x.dtype), x)


def _sinc(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    # sin(pi x) / (pi x), and 1 at 0 (PyTorch's special case, complex included).
    result = np.multiply(x, x.dtype.type(math.pi), out=_result(x, out))
    scaled = result.copy()
    np.sin(result, out=result)
    np.divide(result, scaled, out=result)
    result[x == 0] = 1
    return result


def _spherical_bessel_j0(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    result = np.sin(x, out=_result(x, out))
    np.divide(result, x, out=result)
    result[x == 0] = 1
    result[np.isinf(x)] = 0
    return result


def _incomplete_gamma(upper: bool):
    """Regularised lower (upper) incomplete gamma with PyTorch's NaN cases: x = 0 gives 0 (1)
    and x = inf gives 1 (0) whatever a is; a = inf with x NaN gives 0 (1)."""
    gamma = sc.gammaincc if upper else sc.gammainc
    low, high = (1.0, 0.0) if upper else (0.0, 1.0)

    def fn(a: np.ndarray, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = np.empty(np.broadcast_shapes(a.shape, x.shape), np.result_type(a, x))
        result = gamma(a, x, out=out)
        nan_a, nan_x = np.isnan(a), np.isnan(x)
        if nan_a.any() or nan_x.any():
            np.copyto(result, low, where=nan_a & (x == 0))
            np.copyto(result, high, where=nan_a & np.isposinf(x))
            np.copyto(result, low, where=np.isposinf(a) & nan_x)
        return result

    return fn


def _airy_ai(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    result = _result(x, out)
    result[...] = sc.airy(x)[0]
    # Past x ~ 104 Ai underflows: PyTorch gives 0 for every finite x there, SciPy NaN.
    result[(x > 103.892) & np.isfinite(x)] = 0
    return result


# --- the family table: one row per operator ---------------------------------------------------


def _erf(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """SciPy's erf, or the compiled float32 loop on large row-major arrays (kernels/
    vector_loops.py; SciPy's float32 erf goes through double, 10x PyTorch's time)."""
    if out is not None and vector_loops.erf_into(x, out):
        return out
    return sc.erf(x, out=out)


def _row(name: str, fn, dtypes=FLOAT_AND_REDUCED, error: str | None = None) -> family.Pointwise:
    """A unary or binary special function: integers promote to float, PyTorch's error name."""
    # SciPy's ufuncs (called through LazyModule) and our own functions all accept `out=`
    return family.Pointwise(name, fn, dtypes, build="float", dispatch_name=error,
                            takes_out=True)


family.register(
    _row("erf", _erf, error="erf_vml_cpu"),
    _row("erfc", sc.erfc, error="erfc_vml_cpu"),
    _row("erfinv", _erfinv, error="erfinv_vml_cpu"),
    _row("lgamma", _lgamma, error="lgamma_vml_cpu"),
    _row("digamma", sc.psi, error="digamma"),
    _row("i0", sc.i0, error="i0_vml_cpu"),
    _row("sinc", _sinc, family.FLOATING_COMPLEX_AND_REDUCED),
    _row("special_entr", sc.entr, error="entr_cpu"),
    _row("special_erfcx", sc.erfcx, FLOAT, "erfcx_cpu"),
    _row("special_i0e", sc.i0e, error="i0e_cpu"),
    _row("special_i1", sc.i1, error="i1_cpu"),
    _row("special_i1e", sc.i1e, error="i1e_cpu"),
    _row("special_log_ndtr", sc.log_ndtr, FLOAT, "log_ndtr_cpu"),
    _row("special_ndtri", sc.ndtri, FLOAT, "ndtri_cpu"),
    _row("special_xlog1py", sc.xlog1py, error="xlog1py_cpu"),
    _row("special_zeta", _zeta, FLOAT, "zeta_cpu"),
    _row("special_airy_ai", _airy_ai, FLOAT, "airy_ai_cpu"),
    _row("special_bessel_j0", sc.j0, FLOAT, "bessel_j0_cpu"),
    _row("special_bessel_j1", sc.j1, FLOAT, "bessel_j1_cpu"),
    _row("special_bessel_y0", sc.y0, FLOAT, "bessel_y0_cpu"),
    _row("special_bessel_y1", sc.y1, FLOAT, "bessel_y1_cpu"),
    _row("special_modified_bessel_i0", sc.i0, FLOAT, "modified_bessel_i0_cpu"),
    _row("special_modified_bessel_i1", sc.i1, FLOAT, "modified_bessel_i1_cpu"),
    _row("special_modified_bessel_k0", sc.k0, FLOAT, "modified_bessel_k0_cpu"),
    _row("special_modified_bessel_k1", sc.k1, FLOAT, "modified_bessel_k1_cpu"),
    _row("special_scaled_modified_bessel_k0", sc.k0e, FLOAT, "scaled_modified_bessel_k0_cpu"),
    _row("special_scaled_modified_bessel_k1", sc.k1e, FLOAT, "scaled_modified_bessel_k1_cpu"),
    _row("special_spherical_bessel_j0", _spherical_bessel_j0, FLOAT, "spherical_bessel_j0_cpu"),
    # igamma/igammac keep integer inputs integral, so their dtype error names the integer type
    family.Pointwise("igamma", _incomplete_gamma(False), FLOAT_AND_REDUCED, takes_out=True),
    family.Pointwise("igammac", _incomplete_gamma(True), FLOAT_AND_REDUCED, takes_out=True),
)


# --- polygamma: its dtype error names the function n selects ---------------------------------

polygamma_stub = DispatchStub("polygamma_stub")


@polygamma_stub.register("cpu")
def polygamma_kernel(op, n: int) -> None:
    common = op.common_dtype
    if common not in FLOAT_AND_REDUCED:
        name = "digamma" if n == 0 else "trigamma" if n == 1 else "polygamma"
        raise family.unsupported_dtype(name, common)
    (x,) = op.input_arrays()
    op.write(quiet_call(_polygamma, n, x))


@native
def meta_polygamma(op, n: int, self: Tensor) -> None:
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    op.build_unary_float_op(self)


@native
def polygamma_out(op, n: int, self: Tensor, out: Tensor) -> None:
    polygamma_stub(op.device.type, op, n)


@native
def polygamma_(self: Tensor, n: int) -> Tensor:
    """polygamma_ (CompositeExplicitAutograd): polygamma.out into self."""
    return aten_ops().polygamma.out(n, self, self)


# --- mvlgamma: a sum of lgammas, composed from operators as PyTorch does ---------------------


def _mvlgamma_values(self: Tensor, p: int) -> Tensor:
    """sum_j lgamma(self - j/2) for j < p, plus p(p-1)/4 log(pi): through the operators, so
    float16 rounds at each step as PyTorch's does and Meta gets the shape for free."""
    ops = aten_ops()
    if self.device.type != "meta":  # PyTorch's meta function checks neither
        if self.dtype.name == "bool":
            raise RuntimeError("The input tensor may not be a boolean tensor.")
        if p < 1:
            raise RuntimeError("p has to be greater than or equal to 1")
    dtype = self.dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        from pyaten.core.dtypes import get_default_dtype

        dtype = get_default_dtype()
    if self.device.type == "meta":
        return aten_ops().empty_like.default(self, dtype, None, None, None, None)
    if dtype.is_complex:
        raise family.unsupported_dtype("arange_cpu", dtype)
    # arange(-p/2 + 1/2, 1/2, 1/2): the offsets 0, -1/2, ..., -(p-1)/2, in reverse.
    offsets = ops.arange.start_step(-p * 0.5 + 0.5, 0.5, 0.5, dtype, None, self.device, None)
    args = ops.add.Tensor(offsets, ops.unsqueeze.default(self, -1), 1)
    total = ops.sum.dim_IntList(ops.lgamma_.default(args), [-1], False, None)
    return ops.add_.Scalar(total, p * (p - 1) * math.log(math.pi) * 0.25, 1)


@native
def mvlgamma(self: Tensor, p: int) -> Tensor:
    """mvlgamma (CompositeExplicitAutograd): the multivariate log-gamma of dimension p."""
    return _mvlgamma_values(self, p)


@native
def mvlgamma_(self: Tensor, p: int) -> Tensor:
    """mvlgamma_ (CompositeExplicitAutograd): computed, then copied into self."""
    values = _mvlgamma_values(self, p)
    _check_mvlgamma_cast(self, values, self)
    return aten_ops().copy_.default(self, values, False)


@native
def mvlgamma_out(self: Tensor, p: int, out: Tensor) -> Tensor:
    """mvlgamma.out (CPU, Meta): computed, then resized into and copied to out."""
    values = _mvlgamma_values(self, p)
    _check_mvlgamma_cast(self, values, out)
    resize_output(out, tuple(values.shape), "mvlgamma")
    return aten_ops().copy_.default(out, values, False)


def _check_mvlgamma_cast(self: Tensor, values: Tensor, out: Tensor) -> None:
    from pyaten.core.promotion import can_cast

    if not can_cast(values.dtype, out.dtype):
        # PyTorch's message names self's dtype, then the computed one.
        raise RuntimeError(
            f"mvlgamma: result type {self.dtype.scalar_name} can't be cast to the desired "
            f"output type {values.dtype.scalar_name}"
        )


# --- the Scalar overloads of binary special functions (CompositeExplicitAutograd) -------------


@native
def special_xlog1py_self_scalar(self, other: Tensor) -> Tensor:
    return aten_ops().special_xlog1py.default(wrapped_number(self), other)


@native
def special_xlog1py_other_scalar(self: Tensor, other) -> Tensor:
    return aten_ops().special_xlog1py.default(self, wrapped_number(other))


@native
def special_xlog1py_self_scalar_out(self, other: Tensor, out: Tensor) -> Tensor:
    return aten_ops().special_xlog1py.out(wrapped_number(self), other, out)


@native
def special_xlog1py_other_scalar_out(self: Tensor, other, out: Tensor) -> Tensor:
    return aten_ops().special_xlog1py.out(self, wrapped_number(other), out)


@native
def special_zeta_self_scalar(self, other: Tensor) -> Tensor:
    return aten_ops().special_zeta.default(wrapped_number(self), other)


@native
def special_zeta_other_scalar(self: Tensor, other) -> Tensor:
    return aten_ops().special_zeta.default(self, wrapped_number(other))


@native
def special_zeta_self_scalar_out(self, other: Tensor, out: Tensor) -> Tensor:
    return aten_ops().special_zeta.out(wrapped_number(self), other, out)


@native
def special_zeta_other_scalar_out(self: Tensor, other, out: Tensor) -> Tensor:
    return aten_ops().special_zeta.out(self, wrapped_number(other), out)


# --- special_ndtr: composed as PyTorch composes it ----------------------------------------------


def _ndtr_inner(self: Tensor) -> Tensor:
    ops = aten_ops()
    scaled = ops.mul.Tensor(self, wrapped_number(math.sqrt(0.5)))
    return ops.add.Tensor(ops.erf.default(scaled), wrapped_number(1), 1)


@native
def special_ndtr(self: Tensor) -> Tensor:
    """special_ndtr (CompositeImplicitAutograd): (1 + erf(x / sqrt(2))) / 2."""
    return aten_ops().mul.Tensor(_ndtr_inner(self), wrapped_number(0.5))


@native
def special_ndtr_out(self: Tensor, out: Tensor) -> Tensor:
    return aten_ops().mul.out(_ndtr_inner(self), wrapped_number(0.5), out)


# --- the aliases: torch.special names for top-level operators (CompositeImplicitAutograd) ----


def _alias(kernel: str, target: str, overload: str) -> None:
    """Register `kernel` as a forward to `aten::<target>.<overload>` (same arguments)."""

    def forward(*args):
        return getattr(getattr(aten_ops(), target), overload)(*args)

    forward.__qualname__ = kernel
    forward.__doc__ = f"{kernel} (CompositeImplicitAutograd): aten::{target}.{overload}."
    native_at(kernel, forward, f"{__file__}:{sys._getframe(1).f_lineno}")


for _special, _target, _functional, _out in (
    ("exp2", "exp2", "default", "out"),
    ("expm1", "expm1", "default", "out"),
    ("log1p", "log1p", "default", "out"),
    ("psi", "digamma", "default", "out"),
    ("digamma", "digamma", "default", "out"),
    ("gammaln", "lgamma", "default", "out"),
    ("erf", "erf", "default", "out"),
    ("erfc", "erfc", "default", "out"),
    ("erfinv", "erfinv", "default", "out"),
    ("i0", "i0", "default", "out"),
    ("sinc", "sinc", "default", "out"),
    ("expit", "sigmoid", "default", "out"),
    ("logit", "logit", "default", "out"),
    ("round", "round", "decimals", "decimals_out"),
    ("polygamma", "polygamma", "default", "out"),
    ("multigammaln", "mvlgamma", "default", "out"),
    ("logsumexp", "logsumexp", "default", "out"),
    ("gammainc", "igamma", "default", "out"),
    ("gammaincc", "igammac", "default", "out"),
    ("xlogy", "xlogy", "Tensor", "OutTensor"),
    ("xlogy_self_scalar", "xlogy", "Scalar_Self", "OutScalar_Self"),
    ("xlogy_other_scalar", "xlogy", "Scalar_Other", "OutScalar_Other"),
):
    _alias(f"special_{_special}", _target, _functional)
    _alias(f"special_{_special}_out", _target, _out)
_alias("special_softmax", "softmax", "int")
_alias("special_log_softmax", "log_softmax", "int")


# --- orthogonal polynomials P_n(x): PyTorch's recurrences, n truncated to an integer ----------


def _degree(n: np.ndarray) -> np.ndarray:
    # C's cast of the degree to int64 (NaN and inf become the most negative int64: degree < 0).
    with np.errstate(invalid="ignore"):
        return n.astype(np.int64)


def _recurrence(x, degree, first, step, active):
    """P_degree(x) from P_0 = 1, P_1 = first, P_m = step(m, P_{m-1}, P_{m-2}), for the
    elements where `active` holds (others are left 0 for the caller to fill)."""
    one = np.ones_like(x)
    result = np.where(degree == 0, one, np.where(degree == 1, first, 0 * x))
    top = int(degree[active].max()) if active.any() else 1
    before, last = one, first
    single = degree.size > 0 and bool((degree == top).all()) and bool(active.all())
    for m in range(2, top + 1):
        before, last = last, step(m, last, before)
        if not single:  # one degree for all (`n` a Scalar): only the last step counts
            np.copyto(result, last, where=active & (degree == m))
    return last if single and top >= 2 else result


def _polynomial(kind: str):
    def fn(x: np.ndarray, n: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        x, n = np.broadcast_arrays(x, n)
        degree = _degree(n)
        result = _POLYNOMIALS[kind](x, degree)
        result = np.where(degree < 0, 0, result).astype(x.dtype, copy=False)
        if out is None:
            return result
        np.copyto(out, result)
        return out

    return fn


def _sign_by_parity(degree, value):
    return np.where(degree % 2 == 0, value, -value)


def _chebyshev(y, degree, kind, trig_from):
    """T, U, V, W (of y = x, or 2x - 1 for the shifted ones), with PyTorch's special values
    at |y| = 1 and its closed forms for high degrees inside (-1, 1)."""
    two_y = y + y
    first = {"t": y, "u": two_y, "v": two_y - 1, "w": two_y + 1}[kind]
    inside = (np.abs(y) < 1) & (degree > trig_from)
    plain = ~inside & (np.abs(y) != 1)
    result = _recurrence(y, degree, first, lambda m, p1, p2: two_y * p1 - p2, plain)
    ends = np.abs(y) == 1
    if not (inside.any() or ends.any()):
        return result
    k = degree.astype(y.dtype)
    with np.errstate(all="ignore"):
        theta = np.arccos(y)
        if kind == "t":
            closed = np.cos(k * theta)
            at_one = np.where((y > 0) | (degree % 2 == 0), 1, -1)
        elif kind == "u":
            s = np.sin(theta)
            closed = np.where(s != 0, np.sin((k + 1) * theta) / s,
                              (k + 1) * np.cos((k + 1) * theta) / y)
            at_one = np.where((y > 0) | (degree % 2 == 0), k + 1, -(k + 1))
        elif kind == "v":
            half = theta / 2
            closed = np.where(np.sin(half) != 1, np.cos((k + 0.5) * theta) / np.cos(half),
                              _sign_by_parity(degree, k + k + 1))
            at_one = np.where(y > 0, 1, _sign_by_parity(degree, k + k + 1))
        else:
            half = theta / 2
            closed = np.where(np.cos(half) != 1, np.sin((k + 0.5) * theta) / np.sin(half),
                              np.where(y > 0, k + k + 1, _sign_by_parity(degree, 1)))
            at_one = np.where(y > 0, k + k + 1, _sign_by_parity(degree, 1))
    result = np.where(inside, closed, result)
    return np.where(ends, at_one, result)


def _hermite_h(x, degree):
    return _recurrence(x, degree, x + x, lambda m, p1, p2: (x + x) * p1 - (2 * (m - 1)) * p2,
                       degree >= 0)


def _hermite_he(x, degree):
    return _recurrence(x, degree, x, lambda m, p1, p2: x * p1 - (m - 1) * p2, degree >= 0)


def _laguerre_l(x, degree):
    def step(m, p1, p2):
        return ((2 * m - 1 - x) * p1 - (m - 1) * p2) / m

    result = _recurrence(x, degree, 1 - x, step, degree >= 0)
    return np.where(x == 0, 1, result)


def _legendre_p(x, degree):
    def step(m, p1, p2):
        return ((2 * m - 1) * x * p1 - (m - 1) * p2) / m

    ends = np.abs(x) == 1
    result = _recurrence(x, degree, x, step, ~ends)
    if not ends.any():
        return result
    return np.where(ends, np.where((x > 0) | (degree % 2 == 0), 1, -1), result)


_POLYNOMIALS = {
    "chebyshev_polynomial_t": lambda x, d: _chebyshev(x, d, "t", 6),
    "chebyshev_polynomial_u": lambda x, d: _chebyshev(x, d, "u", 8),
    "chebyshev_polynomial_v": lambda x, d: _chebyshev(x, d, "v", 8),
    "chebyshev_polynomial_w": lambda x, d: _chebyshev(x, d, "w", 8),
    "shifted_chebyshev_polynomial_t": lambda x, d: _chebyshev(x + x - 1, d, "t", 6),
    "shifted_chebyshev_polynomial_u": lambda x, d: _chebyshev(x + x - 1, d, "u", 8),
    "shifted_chebyshev_polynomial_v": lambda x, d: _chebyshev(x + x - 1, d, "v", 8),
    "shifted_chebyshev_polynomial_w": lambda x, d: _chebyshev(x + x - 1, d, "w", 8),
    "hermite_polynomial_h": _hermite_h,
    "hermite_polynomial_he": _hermite_he,
    "laguerre_polynomial_l": _laguerre_l,
    "legendre_polynomial_p": _legendre_p,
}


family.register(*(
    family.Pointwise(f"special_{name}", _polynomial(name), FLOAT, build="float", takes_out=True,
                     dispatch_name=f"{name}_cpu")
    for name in _POLYNOMIALS
))


def _scalar_overloads(name: str) -> None:
    """`x_scalar`/`n_scalar` (and their outs): the Scalar wrapped as a 0-dim tensor."""
    op = f"special_{name}"

    def x_scalar(x, n):
        return getattr(aten_ops(), op).default(wrapped_number(x), n)

    def n_scalar(x, n):
        return getattr(aten_ops(), op).default(x, wrapped_number(n))

    def x_scalar_out(x, n, out):
        return getattr(aten_ops(), op).out(wrapped_number(x), n, out)

    def n_scalar_out(x, n, out):
        return getattr(aten_ops(), op).out(x, wrapped_number(n), out)

    site = f"{__file__}:{sys._getframe(1).f_lineno}"
    for fn in (x_scalar, n_scalar, x_scalar_out, n_scalar_out):
        native_at(f"{op}_{fn.__name__}", fn, site)


for _name in _POLYNOMIALS:
    _scalar_overloads(_name)
