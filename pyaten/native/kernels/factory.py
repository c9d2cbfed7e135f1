"""Factory kernels: empty, empty_strided, zeros, ones, full, the *_like and new_* forms,
arange, rand and randn.

Only `empty`, `empty_strided`, `arange.start_out` and the generator `out` forms of rand/randn
have device kernels (CPU and Meta); every other factory is a composite that allocates with
`empty` and fills through `fill_`/`zero_`, so each step dispatches.

Note: a factory's fill is not a write.
    PyTorch's Python factories run below `ADInplaceOrView` (variable_factories.h sets
    `AutoDispatchBelowADInplaceOrView`), so the `fill_`/`zero_`/random fill of the tensor they
    just made bumps no version: `torch.ones(3)._version` is 0. pyaten's in-place kernels bump
    the counter themselves, so the factories fill through `write_fresh`, which gives the new
    tensor its counter back. The out= forms are user writes and keep their one bump.

Note: arange's length. ATen computes it in double as ceil((end - start) / step), except for
int64 results where start, end and step are first truncated to integers and the length is
an integer ceiling division; the values are `start + i * step` in the accumulate type
(double for float32/float64, float for float16/bfloat16, int64 for integers).
"""

from __future__ import annotations

import math
import warnings

import ml_dtypes
import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.device import device as make_device
from pyaten.core.dtypes import get_default_dtype
from pyaten.core.memory import check_storage_size
from pyaten.core.symbolic import SymInt, is_symbolic
from pyaten.core.tensor import Tensor, write_fresh
from pyaten.core.views import empty_tensor, resize_tensor_, storage_nbytes_needed
from pyaten.native.kernels.copy import (
    fill_,
    fill_values,
    like_strides,
    memory_format_name,
    strides_for_format,
    zero_,
    zero_values,
)
from pyaten.native.kernels.factory_steps import Step
from pyaten.native.kernels.shape import format_shape
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native

_CPU = make_device("cpu")


_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1


def _check_int64_sizes(size: tuple, name: str) -> None:
    """A size outside int64 is refused by PyTorch's argument parser (a TypeError naming the
    position); the generated fast bindings hand ints straight to the kernel, so the factories
    check it here."""
    for pos, s in enumerate(size, 1):
        if not _INT64_MIN <= s <= _INT64_MAX:
            raise TypeError(
                f"{name}(): argument 'size' failed to unpack the object at pos {pos} with error "
                '"Overflow when unpacking long long"'
            )


def check_scalar_int(value: object) -> None:
    """PyTorch's Scalar parsing of a Python int: int64, else uint64, else OverflowError."""
    if value.__class__ is int and not _INT64_MIN <= value <= _UINT64_MAX:
        if value < 0:
            raise OverflowError("can't convert negative int to unsigned")
        raise OverflowError("int too big to convert")


def _check_int64_args(*values: int) -> None:
    """A plain `int` argument outside int64 (`eye(2**63)`, `linspace(..., steps=2**63)`):
    PyTorch's parser raises ValueError before the kernel runs."""
    for value in values:
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError("Overflow when unpacking long long")


def _check_sizes(size: tuple) -> None:
    for s in size:
        if s < 0:
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {s}: {format_shape(size)}"
            )


def _check_pin_memory(pin_memory) -> None:
    if pin_memory:
        raise RuntimeError(
            "pin_memory=True requires a CUDA or other accelerator backend; no pinned memory "
            "allocator is available on this system."
        )


def _resolve(dtype, device):
    if device is None or device is _CPU:
        return get_default_dtype() if dtype is None else dtype, _CPU
    device = make_device(device)
    if device.type == "cpu":
        device = _CPU  # a CPU tensor has no device index: `device="cpu:0"` makes a "cpu" one
    elif device.type == "meta" and device.index is not None:
        device = make_device("meta")  # nor a meta tensor, as in PyTorch
    return get_default_dtype() if dtype is None else dtype, device


def _empty(size: tuple, dtype, device, memory_format) -> Tensor:
    _check_sizes(size)
    dtype, device = _resolve(dtype, device)
    check_storage_size(size, dtype.itemsize)  # Note: allocation errors
    fmt = memory_format_name(memory_format)
    strides = None if fmt in ("preserve_format", "contiguous_format") else strides_for_format(
        size, fmt, "empty"
    )
    return empty_tensor(tuple(size), dtype, device, strides)


