"""Random sampling: the in-place samplers (uniform_ normal_ exponential_ cauchy_ log_normal_
geometric_ random_ bernoulli_), the sampling ops (bernoulli normal poisson multinomial) and
the random factories (randint randperm rand_like randn_like randint_like).

Every sampler draws from a `pyaten.Generator` (the `generator=` argument, else the device's
default generator) with PyTorch's transforms (pyaten/native/kernels/random_draws.py), so a
seeded program draws PyTorch's numbers (see Note: PyTorch's CPU stream, in
pyaten/core/generator.py).

Note: how a sampler is written.
    A sampler checks its parameters first and its dtype second (PyTorch's order: the
    parameter checks sit before `AT_DISPATCH`), returns early on Meta tensors and on empty
    ones, draws its samples as one flat array in the order PyTorch's serial kernel visits the
    elements (`_write`: memory order, the TensorIterator's, for a strided `self`; a complex
    tensor as its real view) and bumps the version once. The functional and out= forms are
    composites over the in-place samplers, as in ATen, so the checks live in one place.
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.broadcast import infer_size
from pyaten.core.generator import Generator, resolve_generator
from pyaten.core.tensor import Tensor, write_fresh
from pyaten.native.kernels import random_draws as draws
from pyaten.native.kernels.factory import _check_sizes
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import resize_output

_INT64_MAX = 2**63 - 1


def _empty_like(t: Tensor) -> Tensor:
    # every argument positional, in schema order: the handle's fast path (no parsing)
    return _aten().empty_like.default(t, None, None, None, None, None)


def _not_implemented(kernel: str, dtype) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for \'{dtype.scalar_name}\'')


def _num(x: float) -> str:
    """A double as C++'s `<<` prints it (six significant digits)."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:g}"


def _skip(self: Tensor) -> bool:
    """Nothing to draw: a Meta tensor (shape only) or an empty one."""
    return self._device.type == "meta" or 0 in self._sizes


def _untouched(self: Tensor) -> Tensor:
    # Nothing drawn, but an in-place call is still a write: the version moves, as in PyTorch.
    self._bump_version()
    return self


def _gen(generator, self: Tensor) -> Generator:
    return resolve_generator(generator, self._device)


def _rng(generator, self: Tensor) -> Generator:
    # kept for the factories' imports: the generator itself (its raw draws)
    return _gen(generator, self)


def _target(self: Tensor) -> np.ndarray:
    """The memory the kernel fills: the tensor, or its real view (a trailing pair of floats
    per element) when complex, as ATen's `view_as_real`."""
    arr = self._numpy()
    if self._dtype.is_complex:
        real = {dt.complex128: np.float64, dt.complex32: np.float16}.get(self._dtype, np.float32)
        return arr[..., None].view(real)
    return arr


def _iteration_view(arr: np.ndarray, like: np.ndarray | None = None) -> np.ndarray:
    """`arr` with its dims in the order a TensorIterator walks the output `like` (default
    `arr`): outermost (largest stride) first, ties in dim order, so the walk is memory order."""
    like = arr if like is None else like
    if like.flags.c_contiguous or like.ndim < 2:
        return arr
    order = sorted(range(like.ndim), key=lambda d: -abs(like.strides[d]))
    return arr.transpose(order)


def _store(target: np.ndarray, values: np.ndarray) -> None:
    """Write flat samples into `target` in iteration order, cast as C++ casts them (through
    float for float16 and bfloat16; integers wrap)."""
    view = _iteration_view(target)
    values = values.reshape(view.shape)
    if values.dtype != view.dtype:
        if view.dtype.itemsize == 2 and view.dtype.kind not in "iu" and values.dtype.itemsize > 4:
            values = values.astype(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            values = values.astype(view.dtype)
    view[...] = values


def _flat_float32(target: np.ndarray) -> np.ndarray | None:
    """`target` as one flat float32 array when a sampler may write into it directly."""
    if target.dtype == np.float32 and target.flags.c_contiguous:
        return target.reshape(-1)
    return None


def _write(self: Tensor, values: np.ndarray) -> Tensor:
    _store(_target(self), values)
    self._bump_version()
    return self


def _numel(arr: np.ndarray) -> int:
    return int(arr.size)


def _check_floating(self: Tensor, kernel: str) -> None:
    d = self._dtype
    if not (d.is_floating_point or d.is_complex):
        raise _not_implemented(kernel, d)


# --- uniform_ and normal_ ------------------------------------------------------------------


# The largest finite value of each floating dtype (bfloat16's is float32's, rounded).
_FLOAT_MAX = {
    dt.float16: 65504.0,
    dt.bfloat16: 3.3895313892515355e38,
    dt.float32: float(np.finfo(np.float32).max),
    dt.float64: float(np.finfo(np.float64).max),
}


def _uniform_bounds(self: Tensor, low: float, high: float) -> None:
    d = self._dtype.to_real()
    highest = _FLOAT_MAX[d]
    lowest = -highest
    for value, name in ((low, "from"), (high, "to")):
        if not lowest <= value <= highest:
            raise RuntimeError(f"{name} is out of bounds for {d.cpp_name}")
    if low > high:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={_num(low)} > "
            f"to={_num(high)}"
        )
    if high - low > highest:
        raise RuntimeError(
            f"uniform_ expects to-from <= std::numeric_limits<{d.scalar_name}>::max(), but "
            f"found to={_num(high)} and from={_num(low)} which result in to-from to exceed "
            "the limit"
        )


