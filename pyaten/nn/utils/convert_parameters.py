"""All parameters as one flat vector, and back."""

from __future__ import annotations

from collections.abc import Iterable

from pyaten.core.tensor import Tensor
from pyaten.nn.modules._ops import ops

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _same_device(params: list[Tensor]) -> None:
    if len({str(p.device) for p in params}) > 1:
        raise TypeError(
            "Found two parameters on different devices, this is currently not supported."
        )


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated, in order (differentiable)."""
    params = list(parameters)
    _same_device(params)
    return ops.cat([p.view(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Point each parameter's data at its slice of `vec` (the inverse of the above)."""
    from pyaten.nn.modules._utils import typename

    if not isinstance(vec, Tensor):
        raise TypeError(f"expected pyaten.Tensor, but got: {typename(vec)}")
    params = list(parameters)
    _same_device(params)
    start = 0
    for param in params:
        count = param.numel()
        param.data = vec[start:start + count].view_as(param).data
        start += count
