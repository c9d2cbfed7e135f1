"""Quantized modules (torch.ao.nn): `quantized` (static) and `quantized.dynamic`."""

from pyaten.ao.nn import quantized

__all__ = ["quantized"]
