"""Formula helpers of the shape family (see pyaten/autograd/formulas.py and docs/autograd.md)."""

from __future__ import annotations

__all__: list[str] = []
