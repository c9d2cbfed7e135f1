"""The pools of PyTorch's OpInfo list beyond pool.py: `adaptive_max_pool3d` (+ backward),
`max_unpool3d`, and fractional max pooling (`fractional_max_pool2d/3d` + backward).

They reuse pool.py's array helpers: `adaptive_max_pool_arrays` (any number of pooled dims),
`unpool_planes` (max unpooling's scatter and its invalid-index error) and `_scatter_planes`
(the backward's sum into flat plane positions).

Note: fractional max pooling's windows
    Each plane (n, c) has one sample u in [0, 1) per pooled dim (`random_samples` of shape
    (N, C, 2|3), in the input's dtype; the 2-d op reads them as (W, H), the 3-d op as
    (T, H, W)). Along a dim of size n pooled by k to o outputs, window i starts at
    int((i + u) * a) - int(u * a) with a = (n - k) / (o - 1), and the last at n - k. ATen
    computes this in the input's dtype (c10::Half arithmetic for float16, rounding after
    every operation), so the starts are computed here with NumPy in that dtype too: a seeded
    call then picks PyTorch's windows. The maximum of a window is found as pool.py's loops
    do: one gather per kernel tap, a later value winning when greater or NaN.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor
from pyaten.native.family import unsupported_dtype
from pyaten.native.kernels.pool import (
    _acc,
    _is_meta,
    _scatter_planes,
    _shape,
    _store,
    adaptive_max_pool_arrays,
    adaptive_max_pool_sizes,
    unpool_planes,
)
from pyaten.native.registry import native

_FLOATING = (dt.float32, dt.float64, dt.float16, dt.bfloat16)


def _planes(x: np.ndarray, nd: int) -> np.ndarray:
    """x (..., *S) as (B, *S) with the last nd dims kept."""
    return x.reshape((-1,) + x.shape[-nd:])


# --- adaptive_max_pool3d ----------------------------------------------------------------------


@native
def meta_adaptive_max_pool3d(op, self: Tensor, output_size) -> None:
    sizes = adaptive_max_pool_sizes(self, output_size, 3)
    op.set_output(0, sizes, self._dtype, self._device)
    op.set_output(1, sizes, dt.int64, self._device)


@native
def adaptive_max_pool3d_out_cpu(op, self: Tensor, output_size, out: Tensor,
                                indices: Tensor) -> None:
    if self._dtype not in _FLOATING:
        raise unsupported_dtype("adaptive_max_pool3d_cpu", self._dtype)
    if out.numel() == 0:
        return
    x = _planes(self._numpy().astype(_acc(self._dtype), copy=False), 3)
    values, idx = adaptive_max_pool_arrays(x, tuple(out._sizes[-3:]))
    _store(out, values)
    _store(indices, idx)


@native
def meta_adaptive_max_pool3d_backward(op, grad_output: Tensor, self: Tensor,
                                      indices: Tensor) -> None:
    if grad_output.dim() not in (4, 5):
        raise RuntimeError(
            "adaptive_max_pool3d_backward(): Expected 4D or 5D gradOutput, but got: "
            f"{_shape(grad_output._sizes)}"
        )
    if self._dtype is not grad_output._dtype:
        raise RuntimeError(
            f"expected dtype {self._dtype.cpp_name} for `gradOutput` but got dtype "
            f"{grad_output._dtype.cpp_name}"
        )
    op.set_output(0, tuple(self._sizes), self._dtype, self._device)


@native
def adaptive_max_pool3d_backward_out_cpu(op, grad_output: Tensor, self: Tensor, indices: Tensor,
                                         grad_input: Tensor) -> None:
    if indices._dtype is not dt.int64:
        raise RuntimeError(f"expected scalar type Long but found {indices._dtype.scalar_name}")
    if tuple(indices._sizes) != tuple(grad_output._sizes):
        raise RuntimeError(
            f"expected sizes {_shape(indices._sizes)} for `gradOutput` but got sizes "
            f"{_shape(grad_output._sizes)}")
    if self._dtype not in _FLOATING:
        raise unsupported_dtype("adaptive_max_pool3d_backward", self._dtype)
    if grad_input.numel() == 0:
        return
    plane = int(np.prod(self._sizes[-3:]))
    g = _planes(grad_output._numpy().astype(_acc(self._dtype), copy=False), 3)
    _store(grad_input, _scatter_planes(g, _planes(indices._numpy(), 3), plane, False))


# --- max_unpool3d -----------------------------------------------------------------------------


def _unpool3d(self: Tensor, indices: Tensor, output_size, stride, padding) -> Tensor:
    """ATen's max_unpooling3d_shape_check, in its order, then the scatter."""
    from pyaten.core.broadcast import new_row_major

    if indices._dtype is not dt.int64:
        raise RuntimeError("elements in indices should be type int64")
    if self.dim() not in (4, 5):
        raise RuntimeError(
            "Input to max_unpooling3d should be a 4d or 5d Tensor, but got a tensor with "
            f"{self.dim()} dimensions.")
    size, stride, padding = (tuple(int(v) for v in a) for a in (output_size, stride, padding))
    if len(size) != 3:
        raise RuntimeError(
            "There should be exactly three elements (depth, height, width) in output_size, but "
            f"got {len(size)} elements.")
    for name, values in (("stride", stride), ("padding", padding)):
        if len(values) != 3:
            raise RuntimeError(
                f"There should be exactly three elements (depth, height, width) in {name}, but "
                f"got: {len(values)} elements.")
    if tuple(self._sizes) != tuple(indices._sizes):
        raise RuntimeError(
            "Expected shape of indices to be same as that of the input tensor "
            f"({_shape(self._sizes)}) but got indices tensor with shape: "
            f"{_shape(indices._sizes)}")
    for dim in range(1, self.dim()):
        if self._sizes[dim] <= 0:
            raise RuntimeError(
                "max_unpooling3d_forward_out_cpu(): Expected input to have non-zero size for "
                f"non-batch dimensions, but got {_shape(self._sizes)} with dimension {dim} "
                "being empty.")
    if min(stride) <= 0:
        raise RuntimeError(f"strides should be greater than zero, but got stride: {_shape(stride)}")
    if min(size) < 0:
        raise RuntimeError(
            "max_unpooling3d(): output_size must contain non-negative spatial dimensions, but "
            "got output_size=(" + ", ".join(str(n) for n in size) + ")")
    if self._dtype not in _FLOATING:
        raise unsupported_dtype("max_unpool3d", self._dtype)
    result = new_row_major(tuple(self._sizes[:-3]) + size, self._dtype, self._device)
    if _is_meta(self, indices) or result.numel() == 0:
        return result
    _store(result, unpool_planes(self, indices, size))
    return result


