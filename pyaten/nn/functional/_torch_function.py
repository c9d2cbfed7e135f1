"""The `__torch_function__` check at the top of every `pyaten.nn.functional` function.

PyTorch starts each function of `torch.nn.functional` with `if has_torch_function(...): return
handle_torch_function(...)`. Here `overridable(fn)` writes that check once: it builds, from
`fn`'s signature, a function with the same parameters whose first line passes over the values
of the usual classes (an exact Tensor, a number, None, a tuple of ints...) with one set test
each and otherwise asks `has_torch_function`; the package applies it to every public name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from pyaten.core import torch_function as _tf
from pyaten.core.device import device as _device
from pyaten.core.dtypes import dtype as _dtype
from pyaten.core.tensor import Size, Tensor

# Values that never carry `__torch_function__`; as in PyTorch's functions, tensors inside
# lists are not looked at. (A set the core keeps up to date: `torch_function.never_overloads`.)
_PLAIN = _tf.plain_classes({Tensor, int, float, bool, type(None), str, tuple, list, Size,
                            _dtype, _device})


def overridable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with PyTorch's `__torch_function__` check in front (the handlers get the
    returned function as `func`, its leading required arguments positionally, the rest by
    keyword)."""
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    head: list[str] = []  # the new function's parameter list
    call: list[str] = []  # how it calls `fn`
    positional: list[str] = []  # passed positionally to the handlers
    keyword: list[str] = []  # passed by keyword to the handlers
    star = ""
    defaults: dict[str, Any] = {}
    kw_only_started = False
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            head.append(f"*{p.name}")
            call.append(f"*{p.name}")
            star = p.name
            kw_only_started = True
            continue
        if p.kind is p.VAR_KEYWORD:
            head.append(f"**{p.name}")
            call.append(f"**{p.name}")
            continue
        if p.kind is p.KEYWORD_ONLY and not kw_only_started:
            head.append("*")
            kw_only_started = True
        text = p.name
        if p.default is not p.empty:
            defaults[p.name] = p.default
            text += f"=_defaults[{p.name!r}]"
        head.append(text)
        if p.kind is p.KEYWORD_ONLY:
            call.append(f"{p.name}={p.name}")
            keyword.append(p.name)
        else:
            call.append(p.name)
            (positional if p.default is p.empty and not keyword else keyword).append(p.name)
    named = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    checks = " or ".join(f"{n}.__class__ not in _PLAIN" for n in named) or "False"
    relevant = "(" + "".join(f"{n}, " for n in named) + ")"
    if star:
        relevant = f"{relevant} + tuple({star})"
        checks = f"{checks} or bool({star})"
    handler_args = "".join(f"{n}, " for n in positional) + (f"*{star}, " if star else "")
    handler_kwargs = ", ".join(f"{n}={n}" for n in keyword)
    lines = [
        f"def {fn.__name__}({', '.join(head)}):",
        f"    if _tf.ACTIVE or {checks}:",
        f"        if _tf._has_torch_function({relevant}):",
        f"            return _tf.handle_torch_function(_public, {relevant}, "
        f"{handler_args}{handler_kwargs})",
        f"    return _fn({', '.join(call)})",
    ]
    namespace: dict[str, Any] = {"_tf": _tf, "_PLAIN": _PLAIN, "_fn": fn, "_defaults": defaults}
    exec("\n".join(lines), namespace)  # noqa: S102 - source built above from fn's signature
    wrapper = namespace[fn.__name__]
    # the handlers' `func`, under a name no parameter shadows (`pad(input, pad, ...)`)
    namespace["_public"] = wrapper
    wrapper.__doc__ = fn.__doc__
    wrapper.__module__ = "pyaten.nn.functional"
    wrapper.__qualname__ = fn.__qualname__
    wrapper.__wrapped__ = fn
    wrapper.__signature__ = sig
    return wrapper


# PyTorch's `get_ignored_functions` lists these: they do not check themselves (the method
# they call does).
_NOT_CHECKED = frozenset({"sigmoid", "tanh", "hardsigmoid", "hardswish", "upsample",
                          "upsample_bilinear", "upsample_nearest"})


def install(namespace: dict[str, Any], names: list[str]) -> None:
    """Replace each public function `names` lists in `namespace` by its overridable form."""
    for name in names:
        fn = namespace.get(name) if name not in _NOT_CHECKED else None
        # a generated binding (`linear`) makes the check itself, as PyTorch's C functions do
        binding = inspect.isfunction(fn) and fn.__globals__.get(
            "__name__", "").startswith("pyaten._generated")
        if inspect.isfunction(fn) and not hasattr(fn, "__wrapped__") and not binding:
            namespace[name] = overridable(fn)
