"""`vmap`: map a function over a dimension of its inputs (torch.func.vmap).

The inputs' mapped dimensions are moved to the front and wrapped as BatchedTensors of a new
level (Note: batched tensors and levels, in pyaten/func/_batched.py); the function runs
once on the wrappers; the outputs are unwrapped, their batch moved to `out_dims`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pyaten
from pyaten.core.accel import ACCEL
from pyaten.dispatch import tls
from pyaten.func._batched import (
    _STACK,
    VMAP_MODE_BIT,
    BatchedTensor,
    VmapLevel,
    _make_batched,
    pop_level,
    push_level,
)
from pyaten.utils._pytree import tree_flatten, tree_unflatten

__all__ = ["vmap"]

_RANDOMNESS = ("error", "different", "same")
_DEFAULT_INCLUDED, _DEFAULT_EXCLUDED = tls.DEFAULT_INCLUDED, tls.DEFAULT_EXCLUDED
_NONDEFAULT = tls.NONDEFAULT


def _func_name(func: Callable) -> str:
    return getattr(func, "__name__", repr(func))


def _broadcast_prefix(dims: Any, tree: Any, what: str, where: str) -> list[Any] | None:
    """`dims` (an int/None, or a tuple prefix of `tree`) spread over `tree`'s leaves."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(tree_flatten(tree)[0])
    if isinstance(dims, tuple) and isinstance(tree, tuple):
        if len(dims) != len(tree):
            return None
        out: list[Any] = []
        for d, t in zip(dims, tree, strict=True):
            part = _broadcast_prefix(d, t, what, where)
            if part is None:
                return None
            out += part
        return out
    if isinstance(dims, list) and isinstance(tree, list) and len(dims) == len(tree):
        out = []
        for d, t in zip(dims, tree, strict=True):
            part = _broadcast_prefix(d, t, what, where)
            if part is None:
                return None
            out += part
        return out
    if isinstance(dims, dict) and isinstance(tree, dict) and dims.keys() == tree.keys():
        out = []
        for key in tree:
            part = _broadcast_prefix(dims[key], tree[key], what, where)
            if part is None:
                return None
            out += part
        return out
    return None


def _spec_repr(spec: Any, indent: int = 0) -> str:
    """A pytree structure written as torch's TreeSpec prints itself (its error messages
    quote it)."""
    if spec.is_leaf():
        return "*"
    children = spec.children_specs
    inner = ""
    if children:
        indent += 2
        inner = _spec_repr(children[0], indent) + ("," if len(children) > 1 else "")
        inner += ",".join("\n" + " " * indent + _spec_repr(c, indent) for c in children[1:])
    return f"TreeSpec({spec.type.__name__}, {spec.context}, [{inner}])"


def _check_in_dims(in_dims: Any, where: str) -> None:
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(
            f"{where}: expected `in_dims` to be int or a (potentially nested) tuple matching "
            f"the structure of inputs, got: {type(in_dims)}."
        )


def _batch_inputs(func: Callable, in_dims: Any, args: tuple) -> tuple[list, Any, list, int]:
    where = f"vmap({_func_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    _check_in_dims(in_dims, where)
    if not args:
        raise ValueError(
            f"vmap({_func_name(func)})(<inputs>): got no inputs. Maybe you forgot to add "
            "inputs, or you are trying to vmap over a function with no inputs. The latter "
            "is unsupported."
        )
    flat, spec = tree_flatten(args)
    dims = in_dims if isinstance(in_dims, int) else None
    flat_dims = _broadcast_prefix(in_dims, args, "in_dims", where)
    if flat_dims is None:
        dims_spec = tree_flatten(in_dims)[1]
        raise ValueError(
            f"{where}: in_dims is not compatible with the structure of `inputs`. in_dims has "
            f"structure {_spec_repr(dims_spec)} but inputs has structure {_spec_repr(spec)}."
        )
    del dims
    sizes: list[int] = []
    for x, d in zip(flat, flat_dims, strict=True):
        if d is None:
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(
                f"{where}: in_dims must be a flat or nested tuple of ints or None, got {d!r}."
            )
        if not isinstance(x, pyaten.Tensor):
            raise ValueError(
                f"{where}: Got in_dim={d} for an input but the input is of type {type(x)}. "
                "We cannot vmap over non-Tensor arguments, please use None as the respective "
                "in_dim"
            )
        rank = x.dim()
        if not -rank <= d < rank:
            raise ValueError(
                f"{where}: Got in_dim={d} for some input, but that input is a Tensor of "
                f"dimensionality {rank} so expected in_dim to satisfy -{rank} <= in_dim < "
                f"{rank}."
            )
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError(
            f"vmap({_func_name(func)}, in_dims={in_dims}, ...)(<inputs>): at least one input "
            "must be a Tensor to be vmapped over (all in_dims were None)."
        )
    if len(set(sizes)) > 1:
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    return flat, spec, flat_dims, sizes[0]