@native
def max_unpooling3d_forward_cpu(self: Tensor, indices: Tensor, output_size, stride,
                                padding) -> Tensor:
    return _unpool3d(self, indices, output_size, stride, padding)


@native
def max_unpooling3d_forward_out_cpu(self: Tensor, indices: Tensor, output_size, stride, padding,
                                    out: Tensor) -> Tensor:
    from pyaten.native.kernels.shape import aten_ops
    from pyaten.native.structured import resize_output

    result = _unpool3d(self, indices, output_size, stride, padding)
    if out._dtype is not result._dtype:
        raise RuntimeError(
            f"Expected out tensor to have dtype {result._dtype.cpp_name}, but got "
            f"{out._dtype.cpp_name} instead")
    resize_output(out, tuple(result._sizes), "max_unpool3d")
    aten_ops().copy_.default(out, result, False)
    return out


# --- fractional max pooling (see Note: fractional max pooling's windows) ------------------------


def fractional_starts(samples: np.ndarray, size: int, out: int, pool: int) -> np.ndarray:
    """(P, out) window starts along one dim, one row per plane's sample (P,), computed in the
    samples' dtype as ATen's generate_intervals."""
    starts = np.empty((samples.shape[0], out), np.int64)
    if out > 1:
        real = samples.dtype.type
        alpha = real(size - pool) / real(out - 1)
        steps = np.arange(out - 1).astype(samples.dtype)
        scaled = (steps[None, :] + samples[:, None]) * alpha
        first = (samples * alpha).astype(np.float64).astype(np.int64)
        starts[:, :-1] = scaled.astype(np.float64).astype(np.int64) - first[:, None]
    if out > 0:
        starts[:, -1] = size - pool
    return starts


def fractional_max_pool_arrays(x: np.ndarray, samples: np.ndarray, k, out) -> tuple:
    """(values, flat indices) of x (P, *S) pooled by windows of k whose starts come from
    samples (P, nd), already in the order of S's dims."""
    nd = len(k)
    size = x.shape[1:]
    plane = [int(np.prod(size[a + 1:])) for a in range(nd)]
    starts = [fractional_starts(samples[:, a], size[a], out[a], k[a]) for a in range(nd)]
    # per dim, (P, 1.., out_a, 1..): broadcast to (P, *out)
    shaped = [s.reshape((s.shape[0],) + (1,) * a + (out[a],) + (1,) * (nd - a - 1))
              for a, s in enumerate(starts)]
    base = sum(s * pl for s, pl in zip(shaped, plane))
    flat = x.reshape(x.shape[0], -1)
    best = np.full((x.shape[0],) + tuple(out), -np.inf, x.dtype)
    index = np.empty(best.shape, np.int64)
    index[...] = base
    has_nan = bool(np.isnan(x).any())
    shape = best.shape
    for taps in np.ndindex(*k):
        at = base + sum(t * pl for t, pl in zip(taps, plane))
        v = np.take_along_axis(flat, at.reshape(shape[0], -1), 1).reshape(shape)
        take = v > best
        if has_nan:
            take |= np.isnan(v)
        np.copyto(best, v, where=take)
        np.copyto(index, np.broadcast_to(at, shape), where=take)
    return best, index


