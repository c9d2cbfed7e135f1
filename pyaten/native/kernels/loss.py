"""Loss operators PyTorch declares with kernels: `mse_loss`, `smooth_l1_loss`, `huber_loss`,
`nll_loss_forward`/`nll_loss2d_forward`, `binary_cross_entropy`, `soft_margin_loss`,
`multi_margin_loss`, `multilabel_margin_loss_forward`, their backward helper operators, and
the composites PyTorch writes in C++ (`cross_entropy_loss`, `nll_loss_nd`, `l1_loss`,
`kl_div`, `binary_cross_entropy_with_logits`, ...).

`reduction` is PyTorch's enum: 0 none, 1 mean, 2 sum. Every kernel is one vectorised NumPy
computation over the whole batch (float16/bfloat16 in float32, rounded once on write); the
Meta key runs the same checks and only shapes the outputs. The composites call other
operators through `aten_ops()`, so their gradients come from those operators.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.broadcast import new_row_major
from pyaten.core.creation import share_array
from pyaten.core.promotion import promote_types
from pyaten.core.tensor import Tensor
from pyaten.native import fastpath
from pyaten.native.family import FLOATING_AND_REDUCED, unsupported_dtype
from pyaten.native.kernels.copy import assign
from pyaten.native.kernels.shape import format_shape
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import broadcast_shapes, quiet_call, resize_output

NONE, MEAN, SUM = 0, 1, 2


def _acc(dtype: dt.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype in (dt.float16, dt.bfloat16) else dtype.numpy


def _array(t: Tensor, dtype: np.dtype) -> np.ndarray:
    arr = t._numpy()
    return arr if arr.dtype == dtype else arr.astype(dtype)


def _reduce(loss: np.ndarray, reduction: int) -> np.ndarray:
    if reduction == MEAN:
        return quiet_call(np.mean, loss) if loss.size else np.array(np.nan, loss.dtype)
    if reduction == SUM:
        return np.sum(loss)
    return loss


def _is_meta(*tensors: Tensor | None) -> bool:
    return any(t is not None and t._device.type == "meta" for t in tensors)


def _new(sizes: tuple, dtype: dt.dtype, device, value: np.ndarray | None) -> Tensor:
    sizes = tuple(sizes)
    if (isinstance(value, np.ndarray) and value.base is None and value.shape == sizes
            and value.dtype == dtype.numpy and value.flags.c_contiguous
            and value.flags.writeable and device.type == "cpu"):
        return share_array(value, dtype)  # a fresh result: the tensor takes it over
    out = new_row_major(sizes, dtype, device)
    if value is not None and out.numel():
        assign(out._numpy(), np.broadcast_to(np.asarray(value), tuple(sizes)))
    return out


def _store(out: Tensor, value: np.ndarray | None) -> None:
    if value is None:
        return
    target = out._numpy()
    if target.size:
        value = np.asarray(value)
        if value.dtype == target.dtype:
            np.copyto(target, value)  # broadcasts; nothing to cast (a loss's common case)
        else:
            assign(target, np.broadcast_to(value, target.shape))


def _into(out: Tensor, sizes: tuple, dtype: dt.dtype, value: np.ndarray | None,
          name: str) -> Tensor:
    """An unstructured out= variant's write: PyTorch's dtype check, resize, then the values."""
    if out._dtype is not dtype:
        raise RuntimeError(
            f"Expected out tensor to have dtype {dtype.cpp_name}, but got {out._dtype.cpp_name} "
            "instead"
        )
    resize_output(out, tuple(sizes), name)
    if out._device.type != "meta":
        _store(out, value)
    out._version_counter.value += 1
    return out


def _reduced_shape(shape: tuple, reduction: int) -> tuple:
    return shape if reduction == NONE else ()


def _float_check(name: str, *tensors: Tensor) -> None:
    for t in tensors:
        if t._dtype not in FLOATING_AND_REDUCED:
            raise unsupported_dtype(name, t._dtype)


# --- elementwise losses: mse, smooth_l1, huber ----------------------------------------------


def _pointwise_meta(op, self: Tensor, target: Tensor, reduction: int, name: str) -> None:
    if reduction == NONE:
        op.build_binary_op(self, target)
    else:
        # plan the broadcast on a scratch output, then give the caller's a 0-dim result
        # (ATen resizes it to [] directly: no resize warning for the broadcast shape)
        given, kind = op.outputs[0], op.kind
        op.outputs[0], op.kind = None, "functional"
        try:
            op.build_binary_op(self, target)
        finally:
            op.outputs[0], op.kind = given, kind
        op.set_output(0, (), op.common_dtype, op.device)
    if op.common_dtype not in FLOATING_AND_REDUCED and not _is_meta(self):
        raise unsupported_dtype(name, op.common_dtype)


def _pointwise_impl(op, reduction: int, loss_fn, out: Tensor) -> None:
    if out._device.type == "meta":
        return
    x, t = op.input_arrays()
    loss = quiet_call(loss_fn, x, t)
    if reduction == NONE:
        op.write(loss)
    else:
        value = _reduce(np.broadcast_to(loss, op.shape), reduction)
        _store(out, np.asarray(value).astype(op.common_dtype.numpy))


@native
def meta_mse_loss(op, self: Tensor, target: Tensor, reduction: int) -> None:
    _pointwise_meta(op, self, target, reduction, "mse_cpu")


@native
def mse_loss_out(op, self: Tensor, target: Tensor, reduction: int, out: Tensor) -> None:
    _pointwise_impl(op, reduction, lambda x, t: (x - t) * (x - t), out)


def _smooth_l1(beta: float):
    def loss(x: np.ndarray, t: np.ndarray) -> np.ndarray:
        z = np.abs(x - t)
        if beta == 0:
            return z
        return np.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta)
    return loss


@native
def meta_smooth_l1_loss(op, self: Tensor, target: Tensor, reduction: int, beta: float) -> None:
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _pointwise_meta(op, self, target, reduction, "smooth_l1_cpu")


@native
def smooth_l1_loss_out(op, self: Tensor, target: Tensor, reduction: int, beta: float,
                       out: Tensor) -> None:
    _pointwise_impl(op, reduction, _smooth_l1(beta), out)


def _huber(delta: float):
    def loss(x: np.ndarray, t: np.ndarray) -> np.ndarray:
        z = np.abs(x - t)
        return np.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta))
    return loss


def _binary_forward(self: Tensor, target: Tensor, reduction: int, name: str, loss_fn,
                    out: Tensor | None = None) -> Tensor:
    shape = broadcast_shapes(name, tuple(self._sizes), tuple(target._sizes))
    dtype = promote_types(self._dtype, target._dtype)
    if dtype not in FLOATING_AND_REDUCED:
        raise unsupported_dtype(name, dtype)
    value = None
    if not _is_meta(self, target):
        acc = _acc(dtype)
        loss = quiet_call(loss_fn, _array(self, acc), _array(target, acc))
        value = _reduce(np.broadcast_to(loss, shape), reduction)
    sizes = _reduced_shape(shape, reduction)
    if out is not None:
        return _into(out, sizes, dtype, value, name)
    return _new(sizes, dtype, self._device, value)


@native
def huber_loss(self: Tensor, target: Tensor, reduction: int, delta: float) -> Tensor:
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    return _binary_forward(self, target, reduction, "huber_cpu", _huber(delta))


@native
def huber_loss_out(self: Tensor, target: Tensor, reduction: int, delta: float,
                   out: Tensor) -> Tensor:
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    return _binary_forward(self, target, reduction, "huber_cpu", _huber(delta), out)


def _backward(grad_output: Tensor, self: Tensor, target: Tensor, reduction: int, name: str,
              grad_fn, out: Tensor | None = None) -> Tensor:
    """grad_input = grad_fn(grad, x, t, norm) over the three tensors broadcast together."""
    shape = broadcast_shapes(name, tuple(grad_output._sizes), tuple(self._sizes),
                             tuple(target._sizes))
    dtype = promote_types(promote_types(grad_output._dtype, self._dtype), target._dtype)
    if dtype not in FLOATING_AND_REDUCED:
        raise unsupported_dtype(name, dtype)
    value = None
    if not _is_meta(grad_output, self, target):
        acc = _acc(dtype)
        norm = 1.0 / max(self.numel(), 1) if reduction == MEAN else 1.0
        g, x, t = _array(grad_output, acc), _array(self, acc), _array(target, acc)
        value = quiet_call(grad_fn, g, x, t, norm)
    if out is not None:
        return _into(out, shape, dtype, value, name)
    return _new(shape, dtype, self._device, value)


def _mse_grad(g, x, t, norm):
    return 2.0 * norm * (x - t) * g


@native
def mse_loss_backward(grad_output: Tensor, self: Tensor, target: Tensor,
                      reduction: int) -> Tensor:
    return _backward(grad_output, self, target, reduction, "mse_backward_cpu", _mse_grad)


@native
def mse_loss_backward_out(grad_output: Tensor, self: Tensor, target: Tensor, reduction: int,
                          grad_input: Tensor) -> Tensor:
    return _backward(grad_output, self, target, reduction, "mse_backward_cpu", _mse_grad,
                     grad_input)


def _smooth_l1_grad(beta: float):
    def grad(g, x, t, norm):
        d = x - t
        if beta == 0:
            return norm * np.sign(d) * g
        return norm * np.where(d < -beta, -1.0, np.where(d > beta, 1.0, d / beta)) * g
    return grad


@native
def smooth_l1_loss_backward_out(grad_output: Tensor, self: Tensor, target: Tensor,
                                reduction: int, beta: float, grad_input: Tensor) -> Tensor:
    return _backward(grad_output, self, target, reduction, "smooth_l1_backward_cpu_out",
                     _smooth_l1_grad(beta), grad_input)


@native
def smooth_l1_loss_backward(grad_output: Tensor, self: Tensor, target: Tensor,
                            reduction: int, beta: float) -> Tensor:
    grad_input = _aten().zeros_like.default(self, None, None, None, None, None)
    return _aten().smooth_l1_loss_backward.grad_input(
        grad_output, self, target, reduction, beta, grad_input
    )


def _huber_grad(delta: float):
    def grad(g, x, t, norm):
        d = x - t
        return norm * np.where(d < -delta, -delta, np.where(d > delta, delta, d)) * g
    return grad


@native
def huber_loss_backward_out(grad_output: Tensor, self: Tensor, target: Tensor,
                            reduction: int, delta: float, grad_input: Tensor) -> Tensor:
    return _backward(grad_output, self, target, reduction, "huber_backward_cpu_out",
                     _huber_grad(delta), grad_input)


@native
def huber_loss_backward(grad_output: Tensor, self: Tensor, target: Tensor, reduction: int,
                        delta: float) -> Tensor:
    grad_input = _aten().zeros_like.default(self, None, None, None, None, None)
    return _aten().huber_loss_backward.out(
        grad_output, self, target, reduction, delta, grad_input
    )


# --- binary cross entropy -------------------------------------------------------------------


def _bce_checks(self: Tensor, target: Tensor, name: str) -> tuple:
    if self._dtype not in FLOATING_AND_REDUCED:
        raise unsupported_dtype(name, self._dtype)
    if target._dtype is not self._dtype:
        raise RuntimeError(
            f"Found dtype {target._dtype.scalar_name} but expected {self._dtype.scalar_name}"
        )
    return broadcast_shapes(name, tuple(self._sizes), tuple(target._sizes))


def _bce(self: Tensor, target: Tensor, weight: Tensor | None, reduction: int,
         out: Tensor | None = None) -> Tensor:
    shape = _bce_checks(self, target, "binary_cross_entropy")
    if weight is not None:
        shape = broadcast_shapes("binary_cross_entropy", shape, tuple(weight._sizes))
    value = None
    if not _is_meta(self, target, weight):
        acc = _acc(self._dtype)
        x, t = _array(self, acc), _array(target, acc)
        if not np.all((x >= 0) & (x <= 1)):
            raise RuntimeError("all elements of input should be between 0 and 1")

        def run() -> np.ndarray:
            loss = (t - 1) * np.maximum(np.log1p(-x), -100) - t * np.maximum(np.log(x), -100)
            if weight is not None:
                loss = loss * _array(weight, acc)
            return _reduce(np.broadcast_to(loss, shape), reduction)

        value = quiet_call(run)
    sizes = _reduced_shape(shape, reduction)
    if out is not None:
        return _into(out, sizes, self._dtype, value, "binary_cross_entropy")
    return _new(sizes, self._dtype, self._device, value)


@native
def binary_cross_entropy_cpu(self: Tensor, target: Tensor, weight: Tensor | None,
                             reduction: int) -> Tensor:
    return _bce(self, target, weight, reduction)


@native
def binary_cross_entropy_out_cpu(self: Tensor, target: Tensor, weight: Tensor | None,
                                 reduction: int, out: Tensor) -> Tensor:
    return _bce(self, target, weight, reduction, out)


def _bce_backward(grad_output: Tensor, self: Tensor, target: Tensor, weight: Tensor | None,
                  reduction: int, out: Tensor | None = None) -> Tensor:
    name = "binary_cross_entropy_backward"
    shape = _bce_checks(self, target, name)
    shape = broadcast_shapes(name, shape, tuple(grad_output._sizes))
    if weight is not None:
        shape = broadcast_shapes(name, shape, tuple(weight._sizes))
    value = None
    if not _is_meta(grad_output, self, target, weight):
        acc = _acc(self._dtype)
        x, t, g = _array(self, acc), _array(target, acc), _array(grad_output, acc)

        def run() -> np.ndarray:
            grad = g * (x - t) / np.maximum((1 - x) * x, 1e-12)
            if weight is not None:
                grad = grad * _array(weight, acc)
            if reduction == MEAN:
                grad = grad / max(self.numel(), 1)
            return grad

        value = quiet_call(run)
    if out is not None:
        return _into(out, shape, self._dtype, value, name)
    return _new(shape, self._dtype, self._device, value)


@native
def binary_cross_entropy_backward_cpu(grad_output: Tensor, self: Tensor, target: Tensor,
                                      weight: Tensor | None, reduction: int) -> Tensor:
    return _bce_backward(grad_output, self, target, weight, reduction)


@native
def binary_cross_entropy_backward_out_cpu(grad_output: Tensor, self: Tensor, target: Tensor,
                                          weight: Tensor | None, reduction: int,
                                          grad_input: Tensor) -> Tensor:
    return _bce_backward(grad_output, self, target, weight, reduction, grad_input)


def _apply_reduction(loss: Tensor, reduction: int) -> Tensor:
    if reduction == MEAN:
        return _aten().mean.default(loss, None)
    if reduction == SUM:
        return _aten().sum.default(loss, None)
    return loss


@native
def binary_cross_entropy_with_logits(self: Tensor, target: Tensor, weight: Tensor | None,
                                     pos_weight: Tensor | None, reduction: int) -> Tensor:
    # (1 - target) * x - log_weight * log_sigmoid(x), log_sigmoid(x) = min(x, 0) - log1p(e^-|x|)
    a = _aten()
    log_sigmoid = a.sub.Tensor(
        a.clamp_max.default(self, 0), a.log1p.default(a.exp.default(a.neg.default(
            a.abs.default(self)))), 1
    )
    if pos_weight is not None:
        log_weight = a.add.Scalar(a.mul.Tensor(a.sub.Scalar(pos_weight, 1, 1), target), 1, 1)
        log_sigmoid = a.mul.Tensor(log_sigmoid, log_weight)
    loss = a.sub.Tensor(a.mul.Tensor(a.rsub.Scalar(target, 1, 1), self), log_sigmoid, 1)
    if weight is not None:
        loss = a.mul.Tensor(loss, weight)
    return _apply_reduction(loss, reduction)


@native
def soft_margin_loss(self: Tensor, target: Tensor, reduction: int) -> Tensor:
    # log(1 + exp(-target * self))
    a = _aten()
    loss = a.log1p.default(a.exp.default(a.mul.Tensor(a.neg.default(target), self)))
    return _apply_reduction(loss, reduction)


@native
def soft_margin_loss_out(self: Tensor, target: Tensor, reduction: int, out: Tensor) -> Tensor:
    result = soft_margin_loss(self, target, reduction)
    resize_output(out, tuple(result._sizes), "soft_margin_loss")
    return _aten().copy_.default(out, result, False)


@native
def soft_margin_loss_backward(grad_output: Tensor, self: Tensor, target: Tensor,
                              reduction: int) -> Tensor:
    # -target * exp(-target * self) / (1 + exp(-target * self)) * grad (/ numel for mean)
    a = _aten()
    z = a.exp.default(a.mul.Tensor(a.neg.default(target), self))
    grad = a.div.Tensor(a.mul.Tensor(a.neg.default(target), z), a.add.Scalar(z, 1, 1))
    if reduction == MEAN:
        grad = a.div.Scalar(grad, max(self.numel(), 1))
    return a.mul.Tensor(grad, grad_output)


@native
def soft_margin_loss_backward_out(grad_output: Tensor, self: Tensor, target: Tensor,
                                  reduction: int, grad_input: Tensor) -> Tensor:
    result = soft_margin_loss_backward(grad_output, self, target, reduction)
    resize_output(grad_input, tuple(result._sizes), "soft_margin_loss_backward")
    return _aten().copy_.default(grad_input, result, False)


# --- nll_loss -------------------------------------------------------------------------------


def _check_target_dtype(target: Tensor) -> None:
    if target._dtype not in (dt.int64, dt.uint8):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {target._dtype.scalar_name}"
        )


_min_reduce, _max_reduce, _sum_reduce = np.minimum.reduce, np.maximum.reduce, np.add.reduce
_ROWS: dict[int, np.ndarray] = {}


def _rows(n: int) -> np.ndarray:
    """np.arange(n), read-only and kept (the row index of every batched pick)."""
    found = _ROWS.get(n)
    if found is None:
        found = np.arange(n)
        found.flags.writeable = False
        if len(_ROWS) < 256:
            _ROWS[n] = found
    return found


def _nll_meta_checks(self: Tensor, target: Tensor, weight: Tensor | None) -> None:
    if not 0 < self.dim() <= 2:
        raise RuntimeError("input tensor should be 1D or 2D")
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    no_batch_dim = self.dim() == 1 and target.dim() == 0
    if not (no_batch_dim or self._sizes[0] == target._sizes[0]):
        raise RuntimeError(
            f"size mismatch (got input: {format_shape(self._sizes)}, target: "
            f"{format_shape(target._sizes)})"
        )
    n_classes = self._sizes[-1]
    if weight is not None and not (weight.dim() <= 1 and weight.numel() == n_classes):
        raise RuntimeError(
            f"weight tensor should be defined either for all {n_classes} classes or no "
            f"classes but got weight tensor of shape: {format_shape(weight._sizes)}"
        )


def _classes(self: Tensor, target: Tensor, ignore_index: int, class_axis: int) -> tuple:
    """(targets with ignored ones at 0, the mask of counted ones); out-of-range ones raise."""
    _check_target_dtype(target)
    t = target._numpy()
    n_classes = self._sizes[class_axis] if self.dim() else 1
    if t.size and t.dtype == np.int64:
        # The common case in two reductions: every target a class and none ignored (then
        # `valid` is True for all, as a NumPy bool, and `t` is the targets themselves).
        low, high = _min_reduce(t, None), _max_reduce(t, None)
        if 0 <= low and high < n_classes and not low <= ignore_index <= high:
            return t, np.True_
    t = t.astype(np.int64)
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= n_classes))
    if bad.any():
        raise IndexError(f"Target {int(t[bad].flat[0])} is out of bounds.")
    return np.where(valid, t, 0), valid


def _nll_compute(self: Tensor, target: Tensor, weight: Tensor | None, reduction: int,
                 ignore_index: int, class_axis: int) -> tuple:
    if self._dtype not in FLOATING_AND_REDUCED:
        raise unsupported_dtype("nll_loss_out_frame" if class_axis != 1 or self.dim() < 3
                                else "nll_loss2d_forward_out_frame", self._dtype)
    t, valid = _classes(self, target, ignore_index, class_axis)
    acc = _acc(self._dtype)
    x = _array(self, acc)
    if x.ndim == 1 and t.ndim == 0:
        picked = x[t]
    elif x.ndim == 2:
        picked = x[_rows(x.shape[0]), t]
    else:
        picked = np.take_along_axis(np.moveaxis(x, class_axis, -1), t[..., None], -1)[..., 0]
    all_valid = bool(valid.all())
    if weight is None and all_valid:
        losses, w = -picked, None
    else:
        w = _array(weight, acc).reshape(-1)[t] if weight is not None else np.ones(t.shape, acc)
        w = np.where(valid, w, 0).astype(acc)
        losses = np.where(valid, -picked * w, 0).astype(acc)
    if reduction == NONE:
        return losses, np.zeros((), acc)
    total = np.asarray(t.size, acc) if w is None else _sum_reduce(w, None)
    if reduction == SUM:
        return _sum_reduce(losses, None), total
    return quiet_call(np.divide, _sum_reduce(losses, None), total), total


@native
def meta_nll_loss_forward(op, self: Tensor, target: Tensor, weight: Tensor | None,
                          reduction: int, ignore_index: int) -> None:
    _nll_meta_checks(self, target, weight)
    sizes = (self._sizes[0],) if reduction == NONE and self.dim() == 2 else ()
    op.set_output(0, sizes, self._dtype, self._device)
    op.set_output(1, (), self._dtype, self._device)


_NLL_FAST_DTYPES = (dt.float32, dt.float64)


def _fast_nll_loss_forward(self: Tensor, target: Tensor, weight: Tensor | None,
                           reduction: int, ignore_index: int) -> tuple | None:
    """nll_loss_forward's fast path (Note: the structured fast path, in native/fastpath.py):
    a 2-d float32/float64 CPU input with rows, 1-d int64 targets of its batch size each a
    class, an ignore_index no class has, no weight, a mean or sum. Meta's checks hold by these
    conditions; the values are those of `_nll_compute`'s common case, with the same NumPy
    calls; anything else returns None (the general path, its errors included)."""
    sizes = self._sizes
    if (weight is not None or reduction == NONE or self._dtype not in _NLL_FAST_DTYPES
            or target._dtype is not dt.int64 or len(sizes) != 2 or len(target._sizes) != 1
            or not sizes[0] or sizes[0] != target._sizes[0] or self._device.type != "cpu"
            or target._device.type != "cpu"):
        return None
    n_classes = sizes[1]
    if 0 <= ignore_index < n_classes:
        return None  # a target may be ignored: the general path's mask
    t = fastpath.array(target)
    if _max_reduce(t.view(np.uint64), None) >= n_classes:  # negative ones are large here
        return None  # the general path raises the error
    x = fastpath.array(self)
    picked = x[_rows(sizes[0]), t]
    loss = _sum_reduce(np.negative(picked, out=picked), None)
    total = x.dtype.type(sizes[0])
    if reduction != SUM:  # the mean, as `_nll_compute`'s
        loss = loss / total  # a count of at least one: no warning to silence
    output = new_row_major((), self._dtype, self._device)
    total_weight = new_row_major((), self._dtype, self._device)
    fastpath.array(output)[()] = loss
    fastpath.array(total_weight)[()] = total
    return output, total_weight


fastpath.register("nll_loss_forward", _fast_nll_loss_forward, None, __file__)


@native
def nll_loss_forward_out_cpu(op, self: Tensor, target: Tensor, weight: Tensor | None,
                             reduction: int, ignore_index: int, output: Tensor,
                             total_weight: Tensor) -> None:
    loss, total = _nll_compute(self, target, weight, reduction, ignore_index, self.dim() - 1)
    _store(output, loss)
    _store(total_weight, total)


def _nll_grad(grad_output: Tensor, self: Tensor, target: Tensor, weight: Tensor | None,
              reduction: int, ignore_index: int, total_weight: Tensor,
              class_axis: int, into: np.ndarray | None = None) -> np.ndarray:
    """The gradient, written into `into` (zeroed first) when it is given."""
    t, valid = _classes(self, target, ignore_index, class_axis)
    acc = _acc(self._dtype)
    g = _array(grad_output, acc)
    if reduction == MEAN:
        g = quiet_call(np.divide, g, _array(total_weight, acc))
    if weight is None and valid is np.True_:
        values = np.negative(g)  # every target counted with weight 1: -g, broadcast below
    else:
        w = _array(weight, acc).reshape(-1)[t] if weight is not None else np.ones(t.shape, acc)
        values = np.where(valid, -w * g, 0).astype(acc)
    if into is None:
        grad = np.zeros(tuple(self._sizes), acc)
    else:
        grad = into
        grad.fill(0)
    if grad.ndim == 1 and t.ndim == 0:
        grad[t] = values
    elif grad.ndim == 2:
        grad[_rows(grad.shape[0]), t] = values
    else:
        np.put_along_axis(np.moveaxis(grad, class_axis, -1), t[..., None],
                          np.broadcast_to(values, t.shape)[..., None], -1)
    return grad


@native
def meta_nll_loss_backward(op, grad_output: Tensor, self: Tensor, target: Tensor,
                           weight: Tensor | None, reduction: int, ignore_index: int,
                           total_weight: Tensor) -> None:
    _nll_meta_checks(self, target, weight)
    if total_weight.numel() != 1:
        raise RuntimeError(
            "expected total_weight to be a single element tensor, got: "
            f"{format_shape(total_weight._sizes)} ({total_weight.numel()} elements)"
        )
    if reduction == NONE and self.dim() == 2:
        if grad_output.dim() != 1 or grad_output._sizes[0] != self._sizes[0]:
            raise RuntimeError(
                f"Expected a tensor of dimension 1 and tensor.size[0] == {self._sizes[0]} but "
                f"got: dimension {grad_output.dim()} and tensor.size[0] == "
                f"{grad_output._sizes[0] if grad_output.dim() else 1}"
            )
    elif grad_output.dim() > 1 or grad_output.numel() != 1:
        raise RuntimeError(
            "Expected a single element grad_output tensor, but got: "
            f"{format_shape(grad_output._sizes)}"
        )
    op.set_output(0, tuple(self._sizes), self._dtype, self._device)


def _fast_nll_loss_backward(grad_output: Tensor, self: Tensor, target: Tensor,
                            weight: Tensor | None, reduction: int, ignore_index: int,
                            total_weight: Tensor) -> Tensor | None:
    """nll_loss_backward's fast path (Note: the structured fast path, in native/fastpath.py):
    a 0-dim gradient of a mean or sum, a non-empty 2-d float32/float64 CPU input, 1-d int64
    targets of its batch size, no weight, a 0-dim total weight. Meta's checks hold by these
    conditions; the gradient is `_nll_grad`'s, written into a new row-major result as the
    general path writes it."""
    sizes = self._sizes
    if (weight is not None or reduction == NONE or self._dtype not in _NLL_FAST_DTYPES
            or target._dtype is not dt.int64 or len(sizes) != 2 or len(target._sizes) != 1
            or not sizes[0] or not sizes[1] or sizes[0] != target._sizes[0]
            or grad_output._sizes or total_weight._sizes or self._device.type != "cpu"
            or target._device.type != "cpu" or grad_output._device.type != "cpu"
            or total_weight._device.type != "cpu"):
        return None
    grad_input = new_row_major(tuple(sizes), self._dtype, self._device)
    _nll_grad(grad_output, self, target, None, reduction, ignore_index, total_weight, 1,
              fastpath.array(grad_input))
    return grad_input


fastpath.register("nll_loss_backward", _fast_nll_loss_backward, None, __file__)


@native
def nll_loss_backward_out_cpu(op, grad_output: Tensor, self: Tensor, target: Tensor,
                              weight: Tensor | None, reduction: int, ignore_index: int,
                              total_weight: Tensor, grad_input: Tensor) -> None:
    if grad_input.numel() == 0:
        return
    into = grad_input._numpy()
    if into.dtype != _acc(self._dtype) or not into.flags.c_contiguous:
        into = None
    grad = _nll_grad(grad_output, self, target, weight, reduction, ignore_index, total_weight,
                     self.dim() - 1, into)
    if into is None:
        _store(grad_input, grad)


def _nll2d_checks(self: Tensor, target: Tensor, weight: Tensor | None) -> None:
    if target.dim() != 3:
        raise RuntimeError(
            "only batches of spatial targets supported (3D tensors) but got targets of "
            f"dimension: {target.dim()}"
        )
    if self.dim() != 4:
        raise RuntimeError(
            "only batches of spatial inputs supported (4D tensors), but got input of "
            f"dimension: {self.dim()}"
        )
    if weight is not None and weight.numel() != self._sizes[1]:
        raise RuntimeError("weight tensor should be defined either for all or no classes")
    s, t = tuple(self._sizes), tuple(target._sizes)
    if s[0] != t[0] or s[2:] != t[1:]:
        raise RuntimeError(
            f"size mismatch (got input: {format_shape(s)} , target: {format_shape(t)}"
        )


def _nll2d_forward(self, target, weight, reduction, ignore_index, output=None,
                   total_weight=None) -> tuple:
    _nll2d_checks(self, target, weight)
    sizes = (self._sizes[0], *self._sizes[2:]) if reduction == NONE else ()
    loss = total = None
    if not _is_meta(self, target, weight):
        loss, total = _nll_compute(self, target, weight, reduction, ignore_index, 1)
    if output is not None:
        _check_target_dtype(target)
        return (_into(output, sizes, self._dtype, loss, "nll_loss2d_forward"),
                _into(total_weight, (), self._dtype, total, "nll_loss2d_forward"))
    _check_target_dtype(target)
    return (_new(sizes, self._dtype, self._device, loss),
            _new((), self._dtype, self._device, total))


@native
def nll_loss2d_forward_cpu(self: Tensor, target: Tensor, weight: Tensor | None,
                           reduction: int, ignore_index: int) -> tuple:
    return _nll2d_forward(self, target, weight, reduction, ignore_index)


@native
def nll_loss2d_forward_out_cpu(self: Tensor, target: Tensor, weight: Tensor | None,
                               reduction: int, ignore_index: int, output: Tensor,
                               total_weight: Tensor) -> tuple:
    return _nll2d_forward(self, target, weight, reduction, ignore_index, output, total_weight)


def _nll2d_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight,
                    out=None) -> Tensor:
    _nll2d_checks(self, target, weight)
    value = None
    if not _is_meta(grad_output, self, target, weight):
        value = _nll_grad(grad_output, self, target, weight, reduction, ignore_index,
                          total_weight, 1)
    if out is not None:
        return _into(out, tuple(self._sizes), self._dtype, value, "nll_loss2d_backward")
    return _new(tuple(self._sizes), self._dtype, self._device, value)


@native
def nll_loss2d_backward_cpu(grad_output: Tensor, self: Tensor, target: Tensor,
                            weight: Tensor | None, reduction: int, ignore_index: int,
                            total_weight: Tensor) -> Tensor:
    return _nll2d_backward(grad_output, self, target, weight, reduction, ignore_index,
                           total_weight)


@native
def nll_loss2d_backward_out_cpu(grad_output: Tensor, self: Tensor, target: Tensor,
                                weight: Tensor | None, reduction: int, ignore_index: int,
                                total_weight: Tensor, grad_input: Tensor) -> Tensor:
    return _nll2d_backward(grad_output, self, target, weight, reduction, ignore_index,
                           total_weight, grad_input)


# --- composites: nll_loss, nll_loss_nd, nll_loss2d, cross_entropy_loss ----------------------


@native
def nll_loss(self: Tensor, target: Tensor, weight: Tensor | None, reduction: int,
             ignore_index: int) -> Tensor:
    return _aten().nll_loss_forward.default(self, target, weight, reduction, ignore_index)[0]


@native
def nll_loss2d(self: Tensor, target: Tensor, weight: Tensor | None, reduction: int,
               ignore_index: int) -> Tensor:
    return _aten().nll_loss2d_forward.default(self, target, weight, reduction,
                                              ignore_index)[0]


@native
def nll_loss_nd(self: Tensor, target: Tensor, weight: Tensor | None, reduction: int,
                ignore_index: int) -> Tensor:
    a = _aten()
    if self.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {self.dim()})")
    if self.dim() != 1 and self._sizes[0] != target._sizes[0]:
        raise ValueError(
            f"Expected input batch_size ({self._sizes[0]}) to match target batch_size "
            f"({target._sizes[0]})."
        )
    if self.dim() <= 2:
        return a.nll_loss.default(self, target, weight, reduction, ignore_index)
    if self.dim() == 4:
        return a.nll_loss2d.default(self, target, weight, reduction, ignore_index)
    n, c = self._sizes[0], self._sizes[1]
    out_size = (n, *self._sizes[2:])
    if tuple(target._sizes[1:]) != tuple(self._sizes[2:]):
        raise RuntimeError(
            f"Expected target size {format_shape(out_size)}, got {format_shape(target._sizes)}"
        )
    # Tensor::contiguous() in C++ returns a contiguous tensor itself, without a call
    x = a.view.default(self if self.is_contiguous() else a.contiguous.default(self, None),
                       (n, c, 1, -1))
    t = a.view.default(target if target.is_contiguous() else a.contiguous.default(target, None),
                       (n, 1, -1))
    result = a.nll_loss2d.default(x, t, weight, reduction, ignore_index)
    if reduction == NONE:
        return a.view.default(result, out_size)
    return result


def _class_shape(self: Tensor, class_dim: int, n: int) -> tuple:
    shape = [1] * self.dim()
    shape[class_dim] = n
    return tuple(shape)


def _prob_target(self: Tensor, target: Tensor, weight: Tensor | None, reduction: int,
                 label_smoothing: float) -> Tensor:
    a = _aten()
    class_dim = 0 if self.dim() == 1 else 1
    n_classes = self._sizes[class_dim]
    if weight is not None and not (weight.dim() == 1 and weight.numel() == n_classes):
        raise RuntimeError(
            f"cross_entropy: weight tensor should be defined either for all {n_classes} "
            f"classes or no classes but got weight tensor of shape: "
            f"{format_shape(weight._sizes)}"
        )
    x = a.log_softmax.int(self, class_dim, self._dtype)
    if label_smoothing > 0.0:
        target = a.add.Scalar(a.mul.Scalar(target, 1 - label_smoothing),
                              label_smoothing / n_classes, 1)
    product = a.mul.Tensor(x, target)
    if weight is not None:
        product = a.mul.Tensor(product, a.view.default(weight, _class_shape(self, class_dim,
                                                                             n_classes)))
    if reduction == NONE:
        return a.neg.default(a.sum.dim_IntList(product, [class_dim], False, None))
    total = a.neg.default(a.sum.default(product, None))
    if reduction == SUM:
        return total
    if self.numel() == 0:
        return a.div.Scalar(total, 0.0)
    return a.div.Scalar(total, self.numel() / n_classes)


def _label_smoothing(self: Tensor, target: Tensor, weight: Tensor | None, reduction: int,
                     ignore_index: int, label_smoothing: float) -> Tensor:
    a = _aten()
    class_dim = 0 if self.dim() == 1 else 1
    n_classes = self._sizes[class_dim]
    x = a.log_softmax.int(self, class_dim, self._dtype)
    nll = nll_loss_nd(x, target, weight, reduction, ignore_index)
    ignore_mask = a.eq.Scalar(target, ignore_index)
    if weight is not None:
        weighted = a.mul.Tensor(x, a.view.default(weight, _class_shape(self, class_dim,
                                                                        n_classes)))
        smooth = a.neg.default(a.sum.dim_IntList(weighted, [class_dim], False, None))
    else:
        smooth = a.neg.default(a.sum.dim_IntList(x, [class_dim], False, None))
    smooth = a.masked_fill.Scalar(smooth, ignore_mask, 0.0)
    if reduction == MEAN:
        kept = a.logical_not.default(ignore_mask)
        if weight is not None:
            picked = a.gather.default(weight, 0, a.flatten.using_ints(
                a.masked_select.default(target, kept), 0, -1), False)
            ret = a.div.Tensor(a.sum.default(smooth, None), a.sum.default(picked, None))
        else:
            ret = a.div.Tensor(a.sum.default(smooth, None), a.sum.default(kept, None))
    elif reduction == SUM:
        ret = a.sum.default(smooth, None)
    else:
        ret = smooth
    return a.add.Tensor(a.mul.Scalar(nll, 1 - label_smoothing),
                        a.mul.Scalar(ret, label_smoothing / n_classes), 1)


def _check_smoothing(label_smoothing: float) -> None:
    # PyTorch checks only the upper bound: a negative label_smoothing passes (and is unused
    # with class indices, or scales nothing with probabilities).
    if label_smoothing > 1.0:
        raise RuntimeError(
            f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}"
        )


@native
def cross_entropy_loss(self: Tensor, target: Tensor, weight: Tensor | None, reduction: int,
                       ignore_index: int, label_smoothing: float) -> Tensor:
    if tuple(self._sizes) == tuple(target._sizes):
        if not target._dtype.is_floating_point:
            raise RuntimeError(
                "Expected floating point type for target with class probabilities, got "
                f"{target._dtype.scalar_name}"
            )
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        _check_smoothing(label_smoothing)
        return _prob_target(self, target, weight, reduction, label_smoothing)
    _check_smoothing(label_smoothing)
    if label_smoothing > 0.0:
        return _label_smoothing(self, target, weight, reduction, ignore_index, label_smoothing)
    class_dim = 0 if self.dim() == 1 else 1
    # PyTorch's calls, each through the dispatcher where a trace or a recorded graph is on
    # (a trace shows log_softmax, to, _log_softmax, nll_loss_nd, nll_loss, nll_loss_forward as
    # torch's profiler does); otherwise the direct call of a composite skips the layers
    a = _aten()
    x = a.log_softmax.int(self, class_dim, self._dtype)
    return a.nll_loss_nd.default(x, target, weight, reduction, ignore_index)


@native
def l1_loss(self: Tensor, target: Tensor, reduction: int) -> Tensor:
    a = _aten()
    return _apply_reduction(a.abs.default(a.sub.Tensor(self, target, 1)), reduction)


@native
def kl_div(self: Tensor, target: Tensor, reduction: int, log_target: bool) -> Tensor:
    a = _aten()
    if log_target:
        loss = a.mul.Tensor(a.exp.default(target), a.sub.Tensor(target, self, 1))
    else:
        loss = a.sub.Tensor(a.xlogy.Tensor(target, target), a.mul.Tensor(target, self), 1)
    return _apply_reduction(loss, reduction)


# --- multi_margin_loss, multilabel_margin_loss ----------------------------------------------


def _margin_shape(self: Tensor, target: Tensor) -> tuple:
    """(batch size, classes) of a vector or matrix input, with PyTorch's checks."""
    if not (self.dim() <= 2 and self.numel() > 0 or self.dim() == 2 and self._sizes[0] == 0):
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{format_shape(self._sizes)}"
        )
    n = self._sizes[0] if self.dim() == 2 else 1
    c = self._sizes[-1] if self.dim() else 1
    return n, c


