"""torch._functorch.pyfunctorch's interpreters over pyaten's one level stack (Note: one
level stack, in levels.py): `retrieve_current_functorch_interpreter()` and the
Vmap/Grad/Jvp interpreters with `level()`, `key()`, `lower()` and their own state."""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator
from typing import Any

from pyaten._functorch.levels import AutogradLayer, layers, lowered
from pyaten.func._batched import VmapLevel

__all__ = ["TransformType", "RandomnessType", "FuncTorchInterpreter", "VmapInterpreter",
           "GradInterpreter", "JvpInterpreter", "retrieve_current_functorch_interpreter",
           "retrieve_all_functorch_interpreters", "interpreter_at"]


class _IntEnum(enum.Enum):
    # torch's pybind enums: printed by name, convertible with int()
    def __int__(self) -> int:
        return self.value


class TransformType(_IntEnum):
    Torch = 0
    Vmap = 1
    Grad = 2
    Jvp = 3
    Functionalize = 4


class RandomnessType(_IntEnum):
    Error = 0
    Same = 1
    Different = 2


class FuncTorchInterpreter:
    """One layer of the stack, as torch's interpreters describe theirs."""

    _key: TransformType

    def __init__(self, layer: VmapLevel | AutogradLayer, level: int) -> None:
        self._layer = layer
        self._level = level

    def level(self) -> int:
        return self._level

    def key(self) -> TransformType:
        return self._key

    @contextlib.contextmanager
    def lower(self) -> Iterator[None]:
        """Run below this layer: it and every layer above it set aside."""
        with lowered(self._level):
            yield

    def get_state(self) -> tuple[Any, ...]:
        return (self._key.name, self._level, *self._state())

    def _state(self) -> tuple[Any, ...]:
        return ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(level={self._level})"


class VmapInterpreter(FuncTorchInterpreter):
    _key = TransformType.Vmap

    def batch_size(self) -> int:
        return self._layer.batch_size

    def randomness(self) -> str:
        return self._layer.randomness

    def _state(self) -> tuple[Any, ...]:
        return (self.randomness(),)


class GradInterpreter(FuncTorchInterpreter):
    _key = TransformType.Grad

    def prev_grad_mode(self) -> bool:
        return self._layer.grad_mode

    def _state(self) -> tuple[Any, ...]:
        return (self.prev_grad_mode(),)


class JvpInterpreter(FuncTorchInterpreter):
    _key = TransformType.Jvp

    def prev_fwd_grad_mode(self) -> bool:
        return True

    def _state(self) -> tuple[Any, ...]:
        return (self.prev_fwd_grad_mode(),)


def _interpreter(layer: VmapLevel | AutogradLayer, level: int) -> FuncTorchInterpreter:
    if isinstance(layer, VmapLevel) or layer.kind == "jacfwd":  # torch's jacfwd is a vmap
        return VmapInterpreter(layer, level)
    if layer.kind == "jvp":
        return JvpInterpreter(layer, level)
    return GradInterpreter(layer, level)


def retrieve_all_functorch_interpreters() -> list[FuncTorchInterpreter]:
    """Every active layer's interpreter, outermost first."""
    return [_interpreter(x, i + 1) for i, x in enumerate(layers())]


def interpreter_at(level: int) -> FuncTorchInterpreter:
    return _interpreter(layers()[level - 1], level)


def retrieve_current_functorch_interpreter() -> FuncTorchInterpreter:
    """The innermost layer's interpreter (AssertionError outside every transform, as
    torch's)."""
    stack = layers()
    if not stack:
        raise AssertionError("interpreter must not be None")
    return _interpreter(stack[-1], len(stack))
