"""The autograd methods of Tensor: backward, register_hook, retain_grad, ...

They are attached by `attach()` when `pyaten.autograd` is imported, as the generated
operator methods are attached by the native loader: the tensor core knows no graph.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable
from typing import Any

from pyaten.autograd import engine
from pyaten.autograd.graph import RemovableHandle
from pyaten.core.tensor import Tensor

_HOOK_IDS = itertools.count()


def backward(
    self: Tensor,
    gradient: Tensor | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """Accumulate the gradient of this tensor into the `.grad` of the leaves (see docs)."""
    engine.backward(
        self, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs
    )


class _DictHandle:
    """Removes one hook from a dict of hooks keyed by id."""

    __slots__ = ("_hooks", "_key")

    def __init__(self, hooks: dict, key: int) -> None:
        self._hooks = hooks
        self._key = key

    def remove(self) -> None:
        self._hooks.pop(self._key, None)

    def __enter__(self) -> _DictHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def register_hook(self: Tensor, hook: Callable) -> RemovableHandle | _DictHandle:
    """`hook(grad)` runs when this tensor's gradient is computed; it may return a new one."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        return self.grad_fn._add_tensor_pre_hook(self.output_nr, hook)
    if self._hooks is None:
        self._hooks = {}
    key = next(_HOOK_IDS)
    self._hooks[key] = hook
    return _DictHandle(self._hooks, key)


def register_post_accumulate_grad_hook(self: Tensor, hook: Callable) -> _DictHandle:
    """`hook(tensor)` runs after a gradient was accumulated into this leaf's `.grad`."""
    if not self.requires_grad:
        raise RuntimeError(
            "cannot register a hook on a tensor that doesn't require gradient"
        )
    if self.grad_fn is not None:
        raise RuntimeError(
            "post accumulate grad hooks cannot be registered on non-leaf tensors"
        )
    hooks = self.__dict__.setdefault("_post_accumulate_grad_hooks", {})
    key = next(_HOOK_IDS)
    hooks[key] = hook
    return _DictHandle(hooks, key)


def retain_grad(self: Tensor) -> None:
    """Keep this non-leaf's gradient in `.grad` during backward (a no-op on leaves)."""
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.grad_fn is None or self.retains_grad:
        return
    node = self.grad_fn
    if node._retains_grad is None:
        node._retains_grad = {}
    node._retains_grad[self.output_nr] = weakref.ref(self)
    self.retains_grad = True


def attach() -> None:
    for name, fn in (
        ("backward", backward),
        ("register_hook", register_hook),
        ("register_post_accumulate_grad_hook", register_post_accumulate_grad_hook),
        ("retain_grad", retain_grad),
    ):
        setattr(Tensor, name, fn)