def _multi_margin_checks(self, target, p, weight) -> tuple:
    n, c = _margin_shape(self, target)
    if p not in (1, 2):
        raise RuntimeError("only p == 1 and p == 2 supported")
    if not (target.dim() <= 1 and target.numel() == n):
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{n}], but got "
            f"{format_shape(target._sizes)}. Input has shape {format_shape(self._sizes)}."
        )
    if weight is not None and not (weight.dim() <= 1 and weight.numel() == c):
        raise RuntimeError(
            f"inconsistent weight size, expected {c} but got {format_shape(weight._sizes)}"
        )
    if target._dtype is not dt.int64:
        raise RuntimeError(f"expected scalar type Long but found {target._dtype.scalar_name}")
    return n, c


def _multi_margin_terms(self, target, margin, weight,
                        name: str = "multi_margin_loss_cpu_kernel") -> tuple:
    n, c = _margin_shape(self, target)
    if self._dtype not in (dt.float32, dt.float64):
        raise unsupported_dtype(name, self._dtype)
    acc = _acc(self._dtype)
    x = _array(self, acc).reshape(n, c)
    y = target._numpy().reshape(n).astype(np.int64)
    if ((y < 0) | (y >= c)).any():
        raise RuntimeError("target out of range")
    rows = np.arange(n)
    z = margin - x[rows, y][:, None] + x
    z[rows, y] = 0
    z = np.maximum(z, 0).astype(acc)
    w = _array(weight, acc).reshape(-1)[y][:, None] if weight is not None else None
    return x, y, z, w, n, c, acc


