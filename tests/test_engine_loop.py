"""The compiled engine loop (Note: the compiled engine loop, pyaten/autograd/engine.py):
each program's backward run through `_accel_graph.run_graph` and through
`execute_reference`, in one process, must give the same gradients, the same hook and
accumulation order, the same errors; and one program against torch."""

from __future__ import annotations

import contextlib
import gc

import pytest
import torch

import pyaten
from pyaten.autograd import engine

needs_loop = pytest.mark.skipif(engine._RUN_GRAPH is None, reason="pyaten._accel_graph not built")


@contextlib.contextmanager
def _loop(compiled: bool):
    saved = engine._RUN_GRAPH
    engine._RUN_GRAPH = saved if compiled else None
    try:
        yield
    finally:
        engine._RUN_GRAPH = saved


def _leaf(lib, values, grad=True):
    return lib.tensor(values, requires_grad=grad)


def _diamond(lib, log):
    a = _leaf(lib, [[1.0, -2.0], [3.0, 0.5]])
    b = _leaf(lib, [0.5, 1.5])
    h = a * b + b  # b reaches two nodes, broadcast back to its shape
    h.retain_grad()
    h.register_hook(lambda g: log.append(("h", g.tolist())))
    a.register_hook(lambda g: log.append(("a", g.tolist())))
    y = (h.sigmoid() * h.exp()).sum() + h.sum(0).mul(2).sum()
    y.backward()
    return [a.grad.tolist(), b.grad.tolist(), h.grad.tolist()]


def _node_hooks(lib, log):
    a = _leaf(lib, [1.0, 2.0, 3.0])
    y = a.exp()
    y.grad_fn.register_prehook(lambda go: log.append(("pre", go[0].tolist())))
    y.grad_fn.register_hook(lambda gi, go: (gi[0] * 2,))
    (y * y).sum().backward()
    return a.grad.tolist()


def _accumulate_twice(lib, log):
    a = _leaf(lib, [1.0, 2.0])
    (a * 3).sum().backward()
    first = a.grad  # kept: the second backward adds into a copy
    (a * a).sum().backward()
    return [first.tolist(), a.grad.tolist()]


def _retain_and_release(lib, log):
    a = _leaf(lib, [0.5, -1.0])
    y = (a.exp() * a).sum()
    y.backward(retain_graph=True)
    y.backward()
    try:
        y.backward()
        log.append("third ran")
    except RuntimeError as error:
        log.append(str(error)[:60])
    return a.grad.tolist()


def _version_error(lib, log):
    a = _leaf(lib, [1.0, 2.0])
    s = a.sigmoid()
    w = s * 2
    s.mul_(3)
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
        w.sum().backward()
    return str(info.value)


def _create_graph(lib, log):
    a = _leaf(lib, [0.3, 0.7])
    y = (a.exp() * a * a).sum()
    y.backward(create_graph=True)
    g = a.grad
    a.grad = None
    g.sum().backward()
    return [g.tolist(), a.grad.tolist(), g.grad_fn is not None]


def _views_and_inplace(lib, log):
    a = _leaf(lib, [1.0, 2.0, 3.0, 4.0])
    b = a * 1.0
    v = b[1:3]
    v.mul_(5)
    (b.view(2, 2).t() * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    return a.grad.tolist()


def _non_scalar_and_multiple_roots(lib, log):
    a = _leaf(lib, [1.0, 2.0, 3.0])
    x = a.exp()
    y = a * 2
    lib.autograd.backward([x, y], [lib.ones(3), lib.tensor([1.0, 0.5, 0.25])])
    return a.grad.tolist()


def _no_grad_arrives(lib, log):
    a = _leaf(lib, [1.0, 2.0])
    b = _leaf(lib, [3.0, 4.0])
    y = a.split(1)[0].sum() + b.sum()
    y.backward()
    return [a.grad.tolist(), b.grad.tolist()]


def _anomaly(lib, log):
    p = _leaf(lib, [0.0])
    with lib.autograd.detect_anomaly(check_nan=True):
        with pytest.raises(RuntimeError) as info:
            (p / p).sum().backward()
    return str(info.value).split("\n")[0]


def _custom_function(lib, log):
    class Twice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            log.append(("fn", g.tolist()))
            return g * 2 + x

    a = _leaf(lib, [1.0, -1.0])
    Twice.apply(a.exp()).sum().backward()
    return a.grad.tolist()


def _none_flows_on(lib, log):
    class Stop(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return None

    a = _leaf(lib, [1.0, 2.0])
    b = _leaf(lib, [3.0, 4.0])
    (Stop.apply(a.exp()) + b).sum().backward()  # ExpBackward0 runs with no gradient
    return [a.grad, b.grad.tolist()]


def _wrong_count(lib, log):
    a = _leaf(lib, [1.0, 2.0])
    y = a.exp()
    node = y.grad_fn
    cls = type(node)

    class TooMany(cls):
        __slots__ = ()

        def apply(self, grads):
            return [grads[0], grads[0]]

    node.__class__ = TooMany
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    return str(info.value)


PROGRAMS = [_none_flows_on, _wrong_count, _diamond, _node_hooks, _accumulate_twice,
            _retain_and_release, _version_error, _create_graph, _views_and_inplace,
            _non_scalar_and_multiple_roots, _no_grad_arrives, _anomaly, _custom_function]


@needs_loop
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__.strip("_") for p in PROGRAMS])
def test_compiled_loop_matches_the_reference(program):
    runs = []
    for compiled in (True, False):
        log: list = []
        with _loop(compiled):
            result = program(pyaten, log)
        runs.append((result, log))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("program", [_diamond, _node_hooks, _views_and_inplace,
                                     _non_scalar_and_multiple_roots, _custom_function,
                                     _none_flows_on],
                         ids=["diamond", "node_hooks", "views", "roots", "function", "none"])
def test_loop_matches_torch(program):
    ours: list = []
    theirs: list = []
    got = program(pyaten, ours)
    want = program(torch, theirs)
    assert _close(ours, theirs) and _close(got, want)


def _close(x, y) -> bool:
    if isinstance(x, (list, tuple)):
        return (isinstance(y, (list, tuple)) and len(x) == len(y)
                and all(_close(i, j) for i, j in zip(x, y)))
    if isinstance(x, float):
        return y == pytest.approx(x, rel=1e-5, abs=1e-6)
    return x == y


@needs_loop
@pytest.mark.parametrize("compiled", [True, False])
def test_the_first_gradient_is_stolen_either_way(compiled):
    # Note: stealing the gradient: the engine holds no extra reference, so the gradient
    # MulBackward0 made becomes `.grad` as it is (a post-hook keeps only its id)
    a = _leaf(pyaten, [1.0, 2.0, 3.0])
    y = a * 2
    made = []
    y.grad_fn.register_hook(lambda gi, go: made.append(id(gi[0])) and None)
    gc.collect()
    with _loop(compiled):
        y.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0, 2.0]
    assert made == [id(a.grad)]


@needs_loop
def test_compiled_loop_is_not_used_for_captures_or_the_profiler():
    calls = []
    saved = engine._RUN_GRAPH

    def spy(*args):
        calls.append(len(args))
        return saved(*args)

    engine._RUN_GRAPH = spy
    try:
        a = _leaf(pyaten, [1.0, 2.0])
        pyaten.autograd.grad((a * a).sum(), a)
        (a * a).sum().backward(inputs=[a])
        assert calls == []
        (a * a).sum().backward()
        assert calls == [3]
    finally:
        engine._RUN_GRAPH = saved
