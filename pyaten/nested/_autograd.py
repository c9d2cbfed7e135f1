"""Autograd for nested tensors: the AutogradNestedTensor kernels, by components.

Note: nested autograd by components
    Both layouts carry the AutogradNestedTensor key. Its kernels (registered here, one per
    operator of the nested rules of pyaten/native/kernels/nested.py) run the operator's rule
    with a differentiable unbind (`_Unbind`: its backward nests the components' gradients like
    the input) and a differentiable nest (`_Nest`: its backward unbinds the gradient). Each
    component is then an ordinary dense tensor whose operators record their own derivatives,
    so the gradient of every nested operator is its dense derivatives.yaml formula, and a
    nested leaf receives a nested gradient, as in PyTorch. Without a tensor that requires
    grad, the kernel runs the operator below autograd (the layout's own kernel).
"""

from __future__ import annotations

import functools
from typing import Any

from pyaten.autograd.function import Function
from pyaten.autograd.grad_mode import GRAD
from pyaten.core.tensor import Tensor
from pyaten.dispatch.registry import get_operator
from pyaten.dispatch.tls import call_below_autograd
from pyaten.library import Library
from pyaten.native.kernels.nested import JAGGED_ONLY, RULES, STRIDED, Layout, dense_op
from pyaten.native.kernels.nested_tensor import NestedTensor as StridedNested
from pyaten.nested._jagged import JAGGED

__all__ = ["layout_of", "BRIDGE", "nest"]


def layout_of(t: Any) -> Layout:
    return STRIDED if type(t) is StridedNested else JAGGED


class _Like:
    """A non-tensor handle on the nested tensor a `_Nest` output is built like."""

    __slots__ = ("like", "layout", "label")

    def __init__(self, like: Any, layout: Layout, label: str = "NestBackward0") -> None:
        self.like, self.layout, self.label = like, layout, label


class _Unbind(Function):
    @staticmethod
    def forward(ctx: Any, nested: Any) -> tuple:
        ctx.like = _Like(nested.detach(), layout_of(nested))
        parts = ctx.like.layout.parts(nested)
        ctx.shapes = [(p._sizes, p._dtype, p._device) for p in parts]
        return tuple(parts)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        import pyaten

        filled = [
            pyaten.zeros(shape, dtype=dtype, device=device) if g is None else g
            for g, (shape, dtype, device) in zip(grads, ctx.shapes)
        ]
        return ctx.like.layout.pack(ctx.like.like, filled)


# The node names PyTorch shows for nested tensors' grad_fn.
_Unbind._backward_cls.__name__ = "UnbindBackwardAutogradNestedTensor0"


class _Nest(Function):
    @staticmethod
    def forward(ctx: Any, like: _Like, *parts: Tensor) -> Any:
        ctx.layout = like.layout
        ctx.label = like.label
        return like.layout.pack(like.like, list(parts))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> tuple:
        return (None, *ctx.layout.parts(grad))


# its node is named as the operator's (PyTorch's `MulBackward0` on a nested tensor)
_Nest._backward_cls.name = lambda self: getattr(self, "label", "NestBackward0")


def nest(like: Any, layout: Layout, parts: list, label: str = "NestBackward0") -> Any:
    """A nested tensor (of `layout`, built like `like`) of `parts`, differentiable."""
    return _Nest.apply(_Like(like, layout, label), *parts)


def _bridge_parts(x: Any) -> list:
    return list(_Unbind.apply(x))


def _node_label(overload: str) -> str:
    base = overload.split(".")[0].strip("_")
    return "".join(word.capitalize() for word in base.split("_")) + "Backward0"


def bridge(overload: str) -> Layout:
    """The autograd pair for `overload`: differentiable unbind and nest."""
    label = _node_label(overload)
    return Layout(_bridge_parts, lambda like, parts: nest(like, layout_of(like), parts, label))


BRIDGE = bridge("nest")


def _wants_grad(args: tuple, kwargs: dict) -> bool:
    if not GRAD.enabled:
        return False
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor) and a.requires_grad:
            return True
        if isinstance(a, (list, tuple)) and any(
                isinstance(t, Tensor) and t.requires_grad for t in a):
            return True
    return False


def _autograd_kernel(overload: str, rule: Any) -> Any:
    qualified = "aten::" + overload
    op = None  # the dense op's handle, looked up on the first call (import time: issue 36)
    pair = bridge(overload)

    jagged_only = overload in JAGGED_ONLY

    def kernel(*args: Any, **kwargs: Any) -> Any:
        nonlocal op
        if jagged_only and any(type(a) is StridedNested for a in args):
            pass  # below: PyTorch's "Could not run ... NestedTensorCPU" error
        elif _wants_grad(args, kwargs):
            if op is None:
                op = dense_op(overload)
            return rule(pair, op, *args, **kwargs)
        entry = get_operator(qualified)
        return call_below_autograd(functools.partial(entry.call, *args, **kwargs))

    kernel.__name__ = kernel.__qualname__ = f"nested_autograd_{overload.replace('.', '_')}"
    return kernel


_SDPA_BRIDGE = bridge("scaled_dot_product_attention")


def _sdpa_kernel(query: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
    op = dense_op("scaled_dot_product_attention")
    lo = _SDPA_BRIDGE if _wants_grad((query, key, value, *args), kwargs) else layout_of(query)
    return RULES["scaled_dot_product_attention"](lo, op, query, key, value, *args, **kwargs)


def _unbind_kernel(self: Any, dim: int = 0) -> Any:
    if _wants_grad((self,), {}):
        from pyaten.core.tensor import _wrap_dim

        if _wrap_dim(dim, self.dim()) == 0:
            return _bridge_parts(self)
    entry = get_operator("aten::unbind.int")
    return call_below_autograd(functools.partial(entry.call, self, dim))


# Operators the nested rules serve that have a derivative (the backward-only ones, which a
# dense derivative never calls on a nested tensor here, go below autograd untouched).
_NOT_DIFFERENTIABLE = {"_softmax_backward_data", "threshold_backward", "gelu_backward",
                       "silu_backward", "eq.Tensor", "eq.Scalar", "gt.Scalar", "ge.Scalar",
                       "logical_not", "isnan", "isinf", "isposinf", "isneginf", "ones_like",
                       "zeros_like", "empty_like", "scaled_dot_product_attention",
                       "add_.Tensor", "mul_.Tensor", "mul_.Scalar", "fill_.Scalar", "zero_",
                       "copy_"}

_LIBRARY = Library("aten", "IMPL")
for _overload, _rule in RULES.items():
    if _overload not in _NOT_DIFFERENTIABLE:
        _LIBRARY.impl(_overload, _autograd_kernel(_overload, _rule), "AutogradNestedTensor")
_LIBRARY.impl("scaled_dot_product_attention", _sdpa_kernel, "AutogradNestedTensor")
_LIBRARY.impl("unbind.int", _unbind_kernel, "AutogradNestedTensor")