def _multi_margin(self, target, p, margin, weight, reduction, out=None) -> Tensor:
    n, c = _multi_margin_checks(self, target, p, weight)
    sizes = (n,) if reduction == NONE and self.dim() == 2 else ()
    value = None
    if not _is_meta(self, target, weight):
        _, _, z, w, n, c, acc = _multi_margin_terms(self, target, margin, weight)
        terms = z if p == 1 else z * z
        if w is not None:
            terms = terms * w
        loss = terms.sum(axis=1) / c
        value = _reduce(loss, reduction) if reduction != NONE else loss.reshape(sizes)
    if out is not None:
        return _into(out, sizes, self._dtype, value, "multi_margin_loss")
    return _new(sizes, self._dtype, self._device, value)


@native
def multi_margin_loss_cpu(self: Tensor, target: Tensor, p, margin, weight: Tensor | None,
                          reduction: int) -> Tensor:
    return _multi_margin(self, target, p, margin, weight, reduction)


@native
def multi_margin_loss_cpu_out(self: Tensor, target: Tensor, p, margin, weight: Tensor | None,
                              reduction: int, out: Tensor) -> Tensor:
    return _multi_margin(self, target, p, margin, weight, reduction, out)


def _multi_margin_backward(grad_output, self, target, p, margin, weight, reduction,
                           out=None) -> Tensor:
    _multi_margin_checks(self, target, p, weight)
    value = None
    if not _is_meta(grad_output, self, target, weight):
        _, y, z, w, n, c, acc = _multi_margin_terms(self, target, margin, weight,
                                                    "multi_margin_loss_backward_cpu_kernel")
        coef = (z > 0).astype(acc) if p == 1 else 2 * z
        if w is not None:
            coef = coef * w
        coef = coef / c
        rows = np.arange(n)
        coef[rows, y] = 0
        coef[rows, y] = -coef.sum(axis=1)
        g = _array(grad_output, acc)
        if reduction == NONE and self.dim() == 2:
            coef = coef * g.reshape(n, 1)
        else:
            coef = coef * g.reshape(())
            if reduction == MEAN:
                coef = coef / n
        value = coef.reshape(tuple(self._sizes))
    if out is not None:
        return _into(out, tuple(self._sizes), self._dtype, value, "multi_margin_loss_backward")
    return _new(tuple(self._sizes), self._dtype, self._device, value)


