"""The autograd transforms of torch.func: grad, grad_and_value, vjp, jvp, linearize, jacrev,
jacfwd, hessian.

Note: transforms over the autograd graph
    Each transform is a composition over `pyaten.autograd.grad`. Its inputs are aliased
    (a view when they already require grad, so that an enclosing transform still sees the
    path to them; a detached leaf otherwise), the function runs under `enable_grad`, and the
    gradient is taken with `create_graph=True` while another transform encloses this one
    (so the outer one can differentiate the result) and without a graph at the outermost
    one. `jvp` uses the double-vjp trick: with u a dummy cotangent, g(u) = J^T u is linear
    in u, and the vjp of g with cotangent t is J t. Results are therefore equal to
    torch.func's but computed through reverse mode.

Note: grad levels
    torch.func numbers its transforms: ordinary autograd outside every transform is level 0,
    each grad/vjp/jvp inside it one level more, and a transform differentiates only what its
    own level recorded. Here the levels share one autograd graph and are told apart by their
    leaves: a transform's fresh input leaves are marked with its level (`_func_level`, its
    number on the stack it shares with vmap: Note: one level stack, in
    pyaten/_functorch/levels.py), so a
    transform sees exactly its own inputs (no perturbation confusion: the inner grad of
    `grad(lambda x: grad(lambda y: x * y)(x))` differentiates y only). At the outermost
    transform a result is detached unless its graph reaches a leaf that no transform made
    (a tensor that requires grad at level 0, grad mode on there): then the backward runs
    with `create_graph` and the result keeps that history, as torch.func's unwrapped
    results do (`autograd.grad(func.grad(f)(x), w)` works). A BatchedTensor input gets a
    new wrapper as its leaf, so the batch keeps the history of an enclosing grad
    (`grad(vmap(grad(f)))`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import pyaten
from pyaten._functorch.levels import (
    current_level,
    mark_input,
    pop_autograd_layer,
    push_autograd_layer,
)
from pyaten.autograd.grad_mode import GRAD
from pyaten.autograd.graph import AccumulateGrad
from pyaten.dispatch.tls import IncludeDispatchKeyGuard
from pyaten.func._batched import BatchedTensor
from pyaten.func._random import REFUSED_RANDOM as _REFUSED_RANDOM
from pyaten.func._random import VMAP_MODE_KEY
from pyaten.utils._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian"]


class _Depth(threading.local):
    value = 0  # how many autograd transforms enclose the running code (its grad level)
    outer_grad = False  # whether grad mode was on outside the outermost one (level 0)


_DEPTH = _Depth()


def _enter(kind: str = "grad", batch_size: int = 0, randomness: str = "error",
           captures: Any = None) -> None:
    """Push an autograd layer; `captures` (the transformed function) reaches what
    the function captured from outside it (Note: tensors made inside a transform, in
    pyaten/_functorch/levels.py)."""
    if _DEPTH.value == 0:
        _DEPTH.outer_grad = GRAD.enabled
    _DEPTH.value += 1
    # its place on the one level stack (Note: one level stack, in pyaten/_functorch/levels.py)
    push_autograd_layer(kind, batch_size, randomness, captures)


def _exit() -> None:
    _DEPTH.value -= 1
    pop_autograd_layer()


class _Enter:
    def __init__(self, kind: str, captures: Any) -> None:
        self.kind = kind
        self.captures = captures

    def __enter__(self) -> None:
        _enter(self.kind, captures=self.captures)

    def __exit__(self, *exc: Any) -> None:
        _exit()


def _nested() -> bool:
    """True inside another transform: results must stay differentiable."""
    return _DEPTH.value > 1


def _alias_input(x: Any) -> Any:
    if not isinstance(x, pyaten.Tensor):
        return x
    if x.requires_grad:
        leaf = x.view_as(x)
    elif isinstance(x, BatchedTensor):
        # a new wrapper of the same batch: the batch keeps its own history (a vmap inside
        # an enclosing grad), and autograd at this level records on the wrapper
        leaf = BatchedTensor(x.value, x.level).requires_grad_(True)
    else:
        leaf = x.detach().requires_grad_(True)
    mark_input(leaf, current_level())  # Note: grad levels
    return leaf


def _reaches_level0(tensors: list) -> bool:
    """Whether autograd's graph of `tensors` reaches a leaf that no transform made: a tensor
    that requires grad outside every transform (Note: grad levels)."""
    stack = []
    for t in tensors:
        if not isinstance(t, pyaten.Tensor):
            continue
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif t._requires_grad and not t.__dict__.get("_func_level"):
            return True
    seen = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            if not node.variable.__dict__.get("_func_level"):
                return True
            continue
        for nxt, _ in node.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return False


def _keep_graph(tensors: list) -> bool:
    """Whether results computed from `tensors` must stay differentiable: inside another
    transform, or when they depend on level 0's tensors while grad mode is on there."""
    return _nested() or (_DEPTH.outer_grad and _reaches_level0(tensors))


