"""pyaten.nn.functional's pooling against torch.nn.functional: values, indices and gradients
(float32 and float64), OpInfo samples, ceil_mode, dilation, padding, count_include_pad,
divisor_override, unbatched, non-contiguous and channels-last inputs (values and layout),
PyTorch's errors, and Meta shapes of every declared pooling operator.
"""

from __future__ import annotations

import itertools
import warnings

import pytest
import torch
import torch.nn.functional as TF
from _grad_helpers import check_grads, check_opinfo_grads, opinfo_grad_cases
from _helpers import assert_same, compare_samples, from_torch, same_error

import pyaten
import pyaten.nn.functional as F
from pyaten.ops import aten

# OpInfo names whose gradients are compared here.
GRAD_SURFACE = frozenset("""
nn.functional.max_pool1d nn.functional.max_pool2d nn.functional.avg_pool1d
nn.functional.avg_pool2d nn.functional.adaptive_avg_pool1d nn.functional.adaptive_avg_pool2d
nn.functional.lp_pool1d nn.functional.lp_pool2d nn.functional.adaptive_max_pool1d
nn.functional.adaptive_max_pool2d nn.functional.max_unpool2d nn.functional.max_pool3d
nn.functional.avg_pool3d nn.functional.adaptive_avg_pool3d
""".split())

SECOND_ORDER = frozenset("""
nn.functional.max_pool2d nn.functional.avg_pool2d nn.functional.adaptive_avg_pool2d
nn.functional.adaptive_max_pool2d
""".split())

# OpInfo variants left out, with the reason (covered by hand-written cases below).
NOT_YET = {
    ("nn.functional.max_unpool2d", "grad"): "its samples draw random indices per call",
}

MAX_SAMPLES = 4


def _ours(name):
    return getattr(F, name.rpartition(".")[2])


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE, NOT_YET))
def test_opinfo_gradients_match_torch(info) -> None:
    check_opinfo_grads(info, info.name in SECOND_ORDER, limit=MAX_SAMPLES)


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE, NOT_YET))
def test_opinfo_values_match_torch_float32(info) -> None:
    fn = _ours(info.name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a lazy slice: some OpInfos make hundreds of samples
        samples = list(itertools.islice(info.sample_inputs("cpu", torch.float32), MAX_SAMPLES))
    compare_samples(fn, info.op, samples, rtol=1e-5, atol=1e-5)


# --- hand-written differential cases ---------------------------------------------------------


def _randn(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=g, dtype=dtype)


def _both(fn_name, x, *args, **kwargs):
    return getattr(F, fn_name)(from_torch(x), *args, **kwargs), \
        getattr(TF, fn_name)(x, *args, **kwargs)


MAX2D = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": (2, 3), "stride": (1, 2), "dilation": (2, 1)},
    {"kernel_size": (3, 2), "stride": 2, "ceil_mode": True, "dilation": 2, "padding": (1, 0)},
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kwargs", MAX2D)
def test_max_pool2d(kwargs, dtype) -> None:
    x = _randn(2, 3, 9, 8, dtype=dtype)
    ours, theirs = _both("max_pool2d", x, return_indices=True, **kwargs)
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])
    assert_same(*_both("max_pool2d", x[0], **kwargs))  # unbatched
    check_grads(lambda a: F.max_pool2d(a, **kwargs), lambda a: TF.max_pool2d(a, **kwargs), [x],
                second_order=True)


def test_max_pool2d_ties_nan_inf_and_integers() -> None:
    x = torch.tensor([[[[1.0, 5.0, 5.0, 2.0, float("nan"), 3.0, float("nan"), 0.0]]]])
    for kwargs in ({"kernel_size": (1, 4)}, {"kernel_size": (1, 3), "stride": 1,
                                             "padding": (0, 1)}):
        ours, theirs = _both("max_pool2d", x, return_indices=True, **kwargs)
        assert_same(ours[0], theirs[0])
        assert_same(ours[1], theirs[1])
    inf = torch.full((1, 1, 1, 4), -float("inf"))
    ours, theirs = _both("max_pool2d", inf, (1, 3), 1, (0, 1), return_indices=True)
    assert_same(ours[1], theirs[1])
    ints = torch.randint(-50, 50, (2, 3, 6, 6), generator=torch.Generator().manual_seed(0))
    ours, theirs = _both("max_pool2d", ints, 3, 2, 1, return_indices=True)
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])


