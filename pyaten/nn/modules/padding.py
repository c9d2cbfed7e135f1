"""Padding modules: constant (and zero), reflection, replication and circular, in 1-3 dims.

`padding` is an int (the same on every side) or one amount per side, last dimension first:
(left, right, top, bottom, front, back), as `F.pad` reads it.
"""

from __future__ import annotations

from pyaten.core.tensor import Tensor
from pyaten.nn import functional as F
from pyaten.nn.modules.conv import ntuple
from pyaten.nn.modules.module import Module

__all__ = [
    "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
    "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
    "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d",
    "ZeroPad3d",
]


class _PadNd(Module):
    """One F.pad mode; the subclass's `_dims` sets the number of padded dimensions."""

    _dims = 0
    _mode = ""

    def __init__(self, padding: int | tuple[int, ...]) -> None:
        super().__init__()
        self.padding = ntuple(padding, 2 * self._dims)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _CircularPadNd(_PadNd):
    """Circular padding: checks the rank (batched or not) first."""

    _mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        n = self._dims + 1
        if input.dim() not in (n, n + 1):
            raise ValueError(f"expected {n}D or {n + 1}D input (got {input.dim()}D input)")
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    """Wraps the last dimension around."""

    _dims = 1


class CircularPad2d(_CircularPadNd):
    """Wraps the last two dimensions around."""

    _dims = 2


class CircularPad3d(_CircularPadNd):
    """Wraps the last three dimensions around."""

    _dims = 3


class _ReflectionPadNd(_PadNd):
    _mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    """Mirrors the last dimension (edge not repeated)."""

    _dims = 1


class ReflectionPad2d(_ReflectionPadNd):
    """Mirrors the last two dimensions (edge not repeated)."""

    _dims = 2


class ReflectionPad3d(_ReflectionPadNd):
    """Mirrors the last three dimensions (edge not repeated)."""

    _dims = 3


class _ReplicationPadNd(_PadNd):
    _mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    """Repeats the edge values of the last dimension."""

    _dims = 1


class ReplicationPad2d(_ReplicationPadNd):
    """Repeats the edge values of the last two dimensions."""

    _dims = 2


class ReplicationPad3d(_ReplicationPadNd):
    """Repeats the edge values of the last three dimensions."""

    _dims = 3


class _ConstantPadNd(_PadNd):
    """Pads with `value`."""

    _mode = "constant"

    def __init__(self, padding: int | tuple[int, ...], value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dimension with `value`."""

    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dimensions with `value`."""

    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dimensions with `value`."""

    _dims = 3


class ZeroPad1d(ConstantPad1d):
    """Pads the last dimension with zeros."""

    def __init__(self, padding: int | tuple[int, ...]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last two dimensions with zeros."""

    def __init__(self, padding: int | tuple[int, ...]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pads the last three dimensions with zeros."""

    def __init__(self, padding: int | tuple[int, ...]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"
