"""Copy kernels: copy_, fill_, zero_, clone, contiguous, _to_copy and the four `to` overloads.

`copy_` is the one place data moves between dtypes and devices; `clone` and `_to_copy`
allocate (keeping the source's layout when it is dense, as `preserve_format` asks) and then
move the data themselves. The `to` overloads are composites that return `self` when nothing
would change and otherwise call `_to_copy`, so `t.to(t.dtype) is t` as in PyTorch.
"""

from __future__ import annotations

import math
import warnings

import ml_dtypes
import numpy as np

from pyaten.core import dtypes
from pyaten.core.device import check_compiled
from pyaten.core.device import device as make_device
from pyaten.core.dtypes import dtype as dtype_class
from pyaten.core.tensor import MATH_BITS, Tensor, math_bit_values, write_fresh
from pyaten.core.views import (
    assert_no_partial_overlap,
    empty_tensor,
    infer_dense_strides,
    is_contiguous_strides,
    is_non_overlapping_and_dense,
)
from pyaten.native.kernels.shape import (
    contiguous_strides,
    format_shape,
)
from pyaten.native.mathbits import copy_source_values
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.runtime import is_memory_format

# --- helpers shared with other families ---------------------------------------------------

# The C++ type names ATen prints in "value cannot be converted to type X without overflow".
_CPP_TYPE_NAMES = {
    "Byte": "uint8_t",
    "Char": "int8_t",
    "Short": "int16_t",
    "Int": "int",
    "Long": "int64_t",
    "Half": "c10::Half",
    "BFloat16": "c10::BFloat16",
    "Float": "float",
    "Double": "double",
    "ComplexFloat": "c10::complex<float>",
    "ComplexDouble": "c10::complex<double>",
    "ComplexHalf": "c10::complex<c10::Half>",
}


def _limits(dtype) -> tuple[float, float]:
    if dtype.is_floating_point:
        top = float(ml_dtypes.finfo(dtype.numpy).max)
        return -top, top
    if dtype.is_complex:
        top = float(np.finfo(dtype.to_real().numpy).max)
        return -top, top
    if dtype.scalar_name == "Bool":
        return -math.inf, math.inf
    info = np.iinfo(dtype.numpy)
    # unsigned targets accept negatives down to -max (they wrap), like ATen
    return (-int(info.max) if info.min == 0 else int(info.min)), int(info.max)


# dtype -> (lowest, highest) value a scalar may have; built once, read per fill_
_LIMITS: dict = {}
_EXACT = 1 << 53  # the ints a double holds exactly


def _overflows(value, dtype) -> bool:
    """ATen's checked scalar conversion: would `value` overflow `dtype`?"""
    if dtype.scalar_name in ("Bool", "ComplexHalf") or isinstance(value, bool):
        return False  # PyTorch checks no ComplexHalf range either (1e6 fills inf)
    if isinstance(value, complex):
        if not dtype.is_complex and value.imag != 0:
            return True
        value = value.real
    limits = _LIMITS.get(dtype)
    if limits is None:
        limits = _LIMITS[dtype] = _limits(dtype)
    low, high = limits
    if dtype.is_floating_point or dtype.is_complex:
        value = float(value)
        if dtype.itemsize == 2:
            # Half and BFloat16 are reached through float, which may already be inf
            with np.errstate(over="ignore"):
                value = float(np.float32(value))
        if value != value or value in (math.inf, -math.inf):
            return False
        return value < low or value > high
    if isinstance(value, float):
        if value != value or value in (math.inf, -math.inf):
            return True
        if not dtype.is_signed:
            # only integers wrap into an unsigned type; a negative float overflows
            low = 0
    return value < low or value > high


def checked_scalar(value, dtype):
    """`value` as a NumPy scalar of `dtype`, raising ATen's overflow error when it can't fit."""
    if value.__class__ is int and not -0x8000000000000000 <= value <= 0xFFFFFFFFFFFFFFFF:
        # not a Scalar at all: PyTorch's parser refuses it (fast bindings pass it through)
        raise OverflowError("can't convert negative int to unsigned" if value < 0 else
                            "int too big to convert")
    if _overflows(value, dtype):
        raise RuntimeError(
            f"value cannot be converted to type {_CPP_TYPE_NAMES[dtype.scalar_name]} "
            "without overflow"
        )
    return cast_scalar(value, dtype)


