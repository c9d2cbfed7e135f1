"""Helpers several test files share: PyTorch's own YAML files, the dtype names, the
stand-ins for tensors and kernels that dispatcher tests call, and the one differential helper
(`assert_same`, `run_both`, `same_error`) that compares pyaten against PyTorch, with
`from_torch`/`to_pyaten` to hand both the same inputs.

Imported as `from _helpers import ...` (pytest puts `tests/` on sys.path).
"""

from __future__ import annotations

import functools
import importlib.util
import math
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import torch

import pyaten
from pyaten.dispatch.keys import backend_keyset_bits

# torchgen ships PyTorch's YAML files; found without importing torchgen (its import is slow).
_TORCHGEN = importlib.util.find_spec("torchgen")
TORCHGEN_PACKAGED = (
    Path(_TORCHGEN.origin).parent / "packaged" if _TORCHGEN else Path("torchgen-is-missing")
)
TORCH_NATIVE_YAML = TORCHGEN_PACKAGED / "ATen" / "native" / "native_functions.yaml"
TORCH_TAGS_YAML = TORCHGEN_PACKAGED / "ATen" / "native" / "tags.yaml"
TORCH_DERIVATIVES_YAML = TORCHGEN_PACKAGED / "autograd" / "derivatives.yaml"


@functools.cache
def torch_schemas() -> tuple[str, ...]:
    """Every `func:` schema string of PyTorch's native_functions.yaml, in file order."""
    return tuple(re.findall(r"^- func: (.*)$", TORCH_NATIVE_YAML.read_text(), re.MULTILINE))


# The twelve dtypes, by name (as in both `pyaten` and `torch`).
DTYPE_NAMES = (
    "bool", "uint8", "int8", "int16", "int32", "int64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
)
FLOAT_NAMES = ("float16", "bfloat16", "float32", "float64")
REAL_NAMES = DTYPE_NAMES[:10]


class FakeTensor:
    """The dispatcher only reads `_keyset`; this stands in for pyaten.core's Tensor."""

    __slots__ = ("_keyset", "device")

    def __init__(self, device: str = "cpu") -> None:
        self._keyset = backend_keyset_bits(device)
        self.device = device


def noop_kernel(*args, **kwargs) -> None:
    """A kernel that does nothing: for tests about where calls go, not what they compute."""
    return None


def dtype_name(d: object) -> str:
    """A torch or pyaten dtype's bare name: `torch.float32` and `pyaten.float32` -> "float32"."""
    return str(d).rpartition(".")[2]


def from_torch(t: torch.Tensor) -> pyaten.Tensor:
    """A torch tensor's values as a new pyaten tensor with the same strides (float16 and
    bfloat16 through float32, which holds them exactly; conjugate views resolved)."""
    if t.dtype in (torch.float16, torch.bfloat16):
        return pyaten.from_numpy(np.array(t.detach().float().numpy())).to(
            getattr(pyaten, dtype_name(t.dtype))
        )
    return pyaten.from_numpy(np.array(t.detach().resolve_conj().numpy()))


def to_pyaten(x: Any) -> Any:
    """A torch value as pyaten's: tensors and dtypes converted, lists, tuples and dicts
    (an OpInfo sample's args and kwargs) converted item by item, anything else as it is."""
    if isinstance(x, torch.Tensor):
        return from_torch(x)
    if isinstance(x, torch.dtype):
        return getattr(pyaten, dtype_name(x))
    if isinstance(x, (list, tuple)):
        return type(x)(to_pyaten(v) for v in x)
    if isinstance(x, dict):
        return {k: to_pyaten(v) for k, v in x.items()}
    return x


def outs(shape: tuple, dtype: str) -> tuple[pyaten.Tensor, torch.Tensor]:
    """An `out=` tensor in both libraries (resizable, unlike `from_numpy`'s)."""
    return (pyaten.zeros(shape, dtype=getattr(pyaten, dtype)),
            torch.zeros(shape, dtype=getattr(torch, dtype)))


