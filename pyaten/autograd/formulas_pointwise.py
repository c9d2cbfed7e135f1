"""Formula helpers of the pointwise family (see formulas.py and docs/autograd.md)."""

from __future__ import annotations

__all__: list[str] = []
