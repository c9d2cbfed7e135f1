"""RMSprop (centered, momentum, weight decay, `maximize`)."""

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

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop; state `step`, `square_avg` (`momentum_buffer`, `grad_avg` when used)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_lr(lr)
        check_nonnegative("epsilon", eps)
        check_nonnegative("momentum", momentum)
        check_nonnegative("weight_decay", weight_decay)
        check_nonnegative("alpha", alpha)
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = scalar_state(0.0)
        state["square_avg"] = aten.zeros_like.default(p)
        if group["momentum"] > 0:
            state["momentum_buffer"] = aten.zeros_like.default(p)
        if group["centered"]:
            state["grad_avg"] = aten.zeros_like.default(p)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict) -> None:
        alpha, momentum = group["alpha"], group["momentum"]
        if group["maximize"]:
            grad = -grad
        state["step"] += 1
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        param, grad, square_avg = real_view(p), real_view(grad), real_view(state["square_avg"])
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if group["centered"]:
            grad_avg = real_view(state["grad_avg"])
            grad_avg.lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(group["eps"])
        lr = to_float(group["lr"])
        if momentum > 0:
            buf = real_view(state["momentum_buffer"])
            buf.mul_(momentum).addcdiv_(grad, avg)
            param.add_(buf, alpha=-lr)
        else:
            param.addcdiv_(grad, avg, value=-lr)