def _real_dtype(self: Tensor):
    return self._dtype.to_real() if self._dtype.is_complex else self._dtype


@native
def uniform_(self: Tensor, low: float = 0.0, high: float = 1.0, generator=None) -> Tensor:
    if self._device.type == "meta":
        return _untouched(self)
    _check_floating(self, "check_uniform_bounds")
    _uniform_bounds(self, low, high)
    if 0 in self._sizes:
        return _untouched(self)
    target = _target(self)
    flat = _flat_float32(target)
    values = draws.uniform(_gen(generator, self), target.size, _real_dtype(self), low, high,
                           out=flat)
    if values is not flat:
        _store(target, values)
    return _untouched(self)


def _check_std(std: float) -> None:
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")


def _normal_values(self: Tensor, mean: float, std: float, generator,
                   out: np.ndarray | None = None) -> np.ndarray:
    """`normal_kernel`'s samples for `self` (the fill path when contiguous with 16 elements
    or more, else the serial double path), flat in iteration order; possibly written into
    `out` (self's memory as flat float32) and returned as it."""
    gen = _gen(generator, self)
    dtype = _real_dtype(self)
    if self._dtype.is_complex:
        std = std / math.sqrt(2.0)  # unit variance overall: half in each part
    count = math.prod(self._sizes) * (2 if self._dtype.is_complex else 1)
    if count >= 16 and self.is_contiguous():
        return draws.normal_fill(gen, count, dtype, mean, std, out=out)
    return draws.normal_scalar(gen, count, mean, std)


@native
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    if self._device.type == "meta":
        return _untouched(self)
    _check_std(std)
    _check_floating(self, "normal_kernel_cpu")
    if 0 in self._sizes:
        return _untouched(self)
    target = _target(self)
    flat = _flat_float32(target)
    values = _normal_values(self, mean, std, generator, out=flat)
    if values is not flat:
        _store(target, values)
    return _untouched(self)


@native
def normal_functional(self: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    result = _empty_like(self)
    return write_fresh(_aten().normal_.default, result, mean, std, generator)


# --- the other continuous samplers ---------------------------------------------------------


def _continuous(self: Tensor, name: str) -> None:
    d = self._dtype
    if not d.is_floating_point:
        # exponential_ names the ScalarType, cauchy_ the C++ type
        spelled = d.scalar_name if name == "Exponential" else d.cpp_name
        raise RuntimeError(
            f"{name} distribution is a continuous probability distribution. dtype must be a "
            f"floating point but you specified {spelled}"
        )


@native
def exponential_(self: Tensor, lambd: float = 1.0, generator=None) -> Tensor:
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_num(lambd)}")
    _continuous(self, "Exponential")
    if _skip(self):
        return _untouched(self)
    values = draws.exponential(_gen(generator, self), self.numel(), lambd)
    return _write(self, values)


@native
def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, generator=None) -> Tensor:
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_num(sigma)}")
    _continuous(self, "Cauchy")
    if _skip(self):
        return _untouched(self)
    return _write(self, draws.cauchy(_gen(generator, self), self.numel(), median, sigma))


@native
def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, generator=None) -> Tensor:
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(std)}")
    d = self._dtype
    if not d.is_floating_point:
        raise _not_implemented("log_normal_cpu", d)
    if _skip(self):
        return _untouched(self)
    normal = draws.normal_scalar(_gen(generator, self), self.numel(), mean, std)
    with np.errstate(over="ignore"):
        return _write(self, np.exp(normal))


