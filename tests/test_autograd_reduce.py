"""Gradients of the reduce family against torch, in float64: reductions, scans, order
statistics, softmax and the FFT primitives.

`GRAD_SURFACE` lists the OpInfo names whose float64 samples run in both libraries with the same
cotangents (tests/_grad_helpers.py); `SECOND_ORDER` compares the gradients' gradients too. The
hand-written cases cover what the OpInfos leave out: keepdim and dim lists, negative and empty
dims, ties, zeros in prod/cumprod, in-place variants on non-leaves, non-contiguous and complex
inputs, the backward helper operators, and out= refusing an input that requires grad.
"""

from __future__ import annotations

import pytest
import torch
from _grad_helpers import check_grads, check_opinfo_grads, opinfo_grad_cases
from _helpers import same_error

import pyaten

# OpInfo names whose gradients are compared here.
GRAD_SURFACE = frozenset("""
mean nansum prod amax amin max min aminmax std var std_mean var_mean logsumexp norm dist
cumsum cumprod cummax cummin logcumsumexp trace softmax log_softmax _softmax_backward_data
median nanmedian mode kthvalue quantile nanquantile diff
fft.fft fft.fft2 fft.fftn fft.ifft fft.ifft2 fft.ifftn fft.rfft fft.rfft2 fft.rfftn
fft.irfft fft.irfft2 fft.irfftn fft.hfft fft.hfft2 fft.hfftn fft.ihfft fft.ihfft2 fft.ihfftn
""".split())

# Second order compared too.
SECOND_ORDER = GRAD_SURFACE

# OpInfo variants left out, with the reason.
NOT_YET: dict[tuple[str, str], str] = {
    ("norm", "nuc"): "nuclear norm is linalg's (svd)",
    ("max", "binary"): "max(a, b) is maximum's, the binary family",
    ("min", "binary"): "min(a, b) is minimum's, the binary family",
    ("norm", ""): "torch.norm's composite reaches linalg_vector_norm (linalg family)",
    ("norm", "fro"): "torch.norm's composite reaches linalg_vector_norm (linalg family)",
    ("norm", "inf"): "torch.norm's composite reaches linalg_vector_norm (linalg family)",
    # The engine counts a node once per root: two outputs of one node given as separate roots
    # (as the sample runner does) leave the inputs without gradient. Covered with one root in
    # test_multi_output_reductions.
    ("aminmax", ""): "engine: outputs of one node as separate roots",
    ("var_mean", ""): "engine: outputs of one node as separate roots",
    ("var_mean", "unbiased"): "engine: outputs of one node as separate roots",
    ("std_mean", ""): "engine: outputs of one node as separate roots",
    ("std_mean", "unbiased"): "engine: outputs of one node as separate roots",
}

# The samples of each OpInfo compared (the first one also through gradcheck).
MAX_SAMPLES = 8


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE, NOT_YET))
def test_gradients_match_torch(info) -> None:
    check_opinfo_grads(info, info.name in SECOND_ORDER, limit=MAX_SAMPLES)


# --- hand-written cases -------------------------------------------------------------------------

def _both(fn):
    """(call_ours, call_theirs) for `fn(m, *tensors)`, m being pyaten or torch."""
    return (lambda *xs: fn(pyaten, *xs)), (lambda *xs: fn(torch, *xs))


def _randn(*shape, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype)


X = _randn(3, 4, 5)
TIES = torch.tensor([[1.0, 3.0, 3.0, -2.0], [0.5, 0.5, 0.5, 0.5], [2.0, -1.0, 2.0, -1.0]],
                    dtype=torch.float64)
ZEROS = torch.tensor([[1.5, 0.0, 2.0, -3.0], [0.0, 2.0, 0.0, 0.5], [1.0, 2.0, 3.0, 4.0]],
                     dtype=torch.float64)
CPLX = torch.complex(_randn(3, 4, seed=1), _randn(3, 4, seed=2))

