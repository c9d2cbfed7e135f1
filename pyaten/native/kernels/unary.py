"""Unary pointwise math: one family row per operator, hand-written kernels beside the table.

The rows (end of the module) carry the structured operators: the array function, the dtypes
PyTorch's `AT_DISPATCH` accepts, the build (`"float"`: integers compute in the default float
dtype, as `build_borrowing_unary_float_op`) and PyTorch's errors. Beside them:

- `relu`/`relu_` (CPU and Meta kernels, not structured in PyTorch): `clamp_min(self, 0)`;
- `logit`/`logit_`/`logit.out` (not structured in PyTorch either);
- `deg2rad`, `rad2deg`, `logical_not` (CompositeExplicitAutograd) and the aliases
  (`absolute negative fix arcsin arccos arctan arcsinh arccosh arctanh`) and `square`,
  `positive` (CompositeImplicitAutograd, calling other operators through their handles).

Note: array functions that take `out=`
    A row with `takes_out=True` receives the output array when it can be written directly
    (same dtype, no float16 rounding step). The output may be the input itself (`t.exp_()`),
    so such a function reads its input completely before its first write to `out`, or reads
    only `out` after it.
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.stub import DispatchStub
from pyaten.core.tensor import write_fresh
from pyaten.core.views import empty_tensor
from pyaten.dispatch import trace as _trace
from pyaten.native import compiled, family, fastpath
from pyaten.native.kernels import vector_loops
from pyaten.native.kernels.shape import aten_ops
from pyaten.native.registry import native
from pyaten.native.runtime import wrapped_number
from pyaten.native.structured import TensorIteratorMeta, quiet_call

# --- constants: Python numbers as cached 0-d arrays (a NumPy scalar argument costs a lookup) -

_CONSTANTS: dict[tuple[float, np.dtype], np.ndarray] = {}


def constant(value: float, dtype: np.dtype) -> np.ndarray:
    """`value` as a read-only 0-d array of `dtype`, built once."""
    key = (value, dtype)
    found = _CONSTANTS.get(key)
    if found is None:
        found = np.array(value, dtype)
        found.flags.writeable = False
        _CONSTANTS[key] = found
    return found


def _output(a: np.ndarray, out: np.ndarray | None, dtype: np.dtype | None = None) -> np.ndarray:
    """`out`, or a new array like `a` (NumPy returns scalars for 0-d inputs; a chain of
    `out=` steps needs an array)."""
    return np.empty(a.shape, a.dtype if dtype is None else dtype) if out is None else out


def _copy(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    if out is None:
        return a
    np.copyto(out, a, casting="unsafe")
    return out


# --- array functions of the rows ------------------------------------------------------------


def _integers_unchanged(ufunc: np.ufunc):
    """ceil/floor/trunc/round: integer inputs are returned as they are (PyTorch copies them)."""

    def rounding(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        if a.dtype.kind in "iu":
            return _copy(a, out)
        return ufunc(a, out=out)

    rounding.__name__ = ufunc.__name__
    return rounding


def _sign(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    kind = a.dtype.kind
    if kind == "b":
        return _copy(a, out)
    if kind in "iu":
        return np.sign(a, out=out)
    # PyTorch's (a > 0) - (a < 0): sign(-0.0) is +0.0 and sign(nan) is 0, where np.sign
    # gives -0.0 and nan. np.sign, then -0.0 + 0.0 = +0.0, then the NaNs (read from `a`
    # before any write, which may alias it).
    nan = np.isnan(a)
    result = np.sign(a, out=_output(a, out))
    np.add(result, constant(0, a.dtype), out=result)
    if nan.any():
        result[nan] = 0
    return result


def _sgn(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    if a.dtype.kind != "c":
        return _sign(a, out)
    # z / |z|, and 0 for 0
    magnitude = np.abs(a, out=np.empty(a.shape, a.real.dtype))
    zero = magnitude == 0
    magnitude[zero] = 1
    result = np.divide(a, magnitude, out=_output(a, out))
    result[zero] = 0
    return result


def _signbit(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    kind = a.dtype.kind
    if kind == "f":
        return np.signbit(a, out=out)
    if kind == "b":
        result = _output(a, out, np.dtype(np.bool_))
        result[...] = False
        return result
    return np.less(a, constant(0, a.dtype), out=out)


def _frac(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    # a - trunc(a): inf gives nan, as PyTorch (np.modf would give 0)
    whole = np.trunc(a)
    return np.subtract(a, whole, out=out)


def _round_decimals(a: np.ndarray, decimals: int, out: np.ndarray | None = None) -> np.ndarray:
    # PyTorch: nearbyint(a * 10^d) / 10^d, or nearbyint(a / 10^-d) * 10^-d for d < 0, with
    # 10^|d| in the compute dtype.
    scale = constant(10.0 ** abs(decimals), a.dtype)
    out = _output(a, out)
    if decimals >= 0:
        result = np.multiply(a, scale, out=out)
        np.rint(result, out=result)
        return np.divide(result, scale, out=result)
    result = np.divide(a, scale, out=out)
    np.rint(result, out=result)
    return np.multiply(result, scale, out=result)


def _exp2(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    if a.dtype.kind == "c":  # NumPy's exp2 has no complex loop: 2^z = exp(z ln 2)
        result = np.multiply(a, constant(math.log(2.0), a.dtype), out=_output(a, out))
        return np.exp(result, out=result)
    return np.exp2(a, out=out)


def _rsqrt(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    result = np.sqrt(a, out=_output(a, out))
    return np.divide(constant(1, a.dtype), result, out=result)


def _reciprocal(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    if a.dtype.kind == "c":
        # 1/z as PyTorch's complex division: 1/0 is inf+nanj (NumPy's reciprocal: nan+nanj)
        zero = a == 0
        result = np.divide(constant(1, a.dtype), a, out=_output(a, out))
        result[zero] = complex(math.inf, math.nan)
        return result
    return np.divide(constant(1, a.dtype), a, out=out)




# --- checks PyTorch makes in the meta functions ---------------------------------------------


def _refuse_bool_negation(self) -> None:
    if self.dtype is dt.bool:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        )


def _refuse_complex(message: str):
    def check(self, *rest) -> None:
        if self.dtype.is_complex:
            raise NotImplementedError(message)

    return check


def _signbit_output(op: TensorIteratorMeta, self) -> None:
    out = op.maybe_get_output()
    if out is not None and out.dtype is not dt.bool:
        raise RuntimeError("signbit does not support non-boolean outputs.")


def _exp(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """np.exp, or the compiled float32 loop on large row-major arrays (Note: vectorised
    float32 exp, in kernels/vector_loops.py)."""
    if out is not None and vector_loops.exp_into(a, out):
        return out
    return np.exp(a, out=out)


# --- the family table -----------------------------------------------------------------------

_FLOAT = family.FLOATING_COMPLEX_AND_REDUCED  # after `"float"` promotion, every input is one
_SAME = family.ALL | family.COMPLEX | family.REDUCED  # AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND2
_ROUNDING = family.ALL_AND_REDUCED  # integers copied; complex refused before


def _float_row(name: str, fn, **options) -> family.Pointwise:
    return family.Pointwise(name, fn, _FLOAT, build="float", **options)


_STUBS = family.register(
    # abs.out is a structured group of its own: PyTorch's abs/abs_ are composites over it.
    family.Pointwise("abs.out", np.abs, _SAME | {dt.complex32}, build="complex_to_real"),
    family.Pointwise("neg", np.negative, _SAME | {dt.complex32}, check=_refuse_bool_negation),
    family.Pointwise(
        "sign", _sign, family.ALL_AND_REDUCED_BOOL, takes_out=True,
        check=_refuse_complex(
            # (torch's text names torch.sign and torch.sgn; ours, pyaten's)
            "Unlike NumPy, pyaten.sign is not intended to support complex numbers. Please use "
            "pyaten.sgn instead."
        ),
    ),
    family.Pointwise("sgn", _sgn, family.EVERY | {dt.complex32}, takes_out=True),
    family.Pointwise(
        "signbit", _signbit, family.ALL_AND_REDUCED_BOOL, build="bool", takes_out=True,
        check=_refuse_complex("signbit is not implemented for complex tensors."),
        meta_check=_signbit_output,
    ),
    family.Pointwise(
        "ceil", _integers_unchanged(np.ceil), _ROUNDING, takes_out=True,
        dispatch_name="ceil_vml_cpu",
        check=_refuse_complex("ceil is not supported for complex inputs"),
    ),
    family.Pointwise(
        "floor", _integers_unchanged(np.floor), _ROUNDING, takes_out=True,
        dispatch_name="floor_vml_cpu",
        check=_refuse_complex("floor is not supported for complex inputs"),
    ),
    family.Pointwise(
        "trunc", _integers_unchanged(np.trunc), _ROUNDING, takes_out=True,
        dispatch_name="trunc_vml_cpu",
        check=_refuse_complex("trunc is not supported for complex inputs"),
    ),
    # round: half to even (nearbyint), as np.rint; complex reaches the dtype error.
    family.Pointwise(
        "round", _integers_unchanged(np.rint), _ROUNDING, takes_out=True,
        dispatch_name="round_vml_cpu",
    ),
    family.Pointwise(
        "round.decimals", _round_decimals, family.FLOATING_AND_REDUCED, takes_out=True,
        impl="round_decimals_out", stub="round_decimals_stub", dispatch_name="round_cpu",
    ),
    family.Pointwise("frac", _frac, family.FLOATING_AND_REDUCED, takes_out=True),
    _float_row("exp", _exp, takes_out=True),
    _float_row("exp2", _exp2, takes_out=True),
    _float_row("expm1", np.expm1),
    _float_row("log", np.log),
    _float_row("log2", np.log2),
    _float_row("log10", np.log10),
    _float_row("log1p", np.log1p),
    _float_row("sqrt", np.sqrt),
    _float_row("rsqrt", _rsqrt, takes_out=True),
    _float_row("reciprocal", _reciprocal, takes_out=True),
    _float_row("sin", np.sin),
    _float_row("cos", np.cos),
    _float_row("tan", np.tan),
    _float_row("asin", np.arcsin),
    _float_row("acos", np.arccos),
    _float_row("atan", np.arctan),
    _float_row("sinh", np.sinh),
    _float_row("cosh", np.cosh),
    _float_row("tanh", np.tanh),
    _float_row("asinh", np.arcsinh),
    _float_row("acosh", np.arccosh),
    _float_row("atanh", np.arctanh),
)


def _exp_small(elements: int):
    """The ufunc `_exp` runs on a small contiguous input: np.exp unless the compiled loop
    takes it (for the accelerator's small-input call; Note: the small-operator loops)."""
    return None if compiled.may_run(elements) else np.exp


# exp's row function is not a ufunc, so its fast functions are registered here.
fastpath.register(
    "exp", *fastpath.unary(_exp, _STUBS["exp_stub"], fastpath.FLOATS | fastpath.COMPLEX,
                           small=_exp_small),
    family.caller_site(1),
)


# --- sigmoid: hand-written, for its measured no-temporaries path on new outputs -------------


@native
def meta_sigmoid(op: TensorIteratorMeta, self) -> None:
    op.build_unary_float_op(self)


sigmoid_stub = DispatchStub("sigmoid_stub")


@sigmoid_stub.register("cpu")
def sigmoid_kernel(op: TensorIteratorMeta) -> None:
    (a,) = op.input_arrays()
    if op._direct:  # a new output of the input's dtype: computed in its memory
        quiet_call(_sigmoid, a, op.outputs[0]._numpy())
    else:
        op.compute(_sigmoid, a)


_EXPIT: list = []  # scipy.special.expit, imported on the first small sigmoid (import time)
_CHAIN_FROM = 2048  # elements: from about here four ufunc passes beat one expit pass


def _expit():
    if not _EXPIT:
        from scipy.special import expit

        _EXPIT.append(expit)
    return _EXPIT[0]


def _sigmoid_small(elements: int):
    """The ufunc `_sigmoid` runs on a small float input (Note: the small-operator loops)."""
    return _expit() if elements < _CHAIN_FROM else None


def _sigmoid(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    if a.dtype.kind == "f" and a.size < _CHAIN_FROM:
        # a small input: SciPy's logistic ufunc is one call where the passes below are four
        # (4x4 float32: ~0.9 us less)
        return _expit()(a, out=_output(a, out))
    result = _output(a, out)
    if vector_loops.sigmoid_into(a, result):  # float32 (Note: vectorised float32 exp)
        return result
    # PyTorch's formula, 1 / (1 + exp(-a)), each step a ufunc in place in the result: four
    # passes and no temporary. Measured on 4M float32 it is 1.5-2.5x faster than SciPy's
    # expit (one pass, but a scalar libm exp per element) and than a Numba loop calling
    # libm's exp; blocking the passes into cache-sized chunks did not help.
    result = np.negative(a, out=result)
    np.exp(result, out=result)
    np.add(result, constant(1, a.dtype), out=result)
    return np.reciprocal(result, out=result)


@native
def sigmoid_out(op: TensorIteratorMeta, self, out) -> None:
    sigmoid_stub(op.device.type, op)


fastpath.register(
    "sigmoid", *fastpath.unary(_sigmoid, sigmoid_stub, fastpath.FLOATS | fastpath.COMPLEX,
                               small=_sigmoid_small),
    family.caller_site(1),
)


# --- abs and abs_: composites over abs.out (as PyTorch) -------------------------------------


@native
def abs_composite(self):
    """abs (CompositeExplicitAutograd): a new output (real for complex input), then abs.out."""
    result = empty_tensor((0,), self.dtype.to_real(), self.device)
    return write_fresh(lambda fresh: aten_ops().abs.out(self, fresh), result)


@native
def abs__composite(self):
    """abs_ (CompositeExplicitAutograd): abs.out into self; complex input is refused."""
    if self.dtype.is_complex:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return aten_ops().abs.out(self, self)


# --- hand-written TensorIterator kernels (not structured in PyTorch) -------------------------


def _run(kind: str, self, out, name: str, meta, compute, *args):
    """A TensorIterator op outside the structured wrappers: meta, then (with data) compute,
    then the proxies copied back and the written tensor's version bumped."""
    op = TensorIteratorMeta(kind, (out,), name, self.device.type)
    meta(op, self, *args)
    if self._storage.data is not None:
        compute(op, *args)
    op.finish()
    return op.outputs[0]


def _relu_meta(op: TensorIteratorMeta, self) -> None:
    if self.dtype is dt.bool:
        raise RuntimeError("Boolean inputs not supported for relu")
    if self.dtype.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    op.build_unary_op(self)


def _relu_compute(op: TensorIteratorMeta) -> None:
    (a,) = op.input_arrays()
    # maximum(0, a) returns `a` on a tie, so relu(-0.0) is -0.0; NaN stays NaN (PyTorch's
    # clamp_min(self, 0)).
    op.compute(np.maximum, constant(0, a.dtype), a)


_ZEROS: dict[np.dtype, np.ndarray] = {}


def _relu_loop(a: np.ndarray, out: np.ndarray) -> np.ndarray:
    if out is not None and vector_loops.relu_into(a, out):
        return out
    zero = _ZEROS.get(a.dtype)
    if zero is None:
        zero = _ZEROS[a.dtype] = constant(0, a.dtype)
    return np.maximum(zero, a, out=out)


_relu_fast, _relu_fast_ = fastpath.unary(
    _relu_loop, None, fastpath.FLOATS | fastpath.INTEGERS, loop="relu"
)


@native
def relu(self):
    if not _trace.ACTIVE:
        result = _relu_fast(self)
        if result is not None:
            return result
    return _run("functional", self, None, "relu", _relu_meta, _relu_compute)


@native
def relu_(self):
    if not _trace.ACTIVE:
        result = _relu_fast_(self)
        if result is not None:
            return result
    return _run("inplace", self, self, "relu_", _relu_meta, _relu_compute)


def _logit_meta(op: TensorIteratorMeta, self, eps) -> None:
    op.build_unary_float_op(self)


def _logit_compute(op: TensorIteratorMeta, eps) -> None:
    common = op.common_dtype
    if common not in family.FLOATING_AND_REDUCED:
        raise family.unsupported_dtype("logit_cpu", common)
    (a,) = op.input_arrays()
    quiet_call(_logit_into, op, a, eps, common.numpy)


def _logit_into(op: TensorIteratorMeta, a: np.ndarray, eps: float | None, dtype) -> None:
    if eps is not None:
        # eps and 1 - eps in the tensor's dtype (float16: 1 - 1e-6 is 1). PyTorch's order:
        # below eps gives eps, else above 1 - eps gives 1 - eps (an eps above 0.5 makes the
        # first win); NaN stays NaN.
        low = np.array(eps, dtype)
        high = (np.array(1, dtype) - low).astype(dtype).astype(a.dtype)
        low = low.astype(a.dtype)
        a = np.where(a < low, low, np.where(a > high, high, a))
    # log(a / (1 - a)); a == 1 gives log(inf) = inf
    denominator = np.subtract(constant(1, a.dtype), a, out=_output(a, None))
    np.divide(a, denominator, out=denominator)
    op.compute(np.log, denominator)


@native
def logit(self, eps=None):
    return _run("functional", self, None, "logit", _logit_meta, _logit_compute, eps)


@native
def logit_(self, eps=None):
    return _run("inplace", self, self, "logit_", _logit_meta, _logit_compute, eps)


@native
def logit_out(self, eps, out):
    _run("out", self, out, "logit.out", _logit_meta, _logit_compute, eps)
    return out


def _logical_not_meta(op: TensorIteratorMeta, self) -> None:
    # Input and output keep their dtypes (check_all_same_dtype(false)); a new output is bool.
    out = op.maybe_get_output()
    op.build((self,), output_dtype=dt.bool if out is None else out.dtype,
             enforce_safe_casting_to_output=False)


def _logical_not_compute(op: TensorIteratorMeta) -> None:
    (a,) = op.input_arrays()
    if a.dtype.kind == "b":
        op.write(np.logical_not(a))
        return
    # a == 0 (complex: both parts; NaN is true): NumPy's logical_not loop on floats is ~8x
    # slower than its comparison loop
    out = op.outputs[0]
    target = out._numpy()
    if target.dtype == np.bool_ and target.shape == op.shape:
        np.equal(a, constant(0, a.dtype), out=target)
    else:
        op.write(np.equal(a, constant(0, a.dtype)))


@native
def logical_not_out(self, out):
    _run("out", self, out, "logical_not.out", _logical_not_meta, _logical_not_compute)
    return out


@native
def logical_not(self):
    """logical_not (CompositeExplicitAutograd): a bool output, then logical_not.out."""
    result = empty_tensor((0,), dt.bool, self.device)
    return aten_ops().logical_not.out(self, result)


@native
def logical_not_(self):
    return aten_ops().logical_not.out(self, self)


# --- composites: deg2rad, rad2deg (CompositeExplicitAutograd) --------------------------------

_PI_OVER_180 = math.pi / 180.0
_180_OVER_PI = 180.0 / math.pi


def _angle_conversion(name: str, factor: float):
    def out_kernel(self, out):
        if self.dtype.is_complex:
            raise RuntimeError(f"{name} is not supported for complex tensors.")
        return aten_ops().mul.out(self, wrapped_number(factor), out)

    def functional(self):
        if self.dtype.is_complex:
            raise RuntimeError(f"{name} is not supported for complex tensors.")
        dtype = self.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = dt.get_default_dtype()
        result = aten_ops().empty_like.default(self, dtype, None, None, None, None)
        return write_fresh(lambda fresh: out_kernel(self, fresh), result)

    def inplace(self):
        return out_kernel(self, self)

    functional.__name__, inplace.__name__, out_kernel.__name__ = name, f"{name}_", f"{name}_out"
    return native(functional), native(inplace), native(out_kernel)


deg2rad, deg2rad_, deg2rad_out = _angle_conversion("deg2rad", _PI_OVER_180)
rad2deg, rad2deg_, rad2deg_out = _angle_conversion("rad2deg", _180_OVER_PI)


# --- CompositeImplicitAutograd: positive, square and the aliases ----------------------------


@native
def positive(self):
    """`+t`: the tensor itself (CompositeImplicitAutograd); bool tensors are refused."""
    if self.dtype is dt.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


@native
def square(self):
    # pow(self, 2); x * x gives the same values and dtype except for bool (pow: int64) and
    # complex32 (pow refuses it)
    if self.dtype is dt.bool or self.dtype is dt.complex32:
        return aten_ops().pow.Tensor_Scalar(self, 2)
    return aten_ops().mul.Tensor(self, self)


@native
def square_(self):
    return aten_ops().pow_.Scalar(self, 2)


@native
def square_out(self, out):
    return aten_ops().pow.Tensor_Scalar_out(self, 2, out)


def _alias(name: str, target: str) -> None:
    """`name`, `name_`, `name.out` as CompositeImplicitAutograd kernels calling `target`."""

    def functional(self):
        return getattr(aten_ops(), target).default(self)

    def inplace(self):
        return getattr(aten_ops(), target + "_").default(self)

    def out_kernel(self, out):
        return getattr(aten_ops(), target).out(self, out)

    functional.__name__, inplace.__name__, out_kernel.__name__ = name, f"{name}_", f"{name}_out"
    native(functional)
    native(inplace)
    native(out_kernel)


for _name, _target in (
    ("absolute", "abs"),
    ("negative", "neg"),
    ("fix", "trunc"),
    ("arcsin", "asin"),
    ("arccos", "acos"),
    ("arctan", "atan"),
    ("arcsinh", "asinh"),
    ("arccosh", "acosh"),
    ("arctanh", "atanh"),
):
    _alias(_name, _target)
