"""Scans and normalisations along one dim: softmax, log_softmax, cumsum, cumprod, cummax,
cummin, logcumsumexp, diff, trace.

`_softmax`, `_log_softmax`, `cumsum` and `cumprod` are structured (meta here, impl in NumPy);
`softmax.int`/`log_softmax.int` are composites that cast and call `_softmax`, as in ATen. The
values-and-indices scans (`cummax`, `cummin`) are CompositeExplicitAutograd over one
`_cummax_helper`-style kernel per device, with a Meta kernel beside it. Every kernel computes
in the accumulate type (float32 for float16/bfloat16) and rounds once on write.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.accel import ACCEL
from pyaten.core.broadcast import new_row_major
from pyaten.core.device import CPU
from pyaten.core.tensor import Tensor
from pyaten.core.views import empty_tensor
from pyaten.native import compiled, fastpath
from pyaten.native.family import (
    ALL_AND_REDUCED,
    COMPLEX,
    FLOATING_AND_REDUCED,
    unsupported_dtype,
)
from pyaten.native.kernels import vector_loops
from pyaten.native.kernels.copy import assign
from pyaten.native.kernels.shape import aten_ops, wrap_dim
from pyaten.native.registry import native
from pyaten.native.structured import quiet_call, resize_output

# result dtypes of cumsum/cumprod: ATen's scan kernels refuse a bool result
_SCAN_DTYPES = ALL_AND_REDUCED | COMPLEX


def _acc(dtype: dt.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype in (dt.float16, dt.bfloat16) else dtype.numpy


def _along(arr: np.ndarray, dim: int, ndim: int) -> tuple[np.ndarray, int]:
    """A 0-dim array as one element along axis 0, so scans treat it as a 1-element row."""
    if ndim == 0:
        return arr.reshape(1), 0
    return arr, dim


# --- softmax / log_softmax ---------------------------------------------------------------------


def _softmax_meta(op, self: Tensor, dim: int, half_to_float: bool) -> None:
    wrap_dim(dim, self.dim())
    if half_to_float and self._dtype is not dt.float16:
        raise RuntimeError("conversion is supported for Half type only")
    dtype = dt.float32 if half_to_float else self._dtype
    op.set_output(0, tuple(self._sizes), dtype, self._device)


@native
def meta__softmax(op, self: Tensor, dim: int, half_to_float: bool) -> None:
    _softmax_meta(op, self, dim, half_to_float)


@native
def meta__log_softmax(op, self: Tensor, dim: int, half_to_float: bool) -> None:
    _softmax_meta(op, self, dim, half_to_float)


def _softmax_compute(self: Tensor, dim: int, half_to_float: bool, log: bool, out: Tensor,
                     name: str) -> None:
    if half_to_float:
        raise RuntimeError("softmax with half to float conversion is not supported on CPU")
    ndim = len(self._sizes)
    wrapped = wrap_dim(dim, ndim)
    if self._dtype not in FLOATING_AND_REDUCED:
        # PyTorch's CPU kernels: a last-dim loop and a general one, named in the dtype error.
        last = wrapped == max(ndim - 1, 0)
        if self.numel() == 0:
            return
        raise unsupported_dtype(
            f"{name}_lastdim_kernel_impl" if last else f"{name}_kernel_impl", self._dtype
        )
    x, axis = _along(self._numpy().astype(_acc(self._dtype), copy=False), wrapped, ndim)
    if x.size == 0:
        return
    target = out._numpy()
    if target.dtype == x.dtype and target.flags.c_contiguous:
        # computed in `out`'s memory, no temporaries beyond the reduced rows
        quiet_call(_log_softmax_into if log else _softmax_into, x, axis, target.reshape(x.shape))
        return
    result = quiet_call(_log_softmax if log else _softmax, x, axis)
    assign(target, result.reshape(target.shape))


# The ufuncs' own reduce methods: np.max/np.sum add ~0.5 us of argument handling per call.
_max_reduce = np.maximum.reduce
_sum_reduce = np.add.reduce


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    result = np.empty_like(x)
    _softmax_into(x, axis, result)
    return result


# Below this many elements a last-dim (log_)softmax runs as one compiled loop when Numba is
# installed (Note: compiled loops): NumPy's five calls cost ~4 us on a 4x4 input, the loop
# ~0.3 us; above it NumPy's vectorised exp wins.
_COMPILED_BELOW = 4096
_FLOAT_ARRAYS = (np.dtype(np.float32), np.dtype(np.float64))


def _compiled_rows(x: np.ndarray, axis: int, out: np.ndarray, log: bool) -> bool:
    """(log_)softmax along the last axis of a small contiguous float array by the compiled
    loop; False: the NumPy lines run."""
    if (axis != x.ndim - 1 or x.size >= _COMPILED_BELOW or x.dtype not in _FLOAT_ARRAYS
            or out.dtype != x.dtype or not x.flags.c_contiguous or not out.flags.c_contiguous):
        return False
    fast = compiled.available()
    if fast is None:
        return False
    if x.ndim != 2:
        n = x.shape[-1]
        x, out = x.reshape(-1, n), out.reshape(-1, n)
    fast.softmax_rows(x, out, log)
    return True


def _softmax_into(x: np.ndarray, axis: int, out: np.ndarray) -> None:
    if _compiled_rows(x, axis, out, False):
        return
    if vector_loops.softmax_rows(x, axis, out, False):  # large float32 rows (vector_loops)
        return
    np.subtract(x, _max_reduce(x, axis, None, None, True), out=out)
    np.exp(out, out=out)
    np.divide(out, _sum_reduce(out, axis, None, None, True), out=out)


def _log_softmax_into(x: np.ndarray, axis: int, out: np.ndarray) -> None:
    if _compiled_rows(x, axis, out, True):
        return
    if vector_loops.softmax_rows(x, axis, out, True):  # large float32 rows (vector_loops)
        return
    np.subtract(x, _max_reduce(x, axis, None, None, True), out=out)
    total = _sum_reduce(np.exp(out), axis, None, None, True)
    np.subtract(out, np.log(total, out=total), out=out)


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    result = np.empty_like(x)
    _log_softmax_into(x, axis, result)
    return result


def _fast_softmax(into, log: bool):
    # the compiled rows loop in C when the general path takes that loop (Numba present):
    # the same bits without Numba's call (Note: the small-operator loops, csrc/accel.c)
    small = ACCEL.softmax_small if ACCEL is not None else None

    def fast(self: Tensor, dim: int, half_to_float: bool):
        # (Note: the structured fast path) a non-empty floating CPU tensor of at least one
        # dim, `dim` in range: computed into a new row-major result
        sizes = self._sizes
        ndim = len(sizes)
        if (half_to_float or self._dtype not in fastpath.FLOATS or self._device is not CPU
                or dim.__class__ is not int or not -ndim <= dim < ndim):
            return None
        x = fastpath.array(self)
        if not x.size:
            return None
        out = new_row_major(sizes, self._dtype, CPU)
        d = dim + ndim if dim < 0 else dim
        if small is None or compiled.available() is None or not small(x, d, out._np, log):
            fastpath.quiet(into, x, d, out._np)
        return out

    return fast


fastpath.register("_softmax", _fast_softmax(_softmax_into, False), None, __file__)
fastpath.register("_log_softmax", _fast_softmax(_log_softmax_into, True), None, __file__)


@native
def softmax_cpu_out(op, self: Tensor, dim: int, half_to_float: bool, out: Tensor) -> None:
    _softmax_compute(self, dim, half_to_float, False, out, "softmax")


@native
def log_softmax_cpu_out(op, self: Tensor, dim: int, half_to_float: bool, out: Tensor) -> None:
    _softmax_compute(self, dim, half_to_float, True, out, "log_softmax")


def _converted(self: Tensor, dtype) -> Tensor:
    return aten_ops().to.dtype(self, dtype) if dtype is not None else self


@native
def softmax_int(self: Tensor, dim: int, dtype=None) -> Tensor:
    """softmax.int (CompositeImplicitAutograd): cast to `dtype`, then `_softmax`."""
    return aten_ops()._softmax.default(_converted(self, dtype), dim, False)


@native
def log_softmax_int(self: Tensor, dim: int, dtype=None) -> Tensor:
    return aten_ops()._log_softmax.default(_converted(self, dtype), dim, False)


@native
def softmax_out(self: Tensor, dim: int, dtype=None, out: Tensor = None) -> Tensor:
    """softmax.int_out (CompositeExplicitAutograd): cast, then `_softmax.out` into `out`."""
    return aten_ops()._softmax.out(_converted(self, dtype), dim, False, out=out)


@native
def log_softmax_out(self: Tensor, dim: int, dtype=None, out: Tensor = None) -> Tensor:
    return aten_ops()._log_softmax.out(_converted(self, dtype), dim, False, out=out)


# --- cumsum / cumprod --------------------------------------------------------------------------


def _cum_meta(op, self: Tensor, dim: int, dtype) -> None:
    wrap_dim(dim, self.dim())
    if dtype is not None:
        out_dtype = dtype
    else:
        given = op.maybe_get_output(0)
        if given is not None:
            out_dtype = given._dtype
        else:
            out_dtype = dt.int64 if self._dtype.is_integral else self._dtype
    op.set_output(0, tuple(self._sizes), out_dtype, self._device)


@native
def meta_cumsum(op, self: Tensor, dim: int, dtype=None) -> None:
    _cum_meta(op, self, dim, dtype)


@native
def meta_cumprod(op, self: Tensor, dim: int, dtype=None) -> None:
    _cum_meta(op, self, dim, dtype)


def _cum_compute(self: Tensor, dim: int, out: Tensor, fn, name: str, dtypes) -> None:
    target = out._dtype
    if target not in dtypes:
        raise unsupported_dtype(name, target)
    if self.numel() == 0:
        return
    ndim = self.dim()
    wrapped = wrap_dim(dim, ndim)
    source = self._numpy()
    if source.dtype != target.numpy:
        # ATen casts the input to the result dtype first (a float cumsum into int truncates)
        cast = np.empty(source.shape, target.numpy)
        assign(cast, source)
        source = cast
    x, axis = _along(source.astype(_acc(target), copy=False), wrapped, ndim)
    result = quiet_call(fn, x, axis=axis, dtype=x.dtype)
    assign(out._numpy(), result.reshape(out._numpy().shape))


@native
def cumsum_out(op, self: Tensor, dim: int, dtype, out: Tensor) -> None:
    _cum_compute(self, dim, out, np.cumsum, "cumsum_out_cpu", _SCAN_DTYPES)


@native
def cumprod_out(op, self: Tensor, dim: int, dtype, out: Tensor) -> None:
    _cum_compute(self, dim, out, np.cumprod, "cumprod_out_cpu", _SCAN_DTYPES)


# --- cummax / cummin ---------------------------------------------------------------------------


def _cum_extreme_arrays(x: np.ndarray, axis: int, is_max: bool) -> tuple[np.ndarray, np.ndarray]:
    """Running max (min) and the index where it was last reached; NaN, once seen, stays."""
    moved = np.moveaxis(x, axis, -1)
    values = np.empty_like(moved)
    indices = np.empty(moved.shape, np.int64)
    n = moved.shape[-1]
    if n:
        best = moved[..., 0].copy()
        where = np.zeros(best.shape, np.int64)
        values[..., 0] = best
        indices[..., 0] = 0
        nan_kind = moved.dtype.kind in "fc"
        for i in range(1, n):
            current = moved[..., i]
            # `>=` (`<=`): a tie moves the index to the later element, as ATen's CPU loop
            better = current >= best if is_max else current <= best
            if nan_kind:
                better |= np.isnan(current)  # a NaN wins, and a later NaN takes the index
            best = np.where(better, current, best)
            where = np.where(better, i, where)
            values[..., i] = best
            indices[..., i] = where
    return np.moveaxis(values, -1, axis), np.moveaxis(indices, -1, axis)


def _cum_extreme(self: Tensor, dim: int, is_max: bool, values: Tensor, indices: Tensor) -> None:
    name = "cummax" if is_max else "cummin"
    ndim = self.dim()
    wrapped = wrap_dim(dim, ndim)
    if self.numel() == 0:
        return
    if ndim == 0:  # nothing to scan: the value, index 0 (any dtype, as ATen)
        assign(values._numpy(), self._numpy())
        assign(indices._numpy(), np.zeros((), np.int64))
        return
    if self._dtype not in ALL_AND_REDUCED | {dt.bool}:
        raise unsupported_dtype(f"{name}_cpu", self._dtype)
    x, axis = _along(self._numpy().astype(_acc(self._dtype), copy=False), wrapped, ndim)
    v, i = _cum_extreme_arrays(x, axis, is_max)
    assign(values._numpy(), v.reshape(values._numpy().shape))
    assign(indices._numpy(), i.reshape(indices._numpy().shape))


def _resize_like(out: Tensor, like: Tensor, op_name: str) -> None:
    resize_output(out, tuple(like._sizes), op_name)


def resize_values_and_indices(values: Tensor, indices: Tensor, dtype: dt.dtype, shape: tuple,
                              op_name: str, prefix: str = "") -> None:
    """The `out=` pair of a values-and-indices op (cummax, median, mode...): `values` must be
    of `dtype` and `indices` int64 (PyTorch's messages, after `prefix`); both resized to
    `shape`."""
    if values._dtype is not dtype:
        raise RuntimeError(
            f"{prefix}Expected out tensor to have dtype {dtype.cpp_name}, but got "
            f"{values._dtype.cpp_name} instead"
        )
    if indices._dtype is not dt.int64:
        raise RuntimeError(
            f"{prefix}Expected out tensor to have dtype long int, but got "
            f"{indices._dtype.cpp_name} instead"
        )
    resize_output(values, shape, op_name)
    resize_output(indices, shape, op_name)


def _cum_extreme_out(self, dim, values, indices, is_max: bool):
    name = "cummax" if is_max else "cummin"
    wrap_dim(dim, self.dim())
    resize_values_and_indices(values, indices, self._dtype, tuple(self._sizes), name)
    helper = aten_ops()._cummax_helper if is_max else aten_ops()._cummin_helper
    helper.default(self, values, indices, dim)
    values._bump_version()
    indices._bump_version()
    return values, indices


def _cum_extreme_functional(self, dim, is_max: bool):
    values = empty_tensor(tuple(self._sizes), self._dtype, self._device)
    indices = empty_tensor(tuple(self._sizes), dt.int64, self._device)
    wrap_dim(dim, self.dim())
    helper = aten_ops()._cummax_helper if is_max else aten_ops()._cummin_helper
    helper.default(self, values, indices, dim)
    return values, indices


@native
def cummax(self: Tensor, dim: int):
    """cummax (CompositeExplicitAutograd): new outputs, then the device's `_cummax_helper`."""
    return _cum_extreme_functional(self, dim, True)


@native
def cummin(self: Tensor, dim: int):
    return _cum_extreme_functional(self, dim, False)


@native
def cummax_out(self: Tensor, dim: int, values: Tensor, indices: Tensor):
    return _cum_extreme_out(self, dim, values, indices, True)


@native
def cummin_out(self: Tensor, dim: int, values: Tensor, indices: Tensor):
    return _cum_extreme_out(self, dim, values, indices, False)


@native
def cummax_helper_cpu(self: Tensor, values: Tensor, indices: Tensor, dim: int) -> None:
    _cum_extreme(self, dim, True, values, indices)


@native
def cummin_helper_cpu(self: Tensor, values: Tensor, indices: Tensor, dim: int) -> None:
    _cum_extreme(self, dim, False, values, indices)


@native
def cummax_meta(self: Tensor, dim: int):
    """Meta `cummax`/`cummin`: both outputs shaped like `self`, indices int64."""
    wrap_dim(dim, self.dim())
    return (empty_tensor(tuple(self._sizes), self._dtype, self._device),
            empty_tensor(tuple(self._sizes), dt.int64, self._device))


# --- logcumsumexp ------------------------------------------------------------------------------


def _logcumsumexp_array(x: np.ndarray, axis: int) -> np.ndarray:
    # log(exp(a) + exp(b)) accumulated along the axis, stable for large values
    return np.logaddexp.accumulate(x, axis=axis) if x.dtype.kind == "f" else \
        np.log(np.cumsum(np.exp(x), axis=axis))


@native
def _logcumsumexp_cpu(self: Tensor, dim: int) -> Tensor:
    result = empty_tensor(tuple(self._sizes), self._dtype, self._device)
    return _logcumsumexp_out_cpu(self, dim, result)


@native
def _logcumsumexp_out_cpu(self: Tensor, dim: int, out: Tensor) -> Tensor:
    ndim = self.dim()
    wrapped = wrap_dim(dim, ndim)
    if self._dtype not in FLOATING_AND_REDUCED | COMPLEX:
        raise unsupported_dtype("logcumsumexp_out_cpu", self._dtype)
    _resize_like(out, self, "logcumsumexp")
    if self.numel():
        x, axis = _along(self._numpy().astype(_acc(self._dtype), copy=False), wrapped, ndim)
        assign(out._numpy(), quiet_call(_logcumsumexp_array, x, axis).reshape(
            out._numpy().shape))
    return out


@native
def logcumsumexp_meta(self: Tensor, dim: int) -> Tensor:
    wrap_dim(dim, self.dim())
    return empty_tensor(tuple(self._sizes), self._dtype, self._device)


@native
def logcumsumexp(self: Tensor, dim: int) -> Tensor:
    """logcumsumexp (CompositeExplicitAutograd): the device's `_logcumsumexp`."""
    return aten_ops()._logcumsumexp.default(self, dim)


@native
def logcumsumexp_out(self: Tensor, dim: int, out: Tensor) -> Tensor:
    if out._dtype is not self._dtype:
        raise RuntimeError(
            f"expected scalar_type {self._dtype.scalar_name} but found {out._dtype.scalar_name}"
        )
    result = aten_ops()._logcumsumexp.default(self, dim)
    return aten_ops().copy_.default(_resized(out, result), result)


def _resized(out: Tensor, like: Tensor) -> Tensor:
    _resize_like(out, like, "logcumsumexp")
    return out


# --- diff, trace -------------------------------------------------------------------------------


def _diff_prepare(self: Tensor, n: int, dim: int, prepend, append) -> tuple[Tensor, int]:
    if self.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    wrapped = wrap_dim(dim, self.dim())
    parts = [t for t in (prepend, self, append) if t is not None]
    for t in parts:
        if t.dim() != self.dim():
            raise RuntimeError(
                "diff expects prepend or its 0-dim-expanded version to have the same number "
                "of dimensions as input"
            )
    return (aten_ops().cat.default(parts, wrapped) if len(parts) > 1 else self), wrapped


def _diff_step(x: Tensor, dim: int, out: Tensor | None = None) -> Tensor:
    """One round, `x[1:] - x[:-1]` along `dim` (`!=` for bool, which is xor)."""
    ops = aten_ops()
    length = x._sizes[dim]
    later = ops.narrow.default(x, dim, 1, max(length - 1, 0))
    earlier = ops.narrow.default(x, dim, 0, max(length - 1, 0))
    if x._dtype is dt.bool:
        return ops.ne.Tensor(later, earlier) if out is None else \
            ops.ne.Tensor_out(later, earlier, out=out)
    return ops.sub.Tensor(later, earlier) if out is None else \
        ops.sub.out(later, earlier, out=out)


@native
def diff(self: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    """diff (CompositeImplicitAutograd): `n` rounds of `x[1:] - x[:-1]` (xor for bool)."""
    x, wrapped = _diff_prepare(self, n, dim, prepend, append)
    if x is self and (n == 0 or not self._sizes[wrapped]):
        # a copy, never self (ATen's copy_ into a new tensor: CopyBackwards)
        fresh = aten_ops().empty_like.default(self, None, None, None, None, None)
        return aten_ops().copy_.default(fresh, self, False)
    for _ in range(min(n, x._sizes[wrapped])):
        x = _diff_step(x, wrapped)
    return x


@native
def diff_out(self: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None,
             out: Tensor = None) -> Tensor:
    """diff.out: the rounds before the last as `diff`, the last one through `sub.out`, so
    `out` follows that op's casting rules, as in ATen."""
    x, wrapped = _diff_prepare(self, n, dim, prepend, append)
    rounds = min(n, x._sizes[wrapped])
    if rounds == 0:
        _resize_like(out, x, "diff")
        return aten_ops().copy_.default(out, x)
    for _ in range(rounds - 1):
        x = _diff_step(x, wrapped)
    return _diff_step(x, wrapped, out)


def _trace_check(self: Tensor) -> None:
    if self.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.dim()}")


@native
def trace_cpu(self: Tensor) -> Tensor:
    """trace: the diagonal's sum; integers sum to int64, as `sum` does."""
    if self._dtype not in ALL_AND_REDUCED | COMPLEX:
        raise unsupported_dtype("trace", self._dtype)
    _trace_check(self)
    out_dtype = dt.int64 if self._dtype.is_integral else self._dtype
    result = empty_tensor((), out_dtype, self._device)
    acc = np.dtype(np.int64) if self._dtype.is_integral else _acc(self._dtype)
    total = np.trace(self._numpy(), dtype=acc)
    assign(result._numpy(), np.asarray(total))
    return result


@native
def trace_meta(self: Tensor) -> Tensor:
    _trace_check(self)
    out_dtype = dt.int64 if self._dtype.is_integral else self._dtype
    return empty_tensor((), out_dtype, self._device)
