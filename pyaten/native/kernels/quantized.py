"""Quantized tensors' kernels: quantize, dequantize, their parameters, fake quantization.

The arithmetic follows PyTorch's CPU kernels (fbgemm on x86) so results agree to the
integer:
- quantize per tensor: `clamp(rint(fma(x, 1/scale, zero_point)))`, the reciprocal taken in
  float32 and the fused multiply-add rounded once to float32, then to the nearest integer
  (ties to even);
- quantize per channel: `clamp(rint(x * (1/scale)) + zero_point)` (ATen's `quantize_val`);
- dequantize: `(q - zero_point) * scale` in float32.
Quantized tensors themselves are `pyaten.core.quantized.QuantizedTensor` (Note: a quantized
tensor). The quantized operators (relu, cat, max_pool2d and the `quantized::` namespace) live in
`quantized_ops.py`.
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
from pyaten.native.registry import native

QUANTIZED_DTYPES = (dt.qint8, dt.quint8, dt.qint32)


# --- numerics -----------------------------------------------------------------------------


def quantize_array(
    values: np.ndarray, scale: float, zero_point: int, dtype: dt.dtype
) -> np.ndarray:
    """Per-tensor affine quantization of float values, as fbgemm's `Quantize` rounds."""
    inv_scale = np.float32(1.0) / np.float32(scale)
    # A float64 product of two float32s is exact: adding the zero point and rounding to
    # float32 once is the fused multiply-add of the vectorized kernel.
    with np.errstate(invalid="ignore", over="ignore"):
        fused = (values.astype(np.float64) * np.float64(inv_scale) + zero_point).astype(np.float32)
    low, high = quantized_range(dtype)
    return np.clip(np.rint(fused), low, high).astype(dtype.numpy)


def quantize_array_per_channel(
    values: np.ndarray, scales: np.ndarray, zero_points: np.ndarray, axis: int, dtype: dt.dtype
) -> np.ndarray:
    """Per-channel affine quantization (ATen's `quantize_val` for each element)."""
    shape = [1] * values.ndim
    shape[axis] = -1
    inv_scales = (np.float32(1.0) / scales.astype(np.float32)).reshape(shape)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.rint((values.astype(np.float32) * inv_scales).astype(np.float32))
    low, high = quantized_range(dtype)
    shifted = scaled.astype(np.float64) + zero_points.astype(np.int64).reshape(shape)
    return np.clip(shifted, low, high).astype(dtype.numpy)


def _check_float_input(self: Tensor) -> None:
    if self._dtype is not dt.float32:
        raise RuntimeError(f"Quantize only works on Float Tensor, got {self._dtype.scalar_name}")


def _check_quantized_dtype(dtype: dt.dtype) -> None:
    if dtype not in QUANTIZED_DTYPES:
        raise RuntimeError(f"ScalarType {dtype.scalar_name} is not supported in new_qtensor.")


def _check_zero_point(fn: str, zero_point: int, dtype: dt.dtype) -> None:
    low, high = quantized_range(dtype)
    if zero_point > high:
        raise RuntimeError(f"{fn} zero_point {zero_point} is above upper bound.")
    if zero_point < low:
        raise RuntimeError(f"{fn} zero_point {zero_point} is below lower bound.")


def _per_tensor(self: Tensor, scale: float, zero_point: int, dtype: dt.dtype) -> QuantizedTensor:
    _check_float_input(self)
    _check_quantized_dtype(dtype)
    _check_zero_point("quantize_tensor_per_tensor_affine", zero_point, dtype)
    ints = quantize_array(self._numpy(), scale, zero_point, dtype)
    return make_quantized(ints, dtype, per_tensor_affine, scale, zero_point)


def _require_quantized(self: Tensor, scheme: object) -> QuantizedTensor:
    if getattr(self, "_qscheme", None) is not scheme:
        if scheme is per_tensor_affine:
            condition = ("quantizer->qscheme() == kPerTensorAffine")
        else:
            condition = ("quantizer->qscheme() == kPerChannelAffine || quantizer->qscheme() == "
                         "kPerChannelAffineFloatQParams")
        raise RuntimeError(
            f"Expected {condition} to be true, but got false.  (Could this error message be "
            "improved?  If so, please report an enhancement request to PyTorch.)"
        )
    return self


# --- quantize -----------------------------------------------------------------------------


