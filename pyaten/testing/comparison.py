"""`pyaten.testing.assert_close`: PyTorch's `torch.testing.assert_close`, with its messages.

    pyaten.testing.assert_close(actual, expected)              # dtype-based tolerances
    pyaten.testing.assert_close(a, b, rtol=0.1, atol=0.1)      # both or neither

Inputs pair up as PyTorch pairs them: None with None, bools, Python (and NumPy) numbers,
tensors (or NumPy arrays) with tensors of a related type, and sequences and mappings item by
item ("The failure occurred for item [1]"). Tensors must agree in shape, and by default in
device and dtype (stride with `check_stride=True`); values are close when
`|actual - expected| <= atol + rtol * |expected|`, the message naming the mismatched count and
the greatest absolute and relative differences with their indices, computed as PyTorch
computes them (integers in int64, their relative difference in float32).
"""

from __future__ import annotations

import cmath
import collections.abc
from collections.abc import Callable
from typing import Any

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.creation import as_tensor
from pyaten.core.promotion import promote_types
from pyaten.core.tensor import Tensor

__all__ = ["assert_close"]

# dtype -> (rtol, atol), PyTorch's defaults; other dtypes compare exactly.
_PRECISIONS = {
    dt.float16: (0.001, 1e-5), dt.bfloat16: (0.016, 1e-5), dt.float32: (1.3e-6, 1e-5),
    dt.float64: (1e-7, 1e-7), dt.complex64: (1.3e-6, 1e-5), dt.complex128: (1e-7, 1e-7),
}
_NUMBER_DTYPES = {int: dt.int64, float: dt.float64, complex: dt.complex128}


class _Mismatch(Exception):
    """A failed comparison: the exception class, the message and the item's path."""

    def __init__(self, kind: type[Exception], msg: str, path: tuple = ()) -> None:
        super().__init__(msg)
        self.kind, self.msg, self.path = kind, msg, path


def assert_close(
    actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
    atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
    check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
    msg: str | Callable[[str], str] | None = None,
) -> None:
    """Raise AssertionError when `actual` and `expected` are not close (see the module doc)."""
    options = {"allow_subclasses": allow_subclasses, "rtol": rtol, "atol": atol,
               "equal_nan": equal_nan, "check_device": check_device,
               "check_dtype": check_dtype, "check_stride": check_stride}
    try:
        _compare(actual, expected, (), options)
    except _Mismatch as failure:
        if isinstance(msg, str):
            raise failure.kind(msg) from None
        text = failure.msg
        if failure.path:
            text += "\n\nThe failure occurred for item " + "".join(
                str([item]) for item in failure.path
            )
        raise failure.kind(msg(text) if callable(msg) else text) from None


def _compare(actual: Any, expected: Any, path: tuple, options: dict) -> None:
    if actual is None or expected is None:
        if not (actual is None and expected is None):
            _unsupported(actual, expected)
        return
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, "The length of the sequences mismatch: "
                            f"{len(actual)} != {len(expected)}", path)
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _compare(a, e, path + (i,), options)
        return
    if isinstance(actual, collections.abc.Mapping) and \
            isinstance(expected, collections.abc.Mapping):
        missing, extra = set(expected) - set(actual), set(actual) - set(expected)
        if missing or extra:
            raise _Mismatch(AssertionError, (
                "The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(missing)}\n"
                f"Additional keys in the actual mapping: {sorted(extra)}"), path)
        for key in sorted(actual, key=str):
            _compare(actual[key], expected[key], path + (key,), options)
        return
    booleans = (bool, np.bool_)
    if isinstance(actual, booleans) and isinstance(expected, booleans):
        if bool(actual) is not bool(expected):
            raise _Mismatch(AssertionError,
                            f"Booleans mismatch: {bool(actual)} is not {bool(expected)}", path)
        return
    numbers = (int, float, complex, np.number)
    if isinstance(actual, numbers) and isinstance(expected, numbers) \
            and not isinstance(actual, booleans) and not isinstance(expected, booleans):
        _compare_numbers(_number(actual), _number(expected), path, options)
        return
    related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
    if not related or (not options["allow_subclasses"] and type(actual) is not type(expected)):
        _unsupported(actual, expected)
    try:
        tensors = [t if isinstance(t, Tensor) else as_tensor(t) for t in (actual, expected)]
    except Exception:
        _unsupported(actual, expected)
    _compare_tensors(tensors[0], tensors[1], path, options)


def _is_sequence(value: Any) -> bool:
    return isinstance(value, collections.abc.Sequence) and not isinstance(value, str)


def _unsupported(actual: Any, expected: Any) -> None:
    raise TypeError(
        f"No comparison pair was able to handle inputs of type {type(actual)} and "
        f"{type(expected)}."
    )


def _number(value: Any) -> int | float | complex:
    return value.item() if isinstance(value, np.number) else value