REDUCTIONS = {
    "sum_dims": lambda m, x: x.sum((0, -1)),
    "sum_keepdim": lambda m, x: x.sum([-2], keepdim=True),
    "sum_empty_dims": lambda m, x: x.sum([]),
    "sum_dtype": lambda m, x: x.sum(1, dtype=m.float64),
    "mean_dims_keepdim": lambda m, x: x.mean((1, 2), keepdim=True),
    "mean_neg_dim": lambda m, x: x.mean(-1),
    "mean_empty_dims": lambda m, x: x.mean([]),
    "nansum_nan": lambda m, x: m.where(x > 1, float("nan"), x).nansum((0, 2), keepdim=True),
    "prod_all": lambda m, x: x.prod(),
    "prod_dim_keepdim": lambda m, x: x.prod(-1, keepdim=True),
    "amax_dims": lambda m, x: x.amax((0, 2)),
    "amin_keepdim": lambda m, x: x.amin(1, keepdim=True),
    "max_dim_keepdim": lambda m, x: x.max(-1, keepdim=True)[0],
    "min_dim": lambda m, x: x.min(0)[0],
    "median_dim": lambda m, x: x.median(1, keepdim=True)[0],
    "nanmedian_dim": lambda m, x: x.nanmedian(-1)[0],
    "kthvalue_keepdim": lambda m, x: x.kthvalue(2, 0, keepdim=True)[0],
    "mode_dim": lambda m, x: x.mode(1)[0],
    "var_dims": lambda m, x: x.var((0, 2), correction=0),
    "var_keepdim": lambda m, x: x.var(-1, keepdim=True, correction=2),
    "std_all": lambda m, x: x.std(),
    "std_dims_keepdim": lambda m, x: x.std((1,), keepdim=True),
    "logsumexp_dims": lambda m, x: x.logsumexp((0, -1)),
    "logsumexp_keepdim": lambda m, x: x.logsumexp(1, keepdim=True),
    "cumsum_neg_dim": lambda m, x: x.cumsum(-1),
    "cumprod_dim": lambda m, x: x.cumprod(1),
    "cummax_dim": lambda m, x: x.cummax(0)[0],
    "cummin_neg_dim": lambda m, x: x.cummin(-2)[0],
    "logcumsumexp_dim": lambda m, x: x.logcumsumexp(1),
    "softmax_dim0": lambda m, x: x.softmax(0),
    "log_softmax_neg": lambda m, x: x.log_softmax(-1),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_dims_and_keepdim(name) -> None:
    check_grads(*_both(REDUCTIONS[name]), [X], second_order=True)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_non_contiguous_input(name) -> None:
    check_grads(*_both(lambda m, x: REDUCTIONS[name](m, x.transpose(0, 2))), [X.transpose(0, 2)
                .contiguous().transpose(0, 2)])


TIE_CASES = {
    "amax": lambda m, x: x.amax(1),
    "amin_all": lambda m, x: x.amin(),
    "max_all": lambda m, x: x.max(),
    "min_all": lambda m, x: x.min(),
    "median_all": lambda m, x: x.median(),
    "nanmedian_all": lambda m, x: x.nanmedian(),
    "max_dim": lambda m, x: x.max(1)[0],
    "cummax": lambda m, x: x.cummax(1)[0],
    "cummin": lambda m, x: x.cummin(0)[0],
    "norm_inf": lambda m, x: m.ops.aten.norm.ScalarOpt_dim(x, float("inf"), [1]),
}


@pytest.mark.parametrize("name", sorted(TIE_CASES))
def test_ties_spread_as_torch(name) -> None:
    check_grads(*_both(TIE_CASES[name]), [TIES])


ZERO_CASES = {
    "prod_all": lambda m, x: x.prod(),
    "prod_dim": lambda m, x: x.prod(1),
    "prod_dim0_keepdim": lambda m, x: x.prod(0, keepdim=True),
    "cumprod": lambda m, x: x.cumprod(1),
    "cumprod_dim0": lambda m, x: x.cumprod(0),
}


@pytest.mark.parametrize("name", sorted(ZERO_CASES))
def test_zeros_in_products(name) -> None:
    check_grads(*_both(ZERO_CASES[name]), [ZEROS])


@pytest.mark.parametrize("name", sorted(ZERO_CASES))
def test_zeros_in_products_second_order(name) -> None:
    check_grads(*_both(ZERO_CASES[name]), [ZEROS[:2]], second_order=True)


NORMS = [0, 0.5, 1, 1.5, 2, 3, float("inf")]


@pytest.mark.parametrize("p", NORMS)
def test_norm_overloads(p) -> None:
    def fn(m, x):
        aten = m.ops.aten
        return (aten.norm.Scalar(x, p) + aten.norm.ScalarOpt_dim(x, p, [0, -1]).sum()
                + aten.norm.ScalarOpt_dtype(x, p, dtype=m.float64)
                + aten.norm.ScalarOpt_dim_dtype(x, p, [1], True, dtype=m.float64).sum())
    check_grads(*_both(fn), [X], second_order=p not in (0, float("inf")))


# p = 0: torch's own backward fails (it negates the undefined gradient norm_backward gives)
@pytest.mark.parametrize("p", NORMS[1:])
def test_dist(p) -> None:
    check_grads(*_both(lambda m, x, y: m.dist(x, y, p)), [X[0], _randn(4, 5, seed=3)[0]])


def _combined(outputs):
    # one root for all outputs (see NOT_YET: outputs of one node given as separate roots)
    return sum(o.sum() * (i + 1) for i, o in enumerate(outputs))


MULTI_OUTPUT = {
    "aminmax_all": lambda m, x: _combined(x.aminmax()),
    "aminmax_dim": lambda m, x: _combined(x.aminmax(dim=-1, keepdim=True)),
    "var_mean": lambda m, x: _combined(m.var_mean(x, (0, 2), correction=0)),
    "std_mean": lambda m, x: _combined(m.std_mean(x, 1, keepdim=True)),
    "std_mean_all": lambda m, x: _combined(m.std_mean(x)),
    "var_mean_only_mean": lambda m, x: m.var_mean(x, 1)[1],
    "std_mean_only_std": lambda m, x: m.std_mean(x, -1)[0],
}


@pytest.mark.parametrize("name", sorted(MULTI_OUTPUT))
def test_multi_output_reductions(name) -> None:
    check_grads(*_both(MULTI_OUTPUT[name]), [X], second_order=True)


COMPLEX_CASES = {
    "sum": lambda m, x: x.sum(0),
    "mean": lambda m, x: x.mean().reshape(1),
    "prod": lambda m, x: x.prod(1),
    "cumsum": lambda m, x: x.cumsum(0),
    "cumprod": lambda m, x: x.cumprod(1),
    "var": lambda m, x: x.var(1),
    "std": lambda m, x: x.std().reshape(1),
    "norm": lambda m, x: m.ops.aten.norm.ScalarOpt_dim(x, 3, [1]),
    "norm2": lambda m, x: m.ops.aten.norm.Scalar(x, 2).reshape(1),
    "logsumexp": lambda m, x: x.logsumexp(1),
    "logcumsumexp": lambda m, x: x.logcumsumexp(0),
    "trace": lambda m, x: x.trace().reshape(1),
    "fft": lambda m, x: m.fft.fft(x, dim=0),
    "ifft2": lambda m, x: m.fft.ifft2(x, norm="ortho"),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_CASES))
