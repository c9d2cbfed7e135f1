"""Making tensors from Python data and NumPy arrays: `tensor`, `from_numpy`, scalars.

`tensor(data)` infers the dtype as PyTorch does: the promotion of every leaf, where a
Python bool is bool, an int is int64, a float the default dtype, a complex the default
complex dtype, and NumPy scalars/arrays and tensors bring their own dtype.
"""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.device import CPU, as_device
from pyaten.core.dtypes import dtype as DType
from pyaten.core.promotion import promote_types, scalar_dtype
from pyaten.core.storage import Storage
from pyaten.core.tensor import Tensor
from pyaten.core.views import (
    contiguous_strides,
    empty_tensor,
    infer_dense_strides,
    is_non_overlapping_and_dense,
)
from pyaten.dispatch.python_key import PYTHON_KEYS
from pyaten.dispatch.registry import get_operator
from pyaten.dispatch.tls import STATE as _TLS

__all__ = [
    "tensor", "from_numpy", "scalar_tensor", "wrapped_scalar_tensor", "as_tensor", "asarray",
]

_U8 = np.dtype(np.uint8)
_SCALAR_TYPES = (builtins.bool, builtins.int, builtins.float, builtins.complex)
_PLAIN_SCALARS = frozenset(_SCALAR_TYPES)


def _is_sequence(obj: object) -> bool:
    cls = type(obj)
    if cls is list or cls is tuple:
        return True
    if cls in _PLAIN_SCALARS:
        return False
    if isinstance(obj, (str, bytes, Tensor, np.generic)):
        return False
    return isinstance(obj, (list, tuple, np.ndarray)) or (
        hasattr(obj, "__len__") and hasattr(obj, "__getitem__")
    )


# PyTorch's limit on the nesting depth of data (its MAX_DIMS).
_MAX_DIMS = 128
_TEXT = (str, bytes)


def _compute_sizes(data: object) -> list[int]:
    # Follows the first element down, as PyTorch does; the store pass checks the rest. A
    # string is a sequence here, as in Python: `'a'[0]` is `'a'` again, so `tensor(['a'])`
    # runs into the depth limit (PyTorch's "too many dimensions 'str'").
    sizes: list[int] = []
    while True:
        if isinstance(data, np.ndarray):
            sizes.extend(data.shape)
            return sizes
        if isinstance(data, Tensor) or not (_is_sequence(data) or isinstance(data, _TEXT)):
            return sizes
        n = len(data)
        sizes.append(n)
        if len(sizes) > _MAX_DIMS:
            raise ValueError(f"too many dimensions '{type(data).__name__}'")
        if n == 0:
            return sizes
        data = data[0]


def _leaf_dtype(leaf: object) -> DType:
    if isinstance(leaf, Tensor):
        return leaf._dtype
    if isinstance(leaf, _TEXT):
        raise TypeError(f"new(): invalid data type '{type(leaf).__name__}'")
    if isinstance(leaf, (np.generic, np.ndarray)):
        return dt.from_numpy_dtype(leaf.dtype)
    if isinstance(leaf, _SCALAR_TYPES):
        return scalar_dtype(leaf)
    raise RuntimeError(f"Could not infer dtype of {type(leaf).__name__}")


def _check_inferable(data: object) -> None:
    """Raise the error PyTorch's dtype inference raises for `data`, if any.

    PyTorch infers the dtype of the whole input (refusing strings, `None`, other objects)
    before it checks lengths while storing; pyaten does both in one pass, so after a failed
    store it walks the input in PyTorch's order to raise the error PyTorch raises first."""
    if isinstance(data, (Tensor, np.ndarray, np.generic) + _SCALAR_TYPES):
        return
    if _is_sequence(data):
        for item in data:
            _check_inferable(item)
        return
    _leaf_dtype(data)


