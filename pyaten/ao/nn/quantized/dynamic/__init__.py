"""Dynamically quantized modules (torch.ao.nn.quantized.dynamic)."""

from pyaten.ao.nn.quantized.dynamic.modules import LSTM, Linear

__all__ = ["LSTM", "Linear"]
