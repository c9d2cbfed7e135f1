"""Backward helpers of the reduce family that PyTorch declares as operators.

`_softmax_backward_data(grad_output, output, dim, input_dtype)` is the gradient of `_softmax`
given its result, `output * (grad_output - sum(grad_output * output, dim))`, and
`_log_softmax_backward_data` that of `_log_softmax`,
`grad_output - exp(output) * sum(grad_output, dim)`. Both are structured, as in ATen: the
meta checks the dim and gives a contiguous result shaped like `grad_output` (Half when a
Float gradient comes back to a Half input); the CPU kernel checks the dtypes and computes in
NumPy (float16/bfloat16 in float32, rounded once on write). Being operators, they have their
own derivatives entries, so softmax has a double backward.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor
from pyaten.native.family import FLOATING_AND_REDUCED, unsupported_dtype
from pyaten.native.kernels.copy import assign
from pyaten.native.kernels.shape import wrap_dim
from pyaten.native.registry import native
from pyaten.native.structured import quiet_call


def _acc(dtype: dt.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype in (dt.float16, dt.bfloat16) else dtype.numpy


def _sizes_text(sizes) -> str:
    return "[" + ", ".join(str(s) for s in sizes) + "]"


def _backward_meta(op, grad: Tensor, output: Tensor, dim: int, input_dtype) -> None:
    ndim = grad.dim()
    wrap_dim(dim, ndim)
    dtype = grad._dtype
    if dtype is not input_dtype and dtype is dt.float32 and input_dtype is dt.float16:
        dtype = dt.float16  # the half-to-float case: the gradient goes back as Half
    op.set_output(0, tuple(grad._sizes), dtype, grad._device)


@native
def meta__softmax_backward_data(op, grad_output: Tensor, output: Tensor, dim: int,
                                input_dtype) -> None:
    if tuple(grad_output._sizes) != tuple(output._sizes):
        raise RuntimeError(
            "Expected tensor for argument #1 'grad' to have same size as tensor for argument "
            f"#2 'output'; but {_sizes_text(grad_output._sizes)} does not equal "
            f"{_sizes_text(output._sizes)} (while checking arguments for softmax_backward)"
        )
    _backward_meta(op, grad_output, output, dim, input_dtype)


@native
def meta__log_softmax_backward_data(op, grad_output: Tensor, output: Tensor, dim: int,
                                    input_dtype) -> None:
    _backward_meta(op, grad_output, output, dim, input_dtype)


def _compute(grad: Tensor, output: Tensor, dim: int, out: Tensor, log: bool) -> None:
    if output.numel() == 0:
        return
    ndim = grad.dim()
    wrapped = wrap_dim(dim, ndim)
    name = "log_softmax_backward" if log else "softmax_backward"
    kernel = f"{name}_lastdim_kernel_impl" if wrapped == max(ndim - 1, 0) else \
        f"{name}_kernel_impl"
    dtype = grad._dtype
    if dtype not in FLOATING_AND_REDUCED:
        raise unsupported_dtype(kernel, dtype)
    for other in (output, out):
        if other._dtype is not dtype:
            raise RuntimeError(
                f"expected scalar type {dtype.scalar_name} but found {other._dtype.scalar_name}"
            )
    g = grad._numpy().astype(_acc(dtype), copy=False)
    y = output._numpy().astype(_acc(dtype), copy=False)
    axis = wrapped if ndim else None

    target = out._numpy()
    if log and target.dtype == g.dtype and target.shape == g.shape == y.shape and \
            target.flags.c_contiguous:
        # computed in `out`: g - exp(y) * sum(g), no temporaries (cross_entropy's backward)
        def in_place() -> None:
            total = np.sum(g, axis=axis, keepdims=True)
            np.exp(y, out=target)
            np.multiply(target, total, out=target)
            np.subtract(g, target, out=target)

        quiet_call(in_place)
        return

    def run() -> np.ndarray:
        if log:
            return g - np.exp(y) * np.sum(g, axis=axis, keepdims=True)
        return y * (g - np.sum(g * y, axis=axis, keepdims=True))

    result = quiet_call(run)
    assign(target, np.broadcast_to(result, target.shape))


@native
def softmax_backward_cpu_out(op, grad_output: Tensor, output: Tensor, dim: int, input_dtype,
                             grad_input: Tensor) -> None:
    _compute(grad_output, output, dim, grad_input, log=False)


@native
def log_softmax_backward_cpu_out(op, grad_output: Tensor, output: Tensor, dim: int,
                                 input_dtype, out: Tensor) -> None:
    _compute(grad_output, output, dim, out, log=True)
