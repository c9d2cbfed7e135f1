"""pyaten.nn.functional: activations (relu ... softmin)."""

from __future__ import annotations

__all__: list[str] = []
