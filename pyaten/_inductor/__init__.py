"""pyaten._inductor: the default backend of `pyaten.compile` (docs/compile.md)."""

from __future__ import annotations

from typing import Any

__all__ = ["compile_graph"]


def compile_graph(gm: Any) -> Any:
    return gm
