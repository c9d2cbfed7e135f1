"""`pyaten.finfo` and `pyaten.iinfo`: the numeric limits of a dtype, as PyTorch's.

    pyaten.finfo(pyaten.float16).eps     # 0.0009765625
    pyaten.iinfo(pyaten.int8).max        # 127

The numbers come from NumPy's (and ml_dtypes' for bfloat16) `finfo`/`iinfo` of the dtype's
NumPy counterpart; a complex dtype answers for its real part, as in PyTorch.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from pyaten.core import dtypes as dt

__all__ = ["finfo", "iinfo"]


_DEFAULT: Any = object()


def _check_dtype(value: object, what: str) -> dt.dtype:
    if not isinstance(value, dt.dtype):
        raise TypeError(
            f"{what}(): argument 'type' (position 1) must be torch.dtype, not "
            f"{type(value).__name__}"
        )
    return value


class finfo:  # noqa: N801 - named like torch.finfo
    """A floating dtype's limits: bits, eps, max, min, tiny (= smallest_normal), resolution."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type: dt.dtype = _DEFAULT) -> None:  # noqa: A002 - PyTorch's name
        if type is _DEFAULT:  # finfo(): the default dtype's (None is refused, as PyTorch)
            from pyaten.core.dtypes import get_default_dtype

            type = get_default_dtype()  # noqa: A001
        d = _check_dtype(type, "finfo")
        if not (d.is_floating_point or d.is_complex):
            raise TypeError(
                "torch.finfo() requires a floating point input type. Use torch.iinfo to "
                "handle 'torch.finfo'"
            )
        if d.is_complex:
            d = d.to_real()
        info = ml_dtypes.finfo(d.numpy) if d is dt.bfloat16 else np.finfo(d.numpy)
        values = {
            "bits": int(info.bits), "eps": float(info.eps), "max": float(info.max),
            "min": float(info.min), "tiny": float(info.tiny),
            "smallest_normal": float(info.smallest_normal),
            "resolution": 10.0 ** -int(info.precision), "dtype": d.name,
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"attribute '{name}' of 'torch.finfo' objects is not writable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, finfo):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    __hash__ = None  # type: ignore[assignment] - unhashable, as PyTorch's

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
            f"dtype={self.dtype})"
        )


class iinfo:  # noqa: N801 - named like torch.iinfo
    """An integer dtype's limits: bits, min, max."""

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, type: dt.dtype) -> None:  # noqa: A002 - PyTorch's name
        d = _check_dtype(type, "iinfo")
        if d is dt.bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d.is_floating_point or d.is_complex:
            raise TypeError(
                "torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                "'torch.iinfo'"
            )
        info = np.iinfo(d.numpy)
        for name, value in (("bits", int(info.bits)), ("max", int(info.max)),
                            ("min", int(info.min)), ("dtype", d.name)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"attribute '{name}' of 'torch.iinfo' objects is not writable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, iinfo):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
