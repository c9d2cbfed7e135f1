"""openreg's DispatchStub loops: the inner loops of the structured operators it reuses.

A structured operator with the `stub` strategy keeps pyaten's meta and impl; the impl calls
a DispatchStub with the device type, and these functions are openreg's entries: pointwise
loops get the iterator (`op.inputs`, `op.outputs`, `op.common_dtype`, `op.shape`), reduction
loops `(self, dims, keepdim, out)`. They compute as pyaten's CPU loops do (float16/bfloat16
in float32, rounded when stored). `register_stubs` puts every `*_stub` function of this
module on pyaten's stub of that name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import pyaten
from pyaten.core.stub import all_stubs
from pyaten_openreg.access import (
    FLOAT32,
    REDUCED,
    compute_dtype,
    host_array,
    numpy_dtype,
    quiet,
    store,
)


def stub_kernels() -> dict[str, Any]:
    """The DispatchStub loops defined here, by stub name (`add_stub` -> its function; lerp's
    stubs keep PyTorch's names, `lerp_kernel_scalar_weight`)."""
    found = {name: fn for name, fn in globals().items()
             if name.endswith("_stub") and callable(fn) and not name.startswith("_")}
    found.update(lerp_kernel_scalar_weight=lerp_scalar_loop,
                 lerp_kernel_tensor_weight=lerp_tensor_loop)
    return found


def register_stubs(device_type: str = "openreg") -> list[str]:
    """Register each loop on pyaten's stub of its name; the stub names registered."""
    stubs = all_stubs()
    done = []
    for name, fn in stub_kernels().items():
        stub = stubs.get(name)
        if stub is None:
            raise RuntimeError(f"openreg: pyaten has no DispatchStub named '{name}'")
        stub.register(device_type, fn)
        done.append(name)
    return done


def deregister_stubs(device_type: str = "openreg") -> None:
    stubs = all_stubs()
    for name in stub_kernels():
        if name in stubs:
            stubs[name].deregister(device_type)


# -- pointwise: DispatchStub loops ---------------------------------------------------------------


def input_arrays(op) -> list[np.ndarray]:
    """The iterator's inputs as arrays in its compute dtype (broadcasting is NumPy's)."""
    target = compute_dtype(op.common_dtype)
    return [a if a.dtype is target else a.astype(target) for a in map(host_array, op.inputs)]


def write_result(op, value) -> None:
    """Store a loop's result into output 0, rounded to a reduced common dtype first."""
    out = op.outputs[0]
    if op.common_dtype in REDUCED and out.dtype is not op.common_dtype:
        value = np.asarray(value).astype(numpy_dtype(op.common_dtype))
    store(host_array(out), value)


def _compute(op, ufunc, *arrays) -> None:
    """`ufunc(*arrays)` into output 0: straight into its memory when dtype and shape agree."""
    target = host_array(op.outputs[0])
    dtype = target.dtype
    if dtype is arrays[0].dtype and target.shape == op.shape and ufunc.__class__ is np.ufunc:
        if dtype.kind in "fc":
            quiet(ufunc, *arrays, out=target)
        else:
            ufunc(*arrays, out=target)
        return
    write_result(op, quiet(ufunc, *arrays))


def add_stub(op, alpha) -> None:
    a, b = input_arrays(op)
    if alpha != 1 or alpha.__class__ is complex:
        b = b * np.asarray(alpha).astype(a.dtype)
    _compute(op, np.add if a.dtype.kind != "b" else np.logical_or, a, b)


def mul_stub(op) -> None:
    a, b = input_arrays(op)
    _compute(op, np.multiply if a.dtype.kind != "b" else np.logical_and, a, b)


def div_true_stub(op) -> None:
    _compute(op, np.true_divide, *input_arrays(op))


def _integer_quotient(op, a, b, trunc: bool) -> np.ndarray:
    if np.any(b == 0):
        raise RuntimeError("ZeroDivisionError")
    quotient = np.floor_divide(a, b)
    if trunc:
        quotient = quotient + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))
    return quotient


def div_trunc_stub(op) -> None:
    a, b = input_arrays(op)
    if a.dtype.kind in "iu":
        write_result(op, _integer_quotient(op, a, b, True))
    else:
        _compute(op, lambda x, y: np.trunc(np.true_divide(x, y)), a, b)


def div_floor_stub(op) -> None:
    a, b = input_arrays(op)
    if a.dtype.kind in "iu":
        write_result(op, _integer_quotient(op, a, b, False))
    else:
        _compute(op, _floor_divide, a, b)


def _floor_divide(a, b):
    # Python's (and PyTorch's) floor division of floats: floor of the true quotient, with the
    # sign of an exact zero kept.
    quotient = np.true_divide(a, b)
    floored = np.floor(quotient)
    return np.where(quotient == 0, quotient, floored)


def _elementwise(ufunc):
    """The loop of a family row's stub (`loop(op, args)`): `ufunc` over the inputs."""

    def loop(op, args=None) -> None:
        _compute(op, ufunc, *input_arrays(op))

    return loop


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


neg_stub = _elementwise(np.negative)
exp_stub = _elementwise(np.exp)
log_stub = _elementwise(np.log)
sqrt_stub = _elementwise(np.sqrt)
rsqrt_stub = _elementwise(lambda x: 1 / np.sqrt(x))
sin_stub = _elementwise(np.sin)
cos_stub = _elementwise(np.cos)
tanh_stub = _elementwise(np.tanh)
sigmoid_stub = _elementwise(_sigmoid)
maximum_stub = _elementwise(np.maximum)
minimum_stub = _elementwise(np.minimum)
abs_stub = _elementwise(np.abs)
sgn_stub = _elementwise(np.sign)  # NumPy 2: z / |z| for complex, as torch.sgn
logical_and_stub = _elementwise(np.logical_and)
logical_or_stub = _elementwise(np.logical_or)


