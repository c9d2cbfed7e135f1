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
_TENSOR_NAMES = ("MaskedTensor", "as_masked_tensor", "is_masked_tensor", "masked_tensor")
__all__ += list(_TENSOR_NAMES)


def __getattr__(name: str) -> object:
    # MaskedTensor's module is imported on first use: defining a subclass turns on the
    # subclass routes of every Tensor method, which a program using only the functions skips
    if name in _TENSOR_NAMES:
        from pyaten.masked import maskedtensor

        return getattr(maskedtensor, name)
    raise AttributeError(f"module 'pyaten.masked' has no attribute {name!r}")
