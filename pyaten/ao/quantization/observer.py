"""Observers: modules that watch tensors go by and choose quantization parameters.

The arithmetic is PyTorch's observers' (torch/ao/quantization/observer.py), in float32:
- min/max observers keep the running minimum and maximum (per tensor or per channel);
- affine: `scale = (max(max, 0) - min(min, 0)) / (qmax - qmin)`, at least `eps`, and
  `zero_point = clamp(qmin - round(min(min, 0) / scale), qmin, qmax)`;
- symmetric: `scale = max(-min(min, 0), max(max, 0)) / ((qmax - qmin) / 2)`, at least `eps`,
  zero point 0 (128 for quint8);
- `reduce_range` halves the integer range (quint8 [0, 127], qint8 [-64, 63]), which keeps
  fbgemm's int16 pair sums from saturating.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

import pyaten
from pyaten.core import dtypes as dt
from pyaten.core.quantized import (
    per_channel_affine,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
)
from pyaten.core.tensor import Tensor
from pyaten.nn.modules.module import Module

__all__ = [
    "ObserverBase",
    "MinMaxObserver",
    "PerChannelMinMaxObserver",
    "PlaceholderObserver",
    "HistogramObserver",
    "default_observer",
    "default_weight_observer",
    "default_per_channel_weight_observer",
    "default_dynamic_quant_observer",
    "default_placeholder_observer",
]

_EPS = float(np.finfo(np.float32).eps)


class _PartialWrapper:
    """`Observer.with_args(...)`: a factory that makes the observer with those arguments."""

    def __init__(self, p: functools.partial) -> None:
        self.p = p

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.p(*args, **kwargs)

    def __repr__(self) -> str:
        return self.p.__repr__()

    def with_args(self, **kwargs: Any) -> _PartialWrapper:
        return _PartialWrapper(functools.partial(self.p, **kwargs))


def qmin_qmax(dtype: dt.dtype, reduce_range: bool, quant_min: int | None,
              quant_max: int | None) -> tuple[int, int]:
    """The integer range an observer maps onto (PyTorch's calculate_qmin_qmax)."""
    if quant_min is not None and quant_max is not None:
        if quant_min > quant_max:
            raise ValueError("qmin must be less than or equal to qmax.")
        if reduce_range:
            return quant_min // 2, quant_max // 2
        return quant_min, quant_max
    if dtype is dt.qint8:
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype is dt.quint8:
        return (0, 127) if reduce_range else (0, 255)
    if dtype is dt.qint32:
        return -(2**31), 2**31 - 1
    raise ValueError(f"unsupported observer dtype {dtype}")


class ObserverBase(Module):
    """An observer: `forward` records statistics and returns its input unchanged."""

    def __init__(self, dtype: dt.dtype = dt.quint8, is_dynamic: bool = False) -> None:
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    @classmethod
    def with_args(cls, **kwargs: Any) -> _PartialWrapper:
        return _PartialWrapper(functools.partial(cls, **kwargs))


class _UniformObserver(ObserverBase):
    def __init__(self, dtype: dt.dtype = dt.quint8, qscheme: object = per_tensor_affine,
                 reduce_range: bool = False, quant_min: int | None = None,
                 quant_max: int | None = None, eps: float = _EPS,
                 is_dynamic: bool = False) -> None:
        super().__init__(dtype, is_dynamic)
        if qscheme not in (per_tensor_affine, per_tensor_symmetric, per_channel_affine,
                           per_channel_symmetric):
            raise NotImplementedError(
                "Default Observer only works for per_tensor_affine, per_tensor_symmetric, "
                "per_channel_affine, per_channel_symmetric and "
                "per_channel_float_qparams quantization scheme"
            )
        if dtype not in (dt.qint8, dt.quint8, dt.qint32):
            raise ValueError("Default Observer only works for qint8, quint8 and quint4x2 data type")
        self.qscheme = qscheme
        self.reduce_range = reduce_range
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        self.quant_min, self.quant_max = qmin_qmax(dtype, reduce_range, quant_min, quant_max)
        self.eps = np.float32(eps)

    def _qparams(self, low: np.ndarray, high: np.ndarray) -> tuple[Tensor, Tensor]:
        if np.isinf(low).any() or np.isinf(high).any():
            return pyaten.tensor([1.0]), pyaten.tensor([0])
        qmin, qmax = self.quant_min, self.quant_max
        low_neg = np.minimum(low, np.float32(0)).astype(np.float32)
        high_pos = np.maximum(high, np.float32(0)).astype(np.float32)
        if self.qscheme in (per_tensor_symmetric, per_channel_symmetric):
            high_pos = np.maximum(-low_neg, high_pos)
            scale = (high_pos / np.float32((qmax - qmin) / 2)).astype(np.float32)
            scale = np.maximum(scale, self.eps)
            fill = 0
            if self.dtype is dt.quint8:
                fill = (qmin + qmax) // 2 if self.has_customized_qrange else 128
            zero_point = np.full(scale.shape, fill, np.int64)
        else:
            scale = ((high_pos - low_neg) / np.float32(qmax - qmin)).astype(np.float32)
            scale = np.maximum(scale, self.eps)
            zero_point = qmin - np.rint(low_neg / scale).astype(np.int64)
            zero_point = np.clip(zero_point, qmin, qmax)
        return (pyaten.from_numpy(np.atleast_1d(scale).astype(np.float32)),
                pyaten.from_numpy(np.atleast_1d(zero_point).astype(np.int64)))


class MinMaxObserver(_UniformObserver):
    """Running minimum and maximum of everything seen; per-tensor parameters."""

    def __init__(self, dtype: dt.dtype = dt.quint8, qscheme: object = per_tensor_affine,
                 reduce_range: bool = False, quant_min: int | None = None,
                 quant_max: int | None = None, eps: float = _EPS,
                 is_dynamic: bool = False, **kwargs: Any) -> None:
        if qscheme not in (per_tensor_affine, per_tensor_symmetric):
            raise NotImplementedError(
                "MinMaxObserver's qscheme only support torch.per_tensor_symmetric and "
                "torch.per_tensor_affine."
            )
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic)
        self.min_val = np.float32(np.inf)
        self.max_val = np.float32(-np.inf)

    def forward(self, x: Tensor) -> Tensor:
        if x.numel() == 0:
            return x
        values = x.detach().float()._numpy()
        self.min_val = np.minimum(values.min(), self.min_val)
        self.max_val = np.maximum(values.max(), self.max_val)
        return x

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        return self._qparams(np.asarray(self.min_val), np.asarray(self.max_val))

    def extra_repr(self) -> str:
        return f"min_val={pyaten.tensor(float(self.min_val))}, " \
               f"max_val={pyaten.tensor(float(self.max_val))}"