def _store(data: object, sizes: list[int], dim: int, out: list, types: set) -> None:
    if dim == len(sizes):
        if isinstance(data, Tensor):
            if data.numel() != 1:
                raise ValueError("only one element tensors can be converted to Python scalars")
            types.add(data._dtype)
            out.append(data.item())
            return
        if isinstance(data, np.ndarray) and data.ndim == 0:
            types.add(dt.from_numpy_dtype(data.dtype))
            out.append(data.item())
            return
        if _is_sequence(data):
            raise TypeError(f"'{type(data).__name__}' object cannot be interpreted as an integer")
        types.add(_leaf_dtype(data))
        out.append(data)
        return
    if isinstance(data, np.ndarray):
        if list(data.shape) != sizes[dim:]:
            raise ValueError(
                f"expected sequence of length {sizes[dim]} at dim {dim} (got "
                f"{data.shape[0] if data.ndim else 0})"
            )
        types.add(dt.from_numpy_dtype(data.dtype))
        out.extend(data.reshape(-1).tolist())
        return
    if not _is_sequence(data):
        if not isinstance(data, _TEXT):
            raise TypeError("not a sequence")
        if len(data) == sizes[dim]:  # text is a sequence to PyTorch, but never holds numbers
            raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    n = len(data)
    if n != sizes[dim]:
        raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {n})")
    if dim == len(sizes) - 1 and type(data) in (list, tuple):
        kinds = set(map(type, data))
        if kinds <= _PLAIN_SCALARS:
            # Fast path: a run of plain Python numbers (the common case for big inputs).
            out.extend(data)
            for kind in kinds:
                types.add(scalar_dtype(kind()))
            return
    for item in data:
        _store(item, sizes, dim + 1, out, types)


def _infer_dtype(types: set) -> DType:
    result = None
    for t in types:
        result = t if result is None else promote_types(result, t)
    return dt.get_default_dtype() if result is None else result


def tensor(
    data: object,
    dtype: DType | None = None,
    device: object = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """A new tensor holding a copy of `data` (nested sequences, numbers, arrays, tensors)."""
    if not _TLS.included & PYTHON_KEYS:
        return _tensor(data, dtype, device, requires_grad)
    # A dispatch mode sees the new tensor handed to `lift_fresh`, as in PyTorch.
    result = get_operator("aten::lift_fresh").call(_tensor(data, dtype, device, False))
    if requires_grad:
        set_requires_grad(result)
    return result


def _tensor(data: object, dtype: DType | None, device: object, requires_grad: bool) -> Tensor:
    dev = as_device(device)
    if dtype is not None and not isinstance(dtype, DType):
        raise TypeError(
            f"tensor(): argument 'dtype' must be pyaten.dtype, not {type(dtype).__name__}"
        )
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use "
            "sourceTensor.detach().clone() or sourceTensor.detach().clone().requires_grad_(True), "
            "rather than pyaten.tensor(sourceTensor).",
            UserWarning,
            stacklevel=3,
        )
        if data._storage.data is None:
            if dev.type != "meta":
                raise NotImplementedError(
                    f"Cannot copy out of {data._device.type} tensor; no data!"
                )
            values = None
        else:
            values = data._numpy()
        target = dtype or data._dtype
        sizes = data._sizes
    elif isinstance(data, np.ndarray) or (
        hasattr(data, "__array__") and not isinstance(data, (list, tuple))
    ):
        data = np.asarray(data)
        target = dtype or dt.from_numpy_dtype(data.dtype)
        values = data
        sizes = data.shape
    else:
        if isinstance(data, _TEXT):
            raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
        sizes_list = _compute_sizes(data)
        flat: list = []
        types: set = set()
        try:
            _store(data, sizes_list, 0, flat, types)
        except (TypeError, ValueError):
            if dtype is None:
                _check_inferable(data)
            raise
        target = dtype or _infer_dtype(types)
        sizes = tuple(sizes_list)
        values = _flat_to_numpy(flat, target, types)
        if dev is CPU and values.dtype == target.numpy and values.flags.c_contiguous:
            # The fresh 1-D array already is the tensor's bytes: adopt it, no second copy.
            result = _adopt(values, sizes, target)
            if requires_grad:
                set_requires_grad(result)
            return result
    plugin = dev.type not in ("cpu", "meta")  # built on the CPU, then copied by the device
    result = empty_tensor(tuple(sizes), target, CPU if plugin else dev,
                          _kept_strides(data, tuple(sizes)))
    if values is not None and result._storage.data is not None:
        out = result._numpy()
        out[...] = _cast(np.asarray(values).reshape(out.shape), target)
    if plugin:
        result = result.to(dev)
    if requires_grad:
        set_requires_grad(result)
    return result


