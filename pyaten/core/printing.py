"""Printing tensors as PyTorch prints them (placeholder until the full formatter lands)."""

from __future__ import annotations

__all__ = ["tensor_repr"]


def tensor_repr(t: object) -> str:
    data = t._numpy().tolist() if t._storage.data is not None else "..."
    return f"tensor({data}, dtype={t._dtype})"
