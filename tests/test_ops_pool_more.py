"""fractional_max_pool2d/3d, adaptive_max_pool3d and max_unpool3d against PyTorch: values and
indices for every floating dtype (hypothesis over shapes), seeded calls that draw their own
samples (PyTorch's random stream, so PyTorch's exact windows), OpInfo samples, gradients,
out= forms, Meta shapes, the nn modules, and PyTorch's errors word for word.
"""

from __future__ import annotations

import itertools
import warnings

import hypothesis.strategies as st
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from _grad_helpers import check_grads
from _helpers import assert_same, compare_samples, from_torch, same_error
from hypothesis import given, settings

import pyaten
import pyaten.nn.functional as F
from pyaten.ops import aten

DTYPES = ["float32", "float64", "float16", "bfloat16"]
TA = torch.ops.aten


def _pair(t: torch.Tensor) -> tuple[torch.Tensor, pyaten.Tensor]:
    return t, from_torch(t)


def _randn(*shape, dtype="float32", seed=0) -> tuple[torch.Tensor, pyaten.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return _pair(torch.randn(*shape, generator=g).to(getattr(torch, dtype)))


def _rand(*shape, dtype="float32", seed=1) -> tuple[torch.Tensor, pyaten.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return _pair(torch.rand(*shape, generator=g).to(getattr(torch, dtype)))


# --- values and indices -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_fractional_max_pool_matches_torch(dtype, data) -> None:
    nd = data.draw(st.sampled_from([2, 3]))
    batched = data.draw(st.booleans())
    k = [data.draw(st.integers(1, 3)) for _ in range(nd)]
    size = [data.draw(st.integers(kk + 1, kk + 7)) for kk in k]
    strict = 1 if nd == 3 else 0  # the 3-d op wants out + k - 1 < size
    out = [data.draw(st.integers(0 if nd == 2 else 1, n - kk + 1 - strict))
           for n, kk in zip(size, k)]
    lead = ([data.draw(st.integers(1, 2))] if batched else []) + [data.draw(st.integers(1, 3))]
    x_t, x_o = _randn(*lead, *size, dtype=dtype, seed=len(size) + sum(out))
    s_t, s_o = _rand(lead[0] if batched else 1, lead[-1], nd, dtype=dtype)
    op = f"fractional_max_pool{nd}d"
    expected = getattr(TA, op)(x_t, k, out, s_t)
    actual = getattr(aten, op)(x_o, k, out, s_o)
    assert_same(actual, expected, rtol=0, atol=0, strides=True)


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_adaptive_max_pool3d_matches_torch(dtype, data) -> None:
    size = [data.draw(st.integers(1, 7)) for _ in range(3)]
    out = [data.draw(st.integers(1, 8)) for _ in range(3)]
    lead = [data.draw(st.integers(1, 2)) for _ in range(data.draw(st.integers(1, 2)))]
    x_t, x_o = _randn(*lead, *size, dtype=dtype, seed=sum(size))
    if data.draw(st.booleans()):  # NaNs win, the last one seen
        x_t.view(-1)[:: 5] = float("nan")
        x_o = from_torch(x_t)
    assert_same(aten.adaptive_max_pool3d(x_o, out), TA.adaptive_max_pool3d(x_t, out), rtol=0,
                atol=0, strides=True)


def test_nan_windows_and_channels_last() -> None:
    x_t, _ = _randn(2, 3, 6, 7, 8)
    x_t[0, 0, :3, :3, :3] = float("nan")
    x_t = x_t.to(memory_format=torch.channels_last_3d)
    x_o = from_torch(x_t)
    assert_same(aten.adaptive_max_pool3d(x_o, [2, 3, 4]), TA.adaptive_max_pool3d(x_t, [2, 3, 4]),
                strides=True)
    s_t, s_o = _rand(2, 3, 3)
    assert_same(aten.fractional_max_pool3d(x_o, [2, 2, 2], [3, 4, 5], s_o),
                TA.fractional_max_pool3d(x_t, [2, 2, 2], [3, 4, 5], s_t), strides=True)
    y_t, i_t = TF.max_pool3d(x_t, 2, return_indices=True)
    assert_same(aten.max_unpool3d(from_torch(y_t), from_torch(i_t), [6, 7, 8], [2, 2, 2],
                                  [0, 0, 0]),
                TA.max_unpool3d(y_t, i_t, [6, 7, 8], [2, 2, 2], [0, 0, 0]), strides=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batched", [True, False])
def test_max_unpool3d_matches_torch(dtype, batched) -> None:
    x_t, _ = _randn(*([2] if batched else []), 3, 4, 6, 8, dtype=dtype)
    for k, s, p in [(2, 2, 0), (3, 2, 1), ((2, 3, 2), (1, 2, 3), (1, 1, 0))]:
        y_t, i_t = TF.max_pool3d(x_t.float(), k, s, p, return_indices=True)
        y_t = y_t.to(x_t.dtype)
        for size in ([None] if k == 2 else []) + [list(x_t.shape[-3:])]:
            expected = TF.max_unpool3d(y_t, i_t, k, s, p, output_size=size)
            actual = F.max_unpool3d(from_torch(y_t), from_torch(i_t), k, s, p, output_size=size)
            assert_same(actual, expected, rtol=0, atol=0, strides=True)


def test_max_unpool3d_repeated_index_keeps_the_last() -> None:
    # PyTorch splits the depth over its threads, so with several threads the slice that
    # writes last varies; on one thread (pyaten's order) the last write wins.
    y_t = torch.arange(8.0).reshape(1, 1, 2, 2, 2)
    i_t = torch.zeros(1, 1, 2, 2, 2, dtype=torch.long)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        theirs = TA.max_unpool3d(y_t, i_t, [2, 2, 2], [1, 1, 1], [0, 0, 0])
    finally:
        torch.set_num_threads(threads)
    assert_same(aten.max_unpool3d(from_torch(y_t), from_torch(i_t), [2, 2, 2], [1, 1, 1],
                                  [0, 0, 0]), theirs)


# --- PyTorch's random samples -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("nd", [2, 3])
def test_seeded_call_draws_torchs_samples(dtype, nd) -> None:
    # No _random_samples: both draw rand(N, C, nd) from their seeded streams.
    shape = (2, 3) + ((11, 13) if nd == 2 else (9, 10, 11))
    x_t, x_o = _randn(*shape, dtype=dtype)
    out = (5, 7) if nd == 2 else (4, 5, 6)
    name = f"fractional_max_pool{nd}d"
    for seed in range(5):
        torch.manual_seed(seed)
        expected = getattr(TF, name)(x_t, 3, output_size=out, return_indices=True)
        pyaten.manual_seed(seed)
        actual = getattr(F, name)(x_o, 3, output_size=out, return_indices=True)
        assert_same(actual, expected, rtol=0, atol=0)


def test_seeded_modules_with_output_ratio() -> None:
    for nd, cls in ((2, "FractionalMaxPool2d"), (3, "FractionalMaxPool3d")):
        x_t, x_o = _randn(*((2, 3) + (10,) * nd))
        torch.manual_seed(7)
        expected = getattr(torch.nn, cls)(2, output_ratio=0.5, return_indices=True)(x_t)
        pyaten.manual_seed(7)
        actual = getattr(pyaten.nn, cls)(2, output_ratio=0.5, return_indices=True)(x_o)
        assert_same(actual, expected, rtol=0, atol=0)
        s_t, s_o = _rand(2, 3, nd)
        m_t = getattr(torch.nn, cls)(3, output_size=4, _random_samples=s_t)
        m_o = getattr(pyaten.nn, cls)(3, output_size=4, _random_samples=s_o)
        assert_same(m_o(x_o), m_t(x_t), rtol=0, atol=0)
        assert repr(m_o) == repr(m_t)
        assert list(dict(m_o.named_buffers())) == list(dict(m_t.named_buffers()))


def _seeded(fn):
    def call(*args, **kwargs):
        pyaten.manual_seed(42)  # torch's OpInfo wraps its op in wrapper_set_seed (seed 42)
        return fn(*args, **kwargs)
    return call


@pytest.mark.parametrize("name", ["fractional_max_pool2d", "fractional_max_pool3d",
                                  "adaptive_max_pool3d", "max_unpool3d"])
def test_opinfo_samples_match_torch(name) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db
    infos = [i for i in op_db if i.name == f"nn.functional.{name}" and not i.variant_test_name]
    assert infos
    ours = getattr(F, name)
    if name.startswith("fractional"):
        ours = _seeded(ours)
    for dtype in (torch.float32, torch.float64):
        samples = list(itertools.islice(infos[0].sample_inputs("cpu", dtype), 16))
        compare_samples(ours, infos[0].op, samples, rtol=0, atol=0)


# --- gradients ----------------------------------------------------------------------------------


def test_gradients_match_torch() -> None:
    x = torch.randn(2, 3, 7, 8, dtype=torch.float64)
    s2 = torch.rand(2, 3, 2, dtype=torch.float64)
    check_grads(lambda a: F.fractional_max_pool2d(a, 3, (3, 4), _random_samples=from_torch(s2)),
                lambda a: TF.fractional_max_pool2d(a, 3, (3, 4), _random_samples=s2), [x],
                second_order=True)
    x3 = torch.randn(2, 3, 6, 7, 8, dtype=torch.float64)
    s3 = torch.rand(2, 3, 3, dtype=torch.float64)
    check_grads(lambda a: F.fractional_max_pool3d(a, 2, (4, 5, 6), _random_samples=from_torch(s3)),
                lambda a: TF.fractional_max_pool3d(a, 2, (4, 5, 6), _random_samples=s3), [x3],
                second_order=True)
    check_grads(lambda a: F.adaptive_max_pool3d(a, (2, 4, 3)),
                lambda a: TF.adaptive_max_pool3d(a, (2, 4, 3)), [x3], second_order=True)
    y, i = TF.max_pool3d(x3[..., :6, :], 2, return_indices=True)
    check_grads(lambda a: F.max_unpool3d(a, from_torch(i), 2),
                lambda a: TF.max_unpool3d(a, i, 2), [y.detach()], second_order=True)


def test_gradcheck() -> None:
    x_t, x_o = _randn(1, 1, 5, 4, 4, dtype="float64")
    s_o = _rand(1, 1, 3, dtype="float64")[1]
    x_o.requires_grad_(True)
    assert pyaten.autograd.gradcheck(
        lambda a: aten.fractional_max_pool3d(a, [2, 2, 2], [3, 2, 2], s_o)[0], [x_o])
    assert pyaten.autograd.gradcheck(lambda a: aten.adaptive_max_pool3d(a, [2, 3, 2])[0], [x_o])


def test_backward_ops_match_torch() -> None:
    x_t, x_o = _randn(2, 3, 7, 8)
    s_t, s_o = _rand(2, 3, 2)
    v_t, i_t = TA.fractional_max_pool2d(x_t, [3, 2], [4, 5], s_t)
    g_t, g_o = _randn(*v_t.shape, seed=3)
    assert_same(aten.fractional_max_pool2d_backward(g_o, x_o, [3, 2], [4, 5], from_torch(i_t)),
                TA.fractional_max_pool2d_backward(g_t, x_t, [3, 2], [4, 5], i_t))
    x_t, x_o = _randn(2, 3, 6, 7, 8)
    s_t, s_o = _rand(2, 3, 3)
    v_t, i_t = TA.fractional_max_pool3d(x_t, [2, 2, 2], [4, 5, 6], s_t)
    g_t, g_o = _randn(*v_t.shape, seed=3)
    assert_same(aten.fractional_max_pool3d_backward(g_o, x_o, [2, 2, 2], [4, 5, 6],
                                                    from_torch(i_t)),
                TA.fractional_max_pool3d_backward(g_t, x_t, [2, 2, 2], [4, 5, 6], i_t))
    v_t, i_t = TA.adaptive_max_pool3d(x_t, [3, 2, 4])
    g_t, g_o = _randn(*v_t.shape, seed=4)
    assert_same(aten.adaptive_max_pool3d_backward(g_o, x_o, from_torch(i_t)),
                TA.adaptive_max_pool3d_backward(g_t, x_t, i_t))


# --- out=, Meta ---------------------------------------------------------------------------------


def test_out_forms_match_torch() -> None:
    x_t, x_o = _randn(2, 3, 6, 7, 8)
    s_t, s_o = _rand(2, 3, 3)
    outs_t = (torch.empty(0), torch.empty(0, dtype=torch.long))
    outs_o = (pyaten.empty(0), pyaten.empty(0, dtype=pyaten.int64))
    TA.adaptive_max_pool3d.out(x_t, [2, 3, 4], out=outs_t[0], indices=outs_t[1])
    r = aten.adaptive_max_pool3d.out(x_o, [2, 3, 4], out=outs_o[0], indices=outs_o[1])
    assert r[0] is outs_o[0] and r[1] is outs_o[1]
    assert_same(outs_o, outs_t)
    outs_t = (torch.empty(0), torch.empty(0, dtype=torch.long))
    outs_o = (pyaten.empty(0), pyaten.empty(0, dtype=pyaten.int64))
    TA.fractional_max_pool3d.output(x_t, [2, 2, 2], [3, 4, 5], s_t, output=outs_t[0],
                                    indices=outs_t[1])
    aten.fractional_max_pool3d.output(x_o, [2, 2, 2], [3, 4, 5], s_o, output=outs_o[0],
                                      indices=outs_o[1])
    assert_same(outs_o, outs_t)
    y_t, i_t = TF.max_pool3d(x_t, 2, return_indices=True)
    o_t, o_o = torch.empty(0), pyaten.empty(0)
    TA.max_unpool3d.out(y_t, i_t, [6, 7, 8], [2, 2, 2], [0, 0, 0], out=o_t)
    r = aten.max_unpool3d.out(from_torch(y_t), from_torch(i_t), [6, 7, 8], [2, 2, 2], [0, 0, 0],
                              out=o_o)
    assert r is o_o
    assert_same(o_o, o_t)
    g_t = torch.empty(0)
    g_o = pyaten.empty(0)
    v_t, i3_t = TA.fractional_max_pool3d(x_t, [2, 2, 2], [3, 4, 5], s_t)
    TA.fractional_max_pool3d_backward.grad_input(torch.ones_like(v_t), x_t, [2, 2, 2], [3, 4, 5],
                                                 i3_t, grad_input=g_t)
    aten.fractional_max_pool3d_backward.grad_input(pyaten.ones(*v_t.shape), x_o, [2, 2, 2],
                                                   [3, 4, 5], from_torch(i3_t), grad_input=g_o)
    assert_same(g_o, g_t)


def test_meta_shapes_match_torch() -> None:
    cases = [
        ("fractional_max_pool2d", lambda m, d: (m.empty(2, 3, 7, 8, device=d), [2, 2], [3, 4],
                                                m.empty(2, 3, 2, device=d))),
        ("fractional_max_pool3d", lambda m, d: (m.empty(3, 6, 7, 8, device=d), [2, 2, 2],
                                                [3, 4, 5], m.empty(1, 3, 3, device=d))),
        ("adaptive_max_pool3d", lambda m, d: (m.empty(2, 3, 5, 6, 7, device=d), [2, 3, 4])),
    ]
    for name, build in cases:
        expected = getattr(TA, name)(*build(torch, "meta"))
        actual = getattr(aten, name)(*build(pyaten, "meta"))
        for a, e in zip(actual, expected):
            assert a.device.type == "meta"
            assert (tuple(a.shape), a.stride(), str(a.dtype).split(".")[-1]) == (
                tuple(e.shape), e.stride(), str(e.dtype).split(".")[-1])


# --- errors -------------------------------------------------------------------------------------


def _errors():
    x4 = (2, 3, 7, 8)
    x5 = (2, 3, 6, 7, 8)
    f2, f3 = "fractional_max_pool2d", "fractional_max_pool3d"

    def call(op, *args):
        return lambda m: getattr(m.ops.aten, op)(*[a(m) if callable(a) else a for a in args])

    def t(*shape, dtype="float32"):
        return lambda m: m.ones(*shape, dtype=getattr(m, dtype))

    return [
        call(f2, t(*x4), [2, 2], [7, 4], t(2, 3, 2)),
        call(f2, t(*x4), [2, 2], [3, 8], t(2, 3, 2)),
        call(f2, t(*x4), [2], [3, 4], t(2, 3, 2)),
        call(f2, t(*x4), [2, 2], [3], t(2, 3, 2)),
        call(f2, t(*x4), [2, 2], [-1, 4], t(2, 3, 2)),
        call(f2, t(*x4), [2, 2], [3, 4], t(2, 3, 3)),
        call(f2, t(*x4), [2, 2], [3, 4], t(1, 3, 2)),
        call(f2, t(*x4), [2, 2], [3, 4], t(2, 3)),
        call(f2, t(*x4), [2, 2], [3, 4], t(2, 3, 2, dtype="float64")),
        call(f2, t(*x4), [2, 2], [3, 4], t(2, 4, 2)),
        call(f2, t(7, 8), [2, 2], [3, 4], t(2, 3, 2)),
        call(f2, t(2, 0, 7, 8), [2, 2], [3, 4], t(2, 0, 2)),
        call(f2, t(*x4, dtype="int32"), [2, 2], [3, 4], t(2, 3, 2, dtype="int32")),
        call(f3, t(*x5), [2, 2, 2], [6, 4, 5], t(2, 3, 3)),
        call(f3, t(*x5), [2, 2, 2], [3, 7, 5], t(2, 3, 3)),
        call(f3, t(*x5), [2, 2, 2], [3, 4, 8], t(2, 3, 3)),
        call(f3, t(*x5), [2, 2], [3, 4, 5], t(2, 3, 3)),
        call(f3, t(*x5), [2, 2, 2], [3, 4], t(2, 3, 3)),
        call(f3, t(6, 7, 8), [2, 2, 2], [3, 4, 5], t(2, 3, 3)),
        call(f3, t(*x5), [2, 2, 2], [3, 4, 5], t(2, 3, 2)),
        call(f3, t(2, 0, 6, 7, 8), [2, 2, 2], [3, 4, 5], t(2, 0, 3)),
        call(f3, t(*x5, dtype="int64"), [2, 2, 2], [3, 4, 5], t(2, 3, 3, dtype="int64")),
        call(f2 + "_backward", t(2, 3, 3, 5), t(*x4), [2, 2], [3, 4],
             lambda m: m.zeros(2, 3, 3, 4, dtype=m.int64)),
        call(f2 + "_backward", t(2, 3, 3, 4), t(*x4), [2, 2], [3, 4],
             lambda m: m.zeros(1, 3, 3, 4, dtype=m.int64)),
        call(f2 + "_backward", t(2, 3, 3, 4, dtype="float64"), t(*x4), [2, 2], [3, 4],
             lambda m: m.zeros(2, 3, 3, 4, dtype=m.int64)),
        call(f2 + "_backward", t(2, 3, 3, 4), t(*x4), [2, 2], [3, 4],
             lambda m: m.zeros(2, 3, 3, 4, dtype=m.int32)),
        call(f2 + "_backward", t(2, 3, 3, 4, dtype="int32"), t(*x4, dtype="int32"), [2, 2],
             [3, 4], lambda m: m.zeros(2, 3, 3, 4, dtype=m.int64)),
        call(f3 + "_backward", t(2, 3, 3, 4, 6), t(*x5), [2, 2, 2], [3, 4, 5],
             lambda m: m.zeros(2, 3, 3, 4, 6, dtype=m.int64)),
        call(f3 + "_backward", t(2, 3, 4, 4, 5), t(*x5), [2, 2, 2], [3, 4, 5],
             lambda m: m.zeros(2, 3, 3, 4, 5, dtype=m.int64)),
        call(f3 + "_backward", t(2, 3, 3, 5, 5), t(*x5), [2, 2, 2], [3, 4, 5],
             lambda m: m.zeros(2, 3, 3, 4, 5, dtype=m.int64)),
        call(f3 + "_backward", t(3, 5), t(*x5), [2, 2, 2], [3, 4, 5],
             lambda m: m.zeros(2, 3, 3, 4, 5, dtype=m.int64)),
        call(f3 + "_backward", t(2, 3, 3, 4, 5, dtype="float64"), t(*x5), [2, 2, 2], [3, 4, 5],
             lambda m: m.zeros(2, 3, 3, 4, 5, dtype=m.int64)),
        call("adaptive_max_pool3d", t(5, 6, 7), [2, 3, 4]),
        call("adaptive_max_pool3d", t(*x5), [2, 3]),
        call("adaptive_max_pool3d", t(*x5), [2, 3, -1]),
        call("adaptive_max_pool3d", t(2, 0, 5, 6, 7), [2, 3, 4]),
        call("adaptive_max_pool3d", t(*x5, dtype="int32"), [2, 3, 4]),
        call("adaptive_max_pool3d", t(*x5, dtype="complex64"), [2, 3, 4]),
        call("adaptive_max_pool3d_backward", t(3, 2, 3), t(*x5),
             lambda m: m.zeros(2, 3, 2, 3, 4, dtype=m.int64)),
        call("adaptive_max_pool3d_backward", t(2, 3, 2, 3, 4, dtype="float64"), t(*x5),
             lambda m: m.zeros(2, 3, 2, 3, 4, dtype=m.int64)),
        call("adaptive_max_pool3d_backward", t(3, 2, 3, 4), t(*x5),
             lambda m: m.zeros(2, 3, 2, 3, 4, dtype=m.int64)),
        call("adaptive_max_pool3d_backward", t(2, 3, 2, 3, 4), t(*x5),
             lambda m: m.zeros(2, 3, 2, 3, 4, dtype=m.int32)),
    ] + _unpool_errors(t)


def _unpool_errors(t):
    def unpool(x, i, size, stride=(2, 2, 2), pad=(0, 0, 0)):
        return lambda m: m.ops.aten.max_unpool3d(x(m), i(m), list(size), list(stride), list(pad))

    def idx(*shape, value=0, dtype="int64"):
        return lambda m: m.full(shape, value, dtype=getattr(m, dtype))

    y = (2, 3, 2, 3, 3)
    return [
        unpool(t(*y), idx(*y, dtype="int32"), [4], [2, 2]),
        unpool(t(2, 3, 3), idx(2, 3, 3), [4]),
        unpool(t(*y), idx(*y), [4, 6]),
        unpool(t(*y), idx(*y), [4, 6, 6], [2, 2]),
        unpool(t(*y), idx(*y), [4, 6, 6], [2, 2, 2], [0, 0]),
        unpool(t(*y), idx(*y), [4, 6, 6], [0, 2, 2]),
        unpool(t(*y), idx(3, 2, 3, 3), [4, 6, 6]),
        unpool(t(2, 0, 2, 3, 3), idx(2, 0, 2, 3, 3), [4, 6, 6]),
        unpool(t(*y), idx(*y), [4, 6, -6]),
        unpool(t(*y, dtype="int32"), idx(*y), [4, 6, 6]),
        unpool(t(*y, dtype="complex64"), idx(*y), [4, 6, 6]),
        unpool(t(*y), idx(*y, value=144), [4, 6, 6]),
        unpool(t(*y), idx(*y, value=-3), [4, 6, 6]),
        lambda m: m.nn.functional.max_unpool3d(m.ones(*y), m.zeros(*y, dtype=m.int64), 2,
                                               output_size=[7, 6, 7]),
        lambda m: m.nn.functional.max_unpool3d(m.ones(*y), m.zeros(*y, dtype=m.int64), 2,
                                               output_size=[7, 6]),
        lambda m: m.nn.functional.fractional_max_pool2d(m.ones(2, 3, 8, 8), 2),
        lambda m: m.nn.functional.fractional_max_pool2d(m.ones(2, 3, 8, 8), 2, output_ratio=0.5),
        lambda m: m.nn.functional.fractional_max_pool3d(m.ones(2, 3, 8, 8, 8), 2),
        lambda m: m.nn.FractionalMaxPool2d(2),
        lambda m: m.nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5),
        lambda m: m.nn.FractionalMaxPool2d(2, output_ratio=1.5),
        lambda m: m.nn.FractionalMaxPool3d(0, output_ratio=0.5),
        lambda m: m.nn.FractionalMaxPool3d(2, output_ratio=(0.5, 0.5, 1.0)),
    ]


@pytest.mark.parametrize("case", range(len(_errors())))
def test_errors_match_torch(case) -> None:
    build = _errors()[case]
    same_error(lambda: build(pyaten), lambda: build(torch))


def test_unpool_output_size_default_matches_torch() -> None:
    x_t, x_o = _randn(1, 2, 6, 6, 6)
    y_t, i_t = torch.nn.MaxPool3d(2, return_indices=True)(x_t)
    for size in (None, [1, 2, 6, 6, 6], [7, 7, 6]):
        expected = torch.nn.MaxUnpool3d(2)(y_t, i_t, size)
        actual = pyaten.nn.MaxUnpool3d(2)(from_torch(y_t), from_torch(i_t), size)
        assert_same(actual, expected, rtol=0, atol=0)
    assert repr(pyaten.nn.MaxUnpool3d(2)) == repr(torch.nn.MaxUnpool3d(2))
    m_t, m_o = torch.nn.AdaptiveMaxPool3d((2, None, 3), True), pyaten.nn.AdaptiveMaxPool3d(
        (2, None, 3), True)
    assert repr(m_o) == repr(m_t)
    assert_same(m_o(x_o), m_t(x_t), rtol=0, atol=0)
    assert np.array_equal(pyaten.nn.AdaptiveMaxPool3d(1)(x_o).numpy(),
                          torch.nn.AdaptiveMaxPool3d(1)(x_t).numpy())
