"""`pyaten.autograd.Function` under pyaten.func's transforms (torch 2.13's rules).

Note: autograd.Function under the transforms
    `Function.apply` asks `functorch_apply` first (installed by `set_functorch_hook`). Outside
    every transform it steps aside. Inside one:
    - a Function whose `forward` takes `ctx` raises torch's setup_context error;
    - under any vmap (jacfwd's included) a Function with neither a `vmap` staticmethod nor
      `generate_vmap_rule` raises torch's error, batched inputs or not;
    - under a forward-mode transform (jvp, jacfwd, hessian) a Function without a `jvp`
      staticmethod raises torch's NotImplementedError;
    - the grad transforms share autograd's graph (Note: transforms over the autograd graph, in
      _transforms.py), so a call on plain tensors records its node as outside them;
    - a call with BatchedTensors is handled for their highest vmap level L, as torch's
      innermost interpreter handles it. When an input requires grad above the batch
      (`vmap(grad(F))`), the node is recorded on the wrappers, its forward being L's rule
      run with grad mode on for the batches, so that what the node saves keeps the history
      of the levels below (a saved output is kept itself, not as an alias without history).
      Otherwise L's rule runs at once: the `vmap(info, in_dims, *args)` staticmethod on the
      unwrapped values with the layers from L up set aside (torch's `interpreter.lower()`,
      Note: one level stack, in pyaten/_functorch/levels.py),
      its `(outputs, out_dims)` wrapped again at L; or, with `generate_vmap_rule = True`,
      `forward` on the BatchedTensors themselves, unless a value below requires grad
      (`grad(vmap(F))`): then a generated Function records one node at the level below, its
      forward, setup_context and backward each run under a vmap of L's size (torch's
      `vmapify_autograd_function`), the saved tensors kept unwrapped with their batch dims.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import pyaten
from pyaten._functorch.levels import (
    AutogradLayer,
    autograd_depth,
    current_level,
    layers,
    lowered,
)
from pyaten.autograd.function import (
    NOT_HANDLED,
    Function,
    record_apply,
    run_jvp,
    set_functorch_hook,
)
from pyaten.autograd.grad_mode import GRAD, enable_grad, no_grad
from pyaten.dispatch.tls import IncludeDispatchKeyGuard
from pyaten.func._batched import BatchedTensor, VmapLevel, current_levels, pop_level, push_level
from pyaten.utils._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["VmapInfo", "functorch_apply"]

_DOCS = "For more details, please see https://pytorch.org/docs/main/notes/extending.func.html"


class VmapInfo(NamedTuple):
    """The first argument of a `vmap` staticmethod."""

    batch_size: int
    randomness: str


def functorch_apply(cls: type[Function], args: tuple, kwargs: dict) -> Any:
    """`cls.apply(*args, **kwargs)` under the transforms (Note: autograd.Function under the
    transforms); NOT_HANDLED outside them or when autograd's ordinary path serves."""
    if not (autograd_depth() or current_levels()):
        return NOT_HANDLED
    stack = layers()
    if cls.setup_context is Function.setup_context:
        raise RuntimeError(
            "In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, "
            f"jacrev, ...), it must override the setup_context staticmethod. {_DOCS}"
        )
    if cls.vmap is Function.vmap and not cls.generate_vmap_rule and any(
            isinstance(x, VmapLevel) or x.kind == "jacfwd" for x in stack):
        # torch runs the call through every layer: any vmap on the stack (jacfwd's too)
        # needs a rule, whether or not this call's inputs are batched
        raise RuntimeError(_no_vmap_support(cls))
    flat = tree_flatten(args)[0]
    needs_grad = GRAD.enabled and any(
        isinstance(x, pyaten.Tensor) and x.requires_grad for x in flat
    )
    forward_mode = needs_grad and any(
        isinstance(x, AutogradLayer) and x.kind == "jvp" for x in stack)
    if forward_mode and cls.jvp is Function.jvp:
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD."
        )
    if needs_grad and isinstance(stack[-1], AutogradLayer):
        # the innermost transform differentiates: one node (the grad layers share autograd's
        # graph), its forward the rule of the vmap below, if any; under a jvp layer it keeps
        # its inputs' shapes for `functorch_backward`
        return record_apply(cls, args, kwargs, lambda: _forward_below(cls, stack, args, kwargs),
                            keep_input_meta=forward_mode)
    return _below(cls, stack, args, kwargs, NOT_HANDLED)


