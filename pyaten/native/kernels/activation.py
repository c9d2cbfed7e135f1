"""Activation operators PyTorch declares with kernels, and their backward helpers.

- Structured TensorIterator operators are rows of the pointwise family (`family.register`):
  `elu`, `gelu`, `silu`, `mish`, `softplus`, `softshrink`, `hardshrink`, `hardsigmoid`,
  `leaky_relu`, `threshold` and the backward helpers PyTorch declares structured
  (`elu_backward`, `gelu_backward`, `silu_backward`, ...). The row's array function is called
  with the arguments in schema order (tensors as NumPy arrays in the compute dtype).
- `glu` is structured over two halves of its input (hand-written meta and impl).
- The unstructured ones (`hardtanh`, `hardswish`, `log_sigmoid_forward`, `_prelu_kernel`,
  `rrelu_with_noise`, their backward helpers, `mish_backward`) run one TensorIterator of
  their own (`_elementwise`), which also serves the Meta key (shapes only).
- Composites (`relu6`, `selu`, `celu`, `prelu`, `rrelu`, `log_sigmoid`,
  `rrelu_with_noise_backward`, and `math_silu_backward`/`math_mish_backward`, the
  CompositeImplicitAutograd kernels of `silu_backward`/`mish_backward`) call other operators
  through `aten_ops()`, as ATen's C++ composites do.
- `rrelu_with_noise` writes its `noise` argument (a `mutable` schema): the autograd kernel
  saves `noise` after the call (gen_autograd), so backward reads the slopes drawn.

float16/bfloat16 are computed in float32 and rounded once on write.
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor
from pyaten.native import family
from pyaten.native.family import (
    ALL_AND_REDUCED,
    FLOATING_AND_REDUCED,
    FLOATING_COMPLEX_AND_REDUCED,
    unsupported_dtype,
)
from pyaten.native.kernels import vector_loops
from pyaten.native.kernels.shape import wrap_dim
from pyaten.native.lazy import LazyModule
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import TensorIteratorMeta, quiet_call

sc = LazyModule("scipy.special")  # erf, for gelu

_FLOAT = FLOATING_AND_REDUCED


def _c(value, like: np.ndarray) -> np.ndarray:
    """A Python scalar as a 0-d array of `like`'s dtype (PyTorch reads Scalars as scalar_t)."""
    return np.asarray(value, dtype=like.dtype)


# --- elu / selu / celu ------------------------------------------------------------------------


def _elu(x, alpha, scale, input_scale):
    negcoef = _c(alpha * scale, x)
    return family.select(x <= 0, np.expm1(x * _c(input_scale, x)) * negcoef, x * _c(scale, x))


def _elu_backward(grad, alpha, scale, input_scale, is_result, y):
    negcoef = _c(alpha * scale, y)
    negiptcoef = _c(input_scale, y)
    poscoef = _c(scale, y)
    if is_result:
        neg = grad * negiptcoef * (y + negcoef)
    else:
        neg = grad * negiptcoef * negcoef * np.exp(y * negiptcoef)
    return family.select(y <= 0, neg, grad * poscoef)


def _check_elu_backward(grad, alpha, scale, input_scale, is_result, y) -> None:
    if is_result and alpha < 0:
        raise RuntimeError(
            "In-place elu backward calculation is triggered with a negative slope which is not "
            "supported. This is caused by calling in-place forward function with a negative "
            "slope, please call out-of-place version instead."
        )


# --- gelu -------------------------------------------------------------------------------------

_K_BETA = math.sqrt(2.0 / math.pi)
_K_KAPPA = 0.044715


def _check_approximate(approximate: str) -> None:
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")


# Abramowitz and Stegun 7.1.26: erf to 1.5e-7, the polynomial PyTorch's vectorised float
# loop evaluates (so float32 gelu agrees with PyTorch's more closely than an exact erf, and
# is twice as fast as SciPy's); double keeps SciPy's exact erf, as PyTorch keeps Sleef's.
_AS_P = np.float32(0.3275911)
_AS_A = tuple(np.float32(a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736,
                                      0.254829592))


def _erf(z):
    if z.dtype != np.float32:
        return sc.erf(z)
    t = 1 / (_AS_P * np.abs(z) + 1)
    r = _AS_A[0] * t
    for a in _AS_A[1:]:
        r += a
        r *= t
    return np.copysign(1 - r * np.exp(-(z * z)), z)


