"""Formula helpers of the shape family (see pyaten/autograd/formulas.py and docs/autograd.md).

Views, copies, concatenation, indexing and batched matmul. Each helper is a plain function
over pyaten operators, so a gradient it builds is itself recorded when `create_graph=True`
(the gradient of a view's gradient is the view again; of `index` it is `index_put`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import pyaten
from pyaten.core.tensor import Tensor
from pyaten.native.ops_handles import aten

__all__ = [
    "permute_backwards",
    "unsqueeze_squeezed",
    "slice_backward_wrapper",
    "narrow_backward",
    "as_strided_backward",
    "cat_tensors_backward",
    "split_backward",
    "split_with_sizes_backward",
    "unbind_backward",
    "index_backward",
    "index_put_self_backward",
    "to_copy_backward",
]


def _wrap(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    return dim % n if -n <= dim < n else dim


def permute_backwards(grad: Tensor, dims: Sequence[int]) -> Tensor:
    """The gradient of `permute(dims)`: `grad` permuted by the inverse permutation."""
    ndim = len(dims)
    inverse = [0] * ndim
    for i, d in enumerate(dims):
        inverse[_wrap(d, ndim)] = i
    return grad.permute(inverse)


def unsqueeze_squeezed(grad: Tensor, sizes: Sequence[int], dims: Any = None) -> Tensor:
    """The gradient of `squeeze`: the size-1 dims it removed (those of `dims`) put back."""
    ndim = len(sizes)
    if ndim == 0:
        return grad
    if dims is None:
        wanted = range(ndim)
    else:
        wanted = sorted({_wrap(d, ndim) for d in ([dims] if isinstance(dims, int) else dims)})
    for d in wanted:
        if sizes[d] == 1:
            grad = grad.unsqueeze(d)
    return grad


def _clamp_slice(start: int | None, end: int | None, size: int) -> tuple[int, int]:
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start = max(start + size, 0)
    start = min(start, size)
    if end < 0:
        end = max(end + size, 0)
    end = min(end, size)
    return start, max(end, start)


def slice_backward_wrapper(
    grad: Tensor, sizes: Sequence[int], dim: int, start: int | None, end: int | None, step: int
) -> Tensor:
    """`slice_backward` with the slice's bounds clamped as the forward clamped them."""
    d = _wrap(dim, len(sizes))
    lo, hi = _clamp_slice(start, end, sizes[d])
    return pyaten.slice_backward(grad, list(sizes), d, lo, hi, step)


def narrow_backward(
    grad: Tensor, sizes: Sequence[int], dim: int, start: int, length: int
) -> Tensor:
    """`narrow_copy`'s gradient: `grad` placed at the narrowed range (a negative `start`
    counts from the end, as the forward took it)."""
    d = _wrap(dim, len(sizes))
    lo = start + sizes[d] if start < 0 else start
    return pyaten.slice_backward(grad, list(sizes), d, lo, lo + length, 1)


def _positions(sizes: Sequence[int], strides: Sequence[int], offset: int) -> np.ndarray:
    """The storage position of every element of a strided geometry, in its shape."""
    pos = np.full(tuple(sizes), offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(sizes, strides)):
        shape = [1] * len(sizes)
        shape[d] = n
        pos = pos + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return pos


