"""The engine: run the recorded graph backwards from some outputs.

`execute` is the whole algorithm, as PyTorch's engine does it on one thread:
1. Discover the graph from the roots and count, for each node, how many edges lead into
   it (its dependencies). When only some inputs are wanted (`autograd.grad`, `backward(
   inputs=...)`), keep just the nodes from which a wanted edge can be reached.
2. Seed the roots' input buffers with the starting gradients. A node is ready when all its
   dependencies have delivered; ready nodes run newest first (highest sequence number).
3. To run a node: tensor hooks and `retain_grad`, capture wanted gradients, pre-hooks,
   `apply` (with grad mode = `create_graph`), post-hooks, release saved tensors unless the
   graph is retained; then fit each produced gradient to the input it flows to (sum a
   broadcast gradient back to the input's shape, cast to its dtype) and add it to that
   node's buffer.
Leaves are reached through their `AccumulateGrad` node, which adds into `.grad`.

Note: the compiled engine loop
    With `pyaten._accel_graph` loaded (Note: the compiled recording calls, in
    autograd/accel_graph.py), a whole backward (no captured edges, no profiler hook) runs
    steps 1-3 in its `run_graph`: the same dictionaries, the same order (newest first, then
    the order nodes became ready), each node through the same `_run_tensor_hooks` and
    `_call` (whose plain case, a node with no node hooks that is not an AccumulateGrad,
    outside anomaly mode, it does itself: apply, release, the count check) and each
    gradient through `_fit`, so hooks, retain_grad, anomaly mode, released
    graphs and the stolen gradient (it holds no extra reference to a gradient) behave as
    here. `execute_reference` stays the reference and runs everything else
    (`autograd.grad`, `backward(inputs=)`, the profiler); PYATEN_NO_ACCEL=1 runs it always.

Note: stealing the gradient
    A leaf's first gradient becomes its `.grad` as it is when nothing else can see it, as
    PyTorch's AccumulateGrad does when the gradient's use count says the engine holds the
    only reference: no copy of the (often largest) tensors of a training step. Here the
    engine counts Python references (`sys.getrefcount`): the gradient must be held only by
    the engine's buffer and locals (the engine drops its own references to gradients it has
    passed on), its storage by it alone (or by it and a base only it refers to), and its
    strides must be what the copy would get. Anything else (a hook or `autograd.grad` that
    keeps it, a view of a live tensor, create_graph) gets the copy, as before.
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Sequence
from typing import Any

from pyaten.autograd.accel_graph import ACCEL_GRAPH
from pyaten.autograd.anomaly_mode import ANOMALY, check_outputs
from pyaten.autograd.grad_mode import GRAD
from pyaten.autograd.graph import AccumulateGrad, Node, gradient_edge
from pyaten.core.size import Size
from pyaten.core.tensor import Tensor, preserve_format, strided
from pyaten.dispatch.python_key import PYTHON_KEYS
from pyaten.dispatch.tls import STATE as TLS
from pyaten.native.ops_handles import LazyEntry

_DETACH = LazyEntry("detach")
_ONES_LIKE = LazyEntry("ones_like")

# Set by the profiler (pyaten/profiler) while it records: `node_hook.begin(node)` before a
# node runs, `.called(node)` when its function returned, `.end(node)` once its gradients are
# passed on, so the node's work becomes events.
node_hook: Any = None

__all__ = ["execute", "execute_reference", "accumulate_into", "sum_to"]

# Without reference counts (not CPython) nothing is stolen: gradients are always copied.
_refcount = getattr(sys, "getrefcount", lambda obj: 1 << 30)


class _Probe:
    __slots__ = ("item",)


def _calibrate() -> tuple[int, int]:
    """What `getrefcount` reads for an object held by one list and one local name, and for
    one held by one slot: the readings that mean "the engine's alone" (Note: stealing the
    gradient), measured rather than assumed, as interpreters count arguments differently."""
    held = [object()]
    item = held[0]
    list_and_local = _refcount(item)
    probe = _Probe()
    probe.item = object()
    return list_and_local, _refcount(probe.item)


_ENGINE_ONLY, _ONE_SLOT = _calibrate()


def sum_to(grad: Tensor, shape: tuple) -> Tensor:
    """Sum `grad` over the dimensions broadcasting added to `shape` (the reverse of expand)."""
    sizes = grad._sizes
    if sizes == tuple(shape):
        return grad
    lead = len(sizes) - len(shape)
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and sizes[lead + i] != 1:
            dims.append(lead + i)
    result = grad.sum(dims, keepdim=True) if dims else grad
    if lead:
        result = result.view(tuple(shape))
    return result


def empty_strided(sizes: tuple, strides: tuple | None, like: Tensor) -> Tensor:
    """A new tensor with `like`'s dtype and device (contiguous when `strides` is None)."""
    from pyaten.native.ops_handles import aten

    if strides is None:
        return aten.empty.memory_format(list(sizes), dtype=like._dtype, device=like._device)
    return aten.empty_strided.default(
        list(sizes), list(strides), dtype=like._dtype, device=like._device
    )


