"""Functionalization: running a program's operators without mutation (docs/functionalize.md).

`functionalize(fn)` runs `fn` on `FunctionalTensorWrapper`s of its inputs, tensors on the
Functionalize key whose kernel runs every operator functionally (PyTorch's C++ design; Notes
in key.py and tensor_wrapper.py). `dispatch_functionalize(fn)` does the same with a
`FunctionalTensorMode` on `FunctionalTensor`s, Python-key subclasses (torch.compile's way;
Notes in wrapper.py and mode.py). Both share the `Functionalizer` of mode.py.
"""

from . import key
from .api import dispatch_functionalize, functionalize
from .key import *  # noqa: F403 - torch's `torch._*functionaliz*` helpers
from .mode import FunctionalTensorMode
from .tensor_wrapper import FunctionalTensorWrapper
from .wrapper import FunctionalStorage, FunctionalTensor, ViewMeta

__all__ = [
    "functionalize",
    "dispatch_functionalize",
    "FunctionalTensorWrapper",
    "FunctionalTensorMode",
    "FunctionalTensor",
    "FunctionalStorage",
    "ViewMeta",
    *(name for name in key.__all__ if name != "functionalize_kernel"),
]
