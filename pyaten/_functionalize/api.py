"""`functionalize(fn)`: the same function, run without mutation (PyTorch's
torch.func.functionalize), on the Functionalize key; `dispatch_functionalize(fn)`, the same on
the FunctionalTensorMode (what torch.compile's capture uses)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.utils import _pytree

from . import key
from .mode import FunctionalTensorMode
from .tensor_wrapper import FunctionalTensorWrapper
from .wrapper import FunctionalTensor
from .wrapper import _from_functional_tensor as _from_mode_tensor
from .wrapper import _to_functional_tensor as _to_mode_tensor

__all__ = ["functionalize", "dispatch_functionalize"]

_REMOVE = ("mutations", "mutations_and_views")


def _check_remove(remove: str) -> bool:
    """`remove` checked as torch checks it; True when views are kept (reapplied)."""
    if remove not in _REMOVE:
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}."
            " Valid options are:\n     remove='mutations': all inplace and out= operators will be"
            " removed from the program, and replaced with their out-of-place equivalents.\n"
            "     remove='mutations_and_views': In addition to the above, all aliasing operators"
            " {view} will be replaced with their non-aliasing counterparts, {view}_copy.\n"
        )
    return remove == "mutations"


def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable[..., Any]:
    """Return a function that computes what `func` computes, but whose operators mutate
    nothing: in-place and out= operators run as their functional variants, writes through
    views become `*_scatter` calls on the base, and the only write left is a final `copy_`
    of its new value into each input `func` mutated. With `remove="mutations_and_views"`
    views run as their `*_copy` operators too. The inputs are FunctionalTensorWrappers on
    the Functionalize key (Note: the Functionalize key, in key.py)."""
    reapply_views = _check_remove(remove)

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        flat, spec = _pytree.tree_flatten((args, kwargs))
        with key._Functionalization(reapply_views):
            wrapped_flat = [
                key._to_functional_tensor(x)
                if isinstance(x, Tensor) and not isinstance(x, FunctionalTensorWrapper) else x
                for x in flat
            ]
            fargs, fkwargs = _pytree.tree_unflatten(wrapped_flat, spec)
            result = func(*fargs, **fkwargs)
            outputs = _pytree.tree_map(_unwrap_output, result)
            values = [_unwrap_output(f) if f is not x else None
                      for x, f in zip(flat, wrapped_flat)]
        for original, value in zip(flat, values):
            if value is not None:
                _propagate_input_mutation(original, value)
        return outputs

    return wrapped


def _unwrap_output(t: Any) -> Any:
    if isinstance(t, FunctionalTensorWrapper):
        key._functionalize_sync(t)
        return t.elem
    return t


def dispatch_functionalize(func: Callable[..., Any], *,
                           remove: str = "mutations") -> Callable[..., Any]:
    """`functionalize` run by a FunctionalTensorMode on FunctionalTensors (Python key
    subclasses), as torch.compile's capture functionalizes (mode.py); same results."""
    reapply_views = _check_remove(remove)

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        flat, spec = _pytree.tree_flatten((args, kwargs))
        wrapped_flat = [
            _to_mode_tensor(x, reapply_views)
            if isinstance(x, Tensor) and not isinstance(x, FunctionalTensor) else x
            for x in flat
        ]
        fargs, fkwargs = _pytree.tree_unflatten(wrapped_flat, spec)
        with FunctionalTensorMode(reapply_views):
            result = func(*fargs, **fkwargs)
        outputs = _pytree.tree_map(_from_mode_tensor, result)
        for original, functional in zip(flat, wrapped_flat):
            if functional is not original:
                _propagate_input_mutation(original, _from_mode_tensor(functional))
        return outputs

    return wrapped


def _propagate_input_mutation(original: Tensor, value: Tensor) -> None:
    """Write an input's final value back into it, if `func` changed it: resized first if
    its size changed, given the value's geometry if its shape changed (same-shape strides
    stay), as PyTorch's."""
    if value is original:
        return
    if value.numel() != original.numel():
        original.resize_(value.shape)
    if tuple(value.shape) != tuple(original.shape):
        original.as_strided_(value.shape, value.stride())
    original.copy_(value)
