"""pyaten.nn.functional: PyTorch's `torch.nn.functional`, with its argument names, defaults,
reductions, errors and results (docs/nn-functional.md).

One module per family; this package re-exports their public names.
"""

from pyaten.nn.functional import _activation, _conv, _loss, _norm, _sampling
from pyaten.nn.functional._activation import *  # noqa: F403
from pyaten.nn.functional._conv import *  # noqa: F403
from pyaten.nn.functional._loss import *  # noqa: F403
from pyaten.nn.functional._norm import *  # noqa: F403
from pyaten.nn.functional._sampling import *  # noqa: F403

__all__ = (
    _activation.__all__ + _conv.__all__ + _loss.__all__ + _norm.__all__ + _sampling.__all__
)