def _gelu(x, approximate, out=None):
    if approximate == "tanh":
        inner = _c(_K_BETA, x) * (x + _c(_K_KAPPA, x) * x * x * x)
        return _into(out, _c(0.5, x) * x * (1 + np.tanh(inner)))
    fast = vector_loops.fresh("gelu", x, out)  # large float32: one compiled pass
    if fast is not None:
        return fast
    return _into(out, x * _c(0.5, x) * (1 + _erf(x * _c(math.sqrt(0.5), x))))


def _gelu_backward(grad, x, approximate, out=None):
    return _into(out, _gelu_backward_value(grad, x, approximate, out))


def _gelu_backward_value(grad, x, approximate, out):
    if approximate == "tanh":
        x_sq = x * x
        inner = _c(_K_BETA, x) * (x + _c(_K_KAPPA, x) * x_sq * x)
        t = np.tanh(inner)
        left = _c(0.5, x) * x
        right = 1 + t
        right_derivative = left * (1 - t * t) * _c(_K_BETA, x) * (1 + _c(3 * _K_KAPPA, x) * x_sq)
        return grad * (_c(0.5, x) * right + right_derivative)
    fast = vector_loops.gelu_backward(grad, x, out)
    if fast is not None:
        return fast
    cdf = _c(0.5, x) * (1 + _erf(x * _c(math.sqrt(0.5), x)))
    pdf = np.exp(_c(-0.5, x) * x * x) * _c(1.0 / math.sqrt(2.0 * math.pi), x)
    return grad * (cdf + x * pdf)


# --- silu / mish / softplus -------------------------------------------------------------------


def _sigmoid(x):
    fast = vector_loops.fresh("sigmoid", x)  # large float32: one compiled pass
    return 1 / (1 + np.exp(-x)) if fast is None else fast


def _into(out, value):
    """`value`, written into `out` when the row's caller gave one (rows with `takes_out`)."""
    if out is None or value is out:
        return value
    np.copyto(out, value, casting="unsafe")
    return out


def _silu(x, out=None):
    fast = vector_loops.fresh("silu", x, out)  # large float32: one compiled pass
    return _into(out, x * _sigmoid(x) if fast is None else fast)


def _silu_backward(grad, x, out=None):
    fast = vector_loops.silu_backward(grad, x, out)
    if fast is not None:
        return fast
    s = _sigmoid(x)
    return _into(out, grad * s * (1 + x * (1 - s)))


def _softplus_plain(x):
    # log1p(exp(x)) without overflow
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _mish(x):
    return x * np.tanh(_softplus_plain(x))


def _mish_grad(grad, x):
    s = _sigmoid(x)
    t = np.tanh(_softplus_plain(x))
    return grad * (t + x * s * (1 - t * t))


def _softplus(x, beta, threshold):
    z = x * _c(beta, x)
    return family.select(z > _c(threshold, x), x, np.log1p(np.exp(z)) / _c(beta, x))


def _softplus_backward(grad, x, beta, threshold):
    z = np.exp(x * _c(beta, x))
    return family.select(x * _c(beta, x) > _c(threshold, x), grad, grad * z / (z + 1))


# --- shrinks, hardsigmoid, leaky_relu, threshold ----------------------------------------------


def _hardshrink(x, lambd):
    lam = _c(lambd, x)
    return family.select((x >= -lam) & (x <= lam), np.zeros((), x.dtype), x)


def _shrink_backward(grad, x, lambd):
    lam = _c(lambd, x)
    return family.select((x >= -lam) & (x <= lam), np.zeros((), grad.dtype), grad)


def _softshrink(x, lambd):
    lam = _c(lambd, x)
    # inside the band: +0 (PyTorch never returns -0 there), NaN stays NaN
    return family.select(x > lam, x - lam, family.select(x < -lam, x + lam, x * 0 + 0))


def _check_softshrink(x: Tensor, lambd) -> None:
    if x._dtype not in _FLOAT:
        raise unsupported_dtype("softshrink_check", x._dtype)
    if x._dtype is dt.bfloat16:
        high = 3.3895313892515355e38
    else:
        high = float(np.finfo(x._dtype.numpy).max)
    if not 0 <= lambd <= high:
        raise RuntimeError(
            f"lambda must be in range [0, {high:g}] for input dtype {x._dtype.scalar_name}, "
            f"but found {lambd:g}"
        )


