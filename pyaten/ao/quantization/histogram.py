"""HistogramObserver: a running histogram, and the range that minimises the quantization error.

As PyTorch's (the default activation observer of `get_default_qconfig("x86")`): the first
batch sets a 2048-bin histogram over its [min, max]; a later batch widening the range
re-bins the old histogram by spreading each bin over 16 sub-bins. `calculate_qparams` then
narrows [min, max] bin by bin from the side holding less mass (steps of 1e-5 of the total),
while the L2 error of quantizing the histogram to 2^bits levels over the narrowed range keeps
falling, and computes affine parameters from the result as MinMaxObserver does. The work is
float32, as PyTorch's; histogram bin edges may differ from torch.histc's in the last bit, so
rare boundary elements can fall in a neighbouring bin.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import pyaten
from pyaten.ao.quantization.observer import _EPS, _UniformObserver
from pyaten.core import dtypes as dt
from pyaten.core.quantized import per_tensor_affine, per_tensor_symmetric
from pyaten.core.tensor import Tensor

__all__ = ["HistogramObserver"]

_F = np.float32


def _histc(values: np.ndarray, bins: int, low: np.float32, high: np.float32) -> np.ndarray:
    if low == high:
        low, high = _F(low - 1), _F(high + 1)
    edges = np.linspace(low, high, bins + 1, dtype=np.float32)
    inside = values[(values >= low) & (values <= high)]
    index = np.searchsorted(edges, inside, side="right") - 1
    index = np.clip(index, 0, bins - 1)
    return np.bincount(index, minlength=bins).astype(np.float32)


class HistogramObserver(_UniformObserver):
    """Records a running histogram; parameters from the range that minimises the L2
    quantization error."""

    def __init__(self, bins: int = 2048, dtype: dt.dtype = dt.quint8,
                 qscheme: object = per_tensor_affine, reduce_range: bool = False,
                 quant_min: int | None = None, quant_max: int | None = None,
                 factory_kwargs: Any = None, eps: float = _EPS, is_dynamic: bool = False,
                 **kwargs: Any) -> None:
        if qscheme not in (per_tensor_affine, per_tensor_symmetric):
            raise NotImplementedError(
                "HistogramObserver's qscheme only support torch.per_tensor_symmetric and "
                "torch.per_tensor_affine."
            )
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic quantization")
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic)
        self.bins = bins
        self.histogram = np.zeros(bins, np.float32)
        self.min_val = _F(np.inf)
        self.max_val = _F(-np.inf)
        self.dst_nbins = 2 ** (8 * dtype.itemsize)
        self.upsample_rate = 16

    # --- recording ---------------------------------------------------------------------------

    def _upscale(self, histogram: np.ndarray, orig_min: np.float32, orig_max: np.float32,
                 new_min: np.float32, new_max: np.float32) -> np.ndarray:
        rate = self.upsample_rate
        fine = np.repeat(histogram, rate) / _F(rate)
        bin_size = _F((orig_max - orig_min) / _F(self.bins * rate))
        mids = (np.linspace(orig_min, orig_max, self.bins * rate + 1, dtype=np.float32)[:-1]
                + _F(0.5) * bin_size)
        bounds = np.linspace(new_min, new_max, self.bins + 1, dtype=np.float32)
        buckets = np.clip(np.searchsorted(bounds, mids, side="right") - 1, 0, self.bins - 1)
        return np.bincount(buckets, weights=fine, minlength=self.bins).astype(np.float32)

    def forward(self, x: Tensor) -> Tensor:
        if x.numel() == 0:
            return x
        values = x.detach().float()._numpy().reshape(-1)
        low, high = values.min(), values.max()
        if np.isinf(low) or np.isinf(high):
            warnings.warn("torch.inf detected in input tensor, ignoring input", stacklevel=2)
            values = values[np.abs(values) != np.inf]
            if values.size == 0:
                return x
            low, high = values.min(), values.max()
        if self.min_val == np.inf or self.max_val == -np.inf:
            self.min_val, self.max_val = _F(low), _F(high)
            self.histogram = _histc(values, self.bins, self.min_val, self.max_val)
            return x
        new_min, new_max = min(self.min_val, _F(low)), max(self.max_val, _F(high))
        update = _histc(values, self.bins, new_min, new_max)
        if new_min == self.min_val and new_max == self.max_val:
            self.histogram = self.histogram + update
        elif self.min_val == self.max_val:
            total = self.histogram.sum()
            self.histogram = _histc(np.array([self.min_val], np.float32), self.bins, new_min,
                                    new_max) * total + update
        else:
            self.histogram = update + self._upscale(self.histogram, self.min_val,
                                                    self.max_val, new_min, new_max)
        self.min_val, self.max_val = new_min, new_max
        return x

    # --- choosing the range ----------------------------------------------------------------

    def _quantization_error(self, start_bin: int, end_bin: int) -> float:
        bin_width = (float(self.max_val) - float(self.min_val)) / self.bins
        dst_width = bin_width * (end_bin - start_bin + 1) / self.dst_nbins
        if dst_width == 0.0:
            return 0.0
        last = self.dst_nbins - 1
        src = np.arange(self.bins)
        begin = ((src - start_bin).astype(np.float32) * _F(bin_width)).astype(np.float32)
        end = begin + _F(bin_width)
        dst_of_begin = np.clip(np.floor(begin / _F(dst_width)), 0, last).astype(np.float32)
        dst_of_end = np.clip(np.floor(end / _F(dst_width)), 0, last).astype(np.float32)
        density = self.histogram / _F(bin_width)
        half = _F(dst_width / 2)

        def norm(lo: Any, hi: Any) -> np.ndarray:
            return density * ((hi * hi * hi - lo * lo * lo) / _F(3))

        begin_center = (dst_of_begin + _F(0.5)) * _F(dst_width)
        total = norm(begin - begin_center, np.full(self.bins, half, np.float32))
        total = total + (dst_of_end - dst_of_begin - 1) * norm(-half, half)
        end_center = dst_of_end * _F(dst_width) + half
        total = total + norm(-half, end - end_center)
        return float(total.astype(np.float32).sum(dtype=np.float32))

    def _non_linear_param_search(self) -> tuple[np.float32, np.float32]:
        bin_width = _F((self.max_val - self.min_val) / _F(self.bins))
        total = float(self.histogram.sum(dtype=np.float32))
        csum = np.cumsum(self.histogram, dtype=np.float32)
        step = 1e-5
        alpha, beta = 0.0, 1.0
        start_bin, end_bin = 0, self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha, next_beta = alpha + step, beta - step
            left, right = start_bin, end_bin
            while left < end_bin and csum[left] < _F(next_alpha * total):
                left += 1
            while right > start_bin and csum[right] > _F(next_beta * total):
                right -= 1
            next_start, next_end = start_bin, end_bin
            if (left - start_bin) > (end_bin - right):
                next_start, alpha = left, next_alpha
            else:
                next_end, beta = right, next_beta
            if next_start == start_bin and next_end == end_bin:
                continue
            error = self._quantization_error(next_start, next_end)
            if error > norm_min:
                break
            norm_min = error
            start_bin, end_bin = next_start, next_end
        return (_F(self.min_val + bin_width * _F(start_bin)),
                _F(self.min_val + bin_width * _F(end_bin + 1)))

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        if self.min_val == np.inf and self.max_val == -np.inf:
            warnings.warn(
                "must run observer before calling calculate_qparams. Returning default scale "
                "and zero point ",
                stacklevel=2,
            )
            return pyaten.tensor([1.0]), pyaten.tensor([0])
        low, high = self._non_linear_param_search()
        return self._qparams(np.asarray(low), np.asarray(high))
