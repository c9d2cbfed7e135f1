"""The Python key: the dispatch-mode stack, and the fallbacks of Python and PythonTLSSnapshot.

Note: the Python key
    A call reaches the Python key in two ways, as in PyTorch: a tensor argument whose class
    defines `__torch_dispatch__` carries the Python and PythonTLSSnapshot bits in its key set,
    or a `TorchDispatchMode` is on this thread's mode stack, which puts both bits in the
    thread-local included set (pushing the first mode adds them, popping the last removes
    them). The Python key sits below autograd, so a handler sees the ATen calls autograd
    makes (and CompositeImplicitAutograd operators already decomposed by their autograd-key
    kernels).

    The Python fallback runs the handler with every key above Python excluded (autograd,
    ADInplaceOrView, PythonTLSSnapshot...), as PyTorch's `pythonFallback` does, so what a
    handler calls goes straight to the keys below. A mode runs with itself popped off the
    stack (the calls it makes reach the next mode, or none), and is pushed back after. This
    layer knows no operator and no tensor: turning an operator entry and its arguments into
    `(func, types, args, kwargs)` and checking what the handler returns is the job of the
    handler that the native layer installs (`set_handler`).

    PythonTLSSnapshot sits above autograd: its fallback records the thread-local key sets on
    entry to the dispatcher (PyTorch's `tls_on_entry`), for Python kernels that want to run
    with the state the user's call saw (`tls_on_entry()`), then redispatches below itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pyaten.dispatch import tls
from pyaten.dispatch.keys import FUNCTIONALITY_MASK, DispatchKeySet, full_after, functionality_bit

__all__ = [
    "PYTHON_KEYS",
    "python_fallback",
    "tls_snapshot_fallback",
    "push_mode",
    "pop_mode",
    "stack_len",
    "get_stack_at",
    "mode_stack",
    "stash_top_mode",
    "set_handler",
    "tls_on_entry",
]

PYTHON_BIT = functionality_bit("Python")
SNAPSHOT_BIT = functionality_bit("PythonTLSSnapshot")
# The two bits a tensor subclass with `__torch_dispatch__`, or an active mode, carries.
PYTHON_KEYS = PYTHON_BIT | SNAPSHOT_BIT
# Every functionality above Python: excluded while a handler runs (PyTorch's
# `after_Python_keyset` guard in pythonFallback).
ABOVE_PYTHON = FUNCTIONALITY_MASK & ~full_after("Python").raw & ~PYTHON_BIT
_BELOW_SNAPSHOT = full_after("PythonTLSSnapshot").raw


class _ModeState(threading.local):
    stack: list[Any]
    entry: tuple[int, int] | None = None  # (included, excluded) on entry, while recorded

    def __init__(self) -> None:
        self.stack = []


_MODES = _ModeState()


def mode_stack() -> tuple[Any, ...]:
    """This thread's dispatch modes, innermost last."""
    return tuple(_MODES.stack)


def stack_len() -> int:
    return len(_MODES.stack)


def get_stack_at(index: int) -> Any:
    return _MODES.stack[index]


def _include_python_keys(on: bool) -> None:
    included, excluded = tls.STATE.included, tls.STATE.excluded
    included = included | PYTHON_KEYS if on else included & ~PYTHON_KEYS
    tls._set(included, excluded)


def push_mode(mode: Any) -> None:
    """Push a dispatch mode; the first one includes the Python keys on this thread."""
    stack = _MODES.stack
    stack.append(mode)
    if len(stack) == 1:
        _include_python_keys(True)


def pop_mode() -> Any:
    """Pop the innermost dispatch mode; the last one removes the Python keys again."""
    stack = _MODES.stack
    if not stack:
        raise AssertionError("Trying to pop from an empty mode stack")
    mode = stack.pop()
    if not stack:
        _include_python_keys(False)
    return mode


@contextmanager
def stash_top_mode() -> Iterator[Any]:
    """Run a block with the innermost mode popped (how a mode's handler runs)."""
    mode = pop_mode()
    try:
        yield mode
    finally:
        push_mode(mode)


# handler(op, args) -> result: set by the native layer (pyaten/native/python_dispatch.py).
_HANDLER: list[Callable[[Any, tuple], Any]] = []


def set_handler(handler: Callable[[Any, tuple], Any]) -> None:
    _HANDLER[:] = [handler]


def python_fallback(op: Any, keyset: DispatchKeySet, *args: Any) -> Any:
    """The Python key's boxed fallback: the innermost mode's, or the tensor subclasses',
    `__torch_dispatch__`, with every key above Python excluded (Note: the Python key)."""
    if not _HANDLER:
        raise RuntimeError(f"{op.name}: reached the Python key but no handler is installed")
    state = tls.STATE
    included, excluded = state.included, state.excluded
    tls._set(included, excluded | ABOVE_PYTHON)
    try:
        return _HANDLER[0](op, args)
    finally:
        tls._set(included, excluded)


def tls_snapshot_fallback(op: Any, keyset: DispatchKeySet, *args: Any) -> Any:
    """PythonTLSSnapshot: remember the key sets on entry (once per outermost call), then run
    the keys below."""
    if _MODES.entry is not None:
        return op.redispatch(keyset.raw & _BELOW_SNAPSHOT, *args)
    _MODES.entry = (tls.STATE.included, tls.STATE.excluded)
    try:
        return op.redispatch(keyset.raw & _BELOW_SNAPSHOT, *args)
    finally:
        _MODES.entry = None


def tls_on_entry() -> tuple[DispatchKeySet, DispatchKeySet]:
    """The (included, excluded) key sets recorded by PythonTLSSnapshot for the current call."""
    entry = _MODES.entry
    if entry is None:
        raise RuntimeError(
            "Accessing torch dispatch state outside of '__torch_dispatch__' is not allowed."
        )
    return DispatchKeySet.from_raw(entry[0]), DispatchKeySet.from_raw(entry[1])
