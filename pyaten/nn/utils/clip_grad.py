"""Gradient clipping: scale all gradients so their joint norm is at most `max_norm`, or clamp
each gradient element to [-clip_value, clip_value]. `foreach` is accepted and ignored: there
is one (NumPy) path."""

from __future__ import annotations

import types
import warnings
from collections.abc import Iterable

from pyaten.autograd.grad_mode import no_grad
from pyaten.core.tensor import Tensor
from pyaten.nn.modules._ops import ops

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_"]


def _as_list(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def _total_norm(grads: list[Tensor], norm_type: float, error_if_nonfinite: bool) -> Tensor:
    """The norm of the per-gradient norms, which is the norm of all gradients together."""
    if not grads:
        return ops.full((), 0.0)
    norms = [ops.linalg.vector_norm(g, norm_type) for g in grads]
    total = ops.linalg.vector_norm(ops.stack(norms), norm_type)
    if error_if_nonfinite and bool(total.isnan() | total.isinf()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return total


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale the gradients in place by min(1, max_norm / (total_norm + 1e-6)); returns the
    total norm before clipping (norm_type may be `inf`)."""
    was_generator = isinstance(parameters, types.GeneratorType)
    parameters = _as_list(parameters)
    if was_generator and not parameters:
        warnings.warn(
            "`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2
        )
    with no_grad():
        grads = [p.grad for p in parameters if p.grad is not None]
        total = _total_norm(grads, float(norm_type), error_if_nonfinite)
        if grads:
            coefficient = ops.clamp(float(max_norm) / (total + 1e-6), max=1.0)
            for grad in grads:
                grad.mul_(coefficient)
    return total


def clip_grad_norm(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
        "`torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(
    parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None
) -> None:
    """Clamp every gradient element to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with no_grad():
        for param in _as_list(parameters):
            if param.grad is not None:
                param.grad.clamp_(min=-clip_value, max=clip_value)
