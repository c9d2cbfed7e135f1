"""copy_ fill_ zero_ clone contiguous to (all overloads) and _to_copy vs PyTorch: values,
dtypes, layouts, aliasing (`to` returning self), the version counter, Meta, and errors."""

from __future__ import annotations

import warnings

import pytest
import torch
from test_ops_shape_helpers import (
    DTYPE_NAMES,
    assert_same,
    assert_same_error,
    make_pair,
    pdt,
    tdt,
)

import pyaten

CAST_SOURCES = ("bool", "uint8", "int32", "int64", "float16", "bfloat16", "float64", "complex64")


@pytest.mark.parametrize("src", CAST_SOURCES)
@pytest.mark.parametrize("dst", DTYPE_NAMES)
def test_copy_casts_like_torch(src, dst):
    t_src, p_src = make_pair((2, 3), src, seed=1)
    t_dst, p_dst = make_pair((2, 3), dst, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = t_dst.copy_(t_src)
        got = p_dst.copy_(p_src)
    assert got is p_dst
    assert_same(got, expected)


def test_copy_warns_when_dropping_imaginary_part():
    _, p_src = make_pair((2,), "complex64")
    _, p_dst = make_pair((2,), "float32")
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        p_dst.copy_(p_src)


@pytest.mark.parametrize(
    "dst_shape,src_shape", [((2, 3), (3,)), ((2, 3), (1, 3)), ((2, 3), ()), ((0, 3), (3,))]
)
def test_copy_broadcasts_into_views(dst_shape, src_shape):
    t, p = make_pair((4, 3), "float32")
    t_src, p_src = make_pair(src_shape, "float64", seed=3)
    t_view, p_view = t[: dst_shape[0]], p[: dst_shape[0]]
    version = p._version
    t_view.copy_(t_src)
    p_view.copy_(p_src)
    assert_same(p, t)
    assert p._version == version + 1


@pytest.mark.parametrize(
    "name,fn",
    [
        ("size_mismatch", lambda m, x: x.copy_(m.ones(4))),
        ("more_dims", lambda m, x: x.copy_(m.ones(2, 2, 3))),
        ("expanded_dst", lambda m, x: m.zeros(1, 3).expand(2, 3).copy_(x)),
        ("partial_overlap", lambda m, x: x.view(6)[1:].copy_(x.view(6)[:-1])),
        ("transposed_self", lambda m, x: x.view(3, 2)[:2].copy_(x.view(3, 2)[:2].t())),
        ("from_meta", lambda m, x: x.copy_(m.empty(2, 3, device="meta"))),
        ("fill_1d_value", lambda m, x: x.fill_(m.ones(2))),
        ("fill_complex_into_real", lambda m, x: x.fill_(1 + 2j)),
        ("fill_float_overflow", lambda m, x: x.fill_(1e300)),
        ("fill_int8_overflow", lambda m, x: x.to(m.int8).fill_(300)),
        ("fill_uint8_negative", lambda m, x: x.to(m.uint8).fill_(-256)),
        ("fill_int_nan", lambda m, x: x.to(m.int32).fill_(float("nan"))),
        ("fill_half_overflow", lambda m, x: x.to(m.float16).fill_(1e6)),
        ("clone_channels_last_rank", lambda m, x: x.clone(memory_format=m.channels_last)),
        ("to_meta_and_back", lambda m, x: x.to("meta").to("cpu")),
    ],
)
def test_copy_errors_match_torch(name, fn):
    t, p = make_pair((2, 3), "float32")
    assert_same_error(lambda: fn(pyaten, p), lambda: fn(torch, t))


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize(
    "value", [0, 1, -1, 255, 3.75, -2.5, True, float("inf"), float("nan"), 2 + 0j]
)
def test_fill_scalar_like_torch(dtype, value):
    t, p = make_pair((2, 2), dtype)
    try:
        expected = t.fill_(value)
    except RuntimeError:
        assert_same_error(lambda: p.fill_(value), lambda: t.fill_(value))
        return
    got = pyaten.fill_(p, value)
    assert got is p
    assert_same(got, expected)


@pytest.mark.parametrize("dtype", ["int8", "float16", "bool", "complex128"])
def test_fill_tensor_value_casts_without_check(dtype):
    t, p = make_pair((3,), dtype)
    for value in (300, -7.5, 1e6):
        assert_same(p.fill_(pyaten.tensor(value)), t.fill_(torch.tensor(value)))


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_zero_and_fill_on_views(dtype):
    t, p = make_pair((3, 4), dtype)
    t[:, ::2].zero_()
    pyaten.zero_(p[:, ::2])
    assert_same(p, t)
    t.t()[1].fill_(1)
    p.t()[1].fill_(1)
    assert_same(p, t)


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x,
        lambda x: x.t(),
        lambda x: x[:, ::2],
        lambda x: x[:1].expand(3, 4),
        lambda x: x.view(3, 2, 2).permute(2, 0, 1),
        lambda x: x[1],
    ],
)
@pytest.mark.parametrize("fmt", [None, "contiguous_format", "preserve_format"])
def test_clone_layout_like_torch(make, fmt):
    t, p = make_pair((3, 4), "float64")
    t_src, p_src = make(t), make(p)
    kwargs_t = {} if fmt is None else {"memory_format": getattr(torch, fmt)}
    kwargs_p = {} if fmt is None else {"memory_format": getattr(pyaten, fmt)}
    expected = t_src.clone(**kwargs_t)
    got = p_src.clone(**kwargs_p)
    assert_same(got, expected, strides=True)
    assert got.untyped_storage() is not p.untyped_storage()


