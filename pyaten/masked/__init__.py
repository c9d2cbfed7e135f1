"""`pyaten.masked`: PyTorch's `torch.masked` reductions and normalisations, where a boolean
`mask=` says which elements take part (docs/masked.md)."""

from pyaten.masked._ops import (
    _canonical_dim,
    _combine_input_and_mask,
    _input_mask,
    _reduction_identity,
    _where,
    amax,
    amin,
    argmax,
    argmin,
    cumprod,
    cumsum,
    log_softmax,
    logaddexp,
    logsumexp,
    mean,
    median,
    norm,
    normalize,
    prod,
    softmax,
    softmin,
    std,
    sum,
    var,
)

__all__ = [
    "amax",
    "amin",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "log_softmax",
    "logaddexp",
    "logsumexp",
    "mean",
    "median",
    "norm",
    "normalize",
    "prod",
    "softmax",
    "softmin",
    "std",
    "sum",
    "var",
]

_PRIVATE = (_canonical_dim, _combine_input_and_mask, _input_mask, _reduction_identity, _where)