def _argnums_tuple(argnums: Any, nargs: int, name: str) -> tuple[int, ...]:
    single = isinstance(argnums, int)
    nums = (argnums,) if single else argnums
    if not isinstance(nums, tuple) or not nums:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    out = []
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {argnums}")
        if not -nargs <= n < nargs:
            raise RuntimeError(
                f"Got argnum={n}, but only {nargs} positional inputs"
            )
        out.append(n % nargs)
    return tuple(out)


def _finish(x: Any) -> Any:
    # (a result without history is returned as it is: detaching it would only make a copy
    # of the handle, one more batched call under vmap)
    if isinstance(x, pyaten.Tensor) and (x._requires_grad or x.grad_fn is not None) and (
            not _keep_graph([x])):
        return x.detach()
    return x


def _grads(
    outputs: list, inputs: list, cotangents: list, retain: bool = False,
    create: bool | None = None,
) -> list:
    pairs = [(o, c) for o, c in zip(outputs, cotangents, strict=True) if o.requires_grad]
    diff_inputs = [x for x in inputs if isinstance(x, pyaten.Tensor)]
    if not pairs or not diff_inputs:
        return [pyaten.zeros_like(x) for x in diff_inputs]
    result = pyaten.autograd.grad(
        [o for o, _ in pairs],
        diff_inputs,
        [c for _, c in pairs],
        retain_graph=True if retain else None,
        create_graph=_keep_graph([o for o, _ in pairs]) if create is None else create,
        allow_unused=True,
    )
    return [pyaten.zeros_like(x) if g is None else g for x, g in zip(diff_inputs, result,
                                                                          strict=True)]


def _split_aux(out: Any, has_aux: bool, name: str) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(
            f"{name}: output of function f should be a tuple: (output, aux) if has_aux is True"
        )
    return out


def grad_and_value(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """`func`'s gradient with respect to `args[argnums]`, and its value."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums_tuple(argnums, len(args), "grad_and_value")
        with _Enter("grad", func), pyaten.enable_grad():
            args = list(args)
            for n in nums:
                args[n] = tree_map(_alias_input, args[n])
            out = func(*args, **kwargs)
            out, aux = _split_aux(out, has_aux, "grad_and_value(f)(*args)")
            if not isinstance(out, pyaten.Tensor):
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                    f"{type(out)}"
                )
            if out.dim() != 0:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, "
                    f"got tensor with {out.dim()} dims. Maybe you wanted to use the vjp or "
                    "jacrev APIs instead?"
                )
            flat, spec = tree_flatten([args[n] for n in nums])
            grads = _grads([out], flat, [pyaten.ones_like(out)])
            grads_iter = iter(grads)
            grads_tree = tree_unflatten(
                [next(grads_iter) if isinstance(x, pyaten.Tensor) else None for x in flat], spec
            )
            result = tree_map(_finish, grads_tree)
            g = result[0] if isinstance(argnums, int) else tuple(result)
            value = _finish(out)
            if has_aux:
                return g, (value, tree_map(_finish, aux))
            return g, value

    return wrapper


def grad(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """The gradient of a scalar function with respect to `args[argnums]` (torch.func.grad)."""
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = inner(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return wrapper


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """`(func(*primals), vjp_fn)`: vjp_fn(cotangents) is the vector-Jacobian product."""
    _enter(captures=func)
    try:
        with pyaten.enable_grad():
            inputs = tree_map(_alias_input, primals)
            out = func(*inputs)
            out, aux = _split_aux(out, has_aux, "vjp(f, *primals)")
        flat_in, in_spec = tree_flatten(inputs)
        flat_out, out_spec = tree_flatten(out)
        nested_at_call = _DEPTH.value > 1
        # level 0's tensors in the graph: the products stay differentiable for them
        level0 = not nested_at_call and _DEPTH.outer_grad and _reaches_level0(flat_out)
    finally:
        _exit()
    for o in flat_out:
        if not isinstance(o, pyaten.Tensor):
            raise RuntimeError(
                "vjp(f, *primals): Expected f to be a function that has non-empty output "
                f"(got output = {out}) consisting of Tensors"
            )

    def vjp_fn(cotangents: Any) -> tuple:
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure "
                f"of outputs to the function. cotangents: {_pprint(ct_spec)}, primal output: "
                f"{_pprint(out_spec)}"
            )
        inside = nested_at_call or _DEPTH.value > 0
        grads = _grads(flat_out, flat_in, flat_ct, retain=True, create=inside or level0)
        it = iter(grads)
        result = tree_unflatten(
            [next(it) if isinstance(x, pyaten.Tensor) else None for x in flat_in], in_spec
        )
        if not inside:
            result = tree_map(_to_level0 if level0 else _detach, result)
        return tuple(result)

    finish = (lambda t: t) if nested_at_call else _to_level0 if level0 else _detach
    value = tree_map(finish, out)
    if has_aux:
        return value, vjp_fn, tree_map(finish, aux)
    return value, vjp_fn


def _pprint(spec: Any) -> str:
    """A pytree structure as torch.func's messages write it: `(*, [*])`, `{'a': *}`."""
    if spec.is_leaf():
        return "*"
    children = [_pprint(c) for c in spec.children_specs]
    if spec.type is tuple:
        return "(" + ", ".join(children) + ("," if len(children) == 1 else "") + ")"
    if spec.type is list:
        return "[" + ", ".join(children) + "]"
    if spec.type is dict:
        return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(spec.context, children,
                                                            strict=True)) + "}"
    return f"{spec.type.__name__}(" + ", ".join(children) + ")"


