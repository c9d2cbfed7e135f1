"""Composite operators that vmap batches whole instead of letting them decompose (Note: the
FuncTorchBatched key, in _key.py): each rule takes a `BatchedCall` and returns the physical
result, or NotImplemented for the general path (the operator decomposes below the key)."""

from __future__ import annotations

from typing import Any

import pyaten
from pyaten.core.tensor import Tensor
from pyaten.func._rules import BatchedCall, fallback

__all__ = ["COMPOSITE_RULES"]


def _linear(call: BatchedCall) -> Any:
    x, weight = call.args[:2]
    bias = call.args[2] if len(call.args) > 2 else None
    if not call.batched(x) or call.batched(weight) or call.batched(bias):
        return NotImplemented
    return pyaten.nn.functional.linear(x.value, weight, bias)


def _matmul(call: BatchedCall) -> Any:
    a, b = call.args
    if call.batched(a) and not call.batched(b) and b.dim() <= 2 and a.dim() >= 1:
        return pyaten.matmul(a.value, b)
    if call.batched(a) and call.batched(b) and a.dim() == b.dim() >= 2:
        return pyaten.matmul(a.value, b.value)
    return NotImplemented


def _elementwise(call: BatchedCall) -> Any:
    """One batched tensor in, each element on its own (the kernel reads the data itself)."""
    if len(call.args) != 1 or call.kwargs or not call.batched(call.args[0]):
        return NotImplemented
    return call.func(call.args[0].value)


def _quantile(call: BatchedCall) -> Any:
    self, q = call.args[:2]
    dim = call.args[2] if len(call.args) > 2 else None
    keepdim = call.args[3] if len(call.args) > 3 else False
    if not call.batched(self) or call.batched(q) or (dim is None and keepdim):
        return NotImplemented
    value = self.value
    if dim is None:
        value, dim = value.reshape(call.batch_size, -1), 1
    else:
        rank = len(self._sizes)
        if not -max(rank, 1) <= dim < max(rank, 1):
            return NotImplemented  # the error, from one sample
        dim = dim + max(rank, 1) if dim < 0 else dim
        if rank == 0:  # one element per sample: a 0-dim result, keepdim or not
            value, keepdim = value.unsqueeze(1), False
        dim += 1
    out = call.func(value, q, dim, keepdim, **call.kwargs)
    if isinstance(q, Tensor) and q.dim() == 1:
        out = out.movedim(1, 0)  # the quantiles come first: the batch goes back in front
    return out


def _one_hot(call: BatchedCall) -> Any:
    """Zeros with a 1 scattered at each index, for the class count given (PyTorch's rule:
    the count cannot come from the data, which differs per sample)."""
    self = call.args[0]
    num_classes = call.args[1] if len(call.args) > 1 else call.kwargs.get("num_classes", -1)
    if self.dtype != pyaten.int64:
        raise RuntimeError("one_hot is only applicable to index tensor.")
    value = call.physical(self)
    shape = (*value.shape, num_classes)
    if value.numel() == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return value.new_empty(shape)
    if num_classes <= 0:
        raise RuntimeError("When vmap-ing torch.nn.functional.one_hot, please provide an "
                           "explicit positive num_classes argument.")
    return value.new_zeros(shape).scatter(-1, value.unsqueeze(-1), 1)


def _per_sample(call: BatchedCall) -> Any:
    """The per-sample loop on the whole operator, as PyTorch's fallback runs it (argwhere:
    its parts, nonzero, are refused; the loop's stack fails where the counts differ)."""
    return fallback(call).value


def _ctc_loss(call: BatchedCall) -> Any:
    """Lengths batched (each sample its own): the loop on the whole loss, as PyTorch's
    fallback (the composite reads the lengths' values); shared ones decompose, into the
    rule that folds the samples into the loss's batch."""
    if any(call.batched(x) for x in call.args[2:4]):
        return _per_sample(call)
    return NotImplemented


# Composite operators batched whole instead of decomposed (the matmul family's rule in the
# rule table does not see matmul: it decomposes before the Python key; the others' kernels
# read the data, which a BatchedTensor does not hold).
COMPOSITE_RULES = {
    "aten::linear": _linear, "aten::matmul": _matmul, "aten::isfinite": _elementwise,
    "aten::isreal": _elementwise, "aten::quantile": _quantile,
    "aten::quantile.scalar": _quantile, "aten::nanquantile": _quantile,
    "aten::nanquantile.scalar": _quantile, "aten::one_hot": _one_hot,
    "aten::argwhere": _per_sample, "aten::ctc_loss.Tensor": _ctc_loss,
}
