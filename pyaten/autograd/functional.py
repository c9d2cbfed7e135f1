"""pyaten.autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp of Python functions.

Each is built on `autograd.grad`, as PyTorch's are: `jvp` uses the double-backward trick
(the vjp is linear in its cotangent, so differentiating it again gives the jvp), `jacobian`
takes one vjp per output element, `hessian` is the jacobian of the gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyaten.autograd import engine
from pyaten.autograd.grad_mode import enable_grad
from pyaten.core.tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _tuple(x: Any) -> tuple[tuple, bool]:
    if isinstance(x, tuple):
        return x, True
    if isinstance(x, list):
        return tuple(x), True
    return (x,), False


def _check_tensors(values: tuple, arg: str, fn: str) -> None:
    for i, v in enumerate(values):
        if not isinstance(v, Tensor):
            raise TypeError(
                f"The {arg} given to {fn} must be either a Tensor or a tuple of Tensors but the "
                f"value at index {i} has type {type(v)}."
            )


def _grad_leaves(inputs: tuple, create_graph: bool) -> tuple:
    # Fresh leaves that require grad (inputs are never modified).
    out = []
    for t in inputs:
        if create_graph and t.requires_grad:
            out.append(t.view_as(t))
        else:
            out.append(t.detach().requires_grad_(True))
    return tuple(out)


def _zeros_for_none(grads: tuple, like: tuple) -> tuple:
    return tuple(
        g if g is not None else t.detach().new_zeros(t.shape) for g, t in zip(grads, like)
    )


def _grad(outputs: tuple, inputs: tuple, cotangents: tuple, create_graph: bool) -> tuple:
    live = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if not live:
        return (None,) * len(inputs)
    return engine.grad(
        [o for o, _ in live], inputs, [c for _, c in live],
        create_graph=create_graph, retain_graph=True, allow_unused=True,
    )


def _detach(values: tuple, create_graph: bool) -> tuple:
    return tuple(v if create_graph else v.detach() for v in values)


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), v^T J): the vector-Jacobian product at `inputs`."""
    ins, ins_tuple = _tuple(inputs)
    _check_tensors(ins, "inputs", "vjp")
    with enable_grad():
        leaves = _grad_leaves(ins, create_graph)
        outs, outs_tuple = _tuple(func(*leaves))
        _check_tensors(outs, "outputs of the user-provided function", "vjp")
        if v is None:
            if len(outs) != 1 or outs[0].numel() != 1:
                raise RuntimeError(
                    "The vector v can only be None if the user-provided function returns a "
                    "single Tensor with a single element."
                )
            vs = (outs[0].detach().new_ones(outs[0].shape),)
        else:
            vs, _ = _tuple(v)
        grads = _zeros_for_none(_grad(outs, leaves, vs, create_graph), leaves)
    outs = _detach(outs, create_graph)
    grads = _detach(grads, create_graph)
    return (outs if outs_tuple else outs[0]), (grads if ins_tuple else grads[0])


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), J v): the Jacobian-vector product at `inputs`."""
    ins, ins_tuple = _tuple(inputs)
    _check_tensors(ins, "inputs", "jvp")
    if v is None:
        if len(ins) != 1 or ins[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is "
                "a single Tensor with a single element."
            )
        vs = (ins[0].detach().new_ones(ins[0].shape),)
    else:
        vs, _ = _tuple(v)
    with enable_grad():
        leaves = _grad_leaves(ins, create_graph)
        outs, outs_tuple = _tuple(func(*leaves))
        _check_tensors(outs, "outputs of the user-provided function", "jvp")
        dummies = tuple(o.detach().new_zeros(o.shape).requires_grad_(True) for o in outs)
        first = _zeros_for_none(_grad(outs, leaves, dummies, True), leaves)
        live = [(g, u) for g, u in zip(first, vs) if g.requires_grad]
        if live:
            second = engine.grad([g for g, _ in live], dummies, [u for _, u in live],
                                 create_graph=create_graph, allow_unused=True)
        else:
            second = (None,) * len(dummies)
        result = _zeros_for_none(second, outs)
    outs = _detach(outs, create_graph)
    result = _detach(result, create_graph)
    return (outs if outs_tuple else outs[0]), (result if outs_tuple else result[0])


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of `func` at `inputs` (nested tuples for several inputs/outputs)."""
    from pyaten.native.ops_handles import aten

    ins, ins_tuple = _tuple(inputs)
    _check_tensors(ins, "inputs", "jacobian")
    with enable_grad():
        leaves = _grad_leaves(ins, create_graph)
        outs, outs_tuple = _tuple(func(*leaves))
        _check_tensors(outs, "outputs of the user-provided function", "jacobian")
        blocks = []
        for out in outs:
            rows: list[list] = [[] for _ in leaves]
            flat = out.reshape(-1)
            for k in range(flat.numel()):
                unit = flat.detach().new_zeros(flat.shape)
                unit[k] = 1
                got = _grad((out,), leaves, (unit.reshape(out.shape),), create_graph)
                for j, (g, t) in enumerate(zip(got, leaves)):
                    rows[j].append(g if g is not None else t.detach().new_zeros(t.shape))
            per_input = []
            for j, t in enumerate(leaves):
                if rows[j]:
                    stacked = aten.cat.default([r.reshape(1, -1) for r in rows[j]])
                    block = stacked.reshape(tuple(out.shape) + tuple(t.shape))
                else:
                    block = t.detach().new_zeros(tuple(out.shape) + tuple(t.shape))
                per_input.append(block if create_graph else block.detach())
            blocks.append(tuple(per_input))
    if not outs_tuple and not ins_tuple:
        return blocks[0][0]
    if not outs_tuple:
        return blocks[0]
    if not ins_tuple:
        return tuple(b[0] for b in blocks)
    return tuple(blocks)


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of scalar `func` at `inputs`."""
    ins, ins_tuple = _tuple(inputs)

    def gradient(*xs: Tensor) -> Any:
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError(
                "The function given to hessian should return a single Tensor with a single "
                "element."
            )
        grads = engine.grad(out, xs, create_graph=True, allow_unused=True)
        grads = _zeros_for_none(grads, xs)
        return grads if ins_tuple else grads[0]

    return jacobian(gradient, ins if ins_tuple else ins[0], create_graph=create_graph)


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), v^T H)."""
    ins, ins_tuple = _tuple(inputs)
    vs, _ = _tuple(v) if v is not None else ((None,), False)
    with enable_grad():
        leaves = _grad_leaves(ins, True)
        out = func(*leaves)
        grads = _zeros_for_none(engine.grad(out, leaves, create_graph=True, allow_unused=True),
                                leaves)
        result = _zeros_for_none(_grad(grads, leaves, vs, create_graph), leaves)
    result = _detach(result, create_graph)
    return (out if create_graph else out.detach()), (result if ins_tuple else result[0])


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), H v) (equal to vhp for the symmetric Hessians of smooth functions)."""
    return vhp(func, inputs, v, create_graph, strict)