def test_complex_inputs(name) -> None:
    check_grads(*_both(COMPLEX_CASES[name]), [CPLX])


INPLACE = {
    "cumsum_": lambda m, x: x.clone().cumsum_(1),
    "cumprod_": lambda m, x: (x * 1).cumprod_(0),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_on_non_leaf(name) -> None:
    # first order only: the in-place kernel's copy of `self` is taken outside autograd, so a
    # formula reading `self` (cumprod's) loses that path in a double backward (engine)
    check_grads(*_both(INPLACE[name]), [X[0]])


def test_softmax_backward_helpers() -> None:
    def fn(m, g, x):
        aten = m.ops.aten
        y = x.softmax(1)
        ly = x.log_softmax(0)
        return (aten._softmax_backward_data(g, y, 1, m.float64)
                + aten._log_softmax_backward_data(g, ly, 0, m.float64))
    check_grads(*_both(fn), [_randn(3, 4, seed=5), _randn(3, 4, seed=6)], second_order=True)


def test_fft_primitives() -> None:
    def fn(m, x, z):
        aten = m.ops.aten
        return (aten._fft_r2c(x, [0, 1], 2, True).abs().sum()
                + aten._fft_c2r(z, [1], 1, 7).sum() * 2
                + aten._fft_c2c(z, [0], 0, False).real.sum())
    check_grads(*_both(fn), [_randn(3, 5), CPLX], second_order=True)


OUT_CALLS = {
    "cumsum": lambda m, x, o: m.cumsum(x, 0, out=o),
    "sum": lambda m, x, o: m.sum(x, 0, out=o),
    "logsumexp": lambda m, x, o: m.logsumexp(x, 1, out=o),
    "amax": lambda m, x, o: m.amax(x, 0, out=o),
    "prod": lambda m, x, o: m.prod(x, 0, out=o),
}


@pytest.mark.parametrize("name", sorted(OUT_CALLS))
def test_out_refuses_input_requiring_grad(name) -> None:
    def call(m):
        x = m.ones(3, 4, dtype=m.float64, requires_grad=True)
        return OUT_CALLS[name](m, x, m.empty(0, dtype=m.float64))
    same_error(lambda: call(pyaten), lambda: call(torch))


NODE_NAMES = {
    "max_all": lambda m, x: x.max(),
    "max_dim": lambda m, x: x.max(0)[0],
    "median_dim": lambda m, x: x.median(0)[0],
    "mean_dim": lambda m, x: x.mean(0),
    "prod_dim": lambda m, x: x.prod(0),
    "norm_dim_dtype": lambda m, x: m.ops.aten.norm.ScalarOpt_dim_dtype(x, 2, [0], False,
                                                                       dtype=m.float64),
    "softmax": lambda m, x: x.softmax(0),
    "cummax": lambda m, x: x.cummax(0)[0],
    "var_mean": lambda m, x: m.var_mean(x, 0)[0],
}


@pytest.mark.parametrize("name", sorted(NODE_NAMES))
def test_node_names(name) -> None:
    def names(m):
        x = m.ones(3, 4, dtype=m.float64, requires_grad=True)
        return NODE_NAMES[name](m, x).grad_fn.name()
    assert names(pyaten) == names(torch)


EMPTY_CASES = {
    "sum": lambda m, x: x.sum(0),
    "mean": lambda m, x: x.mean(0),
    "prod_all": lambda m, x: x.prod().reshape(1),
    "prod_dim": lambda m, x: x.prod(1),
    "cumsum": lambda m, x: x.cumsum(0),
    "cumprod": lambda m, x: x.cumprod(1),
    "logsumexp": lambda m, x: x.logsumexp(0),
    "softmax": lambda m, x: x.softmax(0),
    "var": lambda m, x: x.var(1),
    "norm": lambda m, x: m.ops.aten.norm.ScalarOpt_dim(x, 2, [0]),
    "amax": lambda m, x: x.amax(1),
    "cummax": lambda m, x: x.cummax(0)[0],
    "logcumsumexp": lambda m, x: x.logcumsumexp(0),
    "trace": lambda m, x: x.trace().reshape(1),
}


@pytest.mark.filterwarnings("ignore:var\\(\\)")
@pytest.mark.parametrize("name", sorted(EMPTY_CASES))
def test_empty_inputs(name) -> None:
    check_grads(*_both(EMPTY_CASES[name]), [torch.zeros(0, 3, dtype=torch.float64)],
                second_order=True)


NO_FREEDOM = {
    "var": lambda m, x: x.var(0),
    "std": lambda m, x: x.std(0),
    "var_all": lambda m, x: x.var(correction=3),
    "std_mean": lambda m, x: m.std_mean(x, 0)[0],
}


@pytest.mark.parametrize("name", sorted(NO_FREEDOM))
def test_no_degrees_of_freedom(name) -> None:
    x = torch.tensor([[1.0, 2.0, 2.0]], dtype=torch.float64)
    with pytest.warns(UserWarning):
        check_grads(*_both(NO_FREEDOM[name]), [x])
