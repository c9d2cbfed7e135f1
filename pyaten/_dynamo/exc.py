"""The errors of `pyaten.compile` (PyTorch's `torch._dynamo.exc`)."""

from __future__ import annotations

__all__ = ["InvalidBackend", "Unsupported"]


class Unsupported(RuntimeError):
    """Capture met something it cannot put in a graph (a graph break); raised instead of
    running that call eagerly when `fullgraph=True`."""


class InvalidBackend(RuntimeError):
    """`compile(backend=...)` names no registered backend."""
