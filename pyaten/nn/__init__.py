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
    "Parameter": "pyaten.nn.parameter",
    "Buffer": "pyaten.nn.parameter",
}
_SUBMODULES = ("init", "modules", "parameter", "utils")

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
