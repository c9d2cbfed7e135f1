"""vmap's binding route (Note: the binding route, in pyaten/func/_key.py): a binding hands a
BatchedTensor straight to the fast entry. Each case runs with the route, without it
(`binding_route_off`) and on the general path alone, against torch.func.vmap: the same
values, dtypes, graphs, mode logs, trace notes and errors."""

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
from pyaten.func._key import binding_route_off, binding_route_reference, general_path_only
from pyaten.native.gen_support import Direct
from pyaten.utils import _python_dispatch as python_dispatch
from tests.test_python_dispatch import _log_mode
from tests.test_vmap_fast import _close_to_torch, _mlp, _mlp_params, _names_mode, _pair

UNARY = ["relu", "sigmoid", "tanh", "exp", "neg", "abs"]
BINARY = ["mul", "div", "maximum", "sub", "gt"]


class python_route:  # noqa: N801 - a context manager, like the route's own switches
    """The bindings call the route's Python reference instead of its C version."""

    def __enter__(self) -> None:
        self._was = Direct.vmap_route
        Direct.vmap_route = binding_route_reference

    def __exit__(self, *exc: object) -> None:
        Direct.vmap_route = self._was


def _three_ways(run):
    """`run()` with the route (and with its Python reference, where the C version is the
    route), without it, and with every call on the general path."""
    routed = run()
    with python_route():
        referenced = run()
    with binding_route_off():
        dispatched = run()
    with general_path_only():
        general = run()
    _same(routed, referenced)
    return routed, dispatched, general


def _same(a, b) -> None:
    assert type(a) is type(b)
    if isinstance(a, (tuple, list)):
        for x, y in zip(a, b, strict=True):
            _same(x, y)
        return
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
        return
    if not isinstance(a, pyaten.Tensor):
        assert a == b
        return
    assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
    assert a.requires_grad == b.requires_grad
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def _all_same(results) -> None:
    for other in results[1:]:
        _same(results[0], other)


def test_the_route_runs_for_the_mlp() -> None:
    pp, tp = _mlp_params()
    px, tx = _pair((5, 8), 9)
    entry = pyaten.ops.aten.linear.default._entry
    entry.__dict__.pop("_vmap_route", None)
    entry.__dict__.pop("_vmap_c", None)
    results = _three_ways(lambda: pf.vmap(_mlp(pyaten), in_dims=(None, 0))(pp, px))
    _all_same(results)
    _close_to_torch(results[0], tf.vmap(_mlp(torch), in_dims=(None, 0))(tp, tx))
    # the route checked the dispatcher's kernel for the vmap key sets: it ran
    assert entry.__dict__.get("_vmap_route") is not None


@pytest.mark.parametrize("name", UNARY)
def test_unary_functions_and_methods(name) -> None:
    px, tx = _pair((3, 4))
    for in_dims in (0, 1):
        results = _three_ways(lambda d=in_dims: pf.vmap(getattr(pyaten, name), in_dims=d)(px))
        _all_same(results)
        _close_to_torch(results[0], tf.vmap(getattr(torch, name), in_dims=in_dims)(tx))
    method = _three_ways(lambda: pf.vmap(lambda a: getattr(a, name)())(px))
    _all_same(method)
    _close_to_torch(method[0], tf.vmap(lambda a: getattr(a, name)())(tx))


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("other_shape", [(4,), (), (3, 4)])
def test_binary_with_a_plain_tensor(name, other_shape) -> None:
    po, to = _pair(other_shape, 1)
    # (3, 4) against a (4,) sample: more dims than the sample, the general path's padding
    for shape, in_dims in (((2, 3, 4), 0), ((3, 4, 2), 2), ((2, 4), 0)):
        px, tx = _pair(shape)
        results = _three_ways(lambda px=px, in_dims=in_dims: pf.vmap(
            lambda a: getattr(pyaten, name)(a, po), in_dims=in_dims)(px))
        _all_same(results)
        _close_to_torch(results[0], tf.vmap(lambda a: getattr(torch, name)(a, to),
                                            in_dims=in_dims)(tx))