def _detach(x: Any) -> Any:
    return x.detach() if isinstance(x, pyaten.Tensor) else x


def _to_level0(x: Any) -> Any:
    """A result outside every transform: its history kept where it reaches level 0."""
    if isinstance(x, pyaten.Tensor) and not _reaches_level0([x]):
        return x.detach()
    return x


def jvp(
    func: Callable, primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False
) -> tuple:
    """`(func(*primals), J @ tangents)`, through the double-vjp trick (Note: transforms over
    the autograd graph)."""
    if not isinstance(primals, tuple):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be "
            "valid to call f(*primals)."
        )
    if not isinstance(tangents, tuple) or len(tangents) != len(primals):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same python "
            "structure. For example, if primals is a tuple of 3 tensors, tangents also must "
            f"be. Got primals with structure {tree_flatten(primals)[1]} and tangents with "
            f"structure {tree_flatten(tangents)[1]}"
        )
    with _Enter("jvp", func), pyaten.enable_grad():
        inputs = tree_map(_alias_input, primals)
        out = func(*inputs)
        out, aux = _split_aux(out, has_aux, "jvp(f, primals, tangents)")
        flat_in = [x for x in tree_flatten(inputs)[0] if isinstance(x, pyaten.Tensor)]
        flat_t = [t for t in tree_flatten(tangents)[0] if isinstance(t, pyaten.Tensor)]
        flat_out, out_spec = tree_flatten(out)
        dummies = [pyaten.zeros_like(o).requires_grad_(True) for o in flat_out]
        for d in dummies:
            d._func_level = current_level()
        g = _grads(flat_out, flat_in, dummies, retain=True, create=True)
        pairs = [(gi, t) for gi, t in zip(g, flat_t, strict=True) if gi.requires_grad]
        if pairs:
            tangent_outs = pyaten.autograd.grad(
                [p for p, _ in pairs], dummies, [t for _, t in pairs],
                create_graph=_keep_graph([p for p, _ in pairs]), allow_unused=True,
            )
        else:
            tangent_outs = [None] * len(dummies)
        tangent_outs = [pyaten.zeros_like(o) if t is None else t for o, t in
                        zip(flat_out, tangent_outs, strict=True)]
        value = tree_map(_finish, out)
        tangent = tree_unflatten([_finish(t) for t in tangent_outs], out_spec)
        if has_aux:
            return value, tangent, tree_map(_finish, aux)
        return value, tangent


def linearize(func: Callable, *primals: Any) -> tuple:
    """`(func(*primals), jvp_fn)`: jvp_fn(*tangents) is the Jacobian-vector product at
    primals."""
    value = tree_map(_detach, func(*primals))

    def jvp_fn(*tangents: Any) -> Any:
        return jvp(func, primals, tangents)[1]

    return value, jvp_fn