def test_pool_non_contiguous_and_channels_last() -> None:
    x = _randn(2, 9, 8, 3).permute(0, 3, 1, 2)  # channels-last
    for name, args in (("max_pool2d", (3, 2, 1)), ("avg_pool2d", (3, 2, 1)),
                       ("adaptive_avg_pool2d", ((4, 3),)), ("adaptive_avg_pool2d", (1,))):
        ours, theirs = _both(name, x, *args)
        assert_same(ours, theirs, rtol=1e-12, atol=1e-12)
        assert ours.stride() == theirs.stride(), name
        check_grads(lambda a, n=name, r=args: getattr(F, n)(a, *r),
                    lambda a, n=name, r=args: getattr(TF, n)(a, *r), [x])
    xs = _randn(2, 3, 18, 9)[:, :, ::2]
    assert_same(*_both("max_pool2d", xs, 2))
    assert_same(*_both("avg_pool2d", xs, 2, count_include_pad=False))


AVG2D = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    {"kernel_size": (2, 3), "stride": (1, 2), "divisor_override": 4},
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kwargs", AVG2D)
def test_avg_pool2d(kwargs, dtype) -> None:
    x = _randn(2, 3, 9, 8, dtype=dtype)
    tol = 1e-6 if dtype is torch.float32 else 1e-12
    assert_same(*_both("avg_pool2d", x, **kwargs), rtol=tol, atol=tol)
    assert_same(*_both("avg_pool2d", x[0], **kwargs), rtol=tol, atol=tol)
    check_grads(lambda a: F.avg_pool2d(a, **kwargs), lambda a: TF.avg_pool2d(a, **kwargs), [x],
                second_order=True, rtol=tol, atol=tol)


def test_avg_pool2d_integers() -> None:
    x = torch.randint(-50, 50, (2, 3, 7, 7), generator=torch.Generator().manual_seed(0))
    assert_same(*_both("avg_pool2d", x, 3, 2, 1))
    assert_same(*_both("avg_pool2d", x, 3, 2, 1, count_include_pad=False))


@pytest.mark.parametrize("size", [(1, 1), (3, 5), (4, 4), (9, 8), (2, 13), (None, 3), 5])
def test_adaptive_avg_pool2d(size) -> None:
    x = _randn(2, 3, 9, 8)
    assert_same(*_both("adaptive_avg_pool2d", x, size), rtol=1e-12, atol=1e-12)
    assert_same(*_both("adaptive_avg_pool2d", x[0], size), rtol=1e-12, atol=1e-12)
    check_grads(lambda a: F.adaptive_avg_pool2d(a, size),
                lambda a: TF.adaptive_avg_pool2d(a, size), [x], second_order=True)


