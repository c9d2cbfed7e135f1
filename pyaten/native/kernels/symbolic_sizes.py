"""`aten::sym_size.int` and friends: a tensor's size read as a value, the node `make_fx`
(tracing_mode="symbolic") records where a program reads a symbolic size (docs/fx.md)."""

from __future__ import annotations

from pyaten.core.tensor import Tensor
from pyaten.native.registry import native


@native
def sym_size_int(self: Tensor, dim: int) -> object:
    return self.size(dim)


@native
def sym_stride_int(self: Tensor, dim: int) -> object:
    return self.stride(dim)


@native
def sym_numel(self: Tensor) -> object:
    n = 1
    for s in self._sizes:
        n = n * s
    return n
