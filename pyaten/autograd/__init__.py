"""pyaten.autograd: the graph, the engine and grad mode, with kernels from derivatives.yaml.

How to use it and how to add a derivative: docs/autograd.md.
"""

from pyaten.autograd import forward_ad
from pyaten.autograd import loader as _loader
from pyaten.autograd.engine import backward, grad
from pyaten.autograd.function import Function, FunctionCtx, once_differentiable
from pyaten.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from pyaten.autograd.gradcheck import gradcheck, gradgradcheck
from pyaten.autograd.graph import Node
from pyaten.autograd.tensor_methods import attach as _attach

__all__ = [
    "backward",
    "grad",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "Node",
    "gradcheck",
    "gradgradcheck",
    "Function",
    "FunctionCtx",
    "once_differentiable",
    "forward_ad",
]

_loader.load()
_attach()
