"""GradScaler's two operators (PyTorch's AmpKernels.cpp), CPU and Meta kernels.

`_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)` multiplies every
gradient by `inv_scale` in place and sets `found_inf` to 1.0 when any element of any of them
is inf or NaN. `_amp_update_scale_(scale, growth_tracker, found_inf, growth, backoff,
interval)` backs the scale off after a step with non-finite gradients, and grows it after
`interval` clean steps in a row (unless the grown scale would not be finite). Neither has a
derivative: GradScaler calls them under no_grad on gradients and scalars.
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core import dtypes
from pyaten.core.tensor import Tensor
from pyaten.native.registry import native

_FLOATING = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)


def _check_one_element_float(t: Tensor, name: str) -> None:
    if t.numel() != 1:
        raise RuntimeError(f"{name} must be a 1-element tensor.")


def _check_unscale_args(found_inf: Tensor, inv_scale: Tensor) -> None:
    _check_one_element_float(inv_scale, "inv_scale")
    _check_one_element_float(found_inf, "found_inf")
    if inv_scale.dtype is not dtypes.float32:
        raise RuntimeError("inv_scale must be a float tensor.")
    if found_inf.dtype is not dtypes.float32:
        raise RuntimeError("found_inf must be a float tensor.")


@native
def _amp_foreach_non_finite_check_and_unscale_cpu_(
    self: list[Tensor], found_inf: Tensor, inv_scale: Tensor
) -> None:
    _check_unscale_args(found_inf, inv_scale)
    inv = float(inv_scale._numpy().reshape(()))
    any_non_finite = False
    for grad in self:
        if grad.dtype not in _FLOATING:
            raise NotImplementedError(
                '"_amp_foreach_non_finite_check_and_unscale_cpu" not implemented for '
                f"'{grad.dtype.scalar_name}'"
            )
        values = grad._numpy()
        # Computed in float32 for the 16-bit dtypes, as PyTorch's opmath, then rounded.
        compute = values.astype(np.float64 if grad.dtype is dtypes.float64 else np.float32)
        if not np.isfinite(compute).all():
            any_non_finite = True
        if inv != 1.0:
            values[...] = (compute * compute.dtype.type(inv)).astype(values.dtype)
            grad._bump_version()
    if any_non_finite:
        found_inf._numpy()[...] = 1.0
        found_inf._bump_version()


@native
def _amp_foreach_non_finite_check_and_unscale_meta_(
    self: list[Tensor], found_inf: Tensor, inv_scale: Tensor
) -> None:
    _check_unscale_args(found_inf, inv_scale)


def _check_update_args(scale: Tensor, growth_tracker: Tensor, found_inf: Tensor) -> None:
    if scale.numel() != 1:
        raise RuntimeError("current_scale must be a 1-element tensor.")
    if growth_tracker.numel() != 1:
        raise RuntimeError("growth_tracker must be a 1-element tensor.")
    if found_inf.numel() != 1:
        raise RuntimeError("found_inf must be a 1-element tensor.")
    if scale.dtype is not dtypes.float32:
        raise RuntimeError("current_scale must be a float tensor.")
    if growth_tracker.dtype is not dtypes.int32:
        raise RuntimeError("growth_tracker must be an int tensor.")
    if found_inf.dtype is not dtypes.float32:
        raise RuntimeError("found_inf must be a float tensor.")


@native
def _amp_update_scale_cpu_(
    self: Tensor,
    growth_tracker: Tensor,
    found_inf: Tensor,
    scale_growth_factor: float,
    scale_backoff_factor: float,
    growth_interval: int,
) -> Tensor:
    _check_update_args(self, growth_tracker, found_inf)
    scale = self._numpy().reshape(())
    tracker = growth_tracker._numpy().reshape(())
    f32 = np.float32
    if float(found_inf._numpy().reshape(())):
        scale[...] = scale * f32(scale_backoff_factor)
        tracker[...] = 0
    else:
        successful = int(tracker) + 1
        if successful == growth_interval:
            with np.errstate(over="ignore"):  # an overflow is refused just below
                grown = scale * f32(scale_growth_factor)
            if math.isfinite(float(grown)):
                scale[...] = grown
            tracker[...] = 0
        else:
            tracker[...] = successful
    self._bump_version()
    growth_tracker._bump_version()
    return self


@native
def _amp_update_scale_meta_(
    self: Tensor,
    growth_tracker: Tensor,
    found_inf: Tensor,
    scale_growth_factor: float,
    scale_backoff_factor: float,
    growth_interval: int,
) -> Tensor:
    _check_update_args(self, growth_tracker, found_inf)
    return self