def opinfo_samples(info: Any, dtype: torch.dtype) -> list:
    """An OpInfo's CPU sample inputs of `dtype` (the warnings making them raises silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(info.sample_inputs("cpu", dtype))


def sample_arguments(sample: Any) -> tuple[tuple, tuple, dict]:
    """An OpInfo sample's positional arguments for torch, the same for pyaten, and pyaten's
    keywords (torch's are `sample.kwargs`)."""
    theirs = (sample.input, *sample.args)
    return theirs, to_pyaten(theirs), to_pyaten(dict(sample.kwargs))


# ---- the differential helper: pyaten against PyTorch ---------------------------------------

# Default (rtol, atol) per result dtype; integers and bool compare exactly. Half types hold
# about 3 (bfloat16: 2) significant digits, so one rounding step apart is still "the same".
TOLERANCES = {
    "float16": (1e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
    "float32": (1e-5, 1e-5),
    "complex64": (1e-5, 1e-5),
    "float64": (1e-10, 1e-10),
    "complex128": (1e-10, 1e-10),
}


def to_numpy(x: Any) -> np.ndarray:
    """A pyaten or torch tensor's values as a NumPy array of the same dtype (bfloat16 as
    ml_dtypes.bfloat16; conjugate and negative views resolved)."""
    if isinstance(x, torch.Tensor):
        x = x.detach().resolve_conj().resolve_neg().cpu()
        if x.dtype == torch.bfloat16:
            return x.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return x.numpy(force=True)  # force: torch's gradients may be ZeroTensors
    if isinstance(x, pyaten.Tensor):
        return x.numpy(force=True)
    return np.asarray(x)


def assert_same(
    ours: Any,
    theirs: Any,
    rtol: float | None = None,
    atol: float | None = None,
    check_dtype: bool = True,
    *,
    strides: bool = False,
) -> None:
    """pyaten's result `ours` equals torch's `theirs`: for tensors the dtype, shape, device,
    values (NaN equal to NaN) and, with `strides=True`, strides; tuples and lists (named
    tuples included) element by element; Python numbers and dtypes by value and type.

    Floating values compare within TOLERANCES of the result dtype unless rtol/atol are given;
    integers and bools compare exactly. With check_dtype=False only the values are compared.
    """
    if isinstance(theirs, (tuple, list)) and not isinstance(theirs, torch.Size):
        assert isinstance(ours, (tuple, list)), (type(ours), type(theirs))
        assert len(ours) == len(theirs), (len(ours), len(theirs))
        for a, b in zip(ours, theirs):
            assert_same(a, b, rtol, atol, check_dtype, strides=strides)
        return
    if isinstance(theirs, torch.Tensor):
        _assert_same_tensor(ours, theirs, rtol, atol, check_dtype, strides)
    elif isinstance(theirs, torch.dtype):
        assert dtype_name(ours) == dtype_name(theirs), (ours, theirs)
    elif isinstance(theirs, torch.Size):
        assert tuple(ours) == tuple(theirs), (ours, theirs)
    elif isinstance(theirs, (bool, int, float, complex)):
        assert not check_dtype or type(ours) is type(theirs), (type(ours), type(theirs))
        if isinstance(theirs, (float, complex)) and not _both_nan(ours, theirs):
            r, a = TOLERANCES["float64"] if rtol is None else (rtol, rtol if atol is None else atol)
            assert abs(ours - theirs) <= a + r * abs(theirs), (ours, theirs)
        elif not _both_nan(ours, theirs):
            assert ours == theirs, (ours, theirs)
    else:
        assert ours == theirs, (ours, theirs)


def _assert_same_tensor(
    ours: Any,
    theirs: torch.Tensor,
    rtol: float | None,
    atol: float | None,
    check_dtype: bool,
    strides: bool,
) -> None:
    assert isinstance(ours, pyaten.Tensor), type(ours)
    name = dtype_name(theirs.dtype)
    if check_dtype:
        assert ours.dtype.name == name, (ours.dtype, theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape), (tuple(ours.shape), tuple(theirs.shape))
    assert str(ours.device) == str(theirs.device), (ours.device, theirs.device)
    if strides:
        assert tuple(ours.stride()) == tuple(theirs.stride()), (ours.stride(), theirs.stride())
    if theirs.device.type == "meta" or theirs.numel() == 0:
        return
    got, expected = to_numpy(ours), to_numpy(theirs)
    if got.dtype == ml_dtypes.bfloat16 or expected.dtype == ml_dtypes.bfloat16:
        got, expected = got.astype(np.float32), expected.astype(np.float32)
    if not check_dtype:
        name = np.result_type(got.dtype, expected.dtype).name
        got, expected = got.astype(name), expected.astype(name)
    if name not in TOLERANCES:
        np.testing.assert_array_equal(got, expected)
        return
    if rtol is None:
        rtol, atol = TOLERANCES[name] if atol is None else (TOLERANCES[name][0], atol)
    elif atol is None:
        atol = rtol
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)


def _both_nan(a: object, b: object) -> bool:
    def is_nan(x: object) -> bool:
        return isinstance(x, (float, complex)) and (
            math.isnan(x.real) or math.isnan(x.imag) if isinstance(x, complex) else math.isnan(x)
        )

    return is_nan(a) and is_nan(b)


def error_kind(error: BaseException) -> type:
    """The builtin class an error is compared by: torch's own subclasses (`_LinAlgError`, ...)
    count as the builtin they derive from."""
    for kind in (IndexError, ValueError, TypeError, NotImplementedError, RuntimeError):
        if isinstance(error, kind):
            return kind
    return type(error)


def error_text(error: BaseException) -> str:
    """An error's message with torch's module name spelled as ours."""
    return str(error).replace("torch.", "pyaten.")


def run_both(
    fn_ours: Callable[[], Any], fn_theirs: Callable[[], Any], *, message: bool = True
) -> tuple[Any, Any] | None:
    """Call both (warnings silenced). When torch returns, return (ours, theirs); when torch
    raises, assert pyaten raises the same kind of error with the same message (unless
    message=False) and return None."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            theirs = fn_theirs()
        except Exception as expected:  # noqa: BLE001 - whatever torch raises must be mirrored
            _assert_raises_like(fn_ours, expected, message)
            return None
        return fn_ours(), theirs


def same_error(
    fn_ours: Callable[[], Any], fn_theirs: Callable[[], Any], *, message: bool = True
) -> None:
    """Both raise, with the same kind of error and (unless message=False) the same message."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = fn_theirs()
        except Exception as expected:  # noqa: BLE001 - the raise is what we compare
            _assert_raises_like(fn_ours, expected, message)
            return
    pytest.fail(f"torch did not raise; it returned {result!r}")


def _assert_raises_like(fn_ours: Callable[[], Any], expected: Exception, message: bool) -> None:
    try:
        ours = fn_ours()
    except Exception as got:  # noqa: BLE001
        assert error_kind(got) is error_kind(expected), (repr(got), repr(expected))
        if message:
            # both spelled ours: pyaten's legacy type strings read 'torch.FloatTensor' too
            assert error_text(got) == error_text(expected), (str(got), str(expected))
        return
    pytest.fail(f"torch raised {expected!r}; pyaten returned {ours!r}")


def assert_same_outcome(
    fn_ours: Callable[[], Any],
    fn_theirs: Callable[[], Any],
    rtol: float | None = None,
    atol: float | None = None,
    check_dtype: bool = True,
    *,
    strides: bool = False,
    message: bool = True,
) -> None:
    """`run_both`, then `assert_same` on the results when torch did not raise."""
    pair = run_both(fn_ours, fn_theirs, message=message)
    if pair is not None:
        assert_same(*pair, rtol, atol, check_dtype, strides=strides)


def compare_samples(ours: Callable[..., Any], theirs: Callable[..., Any], samples: Any,
                    rtol: float | None = None, atol: float | None = None) -> None:
    """`ours(input, *args, **kwargs)` against `theirs` on each OpInfo sample (pyaten gets the
    sample's tensors converted): equal results, or the same error."""
    for sample in samples:
        args = [to_pyaten(a) for a in sample.args]
        kwargs = {k: to_pyaten(v) for k, v in sample.kwargs.items()}
        pair = run_both(
            lambda s=sample, a=args, k=kwargs: ours(to_pyaten(s.input), *a, **k),
            lambda s=sample: theirs(s.input, *s.args, **s.kwargs))
        if pair is not None:
            assert_same(*pair, rtol=rtol, atol=atol)
