"""pyaten.dispatch: dispatch keys, key sets, operator tables and the dispatcher."""

from pyaten.dispatch.keys import (
    DispatchKey,
    DispatchKeySet,
    backend_keyset_bits,
    full_after,
    register_backend_name,
    runtime_keys,
    table_index,
)

__all__ = [
    "DispatchKey",
    "DispatchKeySet",
    "backend_keyset_bits",
    "full_after",
    "register_backend_name",
    "runtime_keys",
    "table_index",
]
