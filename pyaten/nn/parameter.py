"""`nn.Parameter` and `nn.Buffer`: tensors a Module registers on attribute assignment.

A Parameter is a real Tensor subclass sharing its data's storage (built by
`Tensor._make_subclass`, as PyTorch builds it); its `__torch_function__` is
`_disabled_torch_function_impl`, so calls on it keep the fast paths and return plain tensors. A
Buffer is marked, not subclassed: `Buffer(t)` returns a detached plain tensor carrying a
`persistent` flag, and `isinstance(x, Buffer)` reads that mark, as in PyTorch.
"""

from __future__ import annotations

from pyaten.core.tensor import Tensor
from pyaten.core.torch_function import _disabled_torch_function_impl

__all__ = ["Buffer", "Parameter"]


def _empty() -> Tensor:
    from pyaten.core.device import CPU
    from pyaten.core.dtypes import get_default_dtype
    from pyaten.core.views import empty_tensor

    return empty_tensor((0,), get_default_dtype(), CPU)


class Parameter(Tensor):
    """A tensor that is a module parameter: `requires_grad` is True unless told otherwise."""

    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = _empty()
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter(): data must be a Tensor, not {type(data).__name__}"
            )
        return Tensor._make_subclass(cls, data, requires_grad)

    def __repr__(self) -> str:
        # printed as a plain tensor (PyTorch's printing treats Parameter as one)
        plain = Tensor._make_subclass(Tensor, self, self.requires_grad)
        return "Parameter containing:\n" + repr(plain)

    __str__ = __repr__

    def __deepcopy__(self, memo: dict) -> Parameter:
        found = memo.get(id(self))
        if found is None:
            found = type(self)(self.data.clone(), self.requires_grad)
            memo[id(self)] = found
        return found

    def __reduce_ex__(self, protocol: int) -> tuple:
        return (_rebuild_parameter, (self.data, self.requires_grad))


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class _BufferMeta(type):
    """`isinstance(t, Buffer)` is true for the plain tensors `Buffer(...)` returned."""

    def __instancecheck__(cls, instance: object) -> bool:
        if cls is Buffer and isinstance(instance, Tensor):
            return bool(instance.__dict__.get("_is_buffer", False))
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """Marks a tensor as a module buffer; `persistent=False` keeps it out of state_dict."""

    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Tensor:
        if data is None:
            data = _empty()
        marked = data.detach().requires_grad_(data.requires_grad)
        marked.persistent = persistent
        marked._is_buffer = True
        return marked
