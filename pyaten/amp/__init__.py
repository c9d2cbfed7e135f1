"""`pyaten.amp`: automatic mixed precision, as `torch.amp` (docs/amp.md).

`autocast` runs regions in mixed precision (autocast_mode.py, with the cast rules and the
policy table in autocast_kernels.py and autocast_policy.yaml); `GradScaler` scales the loss
so lower-precision gradients do not underflow, and skips steps whose gradients are not
finite (grad_scaler.py).
"""

from pyaten.amp import autocast_kernels as _autocast_kernels
from pyaten.amp.autocast_mode import (
    autocast,
    custom_bwd,
    custom_fwd,
    is_autocast_available,
    register_autocast_device,
)
from pyaten.amp.grad_scaler import GradScaler, OptState

_autocast_kernels.register_policy("cpu", "AutocastCPU")

__all__ = [
    "GradScaler",
    "OptState",
    "autocast",
    "custom_bwd",
    "custom_fwd",
    "is_autocast_available",
    "register_autocast_device",
]
