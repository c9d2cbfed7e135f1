"""pyaten.nn.functional: PyTorch's `torch.nn.functional`, with its argument names, defaults,
reductions, errors and results (docs/nn-functional.md).

One module per family; this package re-exports their public names, each behind PyTorch's
`__torch_function__` check (`_torch_function.overridable`, docs/torch-function.md).
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

from pyaten.nn.functional._torch_function import install as _install_torch_function  # noqa: E402

_install_torch_function(globals(), __all__)