def _hardsigmoid(x):
    return np.minimum(np.maximum(x + 3, 0), 6) / _c(6, x)


def _hardsigmoid_backward(grad, x):
    # PyTorch multiplies by 1/6 rounded to float (`1.0f / 6.0f`), also for double
    return family.select((x > -3) & (x < 3), grad * _c(np.float32(1) / np.float32(6), x),
                    np.zeros((), grad.dtype))


def _leaky_relu(x, negative_slope):
    scaled = x * _c(negative_slope, x)
    if 0 < negative_slope <= 1:
        # x > 0 ? x : x * slope, without np.where's per-element branch (8x slower on random
        # signs): for a slope in (0, 1] the larger of the two is the right one; -0 and NaN
        # come out as PyTorch's (max(-0, -0) is -0; NaN propagates)
        if isinstance(scaled, np.ndarray):
            return np.maximum(x, scaled, out=scaled)
        return np.maximum(x, scaled)
    return family.select(x > 0, x, scaled)


def _leaky_relu_backward(grad, x, negative_slope, self_is_result):
    return family.select(x > 0, grad, grad * _c(negative_slope, x))


def _check_leaky_relu_backward(grad, x, negative_slope, self_is_result) -> None:
    if self_is_result and negative_slope < 0:
        raise RuntimeError(
            "In-place leakyReLu backward calculation is triggered with a negative slope which "
            "is not supported. This is caused by calling in-place forward function with a "
            "negative slope, please call out-of-place version instead. File an issue at "
            "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu "
            "backward calculation with negative slope"
        )


def _threshold(x, threshold, value):
    bound = np.array(threshold).astype(x.dtype)
    return family.select(x <= bound, np.array(value).astype(x.dtype), x)


family.register(
    family.Pointwise("elu", _elu, _FLOAT),
    family.Pointwise("elu_backward", _elu_backward, _FLOAT, check=_check_elu_backward,
                     dispatch_name="elu_backward_cpu"),
    family.Pointwise("gelu", _gelu, _FLOAT, impl="gelu_out_cpu",
                     check=lambda x, approximate: _check_approximate(approximate),
                     dispatch_name="GeluKernelImpl", takes_out=True),
    family.Pointwise("gelu_backward", _gelu_backward, _FLOAT, impl="gelu_backward_out_cpu",
                     check=lambda g, x, approximate: _check_approximate(approximate),
                     dispatch_name="GeluBackwardKernelImpl", takes_out=True),
    family.Pointwise("silu", _silu, FLOATING_COMPLEX_AND_REDUCED, takes_out=True),
    family.Pointwise("silu_backward", _silu_backward, FLOATING_COMPLEX_AND_REDUCED,
                     takes_out=True),
    family.Pointwise("mish", _mish, _FLOAT),
    family.Pointwise("softplus", _softplus, _FLOAT),
    family.Pointwise("softplus_backward", _softplus_backward, _FLOAT),
    family.Pointwise("hardshrink", _hardshrink, _FLOAT),
    family.Pointwise("hardshrink_backward", _shrink_backward, _FLOAT,
                     dispatch_name="hardshrink_backward_cpu"),
    family.Pointwise("softshrink", _softshrink, _FLOAT,
                     check=_check_softshrink),
    family.Pointwise("softshrink_backward", _shrink_backward, _FLOAT,
                     dispatch_name="shrink_backward_cpu"),
    family.Pointwise("hardsigmoid", _hardsigmoid, _FLOAT),
    family.Pointwise("hardsigmoid_backward", _hardsigmoid_backward, _FLOAT,
                     dispatch_name="hardsigmoid_backward"),
    family.Pointwise("leaky_relu", _leaky_relu, _FLOAT),
    family.Pointwise("leaky_relu_backward", _leaky_relu_backward, _FLOAT,
                     check=_check_leaky_relu_backward, dispatch_name="leaky_relu_backward_cpu"),
    family.Pointwise("threshold", _threshold, ALL_AND_REDUCED),
)


# --- one TensorIterator for the unstructured operators ----------------------------------------