def test_linear_forms_and_nested_levels() -> None:
    (px, tx), (pw, tw), (pb, tb) = _pair((4, 5)), _pair((3, 5), 1), _pair((3,), 2)
    F, G = pyaten.nn.functional, torch.nn.functional
    for call, want in (
        (lambda a: F.linear(a, pw), lambda a: G.linear(a, tw)),
        (lambda a: F.linear(a, pw, pb), lambda a: G.linear(a, tw, tb)),
        (lambda a: F.linear(a, pw, None), lambda a: G.linear(a, tw, None)),
        (lambda a: F.linear(a, pw, bias=pb), lambda a: G.linear(a, tw, bias=tb)),
    ):
        results = _three_ways(lambda call=call: pf.vmap(call)(px))
        _all_same(results)
        _close_to_torch(results[0], tf.vmap(want)(tx))
    pp, tp = _mlp_params()
    px2, tx2 = _pair((2, 5, 8), 10)

    def nested(lib, func):
        return func.vmap(func.vmap(_mlp(lib), in_dims=(None, 0)), in_dims=(None, 0))

    results = _three_ways(lambda: nested(pyaten, pf)(pp, px2))
    _all_same(results)
    _close_to_torch(results[0], nested(torch, tf)(tp, tx2))


def test_grad_and_no_grad() -> None:
    pp, tp = _mlp_params()
    px, tx = _pair((6, 8), 3)

    def mean_out(lib, func, x):
        return lambda p: func.vmap(_mlp(lib), in_dims=(None, 0))(p, x).sum()

    results = _three_ways(lambda: pf.grad(mean_out(pyaten, pf, px))(pp))
    _all_same(results)
    want = tf.grad(mean_out(torch, tf, tx))(tp)
    for k in pp:
        _close_to_torch(results[0][k], want[k])
    weight = pp["w1"].detach().requires_grad_(True)

    def run():
        out = pf.vmap(lambda a: pyaten.nn.functional.linear(a, weight).tanh())(px)
        return out, pyaten.autograd.grad(out.sum(), weight)[0]

    _all_same(_three_ways(run))
    with pyaten.no_grad():
        results = _three_ways(lambda: pf.vmap(lambda a: pyaten.nn.functional.linear(
            a, weight).tanh())(px))
    _all_same(results)
    assert not results[0].requires_grad


def _calls_seen(mode_class) -> list:
    pp, _ = _mlp_params()
    px, _ = _pair((5, 8), 9)

    def run():
        with mode_class() as mode:
            out = pf.vmap(_mlp(pyaten), in_dims=(None, 0))(pp, px)
        return out, mode.calls

    results = _three_ways(run)
    _all_same(results)
    return results[0][1]


def test_modes_see_the_same_calls() -> None:
    assert "aten.addmm.default" in _calls_seen(_log_mode(python_dispatch))
    assert _calls_seen(_names_mode()).count("linear") == 2


def test_autocast_and_functionalize() -> None:
    pp, _ = _mlp_params()
    px, _ = _pair((5, 8), 9)

    def run():
        with pyaten.autocast("cpu", dtype=pyaten.bfloat16):
            return pf.vmap(_mlp(pyaten), in_dims=(None, 0))(pp, px)

    results = _three_ways(run)
    _all_same(results)
    assert results[0].dtype == pyaten.bfloat16
    _all_same(_three_ways(
        lambda: pf.functionalize(pf.vmap(_mlp(pyaten), in_dims=(None, 0)))(pp, px)))


def test_trace_notes_and_errors() -> None:
    x, w = pyaten.randn(4, 3), pyaten.randn(5, 3)

    def notes():
        with trace() as recorded:
            pf.vmap(lambda a: pyaten.nn.functional.linear(a, w).relu())(x)
        return [n["ran"] for node in recorded.nodes for n in node.notes
                if n["kind"] == "vmap"]

    assert notes() == ["rule linear (whole composite)", "rule pointwise"]
    with binding_route_off():
        assert notes() == ["rule linear (whole composite)", "rule pointwise"]
    kept = []
    pf.vmap(lambda a: kept.append(a) or a)(pyaten.randn(3, 2))

    def stale():
        with pytest.raises(RuntimeError) as info:
            pyaten.relu(kept[0])
        return str(info.value)

    messages = _three_ways(stale)
    assert messages[0] == messages[1] == messages[2]
    assert "outside of the vmap that made it" in messages[0]