def _unbatch(func: Callable, out: Any, out_dims: Any, level: int, batch_size: int) -> Any:
    flat, spec = tree_flatten(out)
    flat_dims = _broadcast_prefix(out_dims, out, "out_dims", "")
    if flat_dims is None:
        raise ValueError(
            f"vmap({_func_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
            f"compatible with the structure of `outputs`. out_dims has structure "
            f"{_spec_repr(tree_flatten(out_dims)[1])} but outputs has structure "
            f"{_spec_repr(spec)}."
        )
    results = []
    for x, d in zip(flat, flat_dims, strict=True):
        if d is None:
            if isinstance(x, BatchedTensor) and x.level == level:
                raise ValueError(
                    f"vmap({_func_name(func)}, ..., out_dims={out_dims})(<inputs>): can not "
                    "return a BatchedTensor when out_dim is None"
                )
            results.append(x)
            continue
        if not isinstance(x, pyaten.Tensor):
            raise ValueError(
                f"vmap({_func_name(func)}, ...): `{_func_name(func)}` must only return "
                f"Tensors, got type {type(x)}. Did you mean to set out_dims= to None for "
                "output?"
            )
        if isinstance(x, BatchedTensor) and x.level == level:
            value = x.value
        else:  # an output that does not depend on the batch: every sample the same
            value = x.expand(batch_size, *x.shape)
        rank = value.dim()
        if not -rank <= d < rank:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], "
                f"but got {d})"
            )
        results.append(pyaten.movedim(value, 0, d) if d != 0 else value)
    return tree_unflatten(results, spec)


def _flat_inputs(in_dims: Any, args: tuple) -> tuple[tuple, int] | None:
    """The common case without a pytree walk: `in_dims` an int or one int/None per argument,
    each mapped argument a tensor whose dimension is in range, the sizes equal. None sends
    the call the general way (which raises the errors)."""
    if type(in_dims) is int:
        dims: tuple = (in_dims,) * len(args)
    elif type(in_dims) is tuple and len(in_dims) == len(args):
        dims = in_dims
    else:
        return None
    size = None
    for x, d in zip(args, dims):
        if d is None:
            continue
        if type(d) is not int or not isinstance(x, pyaten.Tensor):
            return None
        sizes = x._sizes
        if not -len(sizes) <= d < len(sizes):
            return None
        if size is None:
            size = sizes[d]
        elif sizes[d] != size:
            return None
    return None if size is None else (dims, size)


def vmap_once_reference(
    func: Callable, in_dims: Any, out_dims: Any, randomness: str, args: tuple, kwargs: dict
) -> Any:
    """One vmapped call of `func` (no chunks). With the accelerator loaded `_vmap_once` is
    its C version (`_accel.vmap_call`), which takes the common case (ints or None for
    `in_dims`, every mapped dimension 0) itself and hands every other to this reference."""
    flat_case = _flat_inputs(in_dims, args)
    if flat_case is None:
        flat, spec, flat_dims, batch_size = _batch_inputs(func, in_dims, args)
    else:
        (flat, spec), (flat_dims, batch_size) = (args, None), flat_case
    level = push_level(batch_size, randomness).level
    # FuncTorchVmapMode on, for the random factories (_random.py); `tls._set` inlined, as
    # only `included` changes and the bit is never among the defaults
    state = tls.STATE
    included, excluded = state.included, state.excluded
    was_default = included == _DEFAULT_INCLUDED and excluded == _DEFAULT_EXCLUDED
    state.included = on = included | VMAP_MODE_BIT
    if was_default:
        _NONDEFAULT.append(None)
    try:
        wrapped = [x if d is None else _make_batched(pyaten.movedim(x, d, 0) if d else x, level)
                   for x, d in zip(flat, flat_dims, strict=True)]
        out = func(*(wrapped if spec is None else tree_unflatten(wrapped, spec)), **kwargs)
        if type(out_dims) is int and out.__class__ is BatchedTensor and out.level == level:
            value = out.value  # one batched tensor out: no pytree walk either
            rank = len(value._sizes)
            if out_dims == 0 or (-rank <= out_dims < rank):
                return value if out_dims == 0 else pyaten.movedim(value, 0, out_dims)
        return _unbatch(func, out, out_dims, level, batch_size)
    finally:
        if was_default and state.included == on and state.excluded == excluded:
            state.included = included
            _NONDEFAULT.pop()
        else:
            tls._set(included, excluded)
        pop_level()


_vmap_once = vmap_once_reference
if ACCEL is not None:
    ACCEL.setup_vmap_call(vmap_once_reference, _unbatch, VmapLevel, VMAP_MODE_BIT, _STACK,
                          tls._set)
    _vmap_once = ACCEL.vmap_call


def _chunks(flat: list, flat_dims: list, batch_size: int, chunk_size: int) -> list[list]:
    pieces = []
    for start in range(0, batch_size, chunk_size):
        stop = min(start + chunk_size, batch_size)
        pieces.append(
            [x if d is None else x.narrow(d, start, stop - start) for x, d in
             zip(flat, flat_dims, strict=True)]
        )
    return pieces


def vmap(
    func: Callable,
    in_dims: Any = 0,
    out_dims: Any = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable:
    """Vectorize `func` over dimension `in_dims` of its inputs (torch.func.vmap)."""
    if randomness not in _RANDOMNESS:
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if chunk_size is None:
            return _vmap_once(func, in_dims, out_dims, randomness, args, kwargs)
        flat, spec, flat_dims, batch_size = _batch_inputs(func, in_dims, args)
        outs = [
            _vmap_once(func, in_dims, out_dims, randomness, tree_unflatten(piece, spec), kwargs)
            for piece in _chunks(flat, flat_dims, batch_size, chunk_size)
        ]
        if len(outs) == 1:
            return outs[0]
        out_flat = [tree_flatten(o)[0] for o in outs]
        out_spec = tree_flatten(outs[0])[1]
        flat_out_dims = _broadcast_prefix(out_dims, outs[0], "out_dims", "")
        joined = []
        for j, d in enumerate(flat_out_dims or []):
            column = [o[j] for o in out_flat]
            joined.append(column[0] if d is None else pyaten.cat(column, d))
        return tree_unflatten(joined, out_spec)

    return wrapped