def _basis(x: pyaten.Tensor) -> list[pyaten.Tensor]:
    n = x.numel()
    eye = pyaten.eye(n, dtype=x.dtype, device=x.device)
    return [eye[i].reshape(x.shape) for i in range(n)]


def jacrev(
    func: Callable, argnums: Any = 0, *, has_aux: bool = False, chunk_size: int | None = None,
    _preallocate_and_copy: bool = False,
) -> Callable:
    """The Jacobian of `func` with respect to `args[argnums]`, row by row in reverse mode."""
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums_tuple(argnums, len(args), "jacrev")
        with _Enter("grad", func), pyaten.enable_grad():
            args = list(args)
            for n in nums:
                args[n] = tree_map(_alias_input, args[n])
            out = func(*args, **kwargs)
            out, aux = _split_aux(out, has_aux, "vjp(f, *primals)")
            flat_out, out_spec = tree_flatten(out)
            diff = [args[n] for n in nums]
            flat_in, in_spec = tree_flatten(diff)
            per_output = []
            create = _keep_graph(flat_out)
            for o in flat_out:
                rows = []
                for e in _basis(o):
                    cts = [e if p is o else pyaten.zeros_like(p) for p in flat_out]
                    rows.append(_grads(flat_out, flat_in, cts, retain=True, create=create))
                blocks = []
                for j, x in enumerate(flat_in):
                    if rows:
                        stacked = pyaten.stack([r[j] for r in rows])
                    else:
                        stacked = pyaten.zeros((0, *x.shape), dtype=x.dtype)
                    blocks.append(stacked.reshape(*o.shape, *x.shape))
                per_output.append(tree_unflatten(blocks, in_spec))
            per_output = [tree_map(_finish, p) for p in per_output]
            if isinstance(argnums, int):
                per_output = [p[0] for p in per_output]
            else:
                per_output = [tuple(p) for p in per_output]
            jac = tree_unflatten(per_output, out_spec)
            if has_aux:
                return jac, tree_map(_finish, aux)
            return jac

    return wrapper


