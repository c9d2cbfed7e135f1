"""Small helpers of `Module`: PyTorch's type names in messages, repr indentation, and the
arguments of `Module.to`."""

from __future__ import annotations

from typing import Any

from pyaten.core.tensor import Tensor


def typename(obj: object) -> str:
    """The type name PyTorch's messages use: `pyaten.FloatTensor`, `int`, `mod.Class`."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = obj if isinstance(obj, type) else type(obj)
    module = getattr(cls, "__module__", "") or ""
    if module in ("builtins", "__builtin__"):
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"


def add_indent(text: str, spaces: int) -> str:
    """Indent every line but the first (blank lines stay empty)."""
    first, *rest = text.split("\n")
    if not rest:
        return text
    return "\n".join([first] + [" " * spaces + line if line.strip() else "" for line in rest])


def parse_to_arguments(*args: Any, **kwargs: Any) -> tuple[Any, Any, bool]:
    """`Module.to`'s arguments: (device, dtype, non_blocking), as `Tensor.to` reads them."""
    from pyaten.core.device import device as Device
    from pyaten.core.dtypes import dtype as DType

    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    non_blocking = bool(kwargs.pop("non_blocking", False))
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments: {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, DType):
            dtype = arg
        elif isinstance(arg, bool):
            non_blocking = arg
        elif isinstance(arg, (str, Device)):
            device = arg
        else:
            raise TypeError(f"to() received an invalid argument of type {type(arg).__name__}")
    if isinstance(device, str):
        device = Device(device)
    return device, dtype, non_blocking