def _expandable(shape: tuple, to: tuple) -> bool:
    if len(shape) > len(to):
        return False
    for s, t in zip(reversed(shape), reversed(to)):
        if s != t and s != 1:
            return False
    return True


def _fit(node: Node, index: int, grad: Tensor, target: Node, input_nr: int) -> Tensor:
    """The gradient `node` produced for its input `index`, fitted to what `target` expects."""
    meta = target.input_meta[input_nr] if input_nr < len(target.input_meta) else None
    if meta is None:
        return grad
    shape, dtype, _device = meta
    if grad._sizes != shape:
        if not _expandable(shape, grad._sizes):
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {index} - got "
                f"{list(grad._sizes)} but expected shape compatible with {list(shape)}"
            )
        grad = sum_to(grad, shape)
    if grad._dtype is not dtype:
        if grad._dtype.is_complex and not dtype.is_complex:
            grad = grad.real
        grad = grad.to(dtype)
    return grad


def accumulate_into(variable: Tensor, grad: Tensor, owned: bool = False) -> None:
    """Add `grad` into leaf `variable.grad` (PyTorch's AccumulateGrad rules); `owned`: the
    caller holds the only references to `grad` (Note: stealing the gradient)."""
    old = variable._grad
    if old is None:
        if GRAD.enabled:
            variable._grad = grad  # create_graph: the gradient keeps its own graph
        elif grad.is_nested:  # a nested leaf keeps its nested gradient (pyaten/nested)
            variable._grad = grad.detach()
        elif grad.__class__ is not Tensor and grad.layout is not strided:
            variable._grad = grad  # a sparse gradient is kept as it is (docs/sparse.md)
        elif (grad._keyset | TLS.included) & PYTHON_KEYS:
            _accumulate_first_dispatched(variable, grad, owned)
        elif owned and _stealable(grad, variable):
            if grad._base is not None:  # as PyTorch's `new_grad.detach()`: not a view
                alias = Tensor._make(grad._storage, grad._sizes, grad._strides, grad._offset,
                                     grad._dtype, grad._device)
                alias._version_counter = grad._version_counter
                alias._keyset = grad._keyset
                grad = alias
            variable._grad = grad
        else:
            strides = variable._strides if variable.is_non_overlapping_and_dense() else None
            fresh = empty_strided(variable._sizes, strides, grad)
            fresh.copy_(grad)
            variable._grad = fresh
    elif GRAD.enabled or old.is_nested or strided is not old.layout or strided is not grad.layout:
        variable._grad = old + grad
    else:
        old.add_(grad)
    for hook in _post_accumulate_hooks(variable):
        hook(variable)


