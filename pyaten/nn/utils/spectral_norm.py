"""The older `nn.utils.spectral_norm`: a forward pre-hook that divides `weight_orig` by its
largest singular value, estimated by power iteration on the buffers `weight_u`, `weight_v`
(one step per call in training mode)."""

from __future__ import annotations

from typing import Any

from pyaten.autograd.grad_mode import no_grad
from pyaten.core.tensor import Tensor
from pyaten.nn.functional import normalize
from pyaten.nn.modules._ops import ops
from pyaten.nn.modules.module import Module
from pyaten.nn.parameter import Parameter

__all__ = ["SpectralNorm", "remove_spectral_norm", "spectral_norm"]


class SpectralNorm:
    """The pre-hook (PyTorch's `torch.nn.utils.spectral_norm.SpectralNorm`)."""

    _version: int = 1

    def __init__(
        self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
        eps: float = 1e-12,
    ) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but "
                f"got n_power_iterations={n_power_iterations}"
            )
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.reshape(weight.size(0), -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        matrix = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():  # u and v updated in place: they are the module's buffers
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(ops.mv(matrix.t(), u), dim=0, eps=self.eps))
                    u.copy_(normalize(ops.mv(matrix, v), dim=0, eps=self.eps))
                u = u.clone()
                v = v.clone()
        sigma = ops.dot(u, ops.mv(matrix, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))

    @staticmethod
    def apply(
        module: Module, name: str, n_power_iterations: int, dim: int, eps: float
    ) -> SpectralNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two spectral_norm hooks on the same parameter {name}"
                )
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters.get(name)
        if weight is None:
            raise ValueError(
                f"`SpectralNorm` cannot be applied as parameter `{name}` is None"
            )
        with no_grad():
            matrix = fn.reshape_weight_to_matrix(weight)
            h, w = matrix.size()
            u = normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(
    module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Add the spectral-norm pre-hook on `module.<name>` (dim 1 for transposed convolutions,
    else 0)."""
    if dim is None:
        transposed = ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
        dim = 1 if type(module).__name__ in transposed else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo `spectral_norm`: `module.<name>` becomes a parameter at its current value."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
