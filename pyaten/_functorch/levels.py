"""The one level stack of the function transforms, numbered as torch numbers its
DynamicLayer stack.

Note: one level stack
    torch numbers every transform on one stack: the level of a transform is the stack's depth
    once it is pushed, so `vmap(grad(f))` runs f at level 2 under a grad layer whose vmap is
    level 1, and two transforms one after the other both get level 1. pyaten keeps two
    stacks: vmap's levels (pyaten/func/_batched.py, a BatchedTensor's `level` counts vmaps
    only) and the autograd transforms' layers here. Each autograd layer records how many vmap
    levels were below it when it was pushed, which fixes its place among them (both stacks
    are last in, first out), so the merged order, and torch's number of every layer, follows
    from the two. `torch_level(vmap_level)` converts a BatchedTensor's level; if vmap's push
    ever numbers its levels from this stack (`next_level()`), the conversion becomes the
    identity.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyaten.autograd.grad_mode import GRAD
from pyaten.dispatch.tls import ExcludeDispatchKeyGuard
from pyaten.func._batched import VmapLevel, current_levels

__all__ = ["AutogradLayer", "push_autograd_layer", "pop_autograd_layer", "mark_input",
           "layers", "current_level", "torch_level", "pyaten_vmap_level", "next_level",
           "lowered", "grad_level"]


@dataclass
class AutogradLayer:
    kind: str  # "grad" (grad, vjp, jacrev), "jvp", or "jacfwd" (torch's vmap over jvp)
    vmaps_below: int  # how many vmap levels were on their stack when it was pushed
    grad_mode: bool  # grad mode outside it (torch's GradInterpreter.prev_grad_mode)
    batch_size: int = 0  # jacfwd: the basis it maps over
    randomness: str = "error"
    # ids of the autograd nodes of its inputs that are views (a leaf input carries
    # `_func_level` itself): how `wrapper_level` finds the layer a result belongs to
    roots: set = field(default_factory=set)


class _Layers(threading.local):
    def __init__(self) -> None:
        self.autograd: list[AutogradLayer] = []


_LAYERS = _Layers()


def push_autograd_layer(kind: str, batch_size: int = 0, randomness: str = "error") -> int:
    """Push a grad/jvp layer; its level (torch's number)."""
    _LAYERS.autograd.append(AutogradLayer(kind, len(current_levels()), GRAD.enabled,
                                          batch_size, randomness))
    return current_level()


def mark_input(t: Any, level: int) -> None:
    """Note that `t`, an input of the autograd layer at `level`, is wrapped at that level."""
    if t.grad_fn is None:
        t._func_level = level
        return
    layer = layers()[level - 1]
    if isinstance(layer, AutogradLayer):
        layer.roots.add(id(t.grad_fn))


def pop_autograd_layer() -> None:
    _LAYERS.autograd.pop()


def autograd_depth() -> int:
    return len(_LAYERS.autograd)


def layers() -> list[VmapLevel | AutogradLayer]:
    """Every active layer, outermost first: index + 1 is its level."""
    vmaps = current_levels()
    out: list[VmapLevel | AutogradLayer] = []
    done = 0
    for layer in _LAYERS.autograd:
        while done < min(layer.vmaps_below, len(vmaps)):
            out.append(vmaps[done])
            done += 1
        out.append(layer)
    out.extend(vmaps[done:])
    return out


def current_level() -> int:
    """The innermost layer's level; 0 outside every transform."""
    return len(current_levels()) + len(_LAYERS.autograd)


def next_level() -> int:
    """The level the next transform pushed will have (what vmap's push may number from)."""
    return current_level() + 1


def torch_level(vmap_level: int) -> int:
    """The level torch gives the vmap whose pyaten level (its count of vmaps) is given."""
    for i, layer in enumerate(layers()):
        if isinstance(layer, VmapLevel) and layer.level == vmap_level:
            return i + 1
    return vmap_level  # a dead level: nothing to place it among


def pyaten_vmap_level(level: int) -> int | None:
    """The BatchedTensor level of the vmap at torch's `level`; None when that is no vmap."""
    stack = layers()
    if 1 <= level <= len(stack) and isinstance(stack[level - 1], VmapLevel):
        return stack[level - 1].level
    return None


def grad_level(t: Any, below: int | None = None) -> int:
    """The innermost live autograd layer (under level `below` when given) whose inputs `t`
    was computed from (torch's level of its GradTrackingTensor wrapper); 0 for none. A
    tensor made inside a transform from no input (a factory's result) is found in none,
    where torch wraps it."""
    stack = layers() if below is None else layers()[:below - 1]
    live = {i + 1: x for i, x in enumerate(stack) if isinstance(x, AutogradLayer)}
    if not live:
        return 0
    best = 0
    own = t.__dict__.get("_func_level") if hasattr(t, "__dict__") else None
    if own in live:
        best = own
    roots = {r: level for level, x in live.items() for r in x.roots}
    todo = [t.grad_fn] if t.grad_fn is not None else []
    seen: set[int] = set()
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        best = max(best, roots.get(id(node), 0))
        variable = getattr(node, "variable", None)
        if variable is not None:
            level = variable.__dict__.get("_func_level")
            if level in live:
                best = max(best, level)
            continue
        todo.extend(n for n, _ in node.next_functions if n is not None)
    return best


@contextlib.contextmanager
def lowered(level: int) -> Iterator[None]:
    """The layers from `level` up set aside while a rule runs below them (torch's
    `interpreter.lower()`): later pushes inside are numbered from `level`."""
    stack = layers()[:level - 1]
    vmaps = current_levels()
    grads = _LAYERS.autograd
    kept_vmaps = vmaps[sum(isinstance(x, VmapLevel) for x in stack):]
    kept_grads = grads[sum(isinstance(x, AutogradLayer) for x in stack):]
    del vmaps[len(vmaps) - len(kept_vmaps):]
    del grads[len(grads) - len(kept_grads):]
    try:
        if vmaps:
            yield
        else:  # no vmap left: random factories run as outside vmap
            with ExcludeDispatchKeyGuard("FuncTorchVmapMode"):
                yield
    finally:
        vmaps.extend(kept_vmaps)
        grads.extend(kept_grads)
