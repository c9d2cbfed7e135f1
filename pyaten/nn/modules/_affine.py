"""The elementwise affine parameters the normalisation layers share (`weight`, `bias`)."""

from __future__ import annotations

from typing import Any

from pyaten.nn import init
from pyaten.nn.modules._ops import ops
from pyaten.nn.modules.module import Module
from pyaten.nn.parameter import Parameter

__all__ = ["make_affine", "reset_affine"]


def make_affine(module: Module, affine: bool, bias: bool, shape: tuple, device: Any,
                dtype: Any) -> None:
    """`module.weight` and `module.bias` of `shape` (uninitialised), or None as PyTorch
    registers them: no affine, no weight or bias; `bias=False`, only a weight."""
    if not affine:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)
        return
    module.weight = Parameter(ops.empty(shape, device=device, dtype=dtype))
    if bias:
        module.bias = Parameter(ops.empty(shape, device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)


def reset_affine(module: Module) -> None:
    """The identity transform: weight ones, bias zeros (those the module has)."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)
