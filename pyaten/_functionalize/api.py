"""`functionalize(fn)`: the same function, run without mutation (PyTorch's
torch.func.functionalize)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.utils import _pytree

from .mode import FunctionalTensorMode
from .wrapper import FunctionalTensor, _from_functional_tensor, _to_functional_tensor

__all__ = ["functionalize"]

_REMOVE = ("mutations", "mutations_and_views")


def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable[..., Any]:
    """Return a function that computes what `func` computes, but whose operators mutate
    nothing: in-place and out= operators run as their functional variants, writes through
    views become `*_scatter` calls on the base, and the only write left is a final `copy_`
    of its new value into each input `func` mutated. With `remove="mutations_and_views"`
    views run as their `*_copy` operators too."""
    if remove not in _REMOVE:
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}."
            " Valid options are:\n     remove='mutations': all inplace and out= operators will be"
            " removed from the program, and replaced with their out-of-place equivalents.\n"
            "     remove='mutations_and_views': In addition to the above, all aliasing operators"
            " {view} will be replaced with their non-aliasing counterparts, {view}_copy.\n"
        )
    reapply_views = remove == "mutations"

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        flat, spec = _pytree.tree_flatten((args, kwargs))
        wrapped_flat = [
            _to_functional_tensor(x, reapply_views)
            if isinstance(x, Tensor) and not isinstance(x, FunctionalTensor) else x
            for x in flat
        ]
        fargs, fkwargs = _pytree.tree_unflatten(wrapped_flat, spec)
        with FunctionalTensorMode(reapply_views):
            result = func(*fargs, **fkwargs)
        outputs = _pytree.tree_map(_from_functional_tensor, result)
        for original, functional in zip(flat, wrapped_flat):
            if functional is not original:
                _propagate_input_mutation(original, functional)
        return outputs

    return wrapped


def _propagate_input_mutation(original: Tensor, functional: FunctionalTensor) -> None:
    """Write an input's final value back into it, if `func` changed it: resized first if
    its size changed, given the value's geometry if its shape changed (same-shape strides
    stay), as PyTorch's."""
    value = _from_functional_tensor(functional)
    if value is original:
        return
    if value.numel() != original.numel():
        original.resize_(value.shape)
    if tuple(value.shape) != tuple(original.shape):
        original.as_strided_(value.shape, value.stride())
    original.copy_(value)