@native
def multi_margin_loss_cpu_backward(grad_output: Tensor, self: Tensor, target: Tensor, p,
                                   margin, weight: Tensor | None, reduction: int) -> Tensor:
    return _multi_margin_backward(grad_output, self, target, p, margin, weight, reduction)


@native
def multi_margin_loss_cpu_backward_out(grad_output: Tensor, self: Tensor, target: Tensor, p,
                                       margin, weight: Tensor | None, reduction: int,
                                       grad_input: Tensor) -> Tensor:
    return _multi_margin_backward(grad_output, self, target, p, margin, weight, reduction,
                                  grad_input)


def _multilabel_checks(self: Tensor, target: Tensor) -> tuple:
    n, c = _margin_shape(self, target)
    expected = tuple(self._sizes) if self.dim() else (1,)
    if tuple(target._sizes) != expected and not (self.dim() <= 1 and target.numel() == c
                                                  and target.dim() <= 1):
        raise RuntimeError(
            f"inconsistent target size: {format_shape(target._sizes)} for input of size: "
            f"{format_shape(self._sizes)}"
        )
    return n, c


def _multilabel_terms(self: Tensor, target: Tensor,
                      name: str = "multilabel_margin_loss_forward_out_frame") -> tuple:
    """(is_target (n, c), the hinge terms (n, targets j, classes i) that count)."""
    n, c = _margin_shape(self, target)
    if self._dtype not in (dt.float32, dt.float64):
        raise unsupported_dtype(name, self._dtype)
    acc = _acc(self._dtype)
    x = _array(self, acc).reshape(n, c)
    y = target._numpy().reshape(n, c).astype(np.int64)
    if ((y < -1) | (y >= c)).any():
        raise RuntimeError("argument #2 'target' is out of range")
    valid = np.cumprod(y >= 0, axis=1).astype(bool)  # targets before the first -1
    labels = np.where(valid, y, 0)
    hits = (labels[:, :, None] == np.arange(c)) & valid[:, :, None]  # (n, j, i)
    is_target = hits.any(axis=1)
    picked = np.take_along_axis(x, labels, 1)  # x[n, y_j]
    z = 1 - picked[:, :, None] + x[:, None, :]
    counted = valid[:, :, None] & ~is_target[:, None, :]
    return is_target.astype(acc), np.where(counted, np.maximum(z, 0), 0), hits, n, c, acc


