"""Messages of the errors a call can hit in the dispatcher (PyTorch's meaning, more help).

Note: the "could not run" error, short and full
    PyTorch's "Could not run" message lists every key that has a kernel, a paragraph about
    mobile and selective builds, and then the whole dispatch table: 80 lines for an aten
    operator, most of them beside the point. pyaten's message keeps PyTorch's first sentence
    and its list of keys with kernels (so the meaning and the searchable text match), then
    says what a user needs: each tensor argument's keys and the registration that would
    serve the selected key. The full account (thread-local sets, the key set, every
    registered kernel, the table) is one attribute away, `err.details`, and is the message
    itself when the environment sets PYATEN_DISPATCH_ERRORS=full.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pyaten.dispatch.keys import RUNTIME_KEYS, DispatchKeySet, display_name, highest_priority_key

if TYPE_CHECKING:
    from pyaten.dispatch.operator import OperatorEntry

_MOBILE_HINT = (
    "This could be because the operator doesn't exist for this backend, or was omitted during "
    "the selective/custom build process (if using custom build). If you are a Facebook "
    "employee using PyTorch on mobile, please visit https://fburl.com/ptmfixes for possible "
    "resolutions."
)


def available_keys(entry: OperatorEntry) -> list[str]:
    """Runtime keys (Undefined excluded) whose slot holds a kernel, fallthroughs included."""
    return [
        display_name(RUNTIME_KEYS[slot])
        for slot, res in enumerate(entry.table)
        if slot and res.kernel is not None
    ]


def _argument_lines(entry: OperatorEntry, args: Sequence[Any]) -> list[str]:
    lines = []
    schema = entry.schema
    if schema is None:
        return lines
    for i in schema.tensor_arg_indices:
        if i >= len(args):
            continue
        value = args[i]
        name = schema.arguments[i].name
        if value is None:
            lines.append(f"  argument '{name}': None (adds no keys)")
            continue
        items = value if isinstance(value, (list, tuple)) else [value]
        raw = 0
        for item in items:
            if item is not None:
                raw |= getattr(item, "_keyset", 0)
        lines.append(f"  argument '{name}': {DispatchKeySet.from_raw(raw)}")
    return lines


def missing_kernel_error(
    entry: OperatorEntry, raw_keyset: int, args: Sequence[Any], tls: tuple[int, int]
) -> NotImplementedError:
    """The NotImplementedError of a call whose key has no kernel: the short message, with the
    full one as `.details` (Note: the "could not run" error, short and full)."""
    details = missing_kernel_message(entry, raw_keyset, args, tls)
    if os.environ.get("PYATEN_DISPATCH_ERRORS") == "full":
        error = NotImplementedError(details)
    else:
        error = NotImplementedError(short_missing_kernel_message(entry, raw_keyset, args))
    error.details = details
    return error


def _head_and_fix(entry: OperatorEntry, key: Any, hint: str) -> tuple[str, str]:
    name = entry.name
    if key.value == 0:
        head = (
            "There were no tensor arguments to this function (e.g., you passed an empty list of "
            f"Tensors), but no fallback function is registered for schema {name}.  This usually "
            "means that this function requires a non-empty list of Tensors, or that you (the "
            "operator writer) forgot to register a fallback function.  Available functions are "
            f"[{', '.join(available_keys(entry))}]."
        )
        fix = "register a CompositeExplicitAutograd or CompositeImplicitAutograd kernel"
    else:
        head = (
            f"Could not run '{name}' with arguments from the '{display_name(key)}' backend. "
            f"{hint}'{name}' is only available for these backends: "
            f"[{', '.join(available_keys(entry))}]."
        )
        fix = (
            f"register a kernel for it, e.g. lib.impl({entry.schema_name!r}, fn, "
            f"'{display_name(key)}')"
        )
    return head, fix


def short_missing_kernel_message(
    entry: OperatorEntry, raw_keyset: int, args: Sequence[Any]
) -> str:
    """PyTorch's first sentence, the arguments' keys and the fix, without the table."""
    key = highest_priority_key(raw_keyset)
    head, fix = _head_and_fix(entry, key, "")
    lines = [head, *_argument_lines(entry, args)]
    lines.append(f"  to fix: {fix}")
    lines.append("  (the full account and the dispatch table: the exception's .details, or "
                 "PYATEN_DISPATCH_ERRORS=full)")
    return "\n".join(lines)


def missing_kernel_message(
    entry: OperatorEntry, raw_keyset: int, args: Sequence[Any], tls: tuple[int, int]
) -> str:
    """The full message: PyTorch's text, why the key was chosen, the kernels, the table."""
    key = highest_priority_key(raw_keyset)
    from pyaten.dispatch.introspect import format_dump  # a sibling module; avoids a cycle

    head, fix = _head_and_fix(entry, key, _MOBILE_HINT + " ")
    lines = [head, "", "Why pyaten chose this key:"]
    lines += _argument_lines(entry, args)
    included, excluded = tls
    lines.append(f"  thread-local included: {DispatchKeySet.from_raw(included)}")
    lines.append(f"  thread-local excluded: {DispatchKeySet.from_raw(excluded)}")
    lines.append(f"  dispatch key set: {DispatchKeySet.from_raw(raw_keyset)}")
    lines.append(f"  selected key: {display_name(key)}, which has no kernel; to fix, {fix}.")
    registered = [
        f"{display_name(k)} ({stack[-1].debug})" for k, stack in entry.kernels.items() if stack
    ]
    lines.append("  kernels registered for this operator: " + (", ".join(registered) or "none"))
    lines += ["", format_dump(entry)]
    return "\n".join(lines)


def ambiguous_autogradother_message(entry: OperatorEntry) -> str:
    return (
        f"{entry.name} has kernels registered to both CompositeImplicitAutograd and a backend "
        "mapped to AutogradOther. This makes the backend kernel unreachable; the dispatcher "
        "will always prefer the CompositeImplicitAutograd lowering (see Note [Ambiguity in "
        "AutogradOther kernel]). If you want to override CompositeImplicitAutograd, please open "
        "an issue to request a dedicated Autograd dispatch key for the backend.\n"
        "If you only want to run inference instead of training, in C++, add "
        "`c10::InferenceMode mode;` before model.forward(). Note this guard is only available "
        "in C++ but not Python at present."
    )


FALLTHROUGH_EXECUTED = (
    "fallthrough_kernel was executed but it should have been short-circuited by the "
    "dispatcher. This could occur if you registered a fallthrough kernel as a override for "
    "a specific operator (as opposed to a backend fallback); this is NOT currently "
    "supported, and we do not intend to add support for it in the near future.  If you do "
    "find yourself in need of this functionality, please file a bug."
)


def meta_fallback_message(name: str) -> str:
    return (
        f"{name}: attempted to run this operator with Meta tensors, but there was no fake impl "
        "or Meta kernel registered. You may have run into this message while using an operator "
        "with PT2 compilation APIs (torch.compile/torch.export); in order to use this operator "
        "with those APIs you'll need to add a fake impl. Please see the following for next "
        "steps:  https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html"
    )
