"""Functionalization: running a program's operators without mutation (docs/functionalize.md).

`functionalize(fn)` runs `fn` on `FunctionalTensorWrapper`s of its inputs, tensors on the
Functionalize key whose kernel runs every operator functionally (PyTorch's C++ design; Notes
in key.py and tensor_wrapper.py). `dispatch_functionalize(fn)` does the same with a
`FunctionalTensorMode` on `FunctionalTensor`s, Python-key subclasses (torch.compile's way;
Notes in wrapper.py and mode.py). Both share the `Functionalizer` of mode.py.
"""

from .api import dispatch_functionalize, functionalize
from .key import (
    _disable_functionalization,
    _enable_functionalization,
    _from_functional_tensor,
    _functionalize_commit_update,
    _functionalize_has_data_mutation,
    _functionalize_has_metadata_mutation,
    _functionalize_is_multi_output_view,
    _functionalize_mutation_counter,
    _functionalize_replace,
    _functionalize_sync,
    _is_functional_tensor,
    _sync,
    _to_functional_tensor,
)
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
    "_to_functional_tensor",
    "_from_functional_tensor",
    "_is_functional_tensor",
    "_functionalize_sync",
    "_sync",
    "_functionalize_replace",
    "_functionalize_commit_update",
    "_functionalize_has_data_mutation",
    "_functionalize_has_metadata_mutation",
    "_functionalize_is_multi_output_view",
    "_functionalize_mutation_counter",
    "_enable_functionalization",
    "_disable_functionalization",
]
