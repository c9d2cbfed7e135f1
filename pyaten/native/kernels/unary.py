"""Unary pointwise ops: abs exp log neg sigmoid tanh relu (functional, in-place, out).

Structured through `TensorIteratorMeta`: exp, log, sigmoid and tanh promote integer inputs to
the default float dtype (`build_unary_float_op`); abs, neg and relu keep the input dtype.
"""

from __future__ import annotations

import numpy as np

from pyaten.core.stub import DispatchStub
from pyaten.native.registry import native
from pyaten.native.structured import TensorIteratorMeta, quiet_call


def _no_bool(op_name: str, dtype, message: str | None = None) -> None:
    if dtype.name == "bool":
        raise RuntimeError(message or f"{op_name}: bool tensors are not supported")


@native
def meta_abs(op, self):
    if self.dtype.name == "bool":
        raise NotImplementedError("\"abs_cpu\" not implemented for 'Bool'")
    if self.dtype.is_complex:
        # |z| is real: a new output gets the real dtype; an out= tensor may be either.
        if op.kind == "inplace":
            raise RuntimeError("In-place abs is not supported for complex tensors.")
        op.build((self,), output_dtype=self.dtype.to_real(), enforce_safe_casting_to_output=False)
        return
    op.build_unary_op(self)


abs_stub = DispatchStub("abs_stub")


@abs_stub.register("cpu")
def abs_kernel(op) -> None:
    (a,) = op.input_arrays()
    op.write(a if a.dtype.kind == "b" else np.abs(a))


@native
def abs_out(op, self, out):
    abs_stub(op.device.type, op)


@native
def meta_abs_out(op, self):
    # abs.out is a structured group of its own (abs and abs_ are composites, as in PyTorch)
    meta_abs(op, self)


@native
def abs_composite(self):
    """abs (CompositeExplicitAutograd): a new output (real for complex input), then abs.out."""
    from pyaten.core.views import empty_tensor
    from pyaten.native.kernels.shape import aten_ops

    result = empty_tensor((0,), self.dtype.to_real(), self.device)
    return aten_ops().abs.out(self, result)


@native
def abs__composite(self):
    """abs_ (CompositeExplicitAutograd): abs.out into self; complex input is refused."""
    from pyaten.native.kernels.shape import aten_ops

    if self.dtype.is_complex:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return aten_ops().abs.out(self, self)


@native
def meta_neg(op, self):
    _no_bool(
        "neg",
        self.dtype,
        "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
        "invert a mask, use the `~` or `logical_not()` operator instead.",
    )
    op.build_unary_op(self)


neg_stub = DispatchStub("neg_stub")


@neg_stub.register("cpu")
def neg_kernel(op) -> None:
    (a,) = op.input_arrays()
    op.compute(np.negative, a)


@native
def neg_out(op, self, out):
    neg_stub(op.device.type, op)


@native
def meta_exp(op, self):
    op.build_unary_float_op(self)


exp_stub = DispatchStub("exp_stub")


@exp_stub.register("cpu")
def exp_kernel(op) -> None:
    (a,) = op.input_arrays()
    op.compute(np.exp, a)


@native
def exp_out(op, self, out):
    exp_stub(op.device.type, op)


@native
def meta_log(op, self):
    op.build_unary_float_op(self)


log_stub = DispatchStub("log_stub")


@log_stub.register("cpu")
def log_kernel(op) -> None:
    (a,) = op.input_arrays()
    op.compute(np.log, a)


@native
def log_out(op, self, out):
    log_stub(op.device.type, op)


@native
def meta_sigmoid(op, self):
    op.build_unary_float_op(self)


def _sigmoid(a: np.ndarray) -> np.ndarray:
    # exp(-a) may overflow to inf for very negative a, giving exactly 0, as PyTorch does.
    return 1 / (1 + np.exp(-a))


sigmoid_stub = DispatchStub("sigmoid_stub")


@sigmoid_stub.register("cpu")
def sigmoid_kernel(op) -> None:
    (a,) = op.input_arrays()
    if op._direct:
        quiet_call(_sigmoid_into, a, op.outputs[0]._numpy())  # no temporaries
    else:
        op.write(quiet_call(_sigmoid, a))


def _sigmoid_into(a: np.ndarray, out: np.ndarray) -> None:
    np.negative(a, out=out)
    np.exp(out, out=out)
    np.add(out, 1, out=out)
    np.reciprocal(out, out=out)


@native
def sigmoid_out(op, self, out):
    sigmoid_stub(op.device.type, op)


@native
def meta_tanh(op, self):
    op.build_unary_float_op(self)


tanh_stub = DispatchStub("tanh_stub")


@tanh_stub.register("cpu")
def tanh_kernel(op) -> None:
    (a,) = op.input_arrays()
    op.write(np.tanh(a))


@native
def tanh_out(op, self, out):
    tanh_stub(op.device.type, op)


def _relu_meta(op, self):
    _no_bool("relu", self.dtype, "Boolean inputs not supported for relu")
    if self.dtype.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    op.build_unary_op(self)


def _relu_impl(op, self, out):
    (a,) = op.input_arrays()
    # NaN stays NaN, as PyTorch's clamp_min(0) keeps it.
    op.write(np.where(a > 0, a, np.where(np.isnan(a), a, 0)) if a.dtype.kind == "f"
             else np.maximum(a, 0))


def _relu(kind: str, self):
    # Not structured in PyTorch (relu.out is autogen); one kernel serves CPU and Meta.
    op = TensorIteratorMeta(kind, (None,) if kind == "functional" else (self,), "relu",
                            self.device.type)
    _relu_meta(op, self)
    if self._storage.data is not None:
        _relu_impl(op, self, op.outputs[0])
    return op.outputs[0]


@native
def relu(self):
    return _relu("functional", self)


@native
def relu_(self):
    result = _relu("inplace", self)
    self._bump_version()
    return result


@native
def positive(self):
    """`+t`: the tensor itself (CompositeImplicitAutograd); bool tensors are refused."""
    if self.dtype.name == "bool":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self
