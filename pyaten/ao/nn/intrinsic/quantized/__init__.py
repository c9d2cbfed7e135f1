"""Fused quantized modules (torch.ao.nn.intrinsic.quantized): a quantized Conv2d or Linear
whose ReLU runs inside the requantisation (`quantized::conv2d_relu`, `linear_relu`)."""

from __future__ import annotations

import pyaten
from pyaten.ao.nn.quantized.modules import Conv2d, Linear
from pyaten.core.tensor import Tensor

__all__ = ["ConvReLU2d", "LinearReLU"]


class ConvReLU2d(Conv2d):
    """Quantized Conv2d and ReLU in one kernel."""

    def forward(self, x: Tensor) -> Tensor:
        if len(x.shape) != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")
        return pyaten.ops.quantized.conv2d_relu(x, self._packed_params, self.scale,
                                                self.zero_point)

    def _get_name(self) -> str:
        return "QuantizedConvReLU2d"


class LinearReLU(Linear):
    """Quantized Linear and ReLU in one kernel."""

    def forward(self, x: Tensor) -> Tensor:
        return pyaten.ops.quantized.linear_relu(x, self._packed_params, self.scale,
                                                self.zero_point)

    def _get_name(self) -> str:
        return "QuantizedLinearReLU"
