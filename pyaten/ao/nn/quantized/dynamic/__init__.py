"""Dynamically quantized modules (torch.ao.nn.quantized.dynamic)."""

from pyaten.ao.nn.quantized.dynamic.modules import GRU, LSTM, Linear

__all__ = ["GRU", "LSTM", "Linear"]
