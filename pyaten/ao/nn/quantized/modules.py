"""Statically quantized modules: quantized tensors in, quantized tensors out.

Each holds its weight prepacked (`quantized::linear_prepack` / `conv2d_prepack`) and its output
`scale` and `zero_point`; `from_float` builds one from an observed float module, as
`convert` does (docs/quantization.md).
"""

from __future__ import annotations

from typing import Any

import pyaten
from pyaten.core import dtypes as dt
from pyaten.core.quantized import per_channel_affine, per_channel_symmetric, per_tensor_affine
from pyaten.core.tensor import Tensor
from pyaten.nn.modules.module import Module

__all__ = [
    "Quantize",
    "DeQuantize",
    "Linear",
    "Conv2d",
    "ReLU6",
    "FloatFunctional",
    "QFunctional",
    "quantize_weight",
]

_ops = pyaten.ops.quantized


def quantize_weight(weight: Tensor, observer: Any) -> Tensor:
    """`weight` quantized to qint8 with the parameters `observer` chose after seeing it."""
    scale, zero_point = observer.calculate_qparams()
    if observer.qscheme in (per_channel_symmetric, per_channel_affine):
        return pyaten.quantize_per_channel(
            weight.detach().float(), scale.double(), zero_point.long(), observer.ch_axis,
            dt.qint8,
        )
    return pyaten.quantize_per_tensor(weight.detach().float(), float(scale), int(zero_point),
                                      dt.qint8)


def _save_qparams(mod: Module, destination: dict, prefix: str) -> None:
    destination[prefix + "scale"] = pyaten.tensor(mod.scale)
    destination[prefix + "zero_point"] = pyaten.tensor(mod.zero_point)


def _load_qparams(mod: Module, state_dict: dict, prefix: str, missing_keys: list) -> None:
    # As PyTorch's quantized modules: the entries are consumed (popped) as they are read.
    for name, kind in (("scale", float), ("zero_point", int)):
        if prefix + name in state_dict:
            setattr(mod, name, kind(state_dict.pop(prefix + name)))
        else:
            missing_keys.append(prefix + name)


def _float_part(mod: Module) -> Module:
    """The Conv2d / Linear of a fused module (ConvReLU2d, LinearReLU), or `mod` itself."""
    from pyaten.ao.nn.intrinsic import _FusedModule

    return mod[0] if isinstance(mod, _FusedModule) else mod


def _output_qparams(mod: Module) -> tuple[float, int]:
    observer = getattr(mod, "activation_post_process", None)
    if observer is None:
        raise AssertionError("Input float module must have observer attached")
    scale, zero_point = observer.calculate_qparams()
    return float(scale), int(zero_point)


def _weight_observer(mod: Module) -> Any:
    qconfig = getattr(mod, "qconfig", None)
    if qconfig is None:
        raise AssertionError("Input float module must have qconfig defined")
    observer = qconfig.weight()
    observer(mod.weight)
    return observer


class Quantize(Module):
    """Quantizes its float input per tensor with fixed `scale` and `zero_point`."""

    def __init__(self, scale: float, zero_point: int, dtype: dt.dtype) -> None:
        super().__init__()
        self.register_buffer("scale", pyaten.tensor([float(scale)]))
        self.register_buffer("zero_point", pyaten.tensor([int(zero_point)]))
        self.dtype = dtype

    def forward(self, x: Tensor) -> Tensor:
        return pyaten.quantize_per_tensor(x, float(self.scale), int(self.zero_point),
                                          self.dtype)

    @staticmethod
    def from_float(mod: Module, use_precomputed_fake_quant: bool = False) -> Quantize:
        observer = mod.activation_post_process
        scale, zero_point = observer.calculate_qparams()
        return Quantize(float(scale), int(zero_point), observer.dtype)

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"


