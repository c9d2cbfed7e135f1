"""Adam and AdamW (AMSGrad, L2 or decoupled weight decay, `maximize`).

Note: one Adam pass
    PyTorch's single-tensor Adam is six in-place operators per parameter (lerp_, mul_,
    addcmul_, sqrt, div_ + add_, addcdiv_): six NumPy passes and six dispatcher calls here.
    When Numba is installed and every tensor is a plain row-major CPU float tensor (no mode,
    trace, subclass or tangent: what the operators would see), the same steps run as one
    compiled loop over the elements (kernels/vector_loops.py `adam_step`), with the same
    version-counter bumps. AMSGrad, complex parameters and everything else take the
    operators. `tests/test_optim.py` and `tests/test_large_ops.py` compare both with torch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyaten.core import torch_function as TF  # noqa: N812 - as the generated code reads it
from pyaten.core.tensor import Tensor
from pyaten.dispatch.tls import NONDEFAULT
from pyaten.native.gen_support import PLAIN_CPU
from pyaten.native.kernels import vector_loops
from pyaten.native.ops_handles import aten
from pyaten.optim.optimizer import (
    Optimizer,
    check_betas,
    check_lr,
    check_nonnegative,
    real_view,
    scalar_state,
    to_float,
)

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam; state `step`, `exp_avg`, `exp_avg_sq` (and `max_exp_avg_sq` with amsgrad)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        check_lr(lr)
        check_nonnegative("epsilon", eps)
        check_betas(betas)
        check_nonnegative("weight_decay", weight_decay)
        both_floats = isinstance(betas[0], float) and isinstance(betas[1], float)
        both_tensors = isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor)
        if not (both_floats or both_tensors):
            raise ValueError("betas must be either both floats or both Tensors")
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = scalar_state(0.0)
        state["exp_avg"] = aten.zeros_like.default(p)
        state["exp_avg_sq"] = aten.zeros_like.default(p)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = aten.zeros_like.default(p)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict) -> None:
        lr, weight_decay = group["lr"], group["weight_decay"]
        beta1, beta2 = (to_float(b) for b in group["betas"])
        if group["maximize"]:
            grad = -grad
        state["step"] += 1
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(p, alpha=weight_decay)
        if (not group["amsgrad"] and _plain(p, grad, state["exp_avg"], state["exp_avg_sq"])
                and self._compiled_update(p, grad, state, group, beta1, beta2)):
            return
        param, grad = real_view(p), real_view(grad)
        exp_avg, exp_avg_sq = real_view(state["exp_avg"]), real_view(state["exp_avg_sq"])
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step = state["step"].item()
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        if group["amsgrad"]:
            max_sq = real_view(state["max_exp_avg_sq"])
            aten.maximum.out(max_sq, exp_avg_sq, out=max_sq)
            exp_avg_sq = max_sq
        # (sqrt(v) / bias_correction2_sqrt) + eps, the division in place: one new tensor
        denom = exp_avg_sq.sqrt().div_(bias_correction2_sqrt).add_(group["eps"])
        param.addcdiv_(exp_avg, denom, value=-to_float(step_size))

    @staticmethod
    def _compiled_update(p: Tensor, grad: Tensor, state: dict[str, Any], group: dict,
                         beta1: float, beta2: float) -> bool:
        """The update below in one compiled pass (Note: one Adam pass); False: not taken."""
        step = state["step"].item()
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        done = vector_loops.adam_step(
            p._numpy(), grad._numpy(), exp_avg._numpy(), exp_avg_sq._numpy(), beta1, beta2,
            -to_float(group["lr"] / (1 - beta1**step)), (1 - beta2**step) ** 0.5,
            group["eps"])
        if done:  # the version bumps of lerp_, mul_ + addcmul_ and addcdiv_
            exp_avg._version_counter.value += 1
            exp_avg_sq._version_counter.value += 2
            p._version_counter.value += 1
        return done


def _plain(*tensors: Any) -> bool:
    """Every tensor a dense CPU `Tensor` (or a class that disables `__torch_function__`, as
    `Parameter`), with no forward-mode tangent, and no mode, trace or non-default dispatch
    state on any thread (Note: the direct call, in pyaten/native/gen_support.py): then a
    compiled update is what the operators would do."""
    if NONDEFAULT or TF.ACTIVE:
        return False
    for t in tensors:
        cls = t.__class__
        if cls is not Tensor and (not isinstance(t, Tensor) or cls.__torch_function__
                                  is not TF._disabled_torch_function_impl):
            return False
        if t._keyset != PLAIN_CPU or t._fw_grad is not None:
            return False
    return True


class AdamW(Adam):
    """Adam with decoupled weight decay (default 1e-2)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
            capturable=capturable, differentiable=differentiable, fused=fused,
            decoupled_weight_decay=True,
        )

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
