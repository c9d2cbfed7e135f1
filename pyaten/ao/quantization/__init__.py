"""Quantization flows and their parts (torch.ao.quantization), see docs/quantization.md."""

from pyaten.ao.quantization.fuse import fuse_conv_bn_eval, fuse_known_modules, fuse_modules
from pyaten.ao.quantization.observer import (
    HistogramObserver,
    MinMaxObserver,
    ObserverBase,
    PerChannelMinMaxObserver,
    PlaceholderObserver,
    default_dynamic_quant_observer,
    default_histogram_observer,
    default_observer,
    default_per_channel_weight_observer,
    default_placeholder_observer,
    default_weight_observer,
)
from pyaten.ao.quantization.qconfig import (
    QConfig,
    default_dynamic_qconfig,
    default_per_channel_qconfig,
    default_qconfig,
    get_default_qconfig,
)
from pyaten.ao.quantization.quantize import (
    convert,
    get_default_dynamic_quant_module_mappings,
    get_default_qconfig_propagation_list,
    get_default_static_quant_module_mappings,
    prepare,
    propagate_qconfig_,
    quantize_dynamic,
)
from pyaten.ao.quantization.stubs import DeQuantStub, QuantStub

__all__ = [
    "HistogramObserver",
    "MinMaxObserver",
    "ObserverBase",
    "PerChannelMinMaxObserver",
    "PlaceholderObserver",
    "QConfig",
    "DeQuantStub",
    "QuantStub",
    "convert",
    "default_dynamic_qconfig",
    "default_dynamic_quant_observer",
    "default_histogram_observer",
    "default_observer",
    "default_per_channel_qconfig",
    "default_per_channel_weight_observer",
    "default_placeholder_observer",
    "default_qconfig",
    "default_weight_observer",
    "fuse_conv_bn_eval",
    "fuse_known_modules",
    "fuse_modules",
    "get_default_dynamic_quant_module_mappings",
    "get_default_qconfig",
    "get_default_qconfig_propagation_list",
    "get_default_static_quant_module_mappings",
    "prepare",
    "propagate_qconfig_",
    "quantize_dynamic",
]