@native
def geometric_(self: Tensor, p: float, generator=None) -> Tensor:
    if not 0.0 < p < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(p)}")
    d = self._dtype
    if d is dt.bool or d.is_complex:
        raise _not_implemented("geometric_cpu", d)
    if _skip(self):
        return _untouched(self)
    return _write(self, draws.geometric(_gen(generator, self), self.numel(), p))


# --- random_ -------------------------------------------------------------------------------


def _int_bounds(d) -> tuple[int, int]:
    if d is dt.bool:
        return 0, 1
    info = np.iinfo(d.numpy)
    return int(info.min), int(info.max)


def _float_digits(d) -> int:
    return {dt.float16: 11, dt.bfloat16: 8, dt.float32: 24, dt.float64: 53}[d]


def _check_random_dtype(self: Tensor) -> None:
    d = self._dtype
    if d.is_complex:
        raise RuntimeError(
            "check_random_bounds handles only integral, floating-point and boolean types"
        )


def _random_range(self: Tensor, low: int, high: int | None) -> tuple[int, int]:
    """The inclusive range [low, high_inclusive] of random_(low, high), with its checks."""
    d = self._dtype
    if high is not None:
        if not low < high:
            raise RuntimeError(
                f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
            )
        _check_random_dtype(self)
        if d.is_integral:
            lo, hi = _int_bounds(d)
            if not lo <= low <= hi:
                raise RuntimeError(f"from is out of bounds for {d.cpp_name}")
            if not lo <= high - 1 <= hi:
                raise RuntimeError(f"to - 1 is out of bounds for {d.cpp_name}")
        return low, high - 1
    if d.is_complex:
        raise RuntimeError(
            "random_from_to_impl handles only integral, floating-point and boolean types"
        )
    if d.is_integral:
        lo, hi = _int_bounds(d)
        if not lo <= low <= hi:
            raise RuntimeError(f"from is out of bounds for {d.cpp_name}")
        return low, hi
    to_inc = 2 ** _float_digits(d)
    if low > to_inc:
        raise RuntimeError(
            "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted "
            f"to dtype, but got from={low} > to_inc={to_inc}"
        )
    return low, to_inc


def _random_fill(self: Tensor, low: int, high_inclusive: int, generator) -> Tensor:
    if _skip(self):
        return _untouched(self)
    gen = _gen(generator, self)
    span = high_inclusive - low + 1
    if span == 1 << 64:  # from = -2**63, to = None: the whole 64-bit draw
        values = draws.full_range(gen, self.numel())
    else:
        target = self._numpy()
        direct = target.dtype == np.int64 and target.flags.c_contiguous
        flat = target.reshape(-1) if direct else None
        values = draws.integers(gen, self.numel(), self._dtype, span, low, out=flat)
        if values is flat:
            return _untouched(self)
    return _write(self, values)


@native
def random_(self: Tensor, generator=None) -> Tensor:
    d = self._dtype
    if d.is_complex:
        raise _not_implemented("random_kernel_cpu", d)
    if _skip(self):
        return _untouched(self)
    return _write(self, draws.default_range(_gen(generator, self), self.numel(), d))


@native
def random_from(self: Tensor, low: int, high: int | None, generator=None) -> Tensor:
    if self._device.type == "meta":  # PyTorch's Meta kernel checks nothing
        return _untouched(self)
    low, high_inclusive = _random_range(self, low, high)
    return _random_fill(self, low, high_inclusive, generator)


@native
def random_to(self: Tensor, high: int, generator=None) -> Tensor:
    if self._device.type == "meta":
        return _untouched(self)
    low, high_inclusive = _random_range(self, 0, high)
    return _random_fill(self, low, high_inclusive, generator)


# --- bernoulli -----------------------------------------------------------------------------


@native
def bernoulli__float(self: Tensor, p: float = 0.5, generator=None) -> Tensor:
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(p)}")
    if self._dtype.is_complex:
        raise _not_implemented("bernoulli_scalar_cpu_", self._dtype)
    if _skip(self):
        return _untouched(self)
    return _write(self, draws.bernoulli_double(_gen(generator, self), self.numel(), p))


