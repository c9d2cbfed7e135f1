"""Operators functionalization needs beside the view inverses and `*_copy` forms that
view_ops.py holds: `detach_copy`, the view-free form of `detach` that
`functionalize(f, remove="mutations_and_views")` runs (docs/functionalize.md)."""

from __future__ import annotations

from pyaten.core.tensor import Tensor, contiguous_format
from pyaten.native.ops_handles import aten_ops
from pyaten.native.registry import native


@native
def detach_copy(self: Tensor) -> Tensor:
    """`detach`, then a contiguous copy (its derivative is not implemented, as PyTorch's)."""
    aten = aten_ops()
    return aten.clone.default(aten.detach.default(self), contiguous_format)