def _kept_strides(data: object, sizes: tuple) -> tuple | None:
    """The layout `tensor()` gives a copy of a tensor or array, as PyTorch's (`empty_like` with
    preserve_format): a non-overlapping and dense source's own strides, another's dims kept
    in their order; None (row-major) for nested sequences, an empty array, and an array whose
    strides are negative or not whole elements (which PyTorch refuses)."""
    if isinstance(data, Tensor):
        strides = data._strides
    elif isinstance(data, np.ndarray) and data.ndim and data.size:
        itemsize = data.itemsize
        if itemsize == 0 or any(s < 0 or s % itemsize for s in data.strides):
            return None
        strides = tuple(s // itemsize for s in data.strides)
    else:
        return None
    if not sizes:
        return None
    if is_non_overlapping_and_dense(sizes, strides):
        return strides
    return infer_dense_strides(sizes, strides)


def set_requires_grad(result: Tensor) -> None:
    """`requires_grad=True` given to `tensor()` or a factory, with PyTorch's message (which
    differs from the attribute's and `requires_grad_()`'s)."""
    target = result._dtype
    if not (target.is_floating_point or target.is_complex):
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    result._requires_grad = True


def _adopt(values: np.ndarray, sizes: tuple, target: DType) -> Tensor:
    if target is dt.complex32:
        dt.warn_complex_half()
    data = values.view(_U8)
    storage = Storage(data.nbytes, CPU, data=data)
    return Tensor._make(storage, sizes, contiguous_strides(sizes), 0, target, CPU)


def _cast(values: np.ndarray, target: DType) -> np.ndarray:
    if values.dtype == target.numpy:
        return values
    # Like PyTorch, converting complex to real keeps the real part.
    return dt.compute_array(values, target.numpy)


def _range_error(target: DType) -> RuntimeError:
    return RuntimeError(f"value cannot be converted to type {target.name} without overflow")


def _first_bad_leaf(flat: list, target: DType, info: np.iinfo) -> None:
    # Rare mixed input: report the first offending leaf, in order, as PyTorch does.
    low = -info.max if info.min == 0 else info.min
    for v in flat:
        if isinstance(v, builtins.complex):
            raise TypeError("'complex' object cannot be interpreted as an integer")
        if isinstance(v, builtins.int) and not isinstance(v, builtins.bool):
            if not -(2**63) <= v < 2**63:
                raise ValueError("Overflow when unpacking long long")
            if not low <= v <= info.max:
                raise _range_error(target)
        elif isinstance(v, builtins.float) and not info.min <= v <= info.max:
            raise _range_error(target)
    raise TypeError("'complex' object cannot be interpreted as an integer")


def _flat_to_numpy(flat: list, target: DType, types: set) -> np.ndarray:
    """The leaves as a 1-D array of `target`, with PyTorch's range and type checks."""
    has_complex = any(t.is_complex for t in types)
    has_float = any(t.is_floating_point for t in types)
    if target.category == dt.INT_CATEGORY:
        info = np.iinfo(target.numpy)
        if has_complex:
            _first_bad_leaf(flat, target, info)
        if has_float:
            values = np.array(flat, dtype=np.float64)
            # NaN fails both comparisons, so it is refused too (as in PyTorch).
            if values.size and not (values.min() >= info.min and values.max() <= info.max):
                raise _range_error(target)
            return values.astype(target.numpy)
        try:
            values = np.array(flat, dtype=np.int64)
        except OverflowError:
            raise ValueError("Overflow when unpacking long long") from None
        # Ints may wrap into unsigned types from as low as -max, as in c10's overflow check.
        low = -info.max if info.min == 0 else info.min
        if values.size and (values.min() < low or values.max() > info.max):
            raise _range_error(target)
        return values.astype(target.numpy)
    if target.category == dt.BOOL_CATEGORY:
        return np.array([builtins.bool(v) for v in flat], dtype=np.bool_)
    if not target.is_complex:
        if has_complex:
            raise TypeError("must be real number, not complex")
        values = np.array(flat, dtype=np.float64)
        if target is dt.float64:
            return values
        with np.errstate(over="ignore"):  # too-large values become inf, as in torch
            return values.astype(target.numpy)
    return dt.compute_array(np.array(flat, dtype=np.complex128), target.numpy)


def as_tensor(data: object, dtype: DType | None = None, device: object = None) -> Tensor:
    """`data` itself when it is already a tensor of that dtype/device, else `tensor(data)`."""
    if isinstance(data, Tensor):
        if (dtype is None or dtype is data._dtype) and (
            device is None or as_device(device) == data._device
        ):
            return data
        return tensor(data._numpy().copy(), dtype=dtype or data._dtype, device=device)
    if isinstance(data, np.ndarray) and device is None and (
        dtype is None or dtype.numpy == data.dtype
    ):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with `array` (writes through in both directions)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    if not array.dtype.isnative:
        raise ValueError(
            "given numpy array has byte order different from the native byte order. "
            "Conversion between byte orders is currently not supported."
        )
    return share_array(array, dt.from_numpy_dtype(array.dtype))


def share_array(array: np.ndarray, d: DType) -> Tensor:
    """A `d` tensor over `array`'s memory (`from_numpy`'s checks of strides and writability;
    DLPack import passes complex32, which has no NumPy dtype to infer it from)."""
    itemsize = array.dtype.itemsize
    for s in array.strides:
        if s < 0:
            raise ValueError(
                "At least one stride in the given numpy array is negative, and tensors with "
                "negative strides are not currently supported. (You can probably work around "
                "this by making a copy of your array  with array.copy().) "
            )
        if s % itemsize:
            raise ValueError(
                "given numpy array strides not a multiple of the element byte size. Copy the "
                "numpy array to reallocate the memory."
            )
    if not array.flags.writeable:
        warnings.warn(
            "The given NumPy array is not writable, and PyTorch does not support non-writable "
            "tensors. This means writing to this tensor will result in undefined behavior. You "
            "may want to copy the array to protect its data or make it writable before "
            "converting it to a tensor. This type of warning will be suppressed for the rest of "
            "this program.",
            UserWarning,
            stacklevel=2,
        )
    sizes = tuple(array.shape)
    strides = tuple(s // itemsize for s in array.strides)
    if array.size == 0:
        data = np.empty(0, _U8)
        strides = contiguous_strides(sizes)
    else:
        extent = sum((n - 1) * s for n, s in zip(sizes, array.strides)) + itemsize
        data = np.asarray(_ByteSpan(array, extent))
    storage = Storage(data.nbytes, CPU, data=data, resizable=False)
    return Tensor._make(storage, sizes, strides, 0, d, CPU)


class _ByteSpan:
    # The bytes an array spans, as a 1-D uint8 array over the same memory; keeps it alive.
    def __init__(self, array: np.ndarray, nbytes: int) -> None:
        self.owner = array
        pointer, readonly = array.__array_interface__["data"]
        self.__array_interface__ = {
            "data": (pointer, readonly),
            "shape": (nbytes,),
            "typestr": "|u1",
            "version": 3,
        }


def scalar_tensor(
    value: object, *, dtype: DType | None = None, device: object = None, layout: object = None,
    pin_memory: bool | None = None,
) -> Tensor:
    """A 0-dim tensor holding a Python number, of the default dtype unless `dtype` is given
    (as PyTorch's `scalar_tensor(2)` is `tensor(2.)`)."""
    if dtype is not None and not isinstance(dtype, DType):
        raise TypeError(
            f"scalar_tensor(): argument 'dtype' must be pyaten.dtype, not {type(dtype).__name__}"
        )
    target = dtype or dt.get_default_dtype()
    t = empty_tensor((), target, as_device(device))
    if t._storage.data is not None:
        dt.store(t._numpy(), value)
    return t


_WRAPPED_DTYPE = {
    builtins.bool: dt.bool,
    builtins.int: dt.int64,
    builtins.float: dt.float64,
    builtins.complex: dt.complex128,
}


def wrapped_scalar_tensor(value: object, device: object = None) -> Tensor:
    """A 0-dim "wrapped number" tensor for a Python scalar argument (float stored as
    float64, int as int64); it promotes like a Python scalar, not like a tensor."""
    d = _WRAPPED_DTYPE.get(type(value))
    if d is None:
        d = scalar_dtype(value)
        d = {dt.BOOL_CATEGORY: dt.bool, dt.INT_CATEGORY: dt.int64}.get(d.category, d)
        if d.is_floating_point:
            d = dt.float64
        elif d.is_complex:
            d = dt.complex128
    if value.__class__ is builtins.int and not -(1 << 63) <= value < 1 << 64:
        # PyTorch's Scalar holds int64 or uint64; anything else fails to convert
        if value < 0:
            raise OverflowError("can't convert negative int to unsigned")
        raise OverflowError("int too big to convert")
    t = empty_tensor((), d, CPU if device is None else as_device(device))
    if t._storage.data is not None:
        t._numpy()[()] = value
    t._wrapped_number = True
    return t


def _alias_error(what: str) -> ValueError:
    return ValueError(f"can't alias {what}.")


def _convert_shared(
    result: Tensor, dtype: DType | None, device: object, copy: bool | None
) -> Tensor:
    """`result` (a tensor, or one sharing a NumPy array's memory) as `dtype` on `device`:
    itself when nothing changes and no copy is asked for, else a converted copy."""
    target_device = result._device if device is None else as_device(device)
    target_dtype = result._dtype if dtype is None else dtype
    if target_dtype is not result._dtype:
        if copy is False:
            raise _alias_error(
                f"tensor with dtype '{result._dtype.scalar_name}' into dtype "
                f"'{target_dtype.scalar_name}'"
            )
    elif target_device != result._device:
        if copy is False:
            raise _alias_error(
                f"tensor from device '{result._device}' to '{target_device}'"
            )
    elif not copy:
        return result
    converted = empty_tensor(result._sizes, target_dtype, target_device)
    if converted._storage.data is not None:
        values = result._numpy()
        converted._numpy()[...] = _cast(values, target_dtype) if values is not None else 0
    return converted


def asarray(
    obj: object,
    *,
    dtype: DType | None = None,
    device: object = None,
    copy: bool | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """`obj` as a tensor, sharing memory with a tensor, NumPy array or buffer when it can
    (`copy=None`), always copying (`copy=True`) or never (`copy=False`, which raises when
    sharing is impossible), as `torch.asarray`."""
    if dtype is not None and not isinstance(dtype, DType):
        raise TypeError(
            f"asarray(): argument 'dtype' must be pyaten.dtype, not {type(dtype).__name__}"
        )
    if isinstance(obj, Tensor):
        result = _convert_shared(obj, dtype, device, copy)
    elif isinstance(obj, np.ndarray):
        result = _convert_shared(from_numpy(obj), dtype, device, copy)
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        # the buffer protocol: the bytes read as `dtype` (default dtype), shared
        read_as = dtype or dt.get_default_dtype()
        array = np.frombuffer(obj, dtype=read_as.numpy)
        result = _convert_shared(share_array(array, read_as), None, device, copy)
    else:
        if copy is False:
            raise _alias_error("arbitrary sequence into a tensor")
        result = tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        set_requires_grad(result)
    return result