class DeQuantize(Module):
    """Turns a quantized tensor back into float32."""

    def forward(self, x: Tensor) -> Tensor:
        return x.dequantize()

    @staticmethod
    def from_float(mod: Module, use_precomputed_fake_quant: bool = False) -> DeQuantize:
        return DeQuantize()


class Linear(Module):
    """`y = x W^T + b` on quantized tensors (quint8 in and out, qint8 weight)."""

    _FLOAT_MODULE = "Linear"

    def __init__(self, in_features: int, out_features: int, bias_: bool = True,
                 dtype: dt.dtype = dt.qint8) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        weight = pyaten.quantize_per_tensor(
            pyaten.zeros(out_features, in_features), 1.0, 0, dt.qint8
        )
        bias = pyaten.zeros(out_features) if bias_ else None
        self.set_weight_bias(weight, bias)
        self.scale = 1.0
        self.zero_point = 0

    def set_weight_bias(self, weight: Tensor, bias: Tensor | None) -> None:
        self._packed_params = _ops.linear_prepack(weight, bias)

    def weight(self) -> Tensor:
        return self._packed_params.unpack()[0]

    def bias(self) -> Tensor | None:
        return self._packed_params.unpack()[1]

    def _get_name(self) -> str:
        return "QuantizedLinear"

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        _save_qparams(self, destination, prefix)
        destination[prefix + "_packed_params.dtype"] = dt.qint8
        destination[prefix + "_packed_params._packed_params"] = self._packed_params.unpack()

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        _load_qparams(self, state_dict, prefix, missing_keys)
        state_dict.pop(prefix + "_packed_params.dtype", None)
        packed = state_dict.pop(prefix + "_packed_params._packed_params", None)
        if packed is None:
            missing_keys.append(prefix + "_packed_params._packed_params")
        else:
            self.set_weight_bias(*packed)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"scale={self.scale}, zero_point={self.zero_point}, "
                f"qscheme={self.weight().qscheme()}")

    def forward(self, x: Tensor) -> Tensor:
        return _ops.linear(x, self._packed_params, self.scale, self.zero_point)

    @classmethod
    def from_float(cls, mod: Module, use_precomputed_fake_quant: bool = False) -> Linear:
        linear = _float_part(mod)
        observer = _weight_observer(linear)
        qweight = quantize_weight(linear.weight, observer)
        qlinear = cls(linear.in_features, linear.out_features)
        qlinear.set_weight_bias(qweight, None if linear.bias is None else linear.bias.detach())
        qlinear.scale, qlinear.zero_point = _output_qparams(mod)
        return qlinear


