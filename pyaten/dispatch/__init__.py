"""pyaten.dispatch: dispatch keys, key sets, operator tables and the dispatcher.

Public API (see docs/dispatcher.md):
  keys      DispatchKey, DispatchKeySet, runtime_keys, table_index, full_after,
            backend_keyset_bits, register_backend_name
  registry  define, register_kernel, register_fallback, get_operator, list_operators
  calling   OperatorEntry.call / .redispatch, the TLS guards
  looking   dump_table, explain, trace
"""

from pyaten.dispatch import trace
from pyaten.dispatch.fallbacks import install_baseline as _install_baseline
from pyaten.dispatch.introspect import Explanation, dump, dump_table, explain, format_dump
from pyaten.dispatch.keys import (
    AFTER_AD_INPLACE_OR_VIEW,
    AFTER_AUTOGRAD,
    AFTER_FUNCTIONALIZE,
    DispatchKey,
    DispatchKeySet,
    backend_keyset_bits,
    display_name,
    full_after,
    parse_dispatch_key,
    register_backend_name,
    runtime_keys,
    table_index,
)
from pyaten.dispatch.operator import OperatorEntry
from pyaten.dispatch.registry import (
    RegistrationHandle,
    define,
    find_dangling_impls,
    find_operator,
    get_operator,
    list_operators,
    register_fallback,
    register_kernel,
)
from pyaten.dispatch.rules import Kernel, Resolution
from pyaten.dispatch.tls import (
    AutoDispatchBelowADInplaceOrView,
    AutoDispatchBelowAutograd,
    ExcludeDispatchKeyGuard,
    IncludeDispatchKeyGuard,
    tls_is_dispatch_key_excluded,
    tls_is_dispatch_key_included,
    tls_local_exclude_set,
    tls_local_include_set,
)

Trace = trace.Trace

_install_baseline()

__all__ = [
    "AFTER_AD_INPLACE_OR_VIEW",
    "AFTER_AUTOGRAD",
    "AFTER_FUNCTIONALIZE",
    "AutoDispatchBelowADInplaceOrView",
    "AutoDispatchBelowAutograd",
    "DispatchKey",
    "DispatchKeySet",
    "ExcludeDispatchKeyGuard",
    "Explanation",
    "IncludeDispatchKeyGuard",
    "Kernel",
    "OperatorEntry",
    "RegistrationHandle",
    "Resolution",
    "Trace",
    "backend_keyset_bits",
    "define",
    "display_name",
    "dump",
    "dump_table",
    "explain",
    "find_dangling_impls",
    "find_operator",
    "format_dump",
    "full_after",
    "get_operator",
    "list_operators",
    "parse_dispatch_key",
    "register_backend_name",
    "register_fallback",
    "register_kernel",
    "runtime_keys",
    "table_index",
    "tls_is_dispatch_key_excluded",
    "tls_is_dispatch_key_included",
    "tls_local_exclude_set",
    "tls_local_include_set",
    "trace",
]