def test_adaptive_avg_pool2d_float32() -> None:
    x = _randn(2, 3, 9, 8, dtype=torch.float32)
    assert_same(*_both("adaptive_avg_pool2d", x, (4, 3)), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_one_d_pools(dtype) -> None:
    x = _randn(2, 3, 11, dtype=dtype)
    tol = 1e-6 if dtype is torch.float32 else 1e-12
    cases = [
        ("max_pool1d", (3, 2, 1), {}), ("max_pool1d", (2,), {"ceil_mode": True}),
        ("max_pool1d", (3,), {"dilation": 2, "stride": 1}),
        ("avg_pool1d", (3, 2, 1), {}), ("avg_pool1d", (3, 2, 1), {"count_include_pad": False,
                                                                   "ceil_mode": True}),
        ("adaptive_avg_pool1d", (4,), {}), ("lp_pool1d", (2, 3), {}),
        ("lp_pool1d", (3.0, 2), {"stride": 1}),
    ]
    for name, args, kwargs in cases:
        assert_same(*_both(name, x, *args, **kwargs), rtol=tol, atol=tol)
        assert_same(*_both(name, x[0], *args, **kwargs), rtol=tol, atol=tol)
        if dtype is torch.float64:
            check_grads(lambda a, n=name, r=args, k=kwargs: getattr(F, n)(a, *r, **k),
                        lambda a, n=name, r=args, k=kwargs: getattr(TF, n)(a, *r, **k), [x])
    ours, theirs = _both("max_pool1d", x, 3, 2, 1, return_indices=True)
    assert_same(ours[1], theirs[1])


def test_lp_pool2d() -> None:
    x = _randn(2, 3, 8, 7).abs() + 0.1
    for args, kwargs in (((2, 2), {}), ((3, (2, 3)), {"stride": 1}),
                         ((float("inf"), 2), {}), ((1.5, 3), {"ceil_mode": True, "stride": 2})):
        assert_same(*_both("lp_pool2d", x, *args, **kwargs), rtol=1e-12, atol=1e-12)
        check_grads(lambda a, r=args, k=kwargs: F.lp_pool2d(a, *r, **k),
                    lambda a, r=args, k=kwargs: TF.lp_pool2d(a, *r, **k), [x])


@pytest.mark.parametrize("call", [
    lambda m, F_: F_.max_pool2d(m.ones(2, 3, 8, 8), 3, padding=2),
    lambda m, F_: F_.max_pool2d(m.ones(2, 3, 8, 8), 9),
    lambda m, F_: F_.max_pool2d(m.ones(8, 8), 2),
    lambda m, F_: F_.max_pool2d(m.ones(2, 3, 8, 8), 2, stride=0),
    lambda m, F_: F_.max_pool2d(m.ones(2, 3, 8, 8), 2, dilation=0),
    lambda m, F_: F_.max_pool2d(m.ones(2, 3, 8, 8), [2, 2, 2]),
    lambda m, F_: F_.max_pool2d(m.ones(2, 0, 8, 8), 2),
    lambda m, F_: F_.max_pool2d(m.ones(2, 3, 8, 8), 2, padding=-1, return_indices=True),
    lambda m, F_: F_.max_pool2d(m.ones(2, 3, 4, 4, dtype=m.bool), 2),
    lambda m, F_: F_.avg_pool2d(m.ones(2, 3, 8, 8), 3, padding=2),
    lambda m, F_: F_.avg_pool2d(m.ones(2, 3, 8, 8), 9),
    lambda m, F_: F_.avg_pool2d(m.ones(8, 8), 2),
    lambda m, F_: F_.avg_pool2d(m.ones(2, 2, 2, 8, 8), 2),
    lambda m, F_: F_.avg_pool2d(m.ones(2, 3, 8, 8), 2, divisor_override=0),
    lambda m, F_: F_.avg_pool2d(m.ones(2, 3, 8, 8), 2, stride=0),
    lambda m, F_: F_.adaptive_avg_pool2d(m.ones(8, 8), 2),
    lambda m, F_: F_.adaptive_avg_pool2d(m.ones(2, 3, 8, 8), (2, -1)),
    lambda m, F_: F_.adaptive_avg_pool2d(m.ones(2, 3, 0, 4), 2),
    lambda m, F_: F_.adaptive_avg_pool2d(m.ones(2, 3, 4, 4, dtype=m.int64), 2),
    lambda m, F_: F_.max_pool1d(m.ones(2, 3, 8, 8), 2),
    lambda m, F_: F_.avg_pool1d(m.ones(2, 3, 8, 8), 2),
    lambda m, F_: F_.adaptive_avg_pool1d(m.ones(2, 3, 8, 8), 2),
])
def test_errors_match_torch(call) -> None:
    same_error(lambda: call(pyaten, F), lambda: call(torch, TF))


def test_backward_operators_check_shapes() -> None:
    x = torch.randn(2, 3, 8, 8)
    same_error(
        lambda: aten.max_pool2d_with_indices_backward.default(
            pyaten.ones(2, 3, 3, 3), from_torch(x), [2, 2], [2, 2], [0, 0], [1, 1], False,
            pyaten.zeros(2, 3, 4, 4, dtype=pyaten.int64)),
        lambda: torch.ops.aten.max_pool2d_with_indices_backward(
            torch.ones(2, 3, 3, 3), x, [2, 2], [2, 2], [0, 0], [1, 1], False,
            torch.zeros(2, 3, 4, 4, dtype=torch.long)))
    same_error(
        lambda: aten.avg_pool2d_backward.default(pyaten.ones(2, 3, 3, 3), from_torch(x), [2, 2],
                                                 [2, 2], [0, 0], False, True, None),
        lambda: torch.ops.aten.avg_pool2d_backward(torch.ones(2, 3, 3, 3), x, [2, 2], [2, 2],
                                                   [0, 0], False, True, None))


def _meta(*shape):
    return torch.empty(*shape, device="meta"), pyaten.empty(*shape, device="meta")


@pytest.mark.parametrize("name, make", [
    ("max_pool2d_with_indices", lambda x: (x, [3, 3], [2, 2], [1, 1], [1, 1], True)),
    ("avg_pool2d", lambda x: (x, [3, 2], [2, 1], [1, 0], True, False, None)),
    ("_adaptive_avg_pool2d", lambda x: (x, [4, 3])),
    ("max_pool2d", lambda x: (x, [2, 2])),
    ("adaptive_avg_pool2d", lambda x: (x, [4, 3])),
])
def test_meta_shapes(name, make) -> None:
    xt, xo = _meta(2, 3, 9, 8)
    theirs = getattr(torch.ops.aten, name)(*make(xt))
    ours = getattr(aten, name).default(*make(xo))
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    ours = ours if isinstance(ours, tuple) else (ours,)
    assert [tuple(t.shape) for t in ours] == [tuple(t.shape) for t in theirs]
    assert all(t.device.type == "meta" for t in ours)


def test_backward_meta_shapes() -> None:
    xt, xo = _meta(2, 3, 9, 8)
    gt, go = _meta(2, 3, 5, 4)
    it = torch.empty(2, 3, 5, 4, device="meta", dtype=torch.long)
    io = pyaten.empty(2, 3, 5, 4, device="meta", dtype=pyaten.int64)
    args = ([3, 3], [2, 2], [1, 1], [1, 1], False)
    assert tuple(aten.max_pool2d_with_indices_backward.default(go, xo, *args, io).shape) == \
        tuple(torch.ops.aten.max_pool2d_with_indices_backward(gt, xt, *args, it).shape)
    args = ([3, 3], [2, 2], [1, 1], False, True, None)
    assert tuple(aten.avg_pool2d_backward.default(go, xo, *args).shape) == \
        tuple(torch.ops.aten.avg_pool2d_backward(gt, xt, *args).shape)
    assert tuple(aten._adaptive_avg_pool2d_backward.default(go, xo).shape) == \
        tuple(torch.ops.aten._adaptive_avg_pool2d_backward(gt, xt).shape)


def test_out_variants() -> None:
    x = _randn(2, 3, 6, 6)
    out_o, idx_o = pyaten.empty(0, dtype=pyaten.float64), pyaten.empty(0, dtype=pyaten.int64)
    aten.max_pool2d_with_indices.out(from_torch(x), [2, 2], out=out_o, indices=idx_o)
    values, indices = torch.ops.aten.max_pool2d_with_indices(x, [2, 2])
    assert_same(out_o, values)
    assert_same(idx_o, indices)
    out = pyaten.empty(0, dtype=pyaten.float64)
    aten.avg_pool2d.out(from_torch(x), [3, 3], [2, 2], [1, 1], out=out)
    assert_same(out, torch.ops.aten.avg_pool2d(x, [3, 3], [2, 2], [1, 1]))


@pytest.mark.parametrize("size", [(3, 3), (4, 5), (9, 7), (2, None), 1, (11, 3)])
def test_adaptive_max_pool2d(size) -> None:
    x = _randn(2, 3, 9, 7)
    ours, theirs = _both("adaptive_max_pool2d", x, size, return_indices=True)
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])
    assert_same(*_both("adaptive_max_pool2d", x[0], size))
    check_grads(lambda a: F.adaptive_max_pool2d(a, size),
                lambda a: TF.adaptive_max_pool2d(a, size), [x], second_order=True)
    xf = _randn(2, 3, 9, 7, dtype=torch.float32).permute(0, 1, 3, 2)
    assert_same(*_both("adaptive_max_pool2d", xf, size))