def _accumulate_first_dispatched(variable: Tensor, grad: Tensor, owned: bool) -> None:
    """A first gradient while Python dispatch is on: the same rules, each step an operator a
    mode sees as in PyTorch (`detach` to steal, else `new_empty_strided` and `copy_`). The
    reference counts are not read here: a mode or a capture keeps references of its own (its
    node table, `meta["val"]`), which PyTorch's use count of the tensor's storage does not
    see; the gradient is stolen when it has no history and the layout a copy would get."""
    if grad.grad_fn is None and not grad._requires_grad and (
        type(grad) is not Tensor or _obeys_layout(grad, variable)
    ):
        variable._grad = (_DETACH.entry or _DETACH.resolve()).call(grad)
        return
    strides = variable._strides if variable.is_non_overlapping_and_dense() else variable.stride()
    fresh = grad.new_empty_strided(variable._sizes, strides)
    fresh.copy_(grad)
    variable._grad = fresh


def _stealable(grad: Tensor, variable: Tensor) -> bool:
    """Whether `grad` (that no one else references) may become `.grad` as it is: nothing
    else shares its storage, it has no history, and its layout is what a copy would get."""
    if type(grad) is not Tensor or grad.grad_fn is not None or grad._requires_grad:
        return False
    # Read through attributes, never local names (a local would count as one more holder).
    if grad._base is None:
        if _refcount(grad._storage) > _ONE_SLOT:  # the storage is this tensor's alone
            return False
    elif _refcount(grad._base) > _ONE_SLOT or _refcount(grad._storage) > _ONE_SLOT + 1:
        return False  # the base is this view's alone, and they alone share the storage
    return _obeys_layout(grad, variable)


def _obeys_layout(grad: Tensor, variable: Tensor) -> bool:
    """PyTorch's layout contract for a stolen gradient: the variable's strides where it is
    dense (dims of size 1 aside), else contiguous."""
    if variable.is_non_overlapping_and_dense():
        for size, stride, want in zip(grad._sizes, grad._strides, variable._strides):
            if size != 1:
                if stride != want:
                    return False
            elif stride == 0 or want == 0:
                return False
        return True
    return grad.is_contiguous()


def _post_accumulate_hooks(variable: Tensor) -> list:
    extra = variable.__dict__.get("_post_accumulate_grad_hooks") if hasattr(
        variable, "__dict__"
    ) else None
    return list(extra.values()) if extra else []


def _wanted_nodes(roots: Sequence[Node], targets: set[Node]) -> set[Node]:
    """Nodes from which a target can be reached (targets included)."""
    wanted: set[Node] = set()
    done: set[Node] = set()
    for root in roots:
        if root in done:
            continue
        stack: list[tuple[Node, int]] = [(root, 0)]
        done.add(root)
        while stack:
            node, i = stack[-1]
            edges = node.next_functions
            if i < len(edges):
                stack[-1] = (node, i + 1)
                child = edges[i][0]
                if child is not None and child not in done:
                    done.add(child)
                    stack.append((child, 0))
                continue
            stack.pop()
            if node in targets or any(
                child is not None and child in wanted for child, _ in edges
            ):
                wanted.add(node)
    return wanted


def execute(
    roots: Sequence[tuple[Node, int]],
    root_grads: Sequence[Tensor],
    keep_graph: bool,
    create_graph: bool,
    capture: Sequence[tuple[Node | None, int]] | None = None,
    accumulate_leaves: Sequence[AccumulateGrad] | None = None,
) -> list[Tensor | None]:
    """Run the graph from `roots` (edges) seeded with `root_grads`.

    With `capture`, returns the gradient arriving at each of those edges and runs only what
    leads to them (plus `accumulate_leaves`, the accumulators `backward(inputs=)` targets);
    without, runs everything and returns [].

    A whole backward (no `capture`, no profiler) runs in `_accel_graph.run_graph` when that
    is loaded (Note: the compiled engine loop); `execute_reference` is the reference.
    """
    if capture is None and _RUN_GRAPH is not None and node_hook is None:
        previous = GRAD.enabled
        GRAD.enabled = create_graph
        try:
            _RUN_GRAPH(roots, root_grads, keep_graph)
        finally:
            GRAD.enabled = previous
        return []
    return execute_reference(roots, root_grads, keep_graph, create_graph, capture,
                             accumulate_leaves)


