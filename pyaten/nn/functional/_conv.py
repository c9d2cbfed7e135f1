"""pyaten.nn.functional: linear, bilinear, convolution and pooling."""

from __future__ import annotations

__all__: list[str] = []
