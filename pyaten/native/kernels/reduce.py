"""Reduction kernels: sum and mean over a list of dims (structured), and their all-dims forms.

The structured `meta` functions decide the result's shape (reduced dims removed, or kept as
size 1 with `keepdim`) and dtype (ATen's rules: an explicit `dtype`, else an `out=` tensor's
dtype, else the input's with integers and bool promoted to int64; `mean` insists on a
floating or complex dtype). The `impl` functions reduce with NumPy in the accumulate type
(float32 for float16/bfloat16, int64 for integers, so integer overflow wraps as in ATen).
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.promotion import can_cast
from pyaten.core.tensor import Tensor
from pyaten.native.kernels.copy import assign
from pyaten.native.kernels.shape import aten_ops as _aten
from pyaten.native.kernels.shape import format_shape, wrap_dim
from pyaten.native.registry import native
from pyaten.native.structured import quiet_call

_add_reduce = np.add.reduce


def reduction_dims(dim, ndim: int) -> tuple[int, ...]:
    """The wrapped, checked dims to reduce; None or an empty list means every dim."""
    if dim is None or len(dim) == 0:
        return tuple(range(ndim))
    seen: list[int] = []
    for d in dim:
        w = wrap_dim(d, ndim)
        if w in seen:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        seen.append(w)
    # a 0-dim tensor accepts dim 0/-1 but has nothing to reduce
    return tuple(d for d in seen if d < ndim)


def reduced_sizes(sizes: tuple, dims: tuple[int, ...], keepdim: bool) -> tuple[int, ...]:
    if len(dims) == len(sizes):
        return (1,) * len(sizes) if keepdim else ()
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(sizes))
    return tuple(s for i, s in enumerate(sizes) if i not in dims)


def _promoted(dtype):
    # integral inputs (bool included) sum to int64, as ATen's get_dtype_from_self does
    return dt.int64 if dtype.is_integral else dtype


def _acc_numpy(dtype) -> np.dtype:
    if dtype is dt.float16 or dtype is dt.bfloat16:
        return np.dtype(np.float32)
    if dtype.is_integral:
        return np.dtype(np.int64)
    return dtype.numpy


# --- sum ---------------------------------------------------------------------------------


@native
def meta_sum_dim_IntList(op, self: Tensor, dim, keepdim: bool = False, dtype=None) -> None:  # noqa: N802
    sizes = self._sizes
    dims = reduction_dims(dim, len(sizes))
    if dtype is not None:
        out_dtype = dtype
    else:
        out = op.outputs[0]  # the caller's out=, or None (functional)
        out_dtype = out._dtype if out is not None else _promoted(self._dtype)
    op.set_output(0, reduced_sizes(sizes, dims, keepdim), out_dtype, self._device)


def _reduce_sum(self: Tensor, dims: tuple, keepdim: bool, out: Tensor) -> np.ndarray:
    acc = _acc_numpy(out._dtype)
    source = self._numpy()
    if source.dtype != acc:
        source = source.astype(acc)
    if acc.kind in "iub":
        # integer sums wrap silently, as in ATen
        return np.add.reduce(source, axis=dims, dtype=acc, keepdims=keepdim)
    return quiet_call(_add_reduce, source, dims, acc, None, keepdim)


@native
def sum_out(op, self: Tensor, dim, keepdim: bool, dtype, out: Tensor) -> None:
    dims = reduction_dims(dim, len(self._sizes))
    assign(out._numpy(), _reduce_sum(self, dims, keepdim, out))


@native
def sum_all(self: Tensor, dtype=None) -> Tensor:
    # In schema order (`dtype` positionally): the handle's fast path, no argument parsing.
    return _aten().sum.dim_IntList(self, None, False, dtype)


# --- mean --------------------------------------------------------------------------------


def _mean_dtype(self: Tensor, dtype):
    in_dtype = _promoted(self.dtype) if dtype is None else dtype
    if not (in_dtype.is_floating_point or in_dtype.is_complex):
        what, name = ("Optional", dtype.scalar_name) if dtype is not None else (
            "Input", self.dtype.scalar_name
        )
        raise RuntimeError(
            f"mean(): could not infer output dtype. {what} dtype must be either a floating "
            f"point or complex dtype. Got: {name}"
        )
    return in_dtype


@native
def meta_mean_dim(op, self: Tensor, dim, keepdim: bool = False, dtype=None) -> None:
    in_dtype = _mean_dtype(self, dtype)
    dims = reduction_dims(dim, len(self._sizes))
    if dtype is not None:
        out_dtype = dtype
    else:
        out = op.maybe_get_output(0)
        out_dtype = out.dtype if out is not None else in_dtype
    if not can_cast(in_dtype, out_dtype):
        raise RuntimeError(
            f"result type {in_dtype.scalar_name} can't be cast to the desired output type "
            f"{out_dtype.scalar_name}"
        )
    op.set_output(0, reduced_sizes(self._sizes, dims, keepdim), out_dtype, self.device)


@native
def mean_out(op, self: Tensor, dim, keepdim: bool, dtype, out: Tensor) -> None:
    sizes = self._sizes
    dims = reduction_dims(dim, len(sizes))
    count = 1
    for d in dims:
        count *= sizes[d]
    _mean_dtype(self, dtype)
    # ATen sums straight into `out` (in its accumulate type) and divides there
    acc = _acc_numpy(out.dtype)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        source = self._numpy()
        if source.dtype != acc:
            source = source.astype(acc)
        total = np.add.reduce(source, axis=dims, dtype=acc, keepdims=keepdim)
        result = total / acc.type(count)
    assign(out._numpy(), result)


@native
def mean_all(self: Tensor, dtype=None) -> Tensor:
    return _aten().mean.dim(self, None, False, dtype=dtype)


@native
def mean_dtype_out(self: Tensor, dtype=None, out: Tensor = None) -> Tensor:
    return _aten().mean.out(self, None, False, dtype=dtype, out=out)


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
    dims = list(range(leading)) + [
        leading + i for i, want in enumerate(size) if want == 1 and sizes[leading + i] != 1
    ]
    if not dims:
        return self
    result = _aten().sum.dim_IntList(self, dims, True)
    return _aten().view.default(result, tuple(size)) if leading else result
