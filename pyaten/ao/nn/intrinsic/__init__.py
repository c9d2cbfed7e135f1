"""Fused float modules (torch.ao.nn.intrinsic): a sequence `fuse_modules` made one module, so
that `prepare` observes only its output and `convert` swaps it for one fused quantized
module (`pyaten.ao.nn.intrinsic.quantized`)."""

from __future__ import annotations

from pyaten.nn.modules.container import Sequential
from pyaten.nn.modules.module import Module

__all__ = ["ConvReLU2d", "LinearReLU"]


class _FusedModule(Sequential):
    """A fused sequence: a leaf for observation and conversion."""


class ConvReLU2d(_FusedModule):
    """Conv2d then ReLU, fused."""

    def __init__(self, conv: Module, relu: Module) -> None:
        super().__init__(conv, relu)


class LinearReLU(_FusedModule):
    """Linear then ReLU, fused."""

    def __init__(self, linear: Module, relu: Module) -> None:
        super().__init__(linear, relu)
