"""Rules about how the keys of one native_functions.yaml entry combine, and the warnings.

`native.py` reads each key on its own; these rules look at the finished record and its
YAML mapping together (`dispatch` with `manual_kernel_registration`, composite keys that
subsume each other, what structured delegates may name...).
"""

from __future__ import annotations

from pyaten.declarations._yaml import YamlMap
from pyaten.declarations.dispatch_keys import ALIAS_KEYS, STRUCTURED_DISPATCH_KEYS
from pyaten.declarations.model import NativeFunction
from pyaten.declarations.reporting import Report

__all__ = ["check_entry"]

_COMPOSITE_KEYS = frozenset(ALIAS_KEYS)
# (key, its default) for the `redundant-default` warning
_DEFAULTS: tuple[tuple[str, object], ...] = (
    ("structured", False),
    ("device_guard", True),
    ("device_check", "ExactSame"),
    ("manual_kernel_registration", False),
    ("manual_cpp_binding", False),
    ("use_const_ref_for_mutable_tensors", False),
)


def _default_kernel_name(fn: NativeFunction) -> str:
    """The kernel an entry without `dispatch:` gets from pyaten's code generator: `<name>` or
    `<name>_<overload>` (`flatten.using_ints` -> `flatten_using_ints`). PyTorch's C++ name
    drops the overload, which Python cannot do: two overloads would share one function."""
    name = fn.func.name
    return f"{name.name}_{name.overload}" if name.overload else name.name


def check_entry(e: YamlMap, fn: NativeFunction, report: Report) -> None:
    """Every rule about how one entry's keys combine, then the warnings."""
    if fn.manual_kernel_registration and "dispatch" in e:
        report(
            e.line_of("dispatch"),
            "dispatch-with-manual-registration",
            f"{fn.func.name} has both 'dispatch' and 'manual_kernel_registration: True'",
            "with manual registration the dispatch table has no effect; drop one",
        )
    composites = [k for k in fn.dispatch if k in _COMPOSITE_KEYS]
    allowed_pair = (
        len(composites) == 2
        and "CompositeImplicitAutogradNestedTensor" in composites
        and "CompositeExplicitAutogradNonFunctional" not in composites
    )
    if len(composites) > 1 and not allowed_pair:
        report(
            e.line_of("dispatch"),
            "conflicting-composite-keys",
            f"{fn.func.name} names {' and '.join(composites)}; each subsumes the other",
            "keep CompositeExplicitAutograd for an explicit autograd formula, "
            "else CompositeImplicitAutograd alone",
        )
    if fn.structured_delegate is not None:
        if fn.structured:
            report(
                e.line_of("structured"),
                "structured-and-delegate",
                f"{fn.func.name} is both 'structured' and a 'structured_delegate'",
                "the out variant is structured; the others delegate to it",
            )
        backend = sorted(k for k in fn.dispatch if k in STRUCTURED_DISPATCH_KEYS)
        if backend:
            report(
                e.line_of("dispatch"),
                "delegate-with-backend-kernel",
                f"{fn.func.name} delegates to {fn.structured_delegate} but also names "
                f"a {backend[0]} kernel",
                "structured delegates get their backend kernels from the out variant",
            )
    if fn.precomputed is not None and not fn.structured:
        report(
            e.line_of("precomputed"),
            "precomputed-without-structured",
            f"{fn.func.name} has 'precomputed' but is not 'structured: True'",
        )
    if fn.ufunc_inner_loop and not fn.structured:
        report(
            e.line_of("ufunc_inner_loop"),
            "ufunc-without-structured",
            f"{fn.func.name} has 'ufunc_inner_loop' but is not 'structured: True'",
        )
    if fn.python_module is not None and "method" in fn.variants:
        report(
            e.line_of("python_module"),
            "method-in-module",
            f"{fn.func.name} is in python_module '{fn.python_module}' and also a method",
            "functions in a Python module cannot be Tensor methods",
        )
    if fn.use_const_ref_for_mutable_tensors and fn.func.out:
        report(
            e.line_of("use_const_ref_for_mutable_tensors"),
            "bad-value",
            f"{fn.func.name}: use_const_ref_for_mutable_tensors is not allowed on an out function",
        )

    _warnings(e, fn, report)


def _warnings(e: YamlMap, fn: NativeFunction, report: Report) -> None:
    """Style problems: keys that change nothing."""
    for key, default in _DEFAULTS:
        if key in e and e[key] == default and type(e[key]) is type(default):
            report(
                e.line_of(key),
                "redundant-default",
                f"'{key}: {default}' is the default",
                "remove the line",
                severity="warning",
            )
    if len(fn.dispatch) == 1 and fn.dispatch.get("CompositeImplicitAutograd") == (
        _default_kernel_name(fn)
    ):
        report(
            e.line_of("dispatch"),
            "redundant-dispatch",
            f"{fn.func.name}: a lone CompositeImplicitAutograd kernel with the default "
            "name is what no 'dispatch:' means",
            "remove the dispatch section",
            severity="warning",
        )
    if fn.structured_inherits is not None and not fn.structured:
        report(
            e.line_of("structured_inherits"),
            "inherits-without-structured",
            f"{fn.func.name}: 'structured_inherits' has no effect without 'structured: True'",
            severity="warning",
        )
