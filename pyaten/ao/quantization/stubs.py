"""QuantStub and DeQuantStub: where a model's quantized region starts and ends."""

from __future__ import annotations

from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.nn.modules.module import Module

__all__ = ["QuantStub", "DeQuantStub"]


class QuantStub(Module):
    """Identity until `convert` swaps it for a `Quantize` with the observed parameters."""

    def __init__(self, qconfig: Any = None) -> None:
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x: Tensor) -> Tensor:
        return x


class DeQuantStub(Module):
    """Identity until `convert` swaps it for a `DeQuantize`."""

    def __init__(self, qconfig: Any = None) -> None:
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x: Any) -> Any:
        return x
