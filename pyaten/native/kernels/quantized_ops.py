"""Operators on quantized tensors: ATen's QuantizedCPU kernels (relu, cat, max_pool2d) and the
`quantized::` namespace (add, mul, cat, linear, conv2d and their prepacked weights).

Note: integer arithmetic as fbgemm does it
    The kernels compute on the integers and requantize as PyTorch's x86 kernels do, so their
    results agree with PyTorch's to the integer:
    - add: each input dequantized to float32 (`fma(scale, q, -zero_point * scale)` where
      ATen's loop is vectorized, `(q - zero_point) * scale` in its scalar tail), summed, and
      requantized as `rint(x * (1 / scale)) + zero_point` (the tail: fbgemm's fused form);
    - mul: `(a - za) * (b - zb)` in integers, times the float32 `sa * sb * (1 / s)`, rounded
      once to float32 and then to an integer, plus the output zero point;
    - linear / conv2d: an int32 accumulator `sum (x - zx) * (w - zw)`; statically quantized,
      `rint((acc + bias / (sx * sw)) * (sx * sw / s)) + z` in float32; dynamically, the input
      quantized per call to quint8 with ChooseQuantizationParams over its min and max (to
      [0, 127] with `reduce_range`), the output `acc * (sx * sw) + bias` in float32.
    fbgemm's AVX2 kernel adds each pair of u8 x s8 products along K into an int16 with
    saturation (`vpmaddubsw`). That changes the result only when a pair can exceed 32767, which
    the `reduce_range` default avoids; when the operands' ranges allow it, `linear` emulates the
    saturation (a slower path). The accumulators are computed with float matrix products
    (BLAS), exact for these integers: float32 when every partial sum stays below 2**24,
    float64 otherwise.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.creation import from_numpy
from pyaten.core.quantized import (
    QuantizedTensor,
    dequantized_values,
    make_quantized,
    per_channel_affine,
    per_tensor_affine,
    quantized_range,
)
from pyaten.core.tensor import Tensor
from pyaten.library import Library
from pyaten.native.kernels.quantized import quantize_array
from pyaten.native.registry import native

# --- ATen operators' QuantizedCPU kernels ---------------------------------------------------


def _same_quantizer(values: np.ndarray, like: QuantizedTensor) -> QuantizedTensor:
    if like._qscheme is per_tensor_affine:
        return make_quantized(values, like._dtype, per_tensor_affine, like._q_scale,
                              like._q_zero_point)
    return make_quantized(values, like._dtype, per_channel_affine, like._q_scales.clone(),
                          like._q_zero_points.clone(), like._q_axis)


def _zero_points_like(q: QuantizedTensor) -> np.ndarray | int:
    if q._qscheme is per_tensor_affine:
        return q._q_zero_point
    shape = [1] * len(q._sizes)
    shape[q._q_axis] = -1
    return q._q_zero_points._numpy().reshape(shape)


@native
def relu_quantized_cpu(self: Tensor) -> Tensor:
    # The real value 0 is the zero point: relu clamps the integers from below at it.
    values = self._numpy()
    return _same_quantizer(np.maximum(values, _zero_points_like(self)).astype(values.dtype),
                           self)


@native
def relu_quantized_cpu_(self: Tensor) -> Tensor:
    values = self._numpy()
    np.maximum(values, _zero_points_like(self), out=values, casting="unsafe")
    self._bump_version()
    return self


@native
def view_quantized(self: Tensor, size: tuple) -> Tensor:
    from pyaten.native.kernels.shape import view

    return view(self, size)  # Tensor._make_view keeps a quantized tensor's views quantized


@native
def quantized_clone(self: Tensor, memory_format: object = None) -> Tensor:
    return _same_quantizer(self._numpy().copy(), self)


@native
def index_select_quantized_cpu_(self: Tensor, dim: int, index: Tensor) -> Tensor:
    """`index_select` of a per-tensor quantized tensor: the dense kernel on its integers (its
    checks and errors included), the quantizer kept."""
    if self._qscheme is not per_tensor_affine:
        raise RuntimeError(
            "Only per_tensor quantized quantized tensors are supported by index_select.")
    from pyaten.native.ops_handles import aten_ops

    ints = from_numpy(np.ascontiguousarray(self._numpy()))
    picked = aten_ops().index_select.default(ints, dim, index)
    return _same_quantizer(picked._numpy(), self)


def _check_per_tensor(fn: str, tensors: tuple) -> None:
    for t in tensors:
        if not isinstance(t, QuantizedTensor):
            raise RuntimeError(f"{fn}: all inputs must be quantized tensors")
        if t._qscheme is not per_tensor_affine:
            raise RuntimeError(f"Only per-tensor quantization is supported in {fn}.")


def _cat_arrays(tensors: tuple, dim: int) -> list[np.ndarray]:
    from pyaten.native.kernels.shape import wrap_dim

    ndim = len(tensors[0]._sizes)
    return [t._numpy() for t in tensors], wrap_dim(dim, ndim)


def quantized_cat(tensors: tuple, dim: int, scale: float, zero_point: int) -> QuantizedTensor:
    """Concatenate quantized tensors into one with the given parameters: the integers copied
    when a tensor already has them, requantized from its real values otherwise."""
    _check_per_tensor("quantized cat", tensors)
    dtype = tensors[0]._dtype
    arrays, axis = _cat_arrays(tensors, dim)
    pieces = []
    for t, values in zip(tensors, arrays):
        if t._dtype is not dtype:
            raise RuntimeError("All dtypes must be the same. (quantized cat)")
        if t._q_scale == scale and t._q_zero_point == zero_point:
            pieces.append(values)
        else:
            pieces.append(quantize_array(dequantized_values(t), scale, zero_point, dtype))
    return make_quantized(np.concatenate(pieces, axis=axis), dtype, per_tensor_affine, scale,
                          zero_point)


@native
def cat_quantized_cpu(tensors: tuple, dim: int) -> Tensor:
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    _check_per_tensor("cat", tensors)
    first = tensors[0]
    return quantized_cat(tensors, dim, first._q_scale, first._q_zero_point)


def _pair(v: object, name: str) -> tuple[int, int]:
    values = tuple(v) if isinstance(v, (tuple, list)) else (v,)
    if len(values) == 1:
        values = values * 2
    if len(values) != 2:
        raise RuntimeError(f"quantized_max_pool2d(): expected {name} to have 2 elements")
    return int(values[0]), int(values[1])


@native
def quantized_max_pool2d(self: Tensor, kernel_size, stride, padding, dilation,
                         ceil_mode: bool) -> Tensor:
    from pyaten.native.kernels.pool import max_pool2d_arrays, pool_out_size

    if len(self._sizes) not in (3, 4):
        raise RuntimeError(f"Expected 3D or 4D tensor, but got {len(self._sizes)}D")
    k = _pair(kernel_size, "kernel_size")
    s = _pair(stride if len(tuple(stride)) else kernel_size, "stride")
    p = _pair(padding, "padding")
    d = _pair(dilation, "dilation")
    size = self._sizes[-2:]
    out = tuple(pool_out_size(size[i], k[i], p[i], s[i], d[i], ceil_mode) for i in range(2))
    values = self._numpy()
    pooled, _ = max_pool2d_arrays(values, k, s, p, d, out)
    return _same_quantizer(pooled.astype(values.dtype), self)


def _window_sums(values: np.ndarray, starts: tuple, ends: tuple) -> np.ndarray:
    """Sums of `values` (..., H, W) over the windows [starts[0][i], ends[0][i]) x
    [starts[1][j], ends[1][j]) (in-bounds ranges), by an integral image."""
    integral = np.zeros(values.shape[:-2] + (values.shape[-2] + 1, values.shape[-1] + 1),
                        np.int64)
    integral[..., 1:, 1:] = values.astype(np.int64).cumsum(-2).cumsum(-1)
    hs, he = starts[0][:, None], ends[0][:, None]
    ws, we = starts[1][None, :], ends[1][None, :]
    return (integral[..., he, we] - integral[..., hs, we] - integral[..., he, ws]
            + integral[..., hs, ws])


def _average_requantized(q: QuantizedTensor, sums: np.ndarray, counts: np.ndarray,
                         divisors: np.ndarray) -> QuantizedTensor:
    # ATen: the in-window integers less the zero point for each, divided and rounded half to
    # even, plus the zero point; the output keeps the input's parameters.
    zero_point = q._q_zero_point
    centered = sums - counts * zero_point
    low, high = quantized_range(q._dtype)
    ints = np.clip(np.rint(centered / divisors) + zero_point, low, high)
    return _same_quantizer(ints.astype(q._dtype.numpy), q)


@native
def avg_pool2d_quantized_cpu(self: Tensor, kernel_size, stride, padding, ceil_mode: bool,
                             count_include_pad: bool, divisor_override) -> Tensor:
    from pyaten.native.kernels.pool import pool_out_size

    if len(self._sizes) not in (3, 4):
        raise RuntimeError(f"Expected 3D or 4D tensor, but got {len(self._sizes)}D")
    _check_per_tensor("quantized avg_pool2d", (self,))
    k = _pair(kernel_size, "kernel_size")
    s = _pair(stride if len(tuple(stride)) else kernel_size, "stride")
    p = _pair(padding, "padding")
    starts, ends, counts, sizes = [], [], [], []
    for a in range(2):
        size = self._sizes[-2 + a]
        out = pool_out_size(size, k[a], p[a], s[a], 1, ceil_mode)
        begin = np.arange(out) * s[a] - p[a]
        end = np.minimum(begin + k[a], size + p[a])
        sizes.append(end - begin)
        begin, end = np.maximum(begin, 0), np.minimum(end, size)
        starts.append(begin)
        ends.append(end)
        counts.append(end - begin)
    window_counts = counts[0][:, None] * counts[1][None, :]
    if divisor_override is not None:
        divisors = np.full(window_counts.shape, int(divisor_override))
    elif count_include_pad:
        divisors = sizes[0][:, None] * sizes[1][None, :]
    else:
        divisors = window_counts
    sums = _window_sums(self._numpy(), tuple(starts), tuple(ends))
    return _average_requantized(self, sums, window_counts, divisors)


@native
def adaptive_avg_pool2d_quantized_cpu(self: Tensor, output_size) -> Tensor:
    if len(self._sizes) not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got "
                           f"{tuple(self._sizes)}")
    _check_per_tensor("quantized adaptive_avg_pool2d", (self,))
    starts, ends = [], []
    for a, out in enumerate(_pair(output_size, "output_size")):
        size = self._sizes[-2 + a]
        index = np.arange(out)
        starts.append(index * size // out)
        ends.append(-((-(index + 1) * size) // out))
    counts = (ends[0] - starts[0])[:, None] * (ends[1] - starts[1])[None, :]
    sums = _window_sums(self._numpy(), tuple(starts), tuple(ends))
    return _average_requantized(self, sums, counts, counts)


@native
def mean_quantized_cpu(self: Tensor, dim, keepdim: bool = False, dtype: object = None) -> Tensor:
    from pyaten.native.kernels.shape import wrap_dim

    _check_per_tensor("quantized mean", (self,))
    ndim = len(self._sizes)
    dims = tuple(range(ndim)) if dim is None or len(tuple(dim)) == 0 else \
        tuple(sorted({wrap_dim(d, ndim) for d in dim}))
    values = self._numpy()
    count = int(np.prod([self._sizes[d] for d in dims], dtype=np.int64))
    if dims == tuple(range(ndim - len(dims), ndim)):
        # ATen's inner-dimension kernel: the integer sum over the count, rounded half to even
        ints = np.rint(values.astype(np.int64).sum(dims, keepdims=keepdim) / count)
    else:  # ATen: dequantize, take the float mean, quantize with the input's parameters
        real = dequantized_values(self).mean(dims, keepdims=keepdim, dtype=np.float32)
        ints = quantize_array(real, self._q_scale, self._q_zero_point, self._dtype)
    low, high = quantized_range(self._dtype)
    return _same_quantizer(np.clip(ints, low, high).astype(self._dtype.numpy), self)


# --- choosing parameters for dynamic quantization ------------------------------------------

_SMALL_SCALE = np.float32(6.1e-5)


def choose_qparams(low: float, high: float, qmin: int, qmax: int,
                   reduce_range: bool = False, float_scale: bool = True) -> tuple[float, int]:
    """ATen's ChooseQuantizationParams: a scale (rounded to float32 where fbgemm takes it as
    one) and an integer zero point mapping [min(low, 0), max(high, 0)] onto [qmin, qmax]
    (halved with `reduce_range`)."""
    if reduce_range:
        qmin, qmax = int(qmin / 2), int(qmax / 2)  # C++ division truncates
    low, high = min(float(np.float32(low)), 0.0), max(float(np.float32(high)), 0.0)
    scale = (high - low) / (qmax - qmin)
    if np.float32(scale) == 0 or np.isinf(np.float32(1.0) / np.float32(scale)):
        scale = 0.1
    if float_scale:
        scale = float(np.float32(scale))
    if scale < _SMALL_SCALE:
        original, scale = scale, float(_SMALL_SCALE)
        if low == 0.0:
            high = scale * (qmax - qmin)
        elif high == 0.0:
            low = -scale * (qmax - qmin)
        else:
            low, high = low * (scale / original), high * (scale / original)
    from_min, from_max = qmin - low / scale, qmax - high / scale
    error_min = abs(qmin) - abs(low / scale)
    error_max = abs(qmax) - abs(high / scale)
    initial = from_min if error_min < error_max else from_max
    if initial < qmin:
        zero_point = qmin
    elif initial > qmax:
        zero_point = qmax
    else:
        zero_point = int(np.rint(initial))
    return scale, zero_point


@native
def quantize_per_tensor_dynamic(self: Tensor, dtype: dt.dtype, reduce_range: bool) -> Tensor:
    from pyaten.native.kernels.quantized import quantize_per_tensor

    if dtype not in (dt.quint8, dt.qint8):
        raise RuntimeError(f"dtype {dtype.scalar_name}not supported")
    values = self._numpy()
    low, high = (values.min(), values.max()) if values.size else (0.0, 0.0)
    qmin, qmax = quantized_range(dtype)
    scale, zero_point = choose_qparams(low, high, qmin, qmax, reduce_range, float_scale=False)
    return quantize_per_tensor(self, scale, zero_point, dtype)


@native
def equal_quantized_cpu(self: Tensor, other: Tensor) -> bool:
    if not (isinstance(self, QuantizedTensor) and isinstance(other, QuantizedTensor)):
        return False
    if self._qscheme is not other._qscheme or self._dtype is not other._dtype:
        return False
    if self._qscheme is per_tensor_affine:
        same = (self._q_scale == other._q_scale and self._q_zero_point == other._q_zero_point)
    else:
        same = (self._q_axis == other._q_axis
                and np.array_equal(self._q_scales._numpy(), other._q_scales._numpy())
                and np.array_equal(self._q_zero_points._numpy(), other._q_zero_points._numpy()))
    return bool(same and tuple(self._sizes) == tuple(other._sizes)
                and np.array_equal(self._numpy(), other._numpy()))


# --- prepacked weights ----------------------------------------------------------------------


class LinearPackedParams:
    """`quantized::linear_prepack`'s result: a qint8 weight (per tensor or per channel along
    the output features), the float bias, and the integer forms the kernels use."""

    def __init__(self, weight: QuantizedTensor, bias: Tensor | None) -> None:
        if not isinstance(weight, QuantizedTensor) or weight._dtype is not dt.qint8:
            raise RuntimeError("quantized::linear_prepack (fbgemm): Weight should be qint8")
        if len(weight._sizes) != 2:
            raise RuntimeError("quantized::linear_prepack (fbgemm): Weight tensor rank should "
                               "be == 2")
        out_features = weight._sizes[0]
        if bias is not None and tuple(bias._sizes) != (out_features,):
            raise RuntimeError(f"bias should be a vector (1D Tensor) of size {out_features}")
        self.weight = weight
        self.bias = bias
        ints = weight._numpy().astype(np.int64)
        self.weight_raw = ints
        if weight._qscheme is per_tensor_affine:
            self.scales = np.full(out_features, np.float32(weight._q_scale), np.float32)
            self.zero_points = np.full(out_features, weight._q_zero_point, np.int64)
        else:
            self.scales = weight._q_scales._numpy().astype(np.float32)
            self.zero_points = weight._q_zero_points._numpy().astype(np.int64)
        centered = ints - self.zero_points[:, None]
        self.weight_centered = centered.astype(np.float64).T.copy()
        self.weight_centered32 = centered.astype(np.float32).T.copy()
        self.weight_extent = int(np.abs(centered).max(initial=0))
        self.bias_values = None if bias is None else bias._numpy().astype(np.float32)

    def unpack(self) -> tuple[Tensor, Tensor | None]:
        return self.weight, self.bias

    def __getstate__(self) -> tuple:
        return self.unpack()

    def __setstate__(self, state: tuple) -> None:
        self.__init__(*state)


def _accumulate(x_raw: np.ndarray, x_zero_point: int, packed: LinearPackedParams,
                saturate: bool) -> np.ndarray:
    """The int32 accumulator `(x - zx) @ (w - zw).T` (float64, exact), with fbgemm's int16
    saturation of pairs of products when `saturate` (Note: integer arithmetic as fbgemm does
    it)."""
    k = packed.weight_raw.shape[1]
    x_extent = max(abs(int(x_raw.max(initial=0)) - x_zero_point),
                   abs(int(x_raw.min(initial=0)) - x_zero_point))
    if k * x_extent * packed.weight_extent < 2**24:
        # Every partial sum is an integer float32 holds exactly: the faster product.
        acc = (x_raw.astype(np.float32) - np.float32(x_zero_point)) @ packed.weight_centered32
        acc = acc.astype(np.float64)
    else:
        acc = (x_raw.astype(np.float64) - x_zero_point) @ packed.weight_centered
    if not saturate:
        return acc
    w = packed.weight_raw
    bound = 2 * int(x_raw.max(initial=0)) * int(np.abs(w).max(initial=0))
    if bound <= 32767:
        return acc
    padded = (k + 3) // 4 * 4
    wp = np.zeros((w.shape[0], padded), np.int64)
    wp[:, :k] = w
    rows = np.zeros((x_raw.shape[0], padded), np.int64)
    rows[:, :k] = x_raw
    out = np.empty((x_raw.shape[0], w.shape[0]), np.float64)
    step = max(1, (1 << 22) // max(1, w.shape[0] * padded))
    for start in range(0, rows.shape[0], step):
        chunk = rows[start:start + step]
        pairs = chunk[:, None, 0::2] * wp[None, :, 0::2] + chunk[:, None, 1::2] * wp[None, :, 1::2]
        out[start:start + step] = np.clip(pairs, -32768, 32767).sum(-1)
    # The zero points' terms, as fbgemm subtracts them after the saturating sum.
    out -= x_zero_point * w.sum(1)[None, :]
    out -= packed.zero_points[None, :] * (x_raw.sum(1)[:, None] - k * x_zero_point)
    return out


def quantized_linear(x: QuantizedTensor, packed: LinearPackedParams, scale: float,
                     zero_point: int, relu: bool = False) -> QuantizedTensor:
    if not isinstance(x, QuantizedTensor) or x._dtype is not dt.quint8:
        raise RuntimeError("quantized::linear (fbgemm): Expected input data type to be quint8")
    k = packed.weight_raw.shape[1]
    if not x._sizes or x._sizes[-1] != k:
        raise RuntimeError(
            f"quantized::linear (fbgemm): input size {tuple(x._sizes)} does not match the "
            f"weight's {k} input features"
        )
    lead = tuple(x._sizes[:-1])
    rows = x._numpy().reshape(-1, k)
    acc = _accumulate(rows, x._q_zero_point, packed, saturate=True)
    act_times_w = (np.float32(x._q_scale) * packed.scales).astype(np.float32)
    raw = acc.astype(np.float32)
    if packed.bias_values is not None:
        raw = (raw + (packed.bias_values / act_times_w).astype(np.float32)).astype(np.float32)
    multiplier = (act_times_w / np.float32(scale)).astype(np.float32)
    ints = np.rint((raw * multiplier).astype(np.float32)) + zero_point
    low, high = quantized_range(dt.quint8)
    if relu:
        low = max(low, zero_point)
    out = np.clip(ints, low, high).astype(np.uint8)
    return make_quantized(out.reshape(lead + (packed.weight_raw.shape[0],)), dt.quint8,
                          per_tensor_affine, scale, zero_point)


def linear_dynamic(x: Tensor, packed: LinearPackedParams, reduce_range: bool = False,
                   relu: bool = False) -> Tensor:
    """fbgemm's dynamic linear: quantize `x` per call, integer product, float output."""
    if x._dtype is not dt.float32:
        raise RuntimeError(f"expected scalar type Float but found {x._dtype.scalar_name}")
    k = packed.weight_raw.shape[1]
    if not x._sizes or x._sizes[-1] != k:
        raise RuntimeError(
            f"quantized::linear_dynamic (fbgemm): input size {tuple(x._sizes)} does not match "
            f"the weight's {k} input features"
        )
    lead = tuple(x._sizes[:-1])
    values = x._numpy().reshape(-1, k)
    if values.size:
        scale, zero_point = choose_qparams(values.min(), values.max(), 0, 255, reduce_range)
    else:
        scale, zero_point = choose_qparams(0.0, 0.0, 0, 255, reduce_range)
    rows = quantize_array(values, scale, zero_point, dt.quint8)
    if reduce_range:
        rows = np.minimum(rows, 127)
    acc = _accumulate(rows, zero_point, packed, saturate=not reduce_range)
    multiplier = (np.float32(scale) * packed.scales).astype(np.float32).astype(np.float64)
    y = acc * multiplier
    if packed.bias_values is not None:
        y = y + packed.bias_values
    y = y.astype(np.float32)
    if relu:
        np.maximum(y, 0, out=y)
    return from_numpy(y.reshape(lead + (packed.weight_raw.shape[0],)))