def _fractional_samples(self: Tensor, samples: Tensor, nd: int) -> None:
    """ATen's fractional_max_pool_check_shape (run by the CPU kernel, after meta)."""
    if samples._dtype is not self._dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    n, c, d = samples._sizes
    batched = self.dim() == nd + 2
    batch = self._sizes[0] if batched else 1
    channels = self._sizes[1] if batched else self._sizes[0]
    if n < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if c != channels:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if d != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {d}.")


def _fractional_compute(self: Tensor, samples: Tensor, k, out: Tensor, indices: Tensor,
                        frame: str) -> None:
    nd = len(k)
    _fractional_samples(self, samples, nd)
    if out.numel() == 0:
        return
    if self._dtype not in _FLOATING:
        raise unsupported_dtype(frame, self._dtype)
    planes = int(np.prod(self._sizes[:-nd]))
    u = samples._numpy().reshape(-1, nd)[:planes]
    if nd == 2:
        u = u[:, ::-1]  # the 2-d op stores (W, H)
    x = _planes(self._numpy(), nd)
    values, idx = fractional_max_pool_arrays(x, u, k, tuple(out._sizes[-nd:]))
    _store(out, values)
    _store(indices, idx)


def _fractional_meta(op, self: Tensor, k, o, name: str, strict: bool) -> None:
    nd = len(k)
    if self.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {_shape(self._sizes)}")
    for dim in range(1, self.dim()):
        if self._sizes[dim] <= 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"got{_shape(self._sizes)} with dimension {dim} being empty.")
    size = self._sizes[-nd:]
    words = ("time", "height", "width")[3 - nd:]
    order = (0, 2, 1) if nd == 3 else (0, 1)  # ATen checks T, W, H
    for a in order:
        fits = o[a] + k[a] - 1 < size[a] if strict else o[a] + k[a] - 1 <= size[a]
        if not fits:
            raise RuntimeError(
                f"{name}(): pool {words[a]} {k[a]} too large relative to input {words[a]} "
                f"{size[a]}")
    sizes = tuple(self._sizes[:-nd]) + tuple(o)
    if any(s < 0 for s in sizes):
        bad = next(s for s in sizes if s < 0)
        raise RuntimeError(
            f"Trying to create tensor with negative dimension {bad}: {_shape(sizes)}")
    op.set_output(0, sizes, self._dtype, self._device)
    op.set_output(1, sizes, dt.int64, self._device)


def _sizes_arg(values, what: str, op: str, nd: int) -> tuple:
    values = tuple(int(v) for v in values)
    if len(values) != nd:
        ints = "Ints" if nd == 2 else "three Ints"
        raise RuntimeError(f"{op}: {what} must either be a single Int or tuple of {ints}")
    return values


@native
def meta_fractional_max_pool2d(op, self: Tensor, kernel_size, output_size,
                               random_samples: Tensor) -> None:
    k = _sizes_arg(kernel_size, "kernel_size", "fractional_max_pool2d", 2)
    o = _sizes_arg(output_size, "output_size", "fractional_max_pool2d", 2)
    _fractional_meta(op, self, k, o, "fractional_max_pool2d", strict=False)


@native
def fractional_max_pool2d_out_cpu(op, self: Tensor, kernel_size, output_size,
                                  random_samples: Tensor, output: Tensor,
                                  indices: Tensor) -> None:
    _fractional_compute(self, random_samples, tuple(int(v) for v in kernel_size), output,
                        indices, "fractional_max_pool2d_out_frame")


