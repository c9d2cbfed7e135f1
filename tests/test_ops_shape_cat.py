"""cat vs PyTorch: dims, type promotion, legacy empty 1-d tensors, out= (dtype casting,
resizing, overlap), layouts, Meta, and the error texts."""

from __future__ import annotations

import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ops_shape_helpers import assert_same, assert_same_error, make_pair

import pyaten


def _pairs(shapes, dtypes):
    ts, ps = [], []
    for i, (shape, dtype) in enumerate(zip(shapes, dtypes)):
        t, p = make_pair(shape, dtype, seed=i)
        ts.append(t)
        ps.append(p)
    return ts, ps


CASES = [
    ([(2, 3), (4, 3)], ["float32", "float32"], 0),
    ([(2, 3), (2, 1), (2, 0)], ["int64", "int64", "int64"], 1),
    ([(2, 3), (2, 3)], ["float32", "float32"], -1),
    ([(2, 3), (2, 3)], ["int8", "uint8"], 0),
    ([(2, 3), (2, 3)], ["int64", "bool"], 0),
    ([(2,), (3,)], ["float16", "bfloat16"], 0),
    ([(1, 2), (1, 2)], ["float32", "complex64"], 0),
    ([(2, 3), (0,)], ["float32", "float32"], 0),
    ([(0,), (2, 3)], ["int64", "float32"], 1),
    ([(0,), (0,)], ["float32", "float32"], 0),
    ([(0,), (2, 3)], ["float64", "int32"], 0),
    ([(3,)], ["float32"], 0),
    ([(2, 2, 2)] * 4, ["float64"] * 4, 1),
]


@pytest.mark.parametrize("shapes,dtypes,dim", CASES)
def test_cat_matches_torch(shapes, dtypes, dim):
    ts, ps = _pairs(shapes, dtypes)
    expected = torch.cat(ts, dim)
    got = pyaten.cat(ps, dim)
    assert_same(got, expected, strides=True)
    assert_same(pyaten.cat(tuple(ps), dim=dim), expected)


def test_cat_views_and_layouts():
    t, p = make_pair((3, 4), "float32")
    assert_same(pyaten.cat([p.t(), p.t()]), torch.cat([t.t(), t.t()]), strides=True)
    assert_same(pyaten.cat([p[:, ::2], p[:, 1:2]], 1), torch.cat([t[:, ::2], t[:, 1:2]], 1))
    t4, p4 = make_pair((1, 2, 3, 4), "float32")
    t4 = t4.contiguous(memory_format=torch.channels_last)
    p4 = p4.contiguous(memory_format=pyaten.channels_last)
    assert_same(pyaten.cat([p4, p4]), torch.cat([t4, t4]), strides=True)


