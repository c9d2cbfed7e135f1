"""`pyaten.cuda.amp`: `pyaten.amp` with "cuda" filled in, deprecated as in PyTorch 2.13 (each
warns with a FutureWarning naming its replacement). Without a CUDA device, as in a CPU-only
PyTorch, `autocast` warns and is disabled and `GradScaler` warns and is disabled: a program
written for mixed precision on a GPU runs in float32 on the CPU."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from pyaten.amp import autocast_mode
from pyaten.amp import grad_scaler as _grad_scaler
from pyaten.core import dtypes

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]


def _deprecated(old: str, new: str) -> None:
    warnings.warn(
        f"`torch.cuda.amp.{old}(args...)` is deprecated. Please use `{new}` instead.",
        FutureWarning,
        stacklevel=3,
    )


class autocast(autocast_mode.autocast):  # noqa: N801 - named as torch.cuda.amp.autocast
    """`pyaten.amp.autocast("cuda", ...)` (deprecated)."""

    def __init__(
        self, enabled: bool = True, dtype: Any = dtypes.float16, cache_enabled: bool = True
    ) -> None:
        _deprecated("autocast", "torch.amp.autocast('cuda', args...)")
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_grad_scaler.GradScaler):
    """`pyaten.amp.GradScaler("cuda", ...)` (deprecated)."""

    def __init__(
        self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
        backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True,
    ) -> None:
        _deprecated("GradScaler", "torch.amp.GradScaler('cuda', args...)")
        super().__init__(
            "cuda", init_scale=init_scale, growth_factor=growth_factor,
            backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled,
        )


def custom_fwd(fwd: Callable[..., Any] | None = None, *, cast_inputs: Any = None) -> Any:
    """`pyaten.amp.custom_fwd(..., device_type="cuda")` (deprecated)."""
    _deprecated("custom_fwd", "torch.amp.custom_fwd(args..., device_type='cuda')")
    return autocast_mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Callable[..., Any] | None = None) -> Any:
    """`pyaten.amp.custom_bwd(..., device_type="cuda")` (deprecated)."""
    _deprecated("custom_bwd", "torch.amp.custom_bwd(args..., device_type='cuda')")
    return autocast_mode.custom_bwd(bwd, device_type="cuda")
