"""The legacy tensor types: `pyaten.FloatTensor`, `pyaten.LongTensor`, ... (PyTorch's
`torch.FloatTensor`; docs/cuda-and-compat.md).

    x = pyaten.LongTensor([1, 2])            # a tensor([1, 2]) of int64
    isinstance(x, pyaten.LongTensor)         # True: an int64 CPU tensor
    x.type(pyaten.FloatTensor).type()        # 'torch.FloatTensor'

Each is a class whose instances are never built: calling it makes an ordinary `Tensor` of
its dtype on the CPU (`FloatTensor(2, 3)` uninitialised, `FloatTensor([1, 2])` from data),
and `isinstance` asks for the tensor's dtype and device, as PyTorch's `tensortype` does.
They print and compare with PyTorch's names (`'torch.FloatTensor'`): programs compare
`x.type()` with these strings and pass them back to `x.type(...)`.
"""

from __future__ import annotations

from typing import Any

from pyaten.core import dtypes as dt
from pyaten.core.creation import tensor
from pyaten.core.device import CPU, as_device
from pyaten.core.size import strided
from pyaten.core.tensor import Tensor

__all__ = ["LEGACY_TYPES", "tensortype"]


class tensortype(type):  # noqa: N801 - named like torch.tensortype
    """The class of `pyaten.FloatTensor` and the other legacy types."""

    dtype: dt.dtype

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"

    def __subclasscheck__(cls, subclass: type) -> bool:
        return subclass is cls

    def __repr__(cls) -> str:
        return f"<class 'torch.{cls.__name__}'>"

    def __call__(cls, *args: Any, device: Any = None, **kwargs: Any) -> Tensor:
        if kwargs:
            got = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}"
                                                       for k, v in kwargs.items()]
            raise TypeError(
                f"new() received an invalid combination of arguments - got ({', '.join(got)}), "
                "but expected sizes, a sequence of data or a tensor, and an optional device"
            )
        if device is not None and as_device(device).type != "cpu":
            raise RuntimeError(
                f"legacy constructor expects device type: cpu but device type: "
                f"{as_device(device).type} was passed"
            )
        from pyaten import empty  # the generated factory (this module loads before it)

        if not args:
            return empty(0, dtype=cls.dtype)
        if all(type(a) is int for a in args):
            return empty(args, dtype=cls.dtype)
        if len(args) == 1:
            data = args[0]
            if isinstance(data, Tensor):
                if data.dtype is not cls.dtype or data.device != CPU:
                    raise TypeError(
                        f"expected {cls.__name__} (got a {data.dtype} tensor on {data.device})"
                    )
                return data
            if isinstance(data, tuple) and all(type(a) is int for a in data):
                return empty(data, dtype=cls.dtype)  # a Size
            if isinstance(data, (int, float, complex, bool)):
                raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
            return tensor(data, dtype=cls.dtype)
        raise TypeError(
            f"{cls.__name__}(): expected sizes (ints) or one sequence of data, got "
            f"({', '.join(type(a).__name__ for a in args)})"
        )


def _legacy_type(dtype: dt.dtype) -> tensortype:
    name = dtype.scalar_name + "Tensor"
    attrs = {"dtype": dtype, "is_cuda": False, "is_sparse": False, "layout": strided,
             "__module__": "torch", "__doc__": f"A {dtype} CPU tensor's legacy type."}
    return tensortype(name, (), attrs)


LEGACY_TYPES: dict[str, tensortype] = {
    t.__name__: t
    for t in map(_legacy_type, (
        dt.float32, dt.float64, dt.float16, dt.bfloat16, dt.uint8, dt.int8, dt.int16,
        dt.int32, dt.int64, dt.bool,
    ))
}