class Conv2dPackedParams:
    """`quantized::conv2d_prepack`'s result: a qint8 weight (per tensor or per output channel),
    the float bias and the convolution's geometry."""

    def __init__(self, weight: QuantizedTensor, bias: Tensor | None, stride: tuple,
                 padding: tuple, dilation: tuple, groups: int) -> None:
        if not isinstance(weight, QuantizedTensor) or weight._dtype is not dt.qint8:
            raise RuntimeError("quantized::conv2d_prepack (fbgemm): Weight should be qint8")
        if len(weight._sizes) != 4:
            raise RuntimeError("quantized::conv2d_prepack (fbgemm): Weights are expected to "
                               "have 4 dimensions")
        self.weight, self.bias = weight, bias
        self._stride, self._padding, self._dilation = (_pair(stride, "stride"),
                                                       _pair(padding, "padding"),
                                                       _pair(dilation, "dilation"))
        self._groups = int(groups)
        out_channels = weight._sizes[0]
        ints = weight._numpy().astype(np.int64)
        if weight._qscheme is per_tensor_affine:
            self.scales = np.full(out_channels, np.float32(weight._q_scale), np.float32)
            self.zero_points = np.full(out_channels, weight._q_zero_point, np.int64)
        else:
            self.scales = weight._q_scales._numpy().astype(np.float32)
            self.zero_points = weight._q_zero_points._numpy().astype(np.int64)
        self.weight_centered = (ints - self.zero_points[:, None, None, None]).astype(np.float64)
        self.bias_values = None if bias is None else bias._numpy().astype(np.float32)

    def unpack(self) -> tuple[Tensor, Tensor | None]:
        return self.weight, self.bias

    def stride(self) -> list[int]:
        return list(self._stride)

    def padding(self) -> list[int]:
        return list(self._padding)

    def dilation(self) -> list[int]:
        return list(self._dilation)

    def groups(self) -> int:
        return self._groups