def test_clone_channels_last():
    t, p = make_pair((2, 3, 4, 5), "float32")
    expected = t.clone(memory_format=torch.channels_last)
    assert_same(p.clone(memory_format=pyaten.channels_last), expected, strides=True)
    assert_same(
        pyaten.clone(p, memory_format=pyaten.channels_last).contiguous(), expected.contiguous(),
        strides=True,
    )


@pytest.mark.parametrize("make", [lambda x: x, lambda x: x.t(), lambda x: x[:, 1:]])
def test_contiguous_returns_self_only_when_contiguous(make):
    t, p = make_pair((3, 4), "int16")
    t_src, p_src = make(t), make(p)
    expected = t_src.contiguous()
    got = p_src.contiguous()
    assert_same(got, expected, strides=True)
    assert (got is p_src) == (expected is t_src)


@pytest.mark.parametrize("src", ["float32", "int64", "bool", "complex64", "bfloat16"])
@pytest.mark.parametrize("dst", ["float32", "float64", "int32", "bool", "float16", "complex128"])
def test_to_dtype_overloads(src, dst):
    t, p = make_pair((2, 3), src)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = [
            (lambda x, m: x.to(getattr(m, dst)), "dtype"),
            (lambda x, m: x.to(dtype=getattr(m, dst)), "dtype_layout"),
            (lambda x, m: x.to("cpu", getattr(m, dst)), "device"),
            (lambda x, m: x.to(getattr(m, dst), copy=True), "copy"),
        ]
        for fn, _ in cases:
            expected = fn(t, torch)
            got = fn(p, pyaten)
            assert_same(got, expected)
            assert (got is p) == (expected is t)


def test_to_other_and_device():
    t, p = make_pair((2, 3), "float32")
    t_other, p_other = make_pair((1,), "int16")
    assert_same(p.to(p_other), t.to(t_other))
    assert p.to(p) is p
    assert p.to("cpu") is p
    assert p.to(device="cpu", dtype=pyaten.float32) is p
    meta = p.to("meta")
    assert_same(meta, t.to("meta"))
    assert_same(meta.to(pyaten.float64), t.to("meta").to(torch.float64))


def test_to_copy_preserves_dense_layout():
    t, p = make_pair((3, 4), "float32")
    assert_same(p.t().to(pyaten.float64), t.t().to(torch.float64), strides=True)
    got = pyaten.ops.aten._to_copy.default(p.t(), dtype=pyaten.int32)
    assert_same(got, torch.ops.aten._to_copy.default(t.t(), dtype=torch.int32), strides=True)


def test_meta_copy_fill_zero_keep_shapes():
    m = pyaten.empty(2, 3, device="meta")
    assert m.copy_(pyaten.ones(3)) is m
    assert m.fill_(2) is m
    assert m.zero_() is m
    c = m.clone()
    assert c.device == pyaten.device("meta") and tuple(c.shape) == (2, 3)


@pytest.mark.parametrize("name", ["float32", "int64"])
def test_inplace_ops_bump_version_once(name):
    _, p = make_pair((2, 2), name)
    v = p[0]
    start = p._version
    v.fill_(1)
    v.zero_()
    v.copy_(pyaten.ones(2, dtype=pdt(name)))
    assert p._version == v._version == start + 3
    assert tdt(name) is not None


def test_autogen_out_variants():
    t, p = make_pair((2, 3), "float32")
    aten_t, aten_p = torch.ops.aten, pyaten.ops.aten
    cases = [
        lambda a, m, x: a.clone.out(x, out=m.empty(0)),
        lambda a, m, x: a.copy.out(x, x.t().t() * 2, out=m.empty(0)),
        lambda a, m, x: a.fill.Scalar_out(x, 3, out=m.empty(0)),
        lambda a, m, x: a.fill.Tensor_out(x, m.tensor(4.0), out=m.empty(0)),
        lambda a, m, x: a.sum.out(x, out=m.empty(())),
        lambda a, m, x: a.index_put.out(x, [m.tensor([1])], m.tensor(5.0), out=m.empty(0)),
    ]
    for fn in cases:
        assert_same(fn(aten_p, pyaten, p), fn(aten_t, torch, t))
    assert_same(p, t)


@pytest.mark.parametrize("dtype", ["float32", "int16", "bool"])
def test_functional_fill(dtype):
    t, p = make_pair((2, 3), dtype)
    t_src, p_src = t.t(), p.t()
    assert_same(pyaten.fill(p_src, 3), torch.fill(t_src, 3), strides=True)
    assert_same(pyaten.fill(p_src, pyaten.tensor(1.5)), torch.fill(t_src, torch.tensor(1.5)))
    assert_same(p, t)
    assert_same_error(lambda: pyaten.fill(p, pyaten.ones(2)), lambda: torch.fill(t, torch.ones(2)))
