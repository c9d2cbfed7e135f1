"""Adamax: Adam with the infinity norm."""

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

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax; state `step`, `exp_avg`, `exp_inf`."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
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
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = scalar_state(0.0)
        state["exp_avg"] = aten.zeros_like.default(p)
        state["exp_inf"] = aten.zeros_like.default(p)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict) -> None:
        beta1, beta2 = group["betas"]
        if group["maximize"]:
            grad = -grad
        state["step"] += 1
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        param, grad = real_view(p), real_view(grad)
        exp_avg, exp_inf = real_view(state["exp_avg"]), real_view(state["exp_inf"])
        exp_avg.lerp_(grad, 1 - beta1)
        aten.maximum.out(exp_inf.mul_(beta2), grad.abs().add_(group["eps"]), out=exp_inf)
        clr = group["lr"] / (1 - beta1 ** state["step"].item())
        param.addcdiv_(exp_avg, exp_inf, value=-to_float(clr))