@pytest.mark.filterwarnings("ignore:Warning only once")
def test_a_kernel_registered_at_the_batched_key_runs() -> None:
    from pyaten.library import Library

    x = pyaten.randn(3, 4)
    pf.vmap(pyaten.relu)(x)  # the route has run for relu

    def seven(*args):
        return pyaten.full((4,), 7.0)

    with Library("aten", "IMPL") as lib:
        lib.impl("relu", seven, "FuncTorchVmapMode")
        # the user's kernel above the batched key: the dispatcher's answer, not the route's
        got = pf.vmap(lambda a: pyaten.relu(a) + 0)(x)
        np.testing.assert_array_equal(got.numpy(), np.full((3, 4), 7.0, np.float32))
    _close_to_torch(pf.vmap(pyaten.relu)(x), torch.relu(torch.tensor(x.numpy())))


@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 4), rows=st.integers(1, 3), cols=st.integers(1, 5),
       in_dim=st.integers(0, 2), name=st.sampled_from(UNARY + BINARY + ["linear"]),
       method=st.booleans(), seed=st.integers(0, 2**16))
def test_property_route_equals_dispatcher(batch, rows, cols, in_dim, name, method,
                                          seed) -> None:
    shape = [rows, cols]
    shape.insert(in_dim, batch)
    px, tx = _pair(tuple(shape), seed)
    (pw, tw) = _pair((2, cols), seed + 1) if name == "linear" else _pair((cols,), seed + 1)

    def fn(lib):
        if name == "linear":
            return lambda a: lib.nn.functional.linear(a, pw if lib is pyaten else tw)
        other = pw if lib is pyaten else tw
        if name in BINARY:
            if method:
                return lambda a: getattr(a, name)(other)
            return lambda a: getattr(lib, name)(a, other)
        return (lambda a: getattr(a, name)()) if method else getattr(lib, name)

    results = _three_ways(lambda: pf.vmap(fn(pyaten), in_dims=in_dim)(px))
    _all_same(results)
    _close_to_torch(results[0], tf.vmap(fn(torch), in_dims=in_dim)(tx))


def _same_fields(made, want) -> None:
    """Every Tensor slot and storage field of two data-less tensors equal."""
    from pyaten.core.tensor import Tensor

    for name in Tensor.__slots__:
        if name in ("_storage", "__weakref__", "__dict__"):
            continue
        assert getattr(made, name, "unset") == getattr(want, name, "unset"), name
    for name in ("data", "nbytes", "device", "resizable"):
        assert getattr(made._storage, name) == getattr(want._storage, name), name


def test_the_compiled_wrapper_constructor_matches_the_python_one() -> None:
    from pyaten.core.accel import ACCEL
    from pyaten.core.tensor import Tensor, make_dataless
    from pyaten.func._batched import BATCHED_KEYS, BatchedTensor

    if ACCEL is None:
        pytest.skip("the accelerator is not loaded (PYATEN_NO_ACCEL=1 or not built)")
    value = pyaten.randn(4, 3, 2)
    device = value._device
    shape = ((3, 2), (2, 1), 0, value._dtype, device, device._keyset | BATCHED_KEYS, 24)
    for cls in (BatchedTensor, Tensor):
        made, want = ACCEL.make_dataless(cls, *shape), make_dataless(cls, *shape)
        assert type(made) is cls
        _same_fields(made, want)
    with pytest.raises(TypeError, match="make_dataless"):
        ACCEL.make_dataless(int, *shape)
    with pytest.raises(TypeError, match="8 arguments"):
        ACCEL.make_dataless(BatchedTensor)


def test_the_compiled_batched_wrapper_matches_the_python_one() -> None:
    from pyaten.core.accel import ACCEL
    from pyaten.func._batched import make_batched_reference

    if ACCEL is None:
        pytest.skip("the accelerator is not loaded (PYATEN_NO_ACCEL=1 or not built)")
    base = pyaten.randn(4, 3, 2)
    for value in (base, base.transpose(0, 2), base[:, 1], base[:, :0], base[:, 0, 0],
                  pyaten.randn(4, 3, dtype=pyaten.float64).t(), pyaten.ones(2, 3, device="meta")):
        made, want = ACCEL.make_batched(value, 2), make_batched_reference(value, 2)
        assert type(made) is type(want)
        assert made.value is value and made.level == want.level == 2
        _same_fields(made, want)
    nested = ACCEL.make_batched(ACCEL.make_batched(base, 1), 2)
    assert nested.value.value is base and tuple(nested.shape) == (2,)
    with pytest.raises(TypeError, match="2 arguments"):
        ACCEL.make_batched(base)