def functorch_backward(node: Any, grads: tuple) -> Any:
    """The gradients of a Function's node recorded under a jvp layer: when the innermost
    autograd layer running it is a jvp (the double-vjp of Note: transforms over the autograd
    graph, in _transforms.py), the transpose of the user's `jvp`, so that the tangents jvp
    gives are the user's (Note: autograd.Function under the transforms); NOT_HANDLED (the
    user's `backward`) for a grad layer or outside the transforms."""
    inner = next((x for x in reversed(layers()) if isinstance(x, AutogradLayer)), None)
    if inner is None or inner.kind != "jvp":
        return NOT_HANDLED
    return _transposed_jvp(node, grads)


def _transposed_jvp(node: Any, grads: tuple) -> tuple:
    """`J^T g` for the linear map `t -> jvp(ctx, t)`, by differentiating the user's `jvp` at
    zero tangents (a graph kept, so that jvp's double-vjp can differentiate it in `g`)."""
    leaves: list = []
    tangents: list = [None] * node._num_inputs
    with enable_grad():
        for position, (sizes, dtype) in zip(node._tensor_positions, node._input_meta,
                                            strict=True):
            if not (dtype.is_floating_point or dtype.is_complex):
                leaves.append(None)
                continue
            leaf = pyaten.zeros(sizes, dtype=dtype).requires_grad_(True)
            leaf._func_level = current_level()  # a transform's own leaf (Note: grad levels)
            leaves.append(leaf)
            tangents[position] = leaf.clone()  # the user's jvp may write to its tangents
        outs = run_jvp(node._forward_cls, node, tangents, len(node.input_meta))
        pairs = [(o, g) for o, g in zip(outs, grads, strict=True)
                 if isinstance(o, pyaten.Tensor) and o.requires_grad and g is not None]
        wanted = [x for x in leaves if x is not None]
        if not pairs or not wanted:
            return tuple(None for _ in leaves)
        found = iter(pyaten.autograd.grad([o for o, _ in pairs], wanted,
                                          [g for _, g in pairs], create_graph=True,
                                          allow_unused=True))
    return tuple(None if x is None else next(found) for x in leaves)


def _forward_below(cls: type[Function], stack: list, args: tuple, kwargs: dict) -> Any:
    """The forward of a node recorded on BatchedTensors: the vmap rule below, with grad mode
    on for the batches (autograd records their history, as torch's lower levels do: what the
    node saves stays differentiable for the levels below) and off for the wrappers, which
    are handed over as new wrappers of the same batches (the node records their level)."""
    flat, spec = tree_flatten(args)
    if not any(isinstance(x, BatchedTensor) for x in flat):
        return _below(cls, stack, args, kwargs)
    fresh = [BatchedTensor(x.value, x.level) if isinstance(x, BatchedTensor) and
             x.requires_grad else x for x in flat]
    with enable_grad():
        out = _below(cls, stack, tree_unflatten(fresh, spec), kwargs)
    originals = {id(f): x for f, x in zip(fresh, flat, strict=True) if f is not x}
    return tree_map(lambda t: originals.get(id(t), t), out)


def _below(cls: type[Function], stack: list, args: tuple, kwargs: dict,
           default: Any = None) -> Any:
    """The rule of the innermost vmap level that batches an argument; `default` (the plain
    forward when None) when none does."""
    batched = {x.level for x in tree_flatten(args)[0] if isinstance(x, BatchedTensor)}
    for i in range(len(stack) - 1, -1, -1):
        layer = stack[i]
        if isinstance(layer, VmapLevel) and layer.level in batched:
            return _vmap_rule(cls, layer, i + 1, args, kwargs)
    if default is None:
        return cls.forward(*args, **kwargs)
    return default