@native
def meta_fractional_max_pool3d(op, self: Tensor, kernel_size, output_size,
                               random_samples: Tensor) -> dict:
    k = _sizes_arg(kernel_size, "kernel_size", "fractional_max_pool3d", 3)
    o = _sizes_arg(output_size, "output_size", "fractional_max_pool3d", 3)
    _fractional_meta(op, self, k, o, "fractional_max_pool3d_out", strict=True)
    batched = self.dim() == 5
    return {
        "poolSizeT": k[0], "poolSizeH": k[1], "poolSizeW": k[2],
        "outputT": o[0], "outputH": o[1], "outputW": o[2],
        "numBatch": self._sizes[0] if batched else 1,
        "numPlanes": self._sizes[1 if batched else 0],
        "inputT": self._sizes[-3], "inputH": self._sizes[-2], "inputW": self._sizes[-1],
    }


@native
def fractional_max_pool3d_out_cpu(op, self: Tensor, poolSizeT: int, poolSizeH: int,  # noqa: N803
                                  poolSizeW: int, outputT: int, outputH: int,  # noqa: N803
                                  outputW: int, random_samples: Tensor, numBatch: int,  # noqa: N803
                                  numPlanes: int, inputT: int, inputH: int,  # noqa: N803
                                  inputW: int, output: Tensor, indices: Tensor) -> None:  # noqa: N803
    _fractional_compute(self, random_samples, (poolSizeT, poolSizeH, poolSizeW), output,
                        indices, "fractional_max_pool3d_out_frame")


# --- the backward: each output's gradient added at its index ----------------------------------


def _check_grad_sizes(grad_output: Tensor, self: Tensor, output_size) -> None:
    """ATen's fractional_max_pool3d_backward checks: time, height, width in that order."""
    first = self.dim() - 3
    for a, word in enumerate(("time", "height", "width")):
        size = grad_output.size(first + a)  # ATen reads the size: its IndexError
        if size != int(output_size[a]):
            raise RuntimeError(
                f"fractional_max_pool3d_backward_out(): gradOutput {word} unexpected")


def _fractional_grad(grad_output: Tensor, self: Tensor, indices: Tensor, nd: int,
                     frame: str) -> np.ndarray:
    """The CPU kernel's dtype checks, then each gradient added at its index."""
    if self._dtype not in _FLOATING:
        raise unsupported_dtype(frame, self._dtype)
    for t, want in ((grad_output, self._dtype), (indices, dt.int64)):
        if t._dtype is not want:
            raise RuntimeError(
                f"expected scalar type {want.scalar_name} but found {t._dtype.scalar_name}")
    plane = int(np.prod(self._sizes[-nd:]))
    g = _planes(grad_output._numpy().astype(_acc(self._dtype), copy=False), nd)
    return _scatter_planes(g, _planes(indices._numpy(), nd), plane, False)


@native
def meta_fractional_max_pool2d_backward(op, grad_output: Tensor, self: Tensor, kernel_size,
                                        output_size, indices: Tensor) -> None:
    expected = tuple(self._sizes[:-2]) + tuple(int(v) for v in output_size)
    for name, t in (("gradOutput", grad_output), ("indices", indices)):
        if tuple(t._sizes) != expected:
            raise RuntimeError(f"fractional_max_pool2d_backward(): {name} sizes unexpected")
    op.set_output(0, tuple(self._sizes), self._dtype, self._device)


@native
def fractional_max_pool2d_backward_cpu(op, grad_output: Tensor, self: Tensor, kernel_size,
                                       output_size, indices: Tensor, grad_input: Tensor) -> None:
    grad = _fractional_grad(grad_output, self, indices, 2,
                            "fractional_max_pool2d_backward_out_frame")
    if grad_input.numel():
        _store(grad_input, grad)


def _fractional3d_backward(grad_output: Tensor, self: Tensor, output_size,
                           indices: Tensor) -> Tensor:
    from pyaten.core.broadcast import new_row_major

    _check_grad_sizes(grad_output, self, output_size)
    result = new_row_major(tuple(self._sizes), self._dtype, self._device)
    grad = _fractional_grad(grad_output, self, indices, 3,
                            "fractional_max_pool3d_backward_out_frame")
    if result.numel():
        _store(result, grad)
    return result


@native
def fractional_max_pool3d_backward_cpu(grad_output: Tensor, self: Tensor, kernel_size,
                                       output_size, indices: Tensor) -> Tensor:
    return _fractional3d_backward(grad_output, self, output_size, indices)


@native
def fractional_max_pool3d_backward_out_cpu(grad_output: Tensor, self: Tensor, kernel_size,
                                           output_size, indices: Tensor,
                                           grad_input: Tensor) -> Tensor:
    from pyaten.native.kernels.shape import aten_ops
    from pyaten.native.structured import resize_output

    result = _fractional3d_backward(grad_output, self, output_size, indices)
    resize_output(grad_input, tuple(result._sizes), "fractional_max_pool3d_backward")
    aten_ops().copy_.default(grad_input, result, False)
    return grad_input

