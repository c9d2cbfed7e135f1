"""Quantized modules (torch.ao.nn.quantized); `dynamic` holds the dynamically quantized ones."""

from pyaten.ao.nn.quantized import dynamic
from pyaten.ao.nn.quantized.modules import (
    Conv2d,
    DeQuantize,
    FloatFunctional,
    Linear,
    QFunctional,
    Quantize,
    ReLU6,
)

__all__ = [
    "Conv2d",
    "DeQuantize",
    "FloatFunctional",
    "Linear",
    "QFunctional",
    "Quantize",
    "ReLU6",
    "dynamic",
]
