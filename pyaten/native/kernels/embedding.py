"""Embedding operators: `embedding` (a row gather through `index_select`, as PyTorch composes
it), its backward helper operators `embedding_backward` / `embedding_dense_backward` (one
`np.add.at` scatter of the gradient rows), `embedding_renorm_` (rows renormalised in place)
and `one_hot` (a composite over `zeros` and `scatter`).
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.broadcast import new_row_major
from pyaten.core.device import CPU
from pyaten.core.tensor import Tensor
from pyaten.native.kernels.copy import assign
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import quiet_call


def _is_meta(*tensors: Tensor | None) -> bool:
    return any(t is not None and t._device.type == "meta" for t in tensors)


def _check_indices(indices: Tensor, name: str) -> None:
    if indices._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got pyaten.{indices._dtype.scalar_name}Tensor instead (while "
            f"checking arguments for {name})"
        )


@native
def embedding_symint(weight: Tensor, indices: Tensor, padding_idx: int = -1,
                     scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    _check_indices(indices, "embedding")
    a = _aten()
    if indices.dim() == 1:
        return a.index_select.default(weight, 0, indices)
    sizes = list(indices._sizes) + list(weight._sizes[1:])
    rows = a.index_select.default(weight, 0, a.reshape.default(indices, [-1]))
    return a.view.default(rows, sizes)


@native
def embedding_backward_symint(grad: Tensor, indices: Tensor, num_weights: int,
                              padding_idx: int, scale_grad_by_freq: bool,
                              sparse: bool) -> Tensor:
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported by pyaten")
    return _aten().embedding_dense_backward.default(grad, indices, num_weights, padding_idx,
                                                    scale_grad_by_freq)


@native
def embedding_dense_backward_cpu(grad_output: Tensor, indices: Tensor, num_weights: int,
                                 padding_idx: int, scale_grad_by_freq: bool) -> Tensor:
    _check_indices(indices, "embedding_backward")
    d = grad_output._sizes[-1] if grad_output.dim() else 1
    out = new_row_major((num_weights, d), grad_output._dtype, grad_output._device)
    if _is_meta(grad_output, indices) or out.numel() == 0:
        return out
    acc = np.dtype(np.float32) if grad_output._dtype in (dt.float16, dt.bfloat16) \
        else grad_output._dtype.numpy
    idx = indices._numpy().reshape(-1).astype(np.int64, copy=False)
    rows = grad_output._numpy().reshape(-1, d).astype(acc, copy=False)
    keep = idx != padding_idx
    if not keep.all():
        idx, rows = idx[keep], rows[keep]
    if scale_grad_by_freq:
        counts = np.bincount(idx, minlength=num_weights)
        rows = rows / counts[idx][:, None]
    total = np.zeros((num_weights, d), acc)
    np.add.at(total, idx, rows)
    assign(out._numpy(), total)
    return out


@native
def embedding_renorm_cpu_(self: Tensor, indices: Tensor, max_norm: float,
                          norm_type: float) -> Tensor:
    if self.dim() != 2:
        raise RuntimeError(f"embedding_renorm_(): 'self' must be 2-D, got {self.dim()}-D")
    _check_indices(indices, "embedding_renorm_")
    if _is_meta(self, indices):
        return self
    w = self._numpy()
    rows = np.unique(indices._numpy().reshape(-1))
    picked = w[rows].astype(np.float64 if w.dtype == np.float64 else np.float32)
    if norm_type == 1:
        norms = np.abs(picked).sum(axis=1)
    elif norm_type == 2:
        norms = np.sqrt((picked * picked).sum(axis=1))
    else:
        norms = quiet_call(lambda: (np.abs(picked) ** norm_type).sum(axis=1)
                           ** (1.0 / norm_type))
    over = norms > max_norm
    if over.any():
        scale = max_norm / (norms[over] + 1e-7)
        target = rows[over]
        values = picked[over] * scale[:, None]
        fresh = np.empty((len(target), w.shape[1]), w.dtype)
        assign(fresh, values)
        w[target] = fresh
    self._version_counter.value += 1
    return self


@native
def one_hot(self: Tensor, num_classes: int = -1) -> Tensor:
    a = _aten()
    if self._dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    meta = _is_meta(self)
    if self.numel() == 0 and not meta:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return a.zeros.default(list(self._sizes) + [num_classes], dtype=dt.int64,
                               device=self._device)
    if meta:
        if num_classes == -1:
            raise RuntimeError(
                "Cannot infer the number of classes of one_hot from a meta tensor; pass "
                "num_classes")
    else:
        values = self._numpy()
        if values.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = int(values.max()) + 1
        elif values.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    out = a.zeros.default(list(self._sizes) + [num_classes], dtype=dt.int64,
                          device=self._device)
    return a.scatter_.value(out, -1, a.unsqueeze.default(self, -1), 1)


# --- embedding_bag ---------------------------------------------------------------------------

SUM, MEAN, MAX = 0, 1, 2


def _bag_layout(indices: np.ndarray, offsets: np.ndarray, include_last_offset: bool) -> tuple:
    """(number of bags, the bag of each index) from the offsets."""
    starts = offsets[:-1] if include_last_offset else offsets
    bags = len(starts)
    if not len(indices):
        return bags, np.zeros(0, np.int64)
    if bags == 0:
        return 0, np.zeros(len(indices), np.int64)
    bag = np.searchsorted(starts, np.arange(len(indices)), side="right") - 1
    if include_last_offset:
        bag = np.minimum(bag, bags - 1)
    return bags, np.maximum(bag, 0).astype(np.int64)


def _bag_checks(weight: Tensor, indices: Tensor, offsets: Tensor, mode: int,
                per_sample_weights: Tensor | None) -> None:
    if indices.dim() != 1:
        raise RuntimeError(f"input has to be a 1D or 2D Tensor, but got Tensor of dimension "
                           f"{indices.dim()}")
    if offsets.dim() != 1:
        raise RuntimeError(f"offsets has to be a 1D Tensor, but got Tensor of dimension "
                           f"{offsets.dim()}")
    _check_indices(indices, "embedding_bag")
    if per_sample_weights is not None:
        if mode != SUM:
            raise RuntimeError(
                "embedding_bag: per_sample_weights only supported with mode='sum'")
        if per_sample_weights._dtype is not weight._dtype:
            raise RuntimeError(
                f"expected scalar type {weight._dtype.scalar_name} but found "
                f"{per_sample_weights._dtype.scalar_name}")


def _embedding_bag_impl(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                        per_sample_weights, include_last_offset, padding_idx) -> tuple:
    _bag_checks(weight, indices, offsets, mode, per_sample_weights)
    n = indices._sizes[0]
    d = weight._sizes[1]
    bags = offsets._sizes[0] - (1 if include_last_offset else 0)
    bags = max(bags, 0)
    device, dtype = weight._device, weight._dtype
    if _is_meta(weight, indices, offsets, per_sample_weights):
        o2b = (n,)
        return (new_row_major((bags, d), dtype, device), new_row_major(o2b, dt.int64, device),
                new_row_major((bags,), dt.int64, device),
                new_row_major({MAX: (bags, d), SUM: (0,)}.get(mode, (bags,)), dt.int64,
                              device))
    acc = np.dtype(np.float32) if dtype in (dt.float16, dt.bfloat16) else dtype.numpy
    idx = indices._numpy().astype(np.int64, copy=False)
    w = weight._numpy()
    num = w.shape[0]
    if len(idx) and (idx.min() < 0 or idx.max() >= num):
        bad = idx[(idx < 0) | (idx >= num)][0]
        raise IndexError(f"index {bad} is out of bounds for dimension 0 with size {num}")
    offs = offsets._numpy().astype(np.int64)
    _, bag = _bag_layout(idx, offs, include_last_offset)
    valid = idx != padding_idx
    if include_last_offset and len(offs):
        valid &= np.arange(n) < offs[-1]  # past the last offset: in no bag
    rows = w[idx].astype(acc, copy=False)
    counts = np.bincount(bag[valid], minlength=bags)[:bags] if bags else np.zeros(0, np.int64)
    out = np.zeros((bags, d), acc)
    max_indices = None
    if mode == MAX:
        best = np.full((bags, d), -np.inf, acc)
        np.maximum.at(best, bag[valid], rows[valid])
        hit = valid[:, None] & (rows == best[bag])
        position = np.where(hit, np.arange(n)[:, None], n)
        first = np.full((bags, d), n, np.int64)
        np.minimum.at(first, bag, position)
        out = np.where(first < n, best, 0).astype(acc)
        max_indices = np.where(first < n, np.append(idx, 0)[first], 0)
    else:
        if per_sample_weights is not None:
            rows = rows * per_sample_weights._numpy().astype(acc, copy=False)[:, None]
        np.add.at(out, bag[valid], rows[valid])
        if mode == MEAN:
            out /= np.maximum(counts, 1)[:, None]
    result = new_row_major((bags, d), dtype, device)
    if result.numel():
        assign(result._numpy(), out)
    if mode == SUM:
        # PyTorch's CPU kernel leaves these empty/zero in sum mode (the backward rebuilds them)
        o2b, bag_size, maxi = np.zeros(0, np.int64), np.zeros(bags, np.int64), \
            np.zeros(bags, np.int64)
    elif mode == MEAN:
        o2b, bag_size, maxi = bag, counts.astype(np.int64), counts.astype(np.int64)
    else:
        o2b, bag_size, maxi = bag, counts.astype(np.int64), max_indices
    return (result,) + tuple(_long(v) for v in (o2b, bag_size, maxi))


def _long(values: np.ndarray) -> Tensor:
    out = new_row_major(tuple(values.shape), dt.int64, CPU)
    if out.numel():
        assign(out._numpy(), values)
    return out


@native
def _embedding_bag_cpu(weight, indices, offsets, scale_grad_by_freq=False, mode=0,
                       sparse=False, per_sample_weights=None, include_last_offset=False,
                       padding_idx=-1) -> tuple:
    return _embedding_bag_impl(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                               per_sample_weights, include_last_offset, padding_idx)


@native
def _embedding_bag_forward_only_cpu(weight, indices, offsets, scale_grad_by_freq=False,
                                    mode=0, sparse=False, per_sample_weights=None,
                                    include_last_offset=False, padding_idx=-1) -> tuple:
    return _embedding_bag_impl(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                               per_sample_weights, include_last_offset, padding_idx)


@native
def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False) -> tuple:
    return embedding_bag_padding_idx(weight, indices, offsets, scale_grad_by_freq, mode,
                                     sparse, per_sample_weights, include_last_offset, None)


@native
def embedding_bag_padding_idx(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                              per_sample_weights, include_last_offset, padding_idx) -> tuple:
    index = -1
    if padding_idx is not None:
        num = weight._sizes[0]
        if not -num <= padding_idx < num:
            raise RuntimeError(
                f"padding_idx must be within the number of embeddings, -{num} through "
                f"{num - 1}, but got {padding_idx}")
        index = padding_idx % num
    a = _aten()
    op = a._embedding_bag.default if weight.requires_grad else \
        a._embedding_bag_forward_only.default
    return op(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
              include_last_offset, index)


def _offset2bag(indices: Tensor, offsets: Tensor, offset2bag: Tensor, bags: int) -> np.ndarray:
    """offset2bag as the forward gave it, or rebuilt from the offsets (sum mode leaves it
    empty); an index past the last bag's start belongs to the last bag."""
    if offset2bag.numel() == indices.numel() and indices.numel():
        return offset2bag._numpy().astype(np.int64, copy=False)
    _, bag = _bag_layout(indices._numpy().astype(np.int64), offsets._numpy().astype(np.int64),
                         False)
    return np.minimum(bag, max(bags - 1, 0))