def _vmap_rule(cls: type[Function], entry: VmapLevel, number: int, args: tuple,
               kwargs: dict) -> Any:
    """The rule of vmap level `entry` (level `number` on the one stack) for `cls`."""
    if any(isinstance(v, pyaten.Tensor) for v in tree_flatten(kwargs)[0]):
        raise NotImplementedError(
            "Run vmap on autograd.Function with kwarg-only Tensor args. Please do not pass "
            f"kwarg-only Tensors to autograd.Function. Got: {kwargs}"
        )
    overridden = cls.vmap is not Function.vmap
    if cls.generate_vmap_rule:
        if overridden:
            raise RuntimeError(
                f"You tried to vmap over {cls.__name__}, but it has both "
                "generate_vmap_rule=True and an overridden vmap staticmethod. Please set "
                "generate_vmap_rule=False or delete the overridden vmap staticmethod to avoid "
                f"ambiguity. {_DOCS}"
            )
        return _generated_rule(cls, entry, number, args, kwargs)
    if not overridden:
        raise RuntimeError(_no_vmap_support(cls))
    level = entry.level
    values, in_dims = _unwrap(args, level)
    with lowered(number):
        result = cls.vmap(VmapInfo(entry.batch_size, entry.randomness), in_dims, *values,
                          **kwargs)
    base = ("Expected the vmap staticmethod to have two returns, an output and out_dims with "
            "pytree structure compatible with the output. ")
    if not isinstance(result, tuple):
        raise RuntimeError(base + f"Got a {type(result)} instead")
    if len(result) != 2:
        raise RuntimeError(base + f"Got {len(result)} returns instead")
    outputs, out_dims = result
    return _wrap_outputs(outputs, out_dims, values, args, level)


def _no_vmap_support(cls: type[Function]) -> str:
    return (f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please "
            f"override and implement the vmap staticmethod or set generate_vmap_rule=True. "
            f"{_DOCS}")


def _unwrap(args: tuple, level: int) -> tuple[tuple, tuple]:
    """The arguments with level-`level` wrappers replaced by their batches, and the in_dims
    (0 for those, None for everything else), both shaped as `args`."""
    flat, spec = tree_flatten(args)
    values = [x.value if isinstance(x, BatchedTensor) and x.level == level else x for x in flat]
    dims = [0 if isinstance(x, BatchedTensor) and x.level == level else None for x in flat]
    return tuple(tree_unflatten(values, spec)), tuple(tree_unflatten(dims, spec))


def _wrap(x: pyaten.Tensor, dim: int | None, level: int) -> Any:
    if dim is None:
        return x
    return BatchedTensor(pyaten.movedim(x, dim, 0) if dim else x, level)


def _wrap_outputs(outputs: Any, out_dims: Any, values: tuple, args: tuple, level: int) -> Any:
    """Outputs of a vmap staticmethod wrapped at `level` by their out_dims; an input
    returned as is comes back as the caller's own object (what mark_dirty needs)."""
    flat, spec = tree_flatten(outputs)
    flat_dims = _broadcast(out_dims, outputs)
    if flat_dims is None:
        raise RuntimeError(
            "The autograd.Function's vmap staticmethod returned an incompatible (output, "
            f"out_dims) tuple. Expected out_dims={out_dims} to be compatible with the "
            f"structure of `output`. out_dims has structure {tree_flatten(out_dims)[1]} but "
            f"output has structure {spec}. {_DOCS}"
        )
    originals = {id(v): a for v, a in zip(tree_flatten(values)[0], tree_flatten(args)[0],
                                          strict=True)}
    result = []
    for x, d in zip(flat, flat_dims, strict=True):
        if not isinstance(x, pyaten.Tensor):
            result.append(x)
        elif id(x) in originals:
            result.append(originals[id(x)])
        else:
            result.append(_wrap(x, d, level))
    return tree_unflatten(result, spec)


