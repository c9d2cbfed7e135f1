"""Pooling: `max_pool2d_with_indices` and `avg_pool2d` (structured, with their backward
helpers), `_adaptive_avg_pool2d` (+ backward), and the composites PyTorch writes in C++ over
them (`max_pool1d/2d`, `max_pool1d_with_indices`, `avg_pool1d`, `adaptive_avg_pool1d/2d`).

Note: a pooling window as a loop over kernel offsets. The input is padded once (with -inf,
or the lowest integer, for max; with 0 for average; on the right also as far as ceil_mode's
last window reaches) and each kernel offset is one strided view of the padded input with the
output's shape: max pooling keeps a running maximum and the offset that gave it (a later
value wins when it is greater or NaN, as ATen's loop), average pooling adds the views up and
divides by PyTorch's divisor. The loop runs over prod(kernel_size) offsets, never over
pixels or channels. The index of a maximum is its flat position in the input plane (h * W +
w); the backward scatters with one `np.bincount`. Adaptive average pooling is separable: one
(H, OH) and one (W, OW) averaging matrix, two BLAS products forward and backward.

A channels-last input gives channels-last outputs, as PyTorch's CPU kernels do.
"""

from __future__ import annotations

import functools

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor
from pyaten.core.views import is_channels_last_strides
from pyaten.native.family import unsupported_dtype
from pyaten.native.kernels import vector_loops
from pyaten.native.kernels.copy import assign
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native

_REDUCED = (dt.float16, dt.bfloat16)


def _acc(dtype: dt.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype in _REDUCED else dtype.numpy


def _shape(sizes) -> str:
    return "[" + ", ".join(str(s) for s in sizes) + "]"


def _channels_last(t: Tensor) -> bool:
    if t.dim() != 4 or t.is_contiguous():
        return False
    return is_channels_last_strides(tuple(t._sizes), tuple(t._strides), "channels_last")


def _strides(sizes: tuple, last: bool) -> tuple | None:
    """Channels-last strides for a 4-d `sizes` when `last`, else None (row-major)."""
    if not last or len(sizes) != 4:
        return None
    n, c, h, w = (max(int(s), 1) for s in sizes)
    return (h * w * c, 1, w * c, c)


def _store(out: Tensor, value: np.ndarray) -> None:
    if out.numel():
        assign(out._numpy(), value.reshape(tuple(out._sizes)))


def _is_meta(*tensors: Tensor) -> bool:
    return any(t._device.type == "meta" for t in tensors)


# --- shapes and checks (ATen's Pool.h) -------------------------------------------------------


def _pair(name: str, values, op: str, allow_empty: bool = False, text: str = "") -> tuple:
    values = tuple(int(v) for v in values)
    if len(values) == 1:
        return values * 2
    if len(values) == 2 or (allow_empty and not values):
        return values
    raise RuntimeError(f"{op}: {name} {text}")


def pool_out_size(size: int, k: int, pad: int, stride: int, dilation: int, ceil: bool) -> int:
    """ATen's pooling_output_shape (with its checks)."""
    if stride == 0:
        raise RuntimeError("stride should not be zero")
    if pad < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {pad}")
    if pad > ((k - 1) * dilation + 1) // 2:
        raise RuntimeError(
            f"pad should be at most half of effective kernel size, but got pad={pad}, "
            f"kernel_size={k} and dilation={dilation}"
        )
    num = size + 2 * pad - dilation * (k - 1) - 1 + (stride - 1 if ceil else 0)
    out = num // stride + 1
    if ceil and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _shape_check(input: Tensor, k, s, p, d, out: tuple) -> None:
    """ATen's pool2d_shape_check."""
    if k[0] <= 0 or k[1] <= 0:
        raise RuntimeError(
            f"kernel size should be greater than zero, but got kH: {k[0]} kW: {k[1]}")
    if s[0] <= 0 or s[1] <= 0:
        raise RuntimeError(
            f"stride should be greater than zero, but got dH: {s[0]} dW: {s[1]}")
    if d[0] <= 0 or d[1] <= 0:
        raise RuntimeError(
            f"dilation should be greater than zero, but got dilationH: {d[0]} dilationW: {d[1]}")
    sizes = tuple(input._sizes)
    ndim = len(sizes)
    valid = sizes[-3 + 1] != 0 and sizes[-1] != 0 and (ndim == 3 or sizes[1] != 0)
    if not ((ndim == 3 and sizes[0] != 0 and valid) or (ndim == 4 and valid)):
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
            f"but got:{_shape(sizes)}"
        )
    if k[1] // 2 < p[1] or k[0] // 2 < p[0]:
        raise RuntimeError(
            "pad should be smaller than or equal to half of kernel size, but got "
            f"padW = {p[1]}, padH = {p[0]}, kW = {k[1]}, kH = {k[0]}"
        )
    if out[0] < 1 or out[1] < 1:
        raise RuntimeError(
            f"Given input size: ({sizes[-3]}x{sizes[-2]}x{sizes[-1]}). Calculated output size: "
            f"({sizes[-3]}x{out[0]}x{out[1]}). Output size is too small"
        )


def _max_args(kernel_size, stride, padding, dilation) -> tuple:
    op = "max_pool2d"
    k = _pair("kernel_size", kernel_size, op, text="must either be a single int, or a tuple "
              "of two ints")
    if len(tuple(stride)) not in (0, 1, 2):
        raise RuntimeError(
            "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints")
    s = _pair("stride", stride, op, True) or k
    p = _pair("padding", padding, op, text="must either be a single int, or a tuple of two ints")
    d = _pair("dilation", dilation, op, text="must be either a single int, or a tuple of two "
              "ints")
    return k, s, p, d


def _out_sizes(input: Tensor, k, s, p, d, ceil: bool) -> tuple:
    h, w = input._sizes[-2], input._sizes[-1]
    return (pool_out_size(h, k[0], p[0], s[0], d[0], ceil),
            pool_out_size(w, k[1], p[1], s[1], d[1], ceil))


# --- the array computations ------------------------------------------------------------------


def _padded(x: np.ndarray, p, extent, fill) -> np.ndarray:
    """x (B, *S) padded by p on the left and up to `extent` in all (per spatial dim)."""
    nd = len(p)
    size = x.shape[-nd:]
    full = tuple(max(e, n + q) for e, n, q in zip(extent, size, p))
    if not any(p) and full == size:
        return x
    out = np.full(x.shape[:-nd] + full, fill, x.dtype)
    out[(Ellipsis,) + tuple(slice(q, q + n) for q, n in zip(p, size))] = x
    return out