def as_strided_backward(
    grad: Tensor,
    self: Tensor,
    size: Sequence[int],
    stride: Sequence[int],
    storage_offset: int | None,
) -> Tensor:
    """The gradient of `as_strided`, through the storage both geometries read.

    The output's gradient is scattered (summed where the output overlaps itself) into a
    zero storage, and the input's geometry is read back out of it; an element the input's
    geometry reads several times gets its share (PyTorch's rule for overlapping inputs).
    """
    in_offset = self.storage_offset()
    out_offset = in_offset if storage_offset is None else storage_offset
    in_pos = _positions(self.shape, self.stride(), in_offset)
    out_pos = _positions(size, stride, out_offset)
    low = min([in_offset, out_offset] + [int(p.min()) for p in (in_pos, out_pos) if p.size])
    high = max([in_offset, out_offset] + [int(p.max()) for p in (in_pos, out_pos) if p.size])
    in_pos, out_pos = in_pos - low, out_pos - low
    storage = grad.new_zeros((high - low + 1,))
    flat_out = pyaten.tensor(out_pos.reshape(-1), device=grad.device)
    storage = storage.index_put((flat_out,), grad.reshape(-1), accumulate=True)
    index = pyaten.tensor(in_pos, device=grad.device)
    result = aten.index.Tensor(storage, [index])
    if np.unique(in_pos).size < in_pos.size:
        counts = np.bincount(in_pos.reshape(-1), minlength=high - low + 1)[in_pos]
        result = result / pyaten.tensor(counts, dtype=result.dtype, device=grad.device)
    return result


def cat_tensors_backward(grad: Tensor, tensors: Sequence[Tensor], dim: int) -> list[Tensor]:
    """The gradient of `cat`: `grad` cut back into the inputs' extents along `dim`.

    A legacy empty input (1-D of size 0, which `cat` skips) gets an empty gradient.
    """
    ndim = grad.dim()
    d = _wrap(dim, ndim)
    grads = []
    offset = 0
    for t in tensors:
        shape = tuple(t.shape)
        if shape == (0,) and ndim != 1:
            grads.append(grad.new_zeros((0,)))
            continue
        length = shape[d]
        grads.append(grad.narrow(d, offset, length))
        offset += length
    return grads


def _zeros_for(like: Sequence[Tensor | None]) -> Tensor:
    for g in like:
        if g is not None:
            return g
    raise RuntimeError("no gradient reached any output")


def split_with_sizes_backward(
    grads: Sequence[Tensor | None], split_sizes: Sequence[int], dim: int, sizes: Sequence[int]
) -> Tensor:
    """The gradient of `split_with_sizes`: the outputs' gradients (zeros where none) joined."""
    d = _wrap(dim, len(sizes))
    some = _zeros_for(grads)
    parts = []
    for g, n in zip(grads, split_sizes):
        if g is None:
            shape = list(sizes)
            shape[d] = n
            g = some.new_zeros(shape)
        parts.append(g)
    return pyaten.cat(parts, d)


def split_backward(
    grads: Sequence[Tensor | None], split_size: int, dim: int, sizes: Sequence[int]
) -> Tensor:
    """The gradient of `split`: as `split_with_sizes` with the sizes `split` cut."""
    d = _wrap(dim, len(sizes))
    total = sizes[d]
    lengths = [min(split_size, total - i * split_size) for i in range(len(grads))]
    return split_with_sizes_backward(grads, lengths, d, sizes)


def unbind_backward(grads: Sequence[Tensor | None], dim: int) -> Tensor:
    """The gradient of `unbind`: the outputs' gradients (zeros where none) stacked."""
    some = _zeros_for(grads)
    parts = [pyaten.zeros_like(some) if g is None else g for g in grads]
    return pyaten.stack(parts, dim)


def index_backward(zeros: Tensor, indices: Sequence[Tensor | None], grad: Tensor) -> Tensor:
    """The gradient of `index`: `grad` summed into the positions the indices read."""
    return aten.index_put.default(zeros, list(indices), grad, True)


def index_put_self_backward(
    grad: Tensor, indices: Sequence[Tensor | None], accumulate: bool
) -> Tensor:
    """The gradient of `index_put` for `self`: zero where the values overwrote it."""
    if accumulate:
        return grad
    return aten.index_put.default(grad, list(indices), grad.new_zeros(()), False)


def to_copy_backward(grad: Tensor, dtype: Any, device: Any) -> Tensor:
    """The gradient of `_to_copy`: back to the input's dtype (its real part for a real input)."""
    if grad.dtype.is_complex and not dtype.is_complex:
        grad = grad.real
    return grad.to(device=device, dtype=dtype)
