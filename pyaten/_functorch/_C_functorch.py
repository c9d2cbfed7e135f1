"""`torch._C._functorch` at pyaten's paths (`pyaten._C._functorch`): the levels and wrappers
of the transforms, read from the one level stack (Note: one level stack, in levels.py).

A tensor's wrapper is what torch would wrap it in at the innermost level it belongs to: a
BatchedTensor's vmap level, or the autograd layer whose inputs it was computed from
(`levels.grad_level`) or inside which it was made (`levels.made_inside_level`, Note: tensors
made inside a transform, in levels.py). pyaten keeps a batch in dimension 0, so
`maybe_get_bdim` of a BatchedTensor is 0 where torch may report the `in_dims` it was given.
"""

from __future__ import annotations

from typing import Any

import pyaten
from pyaten._functorch.levels import (
    current_level as _depth,
)
from pyaten._functorch.levels import (
    grad_level,
    is_input,
    made_inside_level,
    pyaten_vmap_level,
    torch_level,
)
from pyaten._functorch.pyfunctorch import (
    FuncTorchInterpreter,
    RandomnessType,
    TransformType,
    retrieve_all_functorch_interpreters,
)
from pyaten.func._batched import BatchedTensor, current_levels

__all__ = ["TransformType", "RandomnessType", "current_level", "maybe_current_level",
           "get_dynamic_layer_stack_depth", "get_interpreter_stack", "peek_interpreter_stack",
           "is_batchedtensor", "is_gradtrackingtensor", "is_functorch_wrapped_tensor",
           "maybe_get_level", "maybe_get_bdim", "get_unwrapped", "_unwrap_for_grad",
           "_add_batch_dim", "_remove_batch_dim", "_are_functorch_transforms_active"]


def current_level() -> int:
    """The innermost transform's level (RuntimeError outside every transform)."""
    level = _depth()
    if not level:
        raise RuntimeError("current_level: no functorch transform is active")
    return level


def maybe_current_level() -> int | None:
    return _depth() or None


def get_dynamic_layer_stack_depth() -> int:
    return _depth()


def _are_functorch_transforms_active() -> bool:
    return bool(_depth())


def get_interpreter_stack() -> list[FuncTorchInterpreter] | None:
    return retrieve_all_functorch_interpreters() or None


def peek_interpreter_stack() -> FuncTorchInterpreter | None:
    stack = retrieve_all_functorch_interpreters()
    return stack[-1] if stack else None


def _wrapper(x: Any) -> tuple[str, int] | None:
    """("batched" | "grad", level) of the tensor's outermost wrapper; None for none."""
    if not isinstance(x, pyaten.Tensor):
        raise TypeError(f"expected a Tensor, got {type(x).__name__}")
    live = isinstance(x, BatchedTensor) and any(e.level == x.level for e in current_levels())
    batched = torch_level(x.level) if live else 0
    grad = grad_level(x)
    below = x.__dict__.get("_functorch_below")  # set by get_unwrapped on a grad wrapper
    if below is not None:
        grad = grad_level(x, below)
        batched = batched if batched < below else 0
    elif not is_input(x):
        # made while an inner layer was the innermost: wrapped there, as torch wraps every
        # result (Note: tensors made inside a transform, in levels.py)
        grad = max(grad, made_inside_level(x))
    if not batched and not grad:
        return None
    return ("batched", batched) if batched > grad else ("grad", grad)


def is_batchedtensor(x: pyaten.Tensor) -> bool:
    w = _wrapper(x)
    return w is not None and w[0] == "batched"


def is_gradtrackingtensor(x: pyaten.Tensor) -> bool:
    w = _wrapper(x)
    return w is not None and w[0] == "grad"


def is_functorch_wrapped_tensor(x: pyaten.Tensor) -> bool:
    return _wrapper(x) is not None


def maybe_get_level(x: pyaten.Tensor) -> int:
    w = _wrapper(x)
    return -1 if w is None else w[1]


def maybe_get_bdim(x: pyaten.Tensor) -> int:
    w = _wrapper(x)
    return 0 if w is not None and w[0] == "batched" else -1


def get_unwrapped(x: pyaten.Tensor) -> pyaten.Tensor:
    """What the outermost wrapper holds: a batch (the batch in dimension 0), or, for a grad
    wrapper, the tensor as the levels below see it: a view that keeps the autograd history
    they share, and answers for them only."""
    w = _wrapper(x)
    if w is None:
        raise RuntimeError("No wrappers present!")
    if w[0] == "batched":
        return x.value
    inner = x.view_as(x)
    inner._functorch_below = w[1]
    return inner


def _unwrap_for_grad(x: pyaten.Tensor, level: int) -> pyaten.Tensor:
    """`get_unwrapped(x)` when its outermost wrapper is the grad level `level`, else x."""
    w = _wrapper(x)
    return get_unwrapped(x) if w == ("grad", level) else x


def _add_batch_dim(x: pyaten.Tensor, batch_dim: int, level: int) -> BatchedTensor:
    """`x` as a BatchedTensor of the live vmap at torch's `level`, batched over `batch_dim`."""
    vmap_level = pyaten_vmap_level(level)
    if vmap_level is None:
        raise RuntimeError(f"_add_batch_dim: no vmap is active at level {level}")
    return BatchedTensor(pyaten.movedim(x, batch_dim, 0) if batch_dim else x, vmap_level)


def _remove_batch_dim(x: pyaten.Tensor, level: int, batch_size: int,
                      out_dim: int) -> pyaten.Tensor:
    """The batch of `x` at torch's `level` with the batch in `out_dim` (an unbatched `x`
    expanded to `batch_size`)."""
    vmap_level = pyaten_vmap_level(level)
    if isinstance(x, BatchedTensor) and x.level == vmap_level:
        value = x.value
    else:
        value = x.expand(batch_size, *x.shape)
    return pyaten.movedim(value, 0, out_dim) if out_dim else value

