"""Names the formulas of derivatives.yaml may use besides the operator's own arguments.

Formulas are Python expressions over pyaten: `grad * other.conj()`. This module is their
namespace (the generated module star-imports it): pyaten's public functions, plus the
helpers PyTorch's formulas call by name (`handle_r_to_c`, `maybe_multiply`, `sum_to`...),
written here once so each formula stays one readable line. A helper that is a real operator
in PyTorch (`sigmoid_backward`, `threshold_backward`) is a declared operator in
native_functions.yaml instead, reached as `pyaten.ops.aten.<name>` or a top-level function.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pyaten
from pyaten.autograd.engine import sum_to
from pyaten.core.tensor import Tensor
from pyaten.native.ops_handles import aten

__all__ = [
    "pyaten",
    "aten",
    "math",
    "sum_to",
    "handle_r_to_c",
    "maybe_multiply",
    "zeros_like",
    "ones_like",
    "unsqueeze_to",
    "reduce_backward",
    "restore_reduced_dims",
    "wrap_dims",
    "scalar",
    "not_implemented",
    "geometry",
]

zeros_like = pyaten.zeros_like
ones_like = pyaten.ones_like


def handle_r_to_c(like: Any, grad: Tensor | None) -> Tensor | None:
    """The real part of a complex gradient flowing to a real input (else unchanged)."""
    if grad is None:
        return None
    dtype = like if isinstance(like, pyaten.dtype) else like.dtype
    if not dtype.is_complex and grad.dtype.is_complex:
        return grad.real
    return grad


def maybe_multiply(t: Tensor, s: Any) -> Tensor:
    """`t * s`, skipping the multiplication by one."""
    if isinstance(s, bool):
        return t if s else t * 0
    if isinstance(s, (int, float)) and s == 1:
        return t
    return t * s


def scalar(value: Any) -> Any:
    """A Python number of a Scalar argument (0-dim tensors included)."""
    if isinstance(value, Tensor):
        return value.item()
    return value


def wrap_dims(dims: Any, ndim: int) -> list[int]:
    """Non-negative dims from an int, a list, or None/[] (meaning all dims)."""
    if dims is None:
        return list(range(ndim))
    if isinstance(dims, int):
        dims = [dims]
    if len(dims) == 0:
        return list(range(ndim))
    n = max(ndim, 1)
    return sorted(d % n for d in dims)


def unsqueeze_to(grad: Tensor, dims: Any, sizes: Sequence[int]) -> Tensor:
    """`grad` of a reduction without keepdim, with the reduced dims put back as size 1."""
    ndim = len(sizes)
    for d in wrap_dims(dims, ndim):
        if ndim:
            grad = grad.unsqueeze(d)
    return grad


def restore_reduced_dims(grad: Tensor, dims: Any, keepdim: bool, sizes: Sequence[int]) -> Tensor:
    """`grad` of a reduction over `dims` broadcastable against the input again."""
    if keepdim or len(sizes) == 0:
        return grad
    return unsqueeze_to(grad, dims, sizes)


def reduce_backward(grad: Tensor, dims: Any, keepdim: bool, sizes: Sequence[int]) -> Tensor:
    """The gradient of a sum over `dims`: the output gradient expanded to the input."""
    return restore_reduced_dims(grad, dims, keepdim, sizes).expand(tuple(sizes))


def geometry(saved: Any) -> Any:
    """Marks, in a formula, an argument a helper reads only the shapes and dtypes of: the
    generated node then keeps their geometry instead of the tensors (`cat`'s inputs)."""
    return saved


def not_implemented(name: str) -> Tensor:
    raise NotImplementedError(f"the derivative for '{name}' is not implemented.")


# Each family keeps its helpers in its own module; formulas see them all.
from pyaten.autograd import (  # noqa: E402
    formulas_binary,
    formulas_linalg,
    formulas_more,
    formulas_nn,
    formulas_pointwise,
    formulas_reduce,
    formulas_shape,
)
from pyaten.autograd.formulas_binary import *  # noqa: E402,F403
from pyaten.autograd.formulas_linalg import *  # noqa: E402,F403
from pyaten.autograd.formulas_more import *  # noqa: E402,F403
from pyaten.autograd.formulas_nn import *  # noqa: E402,F403
from pyaten.autograd.formulas_pointwise import *  # noqa: E402,F403
from pyaten.autograd.formulas_reduce import *  # noqa: E402,F403
from pyaten.autograd.formulas_shape import *  # noqa: E402,F403

__all__ += (
    formulas_binary.__all__
    + formulas_pointwise.__all__
    + formulas_reduce.__all__
    + formulas_shape.__all__
    + formulas_linalg.__all__
    + formulas_nn.__all__
    + formulas_more.__all__
)
