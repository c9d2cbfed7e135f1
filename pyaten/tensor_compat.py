"""`Tensor` methods PyTorch programs call that are Python in PyTorch too: `cuda`,
`new_tensor`, `apply_`, `pin_memory`, `is_pinned`, `is_inference`, NumPy's `__array_wrap__`
(docs/cuda-and-compat.md). `install()` attaches them after the generated API.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from pyaten.core.creation import from_numpy, tensor
from pyaten.core.device import as_device, check_compiled
from pyaten.core.device import device as device_class
from pyaten.core.tensor import Tensor
from pyaten.dispatch.keys import functionality_bit

__all__ = ["install"]

_NO_ACCELERATOR = "Cannot access accelerator device when none is available."
# PyTorch's inference tensors carry neither ADInplaceOrView nor an autograd key.
_AD_INPLACE_OR_VIEW = functionality_bit("ADInplaceOrView")


def cuda(self: Tensor, device: Any = None, non_blocking: bool = False,
         memory_format: Any = None) -> Tensor:
    """A copy on the CUDA device (`self` when it is already there); this build has none, so
    it raises PyTorch's AssertionError (a bare index: its RuntimeError)."""
    if device is None:
        target = check_compiled(device_class("cuda"))
    elif isinstance(device, int) and not isinstance(device, bool):
        try:
            target = check_compiled(device_class("cuda", device))
        except AssertionError:
            raise RuntimeError(_NO_ACCELERATOR) from None
    else:
        target = device_class(device) if isinstance(device, str) else device
        if not isinstance(target, device_class) or target.type != "cuda":
            raise RuntimeError("Invalid device, must be cuda device")
        check_compiled(target)
    options: dict[str, Any] = {"non_blocking": non_blocking}
    if memory_format is not None:
        options["memory_format"] = memory_format
    return self.to(target, **options)


def new_tensor(self: Tensor, data: Any, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, layout: Any = None) -> Tensor:
    """A new tensor holding `data`, with `self`'s dtype and device unless given."""
    target_dtype = self.dtype if dtype is None else dtype
    target_device = self.device if device is None else as_device(device)
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use "
            "sourceTensor.detach().clone() or sourceTensor.detach().clone().requires_grad_(True),"
            " rather than tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=2
        )
        result = data.detach().to(dtype=target_dtype, device=target_device, copy=True)
        return result.requires_grad_(requires_grad) if requires_grad else result
    return tensor(data, dtype=target_dtype, device=target_device, requires_grad=requires_grad)


def apply_(self: Tensor, callable: Callable[[Any], Any]) -> Tensor:  # noqa: A002 - torch's
    """Replace each element by `callable(element)`, in place (CPU tensors; slow, as in
    PyTorch: one Python call per element)."""
    if self.requires_grad:
        raise RuntimeError(
            "Can't call apply_() on Variable that requires grad. Use var.detach().apply_() "
            "instead."
        )
    if not builtins_callable(callable):
        raise TypeError(f"'{type(callable).__name__}' object is not callable")
    if self.device.type == "meta":
        return self
    if self.device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    convert = _element_converter(self)
    values = [convert(callable(v)) for v in self.detach().reshape(-1).tolist()]
    replacement = tensor(values, dtype=self.dtype).reshape(self.shape)
    from pyaten.autograd.grad_mode import no_grad

    with no_grad():
        self.copy_(replacement)
    return self


builtins_callable = callable


def _element_converter(t: Tensor) -> Callable[[Any], Any]:
    # PyTorch converts the callable's result with the tensor's C type: a non-number raises
    # "must be real number, not <type>".
    if t.dtype.name == "bool":
        def to_bool(value: Any) -> bool:
            _check_number(value)
            return bool(value)
        return to_bool
    if t.dtype.is_complex:
        def to_complex(value: Any) -> complex:
            _check_number(value, complex_ok=True)
            return complex(value)
        return to_complex
    if t.dtype.is_floating_point:
        def to_float(value: Any) -> float:
            _check_number(value)
            return float(value)
        return to_float

    def to_int(value: Any) -> int:
        _check_number(value)
        return int(value)
    return to_int


def _check_number(value: Any, complex_ok: bool = False) -> None:
    allowed = (int, float, bool, complex, np.number, np.bool_) if complex_ok else \
        (int, float, bool, np.integer, np.floating, np.bool_)
    if not isinstance(value, allowed):
        raise TypeError(f"must be real number, not {type(value).__name__}")


def pin_memory(self: Tensor, device: Any = None) -> Tensor:
    """Page-locked memory needs an accelerator; this build has none (PyTorch's error)."""
    raise RuntimeError(_NO_ACCELERATOR)


def is_pinned(self: Tensor, device: Any = None) -> bool:
    """False: no memory is page-locked without an accelerator."""
    return False


def is_inference(self: Tensor) -> bool:
    """Whether this is an inference tensor: as PyTorch, one whose key set lacks
    ADInplaceOrView (pyaten's tensors made under inference_mode keep their keys, so False)."""
    return not self._keyset & _AD_INPLACE_OR_VIEW


def __array_wrap__(self: Tensor, array: np.ndarray, context: Any = None,  # noqa: N807
                   return_scalar: bool = False) -> Tensor:
    """NumPy's ufuncs on a tensor return a tensor (`np.exp(t)`), as PyTorch's: a bool result
    becomes uint8, as there."""
    if array.dtype == np.bool_:
        array = array.astype(np.uint8)
    return from_numpy(array)


def install() -> None:
    """Attach the methods to `Tensor` (after the generated API)."""
    for fn in (cuda, new_tensor, apply_, pin_memory, is_pinned, is_inference):
        fn.__qualname__ = f"Tensor.{fn.__name__}"
        setattr(Tensor, fn.__name__, fn)
    Tensor.__array_wrap__ = __array_wrap__
    Tensor.__array_priority__ = 1000
