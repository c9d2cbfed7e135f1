"""FunctionalTensorWrapper: a tensor whose key set holds Functionalize, wrapping its value.

Note: the wrapper on the Functionalize key
    PyTorch's C++ FunctionalTensorWrapper, in Python: a `Tensor` whose key set is its value's
    plus Functionalize (less the Python and functorch transform keys, as ATen's constructor
    removes them), so every
    operator on it reaches the Functionalize key's kernel (key.py) after autograd and
    ADInplaceOrView. It holds `elem`, its current value, which nobody writes, and shares a
    `FunctionalStorage` (the base's value and the writes not yet applied) with its views; the
    state changes (`replace_`, `commit_update`, `sync`) are the ones the mode's
    `FunctionalTensor` makes (Note: functional storage and lazy view regeneration, in
    wrapper.py). Its own storage holds no data: it only reports the value's geometry.

    The wrapper never requires grad: functionalization runs its calls on the values with
    autograd on (key.py), so the values carry the graph, as in `torch.func.functionalize`.
"""

from __future__ import annotations

import threading
from typing import Any

from pyaten._C import _disabled_torch_function_impl
from pyaten.core.tensor import Tensor, make_dataless
from pyaten.core.views import storage_nbytes_needed
from pyaten.dispatch.keys import functionality_bit
from pyaten.dispatch.python_key import PYTHON_KEYS
from pyaten.native.ops_handles import aten

from .wrapper import FunctionalStorage, FunctionalValue, ViewMeta

__all__ = ["FunctionalTensorWrapper", "FUNCTIONALIZE_BIT", "GRAD_ABOVE"]

FUNCTIONALIZE_BIT = functionality_bit("Functionalize")


class _GradAbove(threading.local):
    """Whether a wrapper was made a leaf that requires grad on this thread (a transform
    inside functionalize, `functionalize(grad(f))`): autograd above the key then matters."""

    seen: bool = False


GRAD_ABOVE = _GradAbove()
# Keys of the value a wrapper does not carry, as ATen's constructor drops them: the Python
# keys and functorch's transform keys (c10::functorch_transforms_ks).
_DROPPED_KEYS = PYTHON_KEYS | functionality_bit("FuncTorchBatched") | functionality_bit(
    "FuncTorchVmapMode") | functionality_bit("Batched") | functionality_bit(
    "VmapMode") | functionality_bit("FuncTorchGradWrapper")
_new = object.__new__
_LOCAL_SCALAR_DENSE = aten._local_scalar_dense.default


class FunctionalTensorWrapper(FunctionalValue, Tensor):
    """A tensor on the Functionalize key (Note: the wrapper on the Functionalize key)."""

    # Only the ATen calls matter to functionalization: the public API runs as on a tensor.
    __torch_function__ = _disabled_torch_function_impl

    @staticmethod
    def __new__(cls, elem: Tensor, storage: FunctionalStorage,
                view_metas: tuple[ViewMeta, ...] = (),
                generation: int = 0) -> FunctionalTensorWrapper:
        # the data lives in `elem`
        t = make_dataless(
            cls, elem._sizes, elem._strides, elem._offset, elem._dtype, elem._device,
            (elem._keyset & ~_DROPPED_KEYS) | FUNCTIONALIZE_BIT,
            storage_nbytes_needed(elem._sizes, elem._strides, elem._offset,
                                  elem._dtype.itemsize))
        t.elem = elem
        t.functional_storage = storage
        t.view_metas = view_metas
        t.generation = generation
        return t

    def __init__(self, elem: Tensor, storage: FunctionalStorage,
                 view_metas: tuple[ViewMeta, ...] = (), generation: int = 0) -> None:
        pass  # __new__ set everything

    def __repr__(self) -> str:
        from .key import _functionalize_sync

        _functionalize_sync(self)
        return f"_to_functional_tensor({self.elem!r})"

    @property
    def requires_grad(self) -> bool:
        return Tensor.requires_grad.fget(self)

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        Tensor.requires_grad.fset(self, value)
        if value:
            GRAD_ABOVE.seen = True

    # The value lives in `elem`: item() goes through the key; tolist() refuses, as torch's.
    def item(self) -> Any:
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to "
                               "Scalar")
        return _LOCAL_SCALAR_DENSE(self)

    def tolist(self) -> object:
        # torch reads the wrapper's own storage, which holds nothing
        raise RuntimeError("tolist() shouldn't be called on a tensor with unallocated storage")