def _broadcast(dims: Any, tree: Any) -> list | None:
    """`dims` spread over `tree`'s leaves (an int/None for a whole subtree), None when the
    structures do not match."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(tree_flatten(tree)[0])
    if type(dims) is not type(tree) or not isinstance(dims, (tuple, list, dict)):
        return None
    if len(dims) != len(tree):
        return None
    if isinstance(dims, dict):
        if dims.keys() != tree.keys():
            return None
        pairs = [(dims[k], tree[k]) for k in tree]
    else:
        pairs = list(zip(dims, tree, strict=True))
    out: list = []
    for d, t in pairs:
        part = _broadcast(d, t)
        if part is None:
            return None
        out += part
    return out


# ---- generate_vmap_rule ---------------------------------------------------------------


def _grad_below(x: Any) -> bool:
    while isinstance(x, BatchedTensor):
        if x.requires_grad:
            return True
        x = x.value
    return isinstance(x, pyaten.Tensor) and x.requires_grad


def _generated_rule(cls: type[Function], entry: VmapLevel, number: int, args: tuple,
                    kwargs: dict) -> Any:
    level = entry.level
    values, in_dims = _unwrap(args, level)
    if not (GRAD.enabled and any(_grad_below(v) for v in tree_flatten(values)[0])):
        with no_grad():  # nothing below records: forward on the batch is the rule
            return cls.forward(*args, **kwargs)
    generated = _vmapped_function(cls, in_dims, entry.batch_size, entry.randomness, kwargs)
    with lowered(number):
        outputs = generated.apply(*values)
    return tree_map(lambda x: _wrap(x, 0, level) if isinstance(x, pyaten.Tensor) else x,
                    outputs)


def _under_vmap(fn: Callable, flat_dims: list, batch_size: int, randomness: str,
                flat_args: list, spec: Any) -> tuple[list, list, Any]:
    """Run `fn` on `flat_args` (unflattened by `spec`) batched by `flat_dims` at a new vmap
    level: its flat results unwrapped, their batch dims (0, or None for a result that does
    not depend on the batch) and their structure (torch's `restore_vmap`)."""
    entry = push_level(batch_size, randomness)
    try:
        with IncludeDispatchKeyGuard("FuncTorchVmapMode"):
            wrapped = [x if d is None or x is None else _wrap(x, d, entry.level)
                       for x, d in zip(flat_args, flat_dims, strict=True)]
            out = fn(*tree_unflatten(wrapped, spec))
    finally:
        pop_level()
    flat_out, out_spec = tree_flatten(out)
    dims = [0 if isinstance(x, BatchedTensor) and x.level == entry.level else None
            for x in flat_out]
    flat_out = [x.value if d == 0 else x for x, d in zip(flat_out, dims, strict=True)]
    return flat_out, dims, out_spec


def _batch_first(x: Any, dim: int | None, batch_size: int) -> Any:
    if not isinstance(x, pyaten.Tensor) or dim == 0:
        return x
    return x.expand(batch_size, *x.shape)


class _CtxProxy:
    """A ctx handed to the user's methods by a generated rule: attributes go to the real
    node."""

    def __init__(self, ctx: Any) -> None:
        object.__setattr__(self, "_ctx", ctx)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._ctx, name, value)


class _SavingCtx(_CtxProxy):
    """`setup_context`'s ctx: the saved tensors are stored unwrapped, with their batch
    dims."""

    def __init__(self, ctx: Any, level: int) -> None:
        super().__init__(ctx)
        object.__setattr__(self, "_level", level)

    def _unwrap(self, tensors: tuple) -> tuple[list, list]:
        values, dims = [], []
        for t in tensors:
            batched = isinstance(t, BatchedTensor) and t.level == self._level
            values.append(t.value if batched else t)
            dims.append(0 if batched else None)
        return values, dims

    def save_for_backward(self, *tensors: Any) -> None:
        values, dims = self._unwrap(tensors)
        self._ctx.save_for_backward(*values)
        self._ctx._pyaten_saved_dims = dims

    def save_for_forward(self, *tensors: Any) -> None:
        values, dims = self._unwrap(tensors)
        self._ctx.save_for_forward(*values)
        self._ctx._pyaten_forward_dims = dims

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self._ctx.mark_non_differentiable(*self._unwrap(tensors)[0])

    def mark_dirty(self, *tensors: Any) -> None:
        self._ctx.mark_dirty(*self._unwrap(tensors)[0])


class _SavedCtx(_CtxProxy):
    """`backward`'s ctx: the saved tensors wrapped again for the vmap it runs in."""

    def __init__(self, ctx: Any, saved: tuple) -> None:
        super().__init__(ctx)
        object.__setattr__(self, "saved_tensors", saved)