def _elementwise(op_name: str, error_name: str, dtypes, fn, inputs: tuple,
                 out: Tensor | None = None) -> Tensor:
    """Broadcast and promote `inputs` as TensorIterator does, check the dtype, then write
    `fn(*arrays)` into the (new, given or in-place) output; Meta tensors get only the shape."""
    if out is None:
        kind = "functional"
    elif out is inputs[0]:
        kind = "inplace"
    else:
        kind = "out"
    op = TensorIteratorMeta(kind, (out,), op_name, "CPU")
    if len(inputs) == 1:
        op.build_unary_op(inputs[0])
    else:
        op.build(tuple(inputs))
    if op.common_dtype not in dtypes:
        raise unsupported_dtype(error_name, op.common_dtype)
    if op.outputs[0]._device.type != "meta":
        op.write(quiet_call(fn, *op.input_arrays()))
    op.finish()
    return out if out is not None else op.outputs[0]


# --- hardtanh / relu6 -------------------------------------------------------------------------


def _hardtanh_bounds(self: Tensor, min_val, max_val) -> tuple:
    """PyTorch's checks, and its legacy rule: integer inputs take the bounds as integers
    (truncated), so the bounds never promote the result."""
    if self._dtype is dt.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if self._dtype.is_floating_point or self._dtype.is_complex:
        return min_val, max_val
    low, high = int(min_val), int(max_val)
    if self._dtype is dt.uint8 and (low < 0 or high < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return low, high


@native
def hardtanh(self: Tensor, min_val=-1, max_val=1) -> Tensor:
    low, high = _hardtanh_bounds(self, min_val, max_val)
    a = _aten()
    return a.clamp.out(self, low, high, out=a.empty_like.default(self))


@native
def hardtanh_out(self: Tensor, min_val=-1, max_val=1, out: Tensor = None) -> Tensor:
    low, high = _hardtanh_bounds(self, min_val, max_val)
    return _aten().clamp.out(self, low, high, out=out)


@native
def hardtanh_(self: Tensor, min_val=-1, max_val=1) -> Tensor:
    low, high = _hardtanh_bounds(self, min_val, max_val)
    return _aten().clamp_.default(self, low, high)


def _hardtanh_grad(min_val, max_val):
    def grad_fn(grad, x):
        low, high = _c(min_val, x), _c(max_val, x)
        return family.select((x <= low) | (x >= high), np.zeros((), grad.dtype), grad)
    return grad_fn


@native
def hardtanh_backward(grad_output: Tensor, self: Tensor, min_val, max_val) -> Tensor:
    return _elementwise("hardtanh_backward", "hardtanh_backward_cpu", _FLOAT,
                        _hardtanh_grad(min_val, max_val), (grad_output, self))


@native
def hardtanh_backward_out(grad_output: Tensor, self: Tensor, min_val, max_val,
                          grad_input: Tensor = None) -> Tensor:
    return _elementwise("hardtanh_backward", "hardtanh_backward_cpu", _FLOAT,
                        _hardtanh_grad(min_val, max_val), (grad_output, self), grad_input)


@native
def relu6(self: Tensor) -> Tensor:
    return _aten().hardtanh.default(self, 0, 6)


@native
def relu6_(self: Tensor) -> Tensor:
    return _aten().hardtanh_.default(self, 0, 6)


# --- hardswish --------------------------------------------------------------------------------


def _hardswish(x):
    return x * np.minimum(np.maximum(x + 3, 0), 6) / _c(6, x)


def _hardswish_backward(grad, x):
    inner = grad * (x / _c(3, x) + _c(0.5, x))
    return family.select(x <= -3, np.zeros((), grad.dtype), family.select(x < 3, inner, grad))


@native
def hardswish(self: Tensor) -> Tensor:
    return _elementwise("hardswish", "hardswish_cpu", _FLOAT, _hardswish, (self,))


@native
def hardswish_out(self: Tensor, out: Tensor = None) -> Tensor:
    return _elementwise("hardswish", "hardswish_cpu", _FLOAT, _hardswish, (self,), out)


@native
def hardswish_(self: Tensor) -> Tensor:
    return _elementwise("hardswish_", "hardswish_cpu", _FLOAT, _hardswish, (self,), self)


@native
def hardswish_backward(grad_output: Tensor, self: Tensor) -> Tensor:
    return _elementwise("hardswish_backward", "hardswish_backward_cpu", _FLOAT,
                        _hardswish_backward, (grad_output, self))


@native
def mish_backward(grad_output: Tensor, self: Tensor) -> Tensor:
    return _elementwise("mish_backward", "mish_backward_cpu", _FLOAT, _mish_grad,
                        (grad_output, self))


# --- selu / celu ------------------------------------------------------------------------------

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@native
def selu(self: Tensor) -> Tensor:
    return _aten().elu.default(self, _SELU_ALPHA, _SELU_SCALE, 1)


@native
def selu_(self: Tensor) -> Tensor:
    return _aten().elu_.default(self, _SELU_ALPHA, _SELU_SCALE, 1)


def _check_celu(alpha) -> None:
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")


@native
def celu(self: Tensor, alpha=1.0) -> Tensor:
    _check_celu(alpha)
    return _aten().elu.default(self, alpha, 1.0, 1.0 / alpha)


@native
def celu_(self: Tensor, alpha=1.0) -> Tensor:
    _check_celu(alpha)
    return _aten().elu_.default(self, alpha, 1.0, 1.0 / alpha)


# --- log_sigmoid ------------------------------------------------------------------------------


def _log_sigmoid_pair(x):
    z = np.exp(-np.abs(x))
    return np.minimum(x, 0) - np.log1p(z), z


def _log_sigmoid_backward(grad, x, buffer):
    negative = x < 0
    max_deriv = family.select(negative, 1, 0).astype(x.dtype)
    sign = family.select(negative, 1, -1).astype(x.dtype)
    return grad * (max_deriv - sign * (buffer / (1 + buffer)))


def _log_sigmoid_into(self: Tensor, output: Tensor | None, buffer: Tensor | None):
    if output is None:  # PyTorch's CPU kernel allocates both contiguous (not like `self`)
        a = _aten()
        shape = list(self.shape)
        output = a.empty.memory_format(shape, dtype=self.dtype, device=self.device)
        buffer = a.empty.memory_format(shape, dtype=self.dtype, device=self.device)
    output = _elementwise("log_sigmoid_forward", "log_sigmoid_cpu", _FLOAT,
                          lambda x: _log_sigmoid_pair(x)[0], (self,), output)
    buffer = _elementwise("log_sigmoid_forward", "log_sigmoid_cpu", _FLOAT,
                          lambda x: _log_sigmoid_pair(x)[1], (self,), buffer)
    return output, buffer


@native
def log_sigmoid_forward_cpu(self: Tensor) -> tuple[Tensor, Tensor]:
    return _log_sigmoid_into(self, None, None)


@native
def log_sigmoid_forward_out_cpu(self: Tensor, output: Tensor = None,
                                buffer: Tensor = None) -> tuple[Tensor, Tensor]:
    return _log_sigmoid_into(self, output, buffer)


@native
def log_sigmoid_backward_cpu(grad_output: Tensor, self: Tensor, buffer: Tensor) -> Tensor:
    return _elementwise("log_sigmoid_backward", "log_sigmoid_backward_cpu", _FLOAT,
                        _log_sigmoid_backward, (grad_output, self, buffer))


@native
def log_sigmoid_backward_cpu_out(grad_output: Tensor, self: Tensor, buffer: Tensor,
                                 grad_input: Tensor = None) -> Tensor:
    return _elementwise("log_sigmoid_backward", "log_sigmoid_backward_cpu", _FLOAT,
                        _log_sigmoid_backward, (grad_output, self, buffer), grad_input)


@native
def log_sigmoid(self: Tensor) -> Tensor:
    return _aten().log_sigmoid_forward.default(self)[0]


@native
def log_sigmoid_out(self: Tensor, out: Tensor = None) -> Tensor:
    buffer = _aten().empty.memory_format([0], dtype=self.dtype, device=self.device)
    return _aten().log_sigmoid_forward.output(self, output=out, buffer=buffer)[0]


# --- glu --------------------------------------------------------------------------------------


def _glu_halves(self: Tensor, dim: int) -> tuple[Tensor, Tensor, int]:
    if self.dim() == 0:
        raise RuntimeError("glu does not support 0-dimensional tensors")
    wrapped = wrap_dim(dim, self.dim())
    n = self.size(wrapped)
    if n % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {wrapped} is size {n}"
        )
    half = n // 2
    a = _aten()
    return (a.narrow.default(self, wrapped, 0, half),
            a.narrow.default(self, wrapped, half, half), wrapped)