def execute_reference(
    roots: Sequence[tuple[Node, int]],
    root_grads: Sequence[Tensor],
    keep_graph: bool,
    create_graph: bool,
    capture: Sequence[tuple[Node | None, int]] | None = None,
    accumulate_leaves: Sequence[AccumulateGrad] | None = None,
) -> list[Tensor | None]:
    """`execute` in Python: every case, and the reference of the compiled loop."""
    root_nodes = [node for node, _ in roots]
    captures: dict[Node, list[tuple[int, int]]] = {}
    targets: set[Node] = set()
    if capture is not None:
        for i, (node, nr) in enumerate(capture):
            if node is not None:
                captures.setdefault(node, []).append((nr, i))
                targets.add(node)
        targets.update(accumulate_leaves or ())
        wanted = _wanted_nodes(root_nodes, targets)
        runs = {n for n in wanted if n not in captures or any(
            c is not None and c in wanted for c, _ in n.next_functions
        ) or n in (accumulate_leaves or ())}
    else:
        wanted = None
        runs = None

    # 1. dependencies among the nodes that matter
    dependencies: dict[Node, int] = {}
    seen: set[Node] = set()
    stack = [n for n in dict.fromkeys(root_nodes) if wanted is None or n in wanted]
    seen.update(stack)
    while stack:
        node = stack.pop()
        if runs is not None and node not in runs:
            continue
        for child, _ in node.next_functions:
            if child is None or (wanted is not None and child not in wanted):
                continue
            dependencies[child] = dependencies.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)

    # 2. seed the buffers
    buffers: dict[Node, list] = {}
    for (node, nr), grad in zip(roots, root_grads):
        if wanted is not None and node not in wanted:
            continue
        _add_to_buffer(buffers, node, nr, grad)
    ready: list[tuple[int, int, Node]] = []
    counter = 0
    for node in dict.fromkeys(root_nodes):
        if node in buffers and dependencies.get(node, 0) == 0:
            heapq.heappush(ready, (-node._sequence_nr, counter, node))
            counter += 1

    captured: list[Tensor | None] = [None] * (len(capture) if capture is not None else 0)
    previous = GRAD.enabled
    GRAD.enabled = create_graph
    try:
        heappush, heappop = heapq.heappush, heapq.heappop
        while ready:
            node = heappop(ready)[2]
            grads = buffers.pop(node, None) or []
            if node._tensor_pre_hooks or node._retains_grad or node.__class__ is AccumulateGrad:
                grads = _run_tensor_hooks(node, grads)
            if captures:
                for nr, index in captures.get(node, ()):
                    captured[index] = grads[nr] if nr < len(grads) else None
            if runs is not None and node not in runs:
                continue
            hook = node_hook
            if hook is not None:
                hook.begin(node)
            outputs = _call(node, grads, keep_graph)
            if hook is not None:
                hook.called(node)
            index = -1
            for child, nr in node.next_functions:
                index += 1
                if child is None or (wanted is not None and child not in wanted):
                    continue
                grad = outputs[index]
                if grad is not None:
                    metas = child.input_meta
                    meta = metas[nr] if nr < len(metas) else None
                    if meta is not None and (grad._sizes != meta[0] or grad._dtype is not meta[1]):
                        grad = _fit(node, index, grad, child, nr)
                slots = buffers.get(child)
                if slots is not None and nr < len(slots):  # _add_to_buffer, inlined
                    if grad is not None:
                        old = slots[nr]
                        slots[nr] = grad if old is None else old + grad
                else:
                    _add_to_buffer(buffers, child, nr, grad)
                left = dependencies[child] - 1
                dependencies[child] = left
                if left == 0:
                    heappush(ready, (-child._sequence_nr, counter, child))
                    counter += 1
            if hook is not None:
                hook.end(node)
            # the engine keeps no reference to a gradient it passed on (Note: stealing...)
            outputs = grad = old = None
    finally:
        GRAD.enabled = previous
    return captured


