"""Backward helpers of the pointwise family that PyTorch declares as operators.

`sigmoid_backward`, `tanh_backward`, `logit_backward` and `threshold_backward` are the
gradients of sigmoid, tanh, logit and relu (`threshold_backward(grad, result, 0)`). They are
operators of their own, structured over a TensorIterator as in PyTorch, so their own
derivatives (the gradient of a gradient) and Meta shapes come as for any operator. Each is a
row of the family table (`pyaten/native/family.py`): the array function in schema order, the
dtypes PyTorch's `AT_DISPATCH` accepts, and the build (`"same"`: the two tensors broadcast and
promote to their common dtype).
"""

from __future__ import annotations

import numpy as np

from pyaten.native import family, fastpath
from pyaten.native.kernels import vector_loops


def _sigmoid_backward(grad: np.ndarray, output: np.ndarray) -> np.ndarray:
    # grad * (1 - y) * y; complex: grad * conj((1 - y) * y)
    if output.dtype.kind == "c":
        return grad * np.conj((1 - output) * output)
    return grad * (1 - output) * output


def _tanh_backward(grad: np.ndarray, output: np.ndarray) -> np.ndarray:
    # grad * (1 - y^2); complex: grad * conj(1 - y^2)
    if output.dtype.kind == "c":
        return grad * np.conj(1 - output * output)
    return grad * (1 - output * output)


def _logit_backward(grad: np.ndarray, x: np.ndarray, eps: float | None) -> np.ndarray:
    one = np.ones((), x.dtype)
    if eps is None or eps < 0:
        # Outside [0, 1] NaN; at 0 and 1 grad * inf (0 * inf is NaN); else grad / (x (1 - x)).
        inside = grad / (x * (one - x))
        edge = grad * np.array(np.inf, x.dtype)
        result = np.where((x == 0) | (x == 1), edge, inside)
        return np.where((x < 0) | (x > 1), np.array(np.nan, x.dtype), result)
    low = np.array(eps, x.dtype)
    high = one - low
    # Outside [eps, 1 - eps] zero (NaN fails both tests and stays NaN).
    return np.where((x < low) | (x > high), np.zeros((), x.dtype), grad / (x * (one - x)))


def _threshold_backward(grad: np.ndarray, x: np.ndarray, threshold,
                        out: np.ndarray | None = None) -> np.ndarray:
    # PyTorch's threshold kernel over (self, grad): x <= threshold ? 0 : grad. The threshold
    # is read in the compute dtype; NaN in x passes grad through.
    bound = np.array(threshold).astype(x.dtype)
    if vector_loops.threshold_backward(grad, x, bound, out):  # one compiled pass
        return out
    result = family.select(x <= bound, np.zeros((), grad.dtype), grad)
    if out is None:
        return result
    np.copyto(out, result, casting="unsafe")
    return out


_FLOAT_COMPLEX = family.FLOATING_COMPLEX_AND_REDUCED

_STUBS = family.register(
    family.Pointwise("sigmoid_backward", _sigmoid_backward, _FLOAT_COMPLEX),
    family.Pointwise("tanh_backward", _tanh_backward, _FLOAT_COMPLEX),
    family.Pointwise("logit_backward", _logit_backward, family.FLOATING_AND_REDUCED),
    family.Pointwise(
        "threshold_backward", _threshold_backward, family.ALL_AND_REDUCED,
        dispatch_name="threshold_cpu", takes_out=True,
    ),
)

# threshold_backward's row function is not a ufunc: its fast function (two tensors of one
# shape and a number; Note: the structured fast path) is registered here.
fastpath.register(
    "threshold_backward",
    fastpath.with_scalars(_threshold_backward, _STUBS["threshold_backward_stub"],
                          fastpath.FLOATS | fastpath.INTEGERS, 2)[0],
    None, family.caller_site(1),
)
