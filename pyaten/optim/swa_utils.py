"""`optim.swa_utils`: weight averaging (SWA, EMA) of a model, the SWA learning-rate schedule,
and `update_bn` to recompute batch-norm statistics for the averaged weights."""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable
from typing import Any

from pyaten.autograd.grad_mode import no_grad
from pyaten.core.creation import tensor
from pyaten.core.dtypes import int64
from pyaten.core.tensor import Tensor
from pyaten.nn.modules.batchnorm import _BatchNorm
from pyaten.nn.modules.module import Module
from pyaten.optim.lr_scheduler import LRScheduler
from pyaten.optim.optimizer import Optimizer

__all__ = [
    "SWALR", "AveragedModel", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
    "get_swa_multi_avg_fn", "update_bn",
]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range."
        )


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """An exponential moving average over lists of tensors: `ema += (1 - decay)(p - ema)`."""
    _check_decay(decay)

    def ema_update(ema_params: list[Tensor], params: list[Tensor], num_averaged: Any) -> None:
        with no_grad():
            floating = ema_params[0].is_floating_point() or ema_params[0].is_complex()
            for ema, p in zip(ema_params, params):
                if floating:
                    ema.lerp_(p, 1 - decay)
                else:
                    ema.copy_(ema * decay + p * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """The running mean over lists of tensors: `avg += (p - avg) / (n + 1)`."""

    def swa_update(avg_params: list[Tensor], params: list[Tensor], num_averaged: Any) -> None:
        with no_grad():
            floating = avg_params[0].is_floating_point() or avg_params[0].is_complex()
            for avg, p in zip(avg_params, params):
                if floating:
                    weight = 1 / (num_averaged + 1)
                    avg.lerp_(p, weight.item() if isinstance(weight, Tensor) else weight)
                elif isinstance(num_averaged, Tensor):
                    avg.addcdiv_(p - avg, num_averaged + 1)
                else:
                    avg.add_(p - avg, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """An exponential moving average of one tensor: `decay * ema + (1 - decay) * p`."""
    _check_decay(decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable:
    """The running mean of one tensor: `avg + (p - avg) / (n + 1)`."""

    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters (and buffers, with `use_buffers`) are the average of
    those `update_parameters` was given: equal weights (SWA) by default, or `avg_fn` /
    `multi_avg_fn` (e.g. `get_ema_multi_avg_fn(0.999)`)."""

    n_averaged: Tensor

    def __init__(
        self, model: Module, device: Any = None, avg_fn: Callable | None = None,
        multi_avg_fn: Callable | None = None, use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold `model`'s current weights into the average (the first call copies them)."""
        if self.use_buffers:
            inner = self.module
            mine: Iterable[Tensor] = itertools.chain(inner.parameters(), inner.buffers())
            theirs: Iterable[Tensor] = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        averaged, current = [], []
        first = bool(self.n_averaged == 0)
        with no_grad():
            for p_avg, p_model in zip(mine, theirs):
                p_model = p_model.detach().to(p_avg.device)
                averaged.append(p_avg.detach())
                current.append(p_model)
                if first:
                    p_avg.detach().copy_(p_model)
            if not first:
                if self.multi_avg_fn is not None:  # one call per (device, dtype), as PyTorch
                    groups: dict[tuple, tuple[list, list]] = {}
                    for p_avg, p_model in zip(averaged, current):
                        group = groups.setdefault((str(p_avg.device), p_avg.dtype), ([], []))
                        group[0].append(p_avg)
                        group[1].append(p_model)
                    for group_avg, group_model in groups.values():
                        self.multi_avg_fn(group_avg, group_model, self.n_averaged)
                else:
                    avg_fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                    for p_avg, p_model in zip(averaged, current):
                        p_avg.copy_(avg_fn(p_avg, p_model, self.n_averaged))
            if not self.use_buffers:  # the buffers follow the model's
                for b_avg, b_model in zip(self.module.buffers(), model.buffers()):
                    b_avg.detach().copy_(b_model.detach().to(b_avg.device))
            self.n_averaged += 1


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute the running statistics of `model`'s batch-norm layers with one pass over
    `loader` (cumulative averages: momentum None), as the averaged weights need."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


def _format_param(name: str, optimizer: Optimizer, param: Any) -> list[Any]:
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. {name} has "
                f"{len(param)} values, param_groups has {len(optimizer.param_groups)}."
            )
        return [p.clone() if isinstance(p, Tensor) else p for p in param]
    return [param.clone() if isinstance(param, Tensor) else param
            for _ in optimizer.param_groups]


class SWALR(LRScheduler):
    """Anneal each group's lr to its `swa_lr` over `anneal_epochs` steps ("cos" or
    "linear"), then hold it."""

    def __init__(
        self, optimizer: Optimizer, swa_lr: float | list[float], anneal_epochs: int = 10,
        anneal_strategy: str = "cos", last_epoch: int = -1,
    ) -> None:
        for value, group in zip(_format_param("swa_lr", optimizer, swa_lr),
                                optimizer.param_groups):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                "anneal_strategy must be one of 'cos' or 'linear', instead got "
                f"{anneal_strategy}"
            )
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[Any]:
        self._warn_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]
