"""pyaten.nn.functional: activations (relu ... softmin).

Each function has `torch.nn.functional`'s signature, defaults and checks. Where PyTorch calls
a declared operator (`torch._C._nn.elu`, `torch.selu`, `torch.rrelu`, ...) these call ours
(`pyaten.nn._C`, the generated `pyaten.<op>` bindings), so every call dispatches and its
gradient comes from derivatives.yaml; `tanhshrink`, `softsign` and `softmin` are composed in
Python from other operators, as PyTorch composes them. `inplace=True` calls the `op_` form.
"""

from __future__ import annotations

import warnings
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.nn import _C
from pyaten.nn._bindings import ops as _ops

__all__ = [
    "celu",
    "celu_",
    "elu",
    "elu_",
    "gelu",
    "glu",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "leaky_relu",
    "leaky_relu_",
    "log_softmax",
    "logsigmoid",
    "mish",
    "prelu",
    "relu",
    "relu6",
    "relu_",
    "rrelu",
    "rrelu_",
    "selu",
    "selu_",
    "sigmoid",
    "silu",
    "softmax",
    "softmin",
    "softplus",
    "softshrink",
    "softsign",
    "tanh",
    "tanhshrink",
    "threshold",
    "threshold_",
]




def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """`threshold(input, threshold, value, inplace=False)`: `value` where `input <= threshold`."""
    if inplace:
        return _ops.threshold_(input, threshold, value)
    return _ops.threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return _ops.threshold_(input, threshold, value)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return _ops.relu_(input)
    return _ops.relu(input)


def relu_(input: Tensor) -> Tensor:
    return _ops.relu_(input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """`a * sigmoid(b)` where `a` and `b` are the halves of `input` along `dim`."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    return _C.glu(input, dim)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return _C.hardtanh_(input, min_val, max_val)
    return _C.hardtanh(input, min_val, max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return _C.hardtanh_(input, min_val, max_val)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return _C.relu6_(input)
    return _C.relu6(input)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    if inplace:
        return _C.elu_(input, alpha)
    return _C.elu(input, alpha)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _C.elu_(input, alpha)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return _ops.selu_(input)
    return _ops.selu(input)


def selu_(input: Tensor) -> Tensor:
    return _ops.selu_(input)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    if inplace:
        return _ops.celu_(input, alpha)
    return _ops.celu(input, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _ops.celu_(input, alpha)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    if inplace:
        return _C.leaky_relu_(input, negative_slope)
    return _C.leaky_relu(input, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return _C.leaky_relu_(input, negative_slope)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """`max(0, x) + weight * min(0, x)`, `weight` one value or one per channel (dim 1)."""
    return _ops.prelu(input, weight)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: negative slopes drawn from U(lower, upper) when training, their
    mean otherwise."""
    if inplace:
        return _ops.rrelu_(input, lower, upper, training)
    return _ops.rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    return _ops.rrelu_(input, lower, upper, training)


def logsigmoid(input: Tensor) -> Tensor:
    return _C.log_sigmoid(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """`x * Phi(x)`; `approximate="tanh"` uses the tanh estimate of `Phi`."""
    return _C.gelu(input, approximate=approximate)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    return _ops.hardshrink(input, lambd)


def tanhshrink(input: Tensor) -> Tensor:
    return input - input.tanh()


def softsign(input: Tensor) -> Tensor:
    return input / (input.abs() + 1)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return _C.softplus(input, beta, threshold)


def _get_softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. "
        "Change the call to include dim=X as an argument.",
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    if dtype is None:
        return (-input).softmax(dim)
    return (-input).softmax(dim, dtype=dtype)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    if dtype is None:
        return input.softmax(dim)
    return input.softmax(dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: Any = None) -> Tensor:
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    if dtype is None:
        return input.log_softmax(dim)
    return input.log_softmax(dim, dtype=dtype)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    return _C.softshrink(input, lambd)


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return _C.hardsigmoid_(input)
    return _C.hardsigmoid(input)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return _C.silu_(input)
    return _C.silu(input)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return _C.mish_(input)
    return _C.mish(input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return _C.hardswish_(input)
    return _C.hardswish(input)
