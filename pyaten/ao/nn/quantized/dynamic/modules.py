"""Dynamically quantized modules: float tensors in and out, qint8 weights, the activations
quantized per call (`quantized::linear_dynamic` with `reduce_range`, as PyTorch's fbgemm path).

Note: the dynamic LSTM's order of work
    As ATen's `quantized_lstm` on the CPU, each layer applies its input projection to the whole
    sequence at once (one choice of activation parameters for all time steps), then runs the
    steps: `gates = W_hh h + (W_ih x)`, each product a dynamic quantized linear with its bias;
    `i, f, o = sigmoid`, `g = tanh`, `c' = f c + i g`, `h' = o tanh(c')`. A reverse direction
    runs the same over the reversed sequence; the next layer takes the concatenated outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import pyaten
from pyaten.ao.nn.quantized.modules import Linear as _StaticLinear
from pyaten.ao.nn.quantized.modules import quantize_weight
from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor
from pyaten.nn.modules.module import Module

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "Linear", "RNNCell"]

_ops = pyaten.ops.quantized


def _weight_observer_factory(mod: Module) -> Any:
    qconfig = getattr(mod, "qconfig", None)
    if qconfig is not None and qconfig.weight is not None:
        return qconfig.weight
    from pyaten.ao.quantization.qconfig import default_dynamic_qconfig

    return default_dynamic_qconfig.weight


class Linear(_StaticLinear):
    """`y = x W^T + b` with float input and output and a qint8 weight."""

    def __init__(self, in_features: int, out_features: int, bias_: bool = True,
                 dtype: dt.dtype = dt.qint8) -> None:
        super().__init__(in_features, out_features, bias_, dtype)
        self.version = 4

    def forward(self, x: Tensor) -> Tensor:
        return _ops.linear_dynamic(x, self._packed_params, reduce_range=True)

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"dtype={dt.qint8}, qscheme={self.weight().qscheme()}")

    @classmethod
    def from_float(cls, mod: Module, use_precomputed_fake_quant: bool = False) -> Linear:
        observer = _weight_observer_factory(mod)()
        if observer.dtype is not dt.qint8:
            raise RuntimeError(f"Unsupported dtype specified for dynamic quantized Linear: "
                               f"{observer.dtype}")
        observer(mod.weight)
        qweight = quantize_weight(mod.weight, observer)
        qlinear = cls(mod.in_features, mod.out_features)
        qlinear.set_weight_bias(qweight, None if mod.bias is None else mod.bias.detach())
        return qlinear


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return (np.float32(1.0) / (np.float32(1.0) + np.exp(-x))).astype(np.float32)


class _RNNBase(Module):
    """A multi-layer LSTM or GRU whose products are dynamic quantized linears (Note: the
    dynamic LSTM's order of work; a GRU runs the same way with its own cell)."""

    _MODE = "LSTM"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, dtype: dt.dtype = dt.qint8) -> None:
        super().__init__()
        self.mode = self._MODE
        self.input_size, self.hidden_size = input_size, hidden_size
        self.num_layers, self.bias = num_layers, bias
        self.batch_first, self.dropout = batch_first, float(dropout)
        self.bidirectional = bidirectional
        self.dtype = dtype
        self.version = 2
        self._packed: list[tuple[Any, Any]] = []  # (ih, hh) per layer and direction

    def _get_name(self) -> str:
        return f"DynamicQuantized{self.mode}"

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.batch_first:
            text += ", batch_first=True"
        if self.bidirectional:
            text += ", bidirectional=True"
        return text

    @classmethod
    def from_float(cls, mod: Module, use_precomputed_fake_quant: bool = False) -> _RNNBase:
        if getattr(mod, "mode", None) != cls._MODE:
            raise AssertionError("nn.quantized.dynamic.RNNBase.from_float only works for "
                                 "nn.LSTM and nn.GRU")
        if getattr(mod, "proj_size", 0):
            raise NotImplementedError("pyaten's dynamic quantized LSTM has no proj_size")
        factory = _weight_observer_factory(mod)
        if not mod.bias:
            raise AssertionError("mod.bias must be True")
        qlstm = cls(mod.input_size, mod.hidden_size, mod.num_layers, mod.bias, mod.batch_first,
                    mod.dropout, mod.bidirectional, factory().dtype)

        def quantize_and_pack(w: Tensor, b: Tensor) -> Any:
            observer = factory()
            observer(w)
            return _ops.linear_prepack(quantize_weight(w, observer), b.detach())

        for layer in range(mod.num_layers):
            for direction in range(2 if mod.bidirectional else 1):
                suffix = "_reverse" if direction else ""
                qlstm._packed.append((
                    quantize_and_pack(getattr(mod, f"weight_ih_l{layer}{suffix}"),
                                      getattr(mod, f"bias_ih_l{layer}{suffix}")),
                    quantize_and_pack(getattr(mod, f"weight_hh_l{layer}{suffix}"),
                                      getattr(mod, f"bias_hh_l{layer}{suffix}")),
                ))
        return qlstm

    def _direction(self, xs: np.ndarray, h: np.ndarray, c: np.ndarray, packed: tuple,
                   reverse: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ih, hh = packed
        projected = _ops.linear_dynamic(pyaten.from_numpy(xs), ih, True)._numpy()
        steps = range(xs.shape[0] - 1, -1, -1) if reverse else range(xs.shape[0])
        outputs = np.empty(xs.shape[:2] + (self.hidden_size,), np.float32)
        for t in steps:
            hidden = _ops.linear_dynamic(pyaten.from_numpy(h), hh, True)._numpy()
            h, c = self._cell(projected[t], hidden, h, c)
            outputs[t] = h
        return outputs, h, c

    def _cell(self, projected: np.ndarray, hidden: np.ndarray, h: np.ndarray,
              c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def forward(self, input: Tensor, hx: Any = None) -> tuple:
        if input.dim() not in (2, 3):
            raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
        batched = input.dim() == 3
        x = input._numpy().astype(np.float32)
        if not batched:
            x = x[:, None]
        elif self.batch_first:
            x = x.transpose(1, 0, 2)
        directions = 2 if self.bidirectional else 1
        shape = (self.num_layers * directions, x.shape[1], self.hidden_size)
        lstm = self.mode == "LSTM"
        if hx is None:
            h0 = np.zeros(shape, np.float32)
            c0 = np.zeros(shape, np.float32)
        else:
            h0, c0 = (t._numpy().astype(np.float32) for t in (hx if lstm else (hx, hx)))
            if not batched:
                h0, c0 = h0[:, None], c0[:, None]
        h_n, c_n = [], []
        layer_input = np.ascontiguousarray(x)
        for layer in range(self.num_layers):
            outs = []
            for direction in range(directions):
                index = layer * directions + direction
                out, h, c = self._direction(layer_input, h0[index], c0[index],
                                            self._packed[index], direction == 1)
                outs.append(out)
                h_n.append(h)
                c_n.append(c)
            layer_input = np.ascontiguousarray(np.concatenate(outs, axis=2))
        output = layer_input
        if not batched:
            output = output[:, 0]
            h_out, c_out = np.stack(h_n)[:, 0], np.stack(c_n)[:, 0]
        else:
            if self.batch_first:
                output = output.transpose(1, 0, 2)
            h_out, c_out = np.stack(h_n), np.stack(c_n)
        output = pyaten.from_numpy(np.ascontiguousarray(output))
        if not lstm:
            return output, pyaten.from_numpy(h_out.copy())
        return output, (pyaten.from_numpy(h_out.copy()), pyaten.from_numpy(c_out.copy()))


class LSTM(_RNNBase):
    """A multi-layer LSTM on dynamic quantized linears."""

    _MODE = "LSTM"

    def _cell(self, projected: np.ndarray, hidden: np.ndarray, h: np.ndarray,
              c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        i, f, g, o = np.split(hidden + projected, 4, axis=1)
        c = (_sigmoid(f) * c + _sigmoid(i) * np.tanh(g)).astype(np.float32)
        return (_sigmoid(o) * np.tanh(c)).astype(np.float32), c


class GRU(_RNNBase):
    """A multi-layer GRU on dynamic quantized linears: `r, z = sigmoid(hh + ih)`,
    `n = tanh(ih_n + r * hh_n)`, `h' = (h - n) * z + n`, as ATen's GRU cell."""

    _MODE = "GRU"

    def _cell(self, projected: np.ndarray, hidden: np.ndarray, h: np.ndarray,
              c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ir, iz, in_ = np.split(projected, 3, axis=1)
        hr, hz, hn = np.split(hidden, 3, axis=1)
        reset = _sigmoid((hr + ir).astype(np.float32))
        update = _sigmoid((hz + iz).astype(np.float32))
        new = np.tanh((in_ + hn * reset).astype(np.float32)).astype(np.float32)
        return ((h - new) * update + new).astype(np.float32), c


class _CellBase(Module):
    """One step of an RNN, LSTM or GRU whose products are dynamic quantized linears (with
    `reduce_range`, as PyTorch's cells)."""

    _NAME = ""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh") -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.nonlinearity = nonlinearity
        self._packed_weight_ih: Any = None
        self._packed_weight_hh: Any = None

    def _get_name(self) -> str:
        return f"DynamicQuantized{self._NAME}"

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            text += ", bias=False"
        if self.nonlinearity != "tanh":
            text += f", nonlinearity={self.nonlinearity}"
        return text

    @classmethod
    def from_float(cls, mod: Module, use_precomputed_fake_quant: bool = False) -> _CellBase:
        factory = _weight_observer_factory(mod)
        cell = cls(mod.input_size, mod.hidden_size, mod.bias,
                   getattr(mod, "nonlinearity", "tanh"))

        def pack(w: Tensor, b: Tensor | None) -> Any:
            observer = factory()
            observer(w)
            return _ops.linear_prepack(quantize_weight(w, observer),
                                       None if b is None else b.detach())

        cell._packed_weight_ih = pack(mod.weight_ih, mod.bias_ih)
        cell._packed_weight_hh = pack(mod.weight_hh, mod.bias_hh)
        return cell

    def _products(self, x: Tensor, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ih = _ops.linear_dynamic(x, self._packed_weight_ih, True)._numpy()
        hh = _ops.linear_dynamic(pyaten.from_numpy(h), self._packed_weight_hh, True)._numpy()
        return ih, hh

    def _zeros(self, x: Tensor) -> np.ndarray:
        return np.zeros((x.shape[0], self.hidden_size), np.float32)


class LSTMCell(_CellBase):
    """One LSTM step: `(h', c')` from `input` and `(h, c)`."""

    _NAME = "LSTMCell"

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:
        h, c = ((self._zeros(input),) * 2 if hx is None
                else tuple(t._numpy().astype(np.float32) for t in hx))
        ih, hh = self._products(input, h)
        i, f, g, o = np.split(hh + ih, 4, axis=1)
        c = (_sigmoid(f) * c + _sigmoid(i) * np.tanh(g)).astype(np.float32)
        h = (_sigmoid(o) * np.tanh(c)).astype(np.float32)
        return pyaten.from_numpy(h), pyaten.from_numpy(c)


class GRUCell(_CellBase):
    """One GRU step, as ATen's GRU cell."""

    _NAME = "GRUCell"

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        h = self._zeros(input) if hx is None else hx._numpy().astype(np.float32)
        ih, hh = self._products(input, h)
        h, _ = GRU._cell(self, ih, hh, h, h)
        return pyaten.from_numpy(h)


class RNNCell(_CellBase):
    """One Elman RNN step: `tanh` (or `relu`) of the two products."""

    _NAME = "RNNCell"

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        h = self._zeros(input) if hx is None else hx._numpy().astype(np.float32)
        ih, hh = self._products(input, h)
        total = (hh + ih).astype(np.float32)
        out = np.tanh(total) if self.nonlinearity == "tanh" else np.maximum(total, 0)
        return pyaten.from_numpy(out.astype(np.float32))