def _tolerances(dtypes: list[dt.dtype], options: dict, path: tuple) -> tuple[float, float]:
    # Checked per pair, as PyTorch does: inputs no pair takes are a TypeError first.
    if (options["rtol"] is None) != (options["atol"] is None):
        missing = "atol" if options["atol"] is None else "rtol"
        raise _Mismatch(ValueError, "Both 'rtol' and 'atol' must be either specified or "
                        f"omitted, but got no {missing}.", path)
    if options["rtol"] is not None:
        return options["rtol"], options["atol"]
    pairs = [_PRECISIONS.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _compare_numbers(actual: Any, expected: Any, path: tuple, options: dict) -> None:
    rtol, atol = _tolerances([_NUMBER_DTYPES[type(v)] for v in (actual, expected)], options,
                             path)
    if actual == expected:
        return
    if options["equal_nan"] and cmath.isnan(actual) and cmath.isnan(expected):
        return
    abs_diff = abs(actual - expected)
    if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_message(actual, expected, rtol, atol), path)


def _compare_tensors(actual: Tensor, expected: Tensor, path: tuple, options: dict) -> None:
    def differ(name: str, a: Any, e: Any) -> _Mismatch:
        return _Mismatch(AssertionError,
                         f"The values for attribute '{name}' do not match: {a} != {e}.", path)

    rtol, atol = _tolerances([actual.dtype, expected.dtype], options, path)
    if actual.shape != expected.shape:
        raise differ("shape", actual.shape, expected.shape)
    if options["check_stride"] and actual.stride() != expected.stride():
        raise differ("stride()", actual.stride(), expected.stride())
    if options["check_device"] and actual.device != expected.device:
        raise differ("device", actual.device, expected.device)
    if options["check_dtype"] and actual.dtype is not expected.dtype:
        raise differ("dtype", actual.dtype, expected.dtype)
    if "meta" in (actual.device.type, expected.device.type):
        return
    common = promote_types(actual.dtype, expected.dtype)
    a = _values(actual, common)
    e = _values(expected, common)
    matches = _isclose(a, e, rtol, atol, options["equal_nan"])
    if matches.all():
        return
    if a.ndim == 0:
        message = _scalar_message(a.item(), e.item(), rtol, atol)
    else:
        message = _tensor_message(a, e, matches, rtol, atol)
    raise _Mismatch(AssertionError, message, path)


def _values(t: Tensor, common: dt.dtype) -> np.ndarray:
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    return np.asarray(t.to(common).resolve_conj().resolve_neg().numpy())


def _isclose(a: np.ndarray, e: np.ndarray, rtol: float, atol: float,
             equal_nan: bool) -> np.ndarray:
    if a.dtype == np.bool_ or (a.dtype.kind in "iu" and rtol == 0 and atol == 0):
        return a == e
    with np.errstate(invalid="ignore", over="ignore"):
        if a.dtype.kind in "iu":
            a, e = a.astype(np.float64), e.astype(np.float64)
        close = a == e  # equal infinities
        finite = np.isfinite(a) & np.isfinite(e)
        diff = np.abs(a - e)
        close |= finite & (diff <= atol + rtol * np.abs(e))
        if equal_nan:
            close |= np.isnan(a) & np.isnan(e)
    return close


def _tensor_message(a: np.ndarray, e: np.ndarray, matches: np.ndarray, rtol: float,
                    atol: float) -> str:
    total = matches.size
    mismatched = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    a, e, flat_matches = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if a.dtype.kind in "biu":  # integers (and bools) in int64, as PyTorch
            a, e = a.astype(np.int64), e.astype(np.int64)
            abs_diff = np.abs(a - e)
            rel_diff = abs_diff.astype(np.float32) / np.abs(e).astype(np.float32)
        else:
            abs_diff = np.abs(a - e)
            rel_diff = abs_diff / np.abs(e)
    abs_diff[flat_matches] = 0
    rel_diff[flat_matches] = 0
    abs_index, rel_index = int(np.argmax(abs_diff)), int(np.argmax(rel_diff))
    return _message(extra, abs_diff[abs_index].item(), np.unravel_index(abs_index, matches.shape),
                    atol, rel_diff[rel_index].item(),
                    np.unravel_index(rel_index, matches.shape), rtol, "Tensor-likes")


def _scalar_message(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _message(f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff,
                    None, rtol, "Scalars")


def _message(extra: str, abs_diff: Any, abs_index: Any, atol: float, rel_diff: Any,
             rel_index: Any, rtol: float, identifier: str) -> str:
    equality = rtol == 0 and atol == 0
    lines = [f"{identifier} are not {'equal' if equality else 'close'}!", "", extra]
    for kind, diff, index, tol in (("absolute", abs_diff, abs_index, atol),
                                   ("relative", rel_diff, rel_index, rtol)):
        if index is None:
            line = f"{kind.title()} difference: {diff}"
        else:
            line = f"Greatest {kind} difference: {diff} at index {tuple(int(i) for i in index)}"
        lines.append(line if equality else f"{line} (up to {tol} allowed)")
    return "\n".join(lines)
