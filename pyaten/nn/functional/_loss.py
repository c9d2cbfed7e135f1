"""pyaten.nn.functional: losses."""

from __future__ import annotations

__all__: list[str] = []
