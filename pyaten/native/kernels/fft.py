"""The discrete Fourier transforms of `torch.fft`: three primitive kernels and the composites
PyTorch builds on them.

`_fft_r2c` (real to complex, forward), `_fft_c2r` (complex to real, inverse) and `_fft_c2c`
(either direction) have CPU kernels, computed by SciPy's pocketfft (`scipy.fft`, which keeps
float32 in float32 where `numpy.fft` would widen to float64), and Meta kernels giving the
same shapes, dtypes and strides. Every `fft_*` operator of `pyaten.fft` is a
`CompositeImplicitAutograd` function over those three and a few ordinary operators (dtype
promotion, slicing and zero padding to `n`/`s`, `conj`), in PyTorch's order of checks, so
its errors and its Meta results come out as PyTorch's do. `fftfreq`/`rfftfreq` are
`CompositeExplicitAutograd` factories over `arange` and `mul_`.

Note: the result layout of an FFT
    PyTorch's CPU FFT permutes the input so that the batch dimensions (those not
    transformed) come first, ordered by decreasing input stride, and the transformed dims
    last, in the order it transforms them; the result is contiguous in that permuted order.
    So `fft(x, dim=0)` of a contiguous (3, 4) tensor has strides (1, 3), not (4, 1). The
    `_layout` plan below makes that permutation once; the CPU kernels compute on the
    permuted arrays (SciPy's result is then already in that layout, no copy) and the Meta
    kernels allocate with the plan's strides.

Normalisation is PyTorch's integer code: 0 none, 1 by 1/sqrt(n), 2 by 1/n (`norm=` names
map to it per direction: "backward" scales only the inverse, "forward" only the forward).
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.creation import share_array
from pyaten.core.device import CPU as _CPU
from pyaten.core.promotion import can_cast
from pyaten.core.views import empty_tensor
from pyaten.native.kernels.shape import aten_ops, wrap_dim
from pyaten.native.lazy import LazyModule
from pyaten.native.registry import native
from pyaten.native.runtime import Tensor
from pyaten.native.structured import resize_output

sfft = LazyModule("scipy.fft")  # imported on the first transform

_NONE, _BY_ROOT_N, _BY_N = 0, 1, 2

# scipy.fft's `norm=` for PyTorch's normalisation code, by the sign of the exponent: a
# forward (e^-i) transform scales by 1/n under "forward", an inverse one under "backward".
_SCIPY_NORM_FORWARD = {_NONE: "backward", _BY_ROOT_N: "ortho", _BY_N: "forward"}
_SCIPY_NORM_INVERSE = {_NONE: "forward", _BY_ROOT_N: "ortho", _BY_N: "backward"}

_TO_COMPLEX = {dt.float16: dt.complex32, dt.float32: dt.complex64, dt.float64: dt.complex128}
_TO_REAL = {v: k for k, v in _TO_COMPLEX.items()}


# --- the result layout (see Note: the result layout of an FFT) --------------------------------


def _layout(
    sizes: tuple, strides: tuple, out_sizes: list, dims: list
) -> tuple[list[int], tuple[int, ...]]:
    """(perm, out_strides): the order the input is permuted to (batch dims by decreasing
    stride, then `dims`) and the strides of a result contiguous in that order."""
    transformed = set(dims)
    batch = sorted((d for d in range(len(sizes)) if d not in transformed),
                   key=lambda d: -strides[d])
    perm = batch + list(dims)
    out_strides = [0] * len(sizes)
    step = 1
    for d in reversed(dims):  # the transformed dims: contiguous (empty dims count as 1)
        out_strides[d] = step
        step *= max(out_sizes[d], 1)
    numel = 1
    for d in reversed(batch):  # the collapsed batch: its sizes as they are
        out_strides[d] = numel * step
        numel *= out_sizes[d]
    return perm, tuple(out_strides)


def _by_stride(t: Tensor, dims: list, keep_last: bool = False) -> list[int]:
    """`dims` sorted by decreasing stride of `t` (the last one left in place if asked): the
    order PyTorch's CPU kernels transform them in."""
    head = dims[:-1] if keep_last else dims
    ordered = sorted(head, key=lambda d: -t._strides[d])
    return ordered + dims[-1:] if keep_last else ordered


def _new_result(sizes: list, strides: tuple, dtype: dt.dtype, device=None) -> Tensor:
    return empty_tensor(tuple(sizes), dtype, _CPU if device is None else device, strides)