@native
def meta_glu(op, self: Tensor, dim: int) -> None:
    first, second, _ = _glu_halves(self, dim)
    op.build_binary_op(first, second)


@native
def glu_out(op, self: Tensor, dim: int, out: Tensor) -> None:
    if op.common_dtype not in _FLOAT:
        raise unsupported_dtype("glu_cpu", op.common_dtype)
    if out._device.type == "meta":
        return
    a, b = op.input_arrays()
    op.write(quiet_call(lambda: a * _sigmoid(b)))


def _glu_backward_into(grad_output: Tensor, self: Tensor, dim: int,
                       grad_input: Tensor | None) -> Tensor:
    first, second, wrapped = _glu_halves(self, dim)
    if self._dtype not in _FLOAT:
        raise unsupported_dtype("glu_backward_cpu", self._dtype)
    a = _aten()
    if grad_input is None:
        grad_input = a.empty_like.default(self, memory_format=None)
    else:
        a.resize_.default(grad_input, list(self.shape))
    if grad_input._device.type != "meta" and grad_input.numel():
        x = first._numpy()
        s = quiet_call(_sigmoid, second._numpy())
        g = grad_output._numpy()
        half = first.size(wrapped)
        target = grad_input._numpy()
        lo = (slice(None),) * wrapped + (slice(0, half),)
        hi = (slice(None),) * wrapped + (slice(half, None),)
        np.copyto(target[lo], quiet_call(lambda: s * g), casting="unsafe")
        np.copyto(target[hi], quiet_call(lambda: (1 - s) * s * x * g), casting="unsafe")
    grad_input._version_counter.value += 1
    return grad_input


