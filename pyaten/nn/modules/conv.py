"""Conv1d/2d/3d and ConvTranspose1d/2d/3d over `pyaten.nn.functional`'s convolutions, with
PyTorch's padding modes, "same"/"valid" padding, default initialisation and repr."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.nn import functional as F
from pyaten.nn import init
from pyaten.nn.modules._ops import ops
from pyaten.nn.modules.module import Module
from pyaten.nn.parameter import Parameter

__all__ = [
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
]

_PADDING_STRINGS = {"same", "valid"}
_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def ntuple(value: Any, n: int) -> tuple:
    """`value` as an n-tuple: iterables become tuples as they are, scalars are repeated."""
    if isinstance(value, Iterable) and not isinstance(value, str):
        return tuple(value)
    return (value,) * n


def reverse_repeat(values: tuple, n: int) -> tuple:
    """(a, b) -> (b, b, a, a) for n=2: F.pad's last-dimension-first order."""
    return tuple(v for v in reversed(values) for _ in range(n))


def _same_padding(dilation: tuple, kernel_size: tuple) -> list[int]:
    """F.pad amounts giving 'same' output size; the extra odd element goes right."""
    amounts = [0, 0] * len(kernel_size)
    for i, (d, k) in enumerate(zip(dilation, kernel_size)):
        total = d * (k - 1)
        slot = len(kernel_size) - 1 - i
        amounts[2 * slot] = total // 2
        amounts[2 * slot + 1] = total - total // 2
    return amounts


class _ConvNd(Module):
    """The shared state of every convolution: arguments checked, weight and bias created."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: tuple,
        stride: tuple,
        padding: str | tuple,
        dilation: tuple,
        transposed: bool,
        output_padding: tuple,
        groups: int,
        bias: bool,
        padding_mode: str,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        _check_arguments(in_channels, out_channels, stride, padding, groups, padding_mode)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice: list[int] | tuple[int, ...]
        if isinstance(padding, str):
            self._reversed_padding_repeated_twice = (
                _same_padding(dilation, kernel_size)
                if padding == "same" else [0, 0] * len(kernel_size)
            )
        else:
            self._reversed_padding_repeated_twice = reverse_repeat(padding, 2)
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(ops.empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(ops.empty((out_channels,), device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # kaiming_uniform_(a=sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the bias too.
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * len(self.padding):
            text += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


def _check_arguments(
    in_channels: int, out_channels: int, stride: tuple, padding: Any, groups: int, mode: str
) -> None:
    if groups <= 0:
        raise ValueError("groups must be a positive integer")
    if in_channels % groups != 0:
        raise ValueError("in_channels must be divisible by groups")
    if out_channels % groups != 0:
        raise ValueError("out_channels must be divisible by groups")
    if isinstance(padding, str):
        if padding not in _PADDING_STRINGS:
            raise ValueError(
                f"Invalid padding string {padding!r}, should be one of {_PADDING_STRINGS}"
            )
        if padding == "same" and any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
    if mode not in _PADDING_MODES:
        raise ValueError(
            f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{mode}'"
        )


class _Conv(_ConvNd):
    """Conv{1,2,3}d: the spatial rank comes from the subclass's `_dims`."""

    _dims = 0
    _function: Callable[..., Tensor]

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        n = self._dims
        super().__init__(
            in_channels, out_channels, ntuple(kernel_size, n), ntuple(stride, n),
            padding if isinstance(padding, str) else ntuple(padding, n), ntuple(dilation, n),
            False, ntuple(0, n), groups, bias, padding_mode, device=device, dtype=dtype,
        )

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        conv = type(self)._function
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(
                padded, weight, bias, self.stride, ntuple(0, self._dims), self.dilation,
                self.groups,
            )
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C, L) or (C, L) input."""

    _dims = 1
    _function = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C, H, W) or (C, H, W) input."""

    _dims = 2
    _function = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over (N, C, D, H, W) or (C, D, H, W) input."""

    _dims = 3
    _function = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    """Transposed convolutions: only zero padding; `output_size` picks the output padding."""

    _dims = 0
    _function: Callable[..., Tensor]

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        output_padding: Any = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: Any = 1,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if padding_mode != "zeros":
            raise ValueError(
                f'Only "zeros" padding mode is supported for {self.__class__.__name__}'
            )
        n = self._dims
        super().__init__(
            in_channels, out_channels, ntuple(kernel_size, n), ntuple(stride, n),
            ntuple(padding, n), ntuple(dilation, n), True, ntuple(output_padding, n), groups,
            bias, padding_mode, device=device, dtype=dtype,
        )

    def _output_padding(
        self,
        input: Tensor,
        output_size: Any,
        stride: Any,
        padding: Any,
        kernel_size: Any,
        num_spatial_dims: int,
        dilation: Any = None,
    ) -> list[int]:
        if output_size is None:
            return list(ntuple(self.output_padding, 1))
        batched = input.dim() == num_spatial_dims + 2
        leading = 2 if batched else 1
        output_size = list(output_size)
        if len(output_size) == leading + num_spatial_dims:
            output_size = output_size[leading:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(
                f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must "
                f"have {num_spatial_dims} or {leading + num_spatial_dims} elements "
                f"(got {len(output_size)})"
            )
        min_sizes = []
        for d in range(num_spatial_dims):
            dil = dilation[d] if dilation is not None else 1
            size = (input.size(d + leading) - 1) * stride[d] - 2 * padding[d]
            min_sizes.append(size + dil * (kernel_size[d] - 1) + 1)
        max_sizes = [low + s - 1 for low, s in zip(min_sizes, stride)]
        for size, low, high in zip(output_size, min_sizes, max_sizes):
            if size < low or size > high:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range "
                    f"from {min_sizes} to {max_sizes} (for an input of {input.size()[2:]})"
                )
        return [size - low for size, low in zip(output_size, min_sizes)]

    def forward(self, input: Tensor, output_size: list[int] | None = None) -> Tensor:
        if self.padding_mode != "zeros":
            raise ValueError(
                f"Only `zeros` padding mode is supported for {type(self).__name__}"
            )
        n = self._dims
        output_padding = self._output_padding(
            input, output_size, self.stride, self.padding, self.kernel_size, n, self.dilation
        )
        return type(self)._function(
            input, self.weight, self.bias, self.stride, self.padding, output_padding,
            self.groups, self.dilation,
        )


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution ("deconvolution")."""

    _dims = 1
    _function = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution ("deconvolution")."""

    _dims = 2
    _function = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution ("deconvolution")."""

    _dims = 3
    _function = staticmethod(F.conv_transpose3d)
