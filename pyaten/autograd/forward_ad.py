"""Forward-mode AD: dual tensors carrying a tangent, propagated by the forward formulas.

Inside `with dual_level():`, `make_dual(x, t)` attaches tangent `t` to (an alias of) `x`;
every operator then also computes its outputs' tangents from the `result:` formulas of
derivatives.yaml (`auto_element_wise`, `auto_linear` or an expression over `self_t`, ...),
and `unpack_dual(y)` returns `(primal, tangent)`. Leaving the level drops every tangent
made inside it, as PyTorch does. One level at a time (PyTorch's default).
"""

from __future__ import annotations

import weakref
from collections import namedtuple
from typing import Any

from pyaten.core.tensor import Tensor

__all__ = ["dual_level", "make_dual", "unpack_dual", "enter_dual_level", "exit_dual_level",
           "UnpackedDualTensor"]

# FW[0] is the active level (-1: none); generated kernels read it on every call.
FW = [-1]
# The tensors holding a tangent, by id (a WeakSet would compare tensors with `==`).
_DUALS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


def enter_dual_level() -> int:
    if FW[0] != -1:
        raise RuntimeError(
            "Entering a new forward AD level but the current level is not valid. Make sure "
            "you did not modified it directly."
        )
    FW[0] = 0
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    if FW[0] == -1:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one.")
    for t in list(_DUALS.values()):
        t._fw_grad = None
    _DUALS.clear()
    FW[0] = -1


class dual_level:  # noqa: N801 - PyTorch's name
    """Context manager for the forward-AD level in which dual tensors live."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: object) -> None:
        exit_dual_level()


def set_tangent(t: Tensor, tangent: Tensor | None) -> None:
    if tangent is None:
        return
    t._fw_grad = tangent
    _DUALS[id(t)] = t


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """An alias of `tensor` whose tangent is `tangent` (inside `dual_level`)."""
    if FW[0] == -1:
        raise RuntimeError(
            "To create a dual Tensor, you must first enter a dual level with "
            "torch.autograd.forward_ad.dual_level()."
        )
    if not (tensor.dtype.is_floating_point or tensor.dtype.is_complex):
        raise ValueError(
            f"Expected primal to be floating point or complex, but got: {tensor.dtype}"
        )
    if not (tangent.dtype.is_floating_point or tangent.dtype.is_complex):
        raise ValueError(
            f"Expected tangent to be floating point or complex, but got: {tangent.dtype}"
        )
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(
            f"Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {tensor.shape} while "
            f"the given forward gradient is of size {tangent.shape}."
        )
    dual = tensor.view_as(tensor)
    set_tangent(dual, tangent)
    return dual


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """`(primal, tangent)` of a dual tensor (tangent None when it has none)."""
    if not isinstance(tensor, Tensor):
        return UnpackedDualTensor(tensor, None)
    tangent = tensor._fw_grad if FW[0] != -1 else None
    primal = tensor.view_as(tensor)
    primal._fw_grad = None
    return UnpackedDualTensor(primal, tangent)