def jacfwd(
    func: Callable, argnums: Any = 0, has_aux: bool = False, *, randomness: str = "error"
) -> Callable:
    """The Jacobian of `func` with respect to `args[argnums]`, column by column through jvp."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if randomness not in ("error", "same", "different"):
            raise RuntimeError(
                "Only allowed values for randomness are 'error', 'different', or 'same'. "
                f"Got {randomness}"
            )
        nums = _argnums_tuple(argnums, len(args), "jacfwd")
        diff = tuple(args[n] for n in nums)
        flat_in, in_spec = tree_flatten(diff)

        def restricted(*diff_args: Any) -> Any:
            full = list(args)
            for n, value in zip(nums, diff_args, strict=True):
                full[n] = value
            return func(*full, **kwargs)

        batched = _jacfwd_by_vmap(restricted, diff, flat_in, in_spec, has_aux, randomness)
        if batched is not None:
            trees, out_spec, aux = batched
            per_output = [t[0] if isinstance(argnums, int) else tuple(t) for t in trees]
            jac = tree_unflatten(per_output, out_spec)
            return (jac, tree_map(_finish, aux)) if has_aux else jac
        _enter("jacfwd", sum(x.numel() for x in flat_in if isinstance(x, pyaten.Tensor)),
               randomness, func)
        try:
            # random calls follow `randomness` (pyaten/func/_random.py)
            with IncludeDispatchKeyGuard(VMAP_MODE_KEY):
                out, columns, aux = _jacfwd_columns(restricted, diff, flat_in, in_spec,
                                                    has_aux, randomness)
            out_spec = tree_flatten(out)[1]
            flat_out = tree_flatten(out)[0]
            per_output = []
            for i, o in enumerate(flat_out):
                blocks = []
                for j, x in enumerate(flat_in):
                    if columns[j]:
                        stacked = pyaten.stack([c[i] for c in columns[j]], dim=-1)
                    else:
                        stacked = pyaten.zeros((*o.shape, 0), dtype=o.dtype)
                    blocks.append(_finish(stacked.reshape(*o.shape, *x.shape)))
                tree = tree_unflatten(blocks, in_spec)
                per_output.append(tree[0] if isinstance(argnums, int) else tuple(tree))
            jac = tree_unflatten(per_output, out_spec)
            if has_aux:
                return jac, tree_map(_finish, aux)
            return jac
        finally:
            _exit()

    return wrapper


def _jacfwd_columns(restricted: Callable, diff: tuple, flat_in: list, in_spec: Any,
                    has_aux: bool, randomness: str) -> tuple[Any, list[list[Any]], Any]:
    """jacfwd's per-vector loop: `(output, per input the flat tangents of each of its basis
    vectors, aux)`. With randomness="same" every vector draws from one state of the
    generator, as torch's vmap draws once for every sample."""
    columns: list[list[Any]] = [[] for _ in flat_in]
    out = aux = None
    state = pyaten.get_rng_state() if randomness == "same" else None
    done = False
    for j, x in enumerate(flat_in):
        for e in _basis(x):
            if state is not None:
                pyaten.set_rng_state(state)
            tangents = [e if k == j else pyaten.zeros_like(y) for k, y in enumerate(flat_in)]
            result = jvp(restricted, diff, tuple(tree_unflatten(tangents, in_spec)),
                         has_aux=has_aux)
            out = result[0]
            if has_aux:
                aux = result[2]
            columns[j].append(tree_flatten(result[1])[0])
            done = True
    if not done:  # every input empty
        out, aux = _split_aux(restricted(*diff), has_aux, "jvp(f, primals, tangents)")
    return out, columns, aux


def _jacfwd_by_vmap(restricted: Callable, diff: tuple, flat_in: list, in_spec: Any,
                    has_aux: bool, randomness: str) -> tuple | None:
    """jacfwd as torch computes it: one jvp vmapped over the stacked basis of every input,
    instead of one jvp per basis vector. `(per output, its blocks as the inputs' tree;
    the outputs' structure; aux)`, or None where this way cannot serve (an input that is no
    floating tensor, empty inputs, an error under vmap other than a refused random call) or
    where the Jacobian must stay differentiable (inside another autograd transform, or an
    input that requires grad outside them: vmap's results do not keep the history recorded
    on its wrappers): then the per-vector loop decides, from the generator's state this
    way started from."""
    if _DEPTH.value or not flat_in or not all(
            isinstance(x, pyaten.Tensor) and x.is_floating_point() for x in flat_in):
        return None
    if GRAD.enabled and any(x.requires_grad for x in flat_in):
        return None
    sizes = [x.numel() for x in flat_in]
    total = sum(sizes)
    if total == 0:
        return None
    bases, start = [], 0
    for x, n in zip(flat_in, sizes, strict=True):
        eye = pyaten.eye(total, dtype=x.dtype, device=x.device)
        bases.append(eye[:, start:start + n].reshape(total, *x.shape))
        start += n

    def column(*tangents: Any) -> Any:
        result = jvp(restricted, diff, tuple(tree_unflatten(list(tangents), in_spec)),
                     has_aux=has_aux)
        # as torch's: the primal output is dropped, aux comes back batched (sample 0 kept)
        return (result[1], result[2]) if has_aux else result[1]

    # in "error" mode a draw raises, so only the other modes can leave the generator moved
    state = None if randomness == "error" else pyaten.get_rng_state()
    try:
        results = pyaten.func.vmap(column, randomness=randomness)(*bases)
    except RuntimeError as e:
        if str(e) in _REFUSED_RANDOM:
            raise
        return _restart(state)
    except Exception:  # noqa: BLE001 - the per-vector loop raises what is really wrong
        return _restart(state)
    tangent_out, aux = results if has_aux else (results, None)
    if has_aux:
        aux = tree_map(lambda a: a[0] if isinstance(a, pyaten.Tensor) else a, aux)
    flat_t, out_spec = tree_flatten(tangent_out)
    per_output = []
    for t in flat_t:
        shape = tuple(t.shape[1:])
        blocks, start = [], 0
        for x, n in zip(flat_in, sizes, strict=True):
            block = pyaten.movedim(t[start:start + n], 0, -1)
            blocks.append(_finish(block.reshape(*shape, *x.shape)))
            start += n
        per_output.append(tree_unflatten(blocks, in_spec))
    return per_output, out_spec, aux


def _restart(state: Any) -> None:
    if state is not None:
        pyaten.set_rng_state(state)


def hessian(func: Callable, argnums: Any = 0) -> Callable:
    """The Hessian of a scalar function: jacfwd(jacrev(func))."""
    return jacfwd(jacrev(func, argnums), argnums)
