"""The decompositions, each registered beside its definition (see pyaten/_decomp/__init__.py).

Each function takes the operator's arguments as a `__torch_dispatch__` handler receives them
(keyword-only arguments by keyword, defaults as in the schema) and computes the result with
simpler operators, in the input's dtype as the eager kernel does. The formulas are the
operators' definitions (PyTorch's documentation states them).
"""

from __future__ import annotations

import math
from typing import Any

from pyaten._decomp import register_decomposition
from pyaten.native.ops_handles import aten

_SQRT1_2 = 1 / math.sqrt(2)


def _reduce(loss: Any, reduction: int) -> Any:
    # reduction as ATen's enum: 0 none, 1 mean, 2 sum
    if reduction == 1:
        return aten.mean.default(loss)
    if reduction == 2:
        return aten.sum.default(loss)
    return loss


# -- matmul family --------------------------------------------------------------------------

@register_decomposition(aten.addmm.default)
def addmm(self: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    out = aten.mm.default(mat1, mat2)
    if alpha != 1:
        out = aten.mul.Tensor(out, alpha)
    if beta == 0:
        return out
    return aten.add.Tensor(out, self if beta == 1 else aten.mul.Tensor(self, beta))


@register_decomposition(aten.mv.default)
def mv(self: Any, vec: Any) -> Any:
    return aten.squeeze.dim(aten.mm.default(self, aten.unsqueeze.default(vec, 1)), 1)


# -- softmax family -------------------------------------------------------------------------

@register_decomposition(aten._softmax.default)
def _softmax(x: Any, dim: int, half_to_float: bool) -> Any:
    shifted = aten.sub.Tensor(x, aten.amax.default(x, [dim], True))
    unnormalized = aten.exp.default(shifted)
    return aten.div.Tensor(unnormalized, aten.sum.dim_IntList(unnormalized, [dim], True))


@register_decomposition(aten._log_softmax.default)
def _log_softmax(x: Any, dim: int, half_to_float: bool) -> Any:
    shifted = aten.sub.Tensor(x, aten.amax.default(x, [dim], True))
    total = aten.sum.dim_IntList(aten.exp.default(shifted), [dim], True)
    return aten.sub.Tensor(shifted, aten.log.default(total))


@register_decomposition(aten._softmax_backward_data.default)
def _softmax_backward_data(grad_output: Any, output: Any, dim: int, input_dtype: Any) -> Any:
    product = aten.mul.Tensor(grad_output, output)
    return aten.sub.Tensor(
        product, aten.mul.Tensor(output, aten.sum.dim_IntList(product, [dim], True)))


@register_decomposition(aten.logsumexp.default)
def logsumexp(self: Any, dim: list, keepdim: bool = False) -> Any:
    peak = aten.amax.default(self, dim, True)
    peak = aten.where.self(aten.isinf.default(peak), aten.zeros_like.default(peak), peak)
    total = aten.sum.dim_IntList(aten.exp.default(aten.sub.Tensor(self, peak)), dim, keepdim)
    if not keepdim:
        peak = aten.squeeze.dims(peak, dim)
    return aten.add.Tensor(aten.log.default(total), peak)


# -- activations and their gradients ---------------------------------------------------------

@register_decomposition(aten.silu.default)
def silu(self: Any) -> Any:
    return aten.mul.Tensor(self, aten.sigmoid.default(self))


@register_decomposition(aten.gelu.default)
def gelu(self: Any, *, approximate: str = "none") -> Any:
    if approximate == "tanh":
        inner = aten.mul.Tensor(
            aten.add.Tensor(self, aten.mul.Tensor(aten.pow.Tensor_Scalar(self, 3), 0.044715)),
            math.sqrt(2 / math.pi))
        return aten.mul.Tensor(aten.mul.Tensor(self, 0.5),
                               aten.add.Tensor(aten.tanh.default(inner), 1))
    cdf = aten.add.Tensor(aten.erf.default(aten.mul.Tensor(self, _SQRT1_2)), 1)
    return aten.mul.Tensor(aten.mul.Tensor(self, 0.5), cdf)


@register_decomposition(aten.hardtanh.default)
def hardtanh(self: Any, min_val: Any = -1, max_val: Any = 1) -> Any:
    return aten.clamp.default(self, min_val, max_val)


@register_decomposition(aten.leaky_relu.default)
def leaky_relu(self: Any, negative_slope: Any = 0.01) -> Any:
    return aten.where.self(aten.gt.Scalar(self, 0), self,
                           aten.mul.Tensor(self, negative_slope))


@register_decomposition(aten.elu.default)
def elu(self: Any, alpha: Any = 1, scale: Any = 1, input_scale: Any = 1) -> Any:
    negative = aten.mul.Tensor(
        aten.expm1.default(aten.mul.Tensor(self, input_scale)), alpha * scale)
    return aten.where.self(aten.gt.Scalar(self, 0), aten.mul.Tensor(self, scale), negative)


@register_decomposition(aten.hardsigmoid.default)
def hardsigmoid(self: Any) -> Any:
    return aten.div.Tensor(aten.clamp.default(aten.add.Tensor(self, 3), 0, 6), 6)


@register_decomposition(aten.hardswish.default)
def hardswish(self: Any) -> Any:
    return aten.mul.Tensor(self, hardsigmoid(self))


@register_decomposition(aten.softplus.default)
def softplus(self: Any, beta: Any = 1, threshold: Any = 20) -> Any:
    scaled = aten.mul.Tensor(self, beta)
    soft = aten.div.Tensor(aten.log1p.default(aten.exp.default(scaled)), beta)
    return aten.where.self(aten.gt.Scalar(scaled, threshold), self, soft)


@register_decomposition(aten.mish.default)
def mish(self: Any) -> Any:
    return aten.mul.Tensor(self, aten.tanh.default(softplus(self)))


@register_decomposition(aten.threshold_backward.default)
def threshold_backward(grad_output: Any, self: Any, threshold: Any) -> Any:
    return aten.where.self(aten.le.Scalar(self, threshold),
                           aten.zeros_like.default(grad_output), grad_output)


@register_decomposition(aten.sigmoid_backward.default)
def sigmoid_backward(grad_output: Any, output: Any) -> Any:
    return aten.mul.Tensor(grad_output,
                           aten.mul.Tensor(output, aten.rsub.Scalar(output, 1)))


@register_decomposition(aten.tanh_backward.default)
def tanh_backward(grad_output: Any, output: Any) -> Any:
    return aten.mul.Tensor(grad_output,
                           aten.rsub.Scalar(aten.mul.Tensor(output, output), 1))


@register_decomposition(aten.silu_backward.default)
def silu_backward(grad_output: Any, self: Any) -> Any:
    sig = aten.sigmoid.default(self)
    local = aten.mul.Tensor(sig, aten.add.Tensor(
        aten.mul.Tensor(self, aten.rsub.Scalar(sig, 1)), 1))
    return aten.mul.Tensor(grad_output, local)


# -- pointwise composites -----------------------------------------------------------------------

@register_decomposition([aten.rsub.Tensor, aten.rsub.Scalar])
def rsub(self: Any, other: Any, alpha: Any = 1) -> Any:
    scaled = self if alpha == 1 else aten.mul.Tensor(self, alpha)
    if not hasattr(other, "shape"):
        return aten.add.Tensor(aten.neg.default(scaled), other)
    return aten.sub.Tensor(other, scaled)


@register_decomposition(aten.addcmul.default)
def addcmul(self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
    product = aten.mul.Tensor(tensor1, tensor2)
    return aten.add.Tensor(self, product if value == 1 else aten.mul.Tensor(product, value))


@register_decomposition(aten.addcdiv.default)
def addcdiv(self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
    quotient = aten.div.Tensor(tensor1, tensor2)
    return aten.add.Tensor(self, quotient if value == 1 else aten.mul.Tensor(quotient, value))


@register_decomposition(aten.lerp.Scalar)
def lerp(self: Any, end: Any, weight: Any) -> Any:
    return aten.add.Tensor(self, aten.mul.Tensor(aten.sub.Tensor(end, self), weight))


@register_decomposition(aten.clamp_min.default)
def clamp_min(self: Any, min: Any) -> Any:  # noqa: A002 - the schema's name
    return aten.clamp.default(self, min, None)


@register_decomposition(aten.clamp_max.default)
def clamp_max(self: Any, max: Any) -> Any:  # noqa: A002 - the schema's name
    return aten.clamp.default(self, None, max)


# -- losses ------------------------------------------------------------------------------------

@register_decomposition(aten.mse_loss.default)
def mse_loss(self: Any, target: Any, reduction: int = 1) -> Any:
    return _reduce(aten.pow.Tensor_Scalar(aten.sub.Tensor(self, target), 2), reduction)


@register_decomposition(aten.smooth_l1_loss.default)
def smooth_l1_loss(self: Any, target: Any, reduction: int = 1, beta: float = 1.0) -> Any:
    diff = aten.abs.default(aten.sub.Tensor(self, target))
    if beta == 0:
        return _reduce(diff, reduction)
    quadratic = aten.div.Tensor(aten.mul.Tensor(aten.pow.Tensor_Scalar(diff, 2), 0.5), beta)
    linear = aten.sub.Tensor(diff, 0.5 * beta)
    return _reduce(aten.where.self(aten.lt.Scalar(diff, beta), quadratic, linear), reduction)


@register_decomposition(aten.huber_loss.default)
def huber_loss(self: Any, target: Any, reduction: int = 1, delta: float = 1.0) -> Any:
    diff = aten.abs.default(aten.sub.Tensor(self, target))
    quadratic = aten.mul.Tensor(aten.pow.Tensor_Scalar(diff, 2), 0.5)
    linear = aten.mul.Tensor(aten.sub.Tensor(diff, 0.5 * delta), delta)
    return _reduce(aten.where.self(aten.lt.Scalar(diff, delta), quadratic, linear), reduction)


# -- normalisation -----------------------------------------------------------------------------

@register_decomposition(aten.native_layer_norm.default)
def native_layer_norm(input: Any, normalized_shape: list, weight: Any, bias: Any,  # noqa: A002
                      eps: float) -> tuple[Any, Any, Any]:
    dims = list(range(input.dim() - len(normalized_shape), input.dim()))
    mean = aten.mean.dim(input, dims, True)
    centered = aten.sub.Tensor(input, mean)
    var = aten.mean.dim(aten.mul.Tensor(centered, centered), dims, True)
    rstd = aten.rsqrt.default(aten.add.Tensor(var, eps))
    out = aten.mul.Tensor(centered, rstd)
    if weight is not None:
        out = aten.mul.Tensor(out, weight)
    if bias is not None:
        out = aten.add.Tensor(out, bias)
    return out, mean, rstd