@native
def _embedding_bag_backward_symint(grad, indices, offsets, offset2bag, bag_size,
                                   maximum_indices, num_weights, scale_grad_by_freq, mode,
                                   sparse, per_sample_weights, padding_idx=-1) -> Tensor:
    if sparse:
        raise NotImplementedError("embedding_bag: sparse gradients are not supported by pyaten")
    if _is_meta(grad, indices, offsets):
        return new_row_major((num_weights, grad._sizes[1]), grad._dtype, grad._device)
    bag = _offset2bag(indices, offsets, offset2bag, grad._sizes[0])
    bag_t = new_row_major((len(bag),), dt.int64, grad._device)
    if len(bag):
        assign(bag_t._numpy(), bag)
    return _aten()._embedding_bag_dense_backward.default(
        grad, indices, bag_t, bag_size, maximum_indices, num_weights, scale_grad_by_freq,
        mode, per_sample_weights, padding_idx)


@native
def _embedding_bag_dense_backward_cpu(grad, indices, offset2bag, bag_size, maximum_indices,
                                      num_weights, scale_grad_by_freq, mode,
                                      per_sample_weights, padding_idx=-1) -> Tensor:
    d = grad._sizes[1]
    out = new_row_major((num_weights, d), grad._dtype, grad._device)
    if _is_meta(grad, indices, offset2bag) or not out.numel():
        return out
    acc = np.dtype(np.float32) if grad._dtype in (dt.float16, dt.bfloat16) \
        else grad._dtype.numpy
    g = grad._numpy().astype(acc, copy=False)
    total = np.zeros((num_weights, d), acc)
    if mode == MAX:
        mi = maximum_indices._numpy().reshape(-1, d)
        filled = bag_size._numpy() > 0
        rows, cols = np.nonzero(np.broadcast_to(filled[:, None], mi.shape))
        np.add.at(total, (mi[rows, cols], cols), g[rows, cols])
    else:
        idx = indices._numpy().astype(np.int64, copy=False)
        bag = offset2bag._numpy().astype(np.int64, copy=False)
        keep = idx != padding_idx
        idx, bag = idx[keep], bag[keep]
        contrib = g[bag]
        if mode == MEAN:
            contrib = contrib / np.maximum(bag_size._numpy()[bag], 1)[:, None]
        if per_sample_weights is not None:
            contrib = contrib * per_sample_weights._numpy()[keep].astype(acc)[:, None]
        if scale_grad_by_freq:
            counts = np.bincount(idx, minlength=num_weights)
            contrib = contrib / counts[idx][:, None]
        np.add.at(total, idx, contrib)
    assign(out._numpy(), total)
    return out


@native
def _embedding_bag_per_sample_weights_backward_cpu(grad, weight, indices, offsets, offset2bag,
                                                   mode, padding_idx=-1) -> Tensor:
    if mode != SUM:
        raise RuntimeError(
            "embedding_bag_backward: per_sample_weights only supported for mode='sum'")
    n = indices._sizes[0]
    out = new_row_major((n,), grad._dtype, grad._device)
    if _is_meta(grad, weight, indices) or not n:
        return out
    idx = indices._numpy().astype(np.int64, copy=False)
    bag = _offset2bag(indices, offsets, offset2bag, grad._sizes[0])
    values = np.einsum("kd,kd->k", grad._numpy()[bag], weight._numpy()[idx])
    values[idx == padding_idx] = 0
    assign(out._numpy(), values)
    return out