def test_cat_out():
    ts, ps = _pairs([(2, 3), (1, 3)], ["int64", "int64"])
    out_t = torch.empty(0, dtype=torch.float16)
    out_p = pyaten.empty(0, dtype=pyaten.float16)
    assert pyaten.cat(ps, out=out_p) is out_p
    assert_same(out_p, torch.cat(ts, out=out_t))
    out_t, out_p = torch.empty(2, 2), pyaten.empty(2, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pyaten.cat(ps, out=out_p)
    assert any("was resized" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(out_p, torch.cat(ts, out=out_t))


@pytest.mark.parametrize(
    "fn",
    [
        # no tensor argument: the Undefined key's default-backend kernel runs cat's meta
        lambda m, a, b: m.cat([]),
        lambda m, a, b: m.ops.aten.cat.default([]),
        lambda m, a, b: m.cat((), dim=1),
        lambda m, a, b: m.cat([a, m.ones(2, 2)]),
        lambda m, a, b: m.cat([a, m.ones(2)]),
        lambda m, a, b: m.cat([m.tensor(1.0), m.ones(2)]),
        lambda m, a, b: m.cat([m.ones(2), m.tensor(1.0)]),
        lambda m, a, b: m.cat([a, a], dim=2),
        lambda m, a, b: m.cat([a, a], dim=-3),
        lambda m, a, b: m.cat([a, b], out=m.empty(0, dtype=m.int64)),
        lambda m, a, b: m.cat([a, a], out=a),
        lambda m, a, b: m.cat([m.ones(0, 3), m.ones(2, 3, dtype=m.int64)], dim=1),
    ],
)
def test_cat_errors_match_torch(fn):
    ta, pa = make_pair((2, 3), "float32")
    tb, pb = make_pair((2, 3), "float64")
    assert_same_error(lambda: fn(pyaten, pa, pb), lambda: fn(torch, ta, tb))


def test_cat_meta_and_device_mismatch():
    shapes = [(2, 3), (1, 3)]
    expected = torch.cat([torch.empty(s, device="meta") for s in shapes])
    assert_same(pyaten.cat([pyaten.empty(s, device="meta") for s in shapes]), expected)
    with pytest.raises(RuntimeError, match="is not on the expected device"):
        pyaten.cat([pyaten.ones(2), pyaten.ones(2, device="meta")])


@settings(max_examples=40, deadline=None)
@given(
    base=st.lists(st.integers(0, 3), min_size=1, max_size=3),
    extents=st.lists(st.integers(0, 3), min_size=1, max_size=4),
    data=st.data(),
)
def test_cat_random_shapes(base, extents, data):
    dim = data.draw(st.integers(-len(base), len(base) - 1))
    shapes = []
    for e in extents:
        shape = list(base)
        shape[dim] = e
        shapes.append(tuple(shape))
    dtypes = [data.draw(st.sampled_from(["int32", "float32", "bool"])) for _ in shapes]
    ts, ps = _pairs(shapes, dtypes)
    assert_same(pyaten.cat(ps, dim), torch.cat(ts, dim), strides=True)


SPLIT_CASES = [
    lambda m, x: m.stack([x, x]),
    lambda m, x: m.stack([x, x * 2, x], 2),
    lambda m, x: m.stack((x, x), -1),
    lambda m, x: m.stack([x[0, 0], x[1, 1]]),
    lambda m, x: x.split(2),
    lambda m, x: m.split(x, 3, 1),
    lambda m, x: x.split([1, 2], 0),
    lambda m, x: x.split_with_sizes([4, 0], 1),
    lambda m, x: m.split(x[:0], 0),
    lambda m, x: x.chunk(2),
    lambda m, x: m.chunk(x, 5, 1),
    lambda m, x: x.chunk(3, 1),
    lambda m, x: m.zeros(0).chunk(3),
    lambda m, x: x.unbind(),
    lambda m, x: m.unbind(x.t(), 1),
    lambda m, x: x.narrow(1, 1, 2),
    lambda m, x: m.narrow(x, 0, -1, 1),
    lambda m, x: x.flatten(),
    lambda m, x: m.flatten(x.t()),
    lambda m, x: x.flatten(0, 0),
    lambda m, x: x[0, 0].flatten(),
]


@pytest.mark.parametrize("fn", SPLIT_CASES)
def test_stack_split_chunk_unbind_narrow_flatten(fn):
    t, p = make_pair((3, 4), "float32")
    expected = fn(torch, t)
    got = fn(pyaten, p)
    if isinstance(expected, torch.Tensor):
        assert_same(got, expected, strides=True)
        return
    assert isinstance(got, (list, tuple)) and len(got) == len(expected)
    for g, e in zip(got, expected):
        assert_same(g, e, strides=True)
        assert g._base is not None  # the pieces are views of the input


SPLIT_ERRORS = [
    lambda m, x: m.stack([]),
    lambda m, x: m.stack([x, m.zeros(3, 3)]),
    lambda m, x: m.stack([x, x], 3),
    lambda m, x: x.split(-1),
    lambda m, x: x.split(0),
    lambda m, x: m.tensor(1.0).split(1),
    lambda m, x: x.split([1, 1]),
    lambda m, x: x.split([-1, 4]),
    lambda m, x: x.chunk(0),
    lambda m, x: m.tensor(1.0).chunk(1),
    lambda m, x: m.tensor(1.0).unbind(),
    lambda m, x: x.narrow(0, 4, 1),
    lambda m, x: x.narrow(0, 1, 3),
    lambda m, x: x.narrow(0, 1, -1),
    lambda m, x: m.tensor(1.0).narrow(0, 0, 1),
    lambda m, x: x.flatten(1, 0),
]


@pytest.mark.parametrize("fn", SPLIT_ERRORS)
def test_split_family_errors_match_torch(fn):
    t, p = make_pair((3, 4), "float32")
    assert_same_error(lambda: fn(pyaten, p), lambda: fn(torch, t))


def test_stack_out_and_meta():
    ts, ps = _pairs([(2, 3), (2, 3)], ["int64", "int64"])
    out_t, out_p = torch.empty(0, dtype=torch.int64), pyaten.empty(0, dtype=pyaten.int64)
    assert pyaten.stack(ps, 1, out=out_p) is out_p
    assert_same(out_p, torch.stack(ts, 1, out=out_t))
    m = pyaten.empty(2, 3, device="meta")
    assert_same(pyaten.stack([m, m]), torch.stack([torch.empty(2, 3, device="meta")] * 2))
    assert [tuple(c.shape) for c in m.chunk(2, 1)] == [(2, 2), (2, 1)]
