"""Functionalization: running a program's operators without mutation (docs/functionalize.md).

`functionalize(fn)` runs `fn` under a `FunctionalTensorMode` on `FunctionalTensor`
wrappers of its inputs (PyTorch's FunctionalTensorWrapper and the Functionalize key's
fallback, built on the Python key); see the Notes in wrapper.py and mode.py.
"""

from .api import functionalize
from .mode import FunctionalTensorMode
from .wrapper import (
    FunctionalStorage,
    FunctionalTensor,
    ViewMeta,
    _from_functional_tensor,
    _functionalize_sync,
    _is_functional_tensor,
    _to_functional_tensor,
)

__all__ = [
    "functionalize",
    "FunctionalTensorMode",
    "FunctionalTensor",
    "FunctionalStorage",
    "ViewMeta",
    "_to_functional_tensor",
    "_from_functional_tensor",
    "_is_functional_tensor",
    "_functionalize_sync",
]
