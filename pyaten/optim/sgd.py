"""SGD with momentum, dampening, Nesterov momentum, weight decay and `maximize`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.optim import _fused
from pyaten.optim.optimizer import Optimizer, check_lr, to_float

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent; state `momentum_buffer` when momentum is not 0."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def _step_group(self, group: dict[str, Any]) -> None:
        # Without momentum SGD keeps no state: parameters get no (even empty) entry.
        momentum = group["momentum"]
        fused = _fused.fusable(group)  # one compiled pass per parameter (Note: one SGD pass)
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            state = self.state[p] if momentum != 0 else {}
            if not (fused and _fused.sgd_update(p, grad, state, group)):
                self._update(p, grad, state, group)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict) -> None:
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = grad.detach().clone()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            state["momentum_buffer"] = buf
            grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
        p.add_(grad, alpha=-to_float(group["lr"]))
