"""KL divergence KL(p || q) between distributions, dispatched on the pair of types
(PyTorch's `torch.distributions.kl`).

Note: choosing a KL implementation.
    `register_kl(P, Q)` files a function under a pair of classes. For a call on instances of
    (p_type, q_type), every registered pair of superclasses matches; the most specific one
    wins, ordered first by p's class, then (a second ranking) by q's class. When the two
    rankings pick different functions the pair is ambiguous: the first one is used and a
    RuntimeWarning names the registration that would settle it. Choices are memoised per
    pair of types, and the memo is cleared by every registration.
"""

from __future__ import annotations

import math
import warnings
from functools import total_ordering

import pyaten as torch
import pyaten.nn.functional as F
from pyaten.distributions.bernoulli import Bernoulli
from pyaten.distributions.beta import Beta
from pyaten.distributions.binomial import Binomial
from pyaten.distributions.categorical import Categorical
from pyaten.distributions.cauchy import Cauchy
from pyaten.distributions.dirichlet import Dirichlet
from pyaten.distributions.distribution import Distribution
from pyaten.distributions.exp_family import ExponentialFamily
from pyaten.distributions.exponential import Exponential
from pyaten.distributions.gamma import Gamma
from pyaten.distributions.geometric import Geometric
from pyaten.distributions.gumbel import Gumbel
from pyaten.distributions.half_normal import HalfNormal
from pyaten.distributions.independent import Independent
from pyaten.distributions.laplace import Laplace
from pyaten.distributions.multivariate_normal import MultivariateNormal, _batch_mahalanobis
from pyaten.distributions.normal import Normal
from pyaten.distributions.one_hot_categorical import OneHotCategorical
from pyaten.distributions.poisson import Poisson
from pyaten.distributions.transformed_distribution import TransformedDistribution
from pyaten.distributions.uniform import Uniform
from pyaten.distributions.utils import _sum_rightmost
from pyaten.distributions.utils import euler_constant as _euler_gamma

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY: dict = {}  # (type_p, type_q) -> function
_KL_MEMOIZE: dict = {}  # (type_p, type_q) -> the function chosen for exactly that pair


def register_kl(type_p, type_q):
    """Decorator: register a KL(p || q) function for instances of `type_p` and `type_q`."""
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


@total_ordering
class _Match:
    """A registered pair ordered by specificity, left to right (Note: choosing a KL
    implementation)."""

    __slots__ = ["types"]

    def __init__(self, *types) -> None:
        self.types = types

    def __eq__(self, other) -> bool:
        return self.types == other.types

    def __le__(self, other) -> bool:
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY
               if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
            f"Please register_kl({left_p.__name__}, {right_q.__name__})",
            RuntimeWarning, stacklevel=3,
        )
    return left_fun


def _infinite_like(tensor):
    return torch.full_like(tensor, math.inf)


def _x_log_x(tensor):
    return tensor * tensor.log()


def _batch_trace_XXT(bmat):
    """trace(X X^T) of each matrix of a batch."""
    n = bmat.size(-1)
    m = bmat.size(-2)
    return bmat.reshape(-1, m * n).pow(2).sum(-1).reshape(bmat.shape[:-2])


def kl_divergence(p: Distribution, q: Distribution):
    """KL(p || q) = E_p[log p(x) - log q(x)], batched; NotImplementedError when no
    registered pair matches."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
            f"{q.__class__.__name__}"
        )
    return fun(p, q)


# --- the same family -------------------------------------------------------------------------


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1[q.probs == 0] = math.inf
    t1[p.probs == 0] = 0
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2[q.probs == 1] = math.inf
    t2[p.probs == 1] = 0
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * torch.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * torch.digamma(p.concentration0)
    t5 = (sum_q - sum_p) * torch.digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p()
                          - (-q.probs).log1p())
    inf_idxs = p.total_count > q.total_count
    kl[inf_idxs] = _infinite_like(kl[inf_idxs])
    return kl


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t[(q.probs == 0).expand_as(t)] = math.inf
    t[(p.probs == 0).expand_as(t)] = 0
    return t.sum(-1)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    t2 = (4 * p.scale * q.scale).log()
    return t1 - t2


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    if type(p) is not type(q):
        raise NotImplementedError(
            "The cross KL-divergence between different exponential families cannot be "
            "computed using Bregman divergences")
    p_nparams = [t.detach().requires_grad_() for t in p._natural_params]
    q_nparams = q._natural_params
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = torch.autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        result = result - _sum_rightmost((qnp - pnp) * g, len(q.event_shape))
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * torch.log(p.rate / q.rate)
    t2 = torch.lgamma(q.concentration) - torch.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * torch.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * _euler_gamma
    t3 = torch.exp(ct2 + (1 + ct1).lgamma() - ct3)
    return t1 + t2 + t3 - (1 + _euler_gamma)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - torch.log1p(-q.probs) / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * torch.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")
    p_tril = p._unbroadcasted_scale_tril
    q_tril = q._unbroadcasted_scale_tril
    half_term1 = (q_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                  - p_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    batch = torch.broadcast_shapes(q_tril.shape[:-2], p_tril.shape[:-2])
    n = p.event_shape[0]
    q_scale_tril = q_tril.expand(batch + (n, n))
    p_scale_tril = p_tril.expand(batch + (n, n))
    term2 = _batch_trace_XXT(torch.linalg.solve_triangular(q_scale_tril, p_scale_tril,
                                                           upper=False))
    term3 = _batch_mahalanobis(q_tril, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (torch.log(p.rate) - torch.log(q.rate)) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    result[(q.low > p.low) | (q.high < p.high)] = math.inf
    return result


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)


# the other modules register into this one's registry, so they load after it
from pyaten.distributions import kl_cross, kl_extra  # noqa: E402,F401,I001
