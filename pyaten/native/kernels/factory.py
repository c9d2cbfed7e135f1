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

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.device import device as make_device
from pyaten.core.dtypes import get_default_dtype
from pyaten.core.generator import resolve_generator
from pyaten.core.tensor import Tensor, write_fresh
from pyaten.core.views import empty_tensor, resize_tensor_
from pyaten.native.kernels.copy import (
    like_strides,
    memory_format_name,
    strides_for_format,
)
from pyaten.native.kernels.shape import format_shape
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native

_CPU = make_device("cpu")


def _check_sizes(size: tuple) -> None:
    for s in size:
        if s < 0:
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {s}: {format_shape(size)}"
            )


def _resolve(dtype, device):
    return (
        get_default_dtype() if dtype is None else dtype,
        _CPU if device is None else make_device(device),
    )


def _empty(size: tuple, dtype, device, memory_format) -> Tensor:
    _check_sizes(size)
    dtype, device = _resolve(dtype, device)
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
    return empty_tensor(tuple(size), dtype, device, tuple(stride))


@native
def empty_strided(
    size: tuple, stride: tuple, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    return _empty_strided(size, stride, dtype, device)


# --- composites ----------------------------------------------------------------------------


def _new(size, dtype, layout, device, pin_memory) -> Tensor:
    return _aten().empty.memory_format(
        size, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory
    )


@native
def zeros(size: tuple, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    if any(s < 0 for s in size):
        raise RuntimeError("zeros: Dimension size must be non-negative.")
    return write_fresh(_aten().zero_.default, _new(size, dtype, layout, device, pin_memory))


@native
def zeros_out(size: tuple, out: Tensor) -> Tensor:
    _check_sizes(size)
    resize_tensor_(out, tuple(size))
    return _aten().zero_.default(out)


@native
def ones(size: tuple, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return write_fresh(_aten().fill_.Scalar, _new(size, dtype, layout, device, pin_memory), 1)


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
    if dtype is None:
        dtype = full_dtype(fill_value)
    return write_fresh(
        _aten().fill_.Scalar, _new(size, dtype, layout, device, pin_memory), fill_value
    )


@native
def full_out(size: tuple, fill_value, out: Tensor) -> Tensor:
    _check_sizes(size)
    resize_tensor_(out, tuple(size))
    return _aten().fill_.Scalar(out, fill_value)


def _like(self: Tensor, dtype, device, memory_format) -> Tensor:
    dtype = self.dtype if dtype is None else dtype
    device = self.device if device is None else make_device(device)
    if memory_format_name(memory_format) == "preserve_format" and self.device == device:
        strides = like_strides(self, memory_format)
        return _aten().empty_strided.default(
            self._sizes, strides, dtype=dtype, device=device
        )
    return _aten().empty.memory_format(
        self._sizes, dtype=dtype, device=device, memory_format=memory_format
    )


@native
def empty_like(
    self: Tensor, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
) -> Tensor:
    return _like(self, dtype, device, memory_format)


@native
def zeros_like(
    self: Tensor, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
) -> Tensor:
    return write_fresh(_aten().zero_.default, _like(self, dtype, device, memory_format))


@native
def ones_like(
    self: Tensor, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
) -> Tensor:
    return write_fresh(_aten().fill_.Scalar, _like(self, dtype, device, memory_format), 1)


@native
def full_like(
    self: Tensor, fill_value, dtype=None, layout=None, device=None, pin_memory=None,
    memory_format=None,
) -> Tensor:
    return write_fresh(_aten().fill_.Scalar, _like(self, dtype, device, memory_format), fill_value)


def _new_options(self: Tensor, dtype, device):
    return (self.dtype if dtype is None else dtype, self.device if device is None else device)


@native
def new_empty(
    self: Tensor, size: tuple, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    dtype, device = _new_options(self, dtype, device)
    return _new(size, dtype, layout, device, pin_memory)


@native
def new_zeros(
    self: Tensor, size: tuple, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    dtype, device = _new_options(self, dtype, device)
    return write_fresh(_aten().zero_.default, _new(size, dtype, layout, device, pin_memory))


@native
def new_ones(
    self: Tensor, size: tuple, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    dtype, device = _new_options(self, dtype, device)
    return write_fresh(_aten().fill_.Scalar, _new(size, dtype, layout, device, pin_memory), 1)


@native
def new_full(
    self: Tensor, size: tuple, fill_value, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    dtype, device = _new_options(self, dtype, device)
    return write_fresh(
        _aten().fill_.Scalar, _new(size, dtype, layout, device, pin_memory), fill_value
    )


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


# --- random --------------------------------------------------------------------------------


def _check_random_dtype(dtype, kernel: str) -> None:
    if not (dtype.is_floating_point or dtype.is_complex):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{dtype.scalar_name}\'')


def _fill_random(out: Tensor, generator, normal: bool) -> Tensor:
    dtype = out.dtype
    _check_random_dtype(dtype, "normal_kernel_cpu" if normal else "check_uniform_bounds")
    if out.device.type == "meta" or out.numel() == 0:
        return out
    gen = _numpy_generator(generator, out.device)
    shape = out._sizes
    real = dtype.to_real()
    # float16/bfloat16 draw in float32 and round once, like the rest of pyaten
    draw_dtype = np.float64 if real is dt.float64 else np.float32
    if normal:
        if dtype.is_complex:
            # a complex normal has unit variance overall: each part has variance 1/2
            parts = gen.standard_normal((2,) + tuple(shape), dtype=draw_dtype) * np.sqrt(0.5)
            values = parts[0] + 1j * parts[1]
        else:
            values = gen.standard_normal(tuple(shape), dtype=draw_dtype)
    else:
        if dtype.is_complex:
            parts = gen.random((2,) + tuple(shape), dtype=draw_dtype)
            values = parts[0] + 1j * parts[1]
        else:
            values = gen.random(tuple(shape), dtype=draw_dtype)
    out._numpy()[...] = values.astype(dtype.numpy)
    out._bump_version()
    return out


def _numpy_generator(generator, device):
    """The NumPy generator behind `generator`, or behind the device's default generator."""
    return resolve_generator(generator, device).numpy_generator


@native
def rand(size: tuple, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return rand_generator(size, None, dtype, layout, device, pin_memory)


@native
def rand_generator(
    size: tuple, generator, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    result = _new(size, dtype, layout, device, pin_memory)
    return write_fresh(_random_into(_aten().rand.generator_out, size, generator), result)


@native
def rand_out(size: tuple, out: Tensor) -> Tensor:
    return _aten().rand.generator_out(size, generator=None, out=out)


@native
def rand_generator_out(size: tuple, generator, out: Tensor) -> Tensor:
    _check_sizes(size)
    if out._sizes != tuple(size):
        resize_tensor_(out, tuple(size))
    return _fill_random(out, generator, normal=False)


def _random_into(op, size: tuple, generator):
    return lambda result: op(size, generator=generator, out=result)


@native
def randn(size: tuple, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return randn_generator(size, None, dtype, layout, device, pin_memory)


@native
def randn_generator(
    size: tuple, generator, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    result = _new(size, dtype, layout, device, pin_memory)
    return write_fresh(_random_into(_aten().randn.generator_out, size, generator), result)


@native
def randn_out(size: tuple, out: Tensor) -> Tensor:
    return _aten().randn.generator_out(size, generator=None, out=out)


@native
def randn_generator_out(size: tuple, generator, out: Tensor) -> Tensor:
    _check_sizes(size)
    if out._sizes != tuple(size):
        resize_tensor_(out, tuple(size))
    return _fill_random(out, generator, normal=True)


