"""Differential helpers shared by the test_ops_{shape,copy,factory,reduce,linalg,index} files:
convert tensors between pyaten and torch, compare results and errors."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest
import torch
from _helpers import DTYPE_NAMES, FLOAT_NAMES, REAL_NAMES, dtype_name  # noqa: F401 - re-exported

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


def torch_numpy(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.detach().numpy()


def assert_same(p, t, *, strides: bool = False, rtol: float | None = None) -> None:
    """pyaten result `p` equals torch result `t`: type, dtype, shape, values (and strides)."""
    if isinstance(t, (tuple, list)):
        assert len(p) == len(t)
        for a, b in zip(p, t):
            assert_same(a, b, strides=strides, rtol=rtol)
        return
    assert isinstance(p, pyaten.Tensor), type(p)
    assert p.dtype.name == dtype_name(t.dtype), (p.dtype, t.dtype)
    assert tuple(p.shape) == tuple(t.shape), (tuple(p.shape), tuple(t.shape))
    assert str(p.device) == str(t.device)
    if strides:
        assert tuple(p.stride()) == tuple(t.stride()), (p.stride(), t.stride())
    if t.device.type == "meta" or t.numel() == 0:
        return
    expected = torch_numpy(t)
    got = p.numpy()
    if expected.dtype == ml_dtypes.bfloat16:
        expected, got = expected.astype(np.float32), got.astype(np.float32)
    if rtol is None:
        rtol = {np.float16: 1e-3, np.float32: 1e-5, np.complex64: 1e-5}.get(
            expected.dtype.type, 1e-2 if t.dtype == torch.bfloat16 else 1e-12
        )
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def outcome(fn):
    """('ok', result) or ('error', exception) of calling fn, with warnings recorded."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return "ok", fn(), caught
        except Exception as error:  # noqa: BLE001 - we compare whatever was raised
            return "error", error, caught


def assert_same_error(p_fn, t_fn, *, message: bool = True) -> None:
    """Both raise, with the same exception kind and (by default) the same message text."""
    with pytest.raises(Exception) as t_info:
        t_fn()
    with pytest.raises(Exception) as p_info:
        p_fn()
    t_err, p_err = t_info.value, p_info.value
    assert _kind(p_err) == _kind(t_err), (repr(p_err), repr(t_err))
    if message:
        expected = str(t_err).splitlines()[0].replace("torch.", "pyaten.")
        assert str(p_err).splitlines()[0] == expected, (str(p_err), str(t_err))


def _kind(error: BaseException) -> type:
    for kind in (IndexError, ValueError, TypeError, NotImplementedError, RuntimeError):
        if isinstance(error, kind):
            return kind
    return type(error)