def _offset_view(xp: np.ndarray, taps, out, s) -> np.ndarray:
    return xp[(Ellipsis,) + tuple(slice(t, t + st * (o - 1) + 1, st)
                                  for t, st, o in zip(taps, s, out))]


def _lowest(dtype: np.dtype):
    if dtype.kind == "f":
        return -np.inf
    return np.iinfo(dtype).min


def _grid(values: list) -> list:
    """Per-dim 1-d arrays broadcast against each other (an open mesh)."""
    nd = len(values)
    return [np.asarray(v).reshape((1,) * a + (-1,) + (1,) * (nd - a - 1))
            for a, v in enumerate(values)]


def max_pool_arrays(x: np.ndarray, k, s, p, d, out) -> tuple[np.ndarray, np.ndarray]:
    """(values, flat indices) of a max pooling of x (B, *S) over its last len(k) dims.

    The winning tap of every window is kept as its number (row-major in the kernel) in the
    smallest integer type and updated arithmetically (`which += take * (n - which)`), which
    measured 3-6x faster than masked copies; the flat input index comes from it at the end.
    With short output rows (a CNN's 8x8 or 4x4 planes) the work arrays are laid out batch
    last, so that every NumPy pass runs long inner loops over the planes instead of one
    short loop per output row: 3x faster on (2048, 4, 4).
    """
    nd = len(k)
    size = x.shape[-nd:]
    lead = x.shape[:-nd]
    extent = [(o - 1) * st + (kk - 1) * dd + 1 for o, st, kk, dd in zip(out, s, k, d)]
    low = _lowest(x.dtype)
    xp = _padded(x, p, extent, low)
    batch_last = bool(lead) and out[-1] < 32 and int(np.prod(lead)) >= 32
    if batch_last:  # every array (*out, *lead): the planes innermost
        xp = xp.transpose(tuple(range(len(lead), xp.ndim)) + tuple(range(len(lead))))
        shape = tuple(out) + lead
        trailing = (1,) * len(lead)
    else:
        shape = lead + tuple(out)
        trailing = ()
    best = np.full(shape, low, x.dtype)
    first, base, offsets = _window_plan(tuple(k), tuple(s), tuple(p), tuple(d), tuple(out),
                                        tuple(size))
    kind = first.dtype.type
    which = np.empty(shape, kind)
    which[...] = first.reshape(first.shape + trailing)
    nan = x.dtype.kind == "f" and bool(np.isnan(x).any())
    take = np.empty(shape, bool)
    for n, taps in enumerate(np.ndindex(*k)):
        v = _tap_view(xp, [t * dd for t, dd in zip(taps, d)], out, s, batch_last)
        np.greater(v, best, out=take)
        if nan:
            take |= np.isnan(v)
            np.copyto(best, v, where=take)
        else:
            np.maximum(best, v, out=best)
        which += take.view(np.uint8).astype(kind, copy=False) * (kind(n) - which)
    index = base.reshape(base.shape + trailing) + np.take(offsets, which)
    if batch_last:  # back to (*lead, *out), row-major
        back = tuple(range(nd, nd + len(lead))) + tuple(range(nd))
        return (np.ascontiguousarray(best.transpose(back)),
                np.ascontiguousarray(index.transpose(back)))
    return best, index


