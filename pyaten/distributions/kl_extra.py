"""KL divergences involving the low-rank normal, Pareto and continuous Bernoulli families
(registered into pyaten.distributions.kl)."""

from __future__ import annotations

import math

import pyaten as torch
from pyaten.distributions.beta import Beta
from pyaten.distributions.continuous_bernoulli import ContinuousBernoulli
from pyaten.distributions.exponential import Exponential
from pyaten.distributions.gamma import Gamma
from pyaten.distributions.gumbel import Gumbel
from pyaten.distributions.kl import _batch_trace_XXT, _infinite_like, _x_log_x, register_kl
from pyaten.distributions.laplace import Laplace
from pyaten.distributions.lowrank_multivariate_normal import (
    LowRankMultivariateNormal,
    _batch_lowrank_logdet,
    _batch_lowrank_mahalanobis,
)
from pyaten.distributions.multivariate_normal import MultivariateNormal, _batch_mahalanobis
from pyaten.distributions.normal import Normal
from pyaten.distributions.pareto import Pareto
from pyaten.distributions.uniform import Uniform

_DIFFERENT_EVENTS = ("KL-divergence between two (Low Rank) Multivariate Normals with"
                     "                          different event shapes cannot be computed")


def _capacitance_solve(q):
    """A = L^-1 W^T D^-1 for q's capacitance factor L (the Woodbury correction)."""
    qWt_qDinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return torch.linalg.solve_triangular(q._capacitance_tril, qWt_qDinv, upper=False)


def _lowrank_logdet(d):
    return _batch_lowrank_logdet(d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag,
                                 d._capacitance_tril)


def _lowrank_mahalanobis(q, x):
    return _batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor,
                                      q._unbroadcasted_cov_diag, x, q._capacitance_tril)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Low Rank Multivariate Normals with"
                         "                          different event shapes cannot be computed")
    term1 = _lowrank_logdet(q) - _lowrank_logdet(p)
    term3 = _lowrank_mahalanobis(q, q.loc - p.loc)
    A = _capacitance_solve(q)
    term21 = (p._unbroadcasted_cov_diag / q._unbroadcasted_cov_diag).sum(-1)
    term22 = _batch_trace_XXT(p._unbroadcasted_cov_factor
                              * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term23 = _batch_trace_XXT(A * p._unbroadcasted_cov_diag.sqrt().unsqueeze(-2))
    term24 = _batch_trace_XXT(A.matmul(p._unbroadcasted_cov_factor))
    term2 = term21 + term22 - term23 - term24
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError(_DIFFERENT_EVENTS)
    term1 = (_lowrank_logdet(q)
             - 2 * p._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    term3 = _lowrank_mahalanobis(q, q.loc - p.loc)
    A = _capacitance_solve(q)
    term21 = _batch_trace_XXT(p._unbroadcasted_scale_tril
                              * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term22 = _batch_trace_XXT(A.matmul(p._unbroadcasted_scale_tril))
    return 0.5 * (term1 + term21 - term22 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError(_DIFFERENT_EVENTS)
    q_tril = q._unbroadcasted_scale_tril
    term1 = 2 * q_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) - _lowrank_logdet(p)
    term3 = _batch_mahalanobis(q_tril, q.loc - p.loc)
    batch = torch.broadcast_shapes(q_tril.shape[:-2], p._unbroadcasted_cov_factor.shape[:-2])
    n = p.event_shape[0]
    q_scale_tril = q_tril.expand(batch + (n, n))
    p_cov_factor = p._unbroadcasted_cov_factor.expand(batch + (n, p.cov_factor.size(-1)))
    p_cov_diag = torch.diag_embed(p._unbroadcasted_cov_diag.sqrt()).expand(batch + (n, n))
    term21 = _batch_trace_XXT(torch.linalg.solve_triangular(q_scale_tril, p_cov_factor,
                                                            upper=False))
    term22 = _batch_trace_XXT(torch.linalg.solve_triangular(q_scale_tril, p_cov_diag,
                                                            upper=False))
    return 0.5 * (term1 + term21 + term22 + term3 - p.event_shape[0])


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    result[p.support.lower_bound < q.support.lower_bound] = math.inf
    return result


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + torch.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - torch.log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p, q):
    return -p.entropy() - p.mean * q.logits - torch.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return -p.entropy() - torch.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    t1 = -p.entropy()
    t2 = 0.5 * (math.log(2.0 * math.pi) + torch.square(q.loc / q.scale)) + torch.log(q.scale)
    t3 = ((p.variance + torch.square(p.mean) - 2.0 * q.loc * p.mean)
          / (2.0 * torch.square(q.scale)))
    return t1 + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    outside = torch.max(torch.ge(q.low, p.support.lower_bound),
                        torch.le(q.high, p.support.upper_bound))
    return torch.where(outside, torch.ones_like(result) * math.inf, result)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    result = -p.entropy() - p.mean * q.logits - torch.log1p(-q.probs) - q._cont_bern_log_norm()
    outside = torch.max(torch.ge(p.high, q.support.upper_bound),
                        torch.le(p.low, q.support.lower_bound))
    return torch.where(outside, torch.ones_like(result) * math.inf, result)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    scale_rate_prod = p.scale * q.rate
    t1 = (p.alpha / scale_rate_prod).log()
    t2 = p.alpha.reciprocal()
    t3 = p.alpha * scale_rate_prod / (p.alpha - 1)
    result = t1 - t2 + t3 - 1
    result[p.alpha <= 1] = math.inf
    return result


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    common_term = p.scale.log() + p.alpha.reciprocal()
    t1 = p.alpha.log() - common_term
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * common_term
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    result = t1 + t2 + t3 + t4 - 1
    result[p.alpha <= 1] = math.inf
    return result


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    var_normal = 2 * q.scale.pow(2)
    common_term = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t2 = p.alpha.reciprocal()
    t3 = p.alpha * common_term.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common_term - q.loc).pow(2)
    result = t1 - t2 + (t3 + t4) / var_normal - 1
    result[p.alpha <= 2] = math.inf
    return result


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    support_uniform = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * support_uniform).log()
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - support_uniform) / support_uniform
    result = t2 * (q.alpha + 1) - t1
    result[p.low < q.support.lower_bound] = math.inf
    return result


# --- pairs whose supports make the divergence infinite ---------------------------------------


@register_kl(Pareto, Beta)
@register_kl(Pareto, ContinuousBernoulli)
@register_kl(Pareto, Uniform)
def _kl_pareto_infinity(p, q):
    return _infinite_like(p.scale)


@register_kl(ContinuousBernoulli, Pareto)
def _kl_continuous_bernoulli_infinity(p, q):
    return _infinite_like(p.probs)


@register_kl(Beta, Pareto)
def _kl_beta_infinity(p, q):
    return _infinite_like(p.concentration1)


@register_kl(Exponential, ContinuousBernoulli)
@register_kl(Exponential, Pareto)
def _kl_exponential_infinity(p, q):
    return _infinite_like(p.rate)


@register_kl(Gamma, ContinuousBernoulli)
@register_kl(Gamma, Pareto)
def _kl_gamma_infinity(p, q):
    return _infinite_like(p.concentration)


@register_kl(Gumbel, ContinuousBernoulli)
@register_kl(Gumbel, Pareto)
@register_kl(Laplace, ContinuousBernoulli)
@register_kl(Laplace, Pareto)
@register_kl(Normal, ContinuousBernoulli)
@register_kl(Normal, Pareto)
def _kl_loc_family_infinity(p, q):
    return _infinite_like(p.loc)
