"""Convolution: `convolution` and `convolution_backward` (CompositeExplicitAutograd, as in
PyTorch), the composites over them (`conv1d/2d/3d` and their `padding=` string overloads,
`conv_transpose1d/2d/3d`, `_convolution`, `_convolution_mode`), `linear`, `bilinear`, and
`im2col`/`col2im` (F.unfold / F.fold).

Note: im2col as views plus one BLAS call. A convolution of x (N, G*Cg, *S) by w
(G*Og, Cg, *K) reads x through one `as_strided` view of shape (N, G, Cg, *K, *Out) (kernel
offsets times dilation, output positions times stride), copies it once into the column
matrix (N, G, Cg*prod(K), L) and multiplies it by w viewed as (G, Og, Cg*prod(K)): one batched
`np.matmul`. The gradient of the input is the transpose: w^T @ grad gives the columns, which
are added back into a zero (padded) input with one strided add per kernel offset (a loop over
prod(K), never over pixels or channels). The gradient of the weight is grad @ columns^T. A
transposed convolution is the gradient of the input of the regular one (and its gradients are
the regular forward and the weight gradient with the roles of input and grad exchanged).

The kernels run on any float, complex or integer dtype torch's CPU convolution takes (float16
and bfloat16 computed in float32); on Meta tensors they only shape the result. A channels-last
input (or weight) gives a channels-last output, as PyTorch's CPU convolution does.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.lib.stride_tricks import as_strided

from pyaten.core import dtypes as dt
from pyaten.core.broadcast import new_row_major
from pyaten.core.creation import share_array
from pyaten.core.tensor import Tensor
from pyaten.core.views import empty_tensor, is_channels_last_strides
from pyaten.native.kernels import vector_loops
from pyaten.native.kernels.copy import assign
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native

_REDUCED = (dt.float16, dt.bfloat16)


def _acc(dtype: dt.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype in _REDUCED else dtype.numpy


def _array(t: Tensor, acc: np.dtype) -> np.ndarray:
    a = t._numpy()
    return a if a.dtype == acc else a.astype(acc)


def _is_meta(*tensors: Tensor | None) -> bool:
    return any(t is not None and t._device.type == "meta" for t in tensors)


def _shape(sizes) -> str:
    return "[" + ", ".join(str(s) for s in sizes) + "]"


def channels_last(t: Tensor) -> bool:
    """PyTorch's suggest_memory_format() == ChannelsLast(3d) for a 4-d or 5-d tensor."""
    n = len(t._sizes)
    if n not in (4, 5) or t.is_contiguous():
        return False
    return is_channels_last_strides(t._sizes, t._strides,
                                    "channels_last" if n == 4 else "channels_last_3d")


def wrap_result(value: np.ndarray | None, sizes: tuple, dtype: dt.dtype, device,
                last: bool = False) -> Tensor:
    """A fresh tensor of `sizes` holding `value` (row-major, or channels-last when `last`)."""
    if device.type != "meta":  # a Meta result keeps symbolic sizes symbolic
        sizes = tuple(int(s) for s in sizes)
    if device.type == "meta" or value is None:
        if last:
            order = (0, *range(2, len(sizes)), 1)
            strides = [0] * len(sizes)
            step = 1
            for d in reversed(order):
                strides[d] = step
                step *= max(sizes[d], 1)
            return empty_tensor(sizes, dtype, device, tuple(strides))
        return new_row_major(sizes, dtype, device)
    if last and value.ndim >= 3:
        moved = np.ascontiguousarray(np.moveaxis(value, 1, -1), dtype=dtype.numpy)
        if moved.size:
            return share_array(np.moveaxis(moved, -1, 1), dtype)
    if (value.dtype == dtype.numpy and value.flags.c_contiguous and value.flags.writeable
            and value.base is None and value.size):
        return share_array(value, dtype)
    out = new_row_major(sizes, dtype, device)
    if out.numel():
        assign(out._numpy(), value)
    return out


# --- the array computations ------------------------------------------------------------------


def _pad(x: np.ndarray, padding: tuple) -> np.ndarray:
    if not any(padding):
        return x
    out = np.zeros(x.shape[:2] + tuple(s + 2 * p for s, p in zip(x.shape[2:], padding)),
                   x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in
                                           zip(padding, x.shape[2:]))] = x
    return out