def quantized_conv2d(x: QuantizedTensor, packed: Conv2dPackedParams, scale: float,
                     zero_point: int, relu: bool = False) -> QuantizedTensor:
    if not isinstance(x, QuantizedTensor) or x._dtype is not dt.quint8:
        raise RuntimeError("quantized::conv2d (fbgemm): Expected input data type to be quint8")
    if len(x._sizes) != 4:
        raise RuntimeError("quantized::conv2d (fbgemm): Expected activation tensor to have 4 "
                           "dimensions")
    w = packed.weight_centered
    groups = packed._groups
    n, c, _, _ = x._sizes
    out_channels, c_per_group, kh, kw = w.shape
    if c != c_per_group * groups:
        raise RuntimeError(
            f"quantized::conv2d (fbgemm): Given groups={groups}, weight of size "
            f"{tuple(packed.weight._sizes)}, expected input{tuple(x._sizes)} to have "
            f"{c_per_group * groups} channels, but got {c} channels instead"
        )
    (sh, sw), (ph, pw), (dh, dw) = packed._stride, packed._padding, packed._dilation
    # Padding holds the real value 0, the zero point: zero once the zero point is taken off.
    centered = np.pad(x._numpy().astype(np.float64) - x._q_zero_point,
                      ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    windows = np.lib.stride_tricks.sliding_window_view(centered, (span_h, span_w), axis=(2, 3))
    windows = windows[:, :, ::sh, ::sw, ::dh, ::dw]  # (N, C, OH, OW, kh, kw)
    oh, ow = windows.shape[2], windows.shape[3]
    per_group = out_channels // groups
    acc = np.empty((n, out_channels, oh, ow), np.float64)
    for g in range(groups):
        part = windows[:, g * c_per_group:(g + 1) * c_per_group]
        acc[:, g * per_group:(g + 1) * per_group] = np.einsum(
            "nchwij,ocij->nohw", part, w[g * per_group:(g + 1) * per_group], optimize=True
        )
    act_times_w = (np.float32(x._q_scale) * packed.scales).astype(np.float32)[None, :, None, None]
    raw = acc.astype(np.float32)
    if packed.bias_values is not None:
        bias = packed.bias_values[None, :, None, None]
        raw = (raw + (bias / act_times_w).astype(np.float32)).astype(np.float32)
    multiplier = (act_times_w / np.float32(scale)).astype(np.float32)
    ints = np.rint((raw * multiplier).astype(np.float32)) + zero_point
    low = zero_point if relu else 0
    return make_quantized(np.clip(ints, low, 255).astype(np.uint8), dt.quint8,
                          per_tensor_affine, scale, zero_point)


# --- the quantized:: namespace --------------------------------------------------------------


def _binary_operands(name: str, qa: Tensor, qb: Tensor) -> tuple[tuple, np.ndarray, np.ndarray]:
    """The broadcast shape and both operands' integers broadcast to it; PyTorch's errors."""
    from pyaten.native.ops_handles import aten_ops
    from pyaten.native.structured import broadcast_shapes

    for t in (qa, qb):
        if not isinstance(t, QuantizedTensor):
            aten_ops().qscheme.default(t)  # "Could not run 'aten::qscheme' ... 'CPU' backend"
    _check_per_tensor(f"quantized::{name.lower()}", (qa, qb))
    if qa._dtype is not qb._dtype:
        raise RuntimeError(f"{name} operands should have same data type.")
    shape = tuple(broadcast_shapes(name, tuple(qa._sizes), tuple(qb._sizes)))
    return (shape, np.broadcast_to(qa._numpy(), shape), np.broadcast_to(qb._numpy(), shape))


def _vectorized_mask(shape: tuple, operands: tuple, dtype: dt.dtype) -> np.ndarray:
    """Which output elements ATen's vectorized loop computes (the rest its scalar tail): the
    iterator coalesces the innermost dimensions that are contiguous for every operand into
    rows, and each row is vectorized two AVX2 vectors at a time."""
    row = 1
    for axis in range(len(shape) - 1, -1, -1):
        row *= shape[axis]
        if axis == 0:
            break
        if not all(_mergeable(t, shape, axis) for t in operands):
            break
    step = 2 * (32 // dtype.itemsize)
    size = int(np.prod(shape, dtype=np.int64))
    position = np.arange(size) % max(row, 1)
    return (position < row // step * step).reshape(shape)


def _mergeable(t: Tensor, shape: tuple, axis: int) -> bool:
    # Dimension `axis - 1` merges into `axis` when the operand's (broadcast) strides allow it.
    offset = len(shape) - len(t._sizes)
    def stride(a: int) -> int:
        if a < offset or t._sizes[a - offset] == 1:
            return 0
        return t._strides[a - offset]
    return stride(axis - 1) == stride(axis) * shape[axis]


def _dequantize_by_loop(q: QuantizedTensor, ints: np.ndarray, vector: np.ndarray) -> np.ndarray:
    # vectorized: fma(scale, q, -zero_point * scale); scalar: (q - zero_point) * scale
    scale = np.float32(q._q_scale)
    premul = np.float64(np.float32(-q._q_zero_point * scale))
    fused = (ints.astype(np.float64) * np.float64(scale) + premul).astype(np.float32)
    plain = (ints.astype(np.int64) - q._q_zero_point).astype(np.float32) * scale
    return np.where(vector, fused, plain)


def quantized_add(qa: Tensor, qb: Tensor, scale: float, zero_point: int,
                  relu: bool = False) -> QuantizedTensor:
    shape, a, b = _binary_operands("Add", qa, qb)
    vector = _vectorized_mask(shape, (qa, qb), qa._dtype)
    total = _dequantize_by_loop(qa, a, vector) + _dequantize_by_loop(qb, b, vector)
    if relu:
        np.maximum(total, 0, out=total)
    inv_scale = np.float32(1.0) / np.float32(scale)
    low, high = quantized_range(qa._dtype)
    # vectorized: rint(x * inv_scale) + zero_point; scalar: fbgemm's fused Quantize
    ints = np.where(vector, np.rint((total * inv_scale).astype(np.float32)) + zero_point,
                    quantize_array(total, scale, zero_point, dt.qint32))
    return make_quantized(np.clip(ints, low, high), qa._dtype, per_tensor_affine, scale,
                          zero_point)


def quantized_mul(qa: Tensor, qb: Tensor, scale: float, zero_point: int,
                  relu: bool = False) -> QuantizedTensor:
    _, a, b = _binary_operands("Mul", qa, qb)
    product = ((a.astype(np.int64) - qa._q_zero_point) * (b.astype(np.int64) - qb._q_zero_point))
    multiplier = (np.float32(qa._q_scale) * np.float32(qb._q_scale)
                  * (np.float32(1.0) / np.float32(scale)))
    ints = np.rint((product * np.float64(multiplier)).astype(np.float32)) + zero_point
    low, high = quantized_range(qa._dtype)
    if relu:
        low = max(low, zero_point)
    return make_quantized(np.clip(ints, low, high), qa._dtype, per_tensor_affine, scale,
                          zero_point)


_LINEAR_PARAMS = "__torch__.torch.classes.quantized.LinearPackedParamsBase"
_CONV_PARAMS = "__torch__.torch.classes.quantized.Conv2dPackedParamsBase"

LIBRARY = Library("quantized", "DEF")
_DEFINITIONS = (
    ("add(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc", "QuantizedCPU",
     lambda qa, qb, scale, zero_point: quantized_add(qa, qb, scale, zero_point)),
    ("add_relu(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc", "QuantizedCPU",
     lambda qa, qb, scale, zero_point: quantized_add(qa, qb, scale, zero_point, relu=True)),
    ("mul(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc", "QuantizedCPU",
     lambda qa, qb, scale, zero_point: quantized_mul(qa, qb, scale, zero_point)),
    ("mul_relu(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc", "QuantizedCPU",
     lambda qa, qb, scale, zero_point: quantized_mul(qa, qb, scale, zero_point, relu=True)),
    ("cat(Tensor[] qx, int dim, float? scale, int? zero_point) -> Tensor", "QuantizedCPU",
     lambda qx, dim, scale, zero_point: quantized_cat(
         qx, dim, qx[0]._q_scale if scale is None else scale,
         qx[0]._q_zero_point if zero_point is None else zero_point)),
    (f"linear_prepack(Tensor W, Tensor? B=None) -> {_LINEAR_PARAMS} W_prepack", "QuantizedCPU",
     LinearPackedParams),
    (f"linear_unpack({_LINEAR_PARAMS} W_prepack) -> (Tensor W_origin, Tensor? B_origin)",
     "CatchAll", lambda packed: packed.unpack()),
    (f"linear(Tensor X, {_LINEAR_PARAMS} W_prepack, float Y_scale_i, int Y_zero_point_i) -> "
     "Tensor Y", "QuantizedCPU", quantized_linear),
    (f"linear_relu(Tensor X, {_LINEAR_PARAMS} W_prepack, float Y_scale_i, int Y_zero_point_i) "
     "-> Tensor Y", "QuantizedCPU",
     lambda x, packed, scale, zero_point: quantized_linear(x, packed, scale, zero_point, True)),
    (f"linear_dynamic(Tensor X, {_LINEAR_PARAMS} W_prepack, bool reduce_range=False) -> "
     "Tensor Y", "CPU", linear_dynamic),
    (f"linear_relu_dynamic(Tensor X, {_LINEAR_PARAMS} W_prepack, bool reduce_range=False) -> "
     "Tensor Y", "CPU",
     lambda x, packed, reduce_range=False: linear_dynamic(x, packed, reduce_range, relu=True)),
    (f"conv2d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, "
     f"int groups) -> {_CONV_PARAMS}", "QuantizedCPU", Conv2dPackedParams),
    (f"conv2d_unpack({_CONV_PARAMS} packed_weights) -> (Tensor unpacked_weights, Tensor? B_origin)",
     "CatchAll", lambda packed: packed.unpack()),
    (f"conv2d.new(Tensor qx, {_CONV_PARAMS} packed_weight, float output_scale, "
     "int output_zero_point) -> Tensor", "QuantizedCPU", quantized_conv2d),
    (f"conv2d_relu.new(Tensor qx, {_CONV_PARAMS} packed_weight, float output_scale, "
     "int output_zero_point) -> Tensor", "QuantizedCPU",
     lambda x, packed, scale, zero_point: quantized_conv2d(x, packed, scale, zero_point, True)),
    ("max_pool2d(Tensor qx, int[] kernel_size, int[] stride, int[] padding, int[] dilation, "
     "bool ceil_mode) -> Tensor", "QuantizedCPU",
     lambda qx, kernel_size, stride, padding, dilation, ceil_mode: quantized_max_pool2d(
         qx, kernel_size, stride, padding, dilation, ceil_mode)),
)

for _schema, _key, _kernel in _DEFINITIONS:
    LIBRARY.define(_schema)
    LIBRARY.impl(_schema.split("(", 1)[0], _kernel, "" if _key == "CatchAll" else _key)