def test_adaptive_max_pool1d() -> None:
    x = _randn(2, 3, 11)
    ours, theirs = _both("adaptive_max_pool1d", x, 4, return_indices=True)
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])
    check_grads(lambda a: F.adaptive_max_pool1d(a, 4), lambda a: TF.adaptive_max_pool1d(a, 4),
                [x])


@pytest.mark.parametrize("kwargs, output_size", [
    ({"kernel_size": 2}, None), ({"kernel_size": 2}, (9, 7)),
    ({"kernel_size": 3, "stride": 2, "padding": 1}, [2, 3, 9, 7]),
])
def test_max_unpool2d(kwargs, output_size) -> None:
    x = _randn(2, 3, 9, 7)
    if output_size is None:
        x = x[..., :8, :6]  # the default size must hold every index
    values, indices = TF.max_pool2d(x, return_indices=True, **kwargs)
    unpool_kwargs = dict(kwargs, output_size=output_size)
    ours = F.max_unpool2d(from_torch(values), from_torch(indices), **unpool_kwargs)
    assert_same(ours, TF.max_unpool2d(values, indices, **unpool_kwargs))
    check_grads(lambda a: F.max_unpool2d(a, from_torch(indices), **unpool_kwargs),
                lambda a: TF.max_unpool2d(a, indices, **unpool_kwargs), [values])
    v1, i1 = TF.max_pool1d(x[:, :, 0], 2, return_indices=True)
    assert_same(F.max_unpool1d(from_torch(v1), from_torch(i1), 2),
                TF.max_unpool1d(v1, i1, 2))


