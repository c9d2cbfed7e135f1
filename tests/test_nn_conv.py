"""pyaten.nn.functional's linear, bilinear and convolutions against torch.nn.functional:
values and gradients (float32 and float64), OpInfo samples, strides, padding (ints, 'same',
'valid'), dilation, groups, transposed convolutions, non-contiguous and channels-last inputs,
PyTorch's errors, and Meta shapes of `convolution` and `convolution_backward`.
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
nn.functional.linear nn.functional.bilinear nn.functional.conv1d nn.functional.conv2d
nn.functional.conv3d nn.functional.conv_transpose1d nn.functional.conv_transpose2d
nn.functional.conv_transpose3d nn.functional.unfold nn.functional.fold
""".split())

MAX_SAMPLES = 4


def _ours(name):
    return getattr(F, name.rpartition(".")[2])


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE))
def test_opinfo_gradients_match_torch(info) -> None:
    check_opinfo_grads(info, False, limit=MAX_SAMPLES)


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE))
def test_opinfo_values_match_torch_float32(info) -> None:
    fn = _ours(info.name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a lazy slice: some OpInfos make hundreds of samples
        samples = list(itertools.islice(info.sample_inputs("cpu", torch.float32), MAX_SAMPLES))
    compare_samples(fn, info.op, samples, rtol=1e-4, atol=1e-4)


# --- hand-written differential cases ---------------------------------------------------------


def _randn(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=g, dtype=dtype)


def _both(fn_name, *tensors, **kwargs):
    theirs = getattr(TF, fn_name)(*tensors, **kwargs)
    ours = getattr(F, fn_name)(*[None if t is None else from_torch(t) for t in tensors],
                               **kwargs)
    return ours, theirs


CONV2D = [
    ((2, 4, 9, 8), (6, 4, 3, 3), {}),
    ((2, 4, 9, 8), (6, 4, 3, 2), {"stride": 2, "padding": 1}),
    ((2, 4, 9, 8), (6, 2, 3, 3), {"groups": 2, "dilation": 2, "padding": (1, 2)}),
    ((1, 4, 9, 8), (4, 1, 3, 3), {"groups": 4, "stride": (2, 1)}),
    ((2, 3, 7, 7), (5, 3, 4, 3), {"padding": "same"}),
    ((2, 3, 7, 7), (5, 3, 2, 3), {"padding": "same", "dilation": (1, 3)}),
    ((2, 3, 7, 7), (5, 3, 3, 3), {"padding": "valid"}),
    ((3, 7, 7), (5, 3, 3, 3), {"padding": 1}),  # unbatched
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("xs, ws, kwargs", CONV2D)
def test_conv2d_values_and_grads(xs, ws, kwargs, dtype) -> None:
    x, w, b = _randn(*xs, dtype=dtype), _randn(*ws, dtype=dtype, seed=1), \
        _randn(ws[0], dtype=dtype, seed=2)
    tol = 1e-4 if dtype is torch.float32 else 1e-9
    assert_same(*_both("conv2d", x, w, b, **kwargs), rtol=tol, atol=tol)
    assert_same(*_both("conv2d", x, w, None, **kwargs), rtol=tol, atol=tol)
    if dtype is torch.float64:
        check_grads(lambda a, c, d: F.conv2d(a, c, d, **kwargs),
                    lambda a, c, d: TF.conv2d(a, c, d, **kwargs), [x, w, b], rtol=1e-9,
                    atol=1e-9, second_order=True)


@pytest.mark.parametrize("xs, ws, kwargs", [
    ((2, 4, 11), (6, 4, 3), {}),
    ((2, 4, 11), (6, 2, 3), {"groups": 2, "stride": 2, "padding": 2, "dilation": 2}),
    ((4, 11), (6, 4, 4), {"padding": "same"}),
])
def test_conv1d(xs, ws, kwargs) -> None:
    x, w, b = _randn(*xs), _randn(*ws, seed=1), _randn(ws[0], seed=2)
    assert_same(*_both("conv1d", x, w, b, **kwargs), rtol=1e-9, atol=1e-9)
    check_grads(lambda a, c, d: F.conv1d(a, c, d, **kwargs),
                lambda a, c, d: TF.conv1d(a, c, d, **kwargs), [x, w, b], rtol=1e-9, atol=1e-9)


def test_conv3d() -> None:
    x, w, b = _randn(2, 2, 5, 6, 4), _randn(4, 1, 2, 3, 2, seed=1), _randn(4, seed=2)
    kwargs = {"groups": 2, "stride": (1, 2, 1), "padding": 1}
    assert_same(*_both("conv3d", x, w, b, **kwargs), rtol=1e-9, atol=1e-9)
    check_grads(lambda a, c, d: F.conv3d(a, c, d, **kwargs),
                lambda a, c, d: TF.conv3d(a, c, d, **kwargs), [x, w, b], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name, xs, ws, kwargs", [
    ("conv_transpose2d", (2, 4, 5, 6), (4, 3, 3, 3), {}),
    ("conv_transpose2d", (2, 4, 5, 6), (4, 3, 3, 2), {"stride": 2, "padding": 1,
                                                      "output_padding": 1}),
    ("conv_transpose2d", (2, 4, 5, 6), (4, 2, 3, 3), {"groups": 2, "dilation": 2,
                                                      "stride": (2, 3), "output_padding": (1, 2)}),
    ("conv_transpose2d", (4, 5, 6), (4, 2, 3, 3), {}),
    ("conv_transpose1d", (2, 4, 7), (4, 3, 3), {"stride": 3, "output_padding": 2}),
    ("conv_transpose3d", (1, 2, 3, 4, 3), (2, 2, 2, 2, 3), {"stride": 2, "padding": 1}),
])
def test_conv_transpose(name, xs, ws, kwargs) -> None:
    out_channels = ws[1] * kwargs.get("groups", 1)
    x, w, b = _randn(*xs), _randn(*ws, seed=1), _randn(out_channels, seed=2)
    assert_same(*_both(name, x, w, b, **kwargs), rtol=1e-9, atol=1e-9)
    check_grads(lambda a, c, d: getattr(F, name)(a, c, d, **kwargs),
                lambda a, c, d: getattr(TF, name)(a, c, d, **kwargs), [x, w, b], rtol=1e-9,
                atol=1e-9, second_order=True)


def test_conv2d_non_contiguous_and_channels_last() -> None:
    x = _randn(2, 8, 9, 3).permute(0, 3, 1, 2)  # channels-last
    w = _randn(5, 3, 3, 3, seed=1)
    ours, theirs = _both("conv2d", x, w, None, padding=1)
    assert_same(ours, theirs, rtol=1e-9, atol=1e-9)
    assert ours.stride() == theirs.stride()
    xt = _randn(2, 3, 18, 9)[:, :, ::2]  # strided rows
    wt = _randn(3, 5, 3, 3, seed=1).transpose(0, 1)  # a transposed weight
    assert_same(*_both("conv2d", xt, wt, None, stride=2), rtol=1e-9, atol=1e-9)
    check_grads(lambda a, c: F.conv2d(a, c, padding=1), lambda a, c: TF.conv2d(a, c, padding=1),
                [x, wt])


def test_conv_float32_grads() -> None:
    x, w = _randn(2, 3, 8, 8, dtype=torch.float32), _randn(4, 3, 3, 3, dtype=torch.float32)
    check_grads(lambda a, c: F.conv2d(a, c, stride=2, padding=1),
                lambda a, c: TF.conv2d(a, c, stride=2, padding=1), [x, w], rtol=1e-4,
                atol=1e-4)


@pytest.mark.parametrize("call", [
    lambda m, F_: F_.conv2d(m.ones(2, 3, 5, 5), m.ones(4, 2, 3, 3)),
    lambda m, F_: F_.conv2d(m.ones(2, 4, 5, 5), m.ones(3, 2, 3, 3), groups=2),
    lambda m, F_: F_.conv2d(m.ones(2, 3, 5), m.ones(4, 3, 3, 3)),
    lambda m, F_: F_.conv2d(m.ones(2, 3, 2, 2), m.ones(4, 3, 3, 3)),
    lambda m, F_: F_.conv2d(m.ones(2, 3, 5, 5), m.ones(4, 3, 3, 3), m.ones(3)),
    lambda m, F_: F_.conv2d(m.ones(2, 3, 5, 5), m.ones(4, 3, 3, 3), stride=0),
    lambda m, F_: F_.conv2d(m.ones(2, 3, 5, 5), m.ones(4, 3, 3, 3), padding=-1),
    lambda m, F_: F_.conv2d(m.ones(2, 3, 5, 5), m.ones(4, 3, 3, 3), stride=2, padding="same"),
    lambda m, F_: F_.conv2d(m.ones(2, 3, 5, 5), m.ones(4, 3, 3, 3), padding="full"),
    lambda m, F_: F_.conv2d(m.ones(2, 3, 5, 5), m.ones(4, 3, 3, 3, dtype=m.float64)),
    lambda m, F_: F_.conv1d(m.ones(2, 3, 5, 5), m.ones(4, 3, 3)),
    lambda m, F_: F_.conv_transpose2d(m.ones(2, 3, 5, 5), m.ones(4, 3, 3, 3)),
    lambda m, F_: F_.conv_transpose2d(m.ones(2, 3, 5, 5), m.ones(3, 3, 3, 3), stride=2,
                                      output_padding=2),
    lambda m, F_: F_.linear(m.ones(2, 3), m.ones(4, 5)),
    lambda m, F_: F_.bilinear(m.ones(2, 3), m.ones(2, 4), m.ones(5, 3, 3)),
    lambda m, F_: F_.bilinear(m.ones(2, 3), m.ones(3, 4), m.ones(5, 3, 4)),
])
def test_errors_match_torch(call) -> None:
    same_error(lambda: call(pyaten, F), lambda: call(torch, TF))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("xs, ws, bias", [
    ((5, 3), (4, 3), True), ((2, 5, 3), (4, 3), True), ((3,), (4, 3), False),
    ((2, 3, 5, 3), (4, 3), False), ((5, 3), (4, 3), False),
])
def test_linear(xs, ws, bias, dtype) -> None:
    x, w = _randn(*xs, dtype=dtype), _randn(*ws, dtype=dtype, seed=1)
    b = _randn(ws[0], dtype=dtype, seed=2) if bias else None
    tol = 1e-5 if dtype is torch.float32 else 1e-10
    assert_same(*_both("linear", x, w, b), rtol=tol, atol=tol)
    tensors = [x, w] + ([b] if bias else [])
    check_grads(lambda *a: F.linear(*a), lambda *a: TF.linear(*a), tensors, rtol=tol,
                atol=tol, second_order=dtype is torch.float64)
    assert pyaten.nn._C.linear is not None and F.linear(from_torch(x), from_torch(w)).shape \
        == TF.linear(x, w).shape


def test_linear_non_contiguous() -> None:
    x, w = _randn(6, 3)[::2], _randn(3, 4).t()
    assert_same(*_both("linear", x, w, None), rtol=1e-10, atol=1e-10)


def test_bilinear() -> None:
    x1, x2, w, b = _randn(2, 5, 3), _randn(2, 5, 4, seed=1), _randn(6, 3, 4, seed=2), \
        _randn(6, seed=3)
    assert_same(*_both("bilinear", x1, x2, w, b), rtol=1e-10, atol=1e-10)
    check_grads(lambda *a: F.bilinear(*a), lambda *a: TF.bilinear(*a), [x1, x2, w, b])


# --- the operators: Meta shapes and the declared backward ------------------------------------


@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_meta_shapes(transposed) -> None:
    x = torch.empty(2, 4, 9, 8, device="meta")
    w = torch.empty(4, 2, 3, 3, device="meta")
    args = ([2, 1], [1, 0], [1, 2], transposed, [1, 0] if transposed else [0, 0], 2)
    theirs = torch.ops.aten.convolution(x, w, None, *args)
    ours = aten.convolution.default(pyaten.empty(2, 4, 9, 8, device="meta"),
                                    pyaten.empty(4, 2, 3, 3, device="meta"), None, *args)
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.device.type == "meta"
    go_t = torch.empty(theirs.shape, device="meta")
    go = pyaten.empty(tuple(theirs.shape), device="meta")
    theirs_b = torch.ops.aten.convolution_backward(go_t, x, w, [4], *args, [True, True, True])
    ours_b = aten.convolution_backward.default(go, pyaten.empty(2, 4, 9, 8, device="meta"),
                                               pyaten.empty(4, 2, 3, 3, device="meta"), [4],
                                               *args, [True, True, True])
    assert [tuple(t.shape) for t in ours_b] == [tuple(t.shape) for t in theirs_b]


def test_convolution_backward_matches_torch() -> None:
    x, w, g = _randn(2, 4, 7, 6), _randn(6, 2, 3, 3, seed=1), _randn(2, 6, 4, 3, seed=2)
    args = ([2, 2], [1, 1], [1, 1], False, [0, 0], 2)
    theirs = torch.ops.aten.convolution_backward(g, x, w, [6], *args, [True, False, True])
    ours = aten.convolution_backward.default(from_torch(g), from_torch(x), from_torch(w), [6],
                                             *args, [True, False, True])
    assert ours[1] is None and theirs[1] is None
    assert_same(ours[0], theirs[0], rtol=1e-10, atol=1e-10)
    assert_same(ours[2], theirs[2], rtol=1e-10, atol=1e-10)


def test_convolution_out_and_zero_batch() -> None:
    x, w = _randn(0, 3, 5, 5), _randn(4, 3, 3, 3)
    assert_same(*_both("conv2d", x, w, None))
    out_t, out_o = torch.empty(0), pyaten.empty(0)
    xi = torch.arange(50.0).reshape(1, 2, 5, 5)
    wi = torch.ones(3, 2, 2, 2)
    torch.ops.aten.convolution.out(xi, wi, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
                                   out=out_t)
    aten.convolution.out(from_torch(xi), from_torch(wi), None, [1, 1], [0, 0], [1, 1], False,
                         [0, 0], 1, out=out_o)
    assert_same(out_o, out_t)


def test_tensor_and_namespace_functions() -> None:
    x, w = _randn(1, 2, 5, 5), _randn(3, 2, 3, 3)
    assert_same(pyaten.conv2d(from_torch(x), from_torch(w), padding="same"),
                torch.conv2d(x, w, padding="same"), rtol=1e-10, atol=1e-10)
    lw = _randn(3, 5, seed=4)
    assert_same(pyaten.nn._C.linear(from_torch(x), from_torch(lw)),
                torch._C._nn.linear(x, lw), rtol=1e-10, atol=1e-10)


# --- unfold / fold ------------------------------------------------------------------------------

FOLD = [
    {"kernel_size": 2},
    {"kernel_size": (2, 3), "stride": (2, 1), "padding": 1, "dilation": (1, 2)},
    {"kernel_size": 3, "stride": 2, "padding": (0, 1)},
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kwargs", FOLD)
def test_unfold_and_fold(kwargs, dtype) -> None:
    x = _randn(2, 3, 7, 8, dtype=dtype)
    ours, theirs = F.unfold(from_torch(x), **kwargs), TF.unfold(x, **kwargs)
    assert_same(ours, theirs)
    assert_same(F.unfold(from_torch(x[0]), **kwargs), TF.unfold(x[0], **kwargs))
    cols = _randn(*theirs.shape, dtype=dtype, seed=3)
    tol = 1e-6 if dtype is torch.float32 else 1e-12
    assert_same(F.fold(from_torch(cols), (7, 8), **kwargs), TF.fold(cols, (7, 8), **kwargs),
                rtol=tol, atol=tol)
    assert_same(F.fold(from_torch(cols[0]), (7, 8), **kwargs),
                TF.fold(cols[0], (7, 8), **kwargs), rtol=tol, atol=tol)
    if dtype is torch.float64:
        check_grads(lambda a: F.unfold(a, **kwargs), lambda a: TF.unfold(a, **kwargs), [x],
                    second_order=True)
        check_grads(lambda a: F.fold(a, (7, 8), **kwargs),
                    lambda a: TF.fold(a, (7, 8), **kwargs), [cols], second_order=True)


def test_unfold_channels_last_and_meta() -> None:
    x = _randn(2, 7, 8, 3).permute(0, 3, 1, 2)
    assert_same(F.unfold(from_torch(x), 3, padding=1), TF.unfold(x, 3, padding=1))
    meta = aten.im2col.default(pyaten.empty(2, 3, 7, 8, device="meta"), [2, 3], [1, 1], [1, 0],
                               [2, 1])
    assert tuple(meta.shape) == tuple(torch.ops.aten.im2col(
        torch.empty(2, 3, 7, 8, device="meta"), [2, 3], [1, 1], [1, 0], [2, 1]).shape)
    meta = aten.col2im.default(pyaten.empty(2, 12, 16, device="meta"), [5, 5], [2, 2], [1, 1],
                               [0, 0], [1, 1])
    assert tuple(meta.shape) == (2, 3, 5, 5)


@pytest.mark.parametrize("call", [
    lambda m, F_: F_.unfold(m.ones(2, 3, 5, 5), 6),
    lambda m, F_: F_.unfold(m.ones(5, 5), 2),
    lambda m, F_: F_.unfold(m.ones(2, 3, 5, 5), 2, stride=0),
    lambda m, F_: F_.unfold(m.ones(2, 3, 5, 5), 0),
    lambda m, F_: F_.unfold(m.ones(2, 3, 5, 5), 2, padding=-1),
    lambda m, F_: F_.unfold(m.ones(2, 3, 5, 5), 2, dilation=0),
    lambda m, F_: F_.unfold(m.ones(2, 3, 0, 5), 2),
    lambda m, F_: F_.unfold(m.ones(2, 3, 5, 5, dtype=m.int64), 2),
    lambda m, F_: F_.fold(m.ones(2, 12, 15), (5, 5), 2),
    lambda m, F_: F_.fold(m.ones(2, 13, 16), (5, 5), 2),
    lambda m, F_: F_.fold(m.ones(2, 3, 12, 16), (5, 5), 2),
    lambda m, F_: F_.fold(m.ones(2, 12, 16), (5, 5), 2, stride=0, dilation=0),
])
def test_fold_errors_match_torch(call) -> None:
    same_error(lambda: call(pyaten, F), lambda: call(torch, TF))


def test_composites_on_meta() -> None:
    def meta(*shape):
        return torch.empty(*shape, device="meta"), pyaten.empty(*shape, device="meta")

    (xt, xo), (wt, wo), (lt, lo) = meta(2, 4, 9, 8), meta(6, 2, 3, 3), meta(5, 8)
    pairs = [
        (torch.conv2d(xt, wt, None, 2, 1, 1, 2), pyaten.conv2d(xo, wo, None, 2, 1, 1, 2)),
        (torch.conv2d(xt, wt, None, 1, "same", 1, 2), pyaten.conv2d(xo, wo, None, 1, "same", 1,
                                                                    2)),
        (TF.linear(xt, lt), F.linear(xo, lo)),
        (torch.ops.aten._convolution(xt, wt, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2,
                                     False, False, False, False),
         aten._convolution.default(xo, wo, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2,
                                   False, False, False, False)),
    ]
    for theirs, ours in pairs:
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.device.type == "meta"
    (gt, go) = meta(2, 6, 7, 6)
    args = ([1, 1], [0, 0], [1, 1], False, [0, 0], 2, [True, True, True])
    theirs = torch.ops.aten._convolution_double_backward(xt, wt, None, gt, wt, xt, *args)
    ours = aten._convolution_double_backward.default(xo, wo, None, go, wo, xo, *args)
    assert [tuple(t.shape) for t in ours] == [tuple(t.shape) for t in theirs]
