"""Functionalization on the Functionalize dispatch key (pyaten/_functionalize/key.py) against
PyTorch 2.13's C++ functionalization: the FunctionalTensorWrapper's key set, torch's helpers
(`_to_functional_tensor`, `_sync`, `_enable_functionalization`...), the programs of
tests/test_functionalize.py run on the key (equal results, no mutating operator below the
key, the same operators as the mode path), and gradients through it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_functionalize import PROGRAMS, REMOVE, _assert_same_tree, _inputs, _is_mutating, _numpy
from torch.fx.experimental.proxy_tensor import make_fx as torch_make_fx

import pyaten
import pyaten._functionalize as pyaten_functionalize
from pyaten._functionalize import (
    FunctionalTensor,
    FunctionalTensorWrapper,
    _disable_functionalization,
    _enable_functionalization,
    _from_functional_tensor,
    _functionalize_commit_update,
    _functionalize_replace,
    _is_functional_tensor,
    _sync,
    _to_functional_tensor,
    dispatch_functionalize,
    functionalize,
)
from pyaten.dispatch import tls
from pyaten.dispatch.keys import DispatchKeySet
from pyaten.fx.experimental.proxy_tensor import make_fx
from pyaten.utils import _pytree
from pyaten.utils._python_dispatch import TorchDispatchMode

IDS = [p[0] for p in PROGRAMS]


class _Record(TorchDispatchMode):
    """The operators that run below the Functionalize key, with no wrapper among their
    arguments."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        leaves = _pytree.tree_leaves((args, kwargs))
        assert not any(isinstance(a, (FunctionalTensorWrapper, FunctionalTensor))
                       for a in leaves), func
        self.calls.append(str(func))
        return func(*args, **kwargs)


def _key_names(t) -> list[str]:
    return [k.name for k in DispatchKeySet.from_raw(t._keyset)]


# -- the wrapper and torch's helpers --------------------------------------------------------------


def test_wrapper_key_set_is_torchs():
    ours = _to_functional_tensor(pyaten.ones(2, 3))
    theirs = torch._to_functional_tensor(torch.ones(2, 3))
    expected = str(torch._C._dispatch_keys(theirs))
    assert expected == "DispatchKeySet(CPU, Functionalize, ADInplaceOrView, AutogradCPU, " \
                       "AutocastCPU)"
    assert f"DispatchKeySet({', '.join(_key_names(ours))})" == expected
    assert type(ours) is FunctionalTensorWrapper and isinstance(ours, pyaten.Tensor)
    assert _is_functional_tensor(ours) and not _is_functional_tensor(pyaten.ones(2))
    assert tuple(ours.shape) == (2, 3) and ours.stride() == (3, 1)
    assert ours.dtype == pyaten.float32 and not ours.requires_grad
    assert repr(ours) == repr(theirs).replace("torch", "pyaten")


def _helpers_program(P, to, enable, disable, sync, unwrap, replace, commit):
    base = P.arange(6.0).reshape(2, 3)
    t = to(base)
    plain = P.full((3,), 7.0)
    enable(reapply_views=True)
    try:
        row = t[1]
        row.mul_(10)
        col = t.t()[0]
        made = P.ones(2)  # a factory under functionalization gives a functional tensor
        made_is_functional = made is not None and (P is torch and torch._is_functional_tensor(
            made) or P is pyaten and _is_functional_tensor(made))
        stale = unwrap(t).tolist()  # no sync yet: the write is still pending
        replace(row, plain)
        commit(row)
    finally:
        disable()
    sync(t)
    sync(col)
    return (stale, unwrap(t).tolist(), unwrap(col).tolist(), base.tolist(),
            made_is_functional)