def _columns(x: np.ndarray, ksize: tuple, out: tuple, stride: tuple, padding: tuple,
             dilation: tuple, groups: int) -> np.ndarray:
    """The column matrix (N, G, Cg*prod(K), L) of x (N, G*Cg, *S), one copy of a view."""
    xp = _pad(x, padding)
    n, c = xp.shape[:2]
    nd = len(ksize)
    xg = xp.reshape((n, groups, c // groups) + xp.shape[2:])
    sp = xg.strides[3:]
    view = as_strided(
        xg,
        xg.shape[:3] + tuple(ksize) + tuple(out),
        xg.strides[:3] + tuple(s * d for s, d in zip(sp, dilation))
        + tuple(s * st for s, st in zip(sp, stride)),
        writeable=False,
    )
    kk = int(np.prod(ksize)) if nd else 1
    return view.reshape(n, groups, (c // groups) * kk, int(np.prod(out)))


# Note: channels-last columns. With one group and at least _LAST_FROM input channels the
# column matrix is built from a channels-last copy of the padded input: its rows are output
# positions (N*L) and its columns kernel taps times channels (K*C), so the copy moves runs of C
# contiguous values, and each of the forward, the weight gradient and the input gradient is
# one GEMM over the whole batch. Measured on (64, 16, 4, 4) by 32 3x3 filters: forward 0.7 ->
# 0.28 ms; on (32, 64, 32, 32) by 64: 149 -> 113 ms. With few channels (the first layer of an
# image model) the runs are too short and the (N, G, C*K, L) columns above stay faster.
_LAST_FROM = 8


def _channels_last_path(channels: int, groups: int) -> bool:
    return groups == 1 and channels >= _LAST_FROM


def _padded_last(x: np.ndarray, padding: tuple) -> np.ndarray:
    """x (N, C, *S) as a zero-padded channels-last array (N, *(S + 2 * padding), C)."""
    nd = x.ndim - 2
    last = (0, *range(2, 2 + nd), 1)
    if not any(padding):
        return np.ascontiguousarray(x.transpose(last))
    shape = (x.shape[0],) + tuple(s + 2 * p for s, p in zip(x.shape[2:], padding)) + x.shape[1:2]
    out = np.zeros(shape, x.dtype)
    inner = tuple(slice(p, p + s) for p, s in zip(padding, x.shape[2:]))
    out[(slice(None),) + inner] = x.transpose(last)
    return out


def _last_columns(x: np.ndarray, ksize: tuple, out: tuple, stride: tuple, padding: tuple,
                  dilation: tuple) -> np.ndarray:
    """The channels-last column matrix (N*L, K*C) of x (N, C, *S), one copy of a view."""
    xp = _padded_last(x, padding)
    sn, sp, sc = xp.strides[0], xp.strides[1:-1], xp.strides[-1]
    view = as_strided(
        xp,
        (xp.shape[0], *out, *ksize, xp.shape[-1]),
        (sn, *(s * st for s, st in zip(sp, stride)), *(s * d for s, d in zip(sp, dilation)),
         sc),
        writeable=False,
    )
    return view.reshape(xp.shape[0] * int(np.prod(out)), -1)


def _weight_matrix(w: np.ndarray) -> np.ndarray:
    """w (O, C, *K) as the (K*C, O) matrix that multiplies channels-last columns."""
    nd = w.ndim - 2
    return w.transpose((*range(2, 2 + nd), 1, 0)).reshape(-1, w.shape[0])


def _rows(g: np.ndarray) -> np.ndarray:
    """grad (N, O, *Out) as the (N*L, O) matrix of channels-last rows (one transposing copy)."""
    n, o = g.shape[:2]
    return np.ascontiguousarray(g.reshape(n, o, -1).transpose(0, 2, 1)).reshape(-1, o)


def _from_rows(y: np.ndarray, n: int, out: tuple) -> np.ndarray:
    """(N*L, O) rows back to a row-major (N, O, *Out) array."""
    o = y.shape[1]
    return np.ascontiguousarray(y.reshape(n, -1, o).transpose(0, 2, 1)).reshape((n, o) + out)


def conv_forward(x: np.ndarray, w: np.ndarray, stride: tuple, padding: tuple,
                 dilation: tuple, groups: int) -> np.ndarray:
    """The regular convolution (N, O, *Out) of x (N, C, *S) by w (O, C/G, *K)."""
    ksize = w.shape[2:]
    out = tuple(
        (s + 2 * p - d * (k - 1) - 1) // st + 1
        for s, p, d, k, st in zip(x.shape[2:], padding, dilation, ksize, stride)
    )
    n, o = x.shape[0], w.shape[0]
    if _channels_last_path(x.shape[1], groups):  # Note: channels-last columns
        cols = _last_columns(x, ksize, out, stride, padding, dilation)
        return _from_rows(cols @ _weight_matrix(w), n, out)
    if groups == 1:  # one GEMM over the batch, not one per sample
        y = w.reshape(o, -1) @ _batch_columns(x, ksize, out, stride, padding, dilation)
        return np.ascontiguousarray(y.reshape((o, n) + out).swapaxes(0, 1))
    cols = _columns(x, ksize, out, stride, padding, dilation, groups)
    wg = w.reshape(groups, o // groups, -1)
    y = np.matmul(wg, cols)  # (N, G, Og, L)
    return y.reshape((n, o) + out)


def _batch_columns(x: np.ndarray, ksize: tuple, out: tuple, stride: tuple, padding: tuple,
                   dilation: tuple) -> np.ndarray:
    """The column matrix (C*prod(K), N*L) of x (N, C, *S) for one group: the batch's columns
    side by side, so that the forward is one GEMM (a single input channel: 147 -> 124 us on
    the demo CNN's first layer)."""
    xp = _pad(x, padding)
    n, c = xp.shape[:2]
    sn, sc, sp = xp.strides[0], xp.strides[1], xp.strides[2:]
    view = as_strided(
        xp,
        (c, *ksize, n, *out),
        (sc, *(s * d for s, d in zip(sp, dilation)), sn, *(s * st for s, st in zip(sp, stride))),
        writeable=False,
    )
    return view.reshape(c * int(np.prod(ksize)), -1)


def conv_input_grad(g: np.ndarray, w: np.ndarray, spatial: tuple, stride: tuple,
                    padding: tuple, dilation: tuple, groups: int,
                    rows: np.ndarray | None = None) -> np.ndarray:
    """The gradient (N, C, *spatial) of a regular convolution's input, from grad (N, O, *Out)
    (`rows`: `_rows(g)` when the caller has it)."""
    n, o = g.shape[:2]
    out = g.shape[2:]
    ksize = w.shape[2:]
    cg = w.shape[1]
    if _channels_last_path(cg, groups):  # Note: channels-last columns
        cols = (_rows(g) if rows is None else rows) @ _weight_matrix(w).T  # (N*L, K*C)
        return _col2im_last(cols.reshape((n, *out, *ksize, cg)), spatial, stride, padding,
                            dilation)
    wg = w.reshape(groups, o // groups, -1)
    gg = g.reshape(n, groups, o // groups, -1)
    cols = np.matmul(wg.transpose(0, 2, 1), gg)  # (N, G, Cg*K, L)
    cols = cols.reshape((n, groups * cg) + tuple(ksize) + tuple(out))
    return col2im_array(cols, spatial, stride, padding, dilation)


def _col2im_last(cols: np.ndarray, spatial: tuple, stride: tuple, padding: tuple,
                 dilation: tuple) -> np.ndarray:
    """col2im_array for channels-last columns (N, *Out, *K, C): the strided adds move runs of
    C values; the image comes back row-major (N, C, *spatial)."""
    nd = len(spatial)
    out = cols.shape[1:1 + nd]
    ksize = cols.shape[1 + nd:1 + 2 * nd]
    padded = tuple(s + 2 * p for s, p in zip(spatial, padding))
    gx = np.zeros((cols.shape[0], *padded, cols.shape[-1]), cols.dtype)
    every = slice(None)
    if nd != 2 or not vector_loops.col2im_last_2d(cols, stride, dilation, gx):
        for offset in np.ndindex(*ksize):
            window = tuple(
                slice(k * d, k * d + st * (m - 1) + 1, st)
                for k, d, st, m in zip(offset, dilation, stride, out)
            )
            gx[(every, *window)] += cols[(every,) * (1 + nd) + offset]
    inner = tuple(slice(p, p + s) for p, s in zip(padding, spatial))
    return np.ascontiguousarray(gx[(every, *inner)].transpose((0, 1 + nd, *range(1, 1 + nd))))


def col2im_array(cols: np.ndarray, spatial: tuple, stride: tuple, padding: tuple,
                 dilation: tuple) -> np.ndarray:
    """Sums the columns (N, C, *K, *Out) back into an image (N, C, *spatial): one strided add
    per kernel tap."""
    nd = len(spatial)
    ksize = cols.shape[2:2 + nd]
    out = cols.shape[2 + nd:]
    padded = tuple(s + 2 * p for s, p in zip(spatial, padding))
    gx = np.zeros(cols.shape[:2] + padded, cols.dtype)
    for offset in np.ndindex(*ksize):
        window = tuple(
            slice(k * d, k * d + st * (m - 1) + 1, st)
            for k, d, st, m in zip(offset, dilation, stride, out)
        )
        gx[(slice(None),) * 2 + window] += cols[(slice(None),) * 2 + offset]
    if any(padding):
        gx = gx[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in
                                                   zip(padding, spatial))]
    return gx


def conv_weight_grad(g: np.ndarray, x: np.ndarray, ksize: tuple, stride: tuple,
                     padding: tuple, dilation: tuple, groups: int,
                     rows: np.ndarray | None = None) -> np.ndarray:
    """The gradient (O, C/G, *K) of a regular convolution's weight (`rows`: `_rows(g)` when
    the caller has it)."""
    n, o = g.shape[:2]
    out = g.shape[2:]
    c = x.shape[1]
    if _channels_last_path(c, groups):  # Note: channels-last columns
        cols = _last_columns(x, ksize, out, stride, padding, dilation)  # (N*L, K*C)
        gw = (_rows(g) if rows is None else rows).T @ cols  # (O, K*C)
        nd = len(ksize)
        gw = gw.reshape((o, *ksize, c)).transpose((0, 1 + nd, *range(1, 1 + nd)))
        return np.ascontiguousarray(gw)
    cols = _columns(x, ksize, out, stride, padding, dilation, groups)  # (N, G, CgK, L)
    gg = g.reshape(n, groups, o // groups, -1)
    # one product per sample, then the sum over the batch: measured 25x faster than one
    # product over (N*L) after transposing copies
    gw = np.matmul(gg, cols.transpose(0, 1, 3, 2))
    gw = gw[0] if n == 1 else gw.sum(0)
    return gw.reshape((o, c // groups) + tuple(ksize))


# --- checks and shapes (PyTorch's ConvUtils) -------------------------------------------------


def _expand(name: str, values, nd: int) -> tuple:
    values = tuple(int(v) for v in values)
    if len(values) == 1 and nd > 1:
        return values * nd
    if len(values) != nd:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {nd} values to match "
            f"the convolution dimensions, but got {name}={list(values)}"
        )
    return values


def _check(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation,
           transposed: bool, output_padding, groups: int):
    k = weight.dim()
    nd = k - 2
    if input.dim() != k:
        raise RuntimeError(
            f"Expected {k}-dimensional input for {k}-dimensional weight {_shape(weight._sizes)}, "
            f"but got {input.dim()}-dimensional input of size {_shape(input._sizes)} instead"
        )
    if nd < 1:
        raise RuntimeError("weight should have at least three dimensions")
    stride = _expand("stride", stride, nd)
    padding = _expand("padding", padding, nd)
    dilation = _expand("dilation", dilation, nd)
    output_padding = _expand("output_padding", output_padding, nd) if transposed else (0,) * nd
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if input._dtype is not weight._dtype:
        raise RuntimeError(
            f"Input type ({_legacy(input._dtype)}) and weight type ({_legacy(weight._dtype)}) "
            "should be the same or input should be a MKLDNN tensor and weight is a dense tensor"
        )
    if bias is not None and bias._dtype is not input._dtype:
        raise RuntimeError(
            f"Input type ({_cpp(input._dtype)}) and bias type ({_cpp(bias._dtype)}) should be "
            "the same"
        )
    ws = tuple(weight._sizes)
    xs = tuple(input._sizes)
    channels = xs[1]
    if not transposed:
        if ws[0] % groups:
            raise RuntimeError(
                f"Given groups={groups}, expected weight to be divisible by {groups} at "
                f"dimension 0, but got weight of size [{_shape(ws)}] instead"
            )
        if channels != ws[1] * groups:
            raise RuntimeError(
                f"Given groups={groups}, weight of size {_shape(ws)}, expected input{_shape(xs)} "
                f"to have {ws[1] * groups} channels, but got {channels} channels instead"
            )
        out_channels = ws[0]
        if bias is not None and (bias.dim() != 1 or bias._sizes[0] != out_channels):
            raise RuntimeError(
                f"Given weight of size {_shape(ws)}, expected bias to be 1-dimensional with "
                f"{out_channels} elements, but got bias of size {_shape(bias._sizes)} instead"
            )
        padded = tuple(s + 2 * p for s, p in zip(xs[2:], padding))
        kernel = tuple((k - 1) * d + 1 for k, d in zip(ws[2:], dilation))
        if any(p < k for p, k in zip(padded, kernel)):
            raise RuntimeError(
                "Calculated padded input size per channel: ("
                + " x ".join(str(p) for p in padded) + "). Kernel size: ("
                + " x ".join(str(k) for k in kernel)
                + "). Kernel size can't be greater than actual input size"
            )
        out = tuple((p - k) // s + 1 for p, k, s in zip(padded, kernel, stride))
    else:
        if channels != ws[0]:
            raise RuntimeError(
                f"Given transposed=1, weight of size {_shape(ws)}, expected input{_shape(xs)} to "
                f"have {ws[0]} channels, but got {channels} channels instead"
            )
        if ws[0] % groups:
            raise RuntimeError(
                f"Given groups={groups}, expected weight to be divisible by {groups} at "
                f"dimension 0, but got weight of size [{_shape(ws)}] instead"
            )
        out_channels = ws[1] * groups
        if bias is not None and (bias.dim() != 1 or bias._sizes[0] != out_channels):
            raise RuntimeError(
                f"Given transposed=1, weight of size {_shape(ws)}, expected bias to be "
                f"1-dimensional with {out_channels} elements, but got bias of size "
                f"{_shape(bias._sizes)} instead"
            )
        if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
            # ATen names the dims (a 1-d convolution runs as a 2-d one of height 1)
            names = ("depth", "height", "width")[-max(nd, 2):]
            lead = ((0,), (1,), (1,)) if nd == 1 else ((), (), ())
            parts = []
            for label, values in (("output_padding", lead[0] + output_padding),
                                  ("stride", lead[1] + stride),
                                  ("dilation", lead[2] + dilation)):
                parts += [f"{label}_{n}: {v}" for n, v in zip(names, values)]
            raise RuntimeError(
                "output padding must be smaller than either stride or dilation, but got "
                + " ".join(parts)
            )
        out = tuple(
            (s - 1) * st - 2 * p + d * (k - 1) + op + 1
            for s, st, p, d, k, op in zip(xs[2:], stride, padding, dilation, ws[2:],
                                          output_padding)
        )
        if any(o <= 0 for o in out):
            raise RuntimeError(
                f"Given input size per channel: ({' x '.join(str(s) for s in xs[2:])}). "
                f"Calculated output size per channel: ({' x '.join(str(o) for o in out)}). "
                "Output size is too small"
            )
    return stride, padding, dilation, output_padding, (xs[0], out_channels) + out


_LEGACY = {
    dt.float32: "pyaten.FloatTensor", dt.float64: "pyaten.DoubleTensor",
    dt.float16: "pyaten.HalfTensor", dt.bfloat16: "pyaten.BFloat16Tensor",
    dt.int64: "pyaten.LongTensor", dt.int32: "pyaten.IntTensor", dt.int16: "pyaten.ShortTensor",
    dt.int8: "pyaten.CharTensor", dt.uint8: "pyaten.ByteTensor", dt.bool: "pyaten.BoolTensor",
    dt.complex64: "pyaten.ComplexFloatTensor", dt.complex128: "pyaten.ComplexDoubleTensor",
}


def _legacy(dtype: dt.dtype) -> str:
    return _LEGACY.get(dtype, str(dtype))


_CPP = {dt.float32: "float", dt.float64: "double", dt.float16: "c10::Half",
        dt.bfloat16: "c10::BFloat16", dt.int64: "long int", dt.int32: "int"}


def _cpp(dtype: dt.dtype) -> str:
    return _CPP.get(dtype, dtype.scalar_name)


def _check_dtype(t: Tensor) -> None:
    if t._dtype is dt.bool:
        raise NotImplementedError("\"slow_conv2d_cpu\" not implemented for 'Bool'")


# --- the operators ---------------------------------------------------------------------------


@native
def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding,
                dilation, transposed: bool, output_padding, groups: int) -> Tensor:
    stride, padding, dilation, output_padding, sizes = _check(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    _check_dtype(input)
    last = channels_last(input) or channels_last(weight)
    if _is_meta(input, weight, bias) or 0 in sizes:
        value = None
        if not _is_meta(input, weight, bias):
            value = np.zeros(sizes, input._dtype.numpy)
            if bias is not None and 0 not in sizes:
                value += bias._numpy().reshape((-1,) + (1,) * (len(sizes) - 2))
        return wrap_result(value, sizes, input._dtype, input._device, last)
    acc = _acc(input._dtype)
    x, w = _array(input, acc), _array(weight, acc)
    if transposed:
        y = conv_input_grad(x, w, sizes[2:], stride, padding, dilation, groups)
    else:
        y = conv_forward(x, w, stride, padding, dilation, groups)
    if bias is not None:  # (y is a new array: the bias added in place)
        y += _array(bias, acc).reshape((-1,) + (1,) * (len(sizes) - 2))
    return wrap_result(y, sizes, input._dtype, input._device, last)


@native
def convolution_backward(grad_output: Tensor, input: Tensor, weight: Tensor, bias_sizes,
                         stride, padding, dilation, transposed: bool, output_padding,
                         groups: int, output_mask) -> tuple:
    stride, padding, dilation, output_padding, sizes = _check(
        input, weight, None, stride, padding, dilation, transposed, output_padding, groups)
    if tuple(grad_output._sizes) != tuple(sizes):
        raise RuntimeError(
            f"Expected grad_output to have size {_shape(sizes)}, but got "
            f"{_shape(grad_output._sizes)}"
        )
    device = input._device
    dtype = input._dtype
    meta = _is_meta(grad_output, input, weight)
    acc = _acc(dtype)
    g = x = w = None
    if not meta:
        g, x, w = _array(grad_output, acc), _array(input, acc), _array(weight, acc)
    results = [None, None, None]
    empty = 0 in sizes or 0 in tuple(input._sizes) or 0 in tuple(weight._sizes)
    # grad as channels-last rows, made once for the input, weight and bias gradients
    # (Note: channels-last columns)
    rows = None
    if (not meta and not empty and not transposed and g.ndim > 2
            and _channels_last_path(input._sizes[1], groups)):
        rows = _rows(g)
    if output_mask[0]:
        value = None
        if not meta:
            if empty:
                value = np.zeros(tuple(input._sizes), acc)
            elif transposed:
                value = conv_forward(g, w, stride, padding, dilation, groups)
                # an output_padding >= stride (allowed below the dilation) adds positions
                # the input never reached
                value = value[(slice(None), slice(None))
                              + tuple(slice(0, s) for s in input._sizes[2:])]
            else:
                value = conv_input_grad(g, w, tuple(input._sizes[2:]), stride, padding,
                                        dilation, groups, rows)
        results[0] = wrap_result(value, input._sizes, dtype, device, channels_last(input)
                                 or channels_last(weight))
    if output_mask[1]:
        value = None
        if not meta:
            if empty:
                value = np.zeros(tuple(weight._sizes), acc)
            elif transposed:
                value = conv_weight_grad(x, g, tuple(weight._sizes[2:]), stride, padding,
                                         dilation, groups)
            else:
                value = conv_weight_grad(g, x, tuple(weight._sizes[2:]), stride, padding,
                                         dilation, groups, rows)
        results[1] = wrap_result(value, weight._sizes, dtype, device, channels_last(weight))
    if output_mask[2]:
        n_out = sizes[1]
        value = None
        if not meta:
            axes = (0,) + tuple(range(2, g.ndim))
            if rows is not None:  # the rows' columns: one contiguous reduction (2x faster)
                value = rows.sum(axis=0)
            else:
                value = g.sum(axis=axes) if g.size else np.zeros(n_out, acc)
        results[2] = wrap_result(value, (n_out,), dtype, device)
    return tuple(results)


@native
def _convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding,
                 dilation, transposed: bool, output_padding, groups: int, benchmark: bool,
                 deterministic: bool, cudnn_enabled: bool, allow_tf32: bool) -> Tensor:
    return _aten().convolution.default(input, weight, bias, stride, padding, dilation,
                                       transposed, output_padding, groups)


# --- the composites ---------------------------------------------------------------------------


def _batchify(input: Tensor, nd: int, name: str) -> tuple[Tensor, bool]:
    dim = input.dim()
    if dim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got "
            f"input of size: {_shape(input._sizes)}"
        )
    if dim == nd + 1:
        return _aten().unsqueeze.default(input, 0), False
    return input, True


def _conv_nd(input, weight, bias, stride, padding, dilation, groups, nd, name):
    x, batched = _batchify(input, nd, name)
    y = _aten().convolution.default(x, weight, bias, list(stride), list(padding),
                                    list(dilation), False, [0] * nd, groups)
    return y if batched else _aten().squeeze.dim(y, 0)


def _conv_padding(input, weight, bias, stride, padding: str, dilation, groups, nd, name):
    x, batched = _batchify(input, nd, name)
    y = _aten()._convolution_mode.default(x, weight, bias, list(stride), padding,
                                          list(dilation), groups)
    return y if batched else _aten().squeeze.dim(y, 0)


@native
def _convolution_mode_symint(input: Tensor, weight: Tensor, bias: Tensor | None, stride,
                             padding: str, dilation, groups: int) -> Tensor:
    nd = weight.dim() - 2
    a = _aten()
    if padding == "valid":
        return a.convolution.default(input, weight, bias, list(stride), [0] * nd,
                                     list(dilation), False, [0] * nd, groups)
    if padding != "same":
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    stride = _expand("stride", stride, nd)
    dilation = _expand("dilation", dilation, nd)
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    pads = []
    extra = []
    for d, k in zip(dilation, weight._sizes[2:]):
        total = d * (k - 1)
        left = total // 2
        pads.append(left)
        extra.append(total - 2 * left)
    if not any(extra):
        return a.convolution.default(input, weight, bias, list(stride), pads, list(dilation),
                                     False, [0] * nd, groups)
    warnings.warn("Using padding='same' with even kernel lengths and odd dilation may require "
                  "a zero-padded copy of the input be created", UserWarning, stacklevel=2)
    # PyTorch pads the odd remainder at the end only; padding it on both sides gives `extra`
    # more leading outputs, which are dropped.
    pads = [p + e for p, e in zip(pads, extra)]
    y = a.convolution.default(input, weight, bias, list(stride), pads, list(dilation), False,
                              [0] * nd, groups)
    for dim, e in enumerate(extra):
        if e:
            y = a.slice.Tensor(y, dim + 2, e, None, 1)
    return y


def _make_conv(nd: int):
    name = f"conv{nd}d"

    def conv(input, weight, bias, stride, padding, dilation, groups):
        return _conv_nd(input, weight, bias, stride, padding, dilation, groups, nd, name)

    def conv_padding(input, weight, bias, stride, padding, dilation, groups):
        return _conv_padding(input, weight, bias, stride, padding, dilation, groups, nd, name)

    def conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                       dilation):
        x, batched = _batchify(input, nd, f"conv_transpose{nd}d")
        y = _aten().convolution.default(x, weight, bias, list(stride), list(padding),
                                        list(dilation), True, list(output_padding), groups)
        return y if batched else _aten().squeeze.dim(y, 0)

    conv.__name__ = f"conv{nd}d_symint"
    conv_padding.__name__ = f"conv{nd}d_padding_symint"
    conv_transpose.__name__ = f"conv_transpose{nd}d_symint"
    for fn in (conv, conv_padding, conv_transpose):
        fn.__qualname__ = fn.__name__
        native(fn)
    return conv, conv_padding, conv_transpose


conv1d_symint, conv1d_padding_symint, conv_transpose1d_symint = _make_conv(1)
conv2d_symint, conv2d_padding_symint, conv_transpose2d_symint = _make_conv(2)
conv3d_symint, conv3d_padding_symint, conv_transpose3d_symint = _make_conv(3)


# --- linear and bilinear ----------------------------------------------------------------------


@native
def linear(input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    # PyTorch's composite: addmm for 2-d input, and for contiguous 3-d input flattened to 2-d
    # (one GEMM with the bias); else matmul, then the bias added in place.
    a = _aten()
    if input.dim() == 2 and bias is not None:
        return a.addmm.default(bias, input, a.t.default(weight), 1, 1)
    if input.dim() == 3 and bias is not None and input.is_contiguous():
        sizes = input._sizes
        flat = a.view.default(input, [sizes[0] * sizes[1], sizes[2]])
        out = a.addmm.default(bias, flat, a.t.default(weight), 1, 1)
        return a.view.default(out, [sizes[0], sizes[1], out._sizes[1]])
    out = a.matmul.default(input, a.t.default(weight))
    if bias is not None:
        if type(bias) is Tensor and bias._fw_grad is None:
            out = a.add_.Tensor(out, bias, 1)
        else:  # a subclass or a dual tensor: out of place, as PyTorch
            out = a.add.Tensor(out, bias, 1)
    return out


@native
def linear_out(input: Tensor, weight: Tensor, bias: Tensor | None, out: Tensor) -> Tensor:
    a = _aten()
    result = linear(input, weight, bias)
    a.resize_.default(out, list(result._sizes), None)
    a.copy_.default(out, result, False)
    return out


@native
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    a = _aten()
    if input1.dim() != input2.dim():
        raise RuntimeError(
            f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}"
        )
    for i in range(input1.dim() - 1):
        if input1._sizes[i] != input2._sizes[i]:
            raise RuntimeError(
                f"bilinear(): input batch dimensions do not match at dim {i}: got "
                f"{input1._sizes[i]} and {input2._sizes[i]}"
            )
    if input1._sizes[-1] != weight._sizes[1]:
        raise RuntimeError(
            f"bilinear(): input1 size does not match weight size: got {input1._sizes[-1]} but "
            f"expected {weight._sizes[1]}"
        )
    if input2._sizes[-1] != weight._sizes[2]:
        raise RuntimeError(
            f"bilinear(): input2 size does not match weight size: got {input2._sizes[-1]} but "
            f"expected {weight._sizes[2]}"
        )
    if bias is not None and bias._sizes[-1] != weight._sizes[0]:
        raise RuntimeError(
            f"bilinear(): bias size does not match weight size: got {bias._sizes[-1]} but "
            f"expected {weight._sizes[0]}"
        )
    batch = list(input1._sizes[:-1])
    x1 = a.reshape.default(input1, [-1, input1._sizes[-1]])
    x2 = a.reshape.default(input2, [-1, input2._sizes[-1]])
    o, i1, i2 = weight._sizes
    # y[b, o] = sum_ij x1[b, i] W[o, i, j] x2[b, j]: (B, I1) @ W as (I1, O*I2), then with x2.
    w = a.reshape.default(a.permute.default(weight, [1, 0, 2]), [i1, o * i2])
    t = a.reshape.default(a.mm.default(x1, w), [-1, o, i2])
    y = a.squeeze.dim(a.bmm.default(t, a.unsqueeze.default(x2, 2)), 2)
    if bias is not None:
        y = a.add.Tensor(y, bias, 1)
    return a.reshape.default(y, batch + [o])


# --- double backward ------------------------------------------------------------------------


@native
def _convolution_double_backward(ggI: Tensor | None, ggW: Tensor | None, ggb: Tensor | None,
                                 gO: Tensor, weight: Tensor, self: Tensor, stride, padding,
                                 dilation, transposed: bool, output_padding, groups: int,
                                 output_mask) -> tuple:
    """The gradients of convolution_backward's (grad_input, grad_weight, grad_bias) with
    respect to (grad_output, input, weight), given their incoming gradients (ggI, ggW, ggb).

    Every output is bilinear in its arguments, so each term is a convolution or one output
    of convolution_backward: composed from them, higher orders come for free.
    """
    a = _aten()
    args = (list(stride), list(padding), list(dilation), transposed, list(output_padding),
            groups)
    ggO = gI = gW = None
    if output_mask[0]:
        terms = []
        if ggI is not None:
            terms.append(a.convolution.default(ggI, weight, None, *args))
        if ggW is not None:
            terms.append(a.convolution.default(self, ggW, None, *args))
        if ggb is not None:
            shape = [1, ggb._sizes[0]] + [1] * (gO.dim() - 2)
            terms.append(a.expand.default(a.view.default(ggb, shape), list(gO._sizes), False))
        for t in terms:
            ggO = t if ggO is None else a.add.Tensor(ggO, t, 1)
    if output_mask[1] and ggW is not None:
        gI = a.convolution_backward.default(gO, self, ggW, None, *args,
                                            [True, False, False])[0]
    if output_mask[2] and ggI is not None:
        gW = a.convolution_backward.default(gO, ggI, weight, None, *args,
                                            [False, True, False])[1]
    return ggO, gI, gW


# --- im2col / col2im (F.unfold / F.fold) -----------------------------------------------------


def _pair_text(values) -> str:
    return f"({values[0]}, {values[1]})"


def _block_checks(kernel_size, dilation, padding, stride, order: str) -> tuple:
    k, d, p, s = (tuple(int(v) for v in a) for a in (kernel_size, dilation, padding, stride))
    checks = {
        "k": (k[0] > 0 and k[1] > 0, "kernel size should be greater than zero, but got "
              f"kernel_height: {k[0]} kernel_width: {k[1]}"),
        "d": (d[0] > 0 and d[1] > 0, "dilation should be greater than zero, but got "
              f"dilation_height: {d[0]} dilation_width: {d[1]}"),
        "p": (p[0] >= 0 and p[1] >= 0, "padding should be non-negative, but got "
              f"pad_height: {p[0]} pad_width: {p[1]}"),
        "s": (s[0] > 0 and s[1] > 0, "stride should be greater than zero, but got "
              f"stride_height: {s[0]} stride_width: {s[1]}"),
    }
    for key in order:
        ok, text = checks[key]
        if not ok:
            raise RuntimeError(text)
    return k, d, p, s


def _fold_dtype(t: Tensor, name: str) -> None:
    if not (t._dtype.is_floating_point or t._dtype.is_complex or t._dtype is dt.bool):
        from pyaten.native.family import unsupported_dtype

        raise unsupported_dtype(name, t._dtype)


@native
def im2col_cpu(self: Tensor, kernel_size, dilation, padding, stride) -> Tensor:
    k, d, p, s = _block_checks(kernel_size, dilation, padding, stride, "kdps")
    sizes = tuple(self._sizes)
    ndim = len(sizes)
    valid = self.size(1) != 0 and self.size(2) != 0  # a 2-d input: IndexError, as ATen
    if not ((ndim == 3 and sizes[0] != 0 and valid) or (ndim == 4 and valid and sizes[3] != 0)):
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
            f"non-zero dimensions for input, but got: {_shape(sizes)}"
        )
    h, w = sizes[-2:]
    out = ((h + 2 * p[0] - (d[0] * (k[0] - 1) + 1)) // s[0] + 1,
           (w + 2 * p[1] - (d[1] * (k[1] - 1) + 1)) // s[1] + 1)
    if out[0] < 1 or out[1] < 1:
        raise RuntimeError(
            f"Given input with spatial size {_pair_text((h, w))}, kernel_size={_pair_text(k)}, "
            f"dilation={_pair_text(d)}, padding={_pair_text(p)}, calculated shape of the array "
            f"of sliding blocks as {_pair_text(out)}, but its components must be at least one."
        )
    _fold_dtype(self, "im2col_out_cpu")
    c = sizes[-3]
    result_sizes = sizes[:-3] + (c * k[0] * k[1], out[0] * out[1])
    if _is_meta(self) or 0 in result_sizes:
        return wrap_result(None, result_sizes, self._dtype, self._device)
    acc = _acc(self._dtype)
    x = _array(self, acc).reshape((-1, c, h, w))
    cols = _columns(x, k, out, s, p, d, 1)
    return wrap_result(cols.reshape(result_sizes), result_sizes, self._dtype, self._device)


@native
def col2im_cpu(self: Tensor, output_size, kernel_size, dilation, padding, stride) -> Tensor:
    k, d, p, s = _block_checks(kernel_size, dilation, padding, stride, "ksd")
    size = tuple(int(v) for v in output_size)
    sizes = tuple(self._sizes)
    ndim = len(sizes)
    if not ((ndim == 2 and sizes[0] != 0 and sizes[1] != 0)
            or (ndim == 3 and sizes[1] != 0 and sizes[2] != 0)):
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
            f"non-zero dimensions for input, but got: {_shape(sizes)}"
        )
    planes = sizes[-2]
    if planes % (k[0] * k[1]):
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={planes} and kernel_size={_pair_text(k)}."
        )
    blocks = tuple((size[a] + 2 * p[a] - d[a] * (k[a] - 1) - 1) // s[a] + 1 for a in (0, 1))
    if sizes[-1] != blocks[0] * blocks[1]:
        raise RuntimeError(
            f"Given output_size={_pair_text(size)}, kernel_size={_pair_text(k)}, "
            f"dilation={_pair_text(d)}, padding={_pair_text(p)}, stride={_pair_text(s)}, "
            "expected size of input's dimension 2 to match the calculated number of sliding "
            f"blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
            f"input.size(2)={sizes[-1]}."
        )
    _fold_dtype(self, "col2im_out_cpu")
    c = planes // (k[0] * k[1])
    result_sizes = sizes[:-2] + (c,) + size
    if _is_meta(self) or 0 in result_sizes:
        value = None if _is_meta(self) else np.zeros(result_sizes, _acc(self._dtype))
        return wrap_result(value, result_sizes, self._dtype, self._device)
    cols = _array(self, _acc(self._dtype)).reshape((-1, c) + k + blocks)
    image = col2im_array(cols, size, s, p, d)
    return wrap_result(image.reshape(result_sizes), result_sizes, self._dtype, self._device)