@native
def bernoulli__Tensor(self: Tensor, p: Tensor, generator=None) -> Tensor:
    if self._dtype.is_complex:
        raise _not_implemented("bernoulli_tensor_cpu_self_", self._dtype)
    if not p._dtype.is_floating_point:
        raise _not_implemented("bernoulli_tensor_cpu_p_", p._dtype)
    if _skip(self):  # PyTorch expands p only when there is something to draw
        return _untouched(self)
    expanded = _aten().expand.default(p, self._sizes)
    probs = expanded._numpy()
    if not (probs >= 0).all() or not (probs <= 1).all():
        raise RuntimeError(
            "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
            "message be improved?  If so, please report an enhancement request to PyTorch.)"
        )
    # p is read in the order self is written
    flat_p = _iteration_view(probs, like=self._numpy()).reshape(-1)
    gen = _gen(generator, self)
    if p._dtype is dt.float64:
        values = draws.bernoulli_double(gen, flat_p.size, flat_p)
    else:
        values = draws.bernoulli_float(gen, flat_p.size, flat_p)
    return _write(self, values)


@native
def bernoulli(self: Tensor, generator=None) -> Tensor:
    result = _empty_like(self)
    return write_fresh(_aten().bernoulli_.Tensor, result, self, generator)


@native
def bernoulli_p(self: Tensor, p: float, generator=None) -> Tensor:
    result = _empty_like(self)
    return write_fresh(_aten().bernoulli_.float, result, p, generator)


@native
def bernoulli_out(self: Tensor, generator=None, out: Tensor = None) -> Tensor:
    resize_output(out, self._sizes, "bernoulli")
    return _aten().bernoulli_.Tensor(out, self, generator)


# --- normal (the functional overloads) ------------------------------------------------------


def _normal_from_tensors(out: Tensor, mean, std, generator) -> Tensor:
    """ATen's composition: `normal_(0, std)` then `add_(mean)` for a number std, else
    `normal_(0, 1)`, `mul_(std)`, `add_(mean)`, each step rounded in out's dtype."""
    _check_floating(out, "normal_kernel_cpu")
    if _skip(out):
        return out
    a = _aten()
    if isinstance(std, Tensor):
        a.normal_.default(out, 0.0, 1.0, generator)
        a.mul_.Tensor(out, std)
    else:
        a.normal_.default(out, 0.0, std, generator)
    if isinstance(mean, Tensor):
        return a.add_.Tensor(out, mean, 1)
    return a.add_.Scalar(out, mean, 1)


def _check_std_tensor(std: Tensor) -> None:
    if std._device.type != "meta" and std.numel() and not (std._numpy() >= 0).all():
        raise RuntimeError("normal expects all elements of std >= 0.0")


@native
def normal_Tensor_float(mean: Tensor, std: float = 1.0, generator=None) -> Tensor:
    _check_std(std)
    result = _empty_like(mean)
    return write_fresh(_normal_from_tensors, result, mean, std, generator)


@native
def normal_Tensor_float_out(mean: Tensor, std: float = 1.0, generator=None, out=None) -> Tensor:
    _check_std(std)
    # ATen broadcasts mean with `out`'s current shape before resizing it
    resize_output(out, infer_size(mean._sizes, out._sizes), "normal")
    return _normal_from_tensors(out, mean, std, generator)


@native
def normal_float_Tensor(mean: float, std: Tensor, generator=None) -> Tensor:
    _check_std_tensor(std)
    result = _empty_like(std)
    return write_fresh(_normal_from_tensors, result, mean, std, generator)


@native
def normal_float_Tensor_out(mean: float, std: Tensor, generator=None, out=None) -> Tensor:
    _check_std_tensor(std)
    resize_output(out, std._sizes, "normal")
    return _normal_from_tensors(out, mean, std, generator)


@native
def normal_Tensor_Tensor(mean: Tensor, std: Tensor, generator=None) -> Tensor:
    shape = infer_size(mean._sizes, std._sizes)
    _check_std_tensor(std)
    result = _aten().empty.memory_format(shape, mean._dtype, None, mean._device, None, None)
    return write_fresh(_normal_from_tensors, result, mean, std, generator)


@native
def normal_Tensor_Tensor_out(mean: Tensor, std: Tensor, generator=None, out=None) -> Tensor:
    shape = infer_size(mean._sizes, std._sizes)
    _check_std_tensor(std)
    resize_output(out, shape, "normal")
    return _normal_from_tensors(out, mean, std, generator)


@native
def normal_float_float(
    mean: float, std: float, size: tuple, generator=None, dtype=None, layout=None, device=None,
    pin_memory=None,
) -> Tensor:
    result = _aten().empty.memory_format(
        size, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory
    )
    return write_fresh(_aten().normal_.default, result, mean, std, generator)