@pytest.mark.parametrize("call", [
    lambda m, F_: F_.adaptive_max_pool2d(m.ones(8, 8), 2),
    lambda m, F_: F_.adaptive_max_pool2d(m.ones(2, 3, 0, 8), 2),
    lambda m, F_: F_.adaptive_max_pool2d(m.ones(2, 3, 8, 8, dtype=m.int64), 2),
    lambda m, F_: F_.adaptive_max_pool1d(m.ones(2, 3, 8, 8), 2),
    lambda m, F_: F_.max_unpool2d(m.ones(2, 3, 4, 4), m.zeros(2, 3, 4, 4), 2),
    lambda m, F_: F_.max_unpool2d(m.ones(2, 3, 4, 4), m.zeros(1, 3, 4, 4, dtype=m.int64), 2),
    lambda m, F_: F_.max_unpool2d(m.ones(2, 3, 4, 4), m.full((2, 3, 4, 4), 5400), 2),
    lambda m, F_: F_.max_unpool2d(m.ones(2, 3, 4, 4), m.zeros(2, 3, 4, 4, dtype=m.int64), 2,
                                  output_size=(12, 9)),
    lambda m, F_: F_.max_unpool2d(m.ones(4, 4), m.zeros(4, 4, dtype=m.int64), 2),
])
def test_adaptive_max_and_unpool_errors_match_torch(call) -> None:
    same_error(lambda: call(pyaten, F), lambda: call(torch, TF))


