"""PyTorch's own example parameters (test/distributions/test_distributions.py's examples,
random tensors drawn here with NumPy): for each, shapes, seeded samples, log_prob of a
sample, entropy and moments against torch.distributions."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributions as TD

import pyaten
import pyaten.distributions as PD

_R = np.random.default_rng(3)


def _pos(*shape):
    return np.exp(_R.normal(size=shape))


def _real(*shape):
    return _R.normal(size=shape)


# (distribution, parameters) pairs, PyTorch's examples with NumPy draws for its randn
EXAMPLES = [
    ("Bernoulli", {"probs": np.array([0.7, 0.2, 0.4])}),
    ("Bernoulli", {"probs": 0.3}),
    ("Bernoulli", {"logits": np.array([0.0])}),
    ("Geometric", {"probs": np.array([0.7, 0.2, 0.4])}),
    ("Geometric", {"probs": 0.3}),
    ("Beta", {"concentration1": _pos(2, 3), "concentration0": _pos(2, 3)}),
    ("Beta", {"concentration1": _pos(4), "concentration0": _pos(4)}),
    ("Categorical", {"probs": np.array([[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]])}),
    ("Categorical", {"probs": np.array([[1.0, 0.0], [0.0, 1.0]])}),
    ("Categorical", {"logits": np.array([[0.0, 0.0], [0.0, 0.0]])}),
    ("Binomial", {"probs": np.array([[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]]), "total_count": 10}),
    ("Binomial", {"probs": np.array([[1.0, 0.0], [0.0, 1.0]]), "total_count": 10}),
    ("Binomial", {"probs": np.array([[1.0, 0.0], [0.0, 1.0]]),
                  "total_count": np.array([[10.0, 8.0], [5.0, 3.0]])}),
    ("Binomial", {"probs": np.array([[1.0, 0.0], [0.0, 1.0]]), "total_count": np.array(0.0)}),
    ("NegativeBinomial", {"probs": np.array([[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]]),
                          "total_count": 10}),
    ("NegativeBinomial", {"probs": np.array([[0.9, 0.0], [0.0, 0.9]]),
                          "total_count": np.array([[10.0, 8.0], [5.0, 3.0]])}),
    ("Multinomial", {"probs": np.array([[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]]), "total_count": 10}),
    ("Cauchy", {"loc": 0.0, "scale": 1.0}),
    ("Cauchy", {"loc": np.array([[0.0], [0.0]]), "scale": np.array([[1.0], [1.0]])}),
    ("Chi2", {"df": _pos(2, 3)}),
    ("StudentT", {"df": _pos(2, 3)}),
    ("StudentT", {"df": _pos(1)}),
    ("Dirichlet", {"concentration": _pos(2, 3)}),
    ("Dirichlet", {"concentration": _pos(4)}),
    ("Exponential", {"rate": np.abs(_real(5, 5))}),
    ("FisherSnedecor", {"df1": np.abs(_real(5, 5)), "df2": np.abs(_real(5, 5))}),
    ("FisherSnedecor", {"df1": np.array([1.0]), "df2": 1.0}),
    ("Gamma", {"concentration": _pos(2, 3), "rate": _pos(2, 3)}),
    ("Gumbel", {"loc": _real(5, 5), "scale": np.abs(_real(5, 5))}),
    ("HalfCauchy", {"scale": 1.0}),
    ("HalfNormal", {"scale": np.array([1e-5, 1e-5])}),
    ("Kumaraswamy", {"concentration1": _R.uniform(1, 2, (2, 3)),
                     "concentration0": _R.uniform(1, 2, (2, 3))}),
    ("LKJCholesky", {"dim": 2, "concentration": 0.5}),
    ("LKJCholesky", {"dim": 3, "concentration": np.array([0.5, 1.0, 2.0])}),
    ("Laplace", {"loc": np.array([1.0, 0.0]), "scale": np.array([1e-5, 1e-5])}),
    ("LogNormal", {"loc": _real(5, 5), "scale": np.abs(_real(5, 5))}),
    ("LogisticNormal", {"loc": _real(5, 5), "scale": np.abs(_real(5, 5))}),
    ("LowRankMultivariateNormal", {"loc": _real(5, 2), "cov_factor": _real(5, 2, 1),
                                   "cov_diag": np.array([2.0, 0.25])}),
    ("LowRankMultivariateNormal", {"loc": _real(4, 3), "cov_factor": _real(3, 2),
                                   "cov_diag": np.array([5.0, 1.5, 3.0])}),
    ("MultivariateNormal", {"loc": _real(5, 2),
                            "covariance_matrix": np.array([[2.0, 0.3], [0.3, 0.25]])}),
    ("MultivariateNormal", {"loc": _real(2, 3), "precision_matrix": np.array(
        [[2.0, 0.1, 0.0], [0.1, 0.25, 0.0], [0.0, 0.0, 0.3]])}),
    ("MultivariateNormal", {"loc": _real(5, 3, 2), "scale_tril": np.array(
        [[[2.0, 0.0], [-0.5, 0.25]], [[2.0, 0.0], [0.3, 0.25]], [[5.0, 0.0], [-0.5, 1.5]]])}),
    ("Normal", {"loc": _real(5, 5), "scale": np.abs(_real(5, 5))}),
    ("Normal", {"loc": np.array([1.0, 0.0]), "scale": np.array([1e-5, 1e-5])}),
    ("OneHotCategorical", {"probs": np.array([[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]])}),
    ("Pareto", {"scale": 1.0, "alpha": 1.0}),
    ("Pareto", {"scale": np.abs(_real(5, 5)), "alpha": np.abs(_real(5, 5))}),
    ("Poisson", {"rate": np.abs(_real(5, 5))}),
    ("Poisson", {"rate": np.array([0.0, 1.0, 30.0])}),
    ("RelaxedBernoulli", {"temperature": np.array([0.5]),
                          "probs": np.array([0.7, 0.2, 0.4])}),
    ("RelaxedOneHotCategorical", {"temperature": np.array([0.5]),
                                  "probs": np.array([[0.1, 0.2, 0.7], [0.5, 0.3, 0.2]])}),
    ("Uniform", {"low": np.array([0.0, 1.0]), "high": np.array([1.0, 3.0])}),
    ("Uniform", {"low": 0.0, "high": 2.0}),
    ("ContinuousBernoulli", {"probs": np.array([0.7, 0.2, 0.4])}),
    ("ContinuousBernoulli", {"logits": np.array([0.0])}),
    ("VonMises", {"loc": np.array([1.0]), "concentration": np.array([10.0])}),
    ("VonMises", {"loc": np.array([0.0, 0.0]), "concentration": np.array([1e-4, 1e2])}),
    ("Weibull", {"scale": np.abs(_real(5, 5)), "concentration": np.abs(_real(5, 5))}),
    ("Wishart", {"covariance_matrix": np.array([[2.0, 0.3], [0.3, 0.25]]),
                 "df": np.array([3.0])}),
    ("InverseGamma", {"concentration": _pos(2, 3), "rate": _pos(2, 3)}),
    ("GeneralizedPareto", {"loc": _real(2, 3), "scale": _pos(2, 3),
                           "concentration": _R.uniform(-0.4, 0.4, (2, 3))}),
]


def _build(name: str, params: dict, lib_name: str):
    lib, dists = (torch, TD) if lib_name == "torch" else (pyaten, PD)
    kwargs = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in params.items()}
    return getattr(dists, name)(**kwargs)


def _close(ours, theirs, what: str, rtol: float = 1e-5) -> None:
    assert tuple(ours.shape) == tuple(theirs.shape), what
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol,
                               atol=1e-8, equal_nan=True, err_msg=what)


@pytest.mark.filterwarnings("ignore:Singular sample detected")
@pytest.mark.parametrize("index", range(len(EXAMPLES)),
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(EXAMPLES)])
def test_pytorch_example(index):
    name, params = EXAMPLES[index]
    ours, theirs = _build(name, params, "pyaten"), _build(name, params, "torch")
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    torch.manual_seed(6)
    pyaten.manual_seed(6)
    b = theirs.sample((2,))
    a = ours.sample((2,))
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7)
    try:
        expected = theirs.log_prob(b)
    except RuntimeError as error:  # float64 GeneralizedPareto: torch's isclose refuses
        with pytest.raises(RuntimeError, match=str(error)):
            ours.log_prob(pyaten.tensor(b.numpy()))
    else:
        _close(ours.log_prob(pyaten.tensor(b.numpy())), expected, f"{name} log_prob")
    for what in ("mean", "variance", "entropy"):
        try:
            expected = getattr(theirs, what)
            expected = expected() if callable(expected) else expected
        except NotImplementedError:
            continue
        got = getattr(ours, what)
        _close(got() if callable(got) else got, expected, f"{name} {what}")
