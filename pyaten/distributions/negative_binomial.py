"""The negative binomial distribution: failures before `total_count` successes."""

from __future__ import annotations

import pyaten as torch
import pyaten.nn.functional as F
from pyaten.distributions import constraints
from pyaten.distributions.distribution import Distribution
from pyaten.distributions.gamma import Gamma
from pyaten.distributions.utils import (
    binary_parameters,
    expand_param,
    lazy_property,
    set_count_and_param,
)

__all__ = ["NegativeBinomial"]


@binary_parameters
class NegativeBinomial(Distribution):
    """NegativeBinomial(total_count, probs | logits); `probs` is each trial's probability
    of success. Samples as a Poisson of a Gamma (PyTorch's order of draws)."""

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None) -> None:
        set_count_and_param(self, total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = torch.Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        expand_param(self, new, batch_shape)
        super(NegativeBinomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.total_count * torch.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / torch.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=torch.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=()):
        with torch.no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return torch.poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = (self.total_count * F.logsigmoid(-self.logits)
                                 + value * F.logsigmoid(self.logits))
        log_normalization = (-torch.lgamma(self.total_count + value)
                             + torch.lgamma(1.0 + value) + torch.lgamma(self.total_count))
        # the one-point distribution at 0 when total_count is 0
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0,
                                                          0.0)
        return log_unnormalized_prob - log_normalization