def cast_scalar(value, dtype):
    """`value` converted to `dtype` the way a C++ static_cast would (wrapping, truncating)."""
    if ((value.__class__ is float or value.__class__ is int) and dtype.is_floating_point
            and -65504.0 <= value <= 65504.0):
        # in every floating dtype's range: no warning to silence (the context costs ~5 us)
        return np.asarray(value).astype(dtype.numpy)
    with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dtype.is_complex:
            return dtypes.compute_array(np.asarray(complex(value)), dtype.numpy)
        if isinstance(value, complex):
            value = value.real
        if isinstance(value, int) and not dtype.is_floating_point and dtype.scalar_name != "Bool":
            # wrap Python ints into the integer type's range before NumPy sees them
            bits = dtype.itemsize * 8
            value &= (1 << bits) - 1
            if dtype.is_signed and value >= 1 << (bits - 1):
                value -= 1 << bits
            return np.asarray(value, dtype=dtype.numpy)
        return np.asarray(value).astype(dtype.numpy)


def assign(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[...] = src with C-style casts (no NumPy cast warnings, complex keeps the real part)."""
    if dst.dtype == src.dtype or np.can_cast(src.dtype, dst.dtype, "safe"):
        # no value can overflow or lose its imaginary part: nothing to silence
        np.copyto(dst, src, casting="unsafe")
        return
    with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dtypes.store(dst, src)  # complex32 storage converted both ways


def memory_format_name(memory_format) -> str:
    """'preserve_format', 'contiguous_format', 'channels_last' or 'channels_last_3d'."""
    if memory_format is None:
        return "preserve_format"
    name = getattr(memory_format, "name", None) or str(memory_format)
    return name.rsplit(".", 1)[-1]


def strides_for_format(sizes: tuple, fmt: str, op: str) -> tuple[int, ...]:
    """Strides of a fresh tensor of `sizes` laid out in the memory format `fmt`."""
    if fmt == "channels_last":
        if len(sizes) != 4:
            raise RuntimeError("required rank 4 tensor to use channels_last format")
        n, c, h, w = sizes
        c1, h1, w1 = max(c, 1), max(h, 1), max(w, 1)
        return (h1 * w1 * c1, 1, w1 * c1, c1)
    if fmt == "channels_last_3d":
        if len(sizes) != 5:
            raise RuntimeError("required rank 5 tensor to use channels_last_3d format")
        n, c, d, h, w = sizes
        c1, d1, h1, w1 = max(c, 1), max(d, 1), max(h, 1), max(w, 1)
        return (d1 * h1 * w1 * c1, 1, h1 * w1 * c1, w1 * c1, c1)
    return contiguous_strides(sizes)


def is_in_format(t: Tensor, fmt: str) -> bool:
    """Whether `t` already has the layout `fmt` asks for (what `contiguous` tests)."""
    sizes = t._sizes
    strides = t._strides
    if fmt in ("contiguous_format", "preserve_format"):
        return is_contiguous_strides(sizes, strides)
    if len(sizes) not in (4, 5):
        return False
    expected = strides_for_format(sizes, fmt, "contiguous")
    return all(s == e or n == 1 for s, e, n in zip(strides, expected, sizes))


def like_strides(t: Tensor, memory_format) -> tuple[int, ...]:
    """Strides of a new tensor shaped like `t` for `memory_format` (preserve keeps dense)."""
    fmt = memory_format_name(memory_format)
    sizes = t._sizes
    if fmt == "preserve_format":
        if is_non_overlapping_and_dense(sizes, t._strides):
            return t._strides
        return infer_dense_strides(sizes, t._strides)
    return strides_for_format(sizes, fmt, "clone")


def check_broadcast_into(dst_sizes: tuple, src_sizes: tuple) -> None:
    """`src` must broadcast to exactly `dst`'s shape (copy_'s rule, with its messages)."""
    if dst_sizes == src_sizes:
        return
    nd, ns = len(dst_sizes), len(src_sizes)
    n = max(nd, ns)
    broadcast = []
    for i in range(n):
        a = dst_sizes[i - n + nd] if i - n + nd >= 0 else 1
        b = src_sizes[i - n + ns] if i - n + ns >= 0 else 1
        if a != b and a != 1 and b != 1:
            raise RuntimeError(
                f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                f"non-singleton dimension {i}"
            )
        broadcast.append(a if b == 1 else b)
    if tuple(broadcast) != tuple(dst_sizes):
        raise RuntimeError(
            f"output with shape {format_shape(dst_sizes)} doesn't match the broadcast shape "
            f"{format_shape(broadcast)}"
        )


def check_no_internal_overlap(t: Tensor) -> None:
    """A written-to tensor must not have two elements at one address (an expanded dim)."""
    for size, stride in zip(t._sizes, t._strides):
        if stride == 0 and size > 1:
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location. Please clone() the tensor before performing the "
                "operation."
            )


# ATen's messages name dtypes by their C++ type in "Expected out tensor to have dtype ...".
CPP_DTYPE_NAMES = {
    "Bool": "bool",
    "Byte": "unsigned char",
    "Char": "signed char",
    "Short": "short int",
    "Int": "int",
    "Long": "long int",
    "Half": "c10::Half",
    "BFloat16": "c10::BFloat16",
    "Float": "float",
    "Double": "double",
    "ComplexFloat": "c10::complex<float>",
    "ComplexDouble": "c10::complex<double>",
    "ComplexHalf": "c10::complex<c10::Half>",
}


def check_out_dtype(out: Tensor, dtype) -> None:
    """An `out=` tensor must already have the result's dtype (ATen's structured check)."""
    if out.dtype is not dtype:
        raise RuntimeError(
            f"Expected out tensor to have dtype {CPP_DTYPE_NAMES[dtype.scalar_name]}, but got "
            f"{CPP_DTYPE_NAMES[out.dtype.scalar_name]} instead"
        )


def _no_data_error() -> NotImplementedError:
    return NotImplementedError("Cannot copy out of meta tensor; no data!")


def _warn_complex_to_real(src_dtype, dst_dtype) -> None:
    if src_dtype.is_complex and not dst_dtype.is_complex:
        warnings.warn(
            "Casting complex values to real discards the imaginary part", UserWarning,
            stacklevel=4,
        )


def copy_data(dst: Tensor, src: Tensor) -> None:
    """Move `src`'s values into `dst` (same shape or broadcastable), casting like C++."""
    if src.device.type == "meta":
        if dst.device.type != "meta":
            raise _no_data_error()
        return
    if dst.device.type == "meta":
        return
    _warn_complex_to_real(src.dtype, dst.dtype)
    values = src._numpy()
    if (src._keyset | dst._keyset) & MATH_BITS:  # copy_ writes through the bits
        values = copy_source_values(dst, src, values)
    assign(dst._numpy(), values)