@native
def normal_float_float_out(
    mean: float, std: float, size: tuple, generator=None, out: Tensor = None
) -> Tensor:
    _check_sizes(size)
    resize_output(out, tuple(size), "normal")
    return _aten().normal_.default(out, mean, std, generator)


# --- poisson and multinomial ---------------------------------------------------------------


@native
def poisson(self: Tensor, generator=None) -> Tensor:
    d = self._dtype
    if not d.is_floating_point:
        raise _not_implemented("poisson_cpu", d)
    result = _empty_like(self)
    if _skip(self):
        return result
    rates = _iteration_view(self._numpy(), like=result._numpy()).astype(np.float64)
    _store(result._numpy(), draws.poisson(_gen(generator, self), rates))
    return result


def _multinomial_checks(self: Tensor, n_sample: int, replacement: bool) -> None:
    if not 0 < self.dim() <= 2:
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not self._dtype.is_floating_point:
        raise RuntimeError(
            f"multinomial only supports floating-point dtypes for input, got: "
            f"{self._dtype.scalar_name}"
        )


def _multinomial_after_out(self: Tensor, n_sample: int, replacement: bool) -> tuple:
    if n_sample <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and n_sample > self._sizes[-1]:
        raise RuntimeError(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
        )
    if self._sizes[-1] > 2**24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    return (n_sample,) if self.dim() == 1 else (self._sizes[0], n_sample)


def _multinomial_draw(self: Tensor, n_sample: int, replacement: bool, generator) -> np.ndarray:
    probs = self._numpy().reshape(-1, self._sizes[-1])
    gen = _gen(generator, self)
    if not replacement or n_sample == 1:
        wide = probs.astype(np.float64)
        if not (np.isfinite(wide).all() and (wide >= 0).all()):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if (wide.sum(axis=1) == 0).any():
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        # ATen's exponential race: q ~ Exp(1) in self's dtype, then the largest p / q
        q = np.empty(self._sizes, dtype=self._dtype.numpy)
        _store(q, draws.exponential(gen, probs.size, 1.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = (probs / q.reshape(probs.shape)).astype(np.float64)
        if n_sample == 1:
            return np.argmax(keys, axis=1)[:, None]
        order = np.argsort(-keys, axis=1, kind="stable")
        return order[:, :n_sample]
    if not (probs >= 0).all():  # NaN fails this check first, as in ATen
        raise RuntimeError(
            "invalid multinomial distribution (encountering probability entry < 0)"
        )
    if not np.isfinite(probs).all():
        raise RuntimeError(
            "invalid multinomial distribution (encountering probability entry = infinity or NaN)"
        )
    # the cumulative distribution in the dtype (float for float16/bfloat16), summed in order
    acc = np.float64 if self._dtype is dt.float64 else np.float32
    cumulative = np.cumsum(probs.astype(acc), axis=1, dtype=acc)
    totals = cumulative[:, -1:].copy()
    if (totals <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    cumulative /= totals
    cumulative[:, -1] = 1
    u = draws.unit_float64(gen, probs.shape[0] * n_sample).reshape(probs.shape[0], n_sample)
    picks = np.empty((probs.shape[0], n_sample), dtype=np.int64)
    for row in range(probs.shape[0]):  # the first slot whose cumulative mass reaches u
        picks[row] = np.searchsorted(cumulative[row].astype(np.float64), u[row], side="left")
    return picks


@native
def multinomial_out(
    self: Tensor, num_samples: int, replacement: bool = False, generator=None, out=None
) -> Tensor:
    _multinomial_checks(self, num_samples, replacement)
    if out._dtype is not dt.int64:
        raise RuntimeError(f"multinomial expects Long tensor out, got: {out._dtype.scalar_name}")
    shape = _multinomial_after_out(self, num_samples, replacement)
    values = None
    if self._device.type != "meta" and math.prod(shape):
        values = _multinomial_draw(self, num_samples, replacement, generator)
    resize_output(out, shape, "multinomial")
    if values is not None:
        out._numpy()[...] = values.reshape(shape)
    out._bump_version()
    return out


@native
def multinomial(
    self: Tensor, num_samples: int, replacement: bool = False, generator=None
) -> Tensor:
    result = _aten().empty.memory_format((0,), dt.int64, None, self._device, None, None)
    return write_fresh(
        lambda t: _aten().multinomial.out(
            self, num_samples, replacement, generator=generator, out=t
        ),
        result,
    )
