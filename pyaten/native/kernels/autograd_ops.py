"""Operators autograd is built on: `detach`, `detach_` (and the backward helpers' kernels).

`detach` returns an alias of the same storage and version counter with no autograd
history; `detach_` drops the history of the tensor itself (refused on a view, as PyTorch).
"""

from __future__ import annotations

from pyaten.core.tensor import Tensor
from pyaten.native.registry import native


@native
def detach(self: Tensor) -> Tensor:
    out = Tensor._make(
        self._storage, self._sizes, self._strides, self._offset, self._dtype, self._device
    )
    out._version_counter = self._version_counter
    out._keyset = self._keyset
    wrap = getattr(self.__class__, "_wrap_view", None)  # a quantized tensor stays quantized
    return out if wrap is None else wrap(self, out)


@native
def detach_(self: Tensor) -> Tensor:
    if self._base is not None:
        raise RuntimeError(
            "Can't detach views in-place. Use detach() instead. If you are using "
            "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as "
            "True, gradients are views of DDP buckets, and hence detach_() cannot be called on "
            "these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
            "function in torch/optim/optimizer.py as the solution."
        )
    self.grad_fn = None
    self.output_nr = 0
    self._requires_grad = False
    return self
