"""The eager quantization flows: `quantize_dynamic`, and `prepare` / calibrate / `convert`.

- `propagate_qconfig_` gives every submodule its parent's `qconfig` unless it has its own (or
  a `qconfig_spec` entry names its type or its qualified name);
- `prepare` attaches `qconfig.activation()` as `activation_post_process` to every leaf module
  of a quantizable type (a fused module counts as a leaf), with a forward hook that feeds it
  the module's output;
- `convert` swaps each module that has a qconfig for its quantized counterpart (`from_float`
  reads the observers) and drops the observers and qconfigs.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import pyaten.nn as nn
from pyaten.ao.nn import intrinsic as nni
from pyaten.ao.nn import quantized as nnq
from pyaten.ao.nn.intrinsic import _FusedModule
from pyaten.ao.nn.intrinsic import quantized as nniq
from pyaten.ao.nn.quantized import dynamic as nnqd
from pyaten.ao.quantization.qconfig import default_dynamic_qconfig
from pyaten.ao.quantization.stubs import DeQuantStub, QuantStub
from pyaten.core import dtypes as dt
from pyaten.nn.modules.module import Module

__all__ = [
    "propagate_qconfig_",
    "prepare",
    "convert",
    "quantize_dynamic",
    "get_default_static_quant_module_mappings",
    "get_default_dynamic_quant_module_mappings",
    "get_default_qconfig_propagation_list",
]


def get_default_static_quant_module_mappings() -> dict[type, type]:
    return {
        QuantStub: nnq.Quantize,
        DeQuantStub: nnq.DeQuantize,
        nn.Linear: nnq.Linear,
        nn.Conv2d: nnq.Conv2d,
        nn.ReLU6: nnq.ReLU6,
        nnq.FloatFunctional: nnq.QFunctional,
        nni.ConvReLU2d: nniq.ConvReLU2d,
        nni.LinearReLU: nniq.LinearReLU,
    }


def get_default_dynamic_quant_module_mappings() -> dict[type, type]:
    return {nn.Linear: nnqd.Linear, nn.LSTM: nnqd.LSTM, nn.GRU: nnqd.GRU,
            nn.LSTMCell: nnqd.LSTMCell, nn.GRUCell: nnqd.GRUCell, nn.RNNCell: nnqd.RNNCell}


def get_default_qconfig_propagation_list() -> set[type]:
    return (set(get_default_static_quant_module_mappings())
            | set(get_default_dynamic_quant_module_mappings()) | {nn.Sequential})


def propagate_qconfig_(module: Module, qconfig_dict: dict | None = None,
                       prepare_custom_config_dict: dict | None = None) -> None:
    """Set `qconfig` on every submodule: its own, its type's or name's entry in
    `qconfig_dict`, or its parent's."""
    _propagate(module, qconfig_dict or {}, None, "")


def _propagate(module: Module, qconfig_dict: dict, parent: Any, prefix: str) -> None:
    qconfig = qconfig_dict.get(type(module), parent)
    qconfig = qconfig_dict.get(prefix, qconfig)
    qconfig = getattr(module, "qconfig", qconfig)
    module.qconfig = qconfig
    for name, child in module.named_children():
        _propagate(child, qconfig_dict, qconfig, prefix + "." + name if prefix else name)


def _observer_forward_hook(module: Module, inputs: Any, output: Any) -> Any:
    return module.activation_post_process(output)


def _has_no_children(module: Module) -> bool:
    return next(iter(module.children()), None) is None


def _insert_observer(module: Module) -> None:
    qconfig = getattr(module, "qconfig", None)
    if qconfig is None or isinstance(module, DeQuantStub):
        return
    module.add_module("activation_post_process", qconfig.activation())
    module._observer_hook = module.register_forward_hook(_observer_forward_hook)


def _add_observers(module: Module, allowed: set[type]) -> None:
    for child in list(module.children()):
        if type(child) in (nnq.FloatFunctional, nnq.QFunctional):
            if getattr(child, "qconfig", None) is not None:
                child.activation_post_process = child.qconfig.activation()
        elif isinstance(child, _FusedModule):
            _insert_observer(child)  # a fused module is observed as one leaf
        elif _has_no_children(child) and type(child) in allowed:
            _insert_observer(child)
        else:
            _add_observers(child, allowed)
    if (_has_no_children(module) and not isinstance(module, nn.Sequential)
            and type(module) in allowed):
        _insert_observer(module)


def prepare(model: Module, inplace: bool = False, allow_list: set | None = None,
            observer_non_leaf_module_list: Any = None,
            prepare_custom_config_dict: Any = None) -> Module:
    """A copy of `model` (or `model` itself when `inplace`) with observers attached, ready to
    be calibrated by running it on representative data."""
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model)
    if not any(getattr(m, "qconfig", None) for m in model.modules()):
        warnings.warn(
            "None of the submodule got qconfig applied. Make sure you passed correct "
            "configuration through `qconfig_dict` or by assigning the `.qconfig` attribute "
            "directly on submodules",
            stacklevel=2,
        )
    _add_observers(model, allow_list or get_default_qconfig_propagation_list())
    return model


def _swap_module(mod: Module, mapping: dict[type, type]) -> Module:
    if getattr(mod, "qconfig", None) is not None and type(mod) in mapping:
        return mapping[type(mod)].from_float(mod)
    return mod


def _convert(module: Module, mapping: dict[type, type]) -> None:
    swapped = {}
    for name, child in module.named_children():
        if not isinstance(child, _FusedModule):
            _convert(child, mapping)
        swapped[name] = _swap_module(child, mapping)
    for name, child in swapped.items():
        setattr(module, name, child)


def _remove_qconfig(module: Module) -> None:
    for child in module.children():
        _remove_qconfig(child)
    if "qconfig" in module.__dict__:
        del module.__dict__["qconfig"]
    if "activation_post_process" in getattr(module, "_modules", {}):
        if not isinstance(module, (nnq.FloatFunctional, nnq.QFunctional)):
            del module._modules["activation_post_process"]
    hook = module.__dict__.pop("_observer_hook", None)
    if hook is not None:
        hook.remove()


def convert(module: Module, mapping: dict | None = None, inplace: bool = False,
            remove_qconfig: bool = True, is_reference: bool = False,
            convert_custom_config_dict: Any = None) -> Module:
    """`module` with each observed module swapped for its quantized counterpart."""
    if is_reference:
        raise NotImplementedError("pyaten's convert makes no reference (decomposed) modules")
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping if mapping is not None else get_default_static_quant_module_mappings())
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def quantize_dynamic(model: Module, qconfig_spec: Any = None, dtype: dt.dtype = dt.qint8,
                     mapping: dict | None = None, inplace: bool = False) -> Module:
    """`model` with its Linear, LSTM, GRU and RNN-cell modules (or those `qconfig_spec` names)
    replaced by dynamically quantized ones: qint8 weights, activations quantized per call."""
    if dtype is not dt.qint8:
        raise ValueError(
            f"Don't know how to quantize with default settings for {dtype}. Provide full "
            "qconfig please"
        )
    if qconfig_spec is None:
        qconfig_spec = dict.fromkeys((nn.Linear, nn.LSTM, nn.GRU, nn.LSTMCell, nn.RNNCell,
                                      nn.GRUCell), default_dynamic_qconfig)
    elif isinstance(qconfig_spec, set):
        qconfig_spec = dict.fromkeys(qconfig_spec, default_dynamic_qconfig)
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    convert(model, mapping, inplace=True)
    return model
