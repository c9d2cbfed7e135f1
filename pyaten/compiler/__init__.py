"""pyaten.compiler: PyTorch's `torch.compiler` names over pyaten._dynamo (docs/compile.md)."""

from __future__ import annotations

from pyaten._dynamo import is_compiling, list_backends
from pyaten._dynamo import reset as _reset

__all__ = ["is_compiling", "is_dynamo_compiling", "list_backends", "reset"]


def reset() -> None:
    """Forget every compiled function's captures (`torch.compiler.reset`)."""
    _reset()


def is_dynamo_compiling() -> bool:
    return is_compiling()
