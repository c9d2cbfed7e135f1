"""What generated bindings and wrappers need from the tensor core, in one small adapter.

The argument parser and the structured wrappers reach `pyaten.core` only through these names,
so a change in core touches one file.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pyaten.core import creation as _creation
from pyaten.core import dtypes as _dtypes
from pyaten.core import sparse as _sparse
from pyaten.core.creation import wrapped_scalar_tensor
from pyaten.core.device import CPU as _CPU
from pyaten.core.generator import Generator
from pyaten.core.storage import Storage
from pyaten.core.tensor import Tensor, channels_last, contiguous_format, preserve_format, strided
from pyaten.core.views import empty_tensor

__all__ = [
    "Tensor",
    "wrapped_number",
    "empty_tensor",
    "is_layout",
    "is_memory_format",
    "is_generator",
    "dtype_by_schema_name",
    "memory_format_by_name",
    "layout_by_name",
    "set_requires_grad",
]

_SPARSE_LAYOUTS = (_sparse.sparse_coo, *_sparse.COMPRESSED_LAYOUTS)
_LAYOUTS = {"strided": strided, **{t.name: t for t in _SPARSE_LAYOUTS}}
_MEMORY_FORMATS = {
    "contiguous_format": contiguous_format,
    "channels_last": channels_last,
    "preserve_format": preserve_format,
}
_MEMORY_FORMAT_OBJECTS = frozenset(id(v) for v in _MEMORY_FORMATS.values())
_LAYOUT_OBJECTS = frozenset(id(v) for v in _LAYOUTS.values())

# Schema spellings of ScalarType defaults (`ScalarType dtype=long`) -> dtype objects.
_SCHEMA_DTYPES = {
    "bool": _dtypes.bool,
    "byte": _dtypes.uint8,
    "uint8": _dtypes.uint8,
    "char": _dtypes.int8,
    "int8": _dtypes.int8,
    "short": _dtypes.int16,
    "int16": _dtypes.int16,
    "int": _dtypes.int32,
    "int32": _dtypes.int32,
    "long": _dtypes.int64,
    "int64": _dtypes.int64,
    "half": _dtypes.float16,
    "float16": _dtypes.float16,
    "bfloat16": _dtypes.bfloat16,
    "float": _dtypes.float32,
    "float32": _dtypes.float32,
    "double": _dtypes.float64,
    "float64": _dtypes.float64,
    "cfloat": _dtypes.complex64,
    "complex64": _dtypes.complex64,
    "cdouble": _dtypes.complex128,
    "complex128": _dtypes.complex128,
}


# Python scalar type -> the dtype of its wrapped-number tensor (PyTorch's rule).
_WRAPPED_DTYPES = {
    bool: _dtypes.bool,
    int: _dtypes.int64,
    float: _dtypes.float64,
    complex: _dtypes.complex128,
}


def wrapped_number(value: Any) -> Tensor:
    """A Python number passed where a Tensor is expected: a 0-dim "wrapped number" tensor
    (promotes like a Python scalar). Built directly for bool/int/float/complex, the per-call
    case; other numbers go through core's `wrapped_scalar_tensor`."""
    dtype = _WRAPPED_DTYPES.get(value.__class__)
    if dtype is None:
        return wrapped_scalar_tensor(value)
    t = Tensor._make(Storage._fresh(dtype.itemsize, _CPU), (), (), 0, dtype, _CPU)
    view = np.ndarray((), dtype.numpy, t._storage.data)
    try:
        view[()] = value
    except OverflowError:
        return wrapped_scalar_tensor(value)  # core raises PyTorch's error for it
    t._np = view
    t._wrapped_number = True
    return t


def is_layout(obj: object) -> bool:
    return id(obj) in _LAYOUT_OBJECTS


def is_memory_format(obj: object) -> bool:
    return id(obj) in _MEMORY_FORMAT_OBJECTS


def is_generator(obj: object) -> bool:
    return isinstance(obj, Generator)


def dtype_by_schema_name(name: str) -> _dtypes.dtype:
    try:
        return _SCHEMA_DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown ScalarType default '{name}' in a schema") from None


def memory_format_by_name(name: str) -> object:
    try:
        return _MEMORY_FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown MemoryFormat default '{name}' in a schema") from None


def layout_by_name(name: str) -> object:
    try:
        return _LAYOUTS[name]
    except KeyError:
        raise ValueError(f"unknown Layout default '{name}' in a schema") from None


def set_requires_grad(result: object) -> None:
    """`requires_grad=True` on a factory call."""
    if isinstance(result, Tensor):
        _creation.set_requires_grad(result)
