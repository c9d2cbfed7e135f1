"""Differential helpers shared by the test_ops_{shape,copy,factory,reduce,linalg,index} files:
convert tensors between pyaten and torch, compare results and errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import torch
from _helpers import (  # noqa: F401 - re-exported
    DTYPE_NAMES,
    FLOAT_NAMES,
    REAL_NAMES,
    assert_same,
    dtype_name,
    same_error,
)

import pyaten


def pdt(name: str):
    return getattr(pyaten, name)


def tdt(name: str):
    return getattr(torch, name)


def make_pair(shape, dtype: str = "float32", seed: int = 0, low: int = -5, high: int = 6):
    """The same values as a torch tensor and a pyaten tensor (contiguous)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(low, high, size=shape)
    if dtype == "bool":
        array = values > 0
    elif dtype in ("complex64", "complex128"):
        array = (values + 1j * rng.integers(low, high, size=shape)).astype(dtype)
    elif dtype == "bfloat16":
        array = values.astype(ml_dtypes.bfloat16)
    elif dtype.startswith("float"):
        array = (values + rng.random(size=shape).round(2)).astype(dtype)
    else:
        array = values.astype(dtype) if dtype != "uint8" else np.abs(values).astype(dtype)
    t = to_torch_array(array)
    p = pyaten.from_numpy(np.array(array, copy=True, order="C"))
    # fresh row-major tensors (NumPy gives empty arrays zero strides)
    fresh_t = torch.empty(t.shape, dtype=t.dtype).copy_(t)
    fresh_p = pyaten.empty(tuple(p.shape), dtype=p.dtype).copy_(p)
    return fresh_t, fresh_p


def to_torch_array(array: np.ndarray) -> torch.Tensor:
    if array.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(array.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(np.array(array, copy=True, order="C"))


# One differential helper for the whole suite (tests/_helpers.py); the old names kept for
# the test_ops_* files that import them from here.
assert_same_error = same_error
