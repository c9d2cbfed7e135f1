"""Helpers shared by the distributions (PyTorch's `torch.distributions.utils`)."""

from __future__ import annotations

from functools import update_wrapper
from numbers import Number

import pyaten as torch
import pyaten.nn.functional as F

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
    "tril_matrix_to_vec",
    "vec_to_tril_matrix",
]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant


def broadcast_all(*values):
    """Broadcast tensors and numbers together; numbers become tensors of the first tensor's
    dtype and device (the default dtype when there is none)."""
    if not all(isinstance(v, (torch.Tensor, Number)) for v in values):
        raise ValueError(
            "Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
            "implementing __torch_function__."
        )
    if all(isinstance(v, torch.Tensor) for v in values):
        return torch.broadcast_tensors(*values)
    options: dict = {"dtype": torch.get_default_dtype()}
    for v in values:
        if isinstance(v, torch.Tensor):
            options = {"dtype": v.dtype, "device": v.device}
            break
    made = [v if isinstance(v, torch.Tensor) else torch.tensor(v, **options) for v in values]
    return torch.broadcast_tensors(*made)


def _standard_normal(shape, dtype, device):
    return torch.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim: int):
    """Sum out the `dim` rightmost dimensions of `value`."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary: bool = False):
    """Logits to probabilities: a sigmoid for a binary variable, else a softmax over the
    last dimension."""
    if is_binary:
        return torch.sigmoid(logits)
    return F.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamp probabilities into the open interval (eps, 1 - eps) of their dtype."""
    eps = torch.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    """Probabilities to logits: log-odds for a binary variable, else log-probabilities."""
    clamped = clamp_probs(probs)
    if is_binary:
        return torch.log(clamped) - torch.log1p(-clamped)
    return torch.log(clamped)


class lazy_property:
    """A property computed on first access and stored on the instance (its name then holds
    the value); reading it from the class gives a `_lazy_property_and_property`."""

    def __init__(self, wrapped) -> None:
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with torch.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    # what lazy_property reads as on the class, so documentation tools see a property
    def __init__(self, wrapped) -> None:
        property.__init__(self, wrapped)


def binary_parameters(cls):
    """Class decorator for a distribution over 0/1 trials given by `probs` or `logits`
    (Bernoulli, Binomial, NegativeBinomial, LogitRelaxedBernoulli): the one not given is
    derived from the other on first use (each a `lazy_property` in the class's own dict, as
    PyTorch's); `_param` is the one given."""

    def _new(self, *args, **kwargs):
        return self._param.new_empty(*args, **kwargs)

    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def param_shape(self):
        return self._param.size()

    for function in (_new, logits, probs, param_shape):
        function.__qualname__ = f"{cls.__qualname__}.{function.__name__}"
    cls._new = _new
    cls.logits = lazy_property(logits)
    cls.probs = lazy_property(probs)
    cls.param_shape = property(param_shape)
    return cls


def tril_matrix_to_vec(mat, diag: int = 0):
    """The lower triangle (from diagonal `diag`) of each matrix, row by row, as a vector."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    arange = torch.arange(n, device=mat.device)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    return mat[..., tril_mask]


def vec_to_tril_matrix(vec, diag: int = 0):
    """The inverse of `tril_matrix_to_vec`: a vector filled row by row into a lower
    triangular matrix."""
    length = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * length + 4 * abs(diag) * (diag + 1))
         ** 0.5) / 2
    eps = torch.finfo(vec.dtype).eps
    if round(n) - n > eps:
        raise ValueError(
            f"The size of last dimension is {length} which cannot be expressed as the "
            "lower triangular part of a square D x D matrix."
        )
    n = round(n.item()) if isinstance(n, torch.Tensor) else round(n)
    mat = vec.new_zeros(vec.shape[:-1] + torch.Size((n, n)))
    arange = torch.arange(n, device=vec.device)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    mat[..., tril_mask] = vec
    return mat


def _empty_like_shape(t, shape):
    """An uninitialised tensor of `shape` with `t`'s dtype and device (`t.new(shape)`)."""
    return torch.empty(shape, dtype=t.dtype, device=t.device)


def expand_param(source, new, shape) -> None:
    """`expand` for the probs/logits distributions: copy whichever of `source`'s `probs` and
    `logits` it has computed onto `new`, expanded to `shape`, `_param` the last one copied."""
    for name in ("probs", "logits"):
        if name in source.__dict__:
            value = getattr(source, name).expand(shape)
            setattr(new, name, value)
            new._param = value


def set_count_and_param(dist, total_count, probs, logits) -> None:
    """`__init__` for the count-and-probability distributions (Binomial, NegativeBinomial):
    exactly one of `probs`/`logits`, broadcast with `total_count` in its dtype."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    name, value = ("probs", probs) if probs is not None else ("logits", logits)
    count, param = broadcast_all(total_count, value)
    setattr(dist, name, param)
    dist.total_count = count.type_as(param)
    dist._param = param
