"""Conversions: `Tensor.type` (the legacy type strings), `type_as`, `chalf`, and the sparse
conversions (`to_sparse`, `to_sparse_csr`, ...), which refuse with a clear error.

Where PyTorch defines each:
- `type_as` and the `to_sparse*` family are ATen operators (CompositeImplicitAutograd), so they
  are declared in native_functions.yaml and dispatch; their kernels are here.
- `Tensor.type` and the dtype shorthands (`float double half bfloat16 int long short char byte
  bool cfloat cdouble chalf`) are bound by hand in PyTorch's C++ (python_variable_methods.cpp):
  they are not operators, they parse their arguments and call `to`. pyaten attaches them after
  the generated API (`attach_conversions`); the shorthands other than `chalf` live beside
  `Tensor.to` in kernels/copy.py.

Note: sparse layouts. pyaten has the strided layout only. The sparse conversions exist (so code
that calls them gets PyTorch's schema and argument errors) and raise `NotImplementedError`
naming the layout they would produce.
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


# --- the sparse conversions ----------------------------------------------------------------


def _no_sparse(op: str, layout: str) -> NotImplementedError:
    return NotImplementedError(
        f"{op}: pyaten does not implement the {layout} layout (only strided tensors exist); "
        "see docs/factories.md"
    )


def _layout_name(layout) -> str:
    return "sparse_coo" if layout is None else getattr(layout, "name", str(layout))


@native
def to_sparse_sparse_dim(self: Tensor, sparse_dim: int) -> Tensor:
    raise _no_sparse("to_sparse", "sparse_coo")


@native
def to_sparse(self: Tensor, layout=None, blocksize=None, dense_dim=None) -> Tensor:
    raise _no_sparse("to_sparse", _layout_name(layout))


@native
def to_sparse_csr(self: Tensor, dense_dim=None) -> Tensor:
    raise _no_sparse("to_sparse_csr", "sparse_csr")


@native
def to_sparse_csc(self: Tensor, dense_dim=None) -> Tensor:
    raise _no_sparse("to_sparse_csc", "sparse_csc")


@native
def to_sparse_bsr(self: Tensor, blocksize: tuple, dense_dim=None) -> Tensor:
    raise _no_sparse("to_sparse_bsr", "sparse_bsr")


@native
def to_sparse_bsc(self: Tensor, blocksize: tuple, dense_dim=None) -> Tensor:
    raise _no_sparse("to_sparse_bsc", "sparse_bsc")


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