def _multilabel_forward(self, target, reduction, output=None, is_target_out=None) -> tuple:
    n, c = _multilabel_checks(self, target)
    sizes = (n,) if reduction == NONE and self.dim() == 2 else ()
    loss = is_target = None
    if not _is_meta(self, target):
        is_target, z, _, n, c, acc = _multilabel_terms(self, target)
        per_sample = z.sum(axis=(1, 2)) / c
        loss = _reduce(per_sample, reduction) if reduction != NONE else \
            per_sample.reshape(sizes)
        is_target = is_target.reshape(tuple(target._sizes))
    if output is not None:
        return (_into(output, sizes, self._dtype, loss, "multilabel_margin_loss_forward"),
                _into(is_target_out, tuple(target._sizes), self._dtype, is_target,
                      "multilabel_margin_loss_forward"))
    return (_new(sizes, self._dtype, self._device, loss),
            _new(tuple(target._sizes), self._dtype, self._device, is_target))


@native
def multilabel_margin_loss_forward_cpu(self: Tensor, target: Tensor, reduction: int) -> tuple:
    return _multilabel_forward(self, target, reduction)


@native
def multilabel_margin_loss_forward_out_cpu(self: Tensor, target: Tensor, reduction: int,
                                           output: Tensor, is_target: Tensor) -> tuple:
    return _multilabel_forward(self, target, reduction, output, is_target)