def test_helpers_match_torch():
    theirs = _helpers_program(
        torch, torch._to_functional_tensor, torch._enable_functionalization,
        torch._disable_functionalization, torch._sync, torch._from_functional_tensor,
        torch._functionalize_replace, torch._functionalize_commit_update)
    ours = _helpers_program(
        pyaten, _to_functional_tensor, _enable_functionalization, _disable_functionalization,
        _sync, _from_functional_tensor, _functionalize_replace, _functionalize_commit_update)
    assert ours == theirs
    assert not tls.tls_is_dispatch_key_included("Functionalize")


def test_wrapper_used_without_enable_still_functionalizes():
    # the key is on the tensor: its operators run functionally with or without the TLS
    x = pyaten.zeros(3)
    t = _to_functional_tensor(x)
    t[1:].add_(2)
    _sync(t)
    assert _from_functional_tensor(t).tolist() == [0.0, 2.0, 2.0]
    assert x.tolist() == [0.0, 0.0, 0.0]
    expected = torch._to_functional_tensor(torch.zeros(3))
    expected[1:].add_(2)
    torch._sync(expected)
    assert torch._from_functional_tensor(expected).tolist() == [0.0, 2.0, 2.0]


@pytest.mark.parametrize("name", ["_sync", "_from_functional_tensor", "_functionalize_sync",
                                  "_functionalize_commit_update"])
def test_helpers_refuse_plain_tensors_as_torch(name):
    with pytest.raises(RuntimeError):
        getattr(torch, name)(torch.ones(2))
    with pytest.raises(RuntimeError, match=name):
        getattr(pyaten_functionalize, name)(pyaten.ones(2))


def test_wrapping_twice_and_replacing_with_a_wrapper_raise_as_torch():
    for P, to, replace in ((torch, torch._to_functional_tensor, torch._functionalize_replace),
                           (pyaten, _to_functional_tensor, _functionalize_replace)):
        t = to(P.ones(2))
        with pytest.raises(RuntimeError):
            to(t)
        with pytest.raises(RuntimeError):
            replace(t, to(P.ones(2)))


def test_mixed_write_raises_torchs_message():
    messages = []
    for P, F in ((torch, torch.func.functionalize), (pyaten, functionalize)):
        outside = P.zeros(3)

        def f(x, outside=outside):
            outside.add_(x)
            return x

        with pytest.raises(RuntimeError) as error:
            F(f)(P.ones(3))
        messages.append(str(error.value))
    tail = "mutating a non-functional tensor with a functional tensor is not allowed. Please " \
           "ensure that all of your inputs are wrapped inside of a functionalize() call."
    assert messages[0].endswith(tail)
    assert messages[1] == f"add_.Tensor: {tail}" or messages[1].endswith(tail)


def test_enable_restores_nothing_else_and_disable_clears():
    before = (tls.STATE.included, tls.STATE.excluded)
    _enable_functionalization()
    assert tls.tls_is_dispatch_key_included("Functionalize")
    _disable_functionalization()
    assert (tls.STATE.included, tls.STATE.excluded) == before


def test_functionalize_leaves_the_thread_as_it_found_it():
    before = (tls.STATE.included, tls.STATE.excluded)

    def f(x):
        assert tls.tls_is_dispatch_key_included("Functionalize")
        assert isinstance(x, FunctionalTensorWrapper)
        raise ValueError("inside")

    with pytest.raises(ValueError, match="inside"):
        functionalize(f)(pyaten.ones(2))
    assert (tls.STATE.included, tls.STATE.excluded) == before


def test_the_key_runs_the_fallback():
    from pyaten.dispatch import dump_table

    assert dump_table("aten::add.Tensor")["Functionalize"] == "fallback"
    t = _to_functional_tensor(pyaten.ones(2))
    with _Record() as mode:
        t.mul_(3)
    assert mode.calls == ["aten.mul.Tensor"]  # the functional variant, on the value
    _sync(t)
    assert _from_functional_tensor(t).tolist() == [3.0, 3.0]


# -- the programs, on the key ---------------------------------------------------------------------


