"""vmap's fast entry (Note: the fast entry, in pyaten/func/_key.py) against its general path
and against torch.func.vmap: the same values, dtypes, shapes, errors, recorded graphs, mode
and trace output, whichever way a call on BatchedTensors goes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
import pyaten.func as pf
from pyaten.dispatch import trace
from pyaten.func._key import _plan, general_path_only
from pyaten.utils import _python_dispatch as python_dispatch
from tests.test_python_dispatch import _log_mode

UNARY = ["relu", "sigmoid", "tanh", "exp", "neg", "abs", "sin", "sqrt", "floor", "erf"]


def _pair(shape, seed=0, dtype=np.float32):
    array = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return pyaten.tensor(array), torch.tensor(array)


def _both_ways(run):
    """`run()` with the fast entry, then with every call on the general path."""
    fast = run()
    with general_path_only():
        general = run()
    return fast, general


def _same(a, b) -> None:
    assert type(a) is type(b)
    if isinstance(a, (tuple, list)):
        for x, y in zip(a, b, strict=True):
            _same(x, y)
        return
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.requires_grad == b.requires_grad
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def _close_to_torch(got, want, tol=1e-5) -> None:
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=tol, atol=tol)


def test_the_fast_entry_covers_the_mlp_operators() -> None:
    for op in (pyaten.ops.aten.relu.default, pyaten.ops.aten.linear.default,
               pyaten.ops.aten.tanh.default, pyaten.ops.aten.mul.Tensor):
        assert _plan(op._entry)[4] is not None
    # in place, random, views, several tensors: the general path only
    for op in (pyaten.ops.aten.relu_.default, pyaten.ops.aten.add.Tensor,
               pyaten.ops.aten.detach.default, pyaten.ops.aten.bernoulli.default,
               pyaten.ops.aten.t.default):
        assert _plan(op._entry)[4] is None


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("in_dims", [0, 1])
def test_unary_pointwise(name, in_dims) -> None:
    px, tx = _pair((3, 4))
    fast, general = _both_ways(lambda: pf.vmap(getattr(pyaten, name), in_dims=in_dims)(px))
    _same(fast, general)
    _close_to_torch(fast, tf.vmap(getattr(torch, name), in_dims=in_dims)(tx))


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int32])
def test_unary_other_dtypes(dtype) -> None:
    px, tx = _pair((4, 3), dtype=dtype)
    for name in ("neg", "abs", "relu"):
        fast, general = _both_ways(lambda name=name: pf.vmap(getattr(pyaten, name))(px))
        _same(fast, general)
        _close_to_torch(fast, tf.vmap(getattr(torch, name))(tx))


BINARY = ["mul", "div", "maximum", "atan2", "eq", "pow", "fmod"]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("other_shape", [(), (4,), (3, 4), (2, 3, 4)])
def test_binary_pointwise_with_a_plain_tensor(name, other_shape) -> None:
    (px, tx), (po, to) = _pair((5, 3, 4)), _pair(other_shape, 1)
    if name == "pow":
        px, tx = px.abs(), tx.abs()
    for order in ("batched first", "plain first"):
        def run(lib, func, x, o, order=order):
            fn = getattr(lib, name)
            mapped = (lambda a: fn(a, o)) if order == "batched first" else (lambda a: fn(o, a))
            return func.vmap(mapped)(x)

        fast, general = _both_ways(lambda run=run: run(pyaten, pf, px, po))
        _same(fast, general)
        _close_to_torch(fast, run(torch, tf, tx, to))


def test_binary_pointwise_dtypes_and_numbers() -> None:
    (px, tx), (pi, ti) = _pair((4, 3)), _pair((4, 3), 1, np.int64)
    (p0, t0), (po, to) = _pair(4), _pair(3, 2, np.float64)
    cases = [
        (lambda lib, x, o: x * 2, px, tx, None, None),
        (lambda lib, x, o: x / 3, pi, ti, None, None),
        (lambda lib, x, o: lib.mul(x, o), pi, ti, po, to),  # int samples times float64
        (lambda lib, x, o: lib.mul(x, o), p0, t0, po, to),  # 0-dim float32 sample, float64
        (lambda lib, x, o: x > o, px, tx, po, to),
    ]
    for fn, x, tx_, o, to_ in cases:
        fast, general = _both_ways(lambda fn=fn, x=x, o=o: pf.vmap(lambda a: fn(pyaten, a, o))(x))
        _same(fast, general)
        _close_to_torch(fast, tf.vmap(lambda a, fn=fn, o=to_: fn(torch, a, o))(tx_))


def test_both_arguments_batched() -> None:
    (px, tx), (py, ty) = _pair((3, 4)), _pair((3, 4), 1)
    fast, general = _both_ways(lambda: pf.vmap(pyaten.mul)(px, py))
    _same(fast, general)
    _close_to_torch(fast, tf.vmap(torch.mul)(tx, ty))


def test_zero_dim_samples() -> None:
    px, tx = _pair(5)
    fast, general = _both_ways(lambda: pf.vmap(pyaten.sigmoid)(px))
    _same(fast, general)
    _close_to_torch(fast, tf.vmap(torch.sigmoid)(tx))


@pytest.mark.parametrize("bias", ["tensor", "none", "keyword"])
def test_linear(bias) -> None:
    (px, tx), (pw, tw), (pb, tb) = _pair((4, 3, 5)), _pair((6, 5), 1), _pair(6, 2)

    def run(lib, func, x, w, b):
        F = lib.nn.functional
        if bias == "tensor":
            return func.vmap(lambda a: F.linear(a, w, b))(x)
        if bias == "none":
            return func.vmap(lambda a: F.linear(a, w))(x)
        return func.vmap(lambda a: F.linear(a, w, bias=b))(x)

    fast, general = _both_ways(lambda: run(pyaten, pf, px, pw, pb))
    _same(fast, general)
    _close_to_torch(fast, run(torch, tf, tx, tw, tb))


def _mlp(lib):
    F = lib.nn.functional

    def forward(p, x):
        return F.linear(F.relu(F.linear(x, p["w1"], p["b1"])), p["w2"], p["b2"])

    return forward


def _mlp_params():
    shapes = {"w1": (16, 8), "b1": (16,), "w2": (3, 16), "b2": (3,)}
    pairs = {k: _pair(s, i) for i, (k, s) in enumerate(shapes.items())}
    return {k: p for k, (p, _) in pairs.items()}, {k: t for k, (_, t) in pairs.items()}


def test_mlp_forward_and_nested() -> None:
    pp, tp = _mlp_params()
    (px, tx), (px2, tx2) = _pair((5, 8), 9), _pair((2, 5, 8), 10)
    fast, general = _both_ways(lambda: pf.vmap(_mlp(pyaten), in_dims=(None, 0))(pp, px))
    _same(fast, general)
    _close_to_torch(fast, tf.vmap(_mlp(torch), in_dims=(None, 0))(tp, tx))
    # two levels: the outer level's wrappers are the inner level's values
    nested = (lambda lib, func: func.vmap(func.vmap(_mlp(lib), in_dims=(None, 0)),
                                           in_dims=(None, 0)))
    fast, general = _both_ways(lambda: nested(pyaten, pf)(pp, px2))
    _same(fast, general)
    _close_to_torch(fast, nested(torch, tf)(tp, tx2))


def test_batched_weight_takes_the_general_path() -> None:
    (px, tx), (pw, tw) = _pair((3, 4, 5)), _pair((3, 6, 5), 1)
    fast, general = _both_ways(lambda: pf.vmap(pyaten.nn.functional.linear)(px, pw))
    _same(fast, general)
    _close_to_torch(fast, tf.vmap(torch.nn.functional.linear)(tx, tw))


def test_grad_recording() -> None:
    pp, tp = _mlp_params()
    (px, tx), (py, ty) = _pair((6, 8), 3), (pyaten.tensor([0, 1, 2, 0, 1, 2]),
                                            torch.tensor([0, 1, 2, 0, 1, 2]))

    def loss(lib):
        F = lib.nn.functional
        return lambda p, x, y: F.cross_entropy(_mlp(lib)(p, x.unsqueeze(0)), y.unsqueeze(0))

    # per-sample gradients (the wrappers require grad: autograd first)
    fast, general = _both_ways(
        lambda: pf.vmap(pf.grad(loss(pyaten)), in_dims=(None, 0, 0))(pp, px, py))
    want = tf.vmap(tf.grad(loss(torch)), in_dims=(None, 0, 0))(tp, tx, ty)
    for k in pp:
        _same(fast[k], general[k])
        _close_to_torch(fast[k], want[k])

    # grad(vmap(f)): the values require grad, the fast entry's calls are recorded on them
    def mean_out(lib, func):
        return lambda p: func.vmap(_mlp(lib), in_dims=(None, 0))(p, tx if lib is torch
                                                                  else px).sum()

    fast, general = _both_ways(lambda: pf.grad(mean_out(pyaten, pf))(pp))
    want = tf.grad(mean_out(torch, tf))(tp)
    for k in pp:
        _same(fast[k], general[k])
        _close_to_torch(fast[k], want[k])


def test_a_weight_that_requires_grad() -> None:
    (px, _), (pw, _) = _pair((4, 5)), _pair((3, 5), 1)
    pw.requires_grad_(True)

    def run():
        out = pf.vmap(lambda a: pyaten.nn.functional.linear(a, pw).tanh())(px)
        return out, pyaten.autograd.grad(out.sum(), pw)[0]

    fast, general = _both_ways(run)
    _same(fast, general)
    assert fast[0].grad_fn is not None
    with pyaten.no_grad():  # nothing to record: the fast entry takes it
        fast, general = _both_ways(
            lambda: pf.vmap(lambda a: pyaten.nn.functional.linear(a, pw).tanh())(px))
    _same(fast, general)
    assert not fast.requires_grad


def test_parameter_and_subclass_arguments() -> None:
    (px, _), (pw, _) = _pair((4, 5)), _pair((3, 5), 1)
    weight = pyaten.nn.Parameter(pw, requires_grad=False)
    fast, general = _both_ways(
        lambda: pf.vmap(lambda a: pyaten.nn.functional.linear(a, weight))(px))
    _same(fast, general)


def _calls_seen_both_ways(mode_class) -> list:
    """The vmapped MLP run under a mode that records `calls`, both ways: the calls it saw."""
    pp, _ = _mlp_params()
    px, _ = _pair((5, 8), 9)

    def run():
        with mode_class() as mode:
            out = pf.vmap(_mlp(pyaten), in_dims=(None, 0))(pp, px)
        return out, mode.calls

    (fast, fast_calls), (general, general_calls) = _both_ways(run)
    _same(fast, general)
    assert fast_calls == general_calls
    return fast_calls


def test_a_dispatch_mode_sees_the_same_calls() -> None:
    assert "aten.addmm.default" in _calls_seen_both_ways(_log_mode(python_dispatch))


def _names_mode() -> type:
    """A TorchFunctionMode that records the names of the functions it sees in `calls`."""
    from pyaten.overrides import TorchFunctionMode

    class Names(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.calls.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    return Names


def test_a_torch_function_mode_sees_the_same_calls() -> None:
    assert _calls_seen_both_ways(_names_mode()).count("linear") == 2


def test_autocast() -> None:
    pp, _ = _mlp_params()
    px, _ = _pair((5, 8), 9)

    def run():
        with pyaten.autocast("cpu", dtype=pyaten.bfloat16):
            return pf.vmap(_mlp(pyaten), in_dims=(None, 0))(pp, px)

    fast, general = _both_ways(run)
    _same(fast, general)
    assert fast.dtype == pyaten.bfloat16


def test_functionalize_of_vmap() -> None:
    pp, _ = _mlp_params()
    px, _ = _pair((5, 8), 9)
    fast, general = _both_ways(
        lambda: pf.functionalize(pf.vmap(_mlp(pyaten), in_dims=(None, 0)))(pp, px))
    _same(fast, general)


def test_trace_shows_the_rules() -> None:
    x, w = pyaten.randn(4, 3), pyaten.randn(5, 3)
    with trace() as recorded:
        pf.vmap(lambda a: pyaten.nn.functional.linear(a, w).relu())(x)
    notes = [n["ran"] for node in recorded.nodes for n in node.notes if n["kind"] == "vmap"]
    assert notes == ["rule linear (whole composite)", "rule pointwise"]


def test_a_wrapper_used_after_its_vmap() -> None:
    kept = []
    pf.vmap(lambda a: kept.append(a) or a)(pyaten.randn(3, 2))

    def run():
        with pytest.raises(RuntimeError) as info:
            pyaten.relu(kept[0])
        return str(info.value)

    fast, general = _both_ways(run)
    assert fast == general and "outside of the vmap that made it" in fast


def test_randomness_and_in_place_errors_unchanged() -> None:
    x = pyaten.randn(3, 4)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        pf.vmap(lambda a: pyaten.nn.functional.dropout(a.relu(), 0.5))(x)
    with pytest.raises(RuntimeError, match="inplace arithmetic"):
        pf.vmap(lambda a: pyaten.zeros(4).add_(a.relu()))(x)


@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 4), rows=st.integers(1, 3), cols=st.integers(1, 5),
       in_dim=st.integers(0, 2), name=st.sampled_from(UNARY + BINARY + ["linear"]),
       seed=st.integers(0, 2**16))
def test_property_fast_equals_general(batch, rows, cols, in_dim, name, seed) -> None:
    shape = [rows, cols]
    shape.insert(in_dim, batch)
    px, tx = _pair(tuple(shape), seed)
    if name == "linear":
        (pw, tw), (pb, tb) = _pair((2, cols), seed + 1), _pair(2, seed + 2)
        fn = (lambda lib: lambda a: lib.nn.functional.linear(a, pw if lib is pyaten else tw,
                                                               pb if lib is pyaten else tb))
    elif name in BINARY:
        px, tx = px.abs() + 0.5, tx.abs() + 0.5  # pow and fmod of positive values
        (po, to) = _pair((cols,), seed + 3)
        fn = (lambda lib: lambda a: getattr(lib, name)(a, po if lib is pyaten else to))
    else:
        fn = (lambda lib: getattr(lib, name))
    fast, general = _both_ways(lambda: pf.vmap(fn(pyaten), in_dims=in_dim)(px))
    _same(fast, general)
    _close_to_torch(fast, tf.vmap(fn(torch), in_dims=in_dim)(tx))


@pytest.mark.parametrize("shape, in_dims", [((3, 5), 0), ((5, 3), 1), ((3, 0), 0), ((4, 1), 0),
                                            ((2, 3, 4), 1), ((3,), 0)])
def test_wrapper_geometry(shape, in_dims) -> None:
    from pyaten.core.views import storage_nbytes_needed

    seen = []
    pf.vmap(lambda a: seen.append(a) or a, in_dims=in_dims)(pyaten.randn(*shape))
    wrapper = seen[0]
    sample = wrapper.value[0]
    assert wrapper.shape == sample.shape and wrapper.stride() == sample.stride()
    assert wrapper.untyped_storage().nbytes() == storage_nbytes_needed(
        sample._sizes, sample._strides, 0, sample._dtype.itemsize)


def test_vmap_mode_on_inside_and_restored() -> None:
    from pyaten.dispatch import tls
    from pyaten.dispatch.tls import ExcludeDispatchKeyGuard
    from pyaten.func._batched import VMAP_MODE_BIT

    def state():
        return tls.STATE.included, tls.STATE.excluded, len(tls.NONDEFAULT)

    def check(a):
        assert tls.STATE.included & VMAP_MODE_BIT and tls.NONDEFAULT
        return a.relu()

    def fail(a):
        raise ValueError("inside")

    x = pyaten.randn(2, 3)
    for guard in (None, ExcludeDispatchKeyGuard("AutocastCPU"),
                  ExcludeDispatchKeyGuard("ADInplaceOrView")):
        before = state()
        if guard is not None:
            guard.__enter__()
        inside = state()
        pf.vmap(check)(x)
        pf.vmap(pf.vmap(check))(x.reshape(2, 3, 1))
        with pytest.raises(ValueError, match="inside"):
            pf.vmap(fail)(x)
        assert state() == inside
        if guard is not None:
            guard.__exit__(None, None, None)
        assert state() == before