def _multilabel_backward(grad_output, self, target, reduction, is_target, out=None) -> Tensor:
    _multilabel_checks(self, target)
    value = None
    if not _is_meta(grad_output, self, target):
        _, z, hits, n, c, acc = _multilabel_terms(self, target,
                                                  "multilabel_margin_loss_backward_out_frame")
        active = (z > 0).astype(acc) / c  # (n, j, i)
        grad = active.sum(axis=1) - np.einsum("nj,nji->ni", active.sum(axis=2),
                                              hits.astype(acc))
        g = _array(grad_output, acc)
        if reduction == NONE and self.dim() == 2:
            grad = grad * g.reshape(n, 1)
        else:
            grad = grad * g.reshape(())
            if reduction == MEAN:
                grad = grad / n
        value = grad.reshape(tuple(self._sizes))
    if out is not None:
        return _into(out, tuple(self._sizes), self._dtype, value,
                     "multilabel_margin_loss_backward")
    return _new(tuple(self._sizes), self._dtype, self._device, value)


@native
def multilabel_margin_loss_backward_cpu(grad_output: Tensor, self: Tensor, target: Tensor,
                                        reduction: int, is_target: Tensor) -> Tensor:
    return _multilabel_backward(grad_output, self, target, reduction, is_target)


@native
def multilabel_margin_loss_backward_cpu_out(grad_output: Tensor, self: Tensor, target: Tensor,
                                            reduction: int, is_target: Tensor,
                                            grad_input: Tensor) -> Tensor:
    return _multilabel_backward(grad_output, self, target, reduction, is_target, grad_input)


@native
def multilabel_margin_loss(self: Tensor, target: Tensor, reduction: int) -> Tensor:
    return _aten().multilabel_margin_loss_forward.default(self, target, reduction)[0]


@native
def multilabel_margin_loss_out(self: Tensor, target: Tensor, reduction: int,
                               out: Tensor) -> Tensor:
    result = multilabel_margin_loss(self, target, reduction)
    resize_output(out, tuple(result._sizes), "multilabel_margin_loss")
    return _aten().copy_.default(out, result, False)


# --- the embedding and ranking losses PyTorch composes in C++ --------------------------------


@native
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float,
                        reduction: int) -> Tensor:
    # max(0, -target * (input1 - input2) + margin)
    a = _aten()
    diff = a.mul.Tensor(a.neg.default(target), a.sub.Tensor(input1, input2, 1))
    return _apply_reduction(a.clamp_min.default(a.add.Scalar(diff, margin, 1), 0), reduction)


@native
def hinge_embedding_loss(self: Tensor, target: Tensor, margin: float,
                         reduction: int) -> Tensor:
    a = _aten()
    zeros = a.zeros_like.default(self, None, None, None, None, None)
    margin_clamp = a.clamp_min.default(a.rsub.Scalar(self, margin, 1), 0)
    output_margin = a.where.self(a.ne.Scalar(target, 1), margin_clamp, zeros)
    output_self = a.where.self(a.ne.Scalar(target, -1), self, zeros)
    return _apply_reduction(a.add.Tensor(output_margin, output_self, 1), reduction)