def _row(fn):
    """The loop of a family row whose stub gets the call's arguments (`loop(op, args)`):
    `fn` called with them, each tensor replaced by its array in the compute dtype."""

    def loop(op, args) -> None:
        arrays = iter(input_arrays(op))
        call = [next(arrays) if isinstance(a, pyaten.Tensor) else a for a in args]
        write_result(op, quiet(fn, *call))

    return loop


def _scalar(value: Any, like: np.ndarray) -> Any:
    return np.asarray(value).astype(like.dtype) if like.dtype.kind in "fc" else value


def _addcmul(a, b, c, value):
    return a + (b * c) * _scalar(value, a)


def _addcdiv(a, b, c, value):
    return a + (b / c) * _scalar(value, a)


def _lerp(start, end, weight):
    # |weight| < 0.5: start + weight * diff, else end - diff * (1 - weight): exact at both
    # ends, as PyTorch's loop.
    diff = end - start
    return np.where(np.abs(weight) < 0.5, start + weight * diff, end - diff * (1 - weight))


addcmul_stub = _row(_addcmul)
addcdiv_stub = _row(_addcdiv)
lerp_scalar_loop = _row(lambda start, end, weight: _lerp(start, end, _scalar(weight, start)))
lerp_tensor_loop = _row(_lerp)


def _compare(ufunc):
    def loop(op) -> None:
        a, b = input_arrays(op)
        _compute(op, ufunc, a, b)

    return loop


eq_stub = _compare(np.equal)
ne_stub = _compare(np.not_equal)
lt_stub = _compare(np.less)
le_stub = _compare(np.less_equal)
gt_stub = _compare(np.greater)
ge_stub = _compare(np.greater_equal)


def pow_stub(op, *args) -> None:
    a, b = input_arrays(op)
    if a.dtype.kind in "iu" and np.any(b < 0):
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    _compute(op, np.power, a, b)


def clamp_scalar_stub(op, min, max) -> None:
    (a,) = input_arrays(op)
    low = -np.inf if min is None else min
    high = np.inf if max is None else max
    _compute(op, np.clip, a, low, high)


def threshold_backward_stub(op, args) -> None:
    threshold = args[-1]
    grad, x = input_arrays(op)
    _compute(op, lambda g, v: np.where(v <= threshold, 0, g), grad, x)


def sigmoid_backward_stub(op, args=None) -> None:
    grad, y = input_arrays(op)
    _compute(op, lambda g, s: g * (1 - s) * s, grad, y)


def tanh_backward_stub(op, args=None) -> None:
    grad, y = input_arrays(op)
    _compute(op, lambda g, t: g * (1 - t * t), grad, y)


# -- reductions: DispatchStub loops `loop(self, dims, keepdim, out)` -------------------------------


def accumulate_dtype(dtype: Any) -> np.dtype:
    if dtype in REDUCED:
        return FLOAT32
    if dtype.is_floating_point or dtype.is_complex:
        return numpy_dtype(dtype)
    return np.dtype(np.int64)


def _reduction(fn, by_input: bool = False, ordered: str | None = None):
    """The loop of a reduction row: `fn(source, dims, keepdim)` in the accumulate dtype (the
    input's compute dtype for max/min/arg rows), stored into `out`. `ordered` names the
    kernel in the error for complex inputs (they have no order)."""

    def loop(self, dims, keepdim, out) -> None:
        target = host_array(out)
        if target.size == 0:
            return
        if ordered is not None and self.dtype.is_complex:
            raise NotImplementedError(
                f'"{ordered}" not implemented for \'{self.dtype.scalar_name}\''
            )
        source = host_array(self)
        acc = compute_dtype(self.dtype) if by_input else accumulate_dtype(out.dtype)
        if source.dtype != acc:
            source = source.astype(acc)
        store(target, quiet(fn, source, tuple(dims), keepdim))

    return loop


def _summed(ufunc):
    """The loop of sum and prod: one `ufunc.reduce`, straight into `out` when its dtype is
    the accumulate dtype."""

    def loop(self, dims, keepdim, out) -> None:
        target = host_array(out)
        if target.size == 0:
            return
        acc = accumulate_dtype(out.dtype)
        source = host_array(self)
        if target.dtype == acc:
            quiet(ufunc.reduce, source, tuple(dims), acc, target, keepdim)
        else:
            store(target, quiet(ufunc.reduce, source, tuple(dims), acc, None, keepdim))

    return loop


def _arg(fn):
    def reduce(source, dims, keepdim):
        if len(dims) == source.ndim and source.ndim != 1:
            flat = fn(source.reshape(-1))
            return np.reshape(flat, (1,) * source.ndim) if keepdim else flat
        axis = dims[0] if dims else None
        return fn(source, axis=axis, keepdims=keepdim)

    return reduce


def _amax(source, dims, keepdim):
    return np.max(source, axis=dims, keepdims=keepdim)


def _amin(source, dims, keepdim):
    return np.min(source, axis=dims, keepdims=keepdim)


sum_stub = _summed(np.add)
mean_stub = _reduction(lambda s, dims, keepdim: np.mean(s, axis=dims, keepdims=keepdim))
prod_stub = _summed(np.multiply)
amax_stub = _reduction(_amax, by_input=True, ordered="max_values_cpu")
amin_stub = _reduction(_amin, by_input=True, ordered="min_values_cpu")
argmax_stub = _reduction(_arg(np.argmax), by_input=True)
argmin_stub = _reduction(_arg(np.argmin), by_input=True)
