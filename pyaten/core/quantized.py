"""Quantized tensors: integer storage, a quantizer, and the QuantizedCPU key.

Note: a quantized tensor
    A quantized tensor is a `QuantizedTensor` (a Tensor subclass) whose storage holds the
    integer representation (int8 for qint8, uint8 for quint8, int32 for qint32) and whose
    quantizer maps it to real values: `real = (q - zero_point) * scale`, with one scale and
    zero point for the whole tensor (per_tensor_affine) or one per slice along `axis`
    (per_channel_affine). Its key set is a CPU tensor's with the Quantized functionality in
    place of Dense, so the dispatcher picks the `QuantizedCPU` kernels of native_functions.yaml
    and reports PyTorch's "Could not run 'aten::X' with arguments from the 'QuantizedCPU'
    backend" for an operator that has none. It is a subclass only so that the bindings' fast
    paths (which test `v.__class__ is Tensor`) leave it to the dispatcher; it takes no part in
    `__torch_function__` (the disabled handler), as PyTorch's quantized tensors are plain
    `torch.Tensor`s. `type(q)` is therefore `QuantizedTensor`, where PyTorch says `Tensor`.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.size import _Token
from pyaten.core.tensor import Tensor
from pyaten.core.torch_function import _disabled_torch_function_impl
from pyaten.dispatch.keys import KEY_BITS, KEY_BY_NAME, functionality_bit

__all__ = [
    "QuantizedTensor",
    "per_tensor_affine",
    "per_channel_affine",
    "per_tensor_symmetric",
    "per_channel_symmetric",
    "per_channel_affine_float_qparams",
    "make_quantized",
    "wrap_quantized",
    "quantized_range",
]



class _QScheme(_Token):
    """A torch.qscheme value: a named singleton (printed as `pyaten.per_tensor_affine`) that
    copies and pickles as itself, so observers compare schemes by identity."""

    __slots__ = ()

    def __copy__(self) -> _QScheme:
        return self

    def __deepcopy__(self, memo: dict) -> _QScheme:
        return self

    def __reduce__(self) -> str:
        return self.name


per_tensor_affine = _QScheme("per_tensor_affine")
per_channel_affine = _QScheme("per_channel_affine")
per_tensor_symmetric = _QScheme("per_tensor_symmetric")
per_channel_symmetric = _QScheme("per_channel_symmetric")
per_channel_affine_float_qparams = _QScheme("per_channel_affine_float_qparams")

_QUANTIZED_CPU_BITS = KEY_BITS[int(KEY_BY_NAME["QuantizedCPU"])]
_DENSE_BIT = functionality_bit("Dense")

_RANGES = {
    dt.qint8: (-128, 127),
    dt.quint8: (0, 255),
    dt.qint32: (-(2**31), 2**31 - 1),
}


def quantized_range(d: dt.dtype) -> tuple[int, int]:
    """The smallest and largest integer a quantized dtype holds."""
    return _RANGES[d]


class QuantizedTensor(Tensor):
    """A quantized tensor (Note: a quantized tensor). Made by `quantize_per_tensor` and
    friends, never directly."""

    __torch_function__ = _disabled_torch_function_impl

    @property
    def is_quantized(self) -> bool:
        return True

    def _wrap_view(self, view: Tensor) -> QuantizedTensor:
        """`view` (a strided view of this tensor's storage, made by Tensor._make_view) as a
        quantized tensor with this quantizer, as ATen's quantized views share theirs."""
        q = object.__new__(QuantizedTensor)
        for name in Tensor.__slots__[:-2]:
            setattr(q, name, getattr(view, name))
        q.__dict__.update(_quantizer_fields(self))
        return q

    def __reduce_ex__(self, protocol: int) -> tuple:
        ints = self._numpy().copy()
        if self._qscheme is per_tensor_affine:
            return _rebuild_quantized, (ints, self._dtype.name, self._qscheme.name,
                                        self._q_scale, self._q_zero_point, 0)
        return _rebuild_quantized, (ints, self._dtype.name, self._qscheme.name,
                                    self._q_scales.numpy().copy(),
                                    self._q_zero_points.numpy().copy(), self._q_axis)

    def __repr__(self) -> str:
        from pyaten.core.printing import _add_suffixes, tensor_body

        prefix = "tensor("
        indent = len(prefix)
        suffixes = ["size=" + str(tuple(self._sizes)), f"dtype={self._dtype}"]
        scheme = self._qscheme
        suffixes.append(f"quantization_scheme={scheme}")
        if scheme is per_tensor_affine:
            suffixes += [f"scale={self._q_scale}", f"zero_point={self._q_zero_point}"]
        else:
            suffixes += [
                f"scale={self._q_scales!r}",
                f"zero_point={self._q_zero_points!r}",
                f"axis={self._q_axis}",
            ]
        if self.numel() == 0:
            body = "[]"
        else:
            body = tensor_body(dequantized_values(self), dt.float32, indent)
        if self._requires_grad:
            suffixes.append("requires_grad=True")
        return _add_suffixes(prefix + body, suffixes, indent)


def _quantizer_fields(q: QuantizedTensor) -> dict:
    return {k: v for k, v in q.__dict__.items() if k.startswith("_q")}


def _rebuild_quantized(ints: np.ndarray, dtype_name: str, scheme_name: str, scale: object,
                       zero_point: object, axis: int) -> QuantizedTensor:
    """Unpickling: the tensor `QuantizedTensor.__reduce_ex__` described."""
    from pyaten.core.creation import from_numpy

    scheme = globals()[scheme_name]
    if scheme is not per_tensor_affine:
        scale, zero_point = from_numpy(scale), from_numpy(zero_point)
    return make_quantized(ints, getattr(dt, dtype_name), scheme, scale, zero_point, axis)


def make_quantized(
    values: np.ndarray,
    dtype: dt.dtype,
    scheme: _Token,
    scale: float | Tensor,
    zero_point: int | Tensor,
    axis: int = 0,
) -> QuantizedTensor:
    """A new contiguous quantized tensor holding the integers `values` (copied as `dtype`'s
    storage type) with a per-tensor quantizer (`scale`, `zero_point` numbers) or a
    per-channel one (`scale`, `zero_point` tensors of float64 / int64 along `axis`)."""
    from pyaten.core.creation import from_numpy

    plain = from_numpy(np.ascontiguousarray(values, dtype=dtype.numpy).copy())
    return wrap_quantized(plain, dtype, scheme, scale, zero_point, axis)


def wrap_quantized(
    plain: Tensor,
    dtype: dt.dtype,
    scheme: _Token,
    scale: float | Tensor,
    zero_point: int | Tensor,
    axis: int = 0,
) -> QuantizedTensor:
    """A quantized tensor viewing `plain`'s storage (its integer representation, any
    geometry, no copy) with the quantizer `make_quantized` describes."""
    q = object.__new__(QuantizedTensor)
    for name in Tensor.__slots__[:-2]:
        setattr(q, name, getattr(plain, name))
    q._dtype = dtype
    q._np = None
    q._keyset = (plain._keyset & ~_DENSE_BIT) | _QUANTIZED_CPU_BITS
    q._qscheme = scheme
    if scheme is per_tensor_affine:
        q._q_scale = float(scale)
        q._q_zero_point = int(zero_point)
    else:
        q._q_scales = scale
        q._q_zero_points = zero_point
        q._q_axis = axis
    return q


def dequantized_values(q: QuantizedTensor) -> np.ndarray:
    """`q`'s real values as float32: `(q - zero_point) * scale`, the subtraction exact and one
    rounding to float32 (a float32 product per tensor, a double one per channel), as PyTorch
    computes them."""
    ints = q._numpy().astype(np.int64)
    if q._qscheme is per_tensor_affine:
        return (ints - q._q_zero_point).astype(np.float32) * np.float32(q._q_scale)
    shape = [1] * ints.ndim
    shape[q._q_axis] = -1
    # Per channel, PyTorch computes in double and rounds once to float32.
    scales = q._q_scales.numpy().astype(np.float64).reshape(shape)
    zero_points = q._q_zero_points.numpy().astype(np.int64).reshape(shape)
    return ((ints - zero_points) * scales).astype(np.float32)
