"""mm, bmm and matmul vs PyTorch: every matmul dimension rule (1-d/2-d/batched,
broadcasting), integer and reduced-precision products, out=, Meta, and errors."""

from __future__ import annotations

import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ops_shape_helpers import assert_same, assert_same_error, make_pair

import pyaten


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8",
              "complex64"]
)
def test_mm_matches_torch(dtype):
    ta, pa = make_pair((3, 4), dtype, seed=1)
    tb, pb = make_pair((4, 2), dtype, seed=2)
    rtol = 2e-2 if dtype == "bfloat16" else None
    assert_same(pyaten.mm(pa, pb), torch.mm(ta, tb), rtol=rtol)
    assert_same(pa.mm(pb), ta.mm(tb), rtol=rtol)
    # transposed and sliced operands
    assert_same(pyaten.mm(pb.t(), pa.t()), torch.mm(tb.t(), ta.t()), rtol=rtol)


def test_mm_empty_and_out():
    ta, pa = make_pair((0, 3), "float32")
    tb, pb = make_pair((3, 2), "float32")
    assert_same(pyaten.mm(pa, pb), torch.mm(ta, tb))
    ta, pa = make_pair((2, 0), "float32")
    tb, pb = make_pair((0, 3), "float32")
    assert_same(pyaten.mm(pa, pb), torch.mm(ta, tb))
    ta, pa = make_pair((2, 3), "float64")
    tb, pb = make_pair((3, 2), "float64")
    out_t, out_p = torch.empty(0, dtype=torch.float64), pyaten.empty(0, dtype=pyaten.float64)
    assert pyaten.mm(pa, pb, out=out_p) is out_p
    assert_same(out_p, torch.mm(ta, tb, out=out_t))


MATMUL_SHAPES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3,)),
    ((5, 2, 3), (3, 4)),
    ((3,), (5, 3, 4)),
    ((2, 3), (5, 3, 4)),
    ((5, 2, 3), (5, 3, 4)),
    ((1, 2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (5, 3, 4)),
    ((4, 1, 2, 3), (1, 6, 3, 2)),
    ((0, 2, 3), (3, 4)),
    ((2, 0), (0, 3)),
]


@pytest.mark.parametrize("a_shape,b_shape", MATMUL_SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_matmul_dimension_rules(a_shape, b_shape, dtype):
    ta, pa = make_pair(a_shape, dtype, seed=3)
    tb, pb = make_pair(b_shape, dtype, seed=4)
    expected = torch.matmul(ta, tb)
    assert_same(pyaten.matmul(pa, pb), expected)
    assert_same(pa.matmul(pb), expected)
    assert_same(pa @ pb, ta @ tb)


def test_matmul_out():
    ta, pa = make_pair((5, 2, 3), "float32")
    tb, pb = make_pair((3, 4), "float32")
    out_t, out_p = torch.empty(1), pyaten.empty(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.matmul(ta, tb, out=out_t)
        got = pyaten.matmul(pa, pb, out=out_p)
    assert got is out_p
    assert_same(got, expected)


def test_bmm_matches_torch():
    ta, pa = make_pair((4, 2, 3), "float64")
    tb, pb = make_pair((4, 3, 5), "float64")
    assert_same(pyaten.bmm(pa, pb), torch.bmm(ta, tb))
    assert_same(pa.bmm(pb), ta.bmm(tb))


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, a, b: m.mm(a, m.ones(4, 5)),
        lambda m, a, b: m.mm(m.ones(3), b),
        lambda m, a, b: m.mm(a, m.ones(3)),
        lambda m, a, b: m.mm(a, b.to(m.float64)),
        lambda m, a, b: m.mm(a.to(m.bool), b.to(m.bool)),
        lambda m, a, b: m.matmul(m.tensor(1.0), b),
        lambda m, a, b: m.matmul(m.ones(3), m.ones(4)),
        lambda m, a, b: m.matmul(a, m.ones(4)),
        lambda m, a, b: m.matmul(m.ones(3), m.ones(4, 2)),
        lambda m, a, b: m.matmul(m.ones(5, 2, 3), m.ones(4, 3, 2)),
        lambda m, a, b: m.bmm(m.ones(2, 2, 3), m.ones(3, 3, 2)),
        lambda m, a, b: m.bmm(a, m.ones(3, 3, 2)),
    ],
)
def test_linalg_errors_match_torch(fn):
    ta, pa = make_pair((2, 3), "float32")
    tb, pb = make_pair((3, 2), "float32")
    assert_same_error(lambda: fn(pyaten, pa, pb), lambda: fn(torch, ta, tb))