@pytest.mark.parametrize("remove", REMOVE)
@pytest.mark.parametrize(("name", "factory", "shapes"), PROGRAMS, ids=IDS)
def test_programs_on_the_key_equal_eager_and_the_mode_path(name, factory, shapes, remove):
    arrays = _inputs(shapes)
    eager_in = [torch.from_numpy(a.copy()) for a in arrays]
    eager_out = _numpy(factory(torch)(*eager_in))
    seen = []

    def program(*args):
        seen.extend(a for a in args if isinstance(a, pyaten.Tensor))
        return factory(pyaten)(*args)

    runs = []
    for F in (functionalize, dispatch_functionalize):
        ours_in = [pyaten.tensor(a.copy()) for a in arrays]
        with _Record() as mode:
            result = F(program, remove=remove)(*ours_in)
        _assert_same_tree(_numpy(result), _pytree.tree_map(np.asarray, eager_out))
        for ours, eager in zip(ours_in, eager_in):
            np.testing.assert_allclose(ours.numpy(), eager.numpy(), rtol=1e-6)
        runs.append(mode.calls)
    assert all(isinstance(a, FunctionalTensorWrapper) for a in seen[:len(arrays)])
    key_calls, mode_calls = runs
    assert key_calls == mode_calls  # the two paths run the same operators
    mutating = [c for c in key_calls if _is_mutating(_op(c))]
    assert set(mutating) <= {"aten.copy_.default", "aten.resize_.default",
                             "aten.as_strided_.default"}
    if remove == "mutations_and_views":
        views = [c for c in key_calls if c != "aten.lift_fresh.default"
                 and _op(c).is_view]
        assert views == []


def _op(name):
    packet, overload = name.removeprefix("aten.").rsplit(".", 1)
    return getattr(getattr(pyaten.ops.aten, packet), overload)


def test_program_count():
    assert len(PROGRAMS) >= 40


# -- gradients ------------------------------------------------------------------------------------

_FLOAT_PROGRAMS = [p for p in PROGRAMS if p[0] not in {
    "item_after_write", "bitwise_on_ints", "resize_shrink", "resize_input", "resize_grow",
    "out_resize", "out_two_outputs", "arange_out", "div_mixed_dtype", "factory_write",
    "batch_norm_stats", "view_dtype_flatten", "complex_real_view", "view_slice",
}]


def _loss(P, out, inputs):
    total = sum(x.sum() for x in inputs)
    for t in _pytree.tree_leaves(out):
        if isinstance(t, P.Tensor) and t.dtype.is_floating_point and t.requires_grad:
            total = total + (t * t).sum()
    return total


def _grads(P, run, arrays):
    leaves = [P.tensor(a / 4, requires_grad=True) for a in arrays]
    inputs = [x * 1 for x in leaves]  # written by the program: not leaves
    out = run(*inputs)
    _loss(P, out, inputs).backward()
    return [x.grad.numpy() if x.grad is not None else None for x in leaves]


# Programs whose torch.func.functionalize gradient is not eager's: torch raises (no derivative
# for aten::copy) or, for as_strided, gives another value. pyaten's equals eager's.
TORCH_FUNCTIONALIZE_DIFFERS = {
    ("as_strided_add", "mutations"), ("as_strided_add", "mutations_and_views"),
    ("copy_into_select", "mutations"), ("copy_into_select", "mutations_and_views"),
    ("copy_whole", "mutations"), ("copy_whole", "mutations_and_views"),
    ("setitem_slice", "mutations"), ("setitem_slice", "mutations_and_views"),
}
# Programs whose backward raises in torch.func.functionalize and in pyaten's alike: a value
# saved for backward is a view of an input that the final copy_ writes, or detach_copy has no
# derivative; torch has none for floor_divide (eager raises too).
BOTH_RAISE = {
    ("clamp_slice", "mutations"): "modified by an inplace operation",
    ("pow_tensor_", "mutations"): "modified by an inplace operation",
    ("detach_write", "mutations_and_views"): "derivative for aten::detach_copy",
    ("floor_divide_transpose_", "mutations"): "floor_divide",
    ("floor_divide_transpose_", "mutations_and_views"): "floor_divide",
}
# A write through `detach()` replaces the base's value with one that has no history, so no
# gradient reaches the input through it (torch's, with autograd above the key, keeps it).
PYATEN_DIFFERS = {("detach_write", "mutations")}


