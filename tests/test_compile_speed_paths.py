"""The compiled training step's fast paths against the general ones: the fused cross-entropy
C kernels (pyaten/_inductor/cross_entropy.py), loops called on array objects (cloops.py),
saved values through identities (pyaten/_dynamo/aot.py) and SGD's one pass: each gives
eager's results (and PyTorch's where the program runs on both), errors included."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_compile import _cache_dir  # noqa: F401 - one kernel cache for the compile tests

import pyaten
import pyaten.nn as nn
import pyaten.nn.functional as F
from pyaten._inductor import cloops

needs_cc = pytest.mark.skipif(not cloops.available(), reason="no C compiler")


def _mlp(lib, seed=0):
    lib.manual_seed(seed)
    return lib.nn.Sequential(lib.nn.Linear(12, 16), lib.nn.ReLU(), lib.nn.Linear(16, 5))


def _twin(model):
    twin = _mlp(torch)
    with torch.no_grad():
        for p, q in zip(twin.parameters(), model.parameters()):
            p.copy_(torch.from_numpy(q.detach().numpy().copy()))
    return twin


def _steps(model, loss_fn, optimizer, x, y, n=3):
    losses = []
    for _ in range(n):
        optimizer.zero_grad()
        loss = loss_fn(x, y)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach().numpy().copy())
    grads = [p.grad.detach().numpy().copy() for p in model.parameters()]
    return losses, grads, [p.detach().numpy().copy() for p in model.parameters()]


def _assert_runs_close(a, b, tol=1e-5):
    for left, right in zip(a, b):
        for u, v in zip(left, right):
            assert u.shape == v.shape and u.dtype == v.dtype
            np.testing.assert_allclose(u, v, rtol=tol, atol=tol)


def _data(seed, n=8, ignore=None):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 12)).astype(np.float32)
    y = rng.integers(0, 5, n)
    if ignore is not None:
        y[::3] = ignore
    return x, y


@pytest.mark.parametrize("reduction, ignore", [("mean", -100), ("sum", -100), ("mean", 2),
                                               ("sum", 4)])
def test_mlp_training_steps_equal_eager_and_torch(reduction, ignore):
    x, y = _data(1, ignore=ignore if ignore >= 0 else None)
    results = []
    for compiled in (False, True):
        model = _mlp(pyaten)
        opt = pyaten.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def loss_fn(a, b, model=model):
            return F.cross_entropy(model(a), b, reduction=reduction, ignore_index=ignore)

        fn = pyaten.compile(loss_fn) if compiled else loss_fn
        results.append(_steps(model, fn, opt, pyaten.tensor(x), pyaten.tensor(y)))
        if compiled:
            assert fn.report.captures == 1 and fn.report.compiled_calls == 2
    _assert_runs_close(results[0], results[1])
    model = _twin(_mlp(pyaten))
    topt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    expected = _steps(model, lambda a, b: torch.nn.functional.cross_entropy(
        model(a), b, reduction=reduction, ignore_index=ignore), topt, torch.tensor(x),
        torch.tensor(y))
    _assert_runs_close(results[1], expected, tol=1e-4)


@needs_cc
def test_cross_entropy_pairs_run_as_one_c_function_each():
    model = _mlp(pyaten)
    fn = pyaten.compile(lambda a, b: F.cross_entropy(model(a), b))
    x, y = _data(2)
    fn(pyaten.tensor(x), pyaten.tensor(y)).backward()
    run = fn.last_entry.run
    forward, backward = run.forward_fn, run.backward_fn
    assert "int x0(" in forward.source() and "int x0(" in backward.source()
    # the pair is one step each way: one call fewer than its operator nodes, and one more
    # fewer in backward, where the bias gradient's batch sum is computed with it; a fused
    # loop is one call for its nodes
    for graph, folded in ((forward, 1), (backward, 2)):
        calls = [line for line in graph.code.splitlines() if " = c" in line]
        nodes = [n for n in graph.graph_module.graph.nodes
                 if n.op == "call_function" and "getitem" not in n.name]
        in_loops = sum(len(g.members) + (g.reduction is not None) - 1 for g in graph.groups)
        assert len(calls) == len(nodes) - folded - in_loops
    assert "detach" not in forward.graph_module.code
    assert "detach" not in backward.graph_module.code


@pytest.mark.parametrize("dtype", [pyaten.float32, pyaten.float64])
@settings(max_examples=6, deadline=None)
@given(n=st.integers(1, 9), c=st.integers(1, 7), seed=st.integers(0, 2**16),
       scale=st.sampled_from([1.0, 30.0]))
def test_fused_cross_entropy_matches_eager_values_and_gradients(dtype, n, c, seed, scale):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((n, c)) * scale
    target = rng.integers(0, c, n)

    def loss(z, t):
        return F.cross_entropy(z * 1.0, t)

    compiled = pyaten.compile(loss)
    outs = []
    for fn in (loss, compiled, compiled):
        z = pyaten.tensor(logits, dtype=dtype, requires_grad=True)
        value = fn(z, pyaten.tensor(target))
        value.backward()
        outs.append((value.detach().numpy(), z.grad.numpy()))
    tz = torch.tensor(logits, dtype=getattr(torch, dtype.name), requires_grad=True)
    torch.nn.functional.cross_entropy(tz, torch.tensor(target)).backward()
    tol = 1e-5 if dtype is pyaten.float32 else 1e-12
    for value, grad in outs[1:]:
        assert value.dtype == outs[0][0].dtype and grad.dtype == outs[0][1].dtype
        np.testing.assert_allclose(value, outs[0][0], rtol=tol, atol=tol)
        np.testing.assert_allclose(grad, outs[0][1], rtol=tol, atol=tol)
        np.testing.assert_allclose(grad, tz.grad.numpy(), rtol=tol * 10, atol=tol * 10)


def test_fused_cross_entropy_every_target_ignored_gives_eager_nan():
    model = _mlp(pyaten)

    def loss(a, b):
        return F.cross_entropy(model(a), b, ignore_index=1)

    compiled = pyaten.compile(loss)
    x = pyaten.tensor(_data(3)[0])
    y = pyaten.ones(8, dtype=pyaten.int64)
    for _ in range(2):
        value = compiled(x, y)
        assert np.isnan(value.item()) and np.isnan(loss(x, y).item())


def test_fused_cross_entropy_bad_target_raises_eager_error():
    model = _mlp(pyaten)

    def loss(a, b):
        return F.cross_entropy(model(a), b)

    compiled = pyaten.compile(loss)
    x = pyaten.tensor(_data(4)[0])
    compiled(x, pyaten.zeros(8, dtype=pyaten.int64)).backward()  # captured
    bad = pyaten.tensor([0, 1, 2, 7, 0, 1, 2, 3])
    with pytest.raises(IndexError) as eager_error:
        loss(x, bad)
    with pytest.raises(IndexError) as compiled_error:
        compiled(x, bad)
    assert str(compiled_error.value) == str(eager_error.value) == "Target 7 is out of bounds."
    with pytest.raises(IndexError, match="Target -3 is out of bounds."):
        compiled(x, pyaten.tensor([0, 1, 2, -3, 0, 1, 2, 3]))


def test_saved_values_through_detach_are_saved_once():
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    fn = pyaten.compile(lambda a: model(a).relu().sum())
    x = pyaten.randn(4, 6)
    fn(x).backward()
    run = fn.last_entry.run
    outputs = run.forward_fn.graph_module.graph.nodes[-1].args[0]
    assert len(set(outputs)) == len(outputs)
    assert run.n_saved == len(outputs) - 1


def test_loops_without_the_c_compiler_give_the_same_step(monkeypatch):
    """The C path (arrays passed as objects, fused cross-entropy) against the general one."""
    x, y = _data(5)
    results = []
    for no_cc in (False, True):
        if no_cc:
            monkeypatch.setenv("PYATEN_NO_CC", "1")
        model = _mlp(pyaten)
        opt = pyaten.optim.SGD(model.parameters(), lr=0.05)
        fn = pyaten.compile(lambda a, b, model=model: F.cross_entropy(model(a), b))
        results.append(_steps(model, fn, opt, pyaten.tensor(x), pyaten.tensor(y)))
    _assert_runs_close(results[0], results[1], tol=1e-6)


@pytest.mark.parametrize("dtype", [pyaten.float32, pyaten.float64])
@pytest.mark.parametrize("options", [{}, {"momentum": 0.9}, {"momentum": 0.5, "dampening": 0.25},
                                     {"momentum": 0.9, "weight_decay": 0.1},
                                     {"momentum": 0.9, "nesterov": True}, {"maximize": True}])
def test_sgd_one_pass_equals_the_operators_bit_for_bit(dtype, options):
    rng = np.random.default_rng(7)
    shapes = [(64, 70), (70,), (3, 5)]
    values = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(3)]
    runs = []
    for foreach in (None, False):  # None: the one pass where it applies; False: operators
        params = [pyaten.tensor(v, dtype=dtype, requires_grad=True) for v in values]
        opt = pyaten.optim.SGD(params, lr=0.03, foreach=foreach, **options)
        for step in grads:
            for p, g in zip(params, step):
                p.grad = pyaten.tensor(g, dtype=dtype)
            opt.step()
        buffers = [opt.state[p].get("momentum_buffer") for p in params]
        runs.append(([p.detach().numpy().copy() for p in params],
                     [None if b is None else b.numpy().copy() for b in buffers],
                     [p._version for p in params],
                     [None if b is None else b._version for b in buffers]))
    fused, reference = runs
    for a, b in zip(fused[0] + fused[1], reference[0] + reference[1]):
        assert (a is None and b is None) or (a.dtype == b.dtype and np.array_equal(a, b))
    assert fused[2:] == reference[2:]
    tparams = [torch.tensor(v, dtype=getattr(torch, dtype.name), requires_grad=True)
               for v in values]
    topt = torch.optim.SGD(tparams, lr=0.03, **options)
    for step in grads:
        for p, g in zip(tparams, step):
            p.grad = torch.tensor(g, dtype=getattr(torch, dtype.name))
        topt.step()
    for a, b in zip(fused[0], tparams):
        np.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-6, atol=1e-6)
    assert fused[2] == [p._version for p in tparams]


def test_sgd_one_pass_is_taken_where_it_applies():
    from pyaten.native import compiled
    from pyaten.optim import _fused

    p = pyaten.randn(100, requires_grad=True)
    p.grad = pyaten.randn(100)
    opt = pyaten.optim.SGD([p], lr=0.1, momentum=0.9)
    group = opt.param_groups[0]
    state = opt.state[p]
    assert not _fused.sgd_update(p, p.grad, state, group)  # first step: the buffer is a clone
    opt.step()
    taken = _fused.sgd_update(p, p.grad, state, group)
    assert taken == (compiled.available() is not None)
    assert not _fused.fusable(dict(group, foreach=False))
    assert not _fused.fusable(dict(group, weight_decay=0.1))


@pytest.mark.parametrize("dtype", [pyaten.float32, pyaten.float64])
@pytest.mark.parametrize("no_cc", [False, True])
def test_loop_ending_with_a_sum_over_rows_equals_eager(dtype, no_cc, monkeypatch):
    if no_cc:
        monkeypatch.setenv("PYATEN_NO_CC", "1")

    def f(x, g):
        h = (x * 2.0).relu() + g
        return h.sum(0, keepdim=True), h.sum(0), (g * x).mean(0), h.t() * 1.0

    x = pyaten.tensor(np.random.default_rng(3).standard_normal((37, 19)), dtype=dtype)
    g = pyaten.tensor(np.random.default_rng(4).standard_normal((37, 19)), dtype=dtype)
    compiled = pyaten.compile(f)
    expected = f(x, g)
    for _ in range(2):
        for got, want in zip(compiled(x, g), expected):
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    entry = compiled.last_entry.run
    if hasattr(entry, "groups") and entry.groups:
        assert any(group.reduce_rows for group in entry.groups)
