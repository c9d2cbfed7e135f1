"""Conversions: `Tensor.type` (the legacy type strings), `type_as` and `chalf`. The sparse
conversions (`to_sparse`, `to_sparse_csr`, ..., `to_dense`) are in kernels/sparse.py.

Where PyTorch defines each:
- `type_as` is an ATen operator (CompositeImplicitAutograd), so it is declared in
  native_functions.yaml and dispatches; its kernel is here.
- `Tensor.type` and the dtype shorthands (`float double half bfloat16 int long short char byte
  bool cfloat cdouble chalf`) are bound by hand in PyTorch's C++ (python_variable_methods.cpp):
  they are not operators, they parse their arguments and call `to`. pyaten attaches them after
  the generated API (`attach_conversions`); the shorthands other than `chalf` live beside
  `Tensor.to` in kernels/copy.py.
"""

from __future__ import annotations

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor
from pyaten.native.kernels.copy import tensor_to
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native

# --- type_as -------------------------------------------------------------------------------


@native
def type_as(self: Tensor, other: Tensor) -> Tensor:
    return _aten().to.dtype_layout(self, dtype=other.dtype, device=other.device)


# --- Tensor.type ---------------------------------------------------------------------------

# The legacy tensor type names: `pyaten.FloatTensor` is a float32 CPU tensor.
_TYPE_NAMES = {d.scalar_name + "Tensor": d for d in (
    dt.float32, dt.float64, dt.float16, dt.bfloat16, dt.uint8, dt.int8, dt.int16, dt.int32,
    dt.int64, dt.bool, dt.complex64, dt.complex128, dt.complex32,
)}


def type_string(t: Tensor) -> str:
    """`Tensor.type()`'s answer, in PyTorch's spelling, which programs compare and pass back:
    `torch.FloatTensor`, `torch.meta.LongTensor`."""
    device = "" if t.device.type == "cpu" else t.device.type + "."
    return f"torch.{device}{t.dtype.scalar_name}Tensor"


def _dtype_of_type_string(text: str):
    for prefix in ("pyaten.", "torch."):
        if text.startswith(prefix):
            found = _TYPE_NAMES.get(text[len(prefix):])
            if found is not None:
                return found
    raise ValueError(f"invalid type: '{text}'")


def tensor_type(self: Tensor, dtype=None, non_blocking: bool = False, **kwargs):
    """`t.type()` -> the type string; `t.type(dtype_or_type_string)` -> `t` converted (itself
    when it already has that type)."""
    if dtype is None:
        if non_blocking or kwargs:
            return self
        return type_string(self)
    if isinstance(dtype, str):
        dtype = _dtype_of_type_string(dtype)
    elif isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), dt.dtype):
        dtype = dtype.dtype  # a legacy type: pyaten.LongTensor (pyaten/legacy_types.py)
    elif not isinstance(dtype, dt.dtype):
        raise TypeError("dtype must be a type, str, or dtype object")
    memory_format = kwargs.pop("memory_format", None)
    if kwargs:
        name = next(iter(kwargs))
        raise TypeError(f"type() got an unexpected keyword argument '{name}'")
    return tensor_to(self, dtype, non_blocking=non_blocking, memory_format=memory_format)


def _chalf(self: Tensor, memory_format=None) -> Tensor:
    return tensor_to(self, dt.complex32, memory_format=memory_format)


def attach_conversions() -> None:
    """Install `Tensor.type` and `Tensor.chalf` (after the generated API)."""
    tensor_type.__qualname__ = "Tensor.type"
    _chalf.__name__ = "chalf"
    _chalf.__qualname__ = "Tensor.chalf"
    Tensor.type = tensor_type
    Tensor.chalf = _chalf