@native
def glu_backward_cpu(grad_output: Tensor, self: Tensor, dim: int) -> Tensor:
    return _glu_backward_into(grad_output, self, dim, None)


@native
def glu_backward_cpu_out(grad_output: Tensor, self: Tensor, dim: int,
                         grad_input: Tensor = None) -> Tensor:
    return _glu_backward_into(grad_output, self, dim, grad_input)


# --- prelu ------------------------------------------------------------------------------------


@native
def prelu(self: Tensor, weight: Tensor) -> Tensor:
    if self._dtype is not weight._dtype:
        raise RuntimeError(
            f"prelu: Type promoting not supported. Got {self._dtype.scalar_name} and "
            f"{weight._dtype.scalar_name}"
        )
    ndim = self.dim()
    if weight.numel() != 1:
        if ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = self.size(1) if ndim > 1 else 1
        if channels != weight.numel():
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter "
                f"numbers = {weight.numel()} and channel size = {channels}."
            )
    if weight.dim() > 1:
        raise RuntimeError(
            f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = "
            f"{weight.dim()}"
        )
    if ndim != weight.dim():
        shape = [1] * ndim
        if ndim > 1:
            shape[1] = weight.numel()
        weight = _aten().reshape.default(weight, shape)
    return _aten()._prelu_kernel.default(self, weight)


def _prelu(x, w):
    return family.select(x > 0, x, w * x)


@native
def _prelu_kernel(self: Tensor, weight: Tensor) -> Tensor:
    return _elementwise("_prelu_kernel", "prelu_cpu", _FLOAT, _prelu, (self, weight))


@native
def _prelu_kernel_backward(grad_output: Tensor, self: Tensor,
                           weight: Tensor) -> tuple[Tensor, Tensor]:
    grad_input = _elementwise(
        "_prelu_kernel_backward", "prelu_backward_cpu", _FLOAT,
        lambda g, x, w: family.select(x > 0, g, w * g), (grad_output, self, weight))
    # The weight's gradient has the broadcast shape, as PyTorch's kernel returns it; the
    # autograd engine sums it back to the weight's shape.
    grad_weight = _elementwise(
        "_prelu_kernel_backward", "prelu_backward_cpu", _FLOAT,
        lambda g, x, w: family.select(x > 0, np.zeros((), g.dtype), x * g),
        (grad_output, self, weight))
    return grad_input, grad_weight


# --- rrelu ------------------------------------------------------------------------------------