# --- kernels ------------------------------------------------------------------------------


@native
def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    if self is src:
        return self
    check_broadcast_into(self._sizes, src._sizes)
    check_no_internal_overlap(self)
    assert_no_partial_overlap(self, src)
    copy_data(self, src)
    self._bump_version()
    return self


@native
def copy(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """`copy_`'s functional form: a new tensor with `self`'s geometry holding `src`'s values."""
    aten = _aten()
    result = aten.clone.default(self)
    aten.copy_.default(result, src, non_blocking)
    return result


@native
def copy_meta(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """`copy` on Meta tensors: the same checks, no data (PyTorch registers a Meta kernel)."""
    return copy(self, src, non_blocking)


def _fill_value(self: Tensor, value):
    if isinstance(value, Tensor):
        if len(value._sizes) != 0:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{len(value._sizes)} dimensions."
            )
        if value.device.type == "meta":
            if self.device.type != "meta":
                raise _no_data_error()
            return None
        # a tensor value is cast without the overflow check, as in ATen
        return cast_scalar(value._numpy().item(), self.dtype)
    return checked_scalar(value, self.dtype)


def fill_values(self: Tensor, value) -> None:
    """`fill_`'s store without its version bump: what a factory does to the tensor it just
    made (Note: a factory's fill is not a write, in factory.py)."""
    dtype = self._dtype
    cls = value.__class__
    if (cls is float and dtype.is_floating_point and dtype.itemsize >= 4) or (cls is int and (
        (dtype.category == 1 and dtype.is_signed)
        or (dtype.is_floating_point and dtype.itemsize >= 4 and -_EXACT <= value <= _EXACT)
    )):
        # the common fills: a Python number that the dtype stores directly (an int a double
        # holds exactly rounds once, as ATen's int64 -> double -> float)
        low, high = _LIMITS.get(dtype) or _LIMITS.setdefault(dtype, _limits(dtype))
        if low <= value <= high:
            if self.numel() != 0:
                self._numpy()[...] = value
            return
    scalar = _fill_value(self, value)
    if self.numel() != 0:
        self._numpy()[...] = scalar


@native
def fill_(self: Tensor, value) -> Tensor:
    fill_values(self, value)
    self._bump_version()
    return self


@native
def fill(self: Tensor, value) -> Tensor:
    result = _aten().empty_like.default(self)
    if isinstance(value, Tensor):
        return write_fresh(_aten().fill_.Tensor, result, value)
    return write_fresh(_aten().fill_.Scalar, result, value)


@native
def fill_meta_(self: Tensor, value) -> Tensor:
    _fill_value(self, value)
    self._bump_version()
    return self


def zero_values(self: Tensor) -> None:
    """`zero_`'s store without its version bump (as `fill_values`)."""
    if self.numel() != 0:
        self._numpy()[...] = 0


@native
def zero_(self: Tensor) -> Tensor:
    zero_values(self)
    self._bump_version()
    return self


@native
def zero_meta_(self: Tensor) -> Tensor:
    self._bump_version()
    return self


@native
def clone(self: Tensor, memory_format=None) -> Tensor:
    if hasattr(self, "_parts"):  # a sparse tensor: a copy of each part (as clone_sparse)
        fmt = memory_format_name(memory_format)
        if fmt != "preserve_format":
            names = {"contiguous_format": "Contiguous", "channels_last": "ChannelsLast",
                     "channels_last_3d": "ChannelsLast3d"}  # fmt: skip
            raise RuntimeError(f"unsupported memory format option {names.get(fmt, fmt)}")
        return _sparse_to_copy(self, self.dtype, self.device)
    strides = like_strides(self, memory_format)
    result = empty_tensor(self._sizes, self.dtype, self.device, strides)
    if self.device.type != "meta":
        values = self._numpy()
        if self._keyset & MATH_BITS:  # clone resolves the bits (Note: math bits)
            values = math_bit_values(values, self._keyset & MATH_BITS)
        assign(result._numpy(), values)
    return result


@native
def contiguous(self: Tensor, memory_format=None) -> Tensor:
    fmt = memory_format_name(memory_format) if memory_format is not None else "contiguous_format"
    if is_in_format(self, fmt):
        return self
    if fmt == "preserve_format":
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return _aten().clone.default(self, memory_format=memory_format)


@native
def _to_copy(
    self: Tensor,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    non_blocking: bool = False,
    memory_format=None,
) -> Tensor:
    dtype = self.dtype if dtype is None else dtype
    device = self.device if device is None else _as_device(device)
    if self.device.type == "meta" and device.type != "meta":
        raise _no_data_error()
    if hasattr(self, "_parts"):  # a sparse tensor: its parts move, as PyTorch's _to_copy
        return _sparse_to_copy(self, dtype, device)
    strides = like_strides(self, memory_format)
    result = empty_tensor(self._sizes, dtype, device, strides)
    if device.type != "meta":
        _warn_complex_to_real(self.dtype, dtype)
        assign(result._numpy(), self._numpy())
    return result


def _sparse_to_copy(self: Tensor, dtype, device) -> Tensor:
    """Indices keep their dtype and move to `device`; values take `dtype` too."""
    from pyaten.core.sparse import make_compressed, make_coo, sparse_coo

    copy = _aten()._to_copy.default
    *index_parts, values = self._parts
    moved = [copy(p, device=device) for p in index_parts]
    values = copy(values, dtype=dtype, device=device)
    if self._layout is sparse_coo:
        return make_coo(moved[0], values, self._sizes, self._coalesced)
    return make_compressed(self._layout, moved[0], moved[1], values, self._sizes)


@native
def _local_scalar_dense_cpu(self: Tensor):
    # The first element (PyTorch reads the data pointer: no one-element check here).
    if 0 in self._sizes:
        raise RuntimeError("_local_scalar_dense: Empty tensor not supported")
    first = Tensor._make(self._storage, (), (), self._offset, self._dtype, self._device)
    return Tensor.item(first)  # read directly (its key set is the device's alone)


@native
def _local_scalar_dense_meta(self: Tensor):
    raise RuntimeError("Tensor.item() cannot be called on meta tensors")


def _to_impl(self: Tensor, dtype, device, copy: bool, memory_format) -> Tensor:
    target_dtype = self.dtype if dtype is None else dtype
    target_device = self.device if device is None else _as_device(device)
    same = (
        target_dtype is self.dtype
        and target_device.type == self.device.type
        and (target_device.index is None or target_device == self.device)
    )
    fmt = memory_format_name(memory_format)
    if same and not copy and (fmt == "preserve_format" or is_in_format(self, fmt)):
        return self
    # Only what the call named, as PyTorch's to_impl passes it on (a mode sees the same).
    return _aten()._to_copy.default(
        self, dtype=dtype, device=None if device is None else target_device,
        memory_format=memory_format,
    )


@native
def to_dtype_layout(
    self: Tensor,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    non_blocking: bool = False,
    copy: bool = False,
    memory_format=None,
) -> Tensor:
    return _to_impl(self, dtype, device, copy, memory_format)


@native
def to_device(
    self: Tensor, device, dtype, non_blocking: bool = False, copy: bool = False,
    memory_format=None,
) -> Tensor:
    return _to_impl(self, dtype, device, copy, memory_format)


@native
def to_dtype(
    self: Tensor, dtype, non_blocking: bool = False, copy: bool = False, memory_format=None
) -> Tensor:
    return _to_impl(self, dtype, None, copy, memory_format)


@native
def to_other(
    self: Tensor, other: Tensor, non_blocking: bool = False, copy: bool = False,
    memory_format=None,
) -> Tensor:
    return _to_impl(self, other.dtype, other.device, copy, memory_format)


def _as_device(device):
    return make_device(device)


# --- select/slice backward: a fresh tensor with one view written ----------------------------


@native
def select_backward(grad_output: Tensor, input_sizes: tuple, dim: int, index: int) -> Tensor:
    aten = _aten()
    grad_input = aten.zeros.default(
        input_sizes, dtype=grad_output.dtype, device=grad_output.device
    )
    aten.copy_.default(aten.select.int(grad_input, dim, index), grad_output)
    return grad_input


@native
def slice_backward(
    grad_output: Tensor, input_sizes: tuple, dim: int, start: int, end: int, step: int
) -> Tensor:
    aten = _aten()
    grad_input = aten.zeros.default(
        input_sizes, dtype=grad_output.dtype, device=grad_output.device
    )
    aten.copy_.default(aten.slice.Tensor(grad_input, dim, start, end, step), grad_output)
    return grad_input


# select_scatter and slice_scatter live in view_ops.py (they preserve self's strides)


# --- Tensor.to and its shorthands ----------------------------------------------------------
# PyTorch binds `Tensor.to` by hand (its Python forms are not the schemas': a device may come
# first and positionally); these parse those forms and call the `to` overloads, which dispatch.

_TO_FORMS = (
    " * (pyaten.device device = None, pyaten.dtype dtype = None, bool non_blocking = False, "
    "bool copy = False, *, pyaten.memory_format memory_format = None)\n"
    " * (pyaten.dtype dtype, bool non_blocking = False, bool copy = False, *, "
    "pyaten.memory_format memory_format = None)\n"
    " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
    "pyaten.memory_format memory_format = None)\n"
)


def _to_error(args, kwargs) -> TypeError:
    got = ", ".join(
        [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    )
    return TypeError(
        f"to() received an invalid combination of arguments - got ({got}), but expected one "
        f"of:\n{_TO_FORMS}"
    )


def _is_device_like(value) -> bool:
    return isinstance(value, (str, make_device)) or (
        isinstance(value, int) and not isinstance(value, bool)
    )


def tensor_to(self: Tensor, *args, **kwargs) -> Tensor:
    """`Tensor.to(...)`: `to(dtype)`, `to(device, dtype)`, `to(other)`, keywords as in torch."""
    allowed = {"device", "dtype", "non_blocking", "copy", "memory_format", "other"}
    if not set(kwargs) <= allowed:
        raise _to_error(args, kwargs)
    options = dict(kwargs)
    rest = list(args)
    if rest and rest[0] is None:
        rest.pop(0)  # `to(None)`: the device form with no device, as in PyTorch
    elif rest and isinstance(rest[0], Tensor):
        options["other"] = rest.pop(0)
    elif rest and isinstance(rest[0], dtype_class):
        options["dtype"] = rest.pop(0)
    elif rest and _is_device_like(rest[0]):
        options["device"] = rest.pop(0)
        if rest and isinstance(rest[0], dtype_class):
            options["dtype"] = rest.pop(0)
    for name in ("non_blocking", "copy"):
        if rest:
            if name in options or not isinstance(rest[0], bool):
                raise _to_error(args, kwargs)
            options[name] = rest.pop(0)
    if rest:
        raise _to_error(args, kwargs)
    given_dtype, given_device = options.get("dtype"), options.get("device")
    given_format, given_other = options.get("memory_format"), options.get("other")
    if (given_dtype is not None and not isinstance(given_dtype, dtype_class)) or (
            given_device is not None and not _is_device_like(given_device)) or (
            given_format is not None and not is_memory_format(given_format)) or (
            "other" in options and not isinstance(given_other, Tensor)):
        raise _to_error(args, kwargs)  # `to(dtype=5)`: no form takes it, as in PyTorch
    non_blocking = bool(options.get("non_blocking", False))
    copy = bool(options.get("copy", False))
    memory_format = options.get("memory_format")
    aten = _aten()
    if "other" in options:
        if "dtype" in options or "device" in options:
            raise _to_error(args, kwargs)
        return aten.to.other(self, options["other"], non_blocking, copy, memory_format)
    device = options.get("device")
    if isinstance(device, int) and not isinstance(device, bool):
        try:  # a bare index names the accelerator; a build without one refuses as PyTorch
            device = check_compiled(make_device("cuda", device))
        except AssertionError:
            raise RuntimeError("Cannot access accelerator device when none is available.") \
                from None
    return aten.to.dtype_layout(
        self,
        dtype=options.get("dtype"),
        device=None if device is None else make_device(device),
        non_blocking=non_blocking,
        copy=copy,
        memory_format=memory_format,
    )


def _dtype_shorthand(name: str, dtype_name: str):
    def convert(self: Tensor, memory_format=None) -> Tensor:
        return tensor_to(self, getattr(dtypes, dtype_name), memory_format=memory_format)

    convert.__name__ = name
    convert.__qualname__ = f"Tensor.{name}"
    convert.__doc__ = f"`self.to(pyaten.{dtype_name})`."
    return convert


_SHORTHANDS = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "bfloat16": "bfloat16",
    "int": "int32",
    "long": "int64",
    "short": "int16",
    "char": "int8",
    "byte": "uint8",
    "bool": "bool",
    "cfloat": "complex64",
    "cdouble": "complex128",
}


def _cpu(self: Tensor, memory_format=None) -> Tensor:
    return tensor_to(self, "cpu", memory_format=memory_format)


def attach_tensor_conversions() -> None:
    """Install `Tensor.to`, `.cpu()` and `.float()`-style shorthands (after the generated API)."""
    Tensor.to = tensor_to
    Tensor.cpu = _cpu
    for name, dtype_name in _SHORTHANDS.items():
        setattr(Tensor, name, _dtype_shorthand(name, dtype_name))