def test_the_compiled_route_declines_where_the_reference_does() -> None:
    """Direct calls of both routes, case by case: the same result, or NotImplemented for
    both (grad, forward grads, other tensor kinds, the pair's broadcast and dtype cases)."""
    from pyaten.core.accel import ACCEL

    if ACCEL is None:
        pytest.skip("the accelerator is not loaded (PYATEN_NO_ACCEL=1 or not built)")
    entries = {}
    record = Direct.vmap_route

    def recording(entry, values):
        entries.setdefault(entry.name, entry)
        return record(entry, values)

    Direct.vmap_route = recording
    try:
        x = pyaten.randn(3, 4)
        pf.vmap(lambda a: (a.relu(), pyaten.mul(a, x[0]), pyaten.nn.functional.linear(a, x[:2])))(x)
    finally:
        Direct.vmap_route = record
    relu, mul, linear = (entries[n] for n in ("aten::relu", "aten::mul.Tensor", "aten::linear"))
    grad_weight = pyaten.randn(4, 4, requires_grad=True)
    r = {name: pyaten.randn(shape, dtype=dtype) for name, shape, dtype in (
        ("vec", (4,), pyaten.float32), ("mat", (3, 4), pyaten.float32),
        ("vec64", (4,), pyaten.float64), ("scalar64", (), pyaten.float64),
        ("weight", (2, 4), pyaten.float32), ("bias", (2,), pyaten.float32))}
    meta = pyaten.empty(4, device="meta")

    def cases(a):
        yield relu, (a,)
        yield mul, (a, r["vec"])
        yield mul, (a, r["mat"])  # the sample has fewer dims: declined
        yield mul, (a, None)
        yield mul, (a, grad_weight)  # needs grad: declined
        yield mul, (a, r["vec64"])
        yield mul, (a, meta)  # not plain CPU: declined
        yield mul, (a.sum(), r["scalar64"])  # 0-dim, another dtype: declined
        yield linear, (a, r["weight"], None)
        yield linear, (a, r["weight"], r["bias"])
        yield linear, (a, grad_weight, None)

    def both(a):
        for entry, values in cases(a):
            ours, theirs = ACCEL.vmap_route(entry, values), binding_route_reference(entry, values)
            if theirs is NotImplemented:
                assert ours is NotImplemented, (entry.name, values)
            else:
                assert type(ours) is type(theirs) and ours.level == theirs.level
                assert ours.shape == theirs.shape and ours.stride() == theirs.stride()
                _same(ours.value, theirs.value)
        with pyaten.no_grad():
            assert ACCEL.vmap_route(linear, (a, grad_weight, None)) is not NotImplemented
        with trace():
            assert ACCEL.vmap_route(relu, (a,)) is NotImplemented
        with binding_route_off():
            assert ACCEL.vmap_route(relu, (a,)) is NotImplemented
        return a

    pf.vmap(both)(pyaten.randn(5, 4))
    # outside vmap (the thread's sets are the defaults), and a plain first tensor: declined
    outside = ACCEL.make_batched(pyaten.randn(5, 4), 1)
    assert ACCEL.vmap_route(relu, (outside,)) is NotImplemented
    assert ACCEL.vmap_route(relu, (pyaten.randn(4),)) is NotImplemented