@pytest.mark.parametrize("remove", REMOVE)
@pytest.mark.parametrize(("name", "factory", "shapes"), _FLOAT_PROGRAMS,
                         ids=[p[0] for p in _FLOAT_PROGRAMS])
def test_gradients_through_the_key_equal_torch(name, factory, shapes, remove):
    arrays = _inputs(shapes)
    ours_run = functionalize(factory(pyaten), remove=remove)
    theirs_run = torch.func.functionalize(factory(torch), remove=remove)
    if (name, remove) in BOTH_RAISE:
        match = BOTH_RAISE[name, remove]
        with pytest.raises(RuntimeError, match=match):
            _grads(torch, theirs_run, arrays)
        with pytest.raises(RuntimeError, match=match):
            _grads(pyaten, ours_run, arrays)
        return
    ours = _grads(pyaten, ours_run, arrays)
    references = []
    try:  # eager, where eager autograd takes the program (no writes into split outputs...)
        references.append(_grads(torch, factory(torch), arrays))
    except RuntimeError:
        assert (name, remove) not in TORCH_FUNCTIONALIZE_DIFFERS
    if (name, remove) in TORCH_FUNCTIONALIZE_DIFFERS:
        try:
            differs = _grads(torch, theirs_run, arrays)
        except RuntimeError:
            pass
        else:
            assert any(not np.allclose(a, b, rtol=1e-5, atol=1e-6)
                       for a, b in zip(differs, references[0]) if a is not None), \
                "now equal: drop the entry"
    else:
        references.append(_grads(torch, theirs_run, arrays))
    same = all(theirs is None and mine is None
               or theirs is not None and mine is not None
               and np.allclose(mine, theirs, rtol=1e-5, atol=1e-6)
               for reference in references for theirs, mine in zip(reference, ours))
    assert same == ((name, remove) not in PYATEN_DIFFERS)


# -- what gets wrapped, and composition with vmap ----------------------------------------------


def _wrapped_flags(P, is_functional):
    closed_over = P.ones(2)

    def f(x):
        flags = [is_functional(closed_over * 2),  # plain inputs only: a plain result
                 is_functional(P.ones(2)),        # a factory: wrapped
                 is_functional(x + closed_over),  # a functional input: wrapped
                 is_functional(x)]
        return x, flags

    return f


def test_results_are_wrapped_as_torchs():
    _, theirs = torch.func.functionalize(_wrapped_flags(torch, torch._is_functional_tensor))(
        torch.ones(2))
    _, ours = functionalize(_wrapped_flags(pyaten, _is_functional_tensor))(pyaten.ones(2))
    assert ours == theirs == [False, True, True, True]


def _batched_program(P):
    def f(x):
        y = x.clone()
        y[1:].mul_(2)
        x.add_(1)
        return y * x
    return f


def test_functionalize_of_vmap_matches_torch():
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    theirs_in, ours_in = torch.from_numpy(array.copy()), pyaten.tensor(array.copy())
    theirs = torch.func.functionalize(torch.vmap(_batched_program(torch)))(theirs_in)
    with _Record() as mode:
        ours = functionalize(pyaten.func.vmap(_batched_program(pyaten)))(ours_in)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(ours_in.numpy(), theirs_in.numpy())
    assert [c for c in mode.calls if _is_mutating(_op(c))] == ["aten.copy_.default"]