def test_adaptive_max_and_unpool_meta() -> None:
    xt, xo = _meta(2, 3, 9, 8)
    theirs = torch.ops.aten.adaptive_max_pool2d(xt, [4, 3])
    ours = aten.adaptive_max_pool2d.default(xo, [4, 3])
    assert [tuple(t.shape) for t in ours] == [tuple(t.shape) for t in theirs]
    assert ours[1].dtype == pyaten.int64
    gt, go = _meta(2, 3, 4, 3)
    back = aten.adaptive_max_pool2d_backward.default(go, xo, ours[1])
    assert tuple(back.shape) == (2, 3, 9, 8) and back.device.type == "meta"
    un = aten.max_unpool2d.default(go, pyaten.empty(2, 3, 4, 3, dtype=pyaten.int64,
                                                    device="meta"), [8, 6])
    assert tuple(un.shape) == (2, 3, 8, 6) and un.device.type == "meta"


# --- 3-d pooling ----------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [
    {"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": (2, 3, 2), "stride": (1, 2, 2), "dilation": (2, 1, 1)},
])
def test_max_pool3d(kwargs) -> None:
    x = _randn(2, 2, 6, 5, 7)
    ours, theirs = _both("max_pool3d", x, return_indices=True, **kwargs)
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])
    assert_same(*_both("max_pool3d", x[0], **kwargs))
    check_grads(lambda a: F.max_pool3d(a, **kwargs), lambda a: TF.max_pool3d(a, **kwargs), [x],
                second_order=True)
    last = x.to(memory_format=torch.channels_last_3d)
    ours, theirs = _both("max_pool3d", last, **kwargs)
    assert_same(ours, theirs)
    assert ours.stride() == theirs.stride()


