"""Whether a tensor holds values a kernel or a formula may read: PyTorch's
isTensorSubclassLike, by dispatch keys.

A tensor with the Python key (a wrapper subclass), the FuncTorchBatched key (a BatchedTensor
under vmap) or the Functionalize key (a functional tensor) holds no data of its own that
`.item()`, `bool()` or a NumPy view could read. Code that would choose a path by reading
values takes the path right for every value instead (an autograd formula), or calls the
operator that the wrapper handles (`_linalg_check_errors` for LAPACK's codes), so that
vmap(grad(f)) and tracing see tensor operations only."""

from __future__ import annotations

from typing import Any

from pyaten.dispatch.keys import functionality_bit

__all__ = ["SUBCLASS_LIKE_KEYS", "subclass_like"]

SUBCLASS_LIKE_KEYS = (functionality_bit("Python") | functionality_bit("FuncTorchBatched")
                      | functionality_bit("Functionalize"))


def subclass_like(*tensors: Any) -> bool:
    """Whether any of `tensors` is subclass-like (its values out of a kernel's reach)."""
    return any(t._keyset & SUBCLASS_LIKE_KEYS for t in tensors)
