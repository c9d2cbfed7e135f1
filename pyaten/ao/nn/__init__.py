"""Quantized modules (torch.ao.nn): `quantized` (static), `quantized.dynamic`, and the fused
modules of `intrinsic` / `intrinsic.quantized`."""

from pyaten.ao.nn import intrinsic, quantized
from pyaten.ao.nn.intrinsic import quantized as _intrinsic_quantized  # noqa: F401

__all__ = ["intrinsic", "quantized"]