def _vmapped_function(cls: type[Function], in_dims: tuple, batch_size: int,
                      randomness: str, kwargs: dict) -> type[Function]:
    """A Function on the batches of one vmap level whose forward, setup_context and
    backward run `cls`'s under a vmap of that size (Note: autograd.Function under the
    transforms)."""
    flat_in_dims = tree_flatten(in_dims)[0]

    def forward(*values: Any) -> Any:
        flat, spec = tree_flatten(values)
        out, dims, out_spec = _under_vmap(lambda *a: cls.forward(*a, **kwargs), flat_in_dims,
                                          batch_size, randomness, flat, spec)
        return tree_unflatten([_batch_first(x, d, batch_size) for x, d in
                               zip(out, dims, strict=True)], out_spec)

    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        flat_out, out_spec = tree_flatten(output)
        flat_in, spec = tree_flatten(inputs)
        dims = flat_in_dims + [0 if isinstance(x, pyaten.Tensor) else None for x in flat_out]

        def inner(*both: Any) -> None:
            level = current_levels()[-1].level
            cls.setup_context(_SavingCtx(ctx, level), tuple(both[:len(inputs)]),
                              tree_unflatten(list(both[len(inputs):]), out_spec))

        both_spec = tree_flatten((*inputs, *flat_out))[1]
        _under_vmap(inner, dims, batch_size, randomness, flat_in + flat_out, both_spec)
        # each input's shape per sample: what its gradient is summed to (torch's reductify)
        ctx._pyaten_sample_shapes = [
            None if not isinstance(x, pyaten.Tensor) else tuple(x.shape)[1:] if d == 0
            else tuple(x.shape) for x, d in zip(flat_in, flat_in_dims, strict=True)]

    def backward(ctx: Any, *grads: Any) -> Any:
        saved = tuple(ctx.saved_tensors)
        saved_dims = list(getattr(ctx, "_pyaten_saved_dims", [None] * len(saved)))
        grad_dims = [None if g is None else 0 for g in grads]

        def inner(*both: Any) -> Any:
            result = cls.backward(_SavedCtx(ctx, tuple(both[:len(saved)])),
                                  *both[len(saved):])
            return result if isinstance(result, tuple) else (result,)

        flat = [*saved, *grads]
        spec = tree_flatten(tuple(flat))[1]
        out, dims, out_spec = _under_vmap(inner, saved_dims + grad_dims, batch_size,
                                          randomness, flat, spec)
        result = tree_unflatten(out, out_spec)
        result_dims = tree_unflatten(dims, out_spec)
        return tuple(_reduce_to_input(g, d, in_d, shape, batch_size) for g, d, in_d, shape in
                     zip(result, result_dims, flat_in_dims, ctx._pyaten_sample_shapes,
                         strict=False))

    def jvp(ctx: Any, *tangents: Any) -> tuple:
        # in jvp, saved_tensors are what save_for_forward saved, unwrapped
        saved = tuple(ctx.saved_tensors)
        saved_dims = list(getattr(ctx, "_pyaten_forward_dims", [None] * len(saved)))
        tangent_dims = [None if t is None else d for t, d in
                        zip(tangents, flat_in_dims, strict=True)]

        def inner(*both: Any) -> tuple:
            result = cls.jvp(_SavedCtx(ctx, tuple(both[:len(saved)])), *both[len(saved):])
            return result if isinstance(result, tuple) else (result,)

        flat = [*saved, *tangents]
        spec = tree_flatten(tuple(flat))[1]
        out, dims, out_spec = _under_vmap(inner, saved_dims + tangent_dims, batch_size,
                                          randomness, flat, spec)
        return tree_unflatten([_batch_first(x, d, batch_size) for x, d in
                               zip(out, dims, strict=True)], out_spec)

    methods = {
        "forward": staticmethod(forward),
        "setup_context": staticmethod(setup_context),
        "backward": staticmethod(backward),
        "generate_vmap_rule": True,
    }
    if cls.jvp is not Function.jvp:
        methods["jvp"] = staticmethod(jvp)
    return type(f"{cls.__name__}Vmapped", (Function,), methods)


def _reduce_to_input(grad: Any, grad_dim: Any, in_dim: int | None, shape: Any,
                     batch_size: int) -> Any:
    """One input's gradient from a batched backward: each sample's summed to the input's
    shape where the backward broadcast it, then summed over the batch for an input that was
    not batched, the batch first otherwise."""
    if not isinstance(grad, pyaten.Tensor):
        return grad
    if grad_dim == 0 and tuple(grad.shape[1:]) != shape:
        grad = _sum_to(grad, shape, 1)
    elif grad_dim is None and tuple(grad.shape) != shape:
        grad = _sum_to(grad, shape, 0)
    if in_dim is None:
        return grad.sum(0) if grad_dim == 0 else grad
    return _batch_first(grad, grad_dim, batch_size)


def _sum_to(grad: pyaten.Tensor, shape: tuple, start: int) -> pyaten.Tensor:
    """`grad` summed to `shape` in its dimensions from `start` on (those before are kept)."""
    extra = grad.dim() - start - len(shape)
    if extra > 0:
        grad = grad.sum(tuple(range(start, start + extra)))
    dims = tuple(start + i for i, n in enumerate(shape) if n == 1 and grad.shape[start + i] != 1)
    return grad.sum(dims, keepdim=True) if dims else grad


set_functorch_hook(functorch_apply, functorch_backward)