def _add_to_buffer(buffers: dict, node: Node, nr: int, grad: Tensor | None) -> None:
    slots = buffers.get(node)
    if slots is None:
        slots = buffers[node] = [None] * max(len(node.input_meta), nr + 1)
    elif nr >= len(slots):
        slots.extend([None] * (nr + 1 - len(slots)))
    if grad is None:
        return
    old = slots[nr]
    slots[nr] = grad if old is None else old + grad


def _run_tensor_hooks(node: Node, grads: list) -> list:
    if isinstance(node, AccumulateGrad):
        leaf_hooks = node.variable._hooks
        if leaf_hooks and grads and grads[0] is not None:
            for fn in list(leaf_hooks.values()):
                new = fn(grads[0])
                if new is not None:
                    grads[0] = new
    hooks = node._tensor_pre_hooks
    if hooks:
        for nr, fns in hooks.items():
            if nr < len(grads) and grads[nr] is not None:
                for fn in list(fns):
                    new = fn(grads[nr])
                    if new is not None:
                        grads[nr] = new
    retained = node._retains_grad
    if retained:
        for nr, ref in retained.items():
            t = ref()
            if t is not None and nr < len(grads) and grads[nr] is not None:
                g = grads[nr]
                if t._grad is None:
                    t._grad = g.clone() if not GRAD.enabled else g
                else:
                    t._grad = t._grad + g
    return grads


def _call(node: Node, grads: list, keep_graph: bool) -> Sequence[Any]:
    if node._pre_hooks:
        for hook in list(node._pre_hooks):
            new = hook(tuple(grads))
            if new is not None:
                grads = list(new)
    if isinstance(node, AccumulateGrad):
        grad = grads[0] if grads else None
        if grad is not None:
            # held by the list `grads` and the name `grad` only (Note: stealing the gradient)
            owned = (type(node) is AccumulateGrad and not node._hooks
                     and _refcount(grad) <= _ENGINE_ONLY)
            accumulate_into(node.variable, grad, owned)
        return ()
    for g in grads:
        if g is not None:
            # a released node runs again: only a freed saved value it reads raises (Note: a
            # second backward, in graph.py)
            outputs: Sequence[Any] = node.apply(tuple(grads))
            break
    else:  # no gradient arrived: nothing flows on
        outputs = [None] * len(node.next_functions)
    if node._hooks:
        for hook in list(node._hooks):
            new = hook(tuple(outputs), tuple(grads))
            if new is not None:
                outputs = new
    if not keep_graph:
        node.release_variables()
    if ANOMALY[0] and ANOMALY[1]:
        check_outputs(node, outputs)
    if len(outputs) != len(node.next_functions):
        raise RuntimeError(
            f"function {node.name()} returned an incorrect number of gradients (expected "
            f"{len(node.next_functions)}, got {len(outputs)})"
        )
    return outputs


# --- the public entry points ---------------------------------------------------------------

def _as_tuple(value: Any) -> tuple:
    if value is None:
        return ()
    if isinstance(value, Tensor):
        return (value,)
    return tuple(value)


