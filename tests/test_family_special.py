"""Differential tests of the special functions and `pyaten.special` against PyTorch.

One table (`OPS`) drives most tests: each operator runs in pyaten and in torch on the same
inputs for all twelve dtypes and several shapes (0-d, empty, non-contiguous), through each
variant PyTorch has (function, method, in-place, `out=`) and on meta tensors. Supported
dtypes compare values; unsupported ones compare the exception's kind and message. The
binary functions (xlog1py, zeta) add broadcasting and their Scalar overloads; polygamma and
mvlgamma their integer argument. PyTorch's OpInfo samples and hypothesis supply more values.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import pytest
import torch
from _helpers import (
    DTYPE_NAMES,
    assert_same,
    assert_same_outcome,
    from_torch,
    opinfo_samples,
    outs,
    same_error,
    sample_arguments,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
import pyaten.special

# --- the same tensor in both libraries ------------------------------------------------------


def _values(shape: tuple, dtype: str, domain: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype == "uint8":
        return rng.integers(0, 9, size=shape).astype(np.uint8)
    if dtype.startswith("int"):
        low = 1 if domain in ("positive", "gamma") else -5
        return rng.integers(low, 7, size=shape).astype(dtype)
    if domain == "unit":  # erfinv's (-1, 1)
        real = rng.uniform(-0.99, 0.99, size=shape)
    elif domain == "prob":  # ndtri's (0, 1)
        real = rng.uniform(0.01, 0.99, size=shape)
    elif domain == "positive":
        real = rng.uniform(0.1, 6.0, size=shape)
    elif domain == "gamma":  # mvlgamma needs x > (p - 1) / 2
        real = rng.uniform(2.5, 8.0, size=shape)
    else:
        real = rng.standard_normal(size=shape) * 2.5
    if dtype.startswith("complex"):
        return (real + 1j * rng.standard_normal(size=shape)).astype(dtype)
    return real


def pair(shape: tuple, dtype: str, domain: str = "normal", seed: int = 0, values=None):
    """The same tensor as (pyaten, torch)."""
    if values is None:
        values = _values(shape, dtype, domain, seed)
    t = torch.from_numpy(np.array(values)).to(getattr(torch, dtype))
    return from_torch(t), t


SHAPES = {"0d": (), "2d": (3, 4), "empty": (0, 3), "noncontig": (4, 3)}


def operand(shape_name: str, dtype: str, domain: str = "normal", seed: int = 0):
    ours, theirs = pair(SHAPES[shape_name], dtype, domain, seed)
    if shape_name == "noncontig":
        ours, theirs = ours.t(), theirs.t()
    return ours, theirs


# --- the table ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """A unary operator: `fn(module)` picks the function from `pyaten` or `torch`;
    `method`/`inplace` name its Tensor variants; `needs` names the operator it forwards to
    when that belongs to another family (skipped until it lands); `tol` loosens float64's
    tolerance where PyTorch's own implementation is less accurate than SciPy's."""

    name: str
    fn: Callable
    domain: str = "normal"
    method: str | None = None
    inplace: str | None = None
    needs: str | None = None
    tol: float | None = None


def _top(name: str) -> Callable:
    return lambda m: getattr(m, name)


def _special(name: str) -> Callable:
    return lambda m: getattr(m.special, name)


OPS = [
    Op("erf", _top("erf"), method="erf", inplace="erf_"),
    Op("erfc", _top("erfc"), method="erfc", inplace="erfc_"),
    Op("erfinv", _top("erfinv"), "unit", "erfinv", "erfinv_"),
    Op("lgamma", _top("lgamma"), method="lgamma", inplace="lgamma_"),
    Op("digamma", _top("digamma"), method="digamma", inplace="digamma_"),
    Op("i0", _top("i0"), method="i0", inplace="i0_"),
    Op("sinc", _top("sinc"), method="sinc", inplace="sinc_"),
    Op("polygamma_1", lambda m: functools.partial(m.polygamma, 1), "positive"),
    Op("polygamma_2", lambda m: functools.partial(m.polygamma, 2), "positive"),
    Op("mvlgamma_2", lambda m: lambda x: m.mvlgamma(x, 2), "gamma"),
    Op("special.entr", _special("entr")),
    Op("special.erfcx", _special("erfcx")),
    Op("special.i0e", _special("i0e")),
    Op("special.i1", _special("i1")),
    Op("special.i1e", _special("i1e")),
    Op("special.log_ndtr", _special("log_ndtr")),
    Op("special.ndtr", _special("ndtr")),
    Op("special.ndtri", _special("ndtri"), "prob"),
    Op("special.airy_ai", _special("airy_ai"), tol=1e-6),
    Op("special.bessel_j0", _special("bessel_j0"), tol=1e-6),
    Op("special.bessel_j1", _special("bessel_j1"), tol=1e-6),
    Op("special.bessel_y0", _special("bessel_y0"), "positive", tol=1e-6),
    Op("special.bessel_y1", _special("bessel_y1"), "positive", tol=1e-6),
    Op("special.modified_bessel_i0", _special("modified_bessel_i0")),
    Op("special.modified_bessel_i1", _special("modified_bessel_i1")),
    Op("special.modified_bessel_k0", _special("modified_bessel_k0"), "positive"),
    Op("special.modified_bessel_k1", _special("modified_bessel_k1"), "positive"),
    Op("special.scaled_modified_bessel_k0", _special("scaled_modified_bessel_k0"), "positive"),
    Op("special.scaled_modified_bessel_k1", _special("scaled_modified_bessel_k1"), "positive"),
    Op("special.spherical_bessel_j0", _special("spherical_bessel_j0")),
    # torch.special's aliases of top-level operators
    Op("special.psi", _special("psi")),
    Op("special.digamma", _special("digamma")),
    Op("special.gammaln", _special("gammaln")),
    Op("special.erf", _special("erf")),
    Op("special.erfc", _special("erfc")),
    Op("special.erfinv", _special("erfinv"), "unit"),
    Op("special.i0", _special("i0")),
    Op("special.sinc", _special("sinc")),
    Op("special.multigammaln", lambda m: lambda x: m.special.multigammaln(x, 3), "gamma"),
    Op("special.polygamma", lambda m: functools.partial(m.special.polygamma, 1), "positive"),
    Op("special.expit", _special("expit"), needs="sigmoid"),
    Op("special.exp2", _special("exp2"), needs="exp2"),
    Op("special.expm1", _special("expm1"), needs="expm1"),
    Op("special.log1p", _special("log1p"), needs="log1p"),
    Op("special.logit", _special("logit"), "prob", needs="logit"),
]
OPS_BY_NAME = {op.name: op for op in OPS}


def tol_for(dtype: str, tol: float) -> float | None:
    """`tol` for float32/float64 results; half types keep their default (about one ulp)."""
    return tol if dtype in ("float32", "float64") or dtype.startswith("int") else None


def _skip_missing(op: Op) -> None:
    if op.needs is not None and not hasattr(pyaten, op.needs):
        pytest.skip(f"needs pyaten.{op.needs} (another family's operator)")


# --- every operator x every dtype x shapes --------------------------------------------------


@pytest.mark.parametrize("name", list(OPS_BY_NAME))
def test_all_dtypes_and_shapes(name):
    op = OPS_BY_NAME[name]
    _skip_missing(op)
    ours_fn, theirs_fn = op.fn(pyaten), op.fn(torch)
    for dtype in DTYPE_NAMES:
        for shape in SHAPES:
            ours, theirs = operand(shape, dtype, op.domain)
            tol = op.tol if dtype == "float64" else None
            assert_same_outcome(partial(ours_fn, ours), partial(theirs_fn, theirs),
                                rtol=tol, atol=tol)


@pytest.mark.parametrize("name", [op.name for op in OPS if op.method or op.inplace])
def test_method_inplace_and_out(name):
    op = OPS_BY_NAME[name]
    for dtype in ("float32", "float64", "bfloat16", "int64", "bool", "complex64"):
        ours, theirs = operand("2d", dtype, op.domain)
        assert_same_outcome(getattr(ours, op.method),
                            getattr(theirs, op.method))
        # in place: integer self cannot hold the float result (PyTorch's cast error)
        ours, theirs = operand("noncontig", dtype, op.domain)
        assert_same_outcome(getattr(ours, op.inplace),
                            getattr(theirs, op.inplace))
        assert_same(ours, theirs)
    # out=: the right dtype, a resize of an empty out, and a dtype the result can't cast to
    base = op.fn(pyaten)
    for out_dtype, out_shape in (("float32", (3, 4)), ("float64", (0,)), ("int64", (3, 4))):
        ours, theirs = operand("2d", "float32", op.domain)
        out_ours, out_theirs = outs(out_shape, out_dtype)
        # a float32 result written to a float64 out= has float32's precision
        assert_same_outcome(partial(base, ours, out=out_ours),
                            partial(op.fn(torch), theirs, out=out_theirs), rtol=1e-6, atol=1e-6)
        assert_same(out_ours, out_theirs, rtol=1e-6, atol=1e-6)


# PyTorch's schemas name these functions' argument `x`, not `self` (`input` in Python).
X_NAMED = {"special.airy_ai", "special.scaled_modified_bessel_k0",
           "special.scaled_modified_bessel_k1", "special.spherical_bessel_j0"}


@pytest.mark.parametrize("name", list(OPS_BY_NAME))
def test_out_keyword_and_input_keyword(name):
    op = OPS_BY_NAME[name]
    _skip_missing(op)
    if op.name.startswith(("polygamma", "mvlgamma", "special.multigammaln", "special.polygamma")):
        pytest.skip("takes an integer argument: see test_polygamma / test_mvlgamma")
    ours, theirs = operand("2d", "float64", op.domain)
    out_ours, out_theirs = outs((3, 4), "float64")
    keyword = "x" if op.name in X_NAMED else "input"
    assert_same_outcome(lambda: op.fn(pyaten)(**{keyword: ours}, out=out_ours),
                        lambda: op.fn(torch)(**{keyword: theirs}, out=out_theirs),
                        rtol=op.tol, atol=op.tol)
    assert_same(out_ours, out_theirs, rtol=op.tol, atol=op.tol)


@pytest.mark.parametrize("name", list(OPS_BY_NAME))
def test_meta(name):
    op = OPS_BY_NAME[name]
    _skip_missing(op)
    for dtype in ("bool", "int32", "float16", "float32", "float64", "complex64"):
        for shape in ((), (2, 0), (3, 4)):
            ours = pyaten.empty(shape, dtype=getattr(pyaten, dtype), device="meta")
            theirs = torch.empty(shape, dtype=getattr(torch, dtype), device="meta")
            assert_same_outcome(partial(op.fn(pyaten), ours), partial(op.fn(torch), theirs),
                                message=False)


# --- edge values ----------------------------------------------------------------------------

EDGES = np.array([-np.inf, -3.0, -2.0, -1.5, -1.0, -0.5, -0.0, 0.0, 1e-300, 0.5, 1.0, 1.5, 2.0,
                  10.0, 100.0, 1e10, np.inf, np.nan])


@pytest.mark.parametrize("name", [op.name for op in OPS if op.needs is None])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_edge_values(name, dtype):
    op = OPS_BY_NAME[name]
    # float32 at 1e10: PyTorch's float loops lose all digits where SciPy's double ones don't.
    edges = EDGES[EDGES != 1e10] if dtype == "float32" else EDGES
    ours, theirs = pair(edges.shape, dtype, values=edges)
    pair_ = (op.fn(pyaten)(ours), op.fn(torch)(theirs))
    # Far out in the tails implementations may differ by a few ulps.
    rtol = 1e-4 if dtype == "float32" else max(op.tol or 0, 1e-9)
    assert_same(*pair_, rtol=rtol, atol=1e-30)
    got, expected = pair_[0].numpy(), pair_[1].numpy()
    zeros = (expected == 0) & (got == 0)
    assert np.array_equal(np.signbit(got[zeros]), np.signbit(expected[zeros])), "signed zeros"


# --- polygamma and mvlgamma -----------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
def test_polygamma(n):
    for dtype in DTYPE_NAMES:
        ours, theirs = operand("noncontig", dtype)
        tol = tol_for(dtype, 1e-4)
        assert_same_outcome(partial(pyaten.polygamma, n, ours), partial(torch.polygamma, n, theirs),
                            rtol=tol, atol=tol)
    ours, theirs = operand("2d", "float64", "positive")
    assert_same(pyaten.special.polygamma(n, ours), torch.special.polygamma(n, theirs), rtol=1e-9)
    assert_same(ours.polygamma(n), theirs.polygamma(n), rtol=1e-9)
    assert_same(ours.polygamma_(n), theirs.polygamma_(n), rtol=1e-9)
    out_ours, out_theirs = outs((0,), "float64")
    assert_same(pyaten.polygamma(n, ours, out=out_ours), torch.polygamma(n, theirs, out=out_theirs))


def test_polygamma_errors():
    ours, theirs = operand("2d", "float32")
    same_error(lambda: pyaten.polygamma(-1, ours), lambda: torch.polygamma(-1, theirs))
    ours, theirs = operand("2d", "int64")
    same_error(lambda: ours.polygamma_(1), lambda: theirs.polygamma_(1))


@pytest.mark.parametrize("p", [1, 2, 3, 5])
def test_mvlgamma(p):
    for dtype in DTYPE_NAMES:
        ours, theirs = operand("noncontig", dtype, "gamma")
        # Half types: PyTorch rounds the constant term to the half type before adding it
        # (pyaten's `add` of a Python float does not yet), a few ulps at most.
        tol = 1e-4 if dtype in ("float32", "float64") else 2e-2
        assert_same_outcome(partial(pyaten.mvlgamma, ours, p), partial(torch.mvlgamma, theirs, p),
                            rtol=tol, atol=tol)
        assert_same_outcome(partial(ours.mvlgamma_, p), partial(theirs.mvlgamma_, p),
                            rtol=tol, atol=tol)
    ours, theirs = operand("2d", "float64", "gamma")
    assert_same(pyaten.special.multigammaln(ours, p), torch.special.multigammaln(theirs, p))
    for out_dtype in ("float64", "float32", "int64"):
        out_ours, out_theirs = outs((2,), out_dtype)
        assert_same_outcome(partial(pyaten.mvlgamma, ours, p, out=out_ours),
                            partial(torch.mvlgamma, theirs, p, out=out_theirs))


def test_mvlgamma_errors():
    ours, theirs = operand("2d", "float32", "gamma")
    same_error(lambda: pyaten.mvlgamma(ours, 0), lambda: torch.mvlgamma(theirs, 0))
    ours, theirs = operand("2d", "bool")
    same_error(lambda: pyaten.mvlgamma(ours, 1), lambda: torch.mvlgamma(theirs, 1))
    ours, theirs = operand("2d", "int32", "gamma")
    same_error(lambda: pyaten.mvlgamma(ours, 2, out=pyaten.empty(0, dtype=pyaten.int64)),
               lambda: torch.mvlgamma(theirs, 2, out=torch.empty(0, dtype=torch.int64)))


# --- binary special functions: xlog1py, zeta ------------------------------------------------

BINARY = ["xlog1py", "zeta", "gammainc", "gammaincc"]
SHAPE_PAIRS = [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2,)), ((0, 3), (3,))]


@pytest.mark.parametrize("name", BINARY)
def test_binary_dtypes_and_broadcasting(name):
    ours_fn, theirs_fn = getattr(pyaten.special, name), getattr(torch.special, name)
    domain = "normal" if name == "xlog1py" else "positive"
    for dtype in DTYPE_NAMES:
        for i, (sa, sb) in enumerate(SHAPE_PAIRS):
            a, ta = pair(sa, dtype, domain, seed=i)
            b, tb = pair(sb, dtype, domain, seed=i + 10)
            tol = tol_for(dtype, 1e-4)
            assert_same_outcome(partial(ours_fn, a, b), partial(theirs_fn, ta, tb),
                                rtol=tol, atol=tol)
    # mixed dtypes promote (int with float, float32 with float64)
    a, ta = pair((3,), "int64", domain)
    b, tb = pair((3,), "float64", domain, seed=3)
    assert_same(ours_fn(a, b), theirs_fn(ta, tb))
    a, ta = pair((3,), "float32", domain)
    assert_same(ours_fn(a, b), theirs_fn(ta, tb))


@pytest.mark.parametrize("name", ["xlog1py", "zeta"])
def test_binary_scalar_overloads_and_out(name):
    ours_fn, theirs_fn = getattr(pyaten.special, name), getattr(torch.special, name)
    a, ta = pair((2, 3), "float32", "positive")
    for scalar in (2, 2.5, True):
        assert_same_outcome(partial(ours_fn, scalar, a), partial(theirs_fn, scalar, ta))
        assert_same_outcome(partial(ours_fn, a, scalar), partial(theirs_fn, ta, scalar))
        out, tout = outs((0,), "float32")
        assert_same_outcome(partial(ours_fn, scalar, a, out=out),
                            partial(theirs_fn, scalar, ta, out=tout))
        assert_same(out, tout)
        out, tout = outs((0,), "float32")
        assert_same_outcome(partial(ours_fn, a, scalar, out=out),
                            partial(theirs_fn, ta, scalar, out=tout))
        assert_same(out, tout)
    i, ti = pair((3,), "int64", "positive")
    assert_same(ours_fn(i, 2), theirs_fn(ti, 2))
    assert_same(ours_fn(i, i), theirs_fn(ti, ti))
    # (the parser's "didn't match because" details differ from PyTorch's: binding's business)
    same_error(lambda: ours_fn(2, 3), lambda: theirs_fn(2, 3), message=False)
    out, tout = outs((2, 3), "int64")
    same_error(lambda: ours_fn(a, a, out=out), lambda: theirs_fn(ta, ta, out=tout))
    b, tb = pair((4,), "float32")
    same_error(lambda: ours_fn(a, b), lambda: theirs_fn(ta, tb))


@pytest.mark.parametrize("name", BINARY)
def test_binary_edges_and_meta(name):
    grid = np.array(np.meshgrid(EDGES, EDGES)).reshape(2, -1)
    a, ta = pair(grid[0].shape, "float64", values=grid[0])
    b, tb = pair(grid[1].shape, "float64", values=grid[1])
    assert_same(getattr(pyaten.special, name)(a, b), getattr(torch.special, name)(ta, tb),
                rtol=1e-8, atol=1e-250)
    ours = pyaten.empty((2, 1), device="meta"), pyaten.empty((3,), dtype=pyaten.int64,
                                                             device="meta")
    theirs = torch.empty((2, 1), device="meta"), torch.empty((3,), dtype=torch.int64,
                                                             device="meta")
    assert_same(getattr(pyaten.special, name)(*ours), getattr(torch.special, name)(*theirs))


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_igamma_variants(name):
    a, ta = pair((2, 3), "float64", "positive")
    x, tx = pair((3,), "float64", "positive", seed=4)
    assert_same(getattr(a, name)(x), getattr(ta, name)(tx))
    assert_same(getattr(a, name + "_")(x), getattr(ta, name + "_")(tx))
    assert_same(a, ta)
    out, tout = outs((0,), "float64")
    assert_same(getattr(pyaten, name)(a, x, out=out), getattr(torch, name)(ta, tx, out=tout))
    i, ti = pair((3,), "int64", "positive")
    same_error(partial(getattr(pyaten, name), i, i), partial(getattr(torch, name), ti, ti))
    same_error(partial(getattr(x, name + "_"), a), partial(getattr(tx, name + "_"), ta))


# --- orthogonal polynomials P_n(x) -----------------------------------------------------------

POLYNOMIALS = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p",
]
_X = np.concatenate([[-1, 1, 0, -0.5, 0.5, 0.25, 0.75, 2, -2, 0.999, -3.5, np.inf],
                     np.random.default_rng(1).uniform(-1.5, 1.5, 12)])
# degrees: negative, small, past the closed-form thresholds (6, 8), fractional, NaN
_N = np.array([-1, 0, 1, 2, 3, 5, 7, 9, 12, 2.7, -2.5, np.nan])


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials(name):
    ours_fn, theirs_fn = getattr(pyaten.special, name), getattr(torch.special, name)
    grid_x, grid_n = (v.ravel() for v in np.meshgrid(_X, _N))
    for dtype, tol in (("float64", 1e-10), ("float32", 1e-4)):
        x, tx = pair(grid_x.shape, dtype, values=grid_x)
        n, tn = pair(grid_n.shape, dtype, values=grid_n)
        assert_same(ours_fn(x, n), theirs_fn(tx, tn), rtol=tol, atol=tol)
    # Scalar overloads, integer degrees, broadcasting, out=, dtypes, Meta
    x, tx = pair((2, 3), "float64", values=np.linspace(-1.2, 1.2, 6).reshape(2, 3))
    assert_same(ours_fn(x, 4), theirs_fn(tx, 4))
    assert_same(ours_fn(0.3, pyaten.tensor([1, 2, 5])), theirs_fn(0.3, torch.tensor([1, 2, 5])))
    out, tout = outs((0,), "float64")
    assert_same(ours_fn(x, 3, out=out), theirs_fn(tx, 3, out=tout))
    for dtype in DTYPE_NAMES:
        a, ta = operand("2d", dtype)
        assert_same_outcome(partial(ours_fn, a, a), partial(theirs_fn, ta, ta),
                            rtol=tol_for(dtype, 1e-4), atol=tol_for(dtype, 1e-4))
    meta = pyaten.empty((2, 1), device="meta"), pyaten.empty(3, dtype=pyaten.int64, device="meta")
    tmeta = torch.empty((2, 1), device="meta"), torch.empty(3, dtype=torch.int64, device="meta")
    assert_same(ours_fn(*meta), theirs_fn(*tmeta))


# --- aliases of other families' operators ---------------------------------------------------


def test_xlogy_alias():
    if not hasattr(pyaten, "xlogy"):
        pytest.skip("needs pyaten.xlogy (binary family)")
    a, ta = pair((2, 3), "float32", "positive")
    assert_same(pyaten.special.xlogy(a, a), torch.special.xlogy(ta, ta))
    assert_same(pyaten.special.xlogy(2, a), torch.special.xlogy(2, ta))
    assert_same(pyaten.special.xlogy(a, 2.5), torch.special.xlogy(ta, 2.5))
    out, tout = outs((0,), "float32")
    assert_same(pyaten.special.xlogy(a, a, out=out), torch.special.xlogy(ta, ta, out=tout))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_aliases(name):
    if not hasattr(pyaten, name):
        pytest.skip(f"needs pyaten.{name} (reductions family)")
    a, ta = pair((2, 3), "float32")
    assert_same(getattr(pyaten.special, name)(a, 1), getattr(torch.special, name)(ta, 1))
    assert_same(getattr(pyaten.special, name)(a, 0, dtype=pyaten.float64),
                getattr(torch.special, name)(ta, 0, dtype=torch.float64))
    i, ti = pair((2, 3), "int64")
    assert_same_outcome(lambda: getattr(pyaten.special, name)(i, -1),
                        lambda: getattr(torch.special, name)(ti, -1))


def test_logsumexp_alias():
    if not hasattr(pyaten, "logsumexp"):
        pytest.skip("needs pyaten.logsumexp (reductions family)")
    a, ta = pair((2, 3), "float32")
    assert_same(pyaten.special.logsumexp(a, 1), torch.special.logsumexp(ta, 1))
    assert_same(pyaten.special.logsumexp(a, [0, 1], keepdim=True),
                torch.special.logsumexp(ta, [0, 1], keepdim=True))


def test_logit_eps_and_round_decimals():
    if not (hasattr(pyaten, "logit") and hasattr(pyaten, "round")):
        pytest.skip("needs pyaten.logit and pyaten.round (unary family)")
    a, ta = pair((2, 3), "float32", "prob")
    assert_same(pyaten.special.logit(a, eps=0.2), torch.special.logit(ta, eps=0.2))
    b, tb = pair((2, 3), "float32")
    assert_same(pyaten.special.round(b, decimals=2), torch.special.round(tb, decimals=2))


# --- the module -----------------------------------------------------------------------------


def test_special_module():
    assert pyaten.special is __import__("pyaten.special").special
    assert pyaten.special.entr.__module__ == "pyaten.special"
    assert not hasattr(pyaten, "special_entr")  # torch.special's functions stay in the module
    ours, theirs = operand("2d", "float32")
    same_error(lambda: pyaten.special.entr("a"), lambda: torch.special.entr("a"))
    assert pyaten.ops.aten.special_entr.default(ours).shape == torch.special.entr(theirs).shape
    with pytest.raises(AttributeError, match="has no attribute 'no_such_function'"):
        pyaten.special.no_such_function  # noqa: B018
    missing = sorted(
        n for n in dir(torch.special)
        if not n.startswith("_") and n != "Tensor" and callable(getattr(torch.special, n))
        and not hasattr(pyaten.special, n)
    )
    assert missing == [], missing  # every public function of torch.special


# --- PyTorch's OpInfo samples ---------------------------------------------------------------


@functools.cache
def _op_infos() -> dict:
    from torch.testing._internal.common_methods_invocations import op_db

    wanted = {"erf", "erfc", "erfinv", "lgamma", "digamma", "polygamma", "mvlgamma", "i0",
              "sinc"}
    return {
        (info.name, info.variant_test_name): info for info in op_db
        if info.name in wanted or (
            info.name.startswith("special.") and hasattr(pyaten.special, info.name[8:])
        )
    }


def _resolve(module, name: str):
    for part in name.split("."):
        module = getattr(module, part)
    return module


@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_opinfo_samples(dtype):
    checked = 0
    for (name, _variant), info in sorted(_op_infos().items()):
        if getattr(torch, dtype) not in info.dtypes:
            continue
        ours_fn, theirs_fn = _resolve(pyaten, name), _resolve(torch, name)
        samples = opinfo_samples(info, getattr(torch, dtype))
        for sample in samples:
            theirs, ours, kwargs = sample_arguments(sample)
            assert_same_outcome(partial(ours_fn, *ours, **kwargs),
                                partial(theirs_fn, *theirs, **sample.kwargs),
                                rtol=1e-4, atol=1e-5)
            checked += 1
    assert checked > 50


# --- hypothesis: values ---------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.one_of(st.floats(-50, 50), st.sampled_from([np.nan, np.inf, -np.inf])),
                    max_size=10),
    name=st.sampled_from(["erf", "erfc", "lgamma", "digamma", "i0", "sinc", "special.entr",
                          "special.erfcx", "special.i1e", "special.log_ndtr", "special.ndtr",
                          "special.bessel_j0", "special.modified_bessel_k1",
                          "special.spherical_bessel_j0", "polygamma_1"]),
    dtype=st.sampled_from(["float32", "float64"]),
)
def test_hypothesis_values(values, name, dtype):
    op = OPS_BY_NAME[name]
    ours, theirs = pair((len(values),), dtype, values=np.array(values, np.float64))
    assert_same_outcome(lambda: op.fn(pyaten)(ours), lambda: op.fn(torch)(theirs),
                        rtol=1e-4 if dtype == "float32" else 1e-9, atol=1e-6)
