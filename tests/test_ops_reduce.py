"""sum and mean vs PyTorch: all dims and dim lists, keepdim, dtype=, out=, integer sums to
int64, mean of integers erroring, empty and 0-dim inputs, Meta, and errors."""

from __future__ import annotations

import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ops_shape_helpers import DTYPE_NAMES, assert_same, assert_same_error, make_pair

import pyaten

DIM_CASES = [None, 0, -1, (0, 2), [1], (), (-1, 0, 1)]


def _call(m, x, name, dim, keepdim, dtype):
    fn = getattr(m, name)
    kwargs = {} if dtype is None else {"dtype": getattr(m, dtype)}
    if dim is None:
        return fn(x, **kwargs)
    return fn(x, dim, keepdim=keepdim, **kwargs)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("dim", DIM_CASES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_matches_torch(dtype, dim, keepdim):
    t, p = make_pair((2, 3, 4), dtype)
    assert_same(_call(pyaten, p, "sum", dim, keepdim, None), _call(torch, t, "sum", dim, keepdim,
                                                                    None))
    assert_same(p.sum(dim=dim) if dim is not None else p.sum(),
                t.sum(dim=dim) if dim is not None else t.sum())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64"])
@pytest.mark.parametrize("dim", DIM_CASES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_mean_matches_torch(dtype, dim, keepdim):
    t, p = make_pair((2, 3, 4), dtype)
    assert_same(_call(pyaten, p, "mean", dim, keepdim, None),
                _call(torch, t, "mean", dim, keepdim, None))


@pytest.mark.parametrize("src", ["bool", "int8", "int32", "float16", "float32"])
@pytest.mark.parametrize("dst", ["int16", "int64", "float32", "float64", "complex128", "bool"])
def test_sum_dtype_argument(src, dst):
    t, p = make_pair((3, 5), src)
    for dim in (None, 1):
        assert_same(_call(pyaten, p, "sum", dim, False, dst), _call(torch, t, "sum", dim, False,
                                                                     dst))


@pytest.mark.parametrize("src", ["int64", "float16", "float32"])
@pytest.mark.parametrize("dst", ["float32", "float64", "complex64"])
def test_mean_dtype_argument(src, dst):
    t, p = make_pair((3, 5), src)
    for dim in (None, (0, 1)):
        assert_same(_call(pyaten, p, "mean", dim, True, dst),
                    _call(torch, t, "mean", dim, True, dst))


def test_integer_sum_wraps_like_torch():
    t = torch.full((70,), 2**62, dtype=torch.int64)
    p = pyaten.full((70,), 2**62, dtype=pyaten.int64)
    assert_same(p.sum(), t.sum())
    t8, p8 = make_pair((50,), "int8", low=100, high=127)
    assert_same(p8.sum(dtype=pyaten.int8), t8.sum(dtype=torch.int8))


@pytest.mark.parametrize("shape", [(), (0,), (0, 3), (3, 0)])
@pytest.mark.parametrize("name", ["sum", "mean"])
def test_empty_and_scalar_inputs(shape, name):
    t, p = make_pair(shape, "float32")
    assert_same(getattr(p, name)(), getattr(t, name)())
    if shape:
        assert_same(getattr(p, name)(0), getattr(t, name)(0))
    else:
        assert_same(getattr(p, name)(0, keepdim=True), getattr(t, name)(0, keepdim=True))


def test_out_variants_match_torch():
    t, p = make_pair((2, 3), "int64")
    tf, pf = make_pair((2, 3), "float32")
    cases = [
        (lambda m, x, xf, o: m.sum(x, 0, out=o), "float32", (0,)),
        (lambda m, x, xf, o: m.sum(xf, 1, keepdim=True, out=o), "int64", (2, 1)),
        (lambda m, x, xf, o: m.mean(xf, 0, out=o), "float64", (3,)),
        (lambda m, x, xf, o: m.mean(xf, dtype=m.float64, out=o), "float64", (5,)),
    ]
    for fn, out_dtype, out_shape in cases:
        t_out = torch.empty(out_shape, dtype=getattr(torch, out_dtype))
        p_out = pyaten.empty(out_shape, dtype=getattr(pyaten, out_dtype))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = fn(torch, t, tf, t_out)
            got = fn(pyaten, p, pf, p_out)
        assert got is p_out
        assert_same(got, expected)


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, x: x.mean(),
        lambda m, x: x.to(m.float32).mean(dtype=m.int64),
        lambda m, x: x.sum(dim=(0, 0)),
        lambda m, x: x.sum(dim=(0, -2)),
        lambda m, x: x.sum(dim=3),
        lambda m, x: m.tensor(3).sum(dim=(0, -1)),
        lambda m, x: m.mean(x.to(m.float32), 0, out=m.empty(3, dtype=m.int64)),
        lambda m, x: m.mean(x, 0, out=m.empty(3, dtype=m.float32)),
    ],
)
def test_reduce_errors_match_torch(fn):
    t, p = make_pair((2, 3), "int64")
    assert_same_error(lambda: fn(pyaten, p), lambda: fn(torch, t))


def test_sum_out_dtype_mismatch_raises():
    _, p = make_pair((2, 3), "int64")
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        pyaten.sum(p, 0, dtype=pyaten.int32, out=pyaten.empty(3))


def test_meta_reductions_shape_and_dtype():
    for fn in (
        lambda m: m.empty(2, 3, device="meta").sum(0),
        lambda m: m.empty(2, 3, device="meta", dtype=m.int32).sum(),
        lambda m: m.empty(2, 3, 4, device="meta").mean((0, 2), keepdim=True),
    ):
        assert_same(fn(pyaten), fn(torch))


@settings(max_examples=50, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=0, max_size=4),
    data=st.data(),
    keepdim=st.booleans(),
)
def test_sum_mean_random_dims(shape, data, keepdim):
    t, p = make_pair(tuple(shape), "float64", seed=len(shape))
    ndim = max(len(shape), 1)
    dims = data.draw(st.lists(st.integers(-ndim, ndim - 1), max_size=ndim, unique_by=lambda d:
                              d % ndim))
    assert_same(p.sum(dims, keepdim=keepdim), t.sum(dims, keepdim=keepdim))
    assert_same(p.mean(dims, keepdim=keepdim), t.mean(dims, keepdim=keepdim))
