"""BatchedTensor: the value a vmapped function sees, and the level stack of vmap.

Note: batched tensors and levels
    Inside `vmap`, each mapped input is a `BatchedTensor`: a wrapper subclass (built as
    `_make_wrapper_subclass` would, by `_make_batched`) whose shape is one sample's (the
    *logical* shape) and which holds the whole batch (the *physical* value) with the mapped
    dimension moved to the front, so that a rule never has to look for it. An operator on a
    BatchedTensor reaches the FuncTorchBatched key first (Note: the FuncTorchBatched key, in
    _key.py), which runs the batching rule (pyaten/func/_rules.py) or the per-sample fallback
    loop itself; the calls autograd must record on the wrappers go below autograd and reach
    the FuncTorchDynamicLayerBackMode kernel, which does the same.

    Nested vmaps make nested wrappers: the value of a level-2 wrapper may be a level-1
    wrapper. A call is handled for the highest level among its arguments; wrappers of lower
    levels are plain (unbatched) tensors to that level, and the calls the rule makes on the
    values reach the level below through their own `__torch_dispatch__`.

    Below autograd the autograd keys are excluded. The back kernel restores the key sets the
    user's call saw, so that the calls on the values are recorded by autograd when a value
    requires grad: `grad(vmap(f))` differentiates through the batch, while in `vmap(grad(f))`
    the wrapper itself requires grad and autograd records above it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import pyaten
from pyaten._C import _disabled_torch_function_impl
from pyaten.core.accel import ACCEL
from pyaten.core.tensor import make_dataless
from pyaten.core.torch_function import never_overloads
from pyaten.core.views import storage_nbytes_needed
from pyaten.dispatch.keys import functionality_bit
from pyaten.dispatch.python_key import PYTHON_BIT

__all__ = ["BatchedTensor", "VmapLevel", "current_levels", "push_level", "pop_level"]


@dataclass(slots=True)  # (slots: csrc/accel.c's vmap call makes them)
class VmapLevel:
    level: int
    batch_size: int
    randomness: str


class _LevelStack(threading.local):
    def __init__(self) -> None:
        self.levels: list[VmapLevel] = []


_STACK = _LevelStack()
# A BatchedTensor's keys beside its device's: FuncTorchBatched, where vmap runs (Note: the
# FuncTorchBatched key), FuncTorchDynamicLayerBackMode, below autograd, where the calls
# autograd records first are batched, and the Python key, for the calls made inside a
# `__torch_dispatch__` handler (every key above Python excluded there).
BATCHED_KEYS = (functionality_bit("FuncTorchBatched")
                | functionality_bit("FuncTorchDynamicLayerBackMode") | PYTHON_BIT)


# In the thread's included set while a vmapped function runs (random factories, _random.py)
VMAP_MODE_BIT = functionality_bit("FuncTorchVmapMode")


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

    # slots, not the instance dict: csrc/accel.c's wrapper constructor and route read and
    # write them at their offsets
    __slots__ = ("value", "level")
    value: pyaten.Tensor
    level: int
    # Only the ATen calls matter to vmap: the public API runs as on a plain tensor.
    __torch_function__ = _disabled_torch_function_impl

    @staticmethod
    def __new__(cls, value: pyaten.Tensor, level: int) -> BatchedTensor:
        return _make_batched(value, level)

    def __init__(self, value: pyaten.Tensor, level: int) -> None:
        pass  # `_make_batched` set everything

    def __repr__(self) -> str:
        return f"BatchedTensor(lvl={self.level}, bdim=0, value=\n{self.value!r}\n)"

    @property
    def batch_size(self) -> int:
        return self.value.shape[0]

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: tuple = (), kwargs: Any = None):
        from pyaten.func._rules import dispatch_batched

        # Reached only from inside another `__torch_dispatch__` handler (a mode's, a
        # wrapper subclass's), which runs with the keys above Python excluded: the calls on
        # the values run with that handler's key sets.
        return dispatch_batched(func, args, kwargs or {})


never_overloads(BatchedTensor)  # its handler is the disabled one: skipped without a lookup


# The per-call constructor (Note: the FuncTorchBatched key, in _key.py): the fields
# `_make_wrapper_subclass` would set, without its argument checks; one sample's geometry.
# With the accelerator loaded, `_make_batched` is its C version (csrc/accel.c), the same
# slots and attributes; `make_batched_reference` stays the reference.
_dataless = make_dataless if ACCEL is None else ACCEL.make_dataless


def make_batched_reference(value: pyaten.Tensor, level: int) -> BatchedTensor:
    sizes = value._sizes[1:]
    strides = value._strides[1:]
    device = value._device
    dtype = value._dtype
    if len(sizes) == 1:  # a vector per sample, the common case: its extent without a loop
        nbytes = ((sizes[0] - 1) * strides[0] + 1) * dtype.itemsize if sizes[0] else 0
    else:
        nbytes = storage_nbytes_needed(sizes, strides, 0, dtype.itemsize)
    # the data lives in `value`
    t = _dataless(BatchedTensor, sizes, strides, 0, dtype, device,
                  device._keyset | BATCHED_KEYS, nbytes)
    t.value = value
    t.level = level
    return t


_make_batched = make_batched_reference
if ACCEL is not None:
    ACCEL.setup_batched(BatchedTensor, BATCHED_KEYS, make_batched_reference)
    _make_batched = ACCEL.make_batched


def is_batched_at(x: Any, level: int) -> bool:
    return isinstance(x, BatchedTensor) and x.level == level


def wrap(value: pyaten.Tensor, level: int) -> BatchedTensor:
    return BatchedTensor(value, level)
