"""Probability distributions, PyTorch's `torch.distributions` (docs/distributions.md).

Each distribution is a `Distribution` with `batch_shape`/`event_shape`, parameters checked
against `arg_constraints`, `sample`/`rsample` drawn with the same random operators PyTorch
calls (so a seeded program draws PyTorch's numbers), `log_prob`, moments and entropy;
`kl_divergence` dispatches on pairs of types; `transforms` and `constraint_registry` map
between constrained spaces.
"""

from __future__ import annotations

from pyaten.distributions import constraints, transforms
from pyaten.distributions.bernoulli import Bernoulli
from pyaten.distributions.beta import Beta
from pyaten.distributions.binomial import Binomial
from pyaten.distributions.categorical import Categorical
from pyaten.distributions.cauchy import Cauchy
from pyaten.distributions.chi2 import Chi2
from pyaten.distributions.constraint_registry import biject_to, transform_to
from pyaten.distributions.continuous_bernoulli import ContinuousBernoulli
from pyaten.distributions.dirichlet import Dirichlet
from pyaten.distributions.distribution import Distribution
from pyaten.distributions.exp_family import ExponentialFamily
from pyaten.distributions.exponential import Exponential
from pyaten.distributions.fishersnedecor import FisherSnedecor
from pyaten.distributions.gamma import Gamma
from pyaten.distributions.generalized_pareto import GeneralizedPareto
from pyaten.distributions.geometric import Geometric
from pyaten.distributions.gumbel import Gumbel
from pyaten.distributions.half_cauchy import HalfCauchy
from pyaten.distributions.half_normal import HalfNormal
from pyaten.distributions.independent import Independent
from pyaten.distributions.inverse_gamma import InverseGamma
from pyaten.distributions.kl import kl_divergence, register_kl
from pyaten.distributions.kumaraswamy import Kumaraswamy
from pyaten.distributions.laplace import Laplace
from pyaten.distributions.lkj_cholesky import LKJCholesky
from pyaten.distributions.log_normal import LogNormal
from pyaten.distributions.logistic_normal import LogisticNormal
from pyaten.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from pyaten.distributions.mixture_same_family import MixtureSameFamily
from pyaten.distributions.multinomial import Multinomial
from pyaten.distributions.multivariate_normal import MultivariateNormal
from pyaten.distributions.negative_binomial import NegativeBinomial
from pyaten.distributions.normal import Normal
from pyaten.distributions.one_hot_categorical import (
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from pyaten.distributions.pareto import Pareto
from pyaten.distributions.poisson import Poisson
from pyaten.distributions.relaxed_bernoulli import RelaxedBernoulli
from pyaten.distributions.relaxed_categorical import RelaxedOneHotCategorical
from pyaten.distributions.studentT import StudentT
from pyaten.distributions.transformed_distribution import TransformedDistribution
from pyaten.distributions.transforms import *  # noqa: F403
from pyaten.distributions.uniform import Uniform
from pyaten.distributions.von_mises import VonMises
from pyaten.distributions.weibull import Weibull
from pyaten.distributions.wishart import Wishart

__all__ = [
    "Wishart",
    "FisherSnedecor",
    "GeneralizedPareto",
    "InverseGamma",
    "LKJCholesky",
    "LogisticNormal",
    "OneHotCategoricalStraightThrough",
    "ContinuousBernoulli",
    "Kumaraswamy",
    "LowRankMultivariateNormal",
    "MixtureSameFamily",
    "NegativeBinomial",
    "Pareto",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "VonMises",
    "Weibull",
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Cauchy",
    "Chi2",
    "Dirichlet",
    "Distribution",
    "Exponential",
    "ExponentialFamily",
    "Gamma",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "Laplace",
    "LogNormal",
    "Multinomial",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "Poisson",
    "StudentT",
    "TransformedDistribution",
    "Uniform",
    "biject_to",
    "constraints",
    "kl_divergence",
    "register_kl",
    "transform_to",
    "transforms",
]
__all__.extend(transforms.__all__)
