"""BatchedTensor: the value a vmapped function sees, and the level stack of vmap.

Note: batched tensors and levels
    Inside `vmap`, each mapped input is a `BatchedTensor`: a wrapper subclass
    (`_make_wrapper_subclass`) whose shape is one sample's (the *logical* shape) and which
    holds the whole batch (the *physical* value) with the mapped dimension moved to the
    front, so that a rule never has to look for it. Every operator on a BatchedTensor reaches
    its `__torch_dispatch__` through the Python key, which looks up a batching rule for the
    operator (pyaten/func/_rules.py) or else runs the per-sample fallback loop.

    Nested vmaps make nested wrappers: the value of a level-2 wrapper may be a level-1
    wrapper. A call is handled for the highest level among its arguments; wrappers of lower
    levels are plain (unbatched) tensors to that level, and the calls the rule makes on the
    values reach the level below through their own `__torch_dispatch__`.

    The Python key runs handlers with autograd excluded. The handler here restores the
    key sets the user's call saw, so that the calls on the values are recorded by autograd
    when a value requires grad: `grad(vmap(f))` differentiates through the batch, while in
    `vmap(grad(f))` the wrapper itself requires grad and autograd records above it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import pyaten
from pyaten._C import _disabled_torch_function_impl
from pyaten.dispatch import tls
from pyaten.dispatch.python_key import tls_on_entry

__all__ = ["BatchedTensor", "VmapLevel", "current_levels", "push_level", "pop_level"]


@dataclass
class VmapLevel:
    level: int
    batch_size: int
    randomness: str


class _LevelStack(threading.local):
    def __init__(self) -> None:
        self.levels: list[VmapLevel] = []


_STACK = _LevelStack()


def current_levels() -> list[VmapLevel]:
    return _STACK.levels


def push_level(batch_size: int, randomness: str) -> VmapLevel:
    levels = _STACK.levels
    entry = VmapLevel(len(levels) + 1, batch_size, randomness)
    levels.append(entry)
    return entry


def pop_level() -> None:
    _STACK.levels.pop()


def level_info(level: int) -> VmapLevel:
    for entry in _STACK.levels:
        if entry.level == level:
            return entry
    raise RuntimeError(
        f"vmap: a BatchedTensor of level {level} was used outside of the vmap that made it"
    )


class BatchedTensor(pyaten.Tensor):
    """One sample's view of a batch: `value` holds the batch in dimension 0."""

    value: pyaten.Tensor
    level: int
    # Only the ATen calls matter to vmap: the public API runs as on a plain tensor.
    __torch_function__ = _disabled_torch_function_impl

    @staticmethod
    def __new__(cls, value: pyaten.Tensor, level: int) -> BatchedTensor:
        return pyaten.Tensor._make_wrapper_subclass(
            cls, tuple(value.shape[1:]), strides=tuple(value.stride()[1:]),
            dtype=value.dtype, device=value.device,
        )

    def __init__(self, value: pyaten.Tensor, level: int) -> None:
        self.value = value
        self.level = level

    def __repr__(self) -> str:
        return f"BatchedTensor(lvl={self.level}, bdim=0, value=\n{self.value!r}\n)"

    @property
    def batch_size(self) -> int:
        return self.value.shape[0]

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: tuple = (), kwargs: Any = None):
        from pyaten.func._rules import dispatch_batched

        included, excluded = tls_on_entry()
        saved = (tls.STATE.included, tls.STATE.excluded)
        # Calls on the values run with the key sets of the user's call (Note: batched
        # tensors and levels), less the Python keys the call itself was routed by.
        tls._set(saved[0], excluded.raw)
        try:
            return dispatch_batched(func, args, kwargs or {})
        finally:
            tls._set(*saved)


def is_batched_at(x: Any, level: int) -> bool:
    return isinstance(x, BatchedTensor) and x.level == level


def wrap(value: pyaten.Tensor, level: int) -> BatchedTensor:
    return BatchedTensor(value, level)
