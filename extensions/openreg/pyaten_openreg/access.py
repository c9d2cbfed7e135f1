"""How openreg's kernels reach memory: NumPy views of tensors inside their pool Buffers.

`host_array(t)` is the writable NumPy view of an openreg tensor's elements inside its
`Buffer` (pyaten_openreg.memory); a CPU tensor among a kernel's arguments (a 0-dim scalar, or
the other side of a copy) is read with `numpy()`. On a real accelerator this module would
hold the device pointers handed to launched kernels.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any

import ml_dtypes
import numpy as np

import pyaten
from pyaten_openreg import memory

NUMPY_DTYPES = {
    pyaten.bool: np.dtype(np.bool_),
    pyaten.uint8: np.dtype(np.uint8),
    pyaten.int8: np.dtype(np.int8),
    pyaten.int16: np.dtype(np.int16),
    pyaten.int32: np.dtype(np.int32),
    pyaten.int64: np.dtype(np.int64),
    pyaten.float16: np.dtype(np.float16),
    pyaten.bfloat16: np.dtype(ml_dtypes.bfloat16),
    pyaten.float32: np.dtype(np.float32),
    pyaten.float64: np.dtype(np.float64),
    pyaten.complex64: np.dtype(np.complex64),
    pyaten.complex128: np.dtype(np.complex128),
}
REDUCED = (pyaten.float16, pyaten.bfloat16)
FLOAT32 = np.dtype(np.float32)


def numpy_dtype(dtype: Any) -> np.dtype:
    found = NUMPY_DTYPES.get(dtype)
    if found is None:
        raise TypeError(f"openreg: dtype {dtype} is not supported on this device")
    return found


def host_array(t: Any) -> np.ndarray:
    """The writable NumPy view of `t`'s elements (an openreg tensor, or a CPU one)."""
    data = t.untyped_storage().data
    if data.__class__ is not memory.Buffer:
        return t.numpy(force=True)  # a CPU tensor: a wrapped scalar, or one side of a copy
    # Views are cached on the buffer by geometry: the bytes of a Buffer never move.
    key = (t.shape, t.stride(), t.storage_offset(), t.dtype)
    view = data.views.get(key)
    if view is None:
        view = _make_view(data, *key)
    return view


_BYTE_STRIDES: dict[tuple, tuple] = {}  # (element strides, itemsize) -> byte strides


def _make_view(data: memory.Buffer, shape: tuple, strides: tuple, offset: int,
               dtype: Any) -> np.ndarray:
    np_dtype = NUMPY_DTYPES.get(dtype)
    if np_dtype is None:
        np_dtype = numpy_dtype(dtype)  # raises for an unsupported dtype
    size = np_dtype.itemsize
    byte_strides = _BYTE_STRIDES.get((strides, size))
    if byte_strides is None:
        byte_strides = tuple([s * size for s in strides])
        if len(_BYTE_STRIDES) < 4096:
            _BYTE_STRIDES[(strides, size)] = byte_strides
    block = data.bytes()
    byte_offset = offset * size
    if byte_offset > block.nbytes and 0 in shape:
        byte_offset = 0  # an empty view may point past the end; NumPy refuses it
    view = np.ndarray(shape, np_dtype, block, byte_offset, byte_strides)
    views = data.views
    if len(views) < 64:
        views[(shape, strides, offset, dtype)] = view
    return view


def compute_dtype(dtype: Any) -> np.dtype:
    """The NumPy dtype a loop computes in: float32 for float16/bfloat16."""
    return FLOAT32 if dtype in REDUCED else numpy_dtype(dtype)


_THREAD = threading.local()


def quiet(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """`fn(*args)` with NumPy's floating-point warnings off (PyTorch's loops raise none).

    One context per thread holds `np.errstate(all="ignore")`; running in it costs less than
    entering a new errstate on every call.
    """
    context = getattr(_THREAD, "context", None)
    if context is None:
        context = _THREAD.context = contextvars.copy_context()
        context.run(np.errstate(all="ignore").__enter__)
    try:
        return context.run(fn, *args, **kwargs)
    except RuntimeError as error:
        if "already entered" not in str(error):
            raise
        with np.errstate(all="ignore"):  # a nested call (a kernel inside a kernel)
            return fn(*args, **kwargs)


def store(target: np.ndarray, value: Any) -> None:
    quiet(np.copyto, target, value, casting="unsafe")


def device_of(tensors: Any) -> Any:
    return next(t.device for t in tensors if t.device.type == "openreg")