def _check_rrelu(lower, upper) -> None:
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")


def _rrelu_into(self: Tensor, noise: Tensor, lower, upper, training: bool, generator,
                out: Tensor | None) -> Tensor:
    a = _aten()
    if not training:
        slope = (lower + upper) / 2
        if out is self:
            return a.leaky_relu_.default(self, slope)
        if out is None:
            return a.leaky_relu.default(self, slope)
        return a.leaky_relu.out(self, slope, out=out)
    if self._dtype not in _FLOAT:
        raise unsupported_dtype("rrelu_with_noise_out_cpu", self._dtype)
    if self._device.type == "meta":
        return self if out is self else (a.empty_like.default(self) if out is None else out)
    r = a.empty_like.default(self, memory_format=None)
    a.uniform_.default(r, lower, upper, generator=generator)
    rr = r._numpy()
    x = self._numpy()
    a.resize_.default(noise, list(self.shape))
    np.copyto(noise._numpy(), family.select(x <= 0, rr, 1), casting="unsafe")
    noise._version_counter.value += 1
    value = family.select(x <= 0, x * rr, x)
    if out is None:
        out = a.empty_like.default(self)
    elif out is not self:
        a.resize_.default(out, list(self.shape))
    np.copyto(out._numpy(), value, casting="unsafe")
    out._version_counter.value += 1
    return out


@native
def rrelu_with_noise_cpu(self: Tensor, noise: Tensor, lower=0.125, upper=1 / 3,
                         training=False, generator=None) -> Tensor:
    return _rrelu_into(self, noise, lower, upper, training, generator, None)


@native
def rrelu_with_noise_cpu_(self: Tensor, noise: Tensor, lower=0.125, upper=1 / 3,
                          training=False, generator=None) -> Tensor:
    return _rrelu_into(self, noise, lower, upper, training, generator, self)


@native
def rrelu_with_noise_out_cpu(self: Tensor, noise: Tensor, lower=0.125, upper=1 / 3,
                             training=False, generator=None, out: Tensor = None) -> Tensor:
    return _rrelu_into(self, noise, lower, upper, training, generator, out)


@native
def rrelu_with_noise_backward(grad_output: Tensor, self: Tensor, noise: Tensor, lower, upper,
                              training: bool, self_is_result: bool) -> Tensor:
    a = _aten()
    if training and upper - lower > 1e-6:
        return a.mul.Tensor(grad_output, noise)
    slope = (lower + upper) / 2
    return a.leaky_relu_backward.default(grad_output, self, slope, self_is_result)


@native
def rrelu(self: Tensor, lower=0.125, upper=1 / 3, training=False, generator=None) -> Tensor:
    _check_rrelu(lower, upper)
    a = _aten()
    noise = a.empty_like.default(self)
    return a.rrelu_with_noise.default(self, noise, lower, upper, training, generator)


@native
def rrelu_(self: Tensor, lower=0.125, upper=1 / 3, training=False, generator=None) -> Tensor:
    _check_rrelu(lower, upper)
    a = _aten()
    noise = a.empty_like.default(self)
    return a.rrelu_with_noise_.default(self, noise, lower, upper, training, generator)


# --- silu_backward / mish_backward as composites (CompositeImplicitAutograd) ------------------


@native
def math_silu_backward(grad_output: Tensor, self: Tensor) -> Tensor:
    """PyTorch's `math_silu_backward`: differentiable, so silu's double backward works."""
    a = _aten()
    s = a.sigmoid.default(self)
    return a.mul.Tensor(grad_output, a.mul.Tensor(s, a.add.Scalar(
        a.mul.Tensor(self, a.rsub.Scalar(s, 1)), 1)))


@native
def math_mish_backward(grad_output: Tensor, self: Tensor) -> Tensor:
    """PyTorch's `math_mish_backward`: `grad * (tanh(softplus(x)) + x * sigmoid(x) *
    (1 - tanh(softplus(x))^2))`, from differentiable operators."""
    a = _aten()
    t = a.tanh.default(a.softplus.default(self))
    s = a.sigmoid.default(self)
    inner = a.mul.Tensor(a.mul.Tensor(self, s), a.rsub.Scalar(a.mul.Tensor(t, t), 1))
    return a.mul.Tensor(grad_output, a.add.Tensor(t, inner))
