"""Adagrad (lr_decay, initial_accumulator_value, weight decay, `maximize`)."""

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

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad; state `step` and `sum`, made for every parameter at construction."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_lr(lr)
        check_nonnegative("lr_decay", lr_decay)
        check_nonnegative("weight_decay", weight_decay)
        check_nonnegative("initial_accumulator_value", initial_accumulator_value)
        check_nonnegative("epsilon", eps)
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group, self.state[p], initial_accumulator_value)

    def _init_state(
        self, p: Tensor, group: dict[str, Any], state: dict[str, Any], init: float | None = None
    ) -> None:
        value = self.defaults["initial_accumulator_value"] if init is None else init
        state["step"] = scalar_state(0.0)
        state["sum"] = aten.full_like.default(p, complex(value, value) if p.is_complex() else value)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict) -> None:
        state["step"] += 1
        step = state["step"].item()
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        param, grad, state_sum = real_view(p), real_view(grad), real_view(state["sum"])
        state_sum.addcmul_(grad, grad, value=1)
        std = state_sum.sqrt().add_(group["eps"])
        param.addcdiv_(grad, std, value=-to_float(clr))
