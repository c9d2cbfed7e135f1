"""Normalisation and dropout operators PyTorch declares with kernels: `native_layer_norm`,
`native_batch_norm` (and `_native_batch_norm_legit`), `native_group_norm`, `native_dropout`,
their backward helper operators, and the composites PyTorch writes in C++ (`layer_norm`,
`batch_norm`, `instance_norm`, `group_norm`, `rms_norm`, `dropout` and its feature/alpha forms).

Every kernel is one vectorised NumPy computation over the whole batch: statistics are taken
over a reshaped view (`(M, N)` rows for layer norm, `(N, C, L)` for batch norm, `(N, G, D)`
for group norm), float16/bfloat16 in float32 and rounded once on write. The Meta key runs the
same checks and only shapes the outputs. The composites call other operators through
`aten_ops()`, so their gradients come from those operators' derivatives.
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.broadcast import new_row_major
from pyaten.core.creation import share_array
from pyaten.core.generator import resolve_generator
from pyaten.core.tensor import Tensor
from pyaten.native import compiled
from pyaten.native.family import FLOATING_AND_REDUCED, unsupported_dtype
from pyaten.native.kernels.copy import assign
from pyaten.native.kernels.random_draws import bernoulli_double
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import quiet_call

# --- shared helpers --------------------------------------------------------------------------


def _acc(dtype: dt.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype in (dt.float16, dt.bfloat16) else dtype.numpy


def _array(t: Tensor, acc: np.dtype) -> np.ndarray:
    arr = t._numpy()
    return arr if arr.dtype == acc else arr.astype(acc)


def _is_meta(*tensors: Tensor | None) -> bool:
    return any(t is not None and t._device.type == "meta" for t in tensors)


def _result(sizes: tuple, dtype: dt.dtype, device, value: np.ndarray | None,
            owned: bool = False) -> Tensor:
    """A new tensor of `sizes` holding `value`. A fresh NumPy result of the right dtype (no
    base, or `owned`: a view of an array this kernel made) is taken over as it is, its layout
    kept: a channels-last input gives a channels-last output."""
    sizes = tuple(sizes)
    if (isinstance(value, np.ndarray) and (value.base is None or owned)
            and value.shape == sizes and value.dtype == dtype.numpy and value.flags.writeable
            and value.size and device.type == "cpu" and all(s >= 0 for s in value.strides)):
        return share_array(value, dtype)
    out = new_row_major(sizes, dtype, device)
    if value is not None and out.numel():
        assign(out._numpy(), np.broadcast_to(np.asarray(value), sizes))
    return out


def _float_check(name: str, t: Tensor) -> None:
    if t._dtype not in FLOATING_AND_REDUCED:
        raise unsupported_dtype(name, t._dtype)


def _shape_text(sizes) -> str:
    return "[" + ", ".join(str(s) for s in sizes) + "]"


def _row_mean(x: np.ndarray) -> np.ndarray:
    """The mean of each row of a 2-D array, as a column: one BLAS matrix-vector product
    (a third of the time of `x.mean(axis=1)` on float32)."""
    if not x.flags.c_contiguous and not x.flags.f_contiguous:
        return x.mean(axis=1, keepdims=True)
    n = x.shape[1]
    return (x @ np.full(n, 1.0 / n, x.dtype))[:, None]


# --- layer norm ------------------------------------------------------------------------------


def _layer_norm_checks(input: Tensor, normalized_shape, weight, bias) -> int:
    normalized = tuple(normalized_shape)
    if not normalized:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
            f"one element, but got normalized_shape = {_shape_text(normalized)}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t._sizes) != normalized:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                f"shape {_shape_text(t._sizes)} and normalized_shape = {_shape_text(normalized)}"
            )
    sizes = tuple(input._sizes)
    axis = len(sizes) - len(normalized)
    if axis < 0 or sizes[axis:] != normalized:
        raise RuntimeError(
            f"Given normalized_shape={_shape_text(normalized)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in normalized)}], but got input of size"
            f"{_shape_text(sizes)}"
        )
    return axis


def _layer_norm(input: Tensor, normalized_shape, weight, bias, eps: float) -> tuple:
    axis = _layer_norm_checks(input, normalized_shape, weight, bias)
    sizes = tuple(input._sizes)
    stat_sizes = sizes[:axis] + (1,) * (len(sizes) - axis)
    dtype = input._dtype
    if _is_meta(input, weight, bias):
        return (new_row_major(sizes, dtype, input._device),
                new_row_major(stat_sizes, dtype, input._device),
                new_row_major(stat_sizes, dtype, input._device))
    _float_check("LayerNormKernelImpl", input)
    acc = _acc(dtype)
    m = math.prod(sizes[:axis])
    n = math.prod(sizes[axis:])
    x = _array(input, acc).reshape(m, n)
    fast = compiled.loops(x.size) if n and acc.kind == "f" else None
    if fast is not None:  # one pass per row (Note: compiled loops)
        x = np.ascontiguousarray(x)
        y, mean, rstd = np.empty((m, n), acc), np.empty((m, 1), acc), np.empty((m, 1), acc)
        fast.layer_norm(x, _optional_array(weight, acc, n), _optional_array(bias, acc, n),
                        float(eps), y, mean[:, 0], rstd[:, 0])
    else:
        y, mean, rstd = _layer_norm_numpy(x, weight, bias, eps, acc)
    out = y.reshape(sizes).astype(dtype.numpy, copy=False)
    return (_result(sizes, dtype, input._device, out, owned=True),
            _result(stat_sizes, dtype, input._device, mean.reshape(stat_sizes).astype(
                dtype.numpy, copy=False)),
            _result(stat_sizes, dtype, input._device, rstd.reshape(stat_sizes).astype(
                dtype.numpy, copy=False)))


def _optional_array(t: Tensor | None, acc: np.dtype, n: int) -> np.ndarray:
    """`t` flat in `acc` for the compiled loops; an empty array stands for None."""
    return np.empty(0, acc) if t is None else np.ascontiguousarray(_array(t, acc).reshape(n))


def _layer_norm_numpy(x: np.ndarray, weight, bias, eps: float, acc: np.dtype) -> tuple:
    m, n = x.shape
    mean = _row_mean(x) if n else np.full((m, 1), np.nan, acc)
    y = x - mean  # the one full-size temporary: centred, scaled in place, then the result
    var = np.einsum("ij,ij->i", y, y)[:, None] / n if n else np.full((m, 1), np.nan, acc)
    rstd = quiet_call(lambda: 1.0 / np.sqrt(var + acc.type(eps)))
    y *= rstd
    if weight is not None:
        y *= _array(weight, acc).reshape(n)
    if bias is not None:
        y += _array(bias, acc).reshape(n)
    return y, mean, rstd


@native
def layer_norm_cpu(input: Tensor, normalized_shape, weight, bias, eps: float) -> tuple:
    return _layer_norm(input, normalized_shape, weight, bias, eps)


@native
def math_native_layer_norm(input: Tensor, normalized_shape, weight, bias, eps: float) -> tuple:
    return _layer_norm(input, normalized_shape, weight, bias, eps)


@native
def layer_norm_symint(input: Tensor, normalized_shape, weight=None, bias=None,
                      eps: float = 1e-5, cudnn_enable: bool = True) -> Tensor:
    return _aten().native_layer_norm.default(input, normalized_shape, weight, bias, eps)[0]


@native
def layer_norm_backward_cpu(grad_out: Tensor, input: Tensor, normalized_shape, mean: Tensor,
                            rstd: Tensor, weight, bias, output_mask) -> tuple:
    axis = _layer_norm_checks(input, normalized_shape, weight, bias)
    sizes = tuple(input._sizes)
    normalized = tuple(normalized_shape)
    dtype, device = input._dtype, input._device
    want_w = output_mask[1] and weight is not None
    want_b = output_mask[2] and bias is not None
    if _is_meta(grad_out, input, mean, rstd, weight, bias):
        return (new_row_major(sizes, dtype, device) if output_mask[0] else None,
                new_row_major(normalized, weight._dtype, device) if want_w else None,
                new_row_major(normalized, bias._dtype, device) if want_b else None)
    acc = _acc(dtype)
    m = math.prod(sizes[:axis])
    n = math.prod(normalized)
    x = _array(input, acc).reshape(m, n)
    dy = _array(grad_out, acc).reshape(m, n)
    mu = _array(mean, acc).reshape(m, 1)
    rs = _array(rstd, acc).reshape(m, 1)
    fast = compiled.loops(x.size) if n and acc.kind == "f" else None
    if fast is not None:  # one pass per row (Note: compiled loops)
        dx_arr = np.empty((m, n) if output_mask[0] else (0, n), acc)
        dw_arr, db_arr = np.zeros(n if want_w else 0), np.zeros(n if want_b else 0)
        fast.layer_norm_backward(np.ascontiguousarray(dy), np.ascontiguousarray(x),
                                 np.ascontiguousarray(mu[:, 0]), np.ascontiguousarray(rs[:, 0]),
                                 _optional_array(weight, acc, n), dx_arr, dw_arr, db_arr)
        return (_result(sizes, dtype, device, dx_arr.reshape(sizes).astype(
                    dtype.numpy, copy=False), owned=True) if output_mask[0] else None,
                _result(normalized, weight._dtype, device, dw_arr.reshape(normalized).astype(
                    weight._dtype.numpy)) if want_w else None,
                _result(normalized, bias._dtype, device, db_arr.reshape(normalized).astype(
                    bias._dtype.numpy)) if want_b else None)
    xhat = x - mu
    xhat *= rs
    dx = dw = db = None
    if want_w:
        value = np.einsum("ij,ij->j", dy, xhat).reshape(normalized)
        dw = _result(normalized, weight._dtype, device, value.astype(weight._dtype.numpy))
    if want_b:
        value = dy.sum(axis=0).reshape(normalized)
        db = _result(normalized, bias._dtype, device, value.astype(bias._dtype.numpy))
    if output_mask[0]:
        g = dy * _array(weight, acc).reshape(n) if weight is not None else dy
        mean_g = _row_mean(g) if n else 0.0
        mean_gx = (np.einsum("ij,ij->i", g, xhat)[:, None] / n) if n else 0.0
        # (g - mean(g) - xhat * mean(g * xhat)) * rstd, built in xhat's buffer (fresh memory
        # is the expensive part here)
        value = xhat
        value *= -mean_gx
        value += g
        value -= mean_g
        value *= rs
        dx = _result(sizes, dtype, device, value.reshape(sizes).astype(dtype.numpy, copy=False),
                     owned=True)
    return dx, dw, db


@native
def rms_norm_symint(input: Tensor, normalized_shape, weight=None, eps=None) -> Tensor:
    a = _aten()
    axis = _layer_norm_checks(input, normalized_shape, weight, None)
    dims = list(range(axis, input.dim()))
    if eps is None:
        eps = float(np.finfo(_acc(input._dtype)).eps)
    upcast = input._dtype in (dt.float16, dt.bfloat16)
    x = a._to_copy.default(input, dtype=dt.float32) if upcast else input
    ms = a.mean.dim(a.mul.Tensor(x, x), dims, True)
    y = a.mul.Tensor(x, a.rsqrt.default(a.add.Scalar(ms, eps, 1)))
    if upcast:
        y = a._to_copy.default(y, dtype=input._dtype)
    if weight is not None:
        y = a.mul.Tensor(y, weight)
    return y


# --- batch norm ------------------------------------------------------------------------------


def _channels(input: Tensor) -> int:
    return input._sizes[1] if input.dim() > 1 else 1


def _batch_norm_checks(input, weight, bias, running_mean, running_var) -> int:
    c = _channels(input)
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    return c


def _ncl(x: np.ndarray, sizes: tuple) -> np.ndarray:
    """The input as (N, C, L): a view when the layout allows it."""
    n = sizes[0]
    c = sizes[1] if len(sizes) > 1 else 1
    return x.reshape(n, c, -1)


def _stat_shape(sizes: tuple) -> tuple:
    return (1, sizes[1] if len(sizes) > 1 else 1) + (1,) * max(len(sizes) - 2, 0)


def _batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    c = _batch_norm_checks(input, weight, bias, running_mean, running_var)
    sizes = tuple(input._sizes)
    dtype, device = input._dtype, input._device
    stat = (c,) if training else (0,)
    if _is_meta(input, weight, bias, running_mean, running_var):
        stat = (c,)  # PyTorch's meta function gives (C,) statistics in evaluation too
        return (new_row_major(sizes, dtype, device), new_row_major(stat, dtype, device),
                new_row_major(stat, dtype, device))
    _float_check("batch_norm_cpu", input)
    acc = _acc(dtype)
    x = _array(input, acc)
    shape = _stat_shape(sizes)
    reduce_axes = tuple(i for i in range(x.ndim) if i != 1) if x.ndim > 1 else (0,)
    count = x.size // c if c else 0
    if training:
        mean = quiet_call(np.mean, x, axis=reduce_axes, keepdims=True)
        xc = x - mean
        var = quiet_call(np.mean, xc * xc, axis=reduce_axes, keepdims=True)
        invstd = quiet_call(lambda: 1.0 / np.sqrt(var + acc.type(eps)))
        y = xc * invstd
        with_grad_off = (running_mean, running_var)
        if with_grad_off[0] is not None:
            rm = running_mean._numpy()
            assign(rm, (1 - momentum) * rm + momentum * mean.reshape(c))
        if with_grad_off[1] is not None:
            rv = running_var._numpy()
            unbiased = var.reshape(c) * (count / (count - 1)) if count > 1 else var.reshape(c)
            assign(rv, quiet_call(lambda: (1 - momentum) * rv + momentum * unbiased))
        save_mean = mean.reshape(c).astype(dtype.numpy)
        save_invstd = invstd.reshape(c).astype(dtype.numpy)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError(
                "running_mean and running_var must be defined in evaluation mode")
        mean = _array(running_mean, acc).reshape(shape)
        invstd = quiet_call(lambda: 1.0 / np.sqrt(_array(running_var, acc).reshape(shape)
                                                  + acc.type(eps)))
        y = (x - mean) * invstd
        save_mean = save_invstd = np.empty(0, dtype.numpy)
    if weight is not None:
        y *= _array(weight, acc).reshape(shape)
    if bias is not None:
        y += _array(bias, acc).reshape(shape)
    return (_result(sizes, dtype, device, y.astype(dtype.numpy, copy=False)),
            _result(stat, dtype, device, save_mean), _result(stat, dtype, device, save_invstd))


@native
def batch_norm_cpu(input, weight, bias, running_mean, running_var, training: bool,
                   momentum: float, eps: float) -> tuple:
    return _batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)


@native
def _batch_norm_legit_cpu(input, weight, bias, running_mean, running_var, training: bool,
                          momentum: float, eps: float) -> tuple:
    return _batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)


@native
def _batch_norm_legit_no_stats_cpu(input, weight, bias, training: bool, momentum: float,
                                   eps: float) -> tuple:
    return _batch_norm(input, weight, bias, None, None, True, momentum, eps)


@native
def batch_norm_backward_cpu(grad_out, input, weight, running_mean, running_var, save_mean,
                            save_invstd, train: bool, eps: float, output_mask) -> tuple:
    c = _channels(input)
    sizes = tuple(input._sizes)
    dtype, device = input._dtype, input._device
    wdtype = weight._dtype if weight is not None else dtype
    if _is_meta(grad_out, input, weight, save_mean, save_invstd):
        return (new_row_major(sizes, dtype, device) if output_mask[0] else None,
                new_row_major((c,), wdtype, device) if output_mask[1] else None,
                new_row_major((c,), wdtype, device) if output_mask[2] else None)
    acc = _acc(dtype)
    shape = _stat_shape(sizes)
    x = _array(input, acc)
    dy = _array(grad_out, acc)
    reduce_axes = tuple(i for i in range(x.ndim) if i != 1) if x.ndim > 1 else (0,)
    count = x.size // c if c else 0
    if train:
        mean = _array(save_mean, acc).reshape(shape)
        invstd = _array(save_invstd, acc).reshape(shape)
    else:
        mean = _array(running_mean, acc).reshape(shape)
        invstd = quiet_call(lambda: 1.0 / np.sqrt(_array(running_var, acc).reshape(shape)
                                                  + acc.type(eps)))
    xc = x - mean
    sum_dy = dy.sum(axis=reduce_axes, keepdims=True)
    dotp = (dy * xc).sum(axis=reduce_axes, keepdims=True)
    w = _array(weight, acc).reshape(shape) if weight is not None else acc.type(1)
    dx = dw = db = None
    if output_mask[0]:
        if train:
            k = dotp * invstd * invstd / count
            value = (dy - sum_dy / count - xc * k) * (invstd * w)
        else:
            value = dy * (invstd * w)
        dx = _result(sizes, dtype, device, value.astype(dtype.numpy, copy=False))
    if output_mask[1]:
        dw = _result((c,), wdtype, device, (dotp * invstd).reshape(c).astype(wdtype.numpy))
    if output_mask[2]:
        db = _result((c,), wdtype, device, sum_dy.reshape(c).astype(wdtype.numpy))
    return dx, dw, db


@native
def batch_norm(input, weight, bias, running_mean, running_var, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    a = _aten()
    if input.numel() == 0:
        # PyTorch: an empty batch gives an empty result; the statistics are untouched
        out = a.clone.default(input)
        if weight is not None:
            out = a.mul.Tensor(out, a.select.int(weight, 0, 0))
        if bias is not None:
            out = a.add.Tensor(out, a.select.int(bias, 0, 0), 1)
        return out
    # PyTorch's _batch_norm_impl_index allocates the (empty) cuDNN reserve before the kernel:
    # kept, so that a mode sees the calls torch makes.
    a.empty.memory_format([0], dt.uint8, None, input.device, None, None)
    return a.native_batch_norm.default(input, weight, bias, running_mean, running_var,
                                       training, momentum, eps)[0]


@native
def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats: bool,
                  momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    a = _aten()
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError(
            "Expected running_mean and running_var to be defined when use_input_stats is false")
    sizes = list(input._sizes)
    b, c = sizes[0], sizes[1]
    shape = [1, b * c] + sizes[2:]
    weight_ = a.repeat.default(weight, [b]) if weight is not None else None
    bias_ = a.repeat.default(bias, [b]) if bias is not None else None
    mean_ = a.repeat.default(running_mean, [b]) if running_mean is not None else None
    var_ = a.repeat.default(running_var, [b]) if running_var is not None else None
    x = a.reshape.default(a.contiguous.default(input), shape)
    out = batch_norm(x, weight_, bias_, mean_, var_, use_input_stats, momentum, eps,
                     cudnn_enabled)
    if running_mean is not None and use_input_stats:
        a.copy_.default(running_mean, a.mean.dim(a.reshape.default(mean_, [b, c]), [0], False))
        a.copy_.default(running_var, a.mean.dim(a.reshape.default(var_, [b, c]), [0], False))
    return a.reshape.default(out, sizes)


# --- group norm ------------------------------------------------------------------------------


def _group_norm_checks(input: Tensor, num_groups: int, weight, bias, c: int) -> None:
    if num_groups <= 0:
        raise RuntimeError(f"Expected num groups to be greater than 0, got {num_groups}")
    if c % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {_shape_text(input._sizes)} and num_groups={num_groups}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            # PyTorch's bias message shows the weight's shape ([0] without a weight)
            shown = weight._sizes if weight is not None else (0,)
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {_shape_text(shown)} and input of shape "
                f"{_shape_text(input._sizes)}"
            )


def _native_group_norm(input, weight, bias, n, c, hxw, group, eps) -> tuple:
    _group_norm_checks(input, group, weight, bias, c)
    if input.numel() != n * c * hxw:
        raise RuntimeError(
            f"Expected input of {n * c * hxw} elements (N={n}, C={c}, HxW={hxw}), got "
            f"{input.numel()}")
    sizes = tuple(input._sizes)
    dtype, device = input._dtype, input._device
    if _is_meta(input, weight, bias):
        return (new_row_major(sizes, dtype, device), new_row_major((n, group), dtype, device),
                new_row_major((n, group), dtype, device))
    _float_check("GroupNormKernelImpl", input)
    acc = _acc(dtype)
    x = _array(input, acc).reshape(n, group, -1)
    d = x.shape[2]
    mean = x.mean(axis=2, keepdims=True) if d else np.full((n, group, 1), np.nan, acc)
    xc = x - mean
    var = np.einsum("ngd,ngd->ng", xc, xc)[:, :, None] / d if d else mean
    rstd = quiet_call(lambda: 1.0 / np.sqrt(var + acc.type(eps)))
    y = (xc * rstd).reshape(n, c, hxw)
    if weight is not None:
        y *= _array(weight, acc).reshape(1, c, 1)
    if bias is not None:
        y += _array(bias, acc).reshape(1, c, 1)
    return (_result(sizes, dtype, device, y.reshape(sizes).astype(dtype.numpy, copy=False)),
            _result((n, group), dtype, device, mean.reshape(n, group).astype(dtype.numpy)),
            _result((n, group), dtype, device, rstd.reshape(n, group).astype(dtype.numpy)))


@native
def native_group_norm(input, weight, bias, N: int, C: int, HxW: int, group: int,
                      eps: float) -> tuple:
    return _native_group_norm(input, weight, bias, N, C, HxW, group, eps)


@native
def math_group_norm(input, weight, bias, N: int, C: int, HxW: int, group: int,
                    eps: float) -> tuple:
    return _native_group_norm(input, weight, bias, N, C, HxW, group, eps)


@native
def native_group_norm_backward(grad_out, input, mean, rstd, weight, N: int, C: int, HxW: int,
                               group: int, output_mask) -> tuple:
    sizes = tuple(input._sizes)
    dtype, device = input._dtype, input._device
    wdtype = weight._dtype if weight is not None else dtype
    if _is_meta(grad_out, input, mean, rstd, weight):
        return (new_row_major(sizes, dtype, device) if output_mask[0] else None,
                new_row_major((C,), wdtype, device) if output_mask[1] else None,
                new_row_major((C,), wdtype, device) if output_mask[2] else None)
    acc = _acc(dtype)
    n, c, g = N, C, group
    x = _array(input, acc).reshape(n, g, -1)
    dy = _array(grad_out, acc).reshape(n, c, HxW)
    rs = _array(rstd, acc).reshape(n, g, 1)
    xhat = (x - _array(mean, acc).reshape(n, g, 1)) * rs
    dx = dw = db = None
    if output_mask[0]:
        gy = dy * _array(weight, acc).reshape(1, c, 1) if weight is not None else dy
        gy = gy.reshape(n, g, -1)
        d = gy.shape[2]
        mean_g = gy.mean(axis=2, keepdims=True) if d else 0.0
        mean_gx = np.einsum("ngd,ngd->ng", gy, xhat)[:, :, None] / d if d else 0.0
        value = ((gy - mean_g - xhat * mean_gx) * rs).reshape(sizes)
        dx = _result(sizes, dtype, device, value.astype(dtype.numpy, copy=False))
    if output_mask[1]:
        value = np.einsum("ncl,ncl->c", dy, xhat.reshape(n, c, HxW))
        dw = _result((c,), wdtype, device, value.astype(wdtype.numpy))
    if output_mask[2]:
        db = _result((c,), wdtype, device, dy.sum(axis=(0, 2)).astype(wdtype.numpy))
    return dx, dw, db


@native
def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:
    a = _aten()
    sizes = list(input._sizes)
    n = sizes[0]
    c = sizes[1] if len(sizes) > 1 else 1
    _group_norm_checks(input, num_groups, weight, bias, c)
    hxw = math.prod(sizes[2:])
    out = a.native_group_norm.default(a.contiguous.default(input), weight, bias, n, c, hxw,
                                      num_groups, eps)[0]
    return a.view.default(out, sizes)


# --- dropout ---------------------------------------------------------------------------------


@native
def native_dropout_cpu(input: Tensor, p: float, train) -> tuple:
    sizes = tuple(input._sizes)
    dtype, device = input._dtype, input._device
    if _is_meta(input):
        return new_row_major(sizes, dtype, device), new_row_major(sizes, dt.bool, device)
    if input.numel() == 0:
        return input, new_row_major(sizes, dt.bool, device)
    if train is None or train:
        keep = 1.0 - p
        scale = 0.0 if keep == 0 else 1.0 / keep
        # PyTorch's mask: bernoulli_(1 - p) on a contiguous tensor (random_draws.py)
        mask = bernoulli_double(resolve_generator(None, device), math.prod(sizes), keep)
        mask = mask.reshape(sizes)
        acc = _acc(dtype)
        value = _array(input, acc) * mask * acc.type(scale)
        return (_result(sizes, dtype, device, value.astype(dtype.numpy, copy=False)),
                _result(sizes, dt.bool, device, mask))
    out = _aten().clone.default(input)
    return out, _result(sizes, dt.bool, device, np.ones(sizes, bool))


@native
def native_dropout_backward(grad_output: Tensor, mask: Tensor, scale: float) -> Tensor:
    if mask._dtype is not dt.bool:
        raise RuntimeError(f"Mask should be Bool Scalar Type{mask._dtype.scalar_name}")
    a = _aten()
    return a.mul.Scalar(a.mul.Tensor(grad_output, mask), scale)


def _dropout_impl(input: Tensor, p: float, train: bool, feature: bool, alpha: bool,
                  inplace: bool) -> Tensor:
    a = _aten()
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if feature and input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 0 or not train or input.numel() == 0:
        return input
    mul = a.mul_.Tensor if inplace else a.mul.Tensor
    if p == 1:
        return mul(input, a.zeros.default([], dtype=input._dtype, device=input._device))
    if feature:
        sizes = list(input._sizes[:2]) + [1] * (input.dim() - 2)
        noise = a.new_empty.default(input, sizes)  # (batched under vmap: torch's new_empty)
    else:
        noise = a.empty_like.default(input)
    a.bernoulli_.float(noise, 1 - p)
    if alpha:
        alpha_ = 1.7580993408473766
        k = 1.0 / math.sqrt((alpha_ * alpha_ * p + 1) * (1 - p))
        b = a.add.Scalar(a.mul.Scalar(a.add.Scalar(noise, -1, 1), alpha_ * k), alpha_ * k * p,
                         1)
        a.mul_.Scalar(noise, k)
        out = mul(input, noise)
        return a.add_.Tensor(out, b, 1) if inplace else a.add.Tensor(out, b, 1)
    a.div_.Scalar(noise, 1 - p)
    return mul(input, noise)


@native
def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    return _dropout_impl(input, p, train, False, False, False)


@native
def dropout_(self: Tensor, p: float, train: bool) -> Tensor:
    return _dropout_impl(self, p, train, False, False, True)


@native
def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    return _dropout_impl(input, p, train, True, False, False)


@native
def feature_dropout_(self: Tensor, p: float, train: bool) -> Tensor:
    return _dropout_impl(self, p, train, True, False, True)


@native
def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    return _dropout_impl(input, p, train, False, True, False)


@native
def alpha_dropout_(self: Tensor, p: float, train: bool) -> Tensor:
    return _dropout_impl(self, p, train, False, True, True)


@native
def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    return _dropout_impl(input, p, train, True, True, False)


@native
def feature_alpha_dropout_(self: Tensor, p: float, train: bool) -> Tensor:
    return _dropout_impl(self, p, train, True, True, True)