@native
def quantize_per_tensor(self: Tensor, scale: float, zero_point: int, dtype: dt.dtype) -> Tensor:
    return _per_tensor(self, scale, zero_point, dtype)


@native
def quantize_per_tensor_tensor_qparams(
    self: Tensor, scale: Tensor, zero_point: Tensor, dtype: dt.dtype
) -> Tensor:
    return _per_tensor(self, float(scale.item()), int(zero_point.item()), dtype)


@native
def quantize_per_tensor_list_cpu(
    tensors: tuple, scales: Tensor, zero_points: Tensor, dtype: dt.dtype
) -> tuple:
    scale_values = scales._numpy().astype(np.float64).reshape(-1)
    zero_point_values = zero_points._numpy().astype(np.int64).reshape(-1)
    return tuple(
        _per_tensor(t, float(scale_values[i]), int(zero_point_values[i]), dtype)
        for i, t in enumerate(tensors)
    )


@native
def quantize_per_channel(
    self: Tensor, scales: Tensor, zero_points: Tensor, axis: int, dtype: dt.dtype
) -> Tensor:
    _check_float_input(self)
    _check_quantized_dtype(dtype)
    ndim = len(self._sizes)
    if not 0 <= axis < ndim:
        raise RuntimeError(
            "Channel axis out of range in per channel affine quantization. Got: "
            f"{axis}Expected: [0, {ndim})"
        )
    channels = self._sizes[axis]
    if scales.numel() != channels:
        raise RuntimeError(
            f"length of scales must equal to channel, expected {channels} got, {scales.numel()}"
        )
    if zero_points.numel() != channels:
        raise RuntimeError(
            f"length of zero_points must equal to channel expected {channels} got, "
            f"{zero_points.numel()}"
        )
    scale_values = scales._numpy().astype(np.float64).reshape(-1)
    zero_point_values = zero_points._numpy().astype(np.int64).reshape(-1)
    for zp in zero_point_values:
        _check_zero_point("quantize_tensor_per_channel_affine", int(zp), dtype)
    ints = quantize_array_per_channel(
        self._numpy(), scale_values, zero_point_values, axis, dtype
    )
    return make_quantized(
        ints, dtype, per_channel_affine, from_numpy(scale_values.copy()),
        from_numpy(zero_point_values.copy()), axis,
    )


@native
def make_per_tensor_quantized_tensor_cpu(self: Tensor, scale: float, zero_point: int) -> Tensor:
    dtype = _QUANTIZED_OF.get(self._dtype)
    if dtype is None:
        raise RuntimeError(_NOT_QUANTIZED_DTYPE)
    return make_quantized(self._numpy(), dtype, per_tensor_affine, scale, zero_point)


@native
def make_per_channel_quantized_tensor_cpu(
    self: Tensor, scale: Tensor, zero_point: Tensor, axis: int
) -> Tensor:
    dtype = _QUANTIZED_OF.get(self._dtype)
    if dtype is None:
        raise RuntimeError(_NOT_QUANTIZED_DTYPE)
    scales = from_numpy(scale._numpy().astype(np.float64).reshape(-1).copy())
    zero_points = from_numpy(zero_point._numpy().astype(np.int64).reshape(-1).copy())
    return make_quantized(self._numpy(), dtype, per_channel_affine, scales, zero_points, axis)


_NOT_QUANTIZED_DTYPE = "Creation of quantized tensor requires quantized dtype like torch.quint8"
# The integer dtype whose values a quantized dtype stores.
_QUANTIZED_OF = {dt.int8: dt.qint8, dt.uint8: dt.quint8, dt.int32: dt.qint32}
_INT_OF = {q: i for i, q in _QUANTIZED_OF.items()}


# --- dequantize and the quantizer's parameters ---------------------------------------------


@native
def dequantize_cpu_or_cuda(self: Tensor) -> Tensor:
    return from_numpy(self._numpy().astype(np.float32))


@native
def dequantize_quantized(self: Tensor) -> Tensor:
    return from_numpy(dequantized_values(self))


@native
def dequantize_tensors_quantized_cpu(tensors: tuple) -> tuple:
    return tuple(from_numpy(dequantized_values(t)) for t in tensors)


@native
def int_repr_quantized_cpu(self: Tensor) -> Tensor:
    return from_numpy(self._numpy().astype(_INT_OF[self._dtype].numpy))


@native
def q_scale_quant(self: Tensor) -> float:
    return _require_quantized(self, per_tensor_affine)._q_scale


