"""RAdam: rectified Adam (decoupled weight decay)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.native.ops_handles import aten
from pyaten.optim.optimizer import (
    Optimizer,
    check_betas,
    check_lr,
    check_nonnegative,
    real_view,
    scalar_state,
)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam; state `step`, `exp_avg`, `exp_avg_sq`."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_lr(lr)
        check_nonnegative("epsilon", eps)
        check_betas(betas)
        check_nonnegative("weight_decay", weight_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = scalar_state(0.0)
        state["exp_avg"] = aten.zeros_like.default(p)
        state["exp_avg_sq"] = aten.zeros_like.default(p)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict) -> None:
        beta1, beta2 = group["betas"]
        lr, weight_decay = group["lr"], group["weight_decay"]
        if group["maximize"]:
            grad = -grad
        param, grad = real_view(p), real_view(grad)
        exp_avg, exp_avg_sq = real_view(state["exp_avg"]), real_view(state["exp_avg_sq"])
        state["step"] += 1
        step = state["step"].item()
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction2 = 1 - beta2**step
        corrected = exp_avg / (1 - beta1**step)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        if rho_t > 5.0:
            rect = (
                (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
            ) ** 0.5
            adaptive_lr = (bias_correction2**0.5) / exp_avg_sq.sqrt().add_(group["eps"])
            param.add_(corrected * lr * adaptive_lr * rect, alpha=-1.0)
        else:
            param.add_(corrected * lr, alpha=-1.0)
