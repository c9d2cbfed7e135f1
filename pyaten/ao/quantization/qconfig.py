"""QConfig: which observers make a module's activation and weight parameters."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from pyaten.ao.quantization.observer import (
    HistogramObserver,
    default_dynamic_quant_observer,
    default_observer,
    default_per_channel_weight_observer,
    default_weight_observer,
)

__all__ = [
    "QConfig",
    "default_qconfig",
    "default_dynamic_qconfig",
    "default_per_channel_qconfig",
    "get_default_qconfig",
]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """Observer factories (classes or `with_args` results) for a module's output activation
    and its weight; an instance is made per module that `prepare` or `convert` observes."""

    __slots__ = ()

    def __new__(cls, activation: Any, weight: Any) -> QConfig:
        from pyaten.nn.modules.module import Module

        if isinstance(activation, Module) or isinstance(weight, Module):
            raise ValueError(
                "QConfig received observer instance, please pass observer class instead. Use "
                "MyObserver.with_args(x=1) to override arguments to constructor if needed"
            )
        return super().__new__(cls, activation, weight)


default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                  weight=default_weight_observer)
default_per_channel_qconfig = QConfig(activation=default_observer,
                                      weight=default_per_channel_weight_observer)


def get_default_qconfig(backend: str = "x86", version: int = 0) -> QConfig:
    """PyTorch's default post-training static qconfig for a quantized engine: for x86 and
    fbgemm a histogram observer with a reduced range and per-channel symmetric weights; for
    qnnpack the full range and per-tensor weights."""
    if backend not in ("fbgemm", "x86", "qnnpack", "onednn"):
        raise AssertionError(
            f"backend: {backend} not supported. backend must be one of ['x86', 'fbgemm', "
            "'qnnpack', 'onednn']"
        )
    if backend in ("fbgemm", "x86"):
        return QConfig(activation=HistogramObserver.with_args(reduce_range=True),
                       weight=default_per_channel_weight_observer)
    if backend == "qnnpack":
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                       weight=default_weight_observer)
    return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                   weight=default_per_channel_weight_observer)