class Conv2d(Module):
    """A 2-d convolution on quantized tensors (quint8 in and out, qint8 weight)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros") -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError("Only 'zeros' padding mode is supported by pyaten's "
                                      "quantized Conv2d")
        pair = (lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v, v))  # noqa: E731
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = pair(kernel_size), pair(stride)
        self.padding, self.dilation = pair(padding), pair(dilation)
        self.groups = groups
        self.padding_mode = padding_mode
        weight = pyaten.quantize_per_tensor(
            pyaten.zeros(out_channels, in_channels // groups, *self.kernel_size), 1.0, 0,
            dt.qint8,
        )
        self.set_weight_bias(weight, pyaten.zeros(out_channels) if bias else None)
        self.scale = 1.0
        self.zero_point = 0

    def set_weight_bias(self, weight: Tensor, bias: Tensor | None) -> None:
        self._packed_params = _ops.conv2d_prepack(
            weight, bias, list(self.stride), list(self.padding), list(self.dilation), self.groups
        )

    def weight(self) -> Tensor:
        return self._packed_params.unpack()[0]

    def bias(self) -> Tensor | None:
        return self._packed_params.unpack()[1]

    def _get_name(self) -> str:
        return "QuantizedConv2d"

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        weight, bias = self._packed_params.unpack()
        destination[prefix + "weight"] = weight
        destination[prefix + "bias"] = bias
        _save_qparams(self, destination, prefix)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        if prefix + "weight" in state_dict:
            self.set_weight_bias(state_dict.pop(prefix + "weight"),
                                 state_dict.pop(prefix + "bias", None))
        else:
            missing_keys.append(prefix + "weight")
        _load_qparams(self, state_dict, prefix, missing_keys)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, scale={self.scale}, zero_point={self.zero_point}")
        if self.padding != (0, 0):
            text += f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias() is None:
            text += ", bias=False"
        return text

    def forward(self, x: Tensor) -> Tensor:
        if len(x.shape) != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")
        return _ops.conv2d(x, self._packed_params, self.scale, self.zero_point)

    @classmethod
    def from_float(cls, mod: Module, use_precomputed_fake_quant: bool = False) -> Conv2d:
        conv = _float_part(mod)
        observer = _weight_observer(conv)
        qweight = quantize_weight(conv.weight, observer)
        qconv = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                    conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                    conv.padding_mode)
        qconv.set_weight_bias(qweight, None if conv.bias is None else conv.bias.detach())
        qconv.scale, qconv.zero_point = _output_qparams(mod)
        return qconv


class ReLU6(Module):
    """`min(max(x, 0), 6)` on a quantized tensor, keeping its parameters."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        if not x.is_quantized:
            raise RuntimeError("QuantizedReLU6 expects a quantized input")
        six = pyaten.quantize_per_tensor(pyaten.tensor([6.0]), x.q_scale(), x.q_zero_point(),
                                         x.dtype).int_repr().item()
        ints = x.int_repr().clamp(x.q_zero_point(), six)
        return pyaten._make_per_tensor_quantized_tensor(ints, x.q_scale(), x.q_zero_point())

    @staticmethod
    def from_float(mod: Module, use_precomputed_fake_quant: bool = False) -> ReLU6:
        return ReLU6(getattr(mod, "inplace", False))


class FloatFunctional(Module):
    """Float `add`/`mul`/`cat`/`add_relu` that an observer can watch, so `convert` can swap
    them for their quantized forms (`QFunctional`)."""

    def __init__(self) -> None:
        super().__init__()
        self.activation_post_process = pyaten.nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use "
                           "the underlying operation")

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(pyaten.add(x, y))

    def add_scalar(self, x: Tensor, y: float) -> Tensor:
        return pyaten.add(x, y)

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(pyaten.mul(x, y))

    def mul_scalar(self, x: Tensor, y: float) -> Tensor:
        return pyaten.mul(x, y)

    def cat(self, x: list, dim: int = 0) -> Tensor:
        return self.activation_post_process(pyaten.cat(x, dim=dim))

    def add_relu(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(pyaten.relu(pyaten.add(x, y)))


class QFunctional(Module):
    """`add`/`mul`/`cat`/`add_relu` of quantized tensors into this module's `scale` and
    `zero_point`."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = 1.0
        self.zero_point = 0
        self.activation_post_process = pyaten.nn.Identity()

    def _get_name(self) -> str:
        return "QFunctional"

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}"

    def forward(self, x: Tensor) -> Tensor:
        raise RuntimeError("Functional is not intended to use the 'forward'. Please use the "
                           "underlying operation")

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        return _ops.add(x, y, self.scale, self.zero_point)

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        return _ops.mul(x, y, self.scale, self.zero_point)

    def cat(self, x: list, dim: int = 0) -> Tensor:
        return _ops.cat(x, dim, self.scale, self.zero_point)

    def add_relu(self, x: Tensor, y: Tensor) -> Tensor:
        return _ops.add_relu(x, y, self.scale, self.zero_point)

    @classmethod
    def from_float(cls, mod: Module, use_precomputed_fake_quant: bool = False) -> QFunctional:
        functional = cls()
        functional.scale, functional.zero_point = _output_qparams(mod)
        return functional


# Kept for the dtype check of per-tensor weights in from_float paths.
_PER_TENSOR = per_tensor_affine