def _make_grads(outputs: tuple, grads: tuple, is_grads_batched: bool = False) -> list:
    result = []
    for i, (out, grad) in enumerate(zip(outputs, grads)):
        if grad is None:
            if not out.requires_grad:
                result.append(None)
                continue
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out._dtype.is_floating_point:
                raise RuntimeError(
                    "grad can be implicitly created only for real scalar outputs but got "
                    f"{out._dtype}"
                )
            ones_like = _ONES_LIKE.entry or _ONES_LIKE.resolve()
            result.append(ones_like.call(out, None, None, None, False, preserve_format))
            continue
        if not isinstance(grad, Tensor):
            raise TypeError(
                "gradients can be either Tensors or None, but got " + type(grad).__name__
            )
        if grad._sizes != out._sizes and not is_grads_batched:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {Size(grad._sizes)} and "
                f"output[{i}] has a shape of {Size(out._sizes)}."
            )
        if grad._dtype.is_complex != out._dtype.is_complex:
            raise RuntimeError(
                f"For complex Tensors, both grad_output and output are required to have the "
                f"same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of "
                f"{grad._dtype} and output[{i}] has a dtype of {out._dtype}."
            )
        result.append(grad)
    return result


def _roots(outputs: tuple) -> list[tuple[Node, int]]:
    roots = []
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            raise TypeError(f"element {i} of tensors must be a Tensor, not {type(out).__name__}")
        node, nr = gradient_edge(out)
        if node is None:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
        roots.append((node, nr))
    return roots


def backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables: Any = None,
    inputs: Any = None,
) -> None:
    """Accumulate into `.grad` of the leaves the gradient of `tensors` (PyTorch's backward)."""
    if grad_variables is not None:
        grad_tensors = grad_variables
    outputs = _as_tuple(tensors)
    grads = _as_tuple(grad_tensors) or (None,) * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(
            f"got {len(grads)} tensors and {len(outputs)} gradients"
        )
    if retain_graph is None:
        retain_graph = create_graph
    wanted_inputs = _as_tuple(inputs)
    if inputs is not None and not wanted_inputs:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    made = _make_grads(outputs, grads)
    roots = _roots(outputs)
    if not wanted_inputs:
        execute(roots, made, retain_graph, create_graph)
        return
    capture: list[tuple[Node | None, int]] = []
    leaves: list[AccumulateGrad] = []
    nonleaf: list[tuple[int, Tensor]] = []
    for t in wanted_inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        edge = gradient_edge(t)
        if t.grad_fn is None:
            leaves.append(edge[0])
        else:
            nonleaf.append((len(capture), t))
            capture.append(edge)
    got = execute(roots, made, retain_graph, create_graph, capture, leaves)
    for index, t in nonleaf:
        g = got[index]
        if g is not None:
            accumulate_into(t, g)


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """The gradients of `outputs` with respect to `inputs` (nothing accumulated in `.grad`)."""
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    if not ins:
        raise RuntimeError("grad requires non-empty inputs.")
    grads = _as_tuple(grad_outputs) or (None,) * len(outs)
    if len(grads) != len(outs):
        raise RuntimeError(
            f"grad_outputs should be a sequence of length {len(outs)}, got {len(grads)}"
        )
    if retain_graph is None:
        retain_graph = create_graph
    for t in ins:
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): inputs must be Tensors, not {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    made = _make_grads(outs, grads, is_grads_batched)
    roots = _roots(outs)
    capture = [gradient_edge(t) for t in ins]
    got = execute(roots, made, retain_graph, create_graph, capture)
    result = []
    for i, (t, g) in enumerate(zip(ins, got)):
        if g is None:
            if materialize_grads:
                from pyaten.core.views import empty_tensor

                g = empty_tensor(t._sizes, t._dtype, t._device)
                g.zero_()
            elif not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in "
                    "the graph. Set allow_unused=True if this is the desired behavior."
                )
        elif g._dtype is not t._dtype or g._sizes != t._sizes:
            g = sum_to(g, t._sizes).to(t._dtype)
        result.append(g)
    return tuple(result)


_RUN_GRAPH = None  # Note: the compiled engine loop
if ACCEL_GRAPH is not None:
    ACCEL_GRAPH.setup_engine(Node, AccumulateGrad, _run_tensor_hooks, _call, _fit, ANOMALY)
    _RUN_GRAPH = ACCEL_GRAPH.run_graph
