"""`pyaten.cpu.amp.autocast` and `GradScaler`: `pyaten.amp`'s with "cpu" filled in, deprecated
as in PyTorch 2.13 (each warns with a FutureWarning naming its replacement)."""

from __future__ import annotations

import warnings
from typing import Any

from pyaten.amp import autocast_mode
from pyaten.amp import grad_scaler as _grad_scaler
from pyaten.core import dtypes

__all__ = ["GradScaler", "autocast"]


class autocast(autocast_mode.autocast):  # noqa: N801 - named as torch.cpu.amp.autocast
    """`pyaten.amp.autocast("cpu", ...)` (deprecated)."""

    def __init__(
        self, enabled: bool = True, dtype: Any = dtypes.bfloat16, cache_enabled: bool = True
    ) -> None:
        warnings.warn(
            "`torch.cpu.amp.autocast(args...)` is deprecated. "
            "Please use `torch.amp.autocast('cpu', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_grad_scaler.GradScaler):
    """`pyaten.amp.GradScaler("cpu", ...)` (deprecated)."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        warnings.warn(
            "`torch.cpu.amp.GradScaler(args...)` is deprecated. "
            "Please use `torch.amp.GradScaler('cpu', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__(
            "cpu",
            init_scale=init_scale,
            growth_factor=growth_factor,
            backoff_factor=backoff_factor,
            growth_interval=growth_interval,
            enabled=enabled,
        )
