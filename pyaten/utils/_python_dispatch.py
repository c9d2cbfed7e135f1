"""`TorchDispatchMode` and the helpers of Python dispatch, at PyTorch's module path.

A mode sees every ATen call below autograd while it is active:

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            print(func)                       # aten.add.Tensor
            return func(*args, **(kwargs or {}))

    with Log():
        pyaten.ones(2) + 1

The stack lives in the dispatcher (pyaten/dispatch/python_key.py, Note: the Python key);
a mode's handler runs with the mode popped, so its own calls reach the next mode or none.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.dispatch import python_key
from pyaten.dispatch.tls import ExcludeDispatchKeyGuard
from pyaten.utils import _pytree

__all__ = [
    "TorchDispatchMode",
    "_get_current_dispatch_mode",
    "_get_current_dispatch_mode_stack",
    "_len_torch_dispatch_stack",
    "_pop_mode",
    "_pop_mode_temporarily",
    "_push_mode",
    "_disable_current_modes",
    "is_traceable_wrapper_subclass",
    "transform_subclass",
    "return_and_correct_aliasing",
    "no_dispatch",
]


class TorchDispatchMode:
    """Override every operator call (below autograd) within a `with` block: subclass it and
    define `__torch_dispatch__(self, func, types, args=(), kwargs=None)`. Modes stack; the
    innermost runs first, with itself popped while its handler runs."""

    def __init__(self, _dispatch_key: Any = None) -> None:
        if _dispatch_key is not None:
            self.__dict__["_dispatch_key"] = _dispatch_key

    def __torch_dispatch__(self, func: Any, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        raise NotImplementedError

    def __enter__(self) -> TorchDispatchMode:
        _push_mode(self)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        _pop_mode()  # the innermost mode, as PyTorch's exit does

    @classmethod
    def push(cls, *args: Any, **kwargs: Any) -> TorchDispatchMode:
        import warnings

        warnings.warn(
            "`Mode.push()` is no longer necessary and can be replaced with just `with Mode()`",
            stacklevel=2,
        )
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls) -> bool:
        return False


def _push_mode(mode: TorchDispatchMode) -> None:
    python_key.push_mode(mode)


def _pop_mode(k: Any = None) -> TorchDispatchMode:
    return python_key.pop_mode()


def _get_current_dispatch_mode() -> TorchDispatchMode | None:
    """The innermost active mode, or None."""
    n = python_key.stack_len()
    return python_key.get_stack_at(n - 1) if n else None


def _get_current_dispatch_mode_stack() -> list[TorchDispatchMode]:
    return list(python_key.mode_stack())


def _len_torch_dispatch_stack() -> int:
    return python_key.stack_len()


@contextlib.contextmanager
def _pop_mode_temporarily(k: Any = None) -> Iterator[TorchDispatchMode]:
    """Pop the innermost mode for the block; yields it."""
    with python_key.stash_top_mode() as mode:
        yield mode


@contextlib.contextmanager
def _disable_current_modes() -> Iterator[list[TorchDispatchMode]]:
    """Pop every mode for the block (innermost first); yields them, outermost first."""
    popped = []
    while python_key.stack_len():
        popped.append(python_key.pop_mode())
    try:
        yield list(reversed(popped))
    finally:
        for mode in reversed(popped):
            python_key.push_mode(mode)


@contextlib.contextmanager
def no_dispatch() -> Iterator[None]:
    """Run the block with Python dispatch off (no mode, no subclass handler is called)."""
    with ExcludeDispatchKeyGuard(_PYTHON_KEYSET):
        yield


def is_traceable_wrapper_subclass(t: object) -> bool:
    """Whether `t` is a tensor subclass with `__tensor_flatten__`/`__tensor_unflatten__`."""
    return (
        isinstance(t, Tensor)
        and type(t) is not Tensor
        and hasattr(t, "__tensor_flatten__")
        and hasattr(t, "__tensor_unflatten__")
    )


def transform_subclass(t: Tensor, callback: Any, outer_size: Any = None,
                       outer_stride: Any = None) -> Tensor:
    """Rebuild a traceable wrapper subclass with `callback(name, inner)` applied to each
    inner tensor (PyTorch's helper for subclass authors)."""
    outer_size = t.size() if outer_size is None else outer_size
    outer_stride = t.stride() if outer_stride is None else outer_stride
    names, ctx = t.__tensor_flatten__()
    inner = {name: callback(name, getattr(t, name)) for name in names}
    return type(t).__tensor_unflatten__(inner, ctx, outer_size, outer_stride)


def return_and_correct_aliasing(func: Any, args: tuple, kwargs: dict, out: Any) -> Any:
    """What a wrapper subclass returns from `__torch_dispatch__` so that in-place and out=
    operators return their mutated argument itself (as the schema says), not a new wrapper."""
    schema = func._schema
    flat_args = list(args) + [kwargs.get(a.name) for a in schema.arguments[len(args):]]
    results = out if isinstance(out, tuple) else (out,)
    fixed = []
    for i, ret in enumerate(schema.returns):
        value = results[i] if i < len(results) else None
        if ret.annotation is not None and ret.annotation.is_write:
            for arg, given in zip(schema.arguments, flat_args):
                if arg.annotation is not None and arg.annotation.alias_set == \
                        ret.annotation.alias_set:
                    value = given
                    break
        fixed.append(value)
    return fixed[0] if not isinstance(out, tuple) else tuple(fixed)


_PYTHON_KEYSET = python_key.DispatchKeySet.from_raw(python_key.PYTHON_KEYS)

# PyTorch subclass authors import these from here too.
tree_map = _pytree.tree_map
