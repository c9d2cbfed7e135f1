"""`pyaten.nn.modules`: Module, the containers, and the layers over today's functional ops."""

from pyaten.nn.modules import (
    activation,
    batchnorm,
    conv,
    dropout,
    fold,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    sparse,
    upsampling,
)
from pyaten.nn.modules.activation import *  # noqa: F403
from pyaten.nn.modules.activation_attention import MultiheadAttention
from pyaten.nn.modules.batchnorm import *  # noqa: F403
from pyaten.nn.modules.container import (
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from pyaten.nn.modules.conv import *  # noqa: F403
from pyaten.nn.modules.distance import CosineSimilarity, PairwiseDistance
from pyaten.nn.modules.dropout import *  # noqa: F403
from pyaten.nn.modules.flatten import Flatten, Unflatten
from pyaten.nn.modules.fold import *  # noqa: F403
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
from pyaten.nn.modules.normalization import *  # noqa: F403
from pyaten.nn.modules.padding import *  # noqa: F403
from pyaten.nn.modules.pixelshuffle import *  # noqa: F403
from pyaten.nn.modules.pooling import *  # noqa: F403
from pyaten.nn.modules.rnn import (
    GRU,
    LSTM,
    RNN,
    GRUCell,
    LSTMCell,
    RNNBase,
    RNNCell,
    RNNCellBase,
)
from pyaten.nn.modules.sparse import *  # noqa: F403
from pyaten.nn.modules.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from pyaten.nn.modules.upsampling import *  # noqa: F403

__all__ = [
    "BCELoss", "BCEWithLogitsLoss", "Bilinear", "CTCLoss", "CosineEmbeddingLoss",
    "CosineSimilarity", "CrossEntropyLoss", "Flatten", "GaussianNLLLoss", "HingeEmbeddingLoss",
    "HuberLoss", "Identity", "KLDivLoss", "L1Loss", "Linear", "MSELoss", "MarginRankingLoss",
    "Module", "ModuleDict", "ModuleList", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss",
    "MultiMarginLoss", "NLLLoss", "PairwiseDistance", "ParameterDict", "ParameterList",
    "PoissonNLLLoss", "Sequential", "SmoothL1Loss", "SoftMarginLoss", "TripletMarginLoss",
    "TripletMarginWithDistanceLoss", "Unflatten",
]
__all__ += [  # the layers
    *activation.__all__, *batchnorm.__all__, *conv.__all__, *dropout.__all__, *fold.__all__,
    *normalization.__all__, *padding.__all__, *pixelshuffle.__all__, *pooling.__all__,
    *sparse.__all__, *upsampling.__all__,
]
__all__ += [
    "MultiheadAttention", "Transformer", "TransformerDecoder", "TransformerDecoderLayer",
    "TransformerEncoder", "TransformerEncoderLayer",
]
__all__ += ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase"]
