"""NAdam: Adam with Nesterov momentum (momentum_decay, decoupled weight decay)."""

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
    to_float,
)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam; state `step`, `mu_product` (0-d tensors), `exp_avg`, `exp_avg_sq`."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
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
        check_nonnegative("momentum_decay", momentum_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = scalar_state(0.0)
        state["mu_product"] = scalar_state(1.0)
        state["exp_avg"] = aten.zeros_like.default(p)
        state["exp_avg_sq"] = aten.zeros_like.default(p)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict) -> None:
        beta1, beta2 = group["betas"]
        lr, weight_decay = group["lr"], group["weight_decay"]
        decay = group["momentum_decay"]
        if group["maximize"]:
            grad = -grad
        param, grad = real_view(p), real_view(grad)
        exp_avg, exp_avg_sq = real_view(state["exp_avg"]), real_view(state["exp_avg_sq"])
        state["step"] += 1
        step = state["step"].item()
        bias_correction2 = 1 - beta2**step
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * decay)))
        state["mu_product"] *= mu
        mu_product = state["mu_product"].item()
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt().add_(group["eps"])
        grad_scale = -lr * (1.0 - mu) / (1.0 - mu_product)
        param.addcdiv_(grad, denom, value=to_float(grad_scale))
        avg_scale = (-lr * mu_next) / (1.0 - mu_product * mu_next)
        param.addcdiv_(exp_avg, denom, value=to_float(avg_scale))