@native
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float,
                          reduction: int) -> Tensor:
    a = _aten()
    dim = target.dim()
    if dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if dim == 1 and not (input1.dim() == 2 and input2.dim() == 2):
        raise RuntimeError(
            "1D target tensor expects 2D input tensors, but found inputs with sizes "
            f"{format_shape(input1._sizes)} and {format_shape(input2._sizes)}."
        )
    if dim == 0 and not (input1.dim() == 1 and input2.dim() == 1):
        raise RuntimeError(
            "0D target tensor expects 1D input tensors, but found inputs with sizes "
            f"{format_shape(input1._sizes)} and {format_shape(input2._sizes)}."
        )

    def dot(x: Tensor, y: Tensor) -> Tensor:
        return a.sum.dim_IntList(a.mul.Tensor(x, y), [dim], False, None)

    prod_sum = dot(input1, input2)
    square1 = a.add.Scalar(dot(input1, input1), 1e-12, 1)
    square2 = a.add.Scalar(dot(input2, input2), 1e-12, 1)
    cos = a.div.Tensor(prod_sum, a.sqrt.default(a.mul.Tensor(square1, square2)))
    zeros = a.zeros_like.default(cos, None, None, None, None, None)
    pos = a.rsub.Scalar(cos, 1, 1)
    neg = a.clamp_min.default(a.sub.Scalar(cos, margin, 1), 0)
    output = a.add.Tensor(a.where.self(a.eq.Scalar(target, 1), pos, zeros),
                          a.where.self(a.eq.Scalar(target, -1), neg, zeros), 1)
    return _apply_reduction(output, reduction)


def _pairwise_distance(x1: Tensor, x2: Tensor, p: float, eps: float) -> Tensor:
    a = _aten()
    dim = max(x1.dim(), x2.dim()) - 1
    return a.norm.ScalarOpt_dim(a.add.Scalar(a.sub.Tensor(x1, x2, 1), eps, 1), p, [dim], False)


@native
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float,
                        p: float, eps: float, swap: bool, reduction: int) -> Tensor:
    a = _aten()
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative "
            f"{n_dim}D inputs"
        )
    dist_pos = _pairwise_distance(anchor, positive, p, eps)
    dist_neg = _pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = a.minimum.default(dist_neg, _pairwise_distance(positive, negative, p, eps))
    loss = a.clamp_min.default(a.sub.Tensor(a.add.Scalar(dist_pos, margin, 1), dist_neg, 1), 0)
    return _apply_reduction(loss, reduction)


@native
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    a = _aten()
    if log_input:
        loss = a.sub.Tensor(a.exp.default(input), a.mul.Tensor(target, input), 1)
    else:
        loss = a.sub.Tensor(input, a.mul.Tensor(target, a.log.default(
            a.add.Scalar(input, eps, 1))), 1)
    if full:
        # target * log(target) - target + 0.5 * log(2 pi target), where target > 1
        stirling = a.add.Tensor(
            a.sub.Tensor(a.mul.Tensor(target, a.log.default(target)), target, 1),
            a.mul.Scalar(a.log.default(a.mul.Scalar(target, 2 * np.pi)), 0.5), 1)
        loss = a.add.Tensor(loss, a.masked_fill.Scalar(stirling, a.le.Scalar(target, 1), 0), 1)
    return _apply_reduction(loss, reduction)


# --- ctc_loss -------------------------------------------------------------------------------
# Note: the CTC recursions. alpha (forward) and beta (backward) run over time steps, one
# NumPy step per t for the whole batch and every position of the extended target (blank,
# l1, blank, l2, ..., blank), as PyTorch's CPU kernel runs them per t. Positions past a
# sample's own 2 * target_length + 1 and steps past its input_length never feed the values
# read back (the loss reads alpha at its own last step and position; beta starts there).


def _ctc_checks(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths,
                blank: int) -> tuple:
    where = "(while checking arguments for ctc_loss_allocate_outputs)"
    if targets._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(
            "Expected tensor for argument #2 'targets' to have scalar type Int; but got "
            f"pyaten.{targets._dtype.scalar_name}Tensor instead {where}"
        )
    if log_probs.dim() != 3:
        raise RuntimeError(
            f"Expected 3-dimensional tensor, but got {log_probs.dim()}-dimensional tensor for "
            f"argument #1 'log_probs' {where}"
        )
    if not 1 <= targets.dim() <= 2:
        raise RuntimeError(
            f"Expected 1 to 2 dimensions, but got {targets.dim()}-dimensional tensor for "
            f"argument #2 'targets' {where}"
        )
    max_input, batch, labels = log_probs._sizes
    if not 0 <= blank < labels:
        raise RuntimeError("blank must be in label range")
    if len(input_lengths) != batch:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(target_lengths) != batch:
        raise RuntimeError("target_lengths must be of size batch_size")
    for length in target_lengths:
        if length < 0:
            raise RuntimeError(
                "Expected target_lengths to have value at least 0, but got value "
                f"{length} {where}"
            )
    max_target = max(target_lengths, default=0)
    if targets.dim() == 1:
        if targets._sizes[0] != sum(target_lengths):
            raise RuntimeError(
                f"Expected tensor to have size {sum(target_lengths)} at dimension 0, but got "
                f"size {targets._sizes[0]} for argument #2 'targets' {where}"
            )
    else:
        if targets._sizes[0] != batch:
            raise RuntimeError(
                f"Expected tensor to have size {batch} at dimension 0, but got size "
                f"{targets._sizes[0]} for argument #2 'targets' {where}"
            )
        if targets._sizes[1] < max_target:
            raise RuntimeError(
                f"Expected tensor to have size at least {max_target} at dimension 1, but got "
                f"size {targets._sizes[1]} for argument #2 'targets' {where}"
            )
    for length in input_lengths:
        if length < 0:
            raise RuntimeError(
                f"Expected input_lengths to have value at least 0, but got value {length} "
                f"{where}"
            )
        if length > max_input:
            raise RuntimeError(
                f"Expected input_lengths to have value at most {max_input}, but got value "
                f"{length} {where}"
            )
    if log_probs._dtype not in (dt.float32, dt.float64):
        raise unsupported_dtype("ctc_loss_cpu", log_probs._dtype)
    return max_input, batch, labels, max_target


def _ctc_extended(targets: Tensor, target_lengths, batch: int, max_target: int,
                  blank: int) -> tuple:
    """(extended labels (batch, 2 * max_target + 1), may skip from s - 2 to s, lengths)."""
    lengths = np.asarray(target_lengths, np.int64)
    t = targets._numpy().astype(np.int64)
    if targets.dim() == 1:
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        index = offsets[:, None] + np.arange(max_target)
        padded = np.where(np.arange(max_target) < lengths[:, None],
                          t[np.minimum(index, max(t.size - 1, 0))] if t.size else 0, blank)
    else:
        padded = np.where(np.arange(max_target) < lengths[:, None], t[:, :max_target], blank)
    width = 2 * max_target + 1
    ext = np.full((batch, width), blank, np.int64)
    ext[:, 1::2] = padded
    skip = np.zeros((batch, width), bool)
    if width > 2:
        skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    return ext, skip, lengths