# Note: empty and empty_strided have no tensor argument, so no backend key reaches the
# dispatcher (PyTorch adds a BackendSelect kernel for that); one composite kernel serves every
# device instead, and `empty_tensor` allocates bytes or none according to `device`.


@native
def empty_memory_format(
    size: tuple, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
) -> Tensor:
    _check_pin_memory(pin_memory)
    _check_int64_sizes(size, "empty")
    return _empty(size, dtype, device, memory_format)


@native
def empty_out(size: tuple, memory_format=None, out: Tensor = None) -> Tensor:
    _check_sizes(size)
    resize_tensor_(out, tuple(size))
    return out


def _empty_strided(size: tuple, stride: tuple, dtype, device) -> Tensor:
    if len(size) != len(stride):
        raise RuntimeError(
            f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
            f"({len(stride)})"
        )
    _check_sizes(size)
    if any(s < 0 for s in stride):
        raise RuntimeError(
            f"Storage size calculation overflowed with sizes={format_shape(size)} and "
            f"strides={format_shape(stride)}"
        )
    dtype, device = _resolve(dtype, device)
    if storage_nbytes_needed(size, stride, 0, dtype.itemsize) > _INT64_MAX:
        raise RuntimeError(
            f"Storage size calculation overflowed with sizes={format_shape(size)} and "
            f"strides={format_shape(stride)}"
        )
    return empty_tensor(tuple(size), dtype, device, tuple(stride))


