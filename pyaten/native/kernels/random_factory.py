"""Random factories: rand, randn, randint, randperm and the *_like forms (rand_like,
randn_like, randint_like).

Each is a composite, as in ATen: allocate with `empty`/`empty_like`, then fill with an in-place
sampler (`uniform_`, `normal_`, `random_`, pyaten/native/kernels/random.py) through
`write_fresh` (see Note: a factory's fill is not a write, in factory.py). Only rand/randn's
generator `out` forms and `randperm.generator_out` draw themselves.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor, write_fresh
from pyaten.core.views import resize_tensor_
from pyaten.native.kernels import random_draws as draws
from pyaten.native.kernels.factory import _check_int64_sizes, _check_sizes
from pyaten.native.kernels.random import (
    _float_digits,
    _int_bounds,
    _not_implemented,
    _rng,
    _skip,
)
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import resize_output

# --- random --------------------------------------------------------------------------------


def _check_random_dtype(dtype, kernel: str) -> None:
    if not (dtype.is_floating_point or dtype.is_complex):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{dtype.scalar_name}\'')


def _fill_random(out: Tensor, generator, normal: bool) -> Tensor:
    """rand/randn's out= fill: `uniform_(0, 1)` or `normal_(0, 1)`, as ATen composes them."""
    _check_random_dtype(out.dtype, "normal_kernel_cpu" if normal else "check_uniform_bounds")
    if out.device.type == "meta" or out.numel() == 0:
        return out
    if normal:
        return _aten().normal_.default(out, 0.0, 1.0, generator)
    return _aten().uniform_.default(out, 0.0, 1.0, generator)


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


# --- random factories ----------------------------------------------------------------------


def _new(size, dtype, layout, device, pin_memory) -> Tensor:
    # every argument positional, in schema order: the handle's fast path (no parsing)
    return _aten().empty.memory_format(tuple(size), dtype, layout, device, pin_memory, None)


def _randint_new(low, high, size, generator, dtype, layout, device, pin_memory) -> Tensor:
    _check_int64_sizes(size, "randint")  # the fast binding passes any int (factory.py)
    result = _new(size, dtype, layout, device, pin_memory)
    return write_fresh(_random_from(), result, low, high, generator)