@pytest.mark.parametrize("kwargs", [
    {"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    {"kernel_size": (2, 3, 2), "divisor_override": 5},
])
def test_avg_pool3d(kwargs) -> None:
    x = _randn(2, 2, 6, 5, 7)
    assert_same(*_both("avg_pool3d", x, **kwargs), rtol=1e-12, atol=1e-12)
    assert_same(*_both("avg_pool3d", x[0], **kwargs), rtol=1e-12, atol=1e-12)
    check_grads(lambda a: F.avg_pool3d(a, **kwargs), lambda a: TF.avg_pool3d(a, **kwargs), [x],
                second_order=True)
    xf = _randn(2, 2, 6, 5, 7, dtype=torch.float32).to(memory_format=torch.channels_last_3d)
    ours, theirs = _both("avg_pool3d", xf, **kwargs)
    assert_same(ours, theirs, rtol=1e-6, atol=1e-6)
    assert ours.stride() == theirs.stride()


@pytest.mark.parametrize("size", [(1, 1, 1), (3, 2, 4), (6, 5, 7), (None, 2, 3), 2])
def test_adaptive_avg_pool3d(size) -> None:
    x = _randn(2, 2, 6, 5, 7)
    assert_same(*_both("adaptive_avg_pool3d", x, size), rtol=1e-12, atol=1e-12)
    assert_same(*_both("adaptive_avg_pool3d", x[0], size), rtol=1e-12, atol=1e-12)
    check_grads(lambda a: F.adaptive_avg_pool3d(a, size),
                lambda a: TF.adaptive_avg_pool3d(a, size), [x], second_order=True)


@pytest.mark.parametrize("call", [
    lambda m, F_: F_.max_pool3d(m.ones(2, 3, 6, 6, 6), 3, padding=2),
    lambda m, F_: F_.max_pool3d(m.ones(2, 3, 6, 6, 6), 7),
    lambda m, F_: F_.max_pool3d(m.ones(6, 6, 6), 2),
    lambda m, F_: F_.max_pool3d(m.ones(2, 3, 6, 6, 6), 2, stride=0),
    lambda m, F_: F_.max_pool3d(m.ones(2, 3, 6, 6, 6), 2, dilation=0),
    lambda m, F_: F_.max_pool3d(m.ones(2, 3, 6, 6, 6), [2, 2]),
    lambda m, F_: F_.max_pool3d(m.ones(2, 0, 6, 6, 6), 2),
    lambda m, F_: F_.max_pool3d(m.ones(2, 3, 6, 6, 6, dtype=m.bool), 2),
    lambda m, F_: F_.avg_pool3d(m.ones(2, 3, 6, 6, 6), 3, padding=2),
    lambda m, F_: F_.avg_pool3d(m.ones(2, 3, 6, 6, 6), 7),
    lambda m, F_: F_.avg_pool3d(m.ones(6, 6, 6), 2),
    lambda m, F_: F_.avg_pool3d(m.ones(2, 3, 6, 6, 6), 2, divisor_override=0),
    lambda m, F_: F_.adaptive_avg_pool3d(m.ones(6, 6, 6), 2),
    lambda m, F_: F_.adaptive_avg_pool3d(m.ones(2, 3, 6, 6, 6, dtype=m.int64), 2),
    lambda m, F_: F_.adaptive_avg_pool3d(m.ones(2, 3, 0, 6, 6), 2),
    lambda m, F_: F_.adaptive_avg_pool3d(m.ones(2, 3, 6, 6, 6), (2, -1, 3)),
])
def test_pool3d_errors_match_torch(call) -> None:
    same_error(lambda: call(pyaten, F), lambda: call(torch, TF))


def test_pool3d_meta_shapes() -> None:
    xt, xo = _meta(2, 3, 6, 5, 7)
    for name, args in (("max_pool3d_with_indices", ([3, 3, 3], [2, 2, 2], [1, 1, 1])),
                       ("avg_pool3d", ([3, 2, 3], [2, 1, 2], [1, 0, 1], True)),
                       ("_adaptive_avg_pool3d", ([4, 3, 2],)), ("max_pool3d", ([2, 2, 2],))):
        theirs = getattr(torch.ops.aten, name)(xt, *args)
        ours = getattr(aten, name).default(xo, *args)
        theirs = theirs if isinstance(theirs, tuple) else (theirs,)
        ours = ours if isinstance(ours, tuple) else (ours,)
        assert [tuple(t.shape) for t in ours] == [tuple(t.shape) for t in theirs], name
    gt, go = _meta(2, 3, 3, 3, 4)
    it = torch.empty(2, 3, 3, 3, 4, device="meta", dtype=torch.long)
    io = pyaten.empty(2, 3, 3, 3, 4, device="meta", dtype=pyaten.int64)
    args = ([3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], False)
    assert tuple(aten.max_pool3d_with_indices_backward.default(go, xo, *args, io).shape) == \
        tuple(torch.ops.aten.max_pool3d_with_indices_backward(gt, xt, *args, it).shape)
    args = ([3, 3, 3], [2, 2, 2], [1, 1, 1], False, True, None)
    assert tuple(aten.avg_pool3d_backward.default(go, xo, *args).shape) == \
        tuple(torch.ops.aten.avg_pool3d_backward(gt, xt, *args).shape)
    assert tuple(aten._adaptive_avg_pool3d_backward.default(go, xo).shape) == (2, 3, 6, 5, 7)


def test_one_d_composites_on_meta() -> None:
    xt, xo = _meta(2, 3, 11)
    for name, args in (("max_pool1d", (3, 2, 1)), ("avg_pool1d", (3, 2, 1)),
                       ("adaptive_avg_pool1d", (4,)), ("lp_pool1d", (2, 3))):
        theirs, ours = getattr(TF, name)(xt, *args), getattr(F, name)(xo, *args)
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.device.type == "meta", name
    ours = F.adaptive_max_pool1d(xo, 4, return_indices=True)
    assert [tuple(t.shape) for t in ours] == [(2, 3, 4), (2, 3, 4)]
    ours = F.max_pool1d(xo, 3, return_indices=True)
    assert ours[1].dtype == pyaten.int64 and tuple(ours[1].shape) == (2, 3, 3)
