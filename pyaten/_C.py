"""pyaten._C: the names PyTorch's `torch._C` gives Python code, at PyTorch's path, so that
`torch._C.X` ports as `pyaten._C.X`. Each is implemented where it belongs and re-exported here;
this module holds no logic.

`__torch_function__` (docs/torch-function.md): `_disabled_torch_function_impl`,
`DisableTorchFunctionSubclass`, `DisableTorchFunction`, `_is_torch_function_enabled`, the
`has_torch_function` tests and the torch-function mode stack.

`__torch_dispatch__` (docs/python-dispatch.md): `_DisableTorchDispatch`,
`_disabled_torch_dispatch_impl`, the dispatch-mode stack, the thread-local key sets and a
tensor's dispatch keys (`_dispatch_keys`), the key-set guards.

`_functorch` (docs/func.md): the transforms' levels and wrappers, loaded on first use from
pyaten/_functorch/_C_functorch.py (it stands on pyaten.func, which imports this module).
"""

import sys
import types

from pyaten.core.tensor import _disabled_torch_dispatch_impl
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
from pyaten.dispatch.keys import DispatchKey, DispatchKeySet
from pyaten.dispatch.python_key import (
    get_stack_at as _get_dispatch_stack_at,
)
from pyaten.dispatch.python_key import (
    pop_mode as _pop_torch_dispatch_stack,
)
from pyaten.dispatch.python_key import (
    push_mode as _push_on_torch_dispatch_stack,
)
from pyaten.dispatch.python_key import (
    stack_len as _len_torch_dispatch_stack,
)
from pyaten.dispatch.tls import ExcludeDispatchKeyGuard as _ExcludeDispatchKeyGuard
from pyaten.dispatch.tls import IncludeDispatchKeyGuard as _IncludeDispatchKeyGuard
from pyaten.dispatch.tls import tls_local_exclude_set as _dispatch_tls_local_exclude_set
from pyaten.dispatch.tls import tls_local_include_set as _dispatch_tls_local_include_set
from pyaten.utils._python_dispatch import no_dispatch as _DisableTorchDispatch


def _dispatch_keys(tensor: object) -> DispatchKeySet:
    """The dispatch keys a tensor carries (`torch._C._dispatch_keys`)."""
    return DispatchKeySet.from_raw(tensor._keyset)


__all__ = [
    "DispatchKey",
    "DispatchKeySet",
    "_DisableTorchDispatch",
    "_ExcludeDispatchKeyGuard",
    "_IncludeDispatchKeyGuard",
    "_dispatch_keys",
    "_dispatch_tls_local_exclude_set",
    "_dispatch_tls_local_include_set",
    "_disabled_torch_dispatch_impl",
    "_get_dispatch_stack_at",
    "_len_torch_dispatch_stack",
    "_pop_torch_dispatch_stack",
    "_push_on_torch_dispatch_stack",
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


class _Functorch(types.ModuleType):
    def __getattr__(self, name: str) -> object:
        from pyaten._functorch import _C_functorch

        return getattr(_C_functorch, name)


_functorch = sys.modules.setdefault("pyaten._C._functorch", _Functorch("pyaten._C._functorch"))