def test_the_compiled_vmap_call_matches_the_reference() -> None:
    """`_vmap._vmap_once` (C where the accelerator is loaded) against its Python reference:
    the same results and errors, and the thread's key sets and level stack restored after
    every call, a failing one included."""
    from pyaten.dispatch import tls
    from pyaten.func import _vmap
    from pyaten.func._batched import current_levels

    x, w = pyaten.randn(4, 3), pyaten.randn(2, 3)
    calls = [
        (lambda a: a.relu(), 0, 0, (x,), {}),
        (lambda a, b: pyaten.nn.functional.linear(a, b), (0, None), 0, (x, w), {}),
        (lambda a: a.sum(), 0, 0, (x,), {}),
        (lambda a: (a, a * 2), 0, (0, 1), (x,), {}),
        (lambda a: a * 2, 1, 0, (x,), {}),  # in_dims 1: the reference's case
        (lambda a: a + 1, -1, 1, (x,), {}),
        (lambda a, *, k: a * k, 0, 0, (x,), {"k": 3}),
        (lambda a: w, 0, 0, (x,), {}),  # an output that does not depend on the batch
        (lambda a: pf.vmap(lambda b: b.exp())(a), 0, 0, (pyaten.randn(2, 3, 4),), {}),
        (lambda a, b: a - b, 0, 0, (x, pyaten.randn(5, 3)), {}),  # mismatched sizes
        (lambda a: a, (0, 0), 0, (x,), {}),  # in_dims of another length
        (lambda a: 3, 0, 0, (x,), {}),  # not a tensor
        (lambda a: a.item(), 0, 0, (x,), {}),  # an error inside
        (lambda a: a, None, 0, (x,), {}),  # no mapped input
    ]
    before = (tls.STATE.included, tls.STATE.excluded, len(tls.NONDEFAULT))
    for func, in_dims, out_dims, args, kwargs in calls:
        outcomes = []
        for once in (_vmap._vmap_once, _vmap.vmap_once_reference):
            try:
                outcomes.append(once(func, in_dims, out_dims, "error", args, kwargs))
            except Exception as error:  # noqa: BLE001 - compared below, class and text
                outcomes.append((type(error), str(error)))
            assert (tls.STATE.included, tls.STATE.excluded, len(tls.NONDEFAULT)) == before
            assert current_levels() == []
        _same(*outcomes)
    # inside a mode's key sets (not the defaults): restored too
    with tls.ExcludeDispatchKeyGuard("AutocastCPU"):
        inside = (tls.STATE.included, tls.STATE.excluded)
        out = _vmap._vmap_once(lambda a: a.relu(), 0, 0, "error", (x,), {})
        _same(out, x.relu())
        assert (tls.STATE.included, tls.STATE.excluded) == inside


def test_threads_keep_their_own_grad_mode_and_levels() -> None:
    """The C route and call read each thread's own key sets, grad mode and level stack (they
    keep one thread's dicts at a time): threads alternating calls get their own answers."""
    import threading

    w = pyaten.randn(2, 3, requires_grad=True)
    x = pyaten.randn(4, 3)
    mapped = pf.vmap(lambda a: pyaten.nn.functional.linear(a, w).relu(), in_dims=0)
    want = pyaten.nn.functional.linear(x, w).relu()
    barrier = threading.Barrier(2, timeout=30)
    failures: list[str] = []

    def worker(grad: bool) -> None:
        try:
            with pyaten.set_grad_enabled(grad):
                for _ in range(20):
                    barrier.wait()
                    out = mapped(x)
                    if out.requires_grad != grad:
                        failures.append(f"requires_grad {out.requires_grad} with grad={grad}")
                    if not pyaten.allclose(out.detach(), want.detach()):
                        failures.append("values")
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append(repr(error))
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(g,)) for g in (True, False)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert failures == []


def test_never_overloads_registers_only_disabled_handlers() -> None:
    from pyaten.core.torch_function import _PLAIN, never_overloads
    from pyaten.func._batched import BatchedTensor
    from pyaten.nn.functional._torch_function import _PLAIN as functional_plain

    assert BatchedTensor in _PLAIN and BatchedTensor in functional_plain

    class Custom(pyaten.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs)

    for cls in (Custom, int, type("Inherits", (BatchedTensor,), {})):
        with pytest.raises(TypeError, match="never_overloads"):
            never_overloads(cls)
    assert Custom not in _PLAIN


def test_an_autograd_alias_keeps_the_wrapper_slots() -> None:
    """Autograd's alias of a saved output keeps a subclass's slot fields (BatchedTensor's
    value and level): what vmap(grad) reads back when it unpacks a saved wrapper."""
    from pyaten.autograd.graph import _alias_without_history
    from pyaten.func._batched import BatchedTensor

    value = pyaten.randn(3, 2)
    wrapper = BatchedTensor(value, 3)
    alias = _alias_without_history(wrapper, differentiable=False)
    assert type(alias) is BatchedTensor and alias is not wrapper
    assert alias.value is value and alias.level == 3 and tuple(alias.shape) == (2,)
    # and end to end: per-sample gradients, where the saved wrappers are unpacked
    w = pyaten.randn(2)
    grads = pf.vmap(pf.grad(lambda x: (x * w).sin().sum()))(value)
    want = [pf.grad(lambda x: (x * w).sin().sum())(value[i]) for i in range(3)]
    _same(grads, pyaten.stack(want))
