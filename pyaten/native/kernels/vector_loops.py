"""Compiled float32 loops for the large pointwise and row kernels: exp, sigmoid, silu,
(log_)softmax, and max_pool2d's backward.

Note: vectorised float32 exp
    NumPy's float32 `exp` is a per-element libm-quality loop (7 ms for 4M elements on the
    2-core machine; PyTorch's Sleef `expf` takes 4.4), and sigmoid, silu and softmax are
    several NumPy passes around it. With Numba installed (the `fast` extra) these run as one
    compiled loop each, whose `expf` (kernels/_vector_numba.py) is Cephes' polynomial with
    the power of two made from exponent bits: no libm call and no branch, so LLVM vectorises
    it 8 lanes wide (exp 4M: 1.8 ms; sigmoid 2.2 ms against PyTorch's 3.9). It is within one
    ulp of the exact value, as PyTorch's Sleef `expf_u10`, overflows to inf from 88.73 and
    gives subnormals down to -103.97, as `expf`. The loops run when compiled loops are on
    (pyaten/native/compiled.py: Numba installed, `PYATEN_NO_NUMBA` unset) and the call has
    at least `compiled.MIN_ELEMENTS` float32 elements in row-major order; everything else
    takes the NumPy path, which stays the reference (`tests/test_large_ops.py` runs both and
    compares them with PyTorch). The loops are serial: one thread, which every
    `set_num_threads` count allows.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from pyaten.native import compiled

__all__ = [
    "adam_step", "col2im_last_2d", "erf_into", "exp_into", "fresh", "gelu_backward",
    "loops_for", "max_pool2d_backward", "max_pool_2x2", "relu_into", "sigmoid_into",
    "silu_backward", "silu_into", "softmax_rows", "threshold_backward",
]

_F32 = np.dtype(np.float32)
_STATE: dict[str, ModuleType | None | bool] = {"module": None, "loaded": False}


def _module() -> ModuleType | None:
    if not _STATE["loaded"]:
        _STATE["loaded"] = True
        if compiled.available() is not None:
            from pyaten.native.kernels import _vector_numba

            _STATE["module"] = _vector_numba
    return _STATE["module"]  # type: ignore[return-value]


_FLOATS = (_F32, np.dtype(np.float64))


def loops_for(*arrays: np.ndarray, dtypes: tuple = (_F32,)) -> ModuleType | None:
    """The compiled loops when they should run on these arrays (of one of `dtypes`, all
    alike, row-major, at least `compiled.MIN_ELEMENTS` elements unless the compiled path is
    forced on), else None."""
    first = arrays[0]
    if not compiled.may_run(first.size) or first.dtype not in dtypes:
        return None  # (the size first: most calls of a small tensor stop there)
    for a in arrays:
        if a.dtype != first.dtype or not a.flags.c_contiguous:
            return None
    if compiled.loops(first.size) is None:
        return None
    return _module()


def _unary(name: str):
    def into(x: np.ndarray, out: np.ndarray) -> bool:
        """Compute into `out` (x's shape) by the compiled loop; False: not applicable."""
        if x.shape != out.shape:
            return False
        fast = loops_for(x, out)
        if fast is None:
            return False
        getattr(fast, name)(x.reshape(-1), out.reshape(-1))
        return True

    into.__name__ = into.__qualname__ = name.removesuffix("_f32") + "_into"
    return into


def relu_into(x: np.ndarray, out: np.ndarray) -> bool:
    """relu of float32/float64 x into out (x's shape) by the compiled loop; False: not
    applicable. (NumPy's `maximum` runs its NaN-aware loop: 3.5x slower on 64K floats.)"""
    if x.shape != out.shape:
        return False
    fast = loops_for(x, out, dtypes=_FLOATS)
    if fast is None:
        return False
    fast.relu(x.reshape(-1), out.reshape(-1))
    return True


def threshold_backward(grad: np.ndarray, x: np.ndarray, threshold: np.ndarray,
                       out: np.ndarray | None) -> bool:
    """out = `x <= threshold ? 0 : grad` by the compiled loop (one pass instead of six);
    False: not applicable."""
    if out is None or grad.shape != x.shape or out.shape != x.shape:
        return False
    fast = loops_for(grad, x, out, dtypes=_FLOATS)
    if fast is None:
        return False
    fast.threshold_backward(grad.reshape(-1), x.reshape(-1), x.dtype.type(threshold),
                            out.reshape(-1))
    return True


def silu_backward(grad: np.ndarray, x: np.ndarray,
                  out: np.ndarray | None = None) -> np.ndarray | None:
    """silu's gradient by the compiled loop (grad, x and out of one shape), or None."""
    return _backward("silu_backward_f32", grad, x, out)


def gelu_backward(grad: np.ndarray, x: np.ndarray,
                  out: np.ndarray | None = None) -> np.ndarray | None:
    """gelu's (erf form) gradient by the compiled loop (grad, x and out of one shape), or
    None."""
    return _backward("gelu_backward_f32", grad, x, out)


def _backward(name: str, grad: np.ndarray, x: np.ndarray,
              out: np.ndarray | None) -> np.ndarray | None:
    if grad.shape != x.shape or (out is not None and out.shape != x.shape):
        return None
    fast = loops_for(grad, x) if out is None else loops_for(grad, x, out)
    if fast is None:
        return None
    target = np.empty(x.shape, x.dtype) if out is None else out
    getattr(fast, name)(grad.reshape(-1), x.reshape(-1), target.reshape(-1))
    return target


def fresh(name: str, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray | None:
    """`name` ("exp", "sigmoid", "silu", "gelu") of x by the compiled loop, into `out` (of
    x's shape) or a new array; None: not applicable."""
    if out is not None and out.shape != x.shape:
        return None
    fast = loops_for(x) if out is None else loops_for(x, out)
    if fast is None:
        return None
    target = np.empty(x.shape, x.dtype) if out is None else out
    getattr(fast, f"{name}_f32")(x.reshape(-1), target.reshape(-1))
    return target


exp_into = _unary("exp_f32")
erf_into = _unary("erf_f32")
sigmoid_into = _unary("sigmoid_f32")
silu_into = _unary("silu_f32")


def softmax_rows(x: np.ndarray, axis: int, out: np.ndarray, log: bool) -> bool:
    """(log_)softmax of x along its last axis into out by the compiled loop; False: not
    applicable (another axis, dtype or layout, an empty row)."""
    if axis != x.ndim - 1 or x.shape != out.shape or x.ndim == 0 or x.shape[-1] == 0:
        return False
    if np.may_share_memory(x, out):  # (log_softmax reads x again after writing exps)
        return False
    fast = loops_for(x, out)
    if fast is None:
        return False
    n = x.shape[-1]
    fast.softmax_rows_f32(x.reshape(-1, n), out.reshape(-1, n), log)
    return True


def max_pool2d_backward(grad: np.ndarray, indices: np.ndarray, grad_input: np.ndarray) -> bool:
    """grad_input (B, H*W) = the sum of grad (B, L) at indices (B, L) by the compiled loop;
    False (nothing written): not applicable, or an index outside the plane."""
    if (grad.dtype.kind != "f" or grad.dtype != grad_input.dtype
            or indices.dtype != np.int64 or not grad_input.flags.c_contiguous):
        return False
    if compiled.loops(grad.size) is None:
        return False
    fast = _module()
    if fast is None:
        return False
    return bool(fast.max_pool2d_backward(grad, indices, grad_input))


def adam_step(param: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray,
              exp_avg_sq: np.ndarray, beta1: float, beta2: float, step_size: float,
              bias2_sqrt: float, eps: float) -> bool:
    """Adam's update of row-major arrays of one float dtype and shape in one compiled pass
    (`step_size` signed: -lr / bias_correction1); False: not applicable (nothing written)."""
    dtype = param.dtype
    if dtype.kind != "f" or dtype.itemsize < 4:
        return False
    for a in (param, grad, exp_avg, exp_avg_sq):
        if a.dtype != dtype or a.shape != param.shape or not a.flags.c_contiguous:
            return False
    if compiled.available() is None:  # any size: one call instead of six NumPy passes
        return False
    fast = _module()
    if fast is None:
        return False
    kind = dtype.type
    fast.adam_step(param.reshape(-1), grad.reshape(-1), exp_avg.reshape(-1),
                   exp_avg_sq.reshape(-1), kind(1 - beta1), kind(beta2), kind(1 - beta2),
                   kind(step_size), kind(bias2_sqrt), kind(eps))
    return True


def col2im_last_2d(cols: np.ndarray, stride: tuple, dilation: tuple, gx: np.ndarray) -> bool:
    """gx (N, Hp, Wp, C), the padded channels-last image, += the 2-d channels-last columns
    cols (N, OH, OW, KH, KW, C) by the compiled loop; False: not applicable."""
    if (cols.dtype.kind != "f" or cols.dtype != gx.dtype or cols.ndim != 6
            or not cols.flags.c_contiguous or not gx.flags.c_contiguous):
        return False
    if compiled.loops(cols.size) is None:
        return False
    fast = _module()
    if fast is None:
        return False
    fast.col2im_last_2d(cols, stride[0], stride[1], dilation[0], dilation[1], gx)
    return True


def max_pool_2x2(x: np.ndarray, out: np.ndarray, indices: np.ndarray) -> bool:
    """max_pool2d of planes x (B, H, W) with 2x2 windows and stride 2 (no padding or
    dilation, every window inside x) into out and int64 indices (B, OH, OW) by the compiled
    loop; False: not applicable."""
    if (x.dtype.kind != "f" or x.dtype.itemsize < 4 or out.dtype != x.dtype
            or indices.dtype != np.int64 or x.ndim != 3 or not x.flags.c_contiguous
            or not out.flags.c_contiguous or not indices.flags.c_contiguous
            or 2 * out.shape[1] > x.shape[1] or 2 * out.shape[2] > x.shape[2]):
        return False
    if compiled.loops(x.size) is None:
        return False
    fast = _module()
    if fast is None:
        return False
    fast.max_pool_2x2(x, out, indices)
    return True
