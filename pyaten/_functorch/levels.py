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
from dataclasses import dataclass

from pyaten.dispatch.tls import ExcludeDispatchKeyGuard
from pyaten.func._batched import VmapLevel, current_levels

__all__ = ["AutogradLayer", "push_autograd_layer", "pop_autograd_layer", "layers",
           "current_level", "torch_level", "next_level", "lowered"]


@dataclass
class AutogradLayer:
    kind: str  # "grad" (grad, vjp, jacrev), "jvp", or "jacfwd" (torch's vmap over jvp)
    vmaps_below: int  # how many vmap levels were on their stack when it was pushed


class _Layers(threading.local):
    def __init__(self) -> None:
        self.autograd: list[AutogradLayer] = []


_LAYERS = _Layers()


def push_autograd_layer(kind: str) -> int:
    """Push a grad/jvp layer; its level (torch's number)."""
    _LAYERS.autograd.append(AutogradLayer(kind, len(current_levels())))
    return current_level()


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
