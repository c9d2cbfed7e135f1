"""pyaten.autograd: the graph, the engine and grad mode, with kernels from derivatives.yaml.

How to use it and how to add a derivative: docs/autograd.md.
"""

from pyaten.autograd import forward_ad, functional
from pyaten.autograd import loader as _loader
from pyaten.autograd.anomaly_mode import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
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
    "functional",
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
]

_loader.load()
_attach()

# `pyaten.library.register_autograd`: the Library's entry point for a backward lives here,
# above the dispatcher it registers into.
import pyaten.library as _library  # noqa: E402
from pyaten.autograd.library import register_autograd as _register_autograd  # noqa: E402

_library.register_autograd = _register_autograd


def __getattr__(name: str) -> object:
    """`pyaten.autograd.profiler` loads on first use (docs/profiler.md)."""
    if name == "profiler":
        import importlib

        return importlib.import_module("pyaten.autograd.profiler")
    raise AttributeError(f"module 'pyaten.autograd' has no attribute '{name}'", name=name)
