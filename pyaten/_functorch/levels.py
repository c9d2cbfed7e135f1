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

Note: tensors made inside a transform
    torch wraps every tensor an operator makes while an autograd transform (grad, vjp, jvp,
    jacrev, jacfwd's jvp) is the innermost one in a GradTrackingTensor of that level, a
    factory's result included, as it wraps the transform's arguments; a tensor the function
    captured from outside (a closure, a global) stays unwrapped. pyaten records nothing per
    operator call: a tensor's level is found when `pyaten._C._functorch` asks, from each
    live layer's function (`captures`). A tensor that the function of the layer at level L
    reaches (through closures, defaults, the globals its code names, containers and
    objects' attributes) was made before L began, so it belongs to the autograd layer
    outside L; one that no live layer's function reaches was made inside the innermost.
    (A tensor made inside and then stored where the function reaches it, an outer list,
    counts as made before.) A transform's own inputs keep the level `mark_input` gave them.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyaten
from pyaten.autograd.grad_mode import GRAD
from pyaten.dispatch.tls import ExcludeDispatchKeyGuard
from pyaten.func._batched import VmapLevel, current_levels

__all__ = ["AutogradLayer", "push_autograd_layer", "pop_autograd_layer", "mark_input",
           "layers", "current_level", "torch_level", "pyaten_vmap_level", "next_level",
           "lowered", "grad_level", "is_input", "made_inside_level"]


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
    # the layer's function (Note: tensors made inside a transform)
    captures: Any = None


class _Layers(threading.local):
    def __init__(self) -> None:
        self.autograd: list[AutogradLayer] = []


_LAYERS = _Layers()


def push_autograd_layer(kind: str, batch_size: int = 0, randomness: str = "error",
                        captures: Any = None) -> int:
    """Push a grad/jvp layer; its level (torch's number)."""
    _LAYERS.autograd.append(AutogradLayer(kind, len(current_levels()), GRAD.enabled,
                                          batch_size, randomness, captures=captures))
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


def is_input(t: Any) -> bool:
    """Whether `t` is the input of a live autograd layer, as `mark_input` marked it."""
    autograd = _LAYERS.autograd
    if not autograd:
        return False
    level = t.__dict__.get("_func_level")
    if level is not None:
        stack = layers()
        return 1 <= level <= len(stack) and isinstance(stack[level - 1], AutogradLayer)
    node = t.grad_fn
    return node is not None and any(id(node) in layer.roots for layer in autograd)


def made_inside_level(t: Any) -> int:
    """The level of the live autograd layer `t` was made inside: the innermost one whose
    function does not reach it (0: made outside them all). Note: tensors made inside a
    transform."""
    made = 0
    for i, layer in enumerate(layers()):
        if not isinstance(layer, AutogradLayer):
            continue
        if _reaches(layer.captures, t):
            return made
        made = i + 1
    return made


_SKIPPED = (types.ModuleType, type, str, bytes, int, float, complex, bool, type(None),
            types.BuiltinFunctionType)
_BUDGET = 20000  # objects one search visits at most (a captured tensor is rarely deep)


def _reaches(root: Any, target: Any) -> bool:
    """Whether `target` is reachable from `root`: through functions' closures, defaults,
    the globals their code names, methods' objects, partials, containers and attributes."""
    todo = [root]
    seen: set[int] = set()
    while todo and len(seen) < _BUDGET:
        x = todo.pop()
        if x is target:
            return True
        if id(x) in seen or isinstance(x, _SKIPPED) or isinstance(x, pyaten.Tensor):
            continue
        seen.add(id(x))
        if isinstance(x, (list, tuple, set, frozenset)):
            todo.extend(x)
        elif isinstance(x, dict):
            todo.extend(x.values())
        elif isinstance(x, types.FunctionType):
            todo.extend(c.cell_contents for c in x.__closure__ or () if _filled(c))
            todo.extend(x.__defaults__ or ())
            todo.extend((x.__kwdefaults__ or {}).values())
            names = _names(x.__code__)
            todo.extend(v for k, v in x.__globals__.items() if k in names)
        elif isinstance(x, types.MethodType):
            todo.extend((x.__func__, x.__self__))
        elif isinstance(x, functools.partial):
            todo.extend((x.func, x.args, x.keywords))
        else:
            attributes = getattr(x, "__dict__", None)
            if isinstance(attributes, dict):
                todo.extend(attributes.values())
    return False


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _names(code: types.CodeType) -> set[str]:
    """The global names `code` and the functions defined in it use."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names
