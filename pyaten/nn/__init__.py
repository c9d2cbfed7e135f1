"""pyaten.nn: neural-network building blocks on top of the operators and autograd.

`pyaten.nn.functional` holds the functions (docs/nn-functional.md); `Module`, the layers,
the containers, `Parameter`, `init` and `utils` are here (docs/nn-modules.md). `import
pyaten` loads only `functional`; the rest loads on first use (`pyaten.nn.Linear`), through
the module `__getattr__` below.
"""

from __future__ import annotations

import importlib

from pyaten.nn import functional  # noqa: F401

# public name -> the submodule defining it
_LAZY = {
    **{name: "pyaten.nn.modules" for name in (  # recurrent layers
        "GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase",
    )},
    **{name: "pyaten.nn.modules" for name in (
        "BCELoss", "BCEWithLogitsLoss", "Bilinear", "CTCLoss", "CosineEmbeddingLoss",
        "CosineSimilarity", "CrossEntropyLoss", "Flatten", "GaussianNLLLoss",
        "HingeEmbeddingLoss", "HuberLoss", "Identity", "KLDivLoss", "L1Loss", "Linear",
        "MSELoss", "MarginRankingLoss", "Module", "ModuleDict", "ModuleList",
        "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss",
        "PairwiseDistance", "ParameterDict", "ParameterList", "PoissonNLLLoss", "Sequential",
        "SmoothL1Loss", "SoftMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss",
        "Unflatten",
    )},
    **{name: "pyaten.nn.modules" for name in (
        "MultiheadAttention", "Transformer", "TransformerDecoder", "TransformerDecoderLayer",
        "TransformerEncoder", "TransformerEncoderLayer",
    )},
    **{name: "pyaten.nn.modules" for name in (  # the layers (activation, conv, pooling, ...)
        "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
        "AdaptiveMaxPool2d", "AlphaDropout", "AvgPool1d", "AvgPool2d", "AvgPool3d", "BatchNorm1d",
        "BatchNorm2d", "BatchNorm3d", "CELU", "ChannelShuffle", "CircularPad1d", "CircularPad2d",
        "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "Conv1d", "Conv2d",
        "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Dropout", "Dropout1d",
        "Dropout2d", "Dropout3d", "ELU", "Embedding", "EmbeddingBag", "FeatureAlphaDropout", "Fold",
        "FractionalMaxPool2d", "FractionalMaxPool3d", "AdaptiveMaxPool3d", "MaxUnpool3d",
        "GELU", "GLU", "GroupNorm", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh",
        "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LPPool1d", "LPPool2d", "LayerNorm",
        "LeakyReLU", "LocalResponseNorm", "LogSigmoid", "LogSoftmax", "MaxPool1d", "MaxPool2d",
        "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "Mish", "PReLU", "PixelShuffle",
        "PixelUnshuffle", "RMSNorm", "RReLU", "ReLU", "ReLU6", "ReflectionPad1d", "ReflectionPad2d",
        "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "SELU",
        "SiLU", "Sigmoid", "Softmax", "Softmax2d", "Softmin", "Softplus", "Softshrink", "Softsign",
        "Tanh", "Tanhshrink", "Threshold", "Unfold", "Upsample", "UpsamplingBilinear2d",
        "UpsamplingNearest2d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
    )},
    "DataParallel": "pyaten.nn.parallel",
    "SyncBatchNorm": "pyaten.nn.modules.syncbatchnorm",
    "Parameter": "pyaten.nn.parameter",
    "Buffer": "pyaten.nn.parameter",
}
_SUBMODULES = ("init", "modules", "parallel", "parameter", "utils")

__all__ = ["functional", *_SUBMODULES, *_LAZY]


def __getattr__(name: str) -> object:
    if name in _SUBMODULES:
        return importlib.import_module(f"pyaten.nn.{name}")
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pyaten.nn' has no attribute '{name}'", name=name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