def test_top_level_helpers_are_torchs_names():
    for name in ("_to_functional_tensor", "_from_functional_tensor", "_is_functional_tensor",
                 "_sync", "_functionalize_sync", "_functionalize_replace",
                 "_functionalize_commit_update", "_enable_functionalization",
                 "_disable_functionalization", "_functionalize_has_data_mutation",
                 "_functionalize_has_metadata_mutation", "_functionalize_is_multi_output_view",
                 "_functionalize_mutation_counter"):
        assert hasattr(torch, name)
        assert getattr(pyaten, name) is getattr(pyaten_functionalize, name)


def test_explain_notes_what_the_key_did():
    def f(x):
        x[1:].add_(1)
        return x * 2

    with pyaten.explain() as report:
        functionalize(f)(pyaten.ones(3))
    text = " ".join(str(report).split())
    assert "kernel functionalize_fallback" in text
    assert "mutation: runs aten.add.Tensor and commits the result" in text
    assert "view: a new functional tensor of the same storage" in text


def _bookkeeping(P, F):
    def state(t):
        return (F._functionalize_has_data_mutation(t), F._functionalize_has_metadata_mutation(t),
                F._functionalize_is_multi_output_view(t), F._functionalize_mutation_counter(t))

    a, b, c, d = (F._to_functional_tensor(P.zeros(4, 4)) for _ in range(4))
    seen = []
    F._enable_functionalization(reapply_views=True)
    try:
        seen.append(state(a))
        v = a[1]
        v.add_(1)
        seen += [state(a), state(v)]
        a.mul_(2)
        seen.append(state(a))
        b.t_()
        seen.append(state(b))
        parts = c.split(2)
        seen += [state(parts[0]), state(parts[0][1]), state(c)]
        d.resize_(5, 5)
        seen.append(state(d))
    finally:
        F._disable_functionalization()
    F._sync(a)
    seen.append(state(a))
    return seen


def test_bookkeeping_queries_match_torch():
    assert _bookkeeping(pyaten, pyaten_functionalize) == _bookkeeping(torch, torch)


# -- a transform inside functionalize: autograd above the key, on the wrappers --------------------


def _grad_of_program(P, factory):
    program = factory(P)

    def loss(*xs):
        inputs = [x * 1 for x in xs]  # written by the program: not the transform's inputs
        out = program(*inputs)
        total = sum((x * x).sum() for x in inputs)
        for t in _pytree.tree_leaves(out):
            if isinstance(t, P.Tensor) and t.dtype.is_floating_point:
                total = total + (t * t).sum()
        return total

    return loss


def _writes_through_a_view(factory, shapes):
    """Whether the program writes through a view of a tensor that requires grad (what
    remove="mutations_and_views" refuses to record), found by running it eagerly."""
    seen = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            for i, arg in enumerate(func._schema.arguments):
                value = args[i] if i < len(args) else kwargs.get(arg.name)
                if arg.annotation is not None and arg.annotation.is_write \
                        and isinstance(value, pyaten.Tensor) and value._base is not None:
                    seen.append(func)
            return func(*args, **kwargs)

    with Spy():
        try:
            factory(pyaten)(*[pyaten.tensor(a) * 1 for a in _inputs(shapes)])
        except RuntimeError:  # eager refuses the program later on: the writes seen so far
            pass
    return bool(seen)


@pytest.mark.parametrize("remove", REMOVE)
@pytest.mark.parametrize(("name", "factory", "shapes"), _FLOAT_PROGRAMS,
                         ids=[p[0] for p in _FLOAT_PROGRAMS])