@native
def empty_strided(
    size: tuple, stride: tuple, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    _check_pin_memory(pin_memory)
    _check_int64_sizes(size, "empty_strided")
    return _empty_strided(size, stride, dtype, device)


# --- composites ----------------------------------------------------------------------------


def _new(size, dtype, layout, device, pin_memory) -> Tensor:
    if _EMPTY.ready_on(device):  # Note: the direct steps of a factory
        return empty_memory_format(tuple(size), dtype, layout, device, pin_memory, None)
    # every argument positional, in schema order: the handle's fast path (no parsing)
    return _aten().empty.memory_format(tuple(size), dtype, layout, device, pin_memory, None)


def _fill(fresh: Tensor, value) -> Tensor:
    """`fill_(fresh, value)` on a tensor the factory just made, its version kept at 0."""
    if _FILL.ready(fresh):  # Note: the direct steps of a factory
        fill_values(fresh, value)  # fill_ less the bump that write_fresh would undo
        return fresh
    return write_fresh(_aten().fill_.Scalar, fresh, value)


def _zero(fresh: Tensor) -> Tensor:
    """`zero_(fresh)` on a tensor the factory just made, its version kept at 0."""
    if _ZERO.ready(fresh):  # Note: the direct steps of a factory
        zero_values(fresh)  # zero_ less the bump that write_fresh would undo
        return fresh
    return write_fresh(_aten().zero_.default, fresh)


@native
def zeros(size: tuple, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    _check_int64_sizes(size, "zeros")
    if any(s < 0 for s in size):
        raise RuntimeError("zeros: Dimension size must be non-negative.")
    return _zero(_new(size, dtype, layout, device, pin_memory))


@native
def zeros_out(size: tuple, out: Tensor) -> Tensor:
    _check_sizes(size)
    resize_tensor_(out, tuple(size))
    return _aten().zero_.default(out)


@native
def ones(size: tuple, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    _check_int64_sizes(size, "ones")
    return _fill(_new(size, dtype, layout, device, pin_memory), 1)


@native
def ones_out(size: tuple, out: Tensor) -> Tensor:
    _check_sizes(size)
    resize_tensor_(out, tuple(size))
    return _aten().fill_.Scalar(out, 1)


def full_dtype(fill_value):
    """full() infers its dtype from the fill value: bool, int64, default float or complex."""
    if isinstance(fill_value, bool):
        return dt.bool
    if isinstance(fill_value, int):
        return dt.int64
    if isinstance(fill_value, complex):
        return dt.default_complex_dtype()
    return get_default_dtype()


@native
def full(
    size: tuple, fill_value, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    _check_int64_sizes(size, "full")
    check_scalar_int(fill_value)
    if dtype is None:
        dtype = full_dtype(fill_value)
    return _fill(_new(size, dtype, layout, device, pin_memory), fill_value)


@native
def full_out(size: tuple, fill_value, out: Tensor) -> Tensor:
    _check_sizes(size)
    resize_tensor_(out, tuple(size))
    return _aten().fill_.Scalar(out, fill_value)


@native
def empty_like(
    self: Tensor, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
) -> Tensor:
    dtype = self._dtype if dtype is None else dtype
    if device is None:
        device = self._device
        same_device = True
    else:
        device = make_device(device)
        same_device = self._device == device
    if same_device and (memory_format is None
                        or memory_format_name(memory_format) == "preserve_format"):
        strides = like_strides(self, memory_format)
        if _EMPTY_STRIDED.ready_on(device):  # Note: the direct steps of a factory
            # empty_strided's kernel, whose checks an existing tensor's sizes and dense
            # strides pass
            return empty_tensor(self._sizes, dtype, _CPU, strides)
        # every argument positional, in schema order: the handle's fast path (no parsing)
        return _aten().empty_strided.default(self._sizes, strides, dtype, None, device, None)
    if _EMPTY.ready_on(device):
        return empty_memory_format(self._sizes, dtype, None, device, None, memory_format)
    return _aten().empty.memory_format(self._sizes, dtype, None, device, None, memory_format)


def _like(self: Tensor, dtype, layout, device, pin_memory, memory_format) -> Tensor:
    """The *_like composites' first step, `empty_like` (as ATen's)."""
    if _EMPTY_LIKE.ready(self):  # Note: the direct steps of a factory
        return empty_like(self, dtype, layout, device, pin_memory, memory_format)
    return _aten().empty_like.default(self, dtype, layout, device, pin_memory, memory_format)


@native
def zeros_like(
    self: Tensor, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
) -> Tensor:
    return _zero(_like(self, dtype, layout, device, pin_memory, memory_format))


@native
def ones_like(
    self: Tensor, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
) -> Tensor:
    return _fill(_like(self, dtype, layout, device, pin_memory, memory_format), 1)


@native
def full_like(
    self: Tensor, fill_value, dtype=None, layout=None, device=None, pin_memory=None,
    memory_format=None,
) -> Tensor:
    check_scalar_int(fill_value)
    return _fill(_like(self, dtype, layout, device, pin_memory, memory_format), fill_value)


def _new_options(self: Tensor, dtype, device):
    return (self.dtype if dtype is None else dtype, self.device if device is None else device)


@native
def new_empty(
    self: Tensor, size: tuple, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    _check_int64_sizes(size, "new_empty")
    dtype, device = _new_options(self, dtype, device)
    return _new(size, dtype, layout, device, pin_memory)


@native
def new_empty_strided(
    self: Tensor, size: tuple, stride: tuple, dtype=None, layout=None, device=None,
    pin_memory=None,
) -> Tensor:
    dtype, device = _new_options(self, dtype, device)
    return _aten().empty_strided.default(tuple(size), tuple(stride), dtype, layout, device,
                                          pin_memory)


def _new_like(self: Tensor, size: tuple, dtype, layout, device, pin_memory) -> Tensor:
    """The new_* composites' first step, `new_empty` (as ATen's)."""
    if _NEW_EMPTY.ready(self):  # Note: the direct steps of a factory
        return new_empty(self, size, dtype, layout, device, pin_memory)
    return _aten().new_empty.default(self, size, dtype, layout, device, pin_memory)


@native
def new_zeros(
    self: Tensor, size: tuple, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    _check_int64_sizes(size, "new_zeros")
    return _zero(_new_like(self, size, dtype, layout, device, pin_memory))


@native
def new_ones(
    self: Tensor, size: tuple, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    _check_int64_sizes(size, "new_ones")
    return _fill(_new_like(self, size, dtype, layout, device, pin_memory), 1)


@native
def new_full(
    self: Tensor, size: tuple, fill_value, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    _check_int64_sizes(size, "new_full")
    check_scalar_int(fill_value)
    return _fill(_new_like(self, size, dtype, layout, device, pin_memory), fill_value)


# The steps the composites above may call directly (Note: the direct steps of a factory).
_EMPTY = Step("empty", "memory_format", empty_memory_format, tensorless=True)
_EMPTY_STRIDED = Step("empty_strided", "default", empty_strided, tensorless=True)
_EMPTY_LIKE = Step("empty_like", "default", empty_like)
_NEW_EMPTY = Step("new_empty", "default", new_empty)
_FILL = Step("fill_", "Scalar", fill_)
_ZERO = Step("zero_", "default", zero_)


# --- arange --------------------------------------------------------------------------------


def arange_dtype(start, end, step):
    """int64 when start, end and step are all integers, else the default float dtype."""
    for v in (start, end, step):
        if isinstance(v, complex):
            raise RuntimeError("arange: complex start, end and step are not supported")
        if isinstance(v, float):
            return get_default_dtype()
    return dt.int64


def _arange_new(start, end, step, dtype, layout, device, pin_memory) -> Tensor:
    for value in (start, end, step):
        check_scalar_int(value)
    if dtype is None:
        dtype = arange_dtype(start, end, step)
    result = _aten().empty.memory_format(
        (0,), dtype=dtype, layout=layout, device=device, pin_memory=pin_memory
    )
    return write_fresh(_arange_into, result, start, end, step)


def _arange_into(result: Tensor, start, end, step) -> Tensor:
    return _aten().arange.start_out(start, end, step, out=result)


@native
def arange(end, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return _arange_new(0, end, 1, dtype, layout, device, pin_memory)


@native
def arange_start(start, end, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return _arange_new(start, end, 1, dtype, layout, device, pin_memory)


@native
def arange_start_step(
    start, end, step=1, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    return _arange_new(start, end, step, dtype, layout, device, pin_memory)


@native
def arange_end_out(end, out: Tensor) -> Tensor:
    return _aten().arange.start_out(0, end, 1, out=out)


def _acc_type(dtype):
    if dtype in (dt.float16, dt.bfloat16):
        return np.float32
    if dtype.is_floating_point:
        return np.float64
    return np.int64


def arange_length(start, end, step, dtype) -> int:
    """Number of elements arange(start, end, step) makes for a result of `dtype`."""
    if dtype is dt.bool or dtype.is_complex:
        raise NotImplementedError(f'"arange_cpu" not implemented for \'{dtype.scalar_name}\'')
    if is_symbolic(start) or is_symbolic(end):
        length = _symbolic_length(start, end, step)
        if length is not None:
            return length
    xs, xe, xstep = float(start), float(end), float(step)
    if xstep == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(xs) and math.isfinite(xe)):
        raise RuntimeError(f"unsupported range: {_fmt_num(xs)} -> {_fmt_num(xe)}")
    if not ((xstep > 0 and xe >= xs) or (xstep < 0 and xe <= xs)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is dt.int64:
        # int64 results truncate the bounds and step to integers before counting
        ixs, ixe, ixstep = int(start), int(end), int(step)
        if ixstep == 0:
            raise ValueError("step must be nonzero")
        sgn = 1 if ixstep > 0 else -1
        numerator = ixe - ixs + ixstep - sgn
        # C++ integer division truncates toward zero
        length = abs(numerator) // abs(ixstep)
        if (numerator < 0) != (ixstep < 0):
            length = -length
    else:
        length = math.ceil((xe - xs) / xstep)
    if length < 0 or length > 2**63 - 1:
        raise RuntimeError("invalid size, possible overflow?")
    return int(length)


def _symbolic_length(start, end, step):
    """arange's length as a symbolic size, where the bounds are integer sizes (SymInt or
    int) and the step a plain nonzero int: `ceil((end - start) / step)` taken exactly as an
    integer quotient, so `arange(x.shape[0])` follows the size instead of pinning it (Note:
    symbolic values carry a hint). Anything else (a float bound, a symbolic step) is None:
    the caller counts with the hints, which specialises."""
    if not all(isinstance(v, (int, SymInt)) and not isinstance(v, bool) for v in (start, end)):
        return None
    if step.__class__ is not int or step == 0:
        return None
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if step == 1:
        return end - start
    if step > 0:
        return (end - start + (step - 1)) // step
    return (start - end + (-step - 1)) // -step


def _fmt_num(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:g}"


@native
def arange_out(start, end, step, out: Tensor) -> Tensor:
    dtype = out.dtype
    length = arange_length(start, end, step, dtype)
    check_storage_size((length,), dtype.itemsize)  # Note: allocation errors
    if out.numel() != length:
        if out.numel() > 0:
            warnings.warn(
                f"The number of elements in the out tensor of shape {format_shape(out._sizes)} "
                f"is {out.numel()} which does not match the computed number of elements "
                f"{length}. Note that this may occur as a result of rounding error. The out "
                f"tensor will be resized to a tensor of shape ({length},).",
                UserWarning,
                stacklevel=3,
            )
        resize_tensor_(out, (length,))
    if out.device.type != "meta" and length:
        acc = _acc_type(dtype)
        if dtype is dt.int64 or not dtype.is_floating_point:
            xs, xstep = int(start), int(step)
        else:
            xs, xstep = acc(start), acc(step)
        values = xs + np.arange(length, dtype=acc) * acc(xstep)
        # integer results wrap like the C++ cast from int64
        out._numpy()[...] = values.astype(dtype.numpy)
    out._bump_version()
    return out


# --- scalar_tensor, eye ----------------------------------------------------------------------


@native
def scalar_tensor(s, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    # Default dtype unless `dtype` is given: `scalar_tensor(2)` is `tensor(2.)`, as in PyTorch.
    result = _new((), dtype, layout, device, pin_memory)
    return write_fresh(_aten().fill_.Scalar, result, s)


def _check_eye(n: int, m: int) -> None:
    _check_int64_args(n, m)
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")


@native
def eye(n: int, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return eye_m(n, n, dtype, layout, device, pin_memory)


@native
def eye_m(n: int, m: int, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    _check_eye(n, m)
    result = _new((n, m), dtype, layout, device, pin_memory)
    return write_fresh(lambda t: _aten().eye.m_out(n, m, out=t), result)


@native
def eye_out(n: int, out: Tensor) -> Tensor:
    return eye_m_out(n, n, out)


@native
def eye_m_out(n: int, m: int, out: Tensor) -> Tensor:
    _check_eye(n, m)
    if out._dtype is dt.complex32:
        raise NotImplementedError("\"eye\" not implemented for 'ComplexHalf'")
    resize_tensor_(out, (n, m))
    if out.device.type != "meta":
        values = out._numpy()
        values[...] = 0
        np.fill_diagonal(values, 1)
    out._bump_version()
    return out


# --- linspace, logspace ----------------------------------------------------------------------


def _check_endpoints(op: str, start, end) -> tuple:
    if isinstance(start, Tensor) or isinstance(end, Tensor):
        given = [f"{name} with {v.dim()} dimension(s)"
                 for name, v in (("start", start), ("end", end)) if isinstance(v, Tensor)]
        if any(isinstance(v, Tensor) and v.dim() for v in (start, end)):
            raise RuntimeError(  # names the tensors of the overload, as PyTorch's
                f"{op} only supports 0-dimensional start and end tensors, but got "
                f"{' and '.join(given)}."
            )
    # PyTorch accepts only 0-dim tensors: their values are the numbers
    return tuple(v.item() if isinstance(v, Tensor) else v for v in (start, end))


def _space_dtype(start, end):
    if isinstance(start, complex) or isinstance(end, complex):
        return dt.default_complex_dtype()
    return get_default_dtype()


def _split(x: float) -> tuple[float, float]:
    """x as hi + lo, each of at most 26 significant bits (Veltkamp's split)."""
    scaled = x * 134217729.0
    hi = scaled - (scaled - x)
    return hi, x - hi


def _fma_float32(a, b: np.ndarray, c) -> np.ndarray:
    """`a * b + c` rounded once into float32. The product is exact in the wide type (a float32
    times an integer count); the sum is rounded there, which can land exactly on a float32
    midpoint that the exact sum is not on (`c` far smaller than the product): there the
    sum's rounding error (Knuth's two-sum) says which neighbour the exact value is nearer."""
    wide = np.longdouble
    with np.errstate(all="ignore"):
        p = wide(a) * np.asarray(b, wide)
        c = np.broadcast_to(np.asarray(c, wide), p.shape)
        s = p + c
        result = s.astype(np.float32)
        v = s - p
        error = (p - (s - v)) + (c - v)  # p + c == s + error exactly
        doubt = (error != 0) & np.isfinite(s)
        if doubt.any():
            r, s_, e = result[doubt], s[doubt], error[doubt]
            up = r.astype(wide) < s_  # s_ lies between r and its neighbour on this side
            other = np.nextafter(r, np.where(up, np.float32(np.inf), np.float32(-np.inf)))
            tie = (r.astype(wide) + other.astype(wide)) / 2 == s_
            # on a midpoint, the exact value is on the error's side of it
            nearer = np.where((e > 0) == (other > r), other, r)
            result[doubt] = np.where(tie, nearer, r)
    return result


def fused_multiply_add(a, b: np.ndarray, c, dtype: np.dtype) -> np.ndarray:
    """`a * b + c` (a scalar, `b` an array of integers, `c` a scalar or array) rounded once
    into float32 or float64: what ATen's CPU loops compute where the compiler fused the
    multiply and the add (an FMA instruction). float32 goes through extended precision, where
    the product is exact; float64 through error-free transformations (Dekker's product,
    Knuth's sum), with the rare element whose final rounding they leave in doubt computed in
    exact fractions."""
    if dtype == np.float32:
        return _fma_float32(a, b, c)
    a = float(a)
    b = np.asarray(b, np.float64)
    c = np.broadcast_to(np.asarray(c, np.float64), b.shape)
    if not math.isfinite(a) or b.size == 0 or np.abs(b).max() >= 2.0**26:
        return _exact_fma(a, b, c, np.ones(b.shape, bool), a * b + c)
    hi, lo = _split(a)
    with np.errstate(all="ignore"):
        # a * b = p + e exactly: b has at most 26 bits, so hi * b and lo * b are exact
        p = b * a
        e = b * hi
        e -= p
        spare = b * lo
        e += spare
        # p + c = s + t exactly
        s = p + c
        v = s - p
        t = s - v
        np.subtract(p, t, out=t)
        np.subtract(c, v, out=spare)
        t += spare
        # t + e = u + w exactly: the result s + u + w, where only w != 0 can round twice
        u = t + e
        np.subtract(u, t, out=v)
        np.subtract(u, v, out=spare)
        np.subtract(t, spare, out=spare)
        np.subtract(e, v, out=v)
        spare += v
        result = np.add(s, u, out=p)
        doubt = spare != 0
        doubt |= ~np.isfinite(result)
    return _exact_fma(a, b, c, doubt, result)


def _exact_fma(a: float, b: np.ndarray, c: np.ndarray, doubt: np.ndarray,
               result: np.ndarray) -> np.ndarray:
    """`result` with the elements marked in `doubt` recomputed as exact fractions, rounded
    once (those that are not finite numbers as IEEE arithmetic gives them)."""
    from fractions import Fraction  # only for the elements in doubt: not at `import pyaten`

    result = np.array(result, np.float64)
    exact_a = Fraction(a) if math.isfinite(a) else None
    for i in np.flatnonzero(doubt):
        bi, ci = float(b.flat[i]), float(c.flat[i])
        if exact_a is None or not (math.isfinite(bi) and math.isfinite(ci)):
            result.flat[i] = a * bi + ci
            continue
        try:
            result.flat[i] = float(exact_a * Fraction(bi) + Fraction(ci))
        except OverflowError:
            result.flat[i] = math.copysign(math.inf, a * bi + ci)
    return result


def _half_steps(low, high, steps: int, dtype: np.dtype, first, count) -> np.ndarray:
    start, end = np.asarray(low, dtype), np.asarray(high, dtype)
    step = (end - start) / dtype.type(steps - 1) if steps > 1 else dtype.type(0)
    return np.where(first, start + step * count.astype(dtype),
                    end - step * count.astype(dtype)).astype(dtype)


def linspace_values(low: float, high: float, steps: int, dtype: np.dtype) -> np.ndarray:
    """PyTorch's CPU `linspace` into a floating `dtype`, bit for bit: the first half counts up
    from `low`, the second down from `high`, `steps // 2` values each side. float32 and
    float64 take one fused multiply-add per value (ATen's loop compiles to FMA);
    float16/bfloat16 round after every step, in their own dtype."""
    i = np.arange(steps)
    first = (i < steps // 2) | (steps == 1)
    count = np.where(first, i, steps - 1 - i)
    if dtype.itemsize < 4:
        with np.errstate(over="ignore", invalid="ignore"):
            return _half_steps(low, high, steps, dtype, first, count)
    start, end = dtype.type(low), dtype.type(high)
    step = (end - start) / dtype.type(steps - 1) if steps > 1 else dtype.type(0)
    half = int(first.sum())
    counts = count.astype(np.float64)
    values = np.empty(steps, dtype)
    values[:half] = fused_multiply_add(step, counts[:half], start, dtype)
    # the second half as `-step * k + end` (a negated product: end - 0 * step keeps +0.0)
    values[half:] = fused_multiply_add(-step, counts[half:], end, dtype)
    return values


# linspace reads its endpoints as the result's type, checked (c10's Scalar::to<T>): a finite
# value beyond the type's largest raises, even where it would round to it
_ENDPOINT_TYPES = {
    dt.float16: "c10::Half", dt.bfloat16: "c10::BFloat16", dt.float32: "float",
}


def _check_endpoint(value, dtype) -> None:
    name = _ENDPOINT_TYPES.get(dtype)
    if name is None or isinstance(value, complex):
        return
    largest = float(ml_dtypes.finfo(dtype.numpy).max)
    if math.isfinite(value) and abs(value) > largest:
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


def _space_values(start, end, steps: int, dtype, fused: bool = True) -> np.ndarray:
    """linspace's values as ATen computes them: `start + step * i` for the first half and
    `end - step * (steps - 1 - i)` for the second, in the step type (double for integer
    results, else the result's type; float32 for float16 and bfloat16). `fused`: floating
    results as `linspace_values` (linspace's loop); logspace's exponents are not fused."""
    if fused and dtype.is_floating_point:
        return linspace_values(start, end, steps, np.dtype(dtype.numpy))
    if fused and dtype in (dt.complex64, dt.complex128):
        # c10::complex times an integer is a product per component, fused with the add
        part = np.dtype(np.float32 if dtype is dt.complex64 else np.float64)
        low, high = complex(start), complex(end)
        values = np.empty(steps, np.dtype(dtype.numpy))
        values.real = linspace_values(low.real, high.real, steps, part)
        values.imag = linspace_values(low.imag, high.imag, steps, part)
        return values
    if dtype.is_complex:
        acc = np.complex128 if dtype is dt.complex128 else np.complex64
    elif dtype.is_floating_point:
        acc = np.float64 if dtype is dt.float64 else np.float32
    else:
        # integer results: the endpoints are first converted to the result type (wrapping)
        acc = np.float64
        start, end = (
            int(np.array(int(v.real if isinstance(v, complex) else v)).astype(dtype.numpy))
            for v in (start, end)
        )
    first, last = acc(start), acc(end)
    if steps == 1:
        return np.array([first], dtype=acc)
    step = (last - first) / acc(steps - 1)
    if dtype in (dt.float16, dt.bfloat16):
        # the step is a value of the result's type in ATen (rounded), the sums run in float
        first, last, step = (acc(v.astype(dtype.numpy)) for v in (first, last, step))
    half = steps // 2
    values = np.empty(steps, dtype=acc)
    head, tail = values[:half], values[half:]
    np.multiply(np.arange(half, dtype=acc), step, out=head)
    head += first
    # the second half counts back from `end`: (steps - 1 - i) steps before it
    np.multiply(np.arange(steps - 1 - half, -1, -1, dtype=acc), step, out=tail)
    np.subtract(last, tail, out=tail)
    return values


def _log_exponents(start, end, steps: int, dtype) -> np.ndarray:
    """logspace's exponents into a real floating `dtype`, as ATen's CPU loop takes them: the
    endpoints as the result's type, their difference in that type (a rounded half-precision
    value for float16/bfloat16), the step and every exponent in double, counting up from
    `start` for the first half and down from `end` for the rest. A single step is `start`
    itself, never rounded to the result's type."""
    if steps == 1:
        return np.array([float(start.real if isinstance(start, complex) else start)])
    kind = np.dtype(dtype.numpy).type
    first, last = (kind(v.real if isinstance(v, complex) else v) for v in (start, end))
    if dtype.itemsize < 4:  # c10::Half/BFloat16 subtract in float and round the difference
        span = float(kind(np.float32(last) - np.float32(first)))
    else:
        span = float(last - first)
    step = span / (steps - 1)
    i = np.arange(steps, dtype=np.float64)
    half = steps // 2
    exponents = np.empty(steps)
    exponents[:half] = float(first) + step * i[:half]
    exponents[half:] = float(last) - step * (steps - 1 - i[half:])
    return exponents


def _space_fill(op: str, out: Tensor, start, end, steps: int, base=None) -> Tensor:
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    d = out._dtype
    if (d is dt.bool or d is dt.complex32) and steps > 1:  # ATen fills 0 or 1 steps directly
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{d.scalar_name}'")
    if out._sizes != (steps,):
        resize_tensor_(out, (steps,))
    # ATen converts the endpoints to the result's type, checked, only where it steps between
    # them; one linspace value is a fill with `start` (checked for float only), one logspace
    # value a double pow
    if d.is_floating_point and steps > 1:
        for value in (start, end):
            _check_endpoint(value, d)
    elif base is None and steps == 1 and d is dt.float32:
        _check_endpoint(start, d)
    if out.device.type != "meta" and steps:
        if base is not None and d.is_floating_point:
            values = _log_exponents(start, end, steps, d)
        else:
            values = _space_values(start, end, steps, d, fused=base is None)
        if base is not None:
            wide = np.complex128 if d.is_complex else np.float64
            with np.errstate(over="ignore"):
                values = np.power(wide(base), values.astype(wide))
            if d in (dt.float16, dt.bfloat16):  # c10::Half(double) goes through float
                values = values.astype(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            if d.is_integral:  # truncate, then wrap as C++'s conversions do
                values = np.trunc(values).astype(np.int64)
            out._numpy()[...] = values.astype(d.numpy)
    out._bump_version()
    return out


def _space_new(op: str, start, end, steps, base, dtype, layout, device, pin_memory) -> Tensor:
    _check_int64_args(steps)
    start, end = _check_endpoints(op, start, end)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if dtype is None:
        dtype = _space_dtype(start, end)
    result = _new((steps,), dtype, layout, device, pin_memory)
    if base is None:
        return write_fresh(lambda t: _aten().linspace.out(start, end, steps, out=t), result)
    return write_fresh(lambda t: _aten().logspace.out(start, end, steps, base, out=t), result)


@native
def linspace(start, end, steps: int, dtype=None, layout=None, device=None, pin_memory=None):
    return _space_new("linspace", start, end, steps, None, dtype, layout, device, pin_memory)


@native
def linspace_out(start, end, steps: int, out: Tensor) -> Tensor:
    return _space_fill("linspace", out, start, end, steps)


@native
def linspace_tensors_out(start, end, steps: int, out: Tensor) -> Tensor:
    start, end = _check_endpoints("linspace", start, end)
    return _aten().linspace.out(start, end, steps, out=out)


@native
def logspace(
    start, end, steps: int, base: float = 10.0, dtype=None, layout=None, device=None,
    pin_memory=None,
) -> Tensor:
    return _space_new("logspace", start, end, steps, base, dtype, layout, device, pin_memory)


@native
def logspace_out(start, end, steps: int, base: float = 10.0, out: Tensor = None) -> Tensor:
    return _space_fill("logspace", out, start, end, steps, base)


@native
def logspace_tensors_out(start, end, steps: int, base: float = 10.0, out: Tensor = None):
    start, end = _check_endpoints("logspace", start, end)
    return _aten().logspace.out(start, end, steps, base, out=out)


# --- tril_indices, triu_indices --------------------------------------------------------------


def _triangle_indices(op: str, row: int, col: int, offset: int, dtype, lower: bool, options):
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dtype = dt.int64 if dtype is None else dtype
    if dtype not in (dt.int32, dt.int64):
        raise NotImplementedError(f"\"{op}\" not implemented for '{dtype.scalar_name}'")
    # the result is allocated first, at its counted size: a huge one fails as PyTorch's
    # allocation does, before any NumPy temporary of row * col entries
    count = _lower_count(row, col, offset) if lower else row * col - _lower_count(
        row, col, offset - 1)
    result = _new((2, count), dtype, *options)
    if result.device.type != "meta" and count:
        # only the rows that hold entries (at most `count` of them), each a run of columns
        if lower:
            rows = np.arange(min(max(-offset, 0), row), row, dtype=np.int64)
            starts = np.zeros_like(rows)
            stops = np.minimum(rows + (offset + 1), col)
        else:
            rows = np.arange(0, max(min(row, col - offset), 0), dtype=np.int64)
            starts = np.maximum(rows + offset, 0)
            stops = np.full_like(rows, col)
        lengths = stops - starts
        ends = np.cumsum(lengths)
        out = result._numpy()
        out[0] = np.repeat(rows, lengths)
        out[1] = np.arange(count) - np.repeat(ends - lengths - starts, lengths)
    return result


def _lower_count(row: int, col: int, offset: int) -> int:
    """How many (r, c) in a row x col grid have c - r <= offset: row r holds
    clamp(r + offset + 1, 0, col) of them, an arithmetic run between a zero part and a full
    part."""
    k = offset + 1
    first = min(max(1 - k, 0), row)  # rows before it hold none
    full = min(max(col - k, first), row)  # rows from it on hold all `col`
    n = full - first
    return n * (first + full - 1) // 2 + k * n + (row - full) * col


@native
def tril_indices(row: int, col: int, offset: int = 0, dtype=None, layout=None, device=None,
                 pin_memory=None) -> Tensor:
    options = (layout, device, pin_memory)
    return _triangle_indices("tril_indices", row, col, offset, dtype, True, options)


@native
def triu_indices(row: int, col: int, offset: int = 0, dtype=None, layout=None, device=None,
                 pin_memory=None) -> Tensor:
    options = (layout, device, pin_memory)
    return _triangle_indices("triu_indices", row, col, offset, dtype, False, options)
