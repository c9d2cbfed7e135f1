"""Reduction kernels: the reduction family table, and the reductions that need more than a row.

The rows (sum, mean, prod, amax, amin, all, any, argmax, argmin) are `reduction.Reduction`s:
see Note: the reduction row in `pyaten/native/reduction.py` for what a row says and what
`register` makes from it. Beside the table, hand-written kernels for what a row cannot say:
values+indices (`max.dim`, `min.dim`, `aminmax`), the plain CPU kernels PyTorch declares
outside structured groups (`prod`, `nansum`, `max()`, `count_nonzero`), std/var with their
correction, `logsumexp`, `norm` and the composites (`nanmean`, `dist`, `std.dim`, ...).
Kernels that PyTorch also runs on Meta (a Python meta there) are registered for `Meta` too and
skip the arithmetic on meta tensors.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor
from pyaten.native import reduction as R
from pyaten.native.kernels.copy import assign
from pyaten.native.kernels.shape import aten_ops as _aten
from pyaten.native.kernels.shape import format_shape
from pyaten.native.registry import native
from pyaten.native.structured import StructuredMeta, _new_output, quiet_call, resize_output

# --- row helpers ----------------------------------------------------------------------------


def _argmax_like(pick):
    def reduce(a: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:
        if len(dims) == a.ndim:  # dim=None (or the only dim): index into the flattened input
            index = pick(a.reshape(-1)) if a.ndim else np.int64(0)
            return np.full((1,) * a.ndim if keepdim else (), index, dtype=np.int64)
        return pick(a, axis=dims[0], keepdims=keepdim)

    return reduce


def _all(a: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:
    return np.all(a, axis=dims, keepdims=keepdim)


def _any(a: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:
    return np.any(a, axis=dims, keepdims=keepdim)


def _mean(a: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:
    count = 1
    for d in dims:
        count *= a.shape[d]
    return _sum(a, dims, keepdim) / a.dtype.type(count)


def _nansum(a: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:
    # A plain sum without NaN had no NaN to skip (inf - inf also gives NaN: then redo).
    total = _sum(a, dims, keepdim)
    if a.dtype.kind in "fc" and np.isnan(total).any():
        total = _sum(np.where(a != a, a.dtype.type(0), a), dims, keepdim)
    return total


def _sum(a: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:
    if len(dims) == a.ndim and a.size >= 1 << 16:
        total = R.sum_all(a)
        return total.reshape((1,) * a.ndim) if keepdim else total
    return np.add.reduce(a, axis=dims, keepdims=keepdim)


def _refuse(name: str, *, bool_input: bool = False):
    """argmax/argmin/max.dim: PyTorch's checks of the input's dtype before reducing."""

    def check(self: Tensor) -> None:
        if self._dtype.is_complex:
            raise RuntimeError(f"{name}(): does not support complex input")
        if bool_input and self._dtype is dt.bool:
            raise RuntimeError(f"{name}(): does not support bool input")

    return check


def _no_complex_nansum(self: Tensor) -> None:
    if self._dtype.is_complex:
        raise RuntimeError("nansum on CPU does not support complex inputs")


# --- the table ------------------------------------------------------------------------------

SUM = R.Reduction("sum.dim_IntList", np.add, R.EVERY, repeat="scale")
MEAN = R.Reduction("mean.dim", _mean, R.FLOATING_AND_COMPLEX, result="float", repeat="same")
PROD = R.Reduction("prod.dim_int", np.multiply, R.EVERY, repeat="power")
_AMAX = dict(result="keep", identity=False, compute="input", repeat="same")
_ARG = dict(result="index", identity=False, compute="input", wrapped_dim_in_error=True,
            repeat="index")
_ALL = dict(result="bool", compute="input", repeat="same")

R.register(
    SUM,
    MEAN,
    PROD,
    R.Reduction("amax", np.maximum, R.ALL_AND_BOOL, dispatch_name="max_values_cpu", **_AMAX),
    R.Reduction("amin", np.minimum, R.ALL_AND_BOOL, dispatch_name="min_values_cpu", **_AMAX),
    R.Reduction("all", _all, R.EVERY, impl="all_all_out", **_ALL),
    R.Reduction("all.dim", _all, R.EVERY, **_ALL),
    R.Reduction("all.dims", _all, R.EVERY, impl="all_dims_out", empty_dims_reduce_all=False,
                **_ALL),
    R.Reduction("any", _any, R.EVERY, impl="any_all_out", **_ALL),
    R.Reduction("any.dim", _any, R.EVERY, **_ALL),
    R.Reduction("any.dims", _any, R.EVERY, impl="any_dims_out", empty_dims_reduce_all=False,
                **_ALL),
    R.Reduction("argmax", _argmax_like(np.argmax), R.ALL_AND_BOOL,
                check=_refuse("argmax", bool_input=True),
                empty_all_error=(IndexError, "argmax(): Expected reduction dim to be specified "
                                 "for input.numel() == 0."), **_ARG),
    R.Reduction("argmin", _argmax_like(np.argmin), R.ALL_AND_BOOL,
                check=_refuse("argmin", bool_input=True),
                empty_all_error=(IndexError, "argmin(): Expected reduction dim to be specified "
                                 "for input.numel() == 0."), **_ARG),
)

# Rows PyTorch runs as plain CPU kernels (not structured): made without registering names.
PROD_ALL = R.Reduction("prod", np.multiply, R.EVERY, repeat="power")
NANSUM = R.Reduction("nansum", _nansum, R.ALL_AND_BOOL, check=_no_complex_nansum,
                     repeat="scale")
MAX_ALL = R.Reduction("max", np.maximum, R.ALL_AND_BOOL, dispatch_name="max_all", **_AMAX)
MIN_ALL = R.Reduction("min", np.minimum, R.ALL_AND_BOOL, dispatch_name="min_all", **_AMAX)
_PLAIN = {row.name: R.plain(row) for row in (PROD_ALL, NANSUM, MAX_ALL, MIN_ALL)}


def _run(row: R.Reduction, self: Tensor, dim: Any, keepdim: bool, dtype: Any = None,
         out: Tensor | None = None) -> Tensor:
    meta, stub = _PLAIN[row.name]
    return R.run(meta, stub, row.base_name, self, dim, keepdim, dtype, out)


# --- sum, mean, prod, nansum: the all-dims and plain forms ----------------------------------


@native
def sum_all(self: Tensor, dtype=None) -> Tensor:
    # In schema order (`dtype` positionally): the handle's fast path, no argument parsing.
    return _aten().sum.dim_IntList(self, None, False, dtype)


@native
def mean_all(self: Tensor, dtype=None) -> Tensor:
    return _aten().mean.dim(self, None, False, dtype)


@native
def mean_dtype_out(self: Tensor, dtype=None, out: Tensor = None) -> Tensor:
    return _aten().mean.out(self, None, False, dtype, out)


@native
def prod(self: Tensor, dtype=None) -> Tensor:
    return _run(PROD_ALL, self, None, False, dtype)


@native
def nansum(self: Tensor, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    return _run(NANSUM, self, dim, keepdim, dtype)


@native
def nansum_out(self: Tensor, dim, keepdim: bool, dtype, out: Tensor) -> Tensor:
    return _run(NANSUM, self, dim, keepdim, dtype, out)


@native
def nanmean(self: Tensor, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    _nanmean_check(self)
    ops = _aten()
    present = ops.eq.Tensor(self, self)  # False where NaN
    count = ops.sum.dim_IntList(present, dim, keepdim, None)
    return ops.div.Tensor(ops.nansum.default(self, dim, keepdim, dtype), count)


@native
def nanmean_out(self: Tensor, dim, keepdim: bool, dtype, out: Tensor) -> Tensor:
    _nanmean_check(self)
    ops = _aten()
    count = ops.sum.dim_IntList(ops.eq.Tensor(self, self), dim, keepdim, None)
    return ops.div.out(ops.nansum.default(self, dim, keepdim, dtype), count, out)


def _nanmean_check(self: Tensor) -> None:
    if not (self._dtype.is_floating_point or self._dtype.is_complex):
        raise RuntimeError(
            "nanmean(): expected input to have floating point or complex dtype but got "
            f"{self._dtype.scalar_name}"
        )


# all.dims/any.dims for backends with only the single-dim kernels: one dim at a time.


def _dims_default(name: str, self: Tensor, dim, keepdim: bool) -> Tensor:
    ops = _aten()
    if dim is None:
        result = getattr(ops, name).default(self)
        return ops.view.default(result, (1,) * self.dim()) if keepdim else result
    if len(dim) == 0:  # reduces nothing: each element's truth value
        return ops.ne.Scalar(self, 0)
    result = self
    for d in sorted(R.reduction_dims(dim, self.dim()), reverse=True):
        result = getattr(ops, name).dim(result, d, keepdim)
    return result


@native
def all_dims_out_default(op, self: Tensor, dim, keepdim: bool, out: Tensor) -> None:
    # The structured impl for backends without their own (registered as
    # CompositeExplicitAutograd); the YAML's `all.dims` kernel is generated from it.
    _aten().copy_.default(out, _dims_default("all", self, dim, keepdim), False)


@native
def any_dims_out_default(op, self: Tensor, dim, keepdim: bool, out: Tensor) -> None:
    _aten().copy_.default(out, _dims_default("any", self, dim, keepdim), False)


# --- max, min: every overload ---------------------------------------------------------------


@native
def max_all(self: Tensor) -> Tensor:
    return _run(MAX_ALL, self, None, False)


@native
def min_all(self: Tensor) -> Tensor:
    return _run(MIN_ALL, self, None, False)


@native
def max_unary_out(self: Tensor, out: Tensor) -> Tensor:
    return _copy_result(max_all(self), out, "max")


@native
def min_unary_out(self: Tensor, out: Tensor) -> Tensor:
    return _copy_result(min_all(self), out, "min")


def _copy_result(value: Tensor, out: Tensor, name: str) -> Tensor:
    resize_output(out, value._sizes, name)
    if out._device.type != "meta":
        assign(out._numpy(), value._numpy())
        out._version_counter.value += 1
    return out


@native
def max_other(self: Tensor, other: Tensor) -> Tensor:
    return _aten().maximum.default(self, other)


@native
def max_out(self: Tensor, other: Tensor, out: Tensor) -> Tensor:
    return _aten().maximum.out(self, other, out)


@native
def min_other(self: Tensor, other: Tensor) -> Tensor:
    return _aten().minimum.default(self, other)


@native
def min_out(self: Tensor, other: Tensor, out: Tensor) -> Tensor:
    return _aten().minimum.out(self, other, out)


def _values_indices_meta(name: str):
    check = _refuse(name)

    def meta(op: StructuredMeta, self: Tensor, dim: int, keepdim: bool = False) -> dict:
        sizes = self._sizes
        (d,) = R.reduction_dims(dim, len(sizes)) or (0,)
        if sizes and sizes[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        check(self)
        result = R.reduced_sizes(sizes, (d,) if sizes else (), keepdim)
        op.set_output(0, result, self._dtype, self._device)
        op.set_output(1, result, dt.int64, self._device)
        return {"dim": d}

    meta.__name__ = f"meta_{name}_dim"
    return meta


meta_max_dim = native(_values_indices_meta("max"))
meta_min_dim = native(_values_indices_meta("min"))


def _values_indices(self: Tensor, dim: int, keepdim: bool, values: Tensor, indices: Tensor,
                    pick) -> None:
    # broadcast dims read once: the first occurrence along a cut dim is index 0, and the
    # results broadcast into the outputs (Note: reductions over broadcast dims)
    a = R.broadcast_source(self, (dim,), _input_compute(self._dtype))[0]
    if a.ndim == 0:
        R.output_array(values)[...] = a
        R.output_array(indices)[...] = 0
        return
    index = pick(a, axis=dim, keepdims=True)
    found = np.take_along_axis(a, index, axis=dim)
    if not keepdim:
        index, found = index.squeeze(dim), found.squeeze(dim)
    quiet_call(np.copyto, R.output_array(values), found, casting="unsafe")
    np.copyto(R.output_array(indices), index, casting="unsafe")


def _input_compute(dtype: dt.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype in R.REDUCED else dtype.numpy


@native
def max_dim_out(op, self: Tensor, dim: int, keepdim: bool, max: Tensor, max_values: Tensor):
    _values_indices(self, dim, keepdim, max, max_values, np.argmax)


@native
def min_dim_out(op, self: Tensor, dim: int, keepdim: bool, min: Tensor, min_indices: Tensor):
    _values_indices(self, dim, keepdim, min, min_indices, np.argmin)


@native
def meta_aminmax(op: StructuredMeta, self: Tensor, dim=None, keepdim: bool = False) -> None:
    sizes = self._sizes
    dims = R.reduction_dims(dim, len(sizes))
    if dim is None:
        if self.numel() == 0:
            raise RuntimeError(
                "aminmax(): cannot compute aminmax over an empty dimension as the operation "
                "has no identity."
            )
    else:
        if sizes and sizes[dims[0]] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {dim} to have non-zero size.")
    result = R.reduced_sizes(sizes, dims, keepdim)
    op.set_output(0, result, self._dtype, self._device)
    op.set_output(1, result, self._dtype, self._device)


@native
def aminmax_out(op, self: Tensor, dim, keepdim: bool, min: Tensor, max: Tensor) -> None:
    if self._dtype not in R.ALL_AND_BOOL:
        if not self._sizes and dim is not None:  # ATen's 0-dim path words it differently
            raise RuntimeError(f"aminmax not implemented for {self._dtype.scalar_name}")
        raise R.unsupported_dtype("aminmax_cpu", self._dtype)
    a = R.source_array(self, _input_compute(self._dtype))
    dims = R.reduction_dims(dim, len(self._sizes))
    quiet_call(np.copyto, R.output_array(min), np.minimum.reduce(a, dims, keepdims=keepdim),
               casting="unsafe")
    quiet_call(np.copyto, R.output_array(max), np.maximum.reduce(a, dims, keepdims=keepdim),
               casting="unsafe")


# --- count_nonzero --------------------------------------------------------------------------


@native
def count_nonzero_cpu(self: Tensor, dim: tuple) -> Tensor:
    sizes = self._sizes
    dims = R.reduction_dims(dim, len(sizes))
    out = _new_output(R.reduced_sizes(sizes, dims, False), dt.int64, self._device)
    if self._device.type != "meta":
        a = dt.compute_array(self._numpy())  # complex32 read as complex64
        np.copyto(R.output_array(out), np.count_nonzero(a, axis=dims), casting="unsafe")
    return out


@native
def count_nonzero(self: Tensor, dim=None) -> Tensor:
    return _aten().count_nonzero.dim_IntList(self, () if dim is None else (dim,))


# --- std, var and their means ---------------------------------------------------------------


def _std_var_check(self: Tensor, name: str) -> None:
    if not (self._dtype.is_floating_point or self._dtype.is_complex):
        raise RuntimeError(f"{name} only support floating point and complex dtypes")


def _correction(correction: Any) -> float:
    return 1.0 if correction is None else float(correction)


def _variance(self: Tensor, dims: tuple, correction: float, keepdim: bool,
              take_sqrt: bool) -> tuple[np.ndarray, np.ndarray]:
    """(std or var, mean) of `self` over `dims`, in the accumulate dtype (ATen's two-pass
    Welford on CPU; here the textbook two-pass form, the same accuracy class). Broadcast dims
    are read once: `copies` copies of each element scale the squared deviations and the
    count, not the mean (Note: reductions over broadcast dims)."""
    a, copies = R.broadcast_source(self, dims, R.accumulate_dtype(self._dtype))
    count = 1
    for d in dims:
        count *= a.shape[d]
    real = a.real.dtype.type
    mean = _sum(a, dims, True) / a.dtype.type(count)
    centred = a - mean
    if a.dtype.kind == "c":
        squares = centred.real * centred.real
        squares += centred.imag * centred.imag
    elif isinstance(centred, np.ndarray):
        squares = np.multiply(centred, centred, out=centred)
    else:  # a 0-dim input gives a NumPy scalar
        squares = centred * centred
    divisor = max(0.0, count * copies - correction)
    total = _sum(squares, dims, keepdim)
    if copies != 1:
        total = total * real(copies)
    var = total / real(divisor)
    if not keepdim:
        mean = mean.reshape(var.shape)
    return (np.sqrt(var) if take_sqrt else var), mean


def _warn_if_no_freedom(sizes: tuple, dims: tuple, correction: float, take_sqrt: bool,
                        with_mean: bool) -> None:
    """PyTorch's warning when the correction leaves no degrees of freedom (the result is inf
    or nan): the elements reduced into each output, less the correction, is <= 0."""
    count = 1
    for d in dims:
        count *= sizes[d]
    if count - correction <= 0:
        name = ("std" if take_sqrt else "var") + ("_mean" if with_mean else "")
        warnings.warn(
            f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "reduction factor (input numel divided by output numel).",
            UserWarning,
            stacklevel=4,
        )


def _std_var(self: Tensor, dim, correction, keepdim: bool, take_sqrt: bool, name: str,
             out: Tensor | None = None, with_mean: bool = False):
    _std_var_check(self, name)
    sizes = self._sizes
    dims = R.reduction_dims(dim, len(sizes))
    result_sizes = R.reduced_sizes(sizes, dims, keepdim)
    real = self._dtype.to_real()
    if out is not None:
        if out._dtype is not real:
            raise RuntimeError(
                f"Expected out tensor to have dtype {real.cpp_name}, but got "
                f"{out._dtype.cpp_name} instead"
            )
        resize_output(out, result_sizes, name)
        result = out
    else:
        result = _new_output(result_sizes, real, self._device)
    mean = _new_output(result_sizes, self._dtype, self._device) if with_mean else None
    if self._device.type != "meta":
        _warn_if_no_freedom(sizes, dims, _correction(correction), take_sqrt, with_mean)
        value, mean_value = quiet_call(_variance, self, dims, _correction(correction), keepdim,
                                       take_sqrt)
        quiet_call(np.copyto, R.output_array(result), value, casting="unsafe")
        if mean is not None:  # complex32 means too
            quiet_call(dt.store, R.output_array(mean), mean_value)
    if out is not None:
        out._version_counter.value += 1
    return (result, mean) if with_mean else result


@native
def std_correction(self: Tensor, dim=None, correction=None, keepdim: bool = False) -> Tensor:
    return _std_var(self, dim, correction, keepdim, True, "std and var")


@native
def var_correction(self: Tensor, dim=None, correction=None, keepdim: bool = False) -> Tensor:
    return _std_var(self, dim, correction, keepdim, False, "std and var")


@native
def std_correction_out(self: Tensor, dim, correction, keepdim: bool, out: Tensor) -> Tensor:
    return _std_var(self, dim, correction, keepdim, True, "std and var", out)


@native
def var_correction_out(self: Tensor, dim, correction, keepdim: bool, out: Tensor) -> Tensor:
    return _std_var(self, dim, correction, keepdim, False, "std and var", out)


@native
def std_mean_correction(self: Tensor, dim=None, correction=None, keepdim: bool = False):
    return _std_var(self, dim, correction, keepdim, True, "std_mean", with_mean=True)


@native
def var_mean_correction(self: Tensor, dim=None, correction=None, keepdim: bool = False):
    return _std_var(self, dim, correction, keepdim, False, "var_mean", with_mean=True)


# CompositeImplicitAutograd forms: `unbiased` is correction 1 or 0.


@native
def std(self: Tensor, unbiased: bool = True) -> Tensor:
    return _aten().std.correction(self, None, 1 if unbiased else 0, False)


@native
def std_dim(self: Tensor, dim, unbiased: bool = True, keepdim: bool = False) -> Tensor:
    return _aten().std.correction(self, dim, 1 if unbiased else 0, keepdim)


@native
def std_out(self: Tensor, dim, unbiased: bool, keepdim: bool, out: Tensor) -> Tensor:
    return _aten().std.correction_out(self, dim, 1 if unbiased else 0, keepdim, out)


@native
def var(self: Tensor, unbiased: bool = True) -> Tensor:
    return _aten().var.correction(self, None, 1 if unbiased else 0, False)


@native
def var_dim(self: Tensor, dim, unbiased: bool = True, keepdim: bool = False) -> Tensor:
    return _aten().var.correction(self, dim, 1 if unbiased else 0, keepdim)


@native
def var_out(self: Tensor, dim, unbiased: bool, keepdim: bool, out: Tensor) -> Tensor:
    return _aten().var.correction_out(self, dim, 1 if unbiased else 0, keepdim, out)


@native
def std_mean(self: Tensor, unbiased: bool = True):
    return _aten().std_mean.correction(self, None, 1 if unbiased else 0, False)


@native
def std_mean_dim(self: Tensor, dim, unbiased: bool = True, keepdim: bool = False):
    return _aten().std_mean.correction(self, dim, 1 if unbiased else 0, keepdim)


@native
def var_mean(self: Tensor, unbiased: bool = True):
    return _aten().var_mean.correction(self, None, 1 if unbiased else 0, False)


@native
def var_mean_dim(self: Tensor, dim, unbiased: bool = True, keepdim: bool = False):
    return _aten().var_mean.correction(self, dim, 1 if unbiased else 0, keepdim)


# --- logsumexp ------------------------------------------------------------------------------


def _logsumexp(a: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:
    if a.size == 0:
        return np.log(np.add.reduce(np.exp(a), axis=dims, keepdims=keepdim))
    peak = np.maximum.reduce(a.real if a.dtype.kind == "c" else a, axis=dims, keepdims=True)
    peak = np.where(np.isinf(peak), peak.dtype.type(0), peak)
    total = np.add.reduce(np.exp(a - peak), axis=dims, keepdims=True)
    result = np.log(total) + peak
    return result if keepdim else result.reshape(
        tuple(s for i, s in enumerate(a.shape) if i not in dims)
    )


def _logsumexp_into(self: Tensor, dim, keepdim: bool, out: Tensor | None) -> Tensor:
    dtype = self._dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        dtype = dt.get_default_dtype()
    sizes = self._sizes
    dims = R.reduction_dims(dim, len(sizes))
    result_sizes = R.reduced_sizes(sizes, dims, keepdim)
    if out is None:
        out = _new_output(result_sizes, dtype, self._device)
    else:
        resize_output(out, result_sizes, "logsumexp")
    if dtype is dt.complex32:  # PyTorch's exp has no ComplexHalf loop
        raise NotImplementedError("\"exp_vml_cpu\" not implemented for 'ComplexHalf'")
    if self._device.type != "meta":
        # n copies of each element add log(n) (Note: reductions over broadcast dims)
        a, copies = R.broadcast_source(self, dims, R.accumulate_dtype(dtype))
        value = quiet_call(_logsumexp, a, dims, keepdim)
        if copies != 1:
            value = quiet_call(np.add, value, a.real.dtype.type(math.log(copies)))
        quiet_call(np.copyto, R.output_array(out), value, casting="unsafe")
    return out


@native
def logsumexp(self: Tensor, dim, keepdim: bool = False) -> Tensor:
    return _logsumexp_into(self, dim, keepdim, None)


@native
def logsumexp_out(self: Tensor, dim, keepdim: bool, out: Tensor) -> Tensor:
    return _logsumexp_into(self, dim, keepdim, out)


# --- norm, dist -----------------------------------------------------------------------------


def _vector_norm(a: np.ndarray, p: float, dims: tuple, keepdim: bool) -> np.ndarray:
    if p == 2 and len(dims) == a.ndim and a.flags.c_contiguous:
        flat = a.reshape(-1)  # one BLAS dot product, as np.linalg.norm does
        value = np.sqrt(np.vdot(flat, flat).real)
        return np.full((1,) * a.ndim if keepdim else (), value, dtype=value.dtype)
    x = np.abs(a)
    if p == 2:
        return np.sqrt(_sum(x * x, dims, keepdim))
    if p == 1:
        return np.add.reduce(x, axis=dims, keepdims=keepdim)
    if p == math.inf:
        return np.maximum.reduce(x, axis=dims, keepdims=keepdim)
    if p == -math.inf:
        return np.minimum.reduce(x, axis=dims, keepdims=keepdim)
    if p == 0:
        return np.add.reduce((x != 0).astype(x.dtype), axis=dims, keepdims=keepdim)
    return np.add.reduce(x ** p, axis=dims, keepdims=keepdim) ** (1.0 / p)


def _repeated_norm(a: np.ndarray, p: float, dims: tuple, keepdim: bool,
                   copies: int) -> np.ndarray:
    """The p-norm over `dims` of an array whose reduced elements each stand for `copies`
    copies (Note: reductions over broadcast dims): the sum of |x|**p grows `copies` times."""
    if copies == 1 or p in (math.inf, -math.inf):
        return _vector_norm(a, p, dims, keepdim)
    x = np.abs(a)
    scale = x.dtype.type(copies)
    if p == 0:
        return _vector_norm(a, p, dims, keepdim) * scale
    powered = x if p == 1 else x * x if p == 2 else x ** p
    total = np.add.reduce(powered, axis=dims, keepdims=keepdim) * scale
    return total if p == 1 else np.sqrt(total) if p == 2 else total ** (1.0 / p)


def _norm_result_dtype(self: Tensor, dtype: Any) -> dt.dtype:
    if not (self._dtype.is_floating_point or self._dtype.is_complex):
        raise RuntimeError(
            "norm(): input dtype should be either floating point or complex. Got "
            f"{self._dtype.scalar_name} instead."
        )
    if dtype is None:
        return self._dtype.to_real()
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(
            "norm(): the desired output dtype should be either floating point or complex. Got "
            f"{dtype.scalar_name} instead."
        )
    if self._dtype.is_complex and not dtype.is_complex:
        raise RuntimeError(
            f"linalg.vector_norm: dtype should be complex for complex inputs, but got "
            f"{dtype.scalar_name}"
        )
    return dtype.to_real()


def _norm_meta(self: Tensor, p: Any, dim: Any, keepdim: bool, dtype: Any):
    result_dtype = _norm_result_dtype(self, dtype)
    p = 2.0 if p is None else float(p)
    sizes = self._sizes
    dims = R.reduction_dims(dim, len(sizes))
    if p < 0 or p == math.inf:
        if dim is None or len(dim) == 0:
            if self.numel() == 0:
                raise RuntimeError(
                    f"linalg.vector_norm cannot compute the {_p_text(p)} norm on an empty tensor "
                    "because the operation does not have an identity"
                )
        else:
            for d in dim:
                if sizes and sizes[R.wrap_dim(d, len(sizes))] == 0:
                    raise RuntimeError(
                        f"linalg.vector_norm cannot compute the {_p_text(p)} norm on the "
                        f"dimension {d}because this dimension is empty and the operation does "
                        "not have an identity"
                    )
    return result_dtype, p, dims, R.reduced_sizes(sizes, dims, keepdim)


def _p_text(p: float) -> str:
    if p == math.inf:
        return "inf"
    if p == -math.inf:
        return "-inf"
    return repr(p) if p != int(p) else str(int(p)) if abs(p) < 1e16 else repr(p)


def _norm_compute(self: Tensor, p: float, dims: tuple, keepdim: bool, out: Tensor,
                  dtype: Any) -> None:
    if self._device.type == "meta":
        return
    source_dtype = self._dtype if dtype is None else dtype
    a, copies = R.broadcast_source(self, dims, R.accumulate_dtype(source_dtype))
    value = quiet_call(_repeated_norm, a, p, dims, keepdim, copies)
    quiet_call(np.copyto, R.output_array(out), value, casting="unsafe")


@native
def meta_norm_ScalarOpt_dim(op, self: Tensor, p, dim, keepdim: bool = False) -> None:  # noqa: N802
    result_dtype, _, _, sizes = _norm_meta(self, p, dim, keepdim, None)
    op.set_output(0, sizes, result_dtype, self._device)


@native
def meta_norm_ScalarOpt_dim_dtype(op, self: Tensor, p, dim, keepdim, dtype) -> None:  # noqa: N802
    result_dtype, _, _, sizes = _norm_meta(self, p, dim, keepdim, dtype)
    op.set_output(0, sizes, result_dtype, self._device)


@native
def norm_out(op, self: Tensor, p, dim, keepdim: bool, out: Tensor) -> None:
    _, p, dims, _ = _norm_meta(self, p, dim, keepdim, None)
    _norm_compute(self, p, dims, keepdim, out, None)


@native
def norm_dtype_out(op, self: Tensor, p, dim, keepdim: bool, dtype, out: Tensor) -> None:
    _, p, dims, _ = _norm_meta(self, p, dim, keepdim, dtype)
    _norm_compute(self, p, dims, keepdim, out, dtype)


@native
def norm_Scalar(self: Tensor, p=2) -> Tensor:  # noqa: N802
    return _aten().norm.ScalarOpt_dim(self, p, (), False)


@native
def norm_ScalarOpt_dtype(self: Tensor, p, dtype) -> Tensor:  # noqa: N802
    return _aten().norm.ScalarOpt_dim_dtype(self, p, (), False, dtype)


@native
def dist(self: Tensor, other: Tensor, p=2) -> Tensor:
    ops = _aten()
    return ops.norm.Scalar(ops.sub.Tensor(self, other, 1), p)


# --- sum_to_size: the reduction that undoes broadcasting ---------------------------------


@native
def sum_to_size(self: Tensor, size: tuple) -> Tensor:
    sizes = self._sizes
    leading = len(sizes) - len(size)
    expandable = leading >= 0 and all(
        want == have or want == 1 for want, have in zip(size, sizes[leading:])
    )
    if not expandable:
        raise RuntimeError(
            f"size {{{format_shape(size)}}} is not expandable to size {{{format_shape(sizes)}}}."
        )
    if not size:  # ATen's sum_to: an empty shape is a full sum (a new tensor, sum's dtype)
        return _aten().sum.default(self, None)
    dims = list(range(leading)) + [
        leading + i for i, want in enumerate(size) if want == 1 and sizes[leading + i] != 1
    ]
    if not dims:
        return self
    result = _aten().sum.dim_IntList(self, dims, True)
    return _aten().view.default(result, tuple(size)) if leading else result
