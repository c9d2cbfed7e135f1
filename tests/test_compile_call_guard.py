"""The compiled call's generated guard (Note: the call guard, pyaten/_dynamo/guards.py) against
the general `GuardSet.check`: wherever the generated guard passes a call, `check` passes it
too; it passes the calls a capture was made from (so the lean path is the one that runs); and
a sequence of calls captures exactly as often as the general path decides (a new shape,
dtype, stride, requires_grad, grad mode, autocast, value or module state, and nothing else)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
from pyaten._dynamo.eval_frame import _global_state
from pyaten.utils import _pytree


def _variant(kind: str):
    """A call's arguments: a tensor varied by `kind`, and an int."""
    base = pyaten.arange(12.0).reshape(3, 4)
    if kind == "same":
        return (base, 2)
    if kind == "shape":
        return (pyaten.arange(8.0).reshape(2, 4), 2)
    if kind == "dtype":
        return (base.double(), 2)
    if kind == "stride":
        return (pyaten.arange(12.0).reshape(4, 3).t(), 2)
    if kind == "requires_grad":
        return (base.clone().requires_grad_(), 2)
    if kind == "value":
        return (base, 3)
    if kind == "float":
        return (base, 2.0)
    if kind == "no_grad_view":  # requires grad through its base only
        leaf = pyaten.ones(3, 4, requires_grad=True)
        with pyaten.no_grad():
            view = leaf.view(3, 4)
        return (view, 2)
    raise AssertionError(kind)


_KINDS = ("same", "shape", "dtype", "stride", "requires_grad", "value", "float", "no_grad_view")
_MODES = ("grad", "no_grad", "autocast")


def _run(fn, args, mode):
    if mode == "no_grad":
        with pyaten.no_grad():
            return fn(*args)
    if mode == "autocast":
        with pyaten.autocast("cpu"):
            return fn(*args)
    return fn(*args)


def _state(mode):
    if mode == "no_grad":
        with pyaten.no_grad():
            return _global_state()
    if mode == "autocast":
        with pyaten.autocast("cpu"):
            return _global_state()
    return _global_state()


def _agree(compiled, args, mode, module=None):
    """For every entry: the generated guard passes only calls that `check` passes."""
    flat, spec = _pytree.tree_flatten((args, {}))
    state = _state(mode)
    passed = []
    for entry in compiled._entries:
        if entry.call_guard is not None and entry.call_guard(args, state):
            assert entry.check(spec, flat, state, module) is None, entry.call_guard.source
            passed.append(entry)
    return passed


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_KINDS), st.sampled_from(_MODES)),
                min_size=1, max_size=8))
def test_the_call_guard_never_passes_what_check_refuses(calls):
    def f(x, n):
        return (x * n).sin() + 1

    compiled = pyaten.compile(f, dynamic=False)  # (a dynamic entry keeps the general check)
    seen = []
    for kind, mode in calls:
        args = _variant(kind)
        passed = _agree(compiled, args, mode)
        out = _run(compiled, args, mode)
        expected = _run(f, args, mode)
        assert out.dtype == expected.dtype and out.shape == expected.shape
        assert np.allclose(out.detach().float().numpy(), expected.detach().float().numpy(),
                           rtol=1e-2, atol=1e-2)
        # a no_grad view of a base that requires grad guards as a tensor that requires grad
        kind = "requires_grad" if kind == "no_grad_view" else kind
        if (kind, mode) in seen:
            # the same call again: no capture, and the lean path is the one that passed it
            assert passed and compiled.report.captures == len(set(seen))
        else:
            seen.append((kind, mode))
        assert compiled.report.captures == len(set(seen))


def test_a_repeated_call_takes_the_generated_guard():
    compiled = pyaten.compile(lambda x, y: x @ y + 1)
    x, y = pyaten.randn(3, 4), pyaten.randn(4, 2)
    compiled(x, y)
    entry = compiled._entries[0]
    assert entry.call_guard is not None and entry.call_guard((x, y), _global_state())
    assert entry.all_tensors
    assert not entry.call_guard((x, y, 1), _global_state())
    compiled(x, y)
    assert compiled.report.captures == 1 and compiled.report.compiled_calls == 1


def test_keyword_and_nested_arguments_keep_the_general_check():
    compiled = pyaten.compile(lambda xs, scale=1.0: xs[0] * scale + xs[1])
    a, b = pyaten.ones(3), pyaten.ones(3)
    compiled([a, b], scale=2.0)
    assert compiled._entries[0].call_guard is None
    compiled([a, b], scale=2.0)
    compiled([a, b], scale=3.0)
    assert compiled.report.captures == 2 and compiled.report.compiled_calls == 1


def test_a_lifted_parameter_switching_requires_grad_recaptures():
    w = pyaten.nn.Parameter(pyaten.ones(3))
    compiled = pyaten.compile(lambda x: (x * w).sum())
    x = pyaten.ones(3)
    compiled(x)
    w.requires_grad_(False)
    assert not _agree(compiled, (x,), "grad")
    compiled(x)
    w.requires_grad_(True)
    assert len(_agree(compiled, (x,), "grad")) == 1
    compiled(x)
    assert compiled.report.captures == 2 and compiled.report.compiled_calls == 1


@pytest.mark.parametrize("change", ["eval", "replace_parameter", "add_buffer", "add_module",
                                    "no_grad", "input_shape", "nothing"])
def test_module_state_changes_recapture_through_the_generated_guard(change):
    pyaten.manual_seed(0)
    net = pyaten.nn.Sequential(pyaten.nn.Linear(4, 3), pyaten.nn.ReLU())
    compiled = pyaten.compile(net)
    x = pyaten.randn(2, 4)
    compiled(x)
    inner = compiled._compiled
    if change == "eval":
        net.eval()
    elif change == "replace_parameter":
        net[0].weight = pyaten.nn.Parameter(net[0].weight.detach().clone())
    elif change == "add_buffer":
        net[0].register_buffer("extra", pyaten.zeros(1))
    elif change == "add_module":
        net.add_module("tail", pyaten.nn.Identity())
    elif change == "input_shape":
        x = pyaten.randn(5, 4)
    mode = "no_grad" if change == "no_grad" else "grad"
    passed = _agree(inner, (x,), mode, net)
    assert bool(passed) == (change == "nothing")
    out = _run(compiled, (x,), mode)
    assert pyaten.allclose(out, net(x))
    assert inner.report.captures == (1 if change == "nothing" else 2)


def test_a_tensor_subclass_after_a_plain_capture_runs_as_written():
    seen = []

    class Logged(pyaten.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", str(func)))
            return super().__torch_function__(func, types, args, kwargs or {})

    compiled = pyaten.compile(lambda x: (x * 2).relu())
    x = pyaten.ones(3)
    compiled(x)
    out = compiled(x.as_subclass(Logged))
    assert seen and compiled.report.eager_calls == 1 and compiled.report.captures == 1
    assert pyaten.equal(out.as_subclass(pyaten.Tensor), (x * 2).relu())
