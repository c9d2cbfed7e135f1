"""pyaten.nn.functional: normalisation, dropout, embedding, distances and attention."""

from __future__ import annotations

__all__: list[str] = []
