"""Derivative helpers for kernels/more_ops.py's operators: `block_diag` and `renorm`
(PyTorch's `block_diag_backward` and `renorm_backward`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyaten.autograd.engine import sum_to
from pyaten.autograd.formulas_linalg import _householder_product, scatter_reduce_backward
from pyaten.autograd.formulas_reduce import norm_backward
from pyaten.core.tensor import Tensor
from pyaten.native.ops_handles import aten

__all__ = [
    "block_diag_backward",
    "index_reduce_backward",
    "ormqr_backward",
    "renorm_backward",
    "triangular_solve_backward",
]


def block_diag_backward(grad: Tensor, tensors: Sequence[Tensor]) -> list[Tensor]:
    """Each input's block cut back out of `grad` (shaped and typed as the input: a real input
    gets the real part of a complex gradient)."""
    grads = []
    row = col = 0
    for t in tensors:
        shape = tuple(t.shape)
        rows, cols = (1, 1) if not shape else (1, shape[0]) if len(shape) == 1 else shape
        block = grad.narrow(0, row, rows).narrow(1, col, cols).reshape(shape)
        if block.is_complex() and not t.is_complex():
            block = block.real
        grads.append(block.to(t.dtype))
        row, col = row + rows, col + cols
    return grads


def renorm_backward(grad: Tensor, self: Tensor, p: Any, dim: int, maxnorm: Any) -> Tensor:
    """The gradient of `renorm`: slices left alone pass `grad` through; a rescaled slice
    also carries the derivative of the scale `maxnorm / (norm + 1e-7)`."""
    dim = dim % self.dim()
    others = [d for d in range(self.dim()) if d != dim]
    norm = aten.linalg_vector_norm.default(self, p, others, True)
    along = self.conj() * grad
    if along.is_complex():
        along = along.real
    along = along.sum(others, True)
    nb = norm_backward(along, self, p, norm, others, True)
    inverse = (norm + 1e-7).reciprocal()
    factor = inverse * maxnorm
    return aten.where.self(norm > maxnorm, factor * grad - (factor * inverse) * nb, grad)


def index_reduce_backward(grad: Tensor | None, self: Tensor, dim: int, index: Tensor,
                          source: Tensor, reduce: str, include_self: bool,
                          result: Tensor) -> tuple:
    """The gradient of `index_reduce`: `scatter_reduce`'s, with the index spread over every
    position of `source` (selecting slices at `index` is gathering with that index)."""
    d = dim % max(source.dim(), 1)
    shape = [1] * source.dim()
    if shape:
        shape[d] = -1
    spread = index.reshape(shape).expand(tuple(source.shape)) if shape else index.reshape(())
    return scatter_reduce_backward(grad, self, d, spread, source, reduce, include_self, result)


def triangular_solve_backward(grad_x: Tensor | None, grad_m: Tensor | None, b: Tensor,
                              a: Tensor, x: Tensor, upper: bool, transpose: bool,
                              unitriangular: bool, mask: Sequence[bool]) -> tuple:
    """The gradients of `triangular_solve` (X = A^-1 b): b's solves the adjoint system; A's is
    `-grad_b X^H` (transposed for `transpose`) kept on A's triangle; the copy M passes its own
    gradient to A."""
    grad_b = grad_a = None
    if grad_x is not None:
        grad_b = aten.triangular_solve.default(grad_x, a.conj(), upper, not transpose,
                                               unitriangular)[0]
        if mask[1]:
            if transpose:
                grad_a = -(x.conj().matmul(grad_b.mT))
            else:
                grad_a = -(grad_b.matmul(x.mH))
            grad_a = grad_a.triu(int(unitriangular)) if upper else grad_a.tril(
                -int(unitriangular))
    if grad_m is not None and mask[1]:
        grad_a = grad_m if grad_a is None else grad_a + grad_m
    if grad_b is not None:
        grad_b = sum_to(grad_b, tuple(b.shape))
    if grad_a is not None:
        grad_a = sum_to(grad_a, tuple(a.shape))
    return grad_b, grad_a


def _ormqr_composite(a: Tensor, tau: Tensor, other: Tensor, left: bool,
                     transpose: bool) -> Tensor:
    """`ormqr` in differentiable operators: the full Q from the reflectors (padded to square,
    the columns past tau's length the identity), then one product."""
    m = a.shape[-2]
    k = tau.shape[-1]
    reflectors = a[..., :k]
    if k < m:
        pad = aten.zeros.default(tuple(a.shape[:-2]) + (m, m - k), dtype=a.dtype)
        reflectors = aten.cat.default([reflectors, pad], -1)
    q = _householder_product(reflectors, tau)
    if transpose:
        q = q.mH
    return q.matmul(other) if left else other.matmul(q)


def ormqr_backward(grad: Tensor | None, self: Tensor, input2: Tensor, input3: Tensor,
                   left: bool, transpose: bool) -> tuple:
    """The gradients of `ormqr`, by differentiating its composite form (as pyaten's
    householder_product_backward does)."""
    if grad is None:
        return None, None, None
    import pyaten.autograd as autograd

    create = autograd.grad_mode.is_grad_enabled()
    with autograd.grad_mode.enable_grad():
        leaves = [t if (create and t.requires_grad) else t.detach().requires_grad_(True)
                  for t in (self, input2, input3)]
        result = _ormqr_composite(*leaves, left, transpose)
        grads = autograd.grad(result, leaves, grad, allow_unused=True, create_graph=create)
    return tuple(grads)