@native
def randint(high, size, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return _randint_new(0, high, size, None, dtype, layout, device, pin_memory)


@native
def randint_generator(
    high, size, generator, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    return _randint_new(0, high, size, generator, dtype, layout, device, pin_memory)


@native
def randint_low(low, high, size, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return _randint_new(low, high, size, None, dtype, layout, device, pin_memory)


@native
def randint_low_generator(
    low, high, size, generator, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    return _randint_new(low, high, size, generator, dtype, layout, device, pin_memory)


def _randint_into(low, high, size, generator, out: Tensor) -> Tensor:
    _check_sizes(tuple(size))
    resize_output(out, tuple(size), "randint")
    return _random_from()(out, low, high, generator=generator)


@native
def randint_out(high, size, out: Tensor) -> Tensor:
    return _randint_into(0, high, size, None, out)


@native
def randint_generator_out(high, size, generator, out: Tensor) -> Tensor:
    return _randint_into(0, high, size, generator, out)


@native
def randint_low_out(low, high, size, out: Tensor) -> Tensor:
    return _randint_into(low, high, size, None, out)


@native
def randint_low_generator_out(low, high, size, generator, out: Tensor) -> Tensor:
    return _randint_into(low, high, size, generator, out)


def _randperm_checks(n: int, d) -> None:
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    if d.is_floating_point:
        limit = 2 ** _float_digits(d) + 1
        if n > limit:
            raise RuntimeError(f"n cannot be greater than {limit} for {d.scalar_name} type.")
    elif d.category == dt.INT_CATEGORY:
        lo, hi = _int_bounds(d)
        if n - 1 > hi:
            name = d.name + "_t"
            raise RuntimeError(f"value cannot be converted to type {name} without overflow")
    if d is dt.bool or d.is_complex:
        raise _not_implemented("randperm", d)


@native
def randperm_generator_out(n: int, generator, out: Tensor) -> Tensor:
    _randperm_checks(n, out._dtype)
    resize_output(out, (n,), "randperm")
    if not _skip(out):
        values = draws.permutation(_rng(generator, out), n)
        with np.errstate(invalid="ignore", over="ignore"):
            out._numpy()[...] = values.astype(out._dtype.numpy)
    out._bump_version()
    return out


@native
def randperm_out(n: int, out: Tensor) -> Tensor:
    return _aten().randperm.generator_out(n, generator=None, out=out)


def _randperm_new(n, generator, dtype, layout, device, pin_memory) -> Tensor:
    result = _new((n,), dtype, layout, device, pin_memory)
    return write_fresh(
        lambda t: _aten().randperm.generator_out(n, generator, t), result
    )


@native
def randperm(n: int, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return _randperm_new(n, None, dtype, layout, device, pin_memory)


@native
def randperm_generator(
    n: int, generator, dtype=None, layout=None, device=None, pin_memory=None
) -> Tensor:
    return _randperm_new(n, generator, dtype, layout, device, pin_memory)


# --- *_like ---------------------------------------------------------------------------------


def _like(self, dtype, layout, device, pin_memory, memory_format) -> Tensor:
    return _aten().empty_like.default(self, dtype, layout, device, pin_memory, memory_format)


@native
def rand_like_generator(
    self, generator, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
) -> Tensor:
    result = _like(self, dtype, layout, device, pin_memory, memory_format)
    return write_fresh(_aten().uniform_.default, result, 0.0, 1.0, generator)


@native
def rand_like(
    self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
) -> Tensor:
    return rand_like_generator(self, None, dtype, layout, device, pin_memory, memory_format)


@native
def randn_like_generator(
    self, generator, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
) -> Tensor:
    result = _like(self, dtype, layout, device, pin_memory, memory_format)
    return write_fresh(_aten().normal_.default, result, 0.0, 1.0, generator)


@native
def randn_like(
    self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
) -> Tensor:
    return randn_like_generator(self, None, dtype, layout, device, pin_memory, memory_format)


def _randint_like(self, low, high, generator, options) -> Tensor:
    result = _like(self, *options)
    return write_fresh(_random_from(), result, low, high, generator)


def _scalar_high(high: Tensor) -> int:
    if high.dim() != 0 or high._device.type != "cpu":
        raise RuntimeError("high must be a scalar tensor and on CPU")
    return int(high.item())


@native
def randint_like(
    self, high, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
) -> Tensor:
    options = (dtype, layout, device, pin_memory, memory_format)
    return _randint_like(self, 0, high, None, options)


@native
def randint_like_generator(
    self, high, generator, dtype=None, layout=None, device=None, pin_memory=None,
    memory_format=None,
) -> Tensor:
    options = (dtype, layout, device, pin_memory, memory_format)
    return _randint_like(self, 0, high, generator, options)


@native
def randint_like_Tensor(
    self, high, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
) -> Tensor:
    options = (dtype, layout, device, pin_memory, memory_format)
    return _randint_like(self, 0, _scalar_high(high), None, options)


@native
def randint_like_Tensor_generator(
    self, high, generator, dtype=None, layout=None, device=None, pin_memory=None,
    memory_format=None,
) -> Tensor:
    options = (dtype, layout, device, pin_memory, memory_format)
    return _randint_like(self, 0, _scalar_high(high), generator, options)


@native
def randint_like_low_dtype(
    self, low, high, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
) -> Tensor:
    options = (dtype, layout, device, pin_memory, memory_format)
    return _randint_like(self, low, high, None, options)


@native
def randint_like_low_generator_dtype(
    self, low, high, generator, dtype=None, layout=None, device=None, pin_memory=None,
    memory_format=None,
) -> Tensor:
    options = (dtype, layout, device, pin_memory, memory_format)
    return _randint_like(self, low, high, generator, options)


def _random_from():
    # `from` is a Python keyword: the handle is reached by name
    return getattr(_aten().random_, "from")
