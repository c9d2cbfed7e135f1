"""Adadelta (rho, weight decay, `maximize`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.native.ops_handles import aten
from pyaten.optim.optimizer import (
    Optimizer,
    check_lr,
    check_nonnegative,
    real_view,
    scalar_state,
    to_float,
)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta; state `step`, `square_avg`, `acc_delta`."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonnegative("epsilon", eps)
        check_nonnegative("weight_decay", weight_decay)
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = scalar_state(0.0)
        state["square_avg"] = aten.zeros_like.default(p)
        state["acc_delta"] = aten.zeros_like.default(p)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict) -> None:
        rho, eps = group["rho"], group["eps"]
        state["step"] += 1
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        square_avg, acc_delta = real_view(state["square_avg"]), real_view(state["acc_delta"])
        grad = real_view(grad)
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_()
        delta.div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        real_view(p).add_(delta, alpha=-to_float(group["lr"]))