def test_mm_out_dtype_mismatch_raises():
    _, pa = make_pair((2, 3), "float32")
    _, pb = make_pair((3, 2), "float32")
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        pyaten.mm(pa, pb, out=pyaten.empty(2, 2, dtype=pyaten.float64))


@pytest.mark.parametrize("out_dtype", ["float64", "int64", "float16", "complex64", "bool"])
def test_mm_bmm_out_dtype_message_names_dtypes_as_torch(out_dtype):
    # ATen's structured out check prints c10 TypeMeta names ("float", "long int").
    ta, pa = make_pair((2, 3), "float32")
    tb, pb = make_pair((3, 2), "float32")
    t_out = torch.empty(2, 2, dtype=getattr(torch, out_dtype))
    p_out = pyaten.empty(2, 2, dtype=getattr(pyaten, out_dtype))
    assert_same_error(lambda: pyaten.mm(pa, pb, out=p_out), lambda: torch.mm(ta, tb, out=t_out))
    t3, p3 = make_pair((1, 2, 2), "float32")
    t_out3 = torch.empty(1, 2, 2, dtype=getattr(torch, out_dtype))
    p_out3 = pyaten.empty(1, 2, 2, dtype=getattr(pyaten, out_dtype))
    assert_same_error(lambda: pyaten.bmm(p3, p3, out=p_out3), lambda: torch.bmm(t3, t3, out=t_out3))


def test_meta_matmul_shapes():
    for a, b in [((5, 2, 3), (3, 4)), ((3,), (2, 3, 4)), ((2, 3), (3, 2))]:
        expected = torch.matmul(torch.empty(a, device="meta"), torch.empty(b, device="meta"))
        got = pyaten.matmul(pyaten.empty(a, device="meta"), pyaten.empty(b, device="meta"))
        assert_same(got, expected)


@settings(max_examples=40, deadline=None)
@given(
    batch_a=st.lists(st.integers(1, 3), max_size=2),
    batch_b=st.lists(st.integers(1, 3), max_size=2),
    n=st.integers(1, 3), k=st.integers(0, 3), m=st.integers(1, 3),
    vec_a=st.booleans(), vec_b=st.booleans(),
)
def test_matmul_broadcasting_property(batch_a, batch_b, n, k, m, vec_a, vec_b):
    a_shape = (k,) if vec_a else tuple(batch_a) + (n, k)
    b_shape = (k,) if vec_b else tuple(batch_b) + (k, m)
    ta, pa = make_pair(a_shape, "float64", seed=5)
    tb, pb = make_pair(b_shape, "float64", seed=6)
    try:
        expected = torch.matmul(ta, tb)
    except RuntimeError:
        assert_same_error(lambda: pyaten.matmul(pa, pb), lambda: torch.matmul(ta, tb),
                          message=False)
        return
    assert_same(pyaten.matmul(pa, pb), expected)


def test_bmm_out_and_unsafe_view():
    ta, pa = make_pair((2, 2, 3), "int32")
    tb, pb = make_pair((2, 3, 1), "int32")
    out_t, out_p = torch.empty(0, dtype=torch.int32), pyaten.empty(0, dtype=pyaten.int32)
    assert pyaten.bmm(pa, pb, out=out_p) is out_p
    assert_same(out_p, torch.bmm(ta, tb, out=out_t))
    got = pyaten.ops.aten._unsafe_view.default(pa, (3, 4))
    assert_same(got, torch.ops.aten._unsafe_view.default(ta, (3, 4)), strides=True)