class PerChannelMinMaxObserver(_UniformObserver):
    """Running minimum and maximum per slice along `ch_axis`; per-channel parameters."""

    def __init__(self, ch_axis: int = 0, dtype: dt.dtype = dt.quint8,
                 qscheme: object = per_channel_affine, reduce_range: bool = False,
                 quant_min: int | None = None, quant_max: int | None = None,
                 eps: float = _EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        if qscheme not in (per_channel_affine, per_channel_symmetric):
            raise NotImplementedError(
                "PerChannelMinMaxObserver's qscheme only support torch.per_channel_symmetric, "
                "torch.per_channel_affine and torch.per_channel_affine_float_qparams."
            )
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic)
        self.ch_axis = ch_axis
        self.min_val: np.ndarray | None = None
        self.max_val: np.ndarray | None = None

    def forward(self, x: Tensor) -> Tensor:
        if x.numel() == 0:
            return x
        values = np.moveaxis(x.detach().float()._numpy(), self.ch_axis, 0)
        rows = values.reshape(values.shape[0], -1)
        low, high = rows.min(1), rows.max(1)
        if self.min_val is None or self.min_val.shape != low.shape:
            self.min_val, self.max_val = low, high
        else:
            self.min_val = np.minimum(low, self.min_val)
            self.max_val = np.maximum(high, self.max_val)
        return x

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        if self.min_val is None:
            return pyaten.tensor([1.0]), pyaten.tensor([0])
        return self._qparams(self.min_val, self.max_val)


class PlaceholderObserver(ObserverBase):
    """Records nothing: stands for parameters chosen later (dynamic quantization)."""

    def __init__(self, dtype: dt.dtype = dt.float32, custom_op_name: str = "",
                 compute_dtype: object = None, quant_min: int | None = None,
                 quant_max: int | None = None, qscheme: object = None, eps: float | None = None,
                 is_dynamic: bool = False) -> None:
        super().__init__(dtype, is_dynamic)
        self.qscheme = per_tensor_affine if qscheme is None else qscheme
        self.quant_min, self.quant_max = quant_min, quant_max

    def forward(self, x: Tensor) -> Tensor:
        return x

    def calculate_qparams(self) -> None:
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")  # noqa: TRY002


from pyaten.ao.quantization.histogram import HistogramObserver  # noqa: E402

default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_weight_observer = MinMaxObserver.with_args(dtype=dt.qint8, qscheme=per_tensor_symmetric)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=dt.qint8, qscheme=per_channel_symmetric
)
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=dt.quint8, quant_min=0, quant_max=255, is_dynamic=True
)
