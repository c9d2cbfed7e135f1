"""pyaten._C: the names PyTorch's `torch._C` gives Python code, at PyTorch's path, so that
`torch._C.X` ports as `pyaten._C.X`. Each is implemented where it belongs and re-exported here;
this module holds no logic.

`__torch_function__` (docs/torch-function.md): `_disabled_torch_function_impl`,
`DisableTorchFunctionSubclass`, `DisableTorchFunction`, `_is_torch_function_enabled`, the
`has_torch_function` tests and the torch-function mode stack.
"""

from pyaten.core.torch_function import (
    DisableTorchFunction,
    DisableTorchFunctionSubclass,
    _disabled_torch_function_impl,
    _get_function_stack_at,
    _has_torch_function,
    _has_torch_function_unary,
    _has_torch_function_variadic,
    _is_torch_function_enabled,
    _is_torch_function_mode_enabled,
    _len_torch_function_stack,
    _pop_torch_function_stack,
    _push_on_torch_function_stack,
)

__all__ = [
    "DisableTorchFunction",
    "DisableTorchFunctionSubclass",
    "_disabled_torch_function_impl",
    "_get_function_stack_at",
    "_has_torch_function",
    "_has_torch_function_unary",
    "_has_torch_function_variadic",
    "_is_torch_function_enabled",
    "_is_torch_function_mode_enabled",
    "_len_torch_function_stack",
    "_pop_torch_function_stack",
    "_push_on_torch_function_stack",
]
