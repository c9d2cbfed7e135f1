"""`pyaten.nn.modules`: Module, the containers, and the layers over today's functional ops."""

from pyaten.nn.modules.container import (
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from pyaten.nn.modules.distance import CosineSimilarity, PairwiseDistance
from pyaten.nn.modules.flatten import Flatten, Unflatten
from pyaten.nn.modules.linear import Bilinear, Identity, Linear
from pyaten.nn.modules.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    CTCLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)
from pyaten.nn.modules.module import Module

__all__ = [
    "BCELoss", "BCEWithLogitsLoss", "Bilinear", "CTCLoss", "CosineEmbeddingLoss",
    "CosineSimilarity", "CrossEntropyLoss", "Flatten", "GaussianNLLLoss", "HingeEmbeddingLoss",
    "HuberLoss", "Identity", "KLDivLoss", "L1Loss", "Linear", "MSELoss", "MarginRankingLoss",
    "Module", "ModuleDict", "ModuleList", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss",
    "MultiMarginLoss", "NLLLoss", "PairwiseDistance", "ParameterDict", "ParameterList",
    "PoissonNLLLoss", "Sequential", "SmoothL1Loss", "SoftMarginLoss", "TripletMarginLoss",
    "TripletMarginWithDistanceLoss", "Unflatten",
]