@functools.lru_cache(maxsize=256)
def _window_plan(k: tuple, s: tuple, p: tuple, d: tuple, out: tuple,
                 size: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For windows of one configuration (each array read-only, shaped `out` but `offsets`):
    the number of every window's first in-bounds tap (ATen's index when nothing beats
    -inf), in the smallest integer type that holds the taps; the flat plane index of every
    window's start; the flat offset of every tap from the start."""
    nd = len(k)
    plane = [int(np.prod(size[a + 1:])) for a in range(nd)]  # row-major strides of a plane
    start = [np.arange(out[a]) * s[a] - p[a] for a in range(nd)]
    skip = _grid([np.where(st < 0, -(st // d[a]), 0) for a, st in enumerate(start)])
    kind = np.uint8 if int(np.prod(k)) <= 255 else np.int32
    first = np.ravel_multi_index(tuple(np.broadcast_arrays(*skip)), tuple(k)).astype(kind)
    offsets = sum(g * dd * pl for g, dd, pl in zip(_grid([np.arange(kk) for kk in k]), d, plane))
    base = np.asarray(sum(g * pl for g, pl in zip(_grid(start), plane)), np.int64)
    base = np.ascontiguousarray(np.broadcast_to(base, tuple(out)))
    offsets = np.ravel(offsets).astype(np.int64)
    for a in (first, base, offsets):
        a.flags.writeable = False
    return first, base, offsets


def _tap_view(xp: np.ndarray, taps, out, s, batch_last: bool) -> np.ndarray:
    """One kernel tap's values for every window: the spatial dims last, or first when
    `batch_last`."""
    if not batch_last:
        return _offset_view(xp, taps, out, s)
    return xp[tuple(slice(t, t + st * (o - 1) + 1, st) for t, st, o in zip(taps, s, out))]


def max_pool2d_arrays(x: np.ndarray, k, s, p, d, out) -> tuple[np.ndarray, np.ndarray]:
    return max_pool_arrays(x, k, s, p, d, out)


def avg_pool_divisor(size, k, s, p, out, count_include_pad: bool,
                     divisor_override) -> np.ndarray | int:
    if divisor_override is not None:
        return int(divisor_override)
    spans = []
    for a in range(len(k)):
        start = np.arange(out[a]) * s[a] - p[a]
        end = np.minimum(start + k[a], size[a] + p[a])
        if count_include_pad:
            spans.append(end - start)
        else:
            spans.append(np.minimum(end, size[a]) - np.maximum(start, 0))
    return np.prod(np.broadcast_arrays(*_grid(spans)), axis=0)


def avg_pool_array(x: np.ndarray, k, s, p, out, count_include_pad, divisor_override):
    nd = len(k)
    size = x.shape[-nd:]
    extent = [(o - 1) * st + kk for o, st, kk in zip(out, s, k)]
    xp = _padded(x, p, extent, 0)
    total = np.zeros(x.shape[:-nd] + tuple(out), x.dtype)
    for taps in np.ndindex(*k):
        total += _offset_view(xp, taps, out, s)
    div = avg_pool_divisor(size, k, s, p, out, count_include_pad, divisor_override)
    if x.dtype.kind in "iu":
        return np.trunc(total / div).astype(x.dtype)  # C++ integer division
    return total / np.asarray(div, x.dtype)


def avg_pool_grad(g: np.ndarray, size, k, s, p, count_include_pad, divisor_override):
    nd = len(k)
    out = g.shape[-nd:]
    div = avg_pool_divisor(size, k, s, p, out, count_include_pad, divisor_override)
    share = g / np.asarray(div, g.dtype)
    extent = tuple(max((o - 1) * st + kk, n + q) for o, st, kk, n, q in zip(out, s, k, size, p))
    gx = np.zeros(g.shape[:-nd] + extent, g.dtype)
    for taps in np.ndindex(*k):
        _offset_view(gx, taps, out, s)[...] += share
    return gx[(Ellipsis,) + tuple(slice(q, q + n) for q, n in zip(p, size))]


avg_pool2d_array = avg_pool_array
avg_pool2d_grad = avg_pool_grad


def _scatter_planes(g: np.ndarray, idx: np.ndarray, plane: int, unique: bool) -> np.ndarray:
    """Sums g (B, *) into B planes of `plane` elements at the flat positions idx (B, *);
    `unique`: no two positions of a plane coincide (windows that do not overlap)."""
    b = g.shape[0]
    where = (idx.reshape(b, -1) + (np.arange(b) * plane)[:, None]).ravel()
    if unique:
        out = np.zeros(b * plane, g.dtype)
        out[where] = g.ravel()
        return out.reshape(b, plane)
    if g.dtype.kind == "c":
        re = np.bincount(where, g.real.ravel(), b * plane)
        im = np.bincount(where, g.imag.ravel(), b * plane)
        return (re + 1j * im).astype(g.dtype).reshape(b, plane)
    return np.bincount(where, g.ravel(), b * plane).astype(g.dtype).reshape(b, plane)


def adaptive_matrix(size: int, out: int, dtype) -> np.ndarray:
    """(size, out): column i averages input positions [floor(i*size/out), ceil((i+1)*size/out))."""
    i = np.arange(out)
    start = (i * size) // out
    end = -((-(i + 1) * size) // out)
    pos = np.arange(size)[:, None]
    inside = (pos >= start[None, :]) & (pos < end[None, :])
    return (inside / (end - start)[None, :]).astype(dtype)


# --- max_pool2d_with_indices ------------------------------------------------------------------


def _batch3(x: np.ndarray) -> np.ndarray:
    return x.reshape((-1,) + x.shape[-2:])


@native
def meta_max_pool2d_with_indices(op, self: Tensor, kernel_size, stride, padding, dilation,
                                 ceil_mode: bool) -> None:
    k, s, p, d = _max_args(kernel_size, stride, padding, dilation)
    if self.dim() not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    out = _out_sizes(self, k, s, p, d, ceil_mode)
    _shape_check(self, k, s, p, d, out)
    if self._dtype is dt.bool or self._dtype.is_complex:
        raise unsupported_dtype("max_pool2d", self._dtype)
    sizes = tuple(self._sizes[:-2]) + out
    strides = _strides(sizes, _channels_last(self))
    op.set_output(0, sizes, self._dtype, self._device, strides)
    op.set_output(1, sizes, dt.int64, self._device, strides)


@native
def max_pool2d_with_indices_out_cpu(op, self: Tensor, kernel_size, stride, padding, dilation,
                                    ceil_mode: bool, out: Tensor, indices: Tensor) -> None:
    if out.numel() == 0:
        return
    k, s, p, d = _max_args(kernel_size, stride, padding, dilation)
    acc = _acc(self._dtype)
    x = self._numpy().astype(acc, copy=False)
    if (k == (2, 2) and s == (2, 2) and p == (0, 0) and d == (1, 1) and out.is_contiguous()
            and indices.is_contiguous()):  # the common 2x2 pooling: one compiled pass
        planes = _batch3(x)
        shape = (planes.shape[0],) + tuple(out._sizes[-2:])
        if vector_loops.max_pool_2x2(np.ascontiguousarray(planes), out._numpy().reshape(shape),
                                     indices._numpy().reshape(shape)):
            return
    # (a compiled loop over windows of any size measured 1.7x slower than these NumPy passes)
    values, idx = max_pool2d_arrays(_batch3(x), k, s, p, d, tuple(out._sizes[-2:]))
    _store(out, values)
    _store(indices, idx)


@native
def meta_max_pool2d_with_indices_backward(op, grad_output: Tensor, self: Tensor, kernel_size,
                                          stride, padding, dilation, ceil_mode: bool,
                                          indices: Tensor) -> None:
    k, s, p, d = _max_args(kernel_size, stride, padding, dilation)
    if self.dim() not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    out = _out_sizes(self, k, s, p, d, ceil_mode)
    _shape_check(self, k, s, p, d, out)
    expected = tuple(self._sizes[:-2]) + out
    for t in (grad_output, indices):
        for dim, want in enumerate(expected):
            if t.dim() != len(expected) or t._sizes[dim] != want:
                raise RuntimeError(
                    f"Expected a tensor of dimension {len(expected)} and tensor.size[{dim}] == "
                    f"{want} but got: dimension {t.dim()} and tensor.size[{dim}] = "
                    f"{t._sizes[dim] if dim < t.dim() else 0}"
                )
    if grad_output._dtype is not self._dtype:
        raise RuntimeError(
            f"expected dtype {self._dtype.cpp_name} for `gradOutput` but got dtype "
            f"{grad_output._dtype.cpp_name}"
        )
    op.set_output(0, tuple(self._sizes), self._dtype, self._device,
                  _strides(tuple(self._sizes), _channels_last(self)))


@native
def max_pool2d_with_indices_backward_out_cpu(op, grad_output: Tensor, self: Tensor,
                                             kernel_size, stride, padding, dilation,
                                             ceil_mode: bool, indices: Tensor,
                                             grad_input: Tensor) -> None:
    if grad_input.numel() == 0:
        return
    h, w = self._sizes[-2:]
    k, s, p, d = _max_args(kernel_size, stride, padding, dilation)
    g = _batch3(grad_output._numpy().astype(_acc(self._dtype), copy=False))
    idx = _batch3(indices._numpy())
    if grad_input.is_contiguous() and vector_loops.max_pool2d_backward(
            g.reshape(g.shape[0], -1), idx.reshape(idx.shape[0], -1),
            grad_input._numpy().reshape(g.shape[0], h * w)):
        return
    unique = all(st >= (kk - 1) * dd + 1 for kk, st, dd in zip(k, s, d))
    _store(grad_input, _scatter_planes(g, idx, h * w, unique))


# --- avg_pool2d --------------------------------------------------------------------------------


def _avg_args(self: Tensor, kernel_size, stride, padding) -> tuple:
    k = _pair("kernel_size", kernel_size, "avg_pool2d",
              text="must either be a single int, or a tuple of two ints")
    if len(tuple(stride)) not in (0, 1, 2):
        raise RuntimeError(
            "avg_pool2d: stride must either be omitted, a single int, or a tuple of two ints")
    s = _pair("stride", stride, "avg_pool2d", True) or k
    p = _pair("padding", padding, "avg_pool2d",
              text="must either be a single int, or a tuple of two ints")
    return k, s, p


@native
def meta_avg_pool2d(op, self: Tensor, kernel_size, stride, padding, ceil_mode: bool,
                    count_include_pad: bool, divisor_override) -> dict:
    k, s, p = _avg_args(self, kernel_size, stride, padding)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if self.dim() not in (3, 4):
        self.size(-3)  # ATen reads nInputPlane first: IndexError for fewer dims
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
            f"but got:{_shape(self._sizes)}"
        )
    out = _out_sizes(self, k, s, p, (1, 1), ceil_mode)
    _shape_check(self, k, s, p, (1, 1), out)
    if self._dtype is dt.bool or self._dtype.is_complex:
        raise unsupported_dtype("avg_pool2d_out_frame", self._dtype)
    sizes = tuple(self._sizes[:-2]) + out
    op.set_output(0, sizes, self._dtype, self._device, _strides(sizes, _channels_last(self)))
    return {"kH": k[0], "kW": k[1], "dH": s[0], "dW": s[1], "padH": p[0], "padW": p[1]}


@native
def avg_pool2d_out_cpu(op, self: Tensor, kH: int, kW: int, dH: int, dW: int, padH: int,
                       padW: int, ceil_mode: bool, count_include_pad: bool, divisor_override,
                       out: Tensor) -> None:
    if out.numel() == 0:
        return
    x = _batch3(self._numpy().astype(_acc(self._dtype), copy=False))
    value = avg_pool2d_array(x, (kH, kW), (dH, dW), (padH, padW), tuple(out._sizes[-2:]),
                             count_include_pad, divisor_override)
    _store(out, value)


@native
def meta_avg_pool2d_backward(op, grad_output: Tensor, self: Tensor, kernel_size, stride,
                             padding, ceil_mode: bool, count_include_pad: bool,
                             divisor_override) -> None:
    k, s, p = _avg_args(self, kernel_size, stride, padding)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    out = _out_sizes(self, k, s, p, (1, 1), ceil_mode)
    expected = tuple(self._sizes[:-2]) + out
    for dim, want in enumerate(expected):
        if grad_output.dim() != len(expected) or grad_output._sizes[dim] != want:
            raise RuntimeError(
                f"Expected a tensor of dimension {len(expected)} and tensor.size[{dim}] == "
                f"{want} but got: dimension {grad_output.dim()} and tensor.size[{dim}] = "
                f"{grad_output._sizes[dim] if dim < grad_output.dim() else 0}"
            )
    op.set_output(0, tuple(self._sizes), self._dtype, self._device,
                  _strides(tuple(self._sizes), _channels_last(self)))


@native
def avg_pool2d_backward_out_cpu(op, grad_output: Tensor, self: Tensor, kernel_size, stride,
                                padding, ceil_mode: bool, count_include_pad: bool,
                                divisor_override, grad_input: Tensor) -> None:
    if grad_input.numel() == 0:
        return
    k, s, p = _avg_args(self, kernel_size, stride, padding)
    g = _batch3(grad_output._numpy().astype(_acc(self._dtype), copy=False))
    value = avg_pool2d_grad(g, tuple(self._sizes[-2:]), k, s, p, count_include_pad,
                            divisor_override)
    _store(grad_input, value)


# --- adaptive average pooling -----------------------------------------------------------------


def _adaptive_check(self: Tensor, output_size, name: str) -> tuple:
    out = tuple(int(v) for v in output_size)
    if len(out) != 2:
        raise RuntimeError(f"{name}: output_size must be 2")
    if self.dim() not in (3, 4):
        raise RuntimeError(f"{name}(): Expected 3D or 4D tensor, but got {_shape(self._sizes)}")
    for dim in range(1, self.dim()):
        if self._sizes[dim] == 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {_shape(self._sizes)} with dimension {dim} being empty"
            )
    if any(o < 0 for o in out):
        raise RuntimeError(
            f"{name}: elements of output_size must be greater than or equal to 0 but received "
            "{" + ", ".join(str(o) for o in out) + "}"
        )
    if self._dtype is dt.bool or self._dtype.is_complex or not self._dtype.is_floating_point:
        raise unsupported_dtype(name, self._dtype)
    return out


def _new_output(self: Tensor, sizes: tuple) -> Tensor:
    from pyaten.core.broadcast import new_row_major
    from pyaten.core.views import empty_tensor

    strides = _strides(sizes, _channels_last(self))
    if strides is None:
        return new_row_major(sizes, self._dtype, self._device)
    return empty_tensor(sizes, self._dtype, self._device, strides)


@native
def adaptive_avg_pool2d_cpu(self: Tensor, output_size) -> Tensor:
    out = _adaptive_check(self, output_size, "adaptive_avg_pool2d")
    result = _new_output(self, tuple(self._sizes[:-2]) + out)
    if _is_meta(self) or result.numel() == 0:
        return result
    acc = _acc(self._dtype)
    x = self._numpy().astype(acc, copy=False)
    h, w = x.shape[-2:]
    ah, aw = adaptive_matrix(h, out[0], acc), adaptive_matrix(w, out[1], acc)
    _store(result, np.matmul(ah.T, np.matmul(x, aw)))
    return result


@native
def adaptive_avg_pool2d_backward_cpu(grad_output: Tensor, self: Tensor) -> Tensor:
    if grad_output.dim() not in (3, 4) or self.dim() != grad_output.dim():
        raise RuntimeError(
            "adaptive_avg_pool2d_backward(): Expected 3D or 4D grad_output, but got "
            f"{_shape(grad_output._sizes)}"
        )
    if grad_output._dtype is not self._dtype:
        raise RuntimeError(
            f"expected dtype {self._dtype.cpp_name} for `grad_output` but got dtype "
            f"{grad_output._dtype.cpp_name}"
        )
    result = _new_output(self, tuple(self._sizes))
    if _is_meta(self, grad_output) or result.numel() == 0:
        return result
    acc = _acc(self._dtype)
    g = grad_output._numpy().astype(acc, copy=False)
    h, w = self._sizes[-2:]
    ah = adaptive_matrix(h, g.shape[-2], acc)
    aw = adaptive_matrix(w, g.shape[-1], acc)
    _store(result, np.matmul(ah, np.matmul(g, aw.T)))
    return result


def _adaptive_avg_sizes(self: Tensor, output_size, nd: int) -> tuple:
    """adaptive_avg_pool{nd}d's checks (ATen's messages); the output size as a tuple."""
    out = tuple(int(v) for v in output_size)
    if len(out) != nd:
        raise RuntimeError(f"adaptive_avg_pool{nd}d: output_size must be {nd}")
    for dim in range(1, self.dim()):
        if self._sizes[dim] == 0:
            raise RuntimeError(
                f"adaptive_avg_pool{nd}d(): Expected input to have non-zero size for non-batch "
                f"dimensions, but input has sizes {_shape(self._sizes)} with dimension {dim} "
                "being empty"
            )
    return out


@native
def adaptive_avg_pool2d_symint(self: Tensor, output_size) -> Tensor:
    a = _aten()
    out = _adaptive_avg_sizes(self, output_size, 2)
    if out == (1, 1) and self.dim() in (3, 4) and self._dtype.is_floating_point:
        result = a.mean.dim(self, [-1, -2], True, None)
        if _channels_last(self):
            # ATen: mean over a channels-last input, then the result laid out channels-last
            n, c = self._sizes[0], self._sizes[1]
            result = a.as_strided.default(result, [n, c, 1, 1], [c, 1, c, c], None)
        return result
    return a._adaptive_avg_pool2d.default(self, list(out))


# --- composites over the 2-d operators ---------------------------------------------------------


def _check_1d(self: Tensor, name: str, what: str = "tensor") -> None:
    if self.dim() not in (2, 3):
        raise RuntimeError(
            f"{name}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
            f"input, but got:{_shape(self._sizes)}"
        )


@native
def max_pool1d_with_indices(self: Tensor, kernel_size, stride, padding, dilation,
                            ceil_mode: bool) -> tuple:
    _check_1d(self, "max_pool1d")
    a = _aten()
    stride = list(stride) or list(kernel_size)
    values, indices = a.max_pool2d_with_indices.default(
        a.unsqueeze.default(self, -2), [1] + list(kernel_size), [1] + stride,
        [0] + list(padding), [1] + list(dilation), ceil_mode)
    return a.squeeze.dim(values, -2), a.squeeze.dim(indices, -2)


@native
def max_pool1d(self: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool) -> Tensor:
    return max_pool1d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


@native
def max_pool2d(self: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool) -> Tensor:
    if self.is_quantized:  # as ATen's max_pool2d: quantized tensors have their own kernel
        return _aten().quantized_max_pool2d.default(self, kernel_size, stride, padding,
                                                    dilation, ceil_mode)
    return _aten().max_pool2d_with_indices.default(self, kernel_size, stride, padding,
                                                   dilation, ceil_mode)[0]


@native
def avg_pool1d(self: Tensor, kernel_size, stride, padding, ceil_mode: bool,
               count_include_pad: bool) -> Tensor:
    if self.dim() not in (2, 3):
        raise RuntimeError(
            f"Expected 2 to 3 dimensions, but got {self.dim()}-dimensional tensor for argument "
            "#1 'self' (while checking arguments for avg_pool1d)"
        )
    a = _aten()
    for name, v in (("kernel_size", kernel_size), ("padding", padding)):
        if len(list(v)) != 1:
            raise RuntimeError(f"avg_pool1d() argument '{name}' should contain one int "
                               f"(got {len(list(v))})")
    stride = list(stride) or list(kernel_size)
    y = a.avg_pool2d.default(a.unsqueeze.default(self, -2), [1] + list(kernel_size),
                             [1] + stride, [0] + list(padding), ceil_mode, count_include_pad,
                             None)
    return a.squeeze.dim(y, -2)


@native
def adaptive_avg_pool1d(self: Tensor, output_size) -> Tensor:
    if self.dim() not in (2, 3):
        raise RuntimeError(
            f"Expected 2 to 3 dimensions, but got {self.dim()}-dimensional tensor for argument "
            "#1 'self' (while checking arguments for adaptive_avg_pool1d)"
        )
    a = _aten()
    if len(list(output_size)) != 1:
        raise RuntimeError("adaptive_avg_pool1d: output_size must be 1")
    y = a.adaptive_avg_pool2d.default(a.unsqueeze.default(self, -2), [1] + list(output_size))
    return a.squeeze.dim(y, -2)


# --- adaptive max pooling ----------------------------------------------------------------------


def _adaptive_bounds(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


def adaptive_max_pool_arrays(x: np.ndarray, out) -> tuple[np.ndarray, np.ndarray]:
    """(values, flat indices) of an adaptive max pooling of x (B, *S) over its last len(out)
    dims: a loop over the taps of the largest window, each tap one gather of every window's
    element at that offset (masked where a window is smaller). A later value wins when it is
    greater or NaN; a window's first element is its index until something beats -inf."""
    nd = len(out)
    size = x.shape[-nd:]
    plane = [int(np.prod(size[a + 1:])) for a in range(nd)]
    bounds = [_adaptive_bounds(n, o) for n, o in zip(size, out)]
    best = np.full(x.shape[:-nd] + tuple(out), _lowest(x.dtype), x.dtype)
    index = np.empty(best.shape, np.int64)
    index[...] = sum(g * pl for g, pl in zip(_grid([b[0] for b in bounds]), plane))
    floating = x.dtype.kind == "f"
    for taps in np.ndindex(*[int((end - start).max()) for start, end in bounds]):
        at = [start + t for (start, _), t in zip(bounds, taps)]
        inside = _grid([a < end for a, (_, end) in zip(at, bounds)])
        ok = np.logical_and.reduce(np.broadcast_arrays(*inside))
        pos = _grid([np.minimum(a, n - 1) for a, n in zip(at, size)])
        v = x[(Ellipsis,) + tuple(pos)]
        take = v > best
        if floating:
            take |= np.isnan(v)
        take &= ok
        np.copyto(best, v, where=take)
        np.copyto(index, sum(g * pl for g, pl in zip(pos, plane)), where=take)
    return best, index


def adaptive_max_pool2d_arrays(x: np.ndarray, out) -> tuple[np.ndarray, np.ndarray]:
    """(values, flat indices) of x (B, H, W)."""
    return adaptive_max_pool_arrays(x, out)


def adaptive_max_pool_sizes(self: Tensor, output_size, nd: int) -> tuple[int, ...]:
    """The output sizes of adaptive_max_pool{nd}d, after ATen's checks in ATen's order."""
    op = f"adaptive_max_pool{nd}d"
    out = tuple(int(v) for v in output_size)
    if self.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {_shape(self._sizes)}")
    for dim in range(1, self.dim()):
        if self._sizes[dim] == 0:
            raise RuntimeError(
                f"{op}(): Expected input to have non-zero size for non-batch "
                f"dimensions, but input has sizes {_shape(self._sizes)} with dimension {dim} "
                "being empty"
            )
    if len(out) != nd:
        raise RuntimeError(f"{op}(): internal error: output_size.size() must be {nd}")
    sizes = tuple(self._sizes[:-nd]) + out
    if any(s < 0 for s in sizes):
        bad = next(s for s in sizes if s < 0)
        raise RuntimeError(
            f"Trying to create tensor with negative dimension {bad}: {_shape(sizes)}")
    return sizes


@native
def meta_adaptive_max_pool2d(op, self: Tensor, output_size) -> None:
    sizes = adaptive_max_pool_sizes(self, output_size, 2)
    if not self._dtype.is_floating_point:
        raise unsupported_dtype("adaptive_max_pool2d", self._dtype)
    strides = _strides(sizes, _channels_last(self))
    op.set_output(0, sizes, self._dtype, self._device, strides)
    op.set_output(1, sizes, dt.int64, self._device, strides)


@native
def adaptive_max_pool2d_out_cpu(op, self: Tensor, output_size, out: Tensor,
                                indices: Tensor) -> None:
    if out.numel() == 0:
        return
    x = _batch3(self._numpy().astype(_acc(self._dtype), copy=False))
    values, idx = adaptive_max_pool2d_arrays(x, tuple(out._sizes[-2:]))
    _store(out, values)
    _store(indices, idx)


@native
def meta_adaptive_max_pool2d_backward(op, grad_output: Tensor, self: Tensor,
                                      indices: Tensor) -> None:
    if grad_output.dim() not in (3, 4):
        raise RuntimeError(
            "adaptive_max_pooling2d_backward(): Expected 3D or 4D grad_output, but got: "
            f"{_shape(grad_output._sizes)}"
        )
    if self._dtype is not grad_output._dtype:
        raise RuntimeError(
            f"expected dtype {self._dtype.cpp_name} for `gradInput` but got dtype "
            f"{grad_output._dtype.cpp_name}"
        )
    op.set_output(0, tuple(self._sizes), self._dtype, self._device,
                  _strides(tuple(self._sizes), _channels_last(self)))


@native
def adaptive_max_pool2d_backward_out_cpu(op, grad_output: Tensor, self: Tensor, indices: Tensor,
                                         grad_input: Tensor) -> None:
    if grad_input.numel() == 0:
        return
    h, w = self._sizes[-2:]
    g = _batch3(grad_output._numpy().astype(_acc(self._dtype), copy=False))
    _store(grad_input, _scatter_planes(g, _batch3(indices._numpy()), h * w, False))


@native
def adaptive_max_pool1d(self: Tensor, output_size) -> tuple:
    if self.dim() not in (2, 3):
        raise RuntimeError(
            f"Expected 2 to 3 dimensions, but got {self.dim()}-dimensional tensor for argument "
            "#1 'self' (while checking arguments for adaptive_max_pool1d)"
        )
    a = _aten()
    values, indices = a.adaptive_max_pool2d.default(a.unsqueeze.default(self, -2),
                                                    [1] + list(output_size))
    return a.squeeze.dim(values, -2), a.squeeze.dim(indices, -2)


# --- max unpooling ----------------------------------------------------------------------------


def _unpool(self: Tensor, indices: Tensor, output_size) -> Tensor:
    from pyaten.core.broadcast import new_row_major
    from pyaten.core.views import empty_tensor

    size = tuple(int(v) for v in output_size)
    if indices._dtype is not dt.int64:
        raise RuntimeError(
            f"elements in indices should be type int64 but got: {indices._dtype.scalar_name}")
    if len(size) != 2:
        raise RuntimeError(
            f"There should be exactly two elements (height, width) in output_size, but got "
            f"{len(size)} elements.")
    if self.dim() not in (3, 4):
        raise RuntimeError(
            "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with "
            f"{self.dim()} dimensions.")
    if tuple(self._sizes) != tuple(indices._sizes):
        raise RuntimeError(
            "Expected shape of indices to be same as that of the input tensor "
            f"({_shape(self._sizes)}) but got indices tensor with shape: "
            f"{_shape(indices._sizes)}")
    for dim in range(1, self.dim()):
        if self._sizes[dim] <= 0:
            raise RuntimeError(
                "max_unpooling2d_forward_out_cpu(): Expected input to have non-zero size for "
                f"non-batch dimensions, but got {_shape(self._sizes)} with dimension {dim} "
                "being empty.")
    if self._dtype is dt.bool or not (self._dtype.is_floating_point or self._dtype.is_complex):
        raise unsupported_dtype("max_unpool2d", self._dtype)
    sizes = tuple(self._sizes[:-2]) + size
    strides = _strides(sizes, _channels_last(self))
    result = (new_row_major(sizes, self._dtype, self._device) if strides is None
              else empty_tensor(sizes, self._dtype, self._device, strides))
    if _is_meta(self, indices) or result.numel() == 0:
        return result
    _store(result, unpool_planes(self, indices, size))
    return result


def unpool_planes(self: Tensor, indices: Tensor, size: tuple) -> np.ndarray:
    """Max unpooling's scatter: each plane of `self` into a zero plane of `size` at the flat
    positions `indices`; PyTorch's error for the first position outside the plane."""
    nd = len(size)
    plane = int(np.prod(size))
    x = self._numpy().astype(_acc(self._dtype), copy=False)
    x = x.reshape((-1, int(np.prod(x.shape[-nd:]))))
    idx = indices._numpy().reshape(x.shape)
    bad = (idx < 0) | (idx >= plane)
    if bad.any():
        raise RuntimeError(
            f"Found an invalid max index: {int(idx[bad][0])} (output volumes are of size "
            + "x".join(str(n) for n in size) + ")")
    flat = np.zeros((x.shape[0], plane), x.dtype)
    np.put_along_axis(flat, idx, x, 1)
    return flat


@native
def max_unpooling2d_forward_cpu(self: Tensor, indices: Tensor, output_size) -> Tensor:
    return _unpool(self, indices, output_size)


# --- 3-d pooling ------------------------------------------------------------------------------


def _triple(name: str, values, op: str, text: str, allow_empty: bool = False) -> tuple:
    values = tuple(int(v) for v in values)
    if len(values) == 1:
        return values * 3
    if len(values) == 3 or (allow_empty and not values):
        return values
    raise RuntimeError(f"{op}: {name} {text}")


def _pool3d_args(op: str, kernel_size, stride, padding, dilation=(1,)) -> tuple:
    k = _triple("kernel_size", kernel_size, op, "must either be a single int, or a tuple of "
                "three ints")
    s = _triple("stride", stride, op, "must either be omitted, a single int, or a tuple of "
                "three ints", True) or k
    p = _triple("padding", padding, op, "must either be a single int, or a tuple of three ints")
    d = _triple("dilation", dilation, op, "must be either a single int, or a tuple of three "
                "ints")
    return k, s, p, d


def _pool3d_check(self: Tensor, k, s, p, d, ceil: bool, template: str, avg: bool) -> tuple:
    """ATen's pooling_output_shape per dim, then pool3d_shape_check: the output sizes."""
    if self.dim() not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    sizes = tuple(self._sizes)
    out = tuple(pool_out_size(n, kk, q, st, dd, ceil)
                for n, kk, q, st, dd in zip(sizes[-3:], k, p, s, d))
    if min(k) <= 0:
        raise RuntimeError(
            f"kernel size should be greater than zero, but got kT: {k[0]} kH: {k[1]} kW: {k[2]}")
    if min(s) <= 0:
        raise RuntimeError(
            f"stride should be greater than zero, but got dT: {s[0]} dH: {s[1]} dW: {s[2]}")
    if min(d) <= 0:
        raise RuntimeError(
            "dilation should be greater than zero, but got dilationT: "
            f"{d[0]} dilationH: {d[1]} dilationW: {d[2]}")
    first = len(sizes) - 4  # the first non-batch dim
    for dim in range(first, len(sizes)):
        if sizes[dim] == 0:
            raise RuntimeError(
                f"{template}(): Expected input's non-batch dimensions to have positive length, "
                f"but input has a shape of {_shape(sizes)} and non-batch dimension "
                f"{dim - first} has length zero!")
    t, h, w = sizes[-3:]
    if avg and (t < k[0] or h < k[1] or w < k[2]):
        raise RuntimeError(
            f"input image (T: {t} H: {h} W: {w}) smaller than kernel size (kT: {k[0]} kH: "
            f"{k[1]} kW: {k[2]})")
    if k[0] // 2 < p[0] or k[2] // 2 < p[2] or k[1] // 2 < p[1]:
        raise RuntimeError(
            "pad should be smaller than or equal to half of kernel size, but got kT: "
            f"{k[0]} kW: {k[2]} kH: {k[1]} padT: {p[0]} padW: {p[2]} padH: {p[1]}")
    if min(out) < 1:
        raise RuntimeError(
            f"Given input size: ({sizes[-4]}x{t}x{h}x{w}). Calculated output size: "
            f"({sizes[-4]}x{out[0]}x{out[1]}x{out[2]}). Output size is too small")
    return out


def _channels_last_3d(t: Tensor) -> bool:
    if t.dim() != 5 or t.is_contiguous():
        return False
    return is_channels_last_strides(tuple(t._sizes), tuple(t._strides), "channels_last_3d")


def _new_5d(self: Tensor, sizes: tuple, dtype: dt.dtype, last: bool) -> Tensor:
    from pyaten.core.broadcast import new_row_major
    from pyaten.core.views import empty_tensor

    if not last or len(sizes) != 5:
        return new_row_major(sizes, dtype, self._device)
    n, c, t, h, w = (max(int(v), 1) for v in sizes)
    return empty_tensor(sizes, dtype, self._device, (c * t * h * w, 1, h * w * c, w * c, c))


def _batch4(x: np.ndarray) -> np.ndarray:
    return x.reshape((-1,) + x.shape[-3:])


@native
def max_pool3d_with_indices_cpu(self: Tensor, kernel_size, stride, padding, dilation,
                                ceil_mode: bool) -> tuple:
    k, s, p, d = _pool3d_args("max_pool3d", kernel_size, stride, padding, dilation)
    out = _pool3d_check(self, k, s, p, d, ceil_mode, "max_pool3d_with_indices_out_cpu_template",
                        False)
    if self._dtype is dt.bool or self._dtype.is_complex:
        raise unsupported_dtype("max_pool3d", self._dtype)
    sizes = tuple(self._sizes[:-3]) + out
    last = _channels_last_3d(self)
    values = _new_5d(self, sizes, self._dtype, last)
    indices = _new_5d(self, sizes, dt.int64, last)
    if _is_meta(self) or values.numel() == 0:
        return values, indices
    x = _batch4(self._numpy().astype(_acc(self._dtype), copy=False))
    v, i = max_pool_arrays(x, k, s, p, d, out)
    _store(values, v)
    _store(indices, i)
    return values, indices


@native
def max_pool3d_with_indices_backward_cpu(grad_output: Tensor, self: Tensor, kernel_size,
                                         stride, padding, dilation, ceil_mode: bool,
                                         indices: Tensor) -> Tensor:
    k, s, p, d = _pool3d_args("max_pool3d", kernel_size, stride, padding, dilation)
    out = _pool3d_check(self, k, s, p, d, ceil_mode,
                        "max_pool3d_with_indices_backward_out_cpu_template", False)
    expected = tuple(self._sizes[:-3]) + out
    if tuple(grad_output._sizes) != expected:
        raise RuntimeError(
            f"Expected grad_output of size {_shape(expected)}, but got "
            f"{_shape(grad_output._sizes)}")
    result = _new_5d(self, tuple(self._sizes), self._dtype, _channels_last_3d(self))
    if _is_meta(self, grad_output) or result.numel() == 0:
        return result
    plane = int(np.prod(self._sizes[-3:]))
    g = _batch4(grad_output._numpy().astype(_acc(self._dtype), copy=False))
    unique = all(st >= (kk - 1) * dd + 1 for kk, st, dd in zip(k, s, d))
    _store(result, _scatter_planes(g, _batch4(indices._numpy()), plane, unique))
    return result


@native
def max_pool3d(self: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool) -> Tensor:
    return _aten().max_pool3d_with_indices.default(self, kernel_size, stride, padding,
                                                   dilation, ceil_mode)[0]


@native
def meta_avg_pool3d(op, self: Tensor, kernel_size, stride, padding, ceil_mode: bool,
                    count_include_pad: bool, divisor_override) -> None:
    k, s, p, _ = _pool3d_args("avg_pool3d", kernel_size, stride, padding)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    out = _pool3d_check(self, k, s, p, (1, 1, 1), ceil_mode, "avg_pool3d_out_cpu_template",
                        True)
    if self._dtype is dt.bool or self._dtype.is_complex:
        raise unsupported_dtype("avg_pool3d_out_frame", self._dtype)
    op.set_output(0, tuple(self._sizes[:-3]) + out, self._dtype, self._device)


@native
def avg_pool3d_out_cpu(op, self: Tensor, kernel_size, stride, padding, ceil_mode: bool,
                       count_include_pad: bool, divisor_override, out: Tensor) -> None:
    if out.numel() == 0:
        return
    k, s, p, _ = _pool3d_args("avg_pool3d", kernel_size, stride, padding)
    x = _batch4(self._numpy().astype(_acc(self._dtype), copy=False))
    _store(out, avg_pool_array(x, k, s, p, tuple(out._sizes[-3:]), count_include_pad,
                               divisor_override))


@native
def meta_avg_pool3d_backward(op, grad_output: Tensor, self: Tensor, kernel_size, stride,
                             padding, ceil_mode: bool, count_include_pad: bool,
                             divisor_override) -> None:
    k, s, p, _ = _pool3d_args("avg_pool3d", kernel_size, stride, padding)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    out = _pool3d_check(self, k, s, p, (1, 1, 1), ceil_mode,
                        "avg_pool3d_backward_out_cpu_template", True)
    expected = tuple(self._sizes[:-3]) + out
    if tuple(grad_output._sizes) != expected:
        raise RuntimeError(
            f"Expected grad_output of size {_shape(expected)}, but got "
            f"{_shape(grad_output._sizes)}")
    op.set_output(0, tuple(self._sizes), self._dtype, self._device)


@native
def avg_pool3d_backward_out_cpu(op, grad_output: Tensor, self: Tensor, kernel_size, stride,
                                padding, ceil_mode: bool, count_include_pad: bool,
                                divisor_override, grad_input: Tensor) -> None:
    if grad_input.numel() == 0:
        return
    k, s, p, _ = _pool3d_args("avg_pool3d", kernel_size, stride, padding)
    g = _batch4(grad_output._numpy().astype(_acc(self._dtype), copy=False))
    _store(grad_input, avg_pool_grad(g, tuple(self._sizes[-3:]), k, s, p, count_include_pad,
                                     divisor_override))


def _adaptive_apply(x: np.ndarray, mats: list, transpose: bool) -> np.ndarray:
    """x (..., *S) times one averaging matrix per trailing dim (separable pooling)."""
    nd = len(mats)
    for a, m in enumerate(mats):
        axis = x.ndim - nd + a
        moved = np.moveaxis(x, axis, -1)
        x = np.moveaxis(np.matmul(moved, m.T if transpose else m), -1, axis)
    return x


@native
def adaptive_avg_pool3d_cpu(self: Tensor, output_size) -> Tensor:
    from pyaten.core.broadcast import new_row_major

    out = tuple(int(v) for v in output_size)
    if len(out) != 3:
        raise RuntimeError("adaptive_avg_pool3d: output_size must be 3")
    if self.dim() not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got "
                           f"{_shape(self._sizes)}")
    for dim in range(1, self.dim()):
        if self._sizes[dim] == 0:
            raise RuntimeError(
                "adaptive_avg_pool3d(): Expected input to have non-zero size for non-batch "
                f"dimensions, but input has sizes {_shape(self._sizes)} with dimension {dim} "
                "being empty")
    if any(o < 0 for o in out):
        raise RuntimeError(
            "adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 "
            f"but received {{{out[0]}, {out[1]},{out[2]}}}")
    if not self._dtype.is_floating_point:
        raise unsupported_dtype("adaptive_avg_pool3d_cpu", self._dtype)
    result = new_row_major(tuple(self._sizes[:-3]) + out, self._dtype, self._device)
    if _is_meta(self) or result.numel() == 0:
        return result
    acc = _acc(self._dtype)
    x = self._numpy().astype(acc, copy=False)
    mats = [adaptive_matrix(n, o, acc) for n, o in zip(x.shape[-3:], out)]
    _store(result, _adaptive_apply(x, mats, False))
    return result


@native
def adaptive_avg_pool3d_backward_cpu(grad_output: Tensor, self: Tensor) -> Tensor:
    from pyaten.core.broadcast import new_row_major

    result = new_row_major(tuple(self._sizes), self._dtype, self._device)
    if _is_meta(self, grad_output) or result.numel() == 0:
        return result
    acc = _acc(self._dtype)
    g = grad_output._numpy().astype(acc, copy=False)
    mats = [adaptive_matrix(n, o, acc) for n, o in zip(self._sizes[-3:], g.shape[-3:])]
    _store(result, _adaptive_apply(g, mats, True))
    return result


@native
def adaptive_avg_pool3d_symint(self: Tensor, output_size) -> Tensor:
    a = _aten()
    out = _adaptive_avg_sizes(self, output_size, 3)
    if out == (1, 1, 1) and self.dim() in (4, 5) and self._dtype.is_floating_point:
        return a.mean.dim(self, [-1, -2, -3], True, None)
    return a._adaptive_avg_pool3d.default(self, list(out))