def _from_permuted(values: np.ndarray, perm: list[int], strides: tuple, dtype: dt.dtype) -> Tensor:
    """A tensor over SciPy's result, computed in the permuted order: transposed back, it has
    the plan's layout and is shared without a copy (copied where the two differ)."""
    result = values.transpose(np.argsort(perm))
    itemsize = result.itemsize
    if tuple(s // itemsize for s in result.strides) == strides:
        return share_array(result, dtype)
    out = _new_result(list(result.shape), strides, dtype, None)
    out._numpy()[...] = result
    return out


# torch's Meta functions check dtypes with a bare `torch._check`, whose message says only this
_META_CHECK = (
    "Expected cond to be True, but got False. (Could this error message be improved? If so, "
    "please report an enhancement request to PyTorch.)"
)


def _check_dtype(t: Tensor, complex_input: bool) -> None:
    if t._device.type == "meta" and t._dtype.is_complex != complex_input:
        raise RuntimeError(_META_CHECK)
    if complex_input and not t._dtype.is_complex:
        raise RuntimeError(f"Only supports complex dtypes, but found: {t._dtype.scalar_name}")
    if not complex_input and not t._dtype.is_floating_point:
        raise RuntimeError(
            f"Only supports floating-point dtypes, but found: {t._dtype.scalar_name}"
        )


def _check_cpu_dtype(t: Tensor) -> None:
    if t._dtype in (dt.float16, dt.bfloat16, dt.complex32):
        raise RuntimeError(f"MKL FFT doesn't support tensors of type: {t._dtype.scalar_name}")


def _check_not_empty(t: Tensor) -> None:
    # PyTorch's CPU FFT (oneMKL) refuses a signal batch with no elements
    if t.numel() == 0:
        raise RuntimeError(
            "MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configuration parameters"
        )


def _check_dims(dims: list, op: str) -> list[int]:
    if not dims:
        raise RuntimeError(f"{op}: expected at least one dim to transform")
    return [int(d) for d in dims]


# --- _fft_c2c ------------------------------------------------------------------------------------


def _c2c_plan(self: Tensor, dims: list) -> tuple[list, list, tuple]:
    ordered = _by_stride(self, dims)
    perm, strides = _layout(self._sizes, self._strides, list(self._sizes), ordered)
    return ordered, perm, strides


@native
def _fft_c2c_meta(self: Tensor, dim: list, normalization: int, forward: bool) -> Tensor:
    _check_dtype(self, True)
    dims = [int(d) for d in dim]
    if not dims:
        return aten_ops().clone.default(self, None)
    _, _, strides = _c2c_plan(self, dims)
    return _new_result(list(self._sizes), strides, self._dtype, self._device)


@native
def _fft_c2c_cpu(self: Tensor, dim: list, normalization: int, forward: bool) -> Tensor:
    _check_dtype(self, True)
    _check_cpu_dtype(self)
    dims = [int(d) for d in dim]
    if not dims:
        return aten_ops().clone.default(self, None)
    _check_not_empty(self)
    ordered, perm, strides = _c2c_plan(self, dims)
    x = self._numpy().transpose(perm)
    axes = list(range(x.ndim - len(ordered), x.ndim))
    if forward:
        norm = _SCIPY_NORM_FORWARD.get(normalization, "backward")
        values = sfft.fft(x, norm=norm) if len(axes) == 1 else sfft.fftn(x, axes=axes, norm=norm)
    else:
        norm = _SCIPY_NORM_INVERSE.get(normalization, "forward")
        values = sfft.ifft(x, norm=norm) if len(axes) == 1 else sfft.ifftn(x, axes=axes, norm=norm)
    return _from_permuted(values, perm, strides, self._dtype)


# --- _fft_r2c ------------------------------------------------------------------------------------


def _r2c_plan(self: Tensor, dims: list, onesided: bool) -> tuple[list, list, list, tuple]:
    out_sizes = list(self._sizes)
    if onesided:
        out_sizes[dims[-1]] = self._sizes[dims[-1]] // 2 + 1
    ordered = _by_stride(self, dims, keep_last=True)
    perm, strides = _layout(self._sizes, self._strides, out_sizes, ordered)
    return ordered, out_sizes, perm, strides


@native
def _fft_r2c_meta(self: Tensor, dim: list, normalization: int, onesided: bool) -> Tensor:
    _check_dtype(self, False)
    dims = _check_dims(dim, "_fft_r2c")
    _, out_sizes, _, strides = _r2c_plan(self, dims, onesided)
    return _new_result(out_sizes, strides, _TO_COMPLEX[self._dtype], self._device)


@native
def _fft_r2c_cpu(self: Tensor, dim: list, normalization: int, onesided: bool) -> Tensor:
    _check_dtype(self, False)
    _check_cpu_dtype(self)
    dims = _check_dims(dim, "_fft_r2c")
    ordered, out_sizes, perm, strides = _r2c_plan(self, dims, onesided)
    _check_not_empty(self)
    dtype = _TO_COMPLEX[self._dtype]
    x = self._numpy().transpose(perm)
    axes = list(range(x.ndim - len(ordered), x.ndim))
    norm = _SCIPY_NORM_FORWARD.get(normalization, "backward")
    if len(axes) == 1:  # the 1-d functions skip fftn's axis bookkeeping
        values = (sfft.rfft if onesided else sfft.fft)(x, norm=norm)
    else:
        values = (sfft.rfftn if onesided else sfft.fftn)(x, axes=axes, norm=norm)
    return _from_permuted(values, perm, strides, dtype)


# --- _fft_c2r ------------------------------------------------------------------------------------


def _c2r_plan(self: Tensor, dims: list, last_dim_size: int):
    """(c2c dims, perm, out sizes, strides): PyTorch transforms all but the last dim c2c first
    (laid out as `_fft_c2c` lays them out), then the last one c2r."""
    c2c_dims = _by_stride(self, dims[:-1])
    sizes, strides = tuple(self._sizes), tuple(self._strides)
    if c2c_dims:
        _, strides = _layout(sizes, strides, list(sizes), c2c_dims)
    out_sizes = list(sizes)
    out_sizes[dims[-1]] = last_dim_size
    perm, out_strides = _layout(sizes, strides, out_sizes, [dims[-1]])
    return c2c_dims, perm, out_sizes, out_strides


@native
def _fft_c2r_meta(self: Tensor, dim: list, normalization: int, last_dim_size: int) -> Tensor:
    _check_dtype(self, True)
    dims = _check_dims(dim, "_fft_c2r")
    _, _, out_sizes, strides = _c2r_plan(self, dims, last_dim_size)
    return _new_result(out_sizes, strides, _TO_REAL[self._dtype], self._device)


@native
def _fft_c2r_cpu(self: Tensor, dim: list, normalization: int, last_dim_size: int) -> Tensor:
    _check_dtype(self, True)
    _check_cpu_dtype(self)
    dims = _check_dims(dim, "_fft_c2r")
    _check_not_empty(self)
    if last_dim_size < 1 or self._sizes[dims[-1]] != last_dim_size // 2 + 1:
        raise RuntimeError(
            f"_fft_c2r: the last transformed dim has size {self._sizes[dims[-1]]}, but a "
            f"signal of {last_dim_size} points needs {last_dim_size // 2 + 1}"
        )
    c2c_dims, perm, out_sizes, strides = _c2r_plan(self, dims, last_dim_size)
    dtype = _TO_REAL[self._dtype]
    # the other transformed dims sit among the "batch" of the final c2r step; put them last
    # but one so one irfftn call does both steps
    head = [d for d in perm[:-1] if d not in c2c_dims]
    order = head + c2c_dims + [dims[-1]]
    x = self._numpy().transpose(order)
    axes = list(range(x.ndim - len(dims), x.ndim))
    shape = [self._sizes[d] for d in c2c_dims] + [last_dim_size]
    norm = _SCIPY_NORM_INVERSE.get(normalization, "forward")
    if len(axes) == 1:
        values = sfft.irfft(x, last_dim_size, norm=norm)
    else:
        values = sfft.irfftn(x, s=shape, axes=axes, norm=norm)
    return _from_permuted(values, order, strides, dtype)


# --- the out= forms of the three: computed, then resized into and copied to out --------------


def _copy_out(result: Tensor, out: Tensor, op_name: str) -> Tensor:
    resize_output(out, tuple(result._sizes), op_name)
    aten_ops().copy_.default(out, result, False)
    return out


def _meta_out(result: Tensor, out: Tensor, op_name: str) -> Tensor:
    if not can_cast(result._dtype, out._dtype):
        raise RuntimeError(
            f"Attempting to cast from pyaten.{result._dtype.name} to out tensor with dtype "
            f"pyaten.{out._dtype.name}, but this can't be cast because it is not safe!"
        )
    resize_output(out, tuple(result._sizes), op_name)
    return out


@native
def _fft_c2c_cpu_out(self, dim, normalization, forward, out: Tensor) -> Tensor:
    return _copy_out(_fft_c2c_cpu(self, dim, normalization, forward), out, "_fft_c2c")


@native
def _fft_c2c_meta_out(self, dim, normalization, forward, out: Tensor) -> Tensor:
    return _meta_out(_fft_c2c_meta(self, dim, normalization, forward), out, "_fft_c2c")


@native
def _fft_r2c_cpu_out(self, dim, normalization, onesided, out: Tensor) -> Tensor:
    return _copy_out(_fft_r2c_cpu(self, dim, normalization, onesided), out, "_fft_r2c")


@native
def _fft_r2c_meta_out(self, dim, normalization, onesided, out: Tensor) -> Tensor:
    return _meta_out(_fft_r2c_meta(self, dim, normalization, onesided), out, "_fft_r2c")


@native
def _fft_c2r_cpu_out(self, dim, normalization, last_dim_size, out: Tensor) -> Tensor:
    return _copy_out(_fft_c2r_cpu(self, dim, normalization, last_dim_size), out, "_fft_c2r")


@native
def _fft_c2r_meta_out(self, dim, normalization, last_dim_size, out: Tensor) -> Tensor:
    return _meta_out(_fft_c2r_meta(self, dim, normalization, last_dim_size), out, "_fft_c2r")


# --- the composites' shared steps, in PyTorch's order of checks ------------------------------


def _promote(t: Tensor, require_complex: bool) -> Tensor:
    """Integers and bool to the default float dtype; half only on Meta (PyTorch accepts it
    where a device might support it); complex when required."""
    dtype = t._dtype
    if dtype.is_complex:
        return t
    if not dtype.is_floating_point:
        dtype = dt.get_default_dtype()
    allowed = (dt.float16, dt.float32, dt.float64) if t._device.type == "meta" else (
        dt.float32, dt.float64)
    if dtype not in allowed:
        raise RuntimeError(f"Unsupported dtype {dtype.scalar_name}")
    if require_complex:
        dtype = _TO_COMPLEX[dtype]
    if dtype is t._dtype:
        return t
    return aten_ops()._to_copy.default(t, dtype=dtype)


def _norm(norm: str | None, forward: bool) -> int:
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    if norm == "ortho":
        return _BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _resize_input(x: Tensor, dims: list, sizes: list) -> Tensor:
    """`x` cut or zero-padded (at the end) to `sizes[i]` along `dims[i]` (-1: as it is)."""
    ops = aten_ops()
    padded = list(x._sizes)
    for d, n in zip(dims, sizes):
        if n == -1:
            continue
        if x._sizes[d] > n:
            x = ops.slice.Tensor(x, d, 0, n, 1)
        padded[d] = n
    if padded == list(x._sizes):
        return x
    result = ops.new_zeros.default(x, padded)
    region = result
    for d, n in enumerate(x._sizes):
        if n != padded[d]:
            region = ops.slice.Tensor(region, d, 0, n, 1)
    ops.copy_.default(region, x, False)
    return result


def _check_n(n: int) -> None:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _conj(t: Tensor) -> Tensor:
    return aten_ops().conj.default(t)


def _c2c_maybe_out(fname, out, x, dims, norm, forward) -> Tensor:
    if out is not None:
        if not out._dtype.is_complex:
            raise RuntimeError(
                f"{fname} expects a complex output tensor, but got {out._dtype.scalar_name}"
            )
        return aten_ops()._fft_c2c.out(x, dims, norm, forward, out=out)
    return aten_ops()._fft_c2c.default(x, dims, norm, forward)


def _r2c_maybe_out(fname, out, x, dims, norm, onesided) -> Tensor:
    if out is not None:
        if not out._dtype.is_complex:
            raise RuntimeError(
                f"{fname} expects a complex output tensor, but got {out._dtype.scalar_name}"
            )
        return aten_ops()._fft_r2c.out(x, dims, norm, onesided, out=out)
    return aten_ops()._fft_r2c.default(x, dims, norm, onesided)


def _c2r_maybe_out(fname, out, x, dims, norm, last_dim_size) -> Tensor:
    if out is not None:
        if not out._dtype.is_floating_point:
            raise RuntimeError(
                f"{fname} expects a floating point output tensor, but got "
                f"{out._dtype.scalar_name}"
            )
        return aten_ops()._fft_c2r.out(x, dims, norm, last_dim_size, out=out)
    return aten_ops()._fft_c2r.default(x, dims, norm, last_dim_size)


# --- one-dimensional transforms ------------------------------------------------------------------


def _fft_c2c_1d(fname, out, x, n, dim, norm, forward) -> Tensor:
    if not x._dtype.is_complex:
        raise RuntimeError(
            f"{fname} expects a complex input tensor, but got {x._dtype.scalar_name}"
        )
    d = wrap_dim(dim, x.dim(), False)
    n = x._sizes[d] if n is None else n
    _check_n(n)
    x = _resize_input(x, [d], [n])
    return _c2c_maybe_out(fname, out, x, [d], _norm(norm, forward), forward)


def _fft_r2c_1d(fname, out, x, n, dim, norm, forward, onesided) -> Tensor:
    if x._dtype.is_complex:
        raise RuntimeError(
            f"{fname} expects a real input tensor, but got {x._dtype.scalar_name}"
        )
    if out is not None and not out._dtype.is_complex:
        raise RuntimeError(
            f"{fname} expects a complex output tensor, but got {out._dtype.scalar_name}"
        )
    x = _promote(x, False)
    d = wrap_dim(dim, x.dim(), False)
    n = x._sizes[d] if n is None else n
    _check_n(n)
    x = _resize_input(x, [d], [n])
    mode = _norm(norm, forward)
    ops = aten_ops()
    if forward:
        return _r2c_maybe_out(fname, out, x, [d], mode, onesided)
    result = ops._fft_r2c.default(x, [d], mode, onesided)
    # the inverse of a real signal: the conjugate of the forward transform
    return ops.conj_physical.out(result, out=out) if out is not None else _conj(result)


def _fft_c2r_1d(fname, out, x, n, dim, norm, forward) -> Tensor:
    if out is not None and not out._dtype.is_floating_point:
        raise RuntimeError(
            f"{fname} expects a floating point output tensor, but got {out._dtype.scalar_name}"
        )
    x = _promote(x, True)
    d = wrap_dim(dim, x.dim(), False)
    given = n is not None
    n = n if given else 2 * (x._sizes[d] - 1)
    _check_n(n)
    if given:
        x = _resize_input(x, [d], [n // 2 + 1])
    mode = _norm(norm, forward)
    if forward:  # hfft: the c2r transform of the conjugate
        x = _conj(x)
    return _c2r_maybe_out(fname, out, x, [d], mode, n)


def _one_dim(kind: str, fname: str, forward: bool, onesided: bool = False):
    def compute(self: Tensor, n=None, dim: int = -1, norm=None, out=None) -> Tensor:
        if kind == "c2r":
            return _fft_c2r_1d(fname, out, self, n, dim, norm, forward)
        if self._dtype.is_complex and kind == "c2c":
            return _fft_c2c_1d(fname, out, self, n, dim, norm, forward)
        return _fft_r2c_1d(fname, out, self, n, dim, norm, forward, onesided)

    return compute


_fft = _one_dim("c2c", "fft", True)
_ifft = _one_dim("c2c", "ifft", False)
_rfft = _one_dim("r2c", "rfft", True, onesided=True)
_irfft = _one_dim("c2r", "irfft", False)
_hfft = _one_dim("c2r", "hfft", True)
_ihfft = _one_dim("r2c", "ihfft", False, onesided=True)


@native
def fft_fft_symint(self: Tensor, n=None, dim: int = -1, norm=None) -> Tensor:
    """fft_fft (CompositeImplicitAutograd): c2c for complex input, full r2c for real."""
    return _fft(self, n, dim, norm)


@native
def fft_fft_symint_out(self: Tensor, n, dim, norm, out: Tensor) -> Tensor:
    _fft(self, n, dim, norm, out)
    return out


@native
def fft_ifft_symint(self: Tensor, n=None, dim: int = -1, norm=None) -> Tensor:
    return _ifft(self, n, dim, norm)


@native
def fft_ifft_symint_out(self: Tensor, n, dim, norm, out: Tensor) -> Tensor:
    _ifft(self, n, dim, norm, out)
    return out


@native
def fft_rfft_symint(self: Tensor, n=None, dim: int = -1, norm=None) -> Tensor:
    return _rfft(self, n, dim, norm)


@native
def fft_rfft_symint_out(self: Tensor, n, dim, norm, out: Tensor) -> Tensor:
    _rfft(self, n, dim, norm, out)
    return out


@native
def fft_irfft_symint(self: Tensor, n=None, dim: int = -1, norm=None) -> Tensor:
    return _irfft(self, n, dim, norm)


@native
def fft_irfft_symint_out(self: Tensor, n, dim, norm, out: Tensor) -> Tensor:
    _irfft(self, n, dim, norm, out)
    return out


@native
def fft_hfft_symint(self: Tensor, n=None, dim: int = -1, norm=None) -> Tensor:
    return _hfft(self, n, dim, norm)


@native
def fft_hfft_symint_out(self: Tensor, n, dim, norm, out: Tensor) -> Tensor:
    _hfft(self, n, dim, norm, out)
    return out


@native
def fft_ihfft_symint(self: Tensor, n=None, dim: int = -1, norm=None) -> Tensor:
    return _ihfft(self, n, dim, norm)


@native
def fft_ihfft_symint_out(self: Tensor, n, dim, norm, out: Tensor) -> Tensor:
    _ihfft(self, n, dim, norm, out)
    return out


# --- n-dimensional transforms (the 2-d ones are these with dim=(-2, -1)) ----------------------


def _shape_and_dims(x: Tensor, s, dim) -> tuple[list[int], list[int]]:
    """PyTorch's canonical (shape, dims) of an n-d transform: dims wrapped and unique; `s`
    defaults to the input's sizes, its -1 entries too; dims default to the last len(s) dims
    (or all)."""
    ndim = x.dim()
    dims = None
    if dim is not None:
        dims = [wrap_dim(d, ndim, False) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        if dims is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(
                f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions."
            )
        if dims is None:
            dims = list(range(ndim - len(s), ndim))
        shape = [x._sizes[d] if n == -1 else n for d, n in zip(dims, s)]
    elif dims is None:
        dims = list(range(ndim))
        shape = list(x._sizes)
    else:
        shape = [x._sizes[d] for d in dims]
    for n in shape:
        _check_n(n)
    return shape, dims


def _c2r_shape_and_dims(fname, x, s, dim) -> tuple[list[int], list[int], int]:
    shape, dims = _shape_and_dims(x, s, dim)
    if not shape:
        raise RuntimeError(f"{fname} must transform at least one axis")
    if s is None or s[-1] == -1:
        last = 2 * (x._sizes[dims[-1]] - 1)
    else:
        last = shape[-1]
    _check_n(last)
    shape[-1] = last // 2 + 1
    return shape, dims, last


def _fftn(fname: str, forward: bool):
    def compute(self: Tensor, s, dim, norm, out=None) -> Tensor:
        shape, dims = _shape_and_dims(self, s, dim)
        x = _resize_input(_promote(self, True), dims, shape)
        return _c2c_maybe_out("fftn", out, x, dims, _norm(norm, forward), forward)

    compute.__name__ = fname
    return compute


_fftn_forward = _fftn("fftn", True)
_fftn_inverse = _fftn("ifftn", False)


def _rfftn(self: Tensor, s, dim, norm, out=None) -> Tensor:
    if self._dtype.is_complex:
        raise RuntimeError(
            f"rfftn expects a real-valued input tensor, but got {self._dtype.scalar_name}"
        )
    shape, dims = _shape_and_dims(self, s, dim)
    if not shape:
        raise RuntimeError("rfftn must transform at least one axis")
    x = _resize_input(_promote(self, False), dims, shape)
    return _r2c_maybe_out("rfftn", out, x, dims, _norm(norm, True), True)


def _irfftn(self: Tensor, s, dim, norm, out=None) -> Tensor:
    shape, dims, last = _c2r_shape_and_dims("irfftn", self, s, dim)
    x = _resize_input(_promote(self, True), dims, shape)
    return _c2r_maybe_out("irfftn", out, x, dims, _norm(norm, False), last)


def _hfftn(self: Tensor, s, dim, norm, out=None) -> Tensor:
    shape, dims, last = _c2r_shape_and_dims("hfftn", self, s, dim)
    x = _resize_input(_promote(self, True), dims, shape)
    mode = _norm(norm, True)
    if len(dims) > 1:
        x = aten_ops()._fft_c2c.default(x, dims[:-1], mode, True)
    return _c2r_maybe_out("hfftn", out, _conj(x), dims[-1:], mode, last)


def _ihfftn(self: Tensor, s, dim, norm, out=None) -> Tensor:
    shape, dims = _shape_and_dims(self, s, dim)
    if not shape:
        raise RuntimeError("ihfftn must transform at least one axis")
    x = _resize_input(_promote(self, False), dims, shape)
    mode = _norm(norm, False)
    ops = aten_ops()
    onesided = ops._fft_r2c.default(x, dims[-1:], mode, True)
    if len(dims) == 1:
        # PyTorch 2.13 leaves `out` unwritten here (it swaps conj_physical_out's arguments);
        # pyaten writes the result
        return ops.conj_physical.out(onesided, out=out) if out is not None else _conj(onesided)
    conjugate = ops.conj_physical.default(onesided)
    return _c2c_maybe_out("ihfftn", out, conjugate, dims[:-1], mode, False)


_N_DIM = {
    "fftn": _fftn_forward, "ifftn": _fftn_inverse, "rfftn": _rfftn, "irfftn": _irfftn,
    "hfftn": _hfftn, "ihfftn": _ihfftn,
}  # fmt: skip


def _n_dim(name: str, self: Tensor, s, dim, norm, out=None) -> Tensor:
    return _N_DIM[name](self, None if s is None else list(s),
                        None if dim is None else list(dim), norm, out)


@native
def fft_fftn_symint(self: Tensor, s=None, dim=None, norm=None) -> Tensor:
    """fft_fftn (CompositeImplicitAutograd): real input promoted to complex, then c2c."""
    return _n_dim("fftn", self, s, dim, norm)


@native
def fft_fftn_symint_out(self: Tensor, s, dim, norm, out: Tensor) -> Tensor:
    _n_dim("fftn", self, s, dim, norm, out)
    return out


@native
def fft_ifftn_symint(self: Tensor, s=None, dim=None, norm=None) -> Tensor:
    return _n_dim("ifftn", self, s, dim, norm)


@native
def fft_ifftn_symint_out(self: Tensor, s, dim, norm, out: Tensor) -> Tensor:
    _n_dim("ifftn", self, s, dim, norm, out)
    return out


@native
def fft_rfftn_symint(self: Tensor, s=None, dim=None, norm=None) -> Tensor:
    return _n_dim("rfftn", self, s, dim, norm)


@native
def fft_rfftn_symint_out(self: Tensor, s, dim, norm, out: Tensor) -> Tensor:
    _n_dim("rfftn", self, s, dim, norm, out)
    return out


@native
def fft_irfftn_symint(self: Tensor, s=None, dim=None, norm=None) -> Tensor:
    return _n_dim("irfftn", self, s, dim, norm)


@native
def fft_irfftn_symint_out(self: Tensor, s, dim, norm, out: Tensor) -> Tensor:
    _n_dim("irfftn", self, s, dim, norm, out)
    return out


@native
def fft_hfftn_symint(self: Tensor, s=None, dim=None, norm=None) -> Tensor:
    return _n_dim("hfftn", self, s, dim, norm)


@native
def fft_hfftn_symint_out(self: Tensor, s, dim, norm, out: Tensor) -> Tensor:
    _n_dim("hfftn", self, s, dim, norm, out)
    return out


@native
def fft_ihfftn_symint(self: Tensor, s=None, dim=None, norm=None) -> Tensor:
    return _n_dim("ihfftn", self, s, dim, norm)


@native
def fft_ihfftn_symint_out(self: Tensor, s, dim, norm, out: Tensor) -> Tensor:
    _n_dim("ihfftn", self, s, dim, norm, out)
    return out


@native
def fft_fft2_symint(self: Tensor, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """fft_fft2 (CompositeImplicitAutograd): fftn over two dims."""
    return _n_dim("fftn", self, s, dim, norm)


@native
def fft_fft2_symint_out(self: Tensor, s, dim, norm, out: Tensor) -> Tensor:
    _n_dim("fftn", self, s, dim, norm, out)
    return out


@native
def fft_ifft2_symint(self: Tensor, s=None, dim=(-2, -1), norm=None) -> Tensor:
    return _n_dim("ifftn", self, s, dim, norm)


@native
def fft_ifft2_symint_out(self: Tensor, s, dim, norm, out: Tensor) -> Tensor:
    _n_dim("ifftn", self, s, dim, norm, out)
    return out


@native
def fft_rfft2_symint(self: Tensor, s=None, dim=(-2, -1), norm=None) -> Tensor:
    return _n_dim("rfftn", self, s, dim, norm)


@native
def fft_rfft2_symint_out(self: Tensor, s, dim, norm, out: Tensor) -> Tensor:
    _n_dim("rfftn", self, s, dim, norm, out)
    return out


@native
def fft_irfft2_symint(self: Tensor, s=None, dim=(-2, -1), norm=None) -> Tensor:
    return _n_dim("irfftn", self, s, dim, norm)


@native
def fft_irfft2_symint_out(self: Tensor, s, dim, norm, out: Tensor) -> Tensor:
    _n_dim("irfftn", self, s, dim, norm, out)
    return out


@native
def fft_hfft2_symint(self: Tensor, s=None, dim=(-2, -1), norm=None) -> Tensor:
    return _n_dim("hfftn", self, s, dim, norm)


@native
def fft_hfft2_symint_out(self: Tensor, s, dim, norm, out: Tensor) -> Tensor:
    _n_dim("hfftn", self, s, dim, norm, out)
    return out


@native
def fft_ihfft2_symint(self: Tensor, s=None, dim=(-2, -1), norm=None) -> Tensor:
    return _n_dim("ihfftn", self, s, dim, norm)


@native
def fft_ihfft2_symint_out(self: Tensor, s, dim, norm, out: Tensor) -> Tensor:
    _n_dim("ihfftn", self, s, dim, norm, out)
    return out


# --- sample frequencies (CompositeExplicitAutograd factories) ------------------------------------


def _half(n: int) -> int:
    """n / 2 as C++ divides integers (towards zero: rfftfreq(-1) has one element)."""
    return -(-n // 2) if n < 0 else n // 2


def _frequency_scale(n: int, d: float) -> float:
    spacing = n * d
    if spacing == 0:  # C++ divides by zero to an infinity
        return math.copysign(math.inf, spacing)
    return 1.0 / spacing


@native
def fft_fftfreq_out(n: int, d: float, out: Tensor) -> Tensor:
    """fft_fftfreq.out: [0, 1, ..., -(n//2), ..., -1] / (n * d), in out's dtype."""
    if not (out._dtype.is_floating_point or out._dtype.is_complex):
        raise RuntimeError("fftfreq requires a floating point or complex dtype")
    ops = aten_ops()
    ops.arange.out(n, out=out)
    negative = ops.slice.Tensor(out, 0, _half(n + 1), None, 1)
    ops.arange.start_out(-_half(n), 0, 1, out=negative)
    return ops.mul_.Scalar(out, _frequency_scale(n, d))


@native
def fft_fftfreq(n: int, d: float = 1.0, dtype=None, layout=None, device=None,
                pin_memory=None) -> Tensor:
    out = aten_ops().empty.memory_format([n], dtype, layout, device, pin_memory, None)
    return fft_fftfreq_out(n, d, out)


@native
def fft_rfftfreq_out(n: int, d: float, out: Tensor) -> Tensor:
    """fft_rfftfreq.out: [0, 1, ..., n//2] / (n * d), in out's dtype."""
    if not (out._dtype.is_floating_point or out._dtype.is_complex):
        raise RuntimeError("rfftfreq requires a floating point or complex dtype")
    ops = aten_ops()
    ops.arange.out(_half(n) + 1, out=out)
    return ops.mul_.Scalar(out, _frequency_scale(n, d))


@native
def fft_rfftfreq(n: int, d: float = 1.0, dtype=None, layout=None, device=None,
                 pin_memory=None) -> Tensor:
    out = aten_ops().empty.memory_format([_half(n) + 1], dtype, layout, device, pin_memory, None)
    return fft_rfftfreq_out(n, d, out)


# --- fftshift / ifftshift (CompositeImplicitAutograd) ------------------------------------------


def _shift(x: Tensor, dim, inverse: bool) -> Tensor:
    original = x
    if dim is None:
        dims = list(range(x.dim()))
    else:
        dims = [wrap_dim(d, x.dim(), False) for d in dim]
    if not dims:
        raise RuntimeError("`shifts` required")  # roll's message: nothing to roll by
    ops = aten_ops()
    for d in dims:
        # PyTorch rolls by half the size; a roll along one dim is two slices swapped
        size = x._sizes[d]
        shift = (size + 1) // 2 if inverse else size // 2
        if size and shift % size:
            cut = size - shift
            x = ops.cat.default([ops.slice.Tensor(x, d, cut, None, 1),
                                 ops.slice.Tensor(x, d, 0, cut, 1)], d)
    if x is original:  # nothing moved: still a new tensor, as roll's result is
        x = ops.clone.default(x, None)
    return x


@native
def fft_fftshift(self: Tensor, dim=None) -> Tensor:
    """fft_fftshift: roll each dim by half its size, the zero frequency to the centre."""
    return _shift(self, dim, False)


@native
def fft_ifftshift(self: Tensor, dim=None) -> Tensor:
    """fft_ifftshift: the inverse roll of fftshift."""
    return _shift(self, dim, True)
