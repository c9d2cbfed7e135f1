"""Dynamically quantized modules (torch.ao.nn.quantized.dynamic)."""

from pyaten.ao.nn.quantized.dynamic.modules import (
    GRU,
    LSTM,
    GRUCell,
    Linear,
    LSTMCell,
    RNNCell,
)

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "Linear", "RNNCell"]