def _lse3(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.logaddexp(np.logaddexp(a, b), c)


def _ctc_alpha(lp: np.ndarray, ext: np.ndarray, skip: np.ndarray) -> np.ndarray:
    steps, batch, _ = lp.shape
    width = ext.shape[1]
    rows = np.arange(batch)[:, None]
    emit = lp[:, rows, ext]  # (T, B, width): log p of each extended label at each step
    alpha = np.full((batch, steps, width), -np.inf, lp.dtype)
    if steps == 0:
        return alpha
    alpha[:, 0, 0] = emit[0, :, 0]
    if width > 1:
        alpha[:, 0, 1] = emit[0, :, 1]
    neg = np.full((batch, 2), -np.inf, lp.dtype)
    for t in range(1, steps):
        prev = alpha[:, t - 1]
        shift1 = np.concatenate([neg[:, :1], prev[:, :-1]], axis=1)
        shift2 = np.where(skip, np.concatenate([neg, prev[:, :-2]], axis=1)[:, :width],
                          -np.inf)
        alpha[:, t] = _lse3(prev, shift1, shift2) + emit[t]
    return alpha


def _ctc_nll(alpha: np.ndarray, input_lengths, lengths: np.ndarray) -> np.ndarray:
    batch = alpha.shape[0]
    inputs = np.asarray(input_lengths, np.int64)
    last = np.maximum(inputs - 1, 0)
    rows = np.arange(batch)
    end = alpha[rows, last, 2 * lengths]
    before = np.where(lengths > 0, alpha[rows, last, np.maximum(2 * lengths - 1, 0)], -np.inf)
    nll = -np.logaddexp(end, before)
    empty = inputs == 0
    return np.where(empty, np.where(lengths == 0, -0.0, np.inf), nll).astype(alpha.dtype)


def _ctc_forward(log_probs, targets, input_lengths, target_lengths, blank) -> tuple:
    steps, batch, _, max_target = _ctc_checks(log_probs, targets, input_lengths,
                                              target_lengths, blank)
    dtype = log_probs._dtype
    if _is_meta(log_probs, targets):
        return (new_row_major((batch,), dtype, log_probs._device),
                new_row_major((batch, steps, 2 * max_target + 1), dtype, log_probs._device))
    ext, skip, lengths = _ctc_extended(targets, target_lengths, batch, max_target, blank)
    lp = log_probs._numpy()
    alpha = quiet_call(_ctc_alpha, lp, ext, skip)
    nll = quiet_call(_ctc_nll, alpha, input_lengths, lengths)
    return (_new((batch,), dtype, log_probs._device, nll),
            _new(alpha.shape, dtype, log_probs._device, alpha))


@native
def ctc_loss_cpu(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths,
                 blank: int, zero_infinity: bool) -> tuple:
    return _ctc_forward(log_probs, targets, input_lengths, target_lengths, blank)


def _lengths(t: Tensor, name: str) -> tuple:
    if t._dtype.is_floating_point or t._dtype.is_complex or t._dtype is dt.bool:
        raise RuntimeError(f"{name} must be integral")
    return tuple(int(v) for v in t._numpy().reshape(-1))


@native
def ctc_loss_tensor(log_probs: Tensor, targets: Tensor, input_lengths: Tensor,
                    target_lengths: Tensor, blank: int, zero_infinity: bool) -> tuple:
    return _aten()._ctc_loss.default(
        log_probs, targets, _lengths(input_lengths, "input_lengths"),
        _lengths(target_lengths, "target_lengths"), blank, zero_infinity)


def _ctc_beta(lp: np.ndarray, ext: np.ndarray, skip: np.ndarray, input_lengths,
              lengths: np.ndarray) -> np.ndarray:
    steps, batch, _ = lp.shape
    width = ext.shape[1]
    rows = np.arange(batch)
    emit = lp[:, rows[:, None], ext]
    inputs = np.asarray(input_lengths, np.int64)
    beta = np.full((batch, steps, width), -np.inf, lp.dtype)
    # skip into s from s + 2 when ext[s + 2] may be reached from ext[s]
    skip_from = np.zeros((batch, width), bool)
    if width > 2:
        skip_from[:, :-2] = skip[:, 2:]
    neg = np.full((batch, 2), -np.inf, lp.dtype)
    init = np.full((batch, width), -np.inf, lp.dtype)
    last = np.maximum(inputs - 1, 0)
    init[rows, 2 * lengths] = emit[last, rows, 2 * lengths]
    has = lengths > 0
    init[rows[has], 2 * lengths[has] - 1] = emit[last[has], rows[has], 2 * lengths[has] - 1]
    for t in range(steps - 1, -1, -1):
        if t + 1 < steps:
            nxt = beta[:, t + 1]
            shift1 = np.concatenate([nxt[:, 1:], neg[:, :1]], axis=1)
            shift2 = np.where(skip_from, np.concatenate([nxt[:, 2:], neg], axis=1)[:, :width],
                              -np.inf)
            beta[:, t] = _lse3(nxt, shift1, shift2) + emit[t]
        at_end = (inputs - 1) == t
        beta[at_end, t] = init[at_end]
    return beta


def _ctc_grad(grad: Tensor, log_probs: Tensor, targets: Tensor, input_lengths,
              target_lengths, nll_t: Tensor, alpha_t: Tensor, blank: int,
              zero_infinity: bool) -> Tensor:
    steps, batch, labels, max_target = _ctc_checks(log_probs, targets, input_lengths,
                                                   target_lengths, blank)
    dtype = log_probs._dtype
    if _is_meta(grad, log_probs, targets, nll_t, alpha_t):
        return new_row_major(tuple(log_probs._sizes), dtype, log_probs._device)
    ext, skip, lengths = _ctc_extended(targets, target_lengths, batch, max_target, blank)
    lp = log_probs._numpy()
    nll = nll_t._numpy()
    g = grad._numpy().astype(lp.dtype).reshape(-1)
    g = np.broadcast_to(g, (batch,)) if g.size == 1 else g

    def run() -> np.ndarray:
        alpha = _ctc_alpha(lp, ext, skip)
        beta = _ctc_beta(lp, ext, skip, input_lengths, lengths)
        both = alpha + beta  # (B, T, width)
        acc = np.full((steps, batch, labels), -np.inf, lp.dtype)
        tt = np.arange(steps)[None, :, None]
        bb = np.arange(batch)[:, None, None]
        np.logaddexp.at(acc, (np.broadcast_to(tt, both.shape), np.broadcast_to(bb, both.shape),
                              np.broadcast_to(ext[:, None, :], both.shape)), both)
        result = (np.exp(lp) - np.exp(acc + nll[None, :, None] - lp)) * g[None, :, None]
        inputs = np.asarray(input_lengths, np.int64)
        live = np.arange(steps)[:, None] < inputs[None, :]
        if zero_infinity:
            live = live & ~np.isinf(nll)[None, :]
        return np.where(live[:, :, None], result, 0).astype(lp.dtype)

    value = quiet_call(run)
    return _new(tuple(log_probs._sizes), dtype, log_probs._device, value)


@native
def ctc_loss_backward_cpu(grad: Tensor, log_probs: Tensor, targets: Tensor, input_lengths,
                          target_lengths, neg_log_likelihood: Tensor, log_alpha: Tensor,
                          blank: int, zero_infinity: bool) -> Tensor:
    return _ctc_grad(grad, log_probs, targets, input_lengths, target_lengths,
                     neg_log_likelihood, log_alpha, blank, zero_infinity)


@native
def ctc_loss_backward_tensor(grad: Tensor, log_probs: Tensor, targets: Tensor,
                             input_lengths: Tensor, target_lengths: Tensor,
                             neg_log_likelihood: Tensor, log_alpha: Tensor, blank: int,
                             zero_infinity: bool) -> Tensor:
    return _ctc_grad(grad, log_probs, targets, _lengths(input_lengths, "input_lengths"),
                     _lengths(target_lengths, "target_lengths"), neg_log_likelihood,
                     log_alpha, blank, zero_infinity)


def _ctc_reduce(res: Tensor, target_lengths, reduction: int, zero_infinity: bool,
                batched: bool) -> Tensor:
    a = _aten()
    if zero_infinity:
        res = a.masked_fill.Scalar(res, a.eq.Scalar(res, float("inf")), 0.0)
    if reduction == MEAN:
        if isinstance(target_lengths, Tensor):  # divided as they are (the div promotes)
            lengths = target_lengths
        else:
            values = None if res._device.type == "meta" else np.asarray(target_lengths,
                                                                        res._dtype.numpy)
            lengths = _new((len(target_lengths),), res._dtype, res._device, values)
        return a.mean.default(a.div.Tensor(res, a.clamp_min.default(lengths, 1)), None)
    if reduction == SUM:
        return a.sum.default(res, None)
    return res if batched else a.squeeze.dim(res, 0)


@native
def ctc_loss_IntList(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths,
                     blank: int, reduction: int, zero_infinity: bool) -> Tensor:
    a = _aten()
    batched = log_probs.dim() == 3
    lp = log_probs if batched else a.unsqueeze.default(log_probs, 1)
    if targets._dtype is not dt.int64:  # PyTorch moves the targets to Long first
        targets = a._to_copy.default(targets, dt.int64, None, None, None, False, None)
    # tensor lengths stay tensors, as PyTorch's composite keeps them (_ctc_loss.Tensor reads
    # them): nothing here reads their values, which a vmapped sample does not hold
    ctc = a._ctc_loss.Tensor if isinstance(input_lengths, Tensor) else a._ctc_loss.default
    res = ctc(lp, targets, input_lengths, target_lengths, blank, zero_infinity)[0]
    return _ctc_reduce(res, target_lengths, reduction, zero_infinity, batched)


@native
def ctc_loss_Tensor(log_probs: Tensor, targets: Tensor, input_lengths: Tensor,
                    target_lengths: Tensor, blank: int, reduction: int,
                    zero_infinity: bool) -> Tensor:
    return ctc_loss_IntList(log_probs, targets, input_lengths, target_lengths, blank,
                            reduction, zero_infinity)