@native
def q_zero_point_quant(self: Tensor) -> int:
    return _require_quantized(self, per_tensor_affine)._q_zero_point


@native
def q_per_channel_scales(self: Tensor) -> Tensor:
    return _require_quantized(self, per_channel_affine)._q_scales.clone()


@native
def q_per_channel_zero_points(self: Tensor) -> Tensor:
    return _require_quantized(self, per_channel_affine)._q_zero_points.clone()


@native
def q_per_channel_axis(self: Tensor) -> int:
    return _require_quantized(self, per_channel_affine)._q_axis


@native
def qscheme_quant(self: Tensor) -> object:
    return self._qscheme


# --- fake quantization (float in, float out; straight-through gradient) --------------------


def _check_fake_quant_range(quant_min: int, quant_max: int) -> None:
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")


def _fake_quantize(values: np.ndarray, scale: np.ndarray | float, zero_point: np.ndarray | int,
                   quant_min: int, quant_max: int, fused: bool) -> tuple[np.ndarray, np.ndarray]:
    # Per tensor PyTorch rounds `x * inv_scale` and adds the zero point after; per channel it
    # rounds the fused `x * inv_scale + zero_point`.
    inv_scale = np.float32(1.0) / np.asarray(scale, np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        if fused:
            rounded = np.rint((values.astype(np.float64) * inv_scale.astype(np.float64)
                               + zero_point).astype(np.float32))
        else:
            rounded = np.rint((values * inv_scale).astype(np.float32)) + zero_point
    mask = (rounded >= quant_min) & (rounded <= quant_max)
    clamped = np.clip(rounded, quant_min, quant_max)
    out = ((clamped - zero_point) * np.asarray(scale, np.float32)).astype(values.dtype)
    return out, mask


@native
def fake_quantize_per_tensor_affine_cachemask(
    self: Tensor, scale: float, zero_point: int, quant_min: int, quant_max: int
) -> tuple:
    _check_fake_quant_range(quant_min, quant_max)
    if not quant_min <= zero_point <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    out, mask = _fake_quantize(self._numpy(), scale, zero_point, quant_min, quant_max, False)
    return from_numpy(out), from_numpy(mask)


@native
def fake_quantize_per_channel_affine_cachemask(
    self: Tensor, scale: Tensor, zero_point: Tensor, axis: int, quant_min: int, quant_max: int
) -> tuple:
    _check_fake_quant_range(quant_min, quant_max)
    ndim = len(self._sizes)
    if not 0 <= axis < max(ndim, 1):
        raise RuntimeError("`axis` must be between 0 and number of dimensions of input")
    zero_points = zero_point._numpy().astype(np.int64).reshape(-1)
    if ((zero_points < quant_min) | (zero_points > quant_max)).any():
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    shape = [1] * ndim
    shape[axis] = -1
    out, mask = _fake_quantize(
        self._numpy(), scale._numpy().astype(np.float32).reshape(shape),
        zero_points.reshape(shape), quant_min, quant_max, True,
    )
    return from_numpy(out), from_numpy(mask)


def _aten():  # noqa: ANN202 - the handles, imported when first called (they import kernels)
    from pyaten.native.ops_handles import aten_ops

    return aten_ops()


@native
def fake_quantize_per_tensor_affine(
    self: Tensor, scale: float, zero_point: int, quant_min: int, quant_max: int
) -> Tensor:
    return _aten().fake_quantize_per_tensor_affine_cachemask.default(
        self, scale, zero_point, quant_min, quant_max
    )[0]


@native
def fake_quantize_per_channel_affine(
    self: Tensor, scale: Tensor, zero_point: Tensor, axis: int, quant_min: int, quant_max: int
) -> Tensor:
    return _aten().fake_quantize_per_channel_affine_cachemask.default(
        self, scale, zero_point, axis, quant_min, quant_max
    )[0]


@native
def fake_quantize_per_tensor_affine_cachemask_backward(grad: Tensor, mask: Tensor) -> Tensor:
    return _aten().mul.Tensor(grad, mask)


@native
def fake_quantize_per_channel_affine_cachemask_backward(grad: Tensor, mask: Tensor) -> Tensor:
    return _aten().mul.Tensor(grad, mask)


# The quantized operators register with the quantize/dequantize kernels above.
from pyaten.native.kernels import quantized_ops  # noqa: E402,F401
