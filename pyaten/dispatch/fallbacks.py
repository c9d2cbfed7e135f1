"""The global backend fallbacks every process starts with (PyTorch 2.13's baseline).

Fallthroughs: keys that are skipped unless an operator registers a kernel on them
(BackendSelect, ADInplaceOrView, six Autocast keys, the two vmap-mode keys). Real fallbacks:
the autograd keys run the operator below autograd; Meta raises "no fake impl or Meta kernel";
Python and PythonTLSSnapshot run `__torch_dispatch__` (pyaten/dispatch/python_key.py); the
Functionalize and FuncTorchBatched run the kernels their packages install (pass-throughs
until then); the other mode and wrapper keys have no pyaten behaviour of their own yet and
pass the call on to the keys below them. With this baseline `dump_table`
agrees with PyTorch's for an operator with the same registrations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyaten.dispatch.errors import meta_fallback_message
from pyaten.dispatch.keys import KEY_BY_NAME, DispatchKeySet, full_after
from pyaten.dispatch.python_key import python_fallback, tls_snapshot_fallback
from pyaten.dispatch.registry import register_fallback

FALLTHROUGH_KEYS = (
    "BackendSelect", "ADInplaceOrView", "AutocastCPU", "AutocastMTIA", "AutocastMAIA",
    "AutocastXPU", "AutocastMPS", "AutocastCUDA", "FuncTorchVmapMode", "VmapMode",
)  # fmt: skip

AUTOGRAD_FALLBACK_KEYS = (
    "AutogradOther", "AutogradCPU", "AutogradCUDA", "AutogradXLA", "AutogradMPS", "AutogradXPU",
    "AutogradHPU", "AutogradLazy", "AutogradMTIA", "AutogradMAIA", "AutogradPrivateUse1",
    "AutogradMeta",
)  # fmt: skip

PASS_THROUGH_KEYS = (
    # (Conjugate, Negative and ZeroTensor get theirs from pyaten/native/mathbits.py.)
    "Tracer",
    "BatchedNestedTensor", "Batched",
    "FuncTorchGradWrapper", "FuncTorchDynamicLayerFrontMode", "PreDispatch",
    "PythonDispatcher",
)  # fmt: skip

_AFTER_AUTOGRAD = full_after("AutogradOther").raw


def autograd_fallback(op: Any, keyset: DispatchKeySet, *args: Any) -> Any:
    """An operator without an autograd kernel: run it below autograd (no graph recorded).

    Like torch 2.13's default ("warn") mode this sets no thread-local guard: nested calls
    still see autograd keys, and ADInplaceOrView kernels of this operator still run.
    """
    return op.redispatch(keyset.raw & _AFTER_AUTOGRAD, *args)


# Operator entries skip straight to the redispatch target of fallbacks that only redispatch.
autograd_fallback.redispatch_mask = _AFTER_AUTOGRAD


def meta_fallback(op: Any, keyset: DispatchKeySet, *args: Any) -> Any:
    raise NotImplementedError(meta_fallback_message(op.name))


def _pass_through(key: str):
    below = full_after(key).raw

    def fallback(op: Any, keyset: DispatchKeySet, *args: Any) -> Any:
        return op.redispatch(keyset.raw & below, *args)

    fallback.__qualname__ = f"{key}_fallback"
    fallback.redispatch_mask = below
    return fallback


def _installable(key: str, name: str) -> tuple[Callable[[Any], None], Callable[..., Any]]:
    """A fallback for `key` that passes the call below the key until a layer above dispatch
    installs its kernel (pyaten.func, pyaten._functionalize), and runs that kernel after:
    (install, fallback), the fallback named `name` in tables and traces."""
    installed: list[Any] = [None]
    below = full_after(key).raw

    def install(kernel: Any) -> None:
        installed[0] = kernel

    def fallback(op: Any, keyset: DispatchKeySet, *args: Any) -> Any:
        kernel = installed[0]
        if kernel is None:
            return op.redispatch(keyset.raw & below, *args)
        return kernel(op, keyset, *args)

    fallback.__name__ = fallback.__qualname__ = name
    return install, fallback


# vmap's kernel (pyaten/func/_key.py), the functorch layer's kernel below autograd (the same
# file), and functionalization's (pyaten/_functionalize/key.py)
set_batched_kernel, functorch_batched_fallback = _installable(
    "FuncTorchBatched", "functorch_batched_fallback")
set_layer_back_kernel, functorch_layer_back_fallback = _installable(
    "FuncTorchDynamicLayerBackMode", "functorch_layer_back_fallback")
set_functionalize_kernel, functionalize_fallback = _installable(
    "Functionalize", "functionalize_fallback")


def _site(fn: Any) -> str:
    code = fn.__code__
    return f"registered at {code.co_filename}:{code.co_firstlineno}"


def install_baseline() -> None:
    """Register the baseline fallbacks (done once, when pyaten.dispatch is imported)."""
    here = _site(install_baseline)
    for name in FALLTHROUGH_KEYS:
        register_fallback(KEY_BY_NAME[name], None, fallthrough=True, debug=here)
    for name in AUTOGRAD_FALLBACK_KEYS:
        register_fallback(KEY_BY_NAME[name], autograd_fallback, debug=_site(autograd_fallback))
    register_fallback(KEY_BY_NAME["Meta"], meta_fallback, debug=_site(meta_fallback))
    # The Python key and its snapshot (Note: the Python key, in pyaten/dispatch/python_key.py).
    register_fallback(KEY_BY_NAME["Python"], python_fallback, debug=_site(python_fallback))
    register_fallback(
        KEY_BY_NAME["PythonTLSSnapshot"], tls_snapshot_fallback, debug=_site(tls_snapshot_fallback)
    )
    register_fallback(KEY_BY_NAME["FuncTorchBatched"], functorch_batched_fallback,
                      debug=_site(functorch_batched_fallback))
    register_fallback(KEY_BY_NAME["FuncTorchDynamicLayerBackMode"], functorch_layer_back_fallback,
                      debug=_site(functorch_layer_back_fallback))
    register_fallback(KEY_BY_NAME["Functionalize"], functionalize_fallback,
                      debug=_site(functionalize_fallback))
    for name in PASS_THROUGH_KEYS:
        fn = _pass_through(name)
        register_fallback(KEY_BY_NAME[name], fn, debug=_site(fn))
