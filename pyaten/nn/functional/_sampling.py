"""pyaten.nn.functional: padding, interpolation, grid sampling and pixel shuffles."""

from __future__ import annotations

__all__: list[str] = []