def test_functionalize_of_grad_matches_torch(name, factory, shapes, remove):
    arrays = [a / 4 for a in _inputs(shapes)]
    argnums = tuple(range(len(arrays)))

    def ours():
        return functionalize(
            pyaten.func.grad(_grad_of_program(pyaten, factory), argnums=argnums),
            remove=remove)(*[pyaten.tensor(a.copy()) for a in arrays])

    try:
        theirs = torch.func.functionalize(
            torch.func.grad(_grad_of_program(torch, factory), argnums=argnums), remove=remove)(
            *[torch.from_numpy(a.copy()) for a in arrays])
    except RuntimeError:  # torch refuses (writes into split outputs, out= with grad...)
        with pytest.raises(RuntimeError):  # NotImplementedError included
            ours()
        return
    if remove == "mutations_and_views" and _writes_through_a_view(factory, shapes):
        with pytest.raises(NotImplementedError, match="use remove='mutations'"):
            ours()
        return
    for a, b in zip(ours(), theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def _saved_then_written(P):
    def f(x):
        y = x * 1
        z = y * y  # saves y
        y.add_(1)  # writes it
        return z.sum()
    return f


def test_write_into_a_saved_wrapper_is_refused_as_torch():
    # a write is a new version of the wrapper (as ADInplaceOrView counts it), so autograd
    # above the key refuses the saved value, as torch's does, instead of a wrong gradient
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        torch.func.functionalize(torch.func.grad(_saved_then_written(torch)))(torch.ones(3))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        functionalize(pyaten.func.grad(_saved_then_written(pyaten)))(pyaten.ones(3))
    t = _to_functional_tensor(pyaten.ones(3))
    view = t[1:]
    view.add_(1)
    assert t._version == view._version == 1  # one counter for a base and its views


def test_reading_a_wrapper_as_torch():
    results = []
    for P, to in ((torch, torch._to_functional_tensor), (pyaten, _to_functional_tensor)):
        t = to(P.arange(3.0))
        with pytest.raises(RuntimeError, match="unallocated storage") as error:
            t.tolist()
        results.append((float(t[1]), t[2].item(), str(t).replace(P.__name__, "P"),
                        str(error.value)))
    assert results[0] == results[1]


@pytest.mark.parametrize("remove", REMOVE)
def test_closed_over_parameter_written_through_a_view_gets_torchs_gradient(remove):
    array = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    grads = []
    for P, F in ((torch, torch.func.functionalize), (pyaten, functionalize)):
        weight = P.tensor([0.5, -2.0, 3.0], requires_grad=True)

        def f(x, weight=weight):
            h = x * 2
            h[1].add_(weight)  # a write through a view, from a closed-over leaf
            h.t()[0].mul_(weight[0])
            return (h * h).sum()

        x = P.tensor(array, requires_grad=True)
        F(f, remove=remove)(x).backward()
        grads.append((x.grad.numpy(), weight.grad.numpy()))
    for ours, theirs in zip(grads[1], grads[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5)


# -- make_fx of functionalize on the key against torch's (all programs: test_functionalize.py) ---

_GRAPH_CASES = {"view_of_view", "slice_diagonal", "transpose_select", "permute_add",
                "mutate_two_inputs", "out_into_view", "split_fill", "unbind_add",
                "resize_input", "inplace_t_input", "expand_write", "as_strided_add"}
_GRAPH_PROGRAMS = [p for p in PROGRAMS if p[0] in _GRAPH_CASES]


@pytest.mark.parametrize("remove", REMOVE)
@pytest.mark.parametrize(("name", "factory", "shapes"), _GRAPH_PROGRAMS,
                         ids=[p[0] for p in _GRAPH_PROGRAMS])
def test_make_fx_of_the_key_records_torchs_operators(name, factory, shapes, remove):
    arrays = _inputs(shapes)
    theirs = torch_make_fx(torch.func.functionalize(factory(torch), remove=remove))(
        *[torch.from_numpy(a.copy()) for a in arrays])
    ours = make_fx(functionalize(factory(pyaten), remove=remove))(
        *[pyaten.tensor(a.copy()) for a in arrays])
    targets = [[str(n.target) for n in g.graph.nodes if n.op == "call_function"]
               for g in (ours, theirs)]
    assert targets[0] == targets[1]
    assert not any(isinstance(n.meta.get("val"), FunctionalTensorWrapper)
                   for n in ours.graph.nodes)


def test_graph_cases_exist():
    assert len(_GRAPH_PROGRAMS) == len(_GRAPH_CASES)
