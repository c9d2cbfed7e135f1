"""Factories vs PyTorch: empty empty_strided zeros ones full (+ _like, new_*) arange rand
randn: dtype/device keywords, the default dtype, arange's dtype inference and length rule,
out= forms, generators, and errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from _helpers import dtype_name
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ops_shape_helpers import FLOAT_NAMES, assert_same, assert_same_error, make_pair

import pyaten


@pytest.mark.parametrize(
    "fn",
    [
        lambda m: m.zeros(2, 3),
        lambda m: m.zeros((2, 3), dtype=m.int8),
        lambda m: m.zeros([]),
        lambda m: m.ones(4, dtype=m.bool),
        lambda m: m.ones((0, 2), dtype=m.complex64),
        lambda m: m.full((2, 2), 7),
        lambda m: m.full((2, 2), 2.5),
        lambda m: m.full((2,), True),
        lambda m: m.full((2,), 1 + 2j),
        lambda m: m.full((3,), 3, dtype=m.float16),
        lambda m: m.zeros(2, 3, device="meta"),
        lambda m: m.full((1, 2), 4.0, device="meta", dtype=m.float64),
    ],
)
def test_filled_factories_match_torch(fn):
    assert_same(fn(pyaten), fn(torch), strides=True)


@pytest.mark.parametrize("default", ["float32", "float64"])
def test_default_dtype_is_used(default):
    previous = pyaten.get_default_dtype()
    pyaten.set_default_dtype(getattr(pyaten, default))
    torch_previous = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, default))
    try:
        for fn in (
            lambda m: m.zeros(2),
            lambda m: m.empty(2),
            lambda m: m.full((2,), 1.5),
            lambda m: m.full((2,), 1j),
            lambda m: m.arange(0.5, 3),
        ):
            got, expected = fn(pyaten), fn(torch)
            assert got.dtype.name == dtype_name(expected.dtype)
    finally:
        pyaten.set_default_dtype(previous)
        torch.set_default_dtype(torch_previous)


def test_empty_and_empty_strided_geometry():
    for fn in (
        lambda m: m.empty(2, 3, 4),
        lambda m: m.empty((2, 3, 4, 5), memory_format=m.channels_last),
        lambda m: m.empty_strided((2, 3), (1, 2)),
        lambda m: m.empty_strided((2, 3), (0, 1), dtype=m.int16),
        lambda m: m.empty(3, device="meta", dtype=m.bfloat16),
    ):
        got, expected = fn(pyaten), fn(torch)
        assert tuple(got.shape) == tuple(expected.shape)
        assert tuple(got.stride()) == tuple(expected.stride())
        assert got.dtype.name == dtype_name(expected.dtype)
        assert str(got.device) == str(expected.device)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex128"])
def test_like_and_new_factories(dtype):
    t, p = make_pair((3, 4), dtype)
    t_src, p_src = t.t(), p.t()
    cases = [
        (lambda x, m: m.zeros_like(x), True),
        (lambda x, m: m.ones_like(x, dtype=m.float64), True),
        (lambda x, m: m.full_like(x, 1), True),
        (lambda x, m: m.empty_like(x).fill_(3), True),
        (lambda x, m: m.zeros_like(x, memory_format=m.contiguous_format), True),
        (lambda x, m: x.new_zeros((2, 2)), True),
        (lambda x, m: x.new_ones(3, dtype=m.int16), True),
        (lambda x, m: x.new_full((1, 2), 1), True),
        (lambda x, m: x.new_empty((2,)).zero_(), True),
    ]
    for fn, strides in cases:
        assert_same(fn(p_src, pyaten), fn(t_src, torch), strides=strides)


ARANGE_CASES = [
    (5,),
    (0,),
    (2, 9),
    (2, 9, 3),
    (9, 2, -2),
    (0.0, 1.0, 0.1),
    (1, 2.5, 0.5),
    (-1.3, 2.5, 0.7),
    (10**6, 10**6 + 3),
    (0.5,),
]


@pytest.mark.parametrize("args", ARANGE_CASES)
@pytest.mark.parametrize("dtype", [None, "float32", "float64", "float16", "bfloat16", "int64",
                                   "int32", "int8", "uint8"])
def test_arange_matches_torch(args, dtype):
    kwargs_t = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    kwargs_p = {} if dtype is None else {"dtype": getattr(pyaten, dtype)}
    try:
        expected = torch.arange(*args, **kwargs_t)
    except (RuntimeError, ValueError):
        with pytest.raises((RuntimeError, ValueError)):
            pyaten.arange(*args, **kwargs_p)
        return
    assert_same(pyaten.arange(*args, **kwargs_p), expected)


@settings(max_examples=60, deadline=None)
@given(
    start=st.floats(-50, 50, allow_nan=False).map(lambda x: round(x, 2)),
    length=st.floats(0, 60, allow_nan=False),
    step=st.sampled_from([0.1, 0.25, 0.3, 1.0, 1.7, -0.3, -2.0, 3]),
    as_int=st.booleans(),
)
def test_arange_length_rule(start, length, step, as_int):
    end = start + math.copysign(length, step)
    if as_int:
        start, end, step = int(start), int(end), int(step) or 1
    try:
        expected = torch.arange(start, end, step)
    except RuntimeError:
        assert_same_error(lambda: pyaten.arange(start, end, step),
                          lambda: torch.arange(start, end, step))
        return
    assert_same(pyaten.arange(start, end, step), expected, rtol=1e-5)


def test_arange_out_and_meta():
    out_t, out_p = torch.empty(0, dtype=torch.int32), pyaten.empty(0, dtype=pyaten.int32)
    assert pyaten.arange(2, 11, 3, out=out_p) is out_p
    assert_same(out_p, torch.arange(2, 11, 3, out=out_t))
    out_t, out_p = torch.zeros(2, 2), pyaten.zeros(2, 2)
    with pytest.warns(UserWarning, match="does not match the computed number of elements"):
        pyaten.arange(5, out=out_p)
    with pytest.warns(UserWarning):
        torch.arange(5, out=out_t)
    assert_same(out_p, out_t)
    assert_same(pyaten.arange(0, 5, device="meta", dtype=pyaten.int8),
                torch.arange(0, 5, device="meta", dtype=torch.int8))


@pytest.mark.parametrize(
    "fn",
    [
        lambda m: m.arange(0, 10, 0),
        lambda m: m.arange(10, 0, 1),
        lambda m: m.arange(0, float("inf")),
        lambda m: m.arange(0, float("nan")),
        lambda m: m.arange(5, dtype=m.bool),
        lambda m: m.arange(5, dtype=m.complex64),
        lambda m: m.empty(-1, 2),
        lambda m: m.zeros(2, -3),
        lambda m: m.empty_strided((2, 3), (1,)),
        lambda m: m.empty_strided((2, 3), (-1, 1)),
        lambda m: m.rand(2, dtype=m.int64),
        lambda m: m.rand(2, dtype=m.bool),
        lambda m: m.randn(2, dtype=m.int32),
        lambda m: m.full((2,), 1e300, dtype=m.float32),
        lambda m: m.ones(2, dtype=m.int8).new_full((2,), 300),
    ],
)
def test_factory_errors_match_torch(fn):
    assert_same_error(lambda: fn(pyaten), lambda: fn(torch))


@pytest.mark.parametrize("name", ["rand", "randn"])
@pytest.mark.parametrize("dtype", FLOAT_NAMES + ("complex64",))
def test_random_factories_shape_dtype_and_distribution(name, dtype):
    fn = getattr(pyaten, name)
    x = fn(200, 50, dtype=getattr(pyaten, dtype))
    expected = getattr(torch, name)(2, 3, dtype=getattr(torch, dtype))
    assert x.dtype.name == dtype_name(expected.dtype)
    values = x.to(pyaten.complex128 if dtype == "complex64" else pyaten.float64).numpy()
    values = values.real if dtype == "complex64" else values
    if name == "rand":
        assert values.min() >= 0 and values.max() < 1 + 1e-3
        assert abs(values.mean() - 0.5) < 0.02
    else:
        assert abs(values.mean()) < 0.03
        target = math.sqrt(0.5) if dtype == "complex64" else 1.0
        assert abs(values.std() - target) < 0.03


def test_rand_generator_reproducible_and_out_forms():
    g1 = pyaten.Generator().manual_seed(1234) if hasattr(pyaten, "Generator") else None
    if g1 is None:
        pytest.skip("core has no Generator yet")
    g2 = pyaten.Generator().manual_seed(1234)
    a = pyaten.rand(3, 4, generator=g1)
    b = pyaten.rand(3, 4, generator=g2)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    c = pyaten.randn(5, generator=g1)
    d = pyaten.randn(5, generator=g2)
    np.testing.assert_array_equal(c.numpy(), d.numpy())
    out = pyaten.empty(0, dtype=pyaten.float64)
    assert pyaten.rand(2, 2, out=out) is out and tuple(out.shape) == (2, 2)
    assert pyaten.randn((3,), generator=g1, out=out) is out and tuple(out.shape) == (3,)


def test_manual_seed_makes_default_generator_reproducible():
    if not hasattr(pyaten, "manual_seed"):
        pytest.skip("core has no manual_seed yet")
    pyaten.manual_seed(7)
    a = pyaten.randn(4)
    pyaten.manual_seed(7)
    b = pyaten.randn(4)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_meta_random_and_requires_grad():
    m = pyaten.rand(2, 3, device="meta")
    assert tuple(m.shape) == (2, 3) and m.device == pyaten.device("meta")
    r = pyaten.zeros(2, requires_grad=True)
    assert r.requires_grad and r.is_leaf


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, o: m.zeros(2, 3, out=o),
        lambda m, o: m.ones((3,), out=o),
        lambda m, o: m.full((2, 2), 4, out=o),
        lambda m, o: m.empty((2, 2), out=o).fill_(1),
        lambda m, o: m.arange(1, 4, out=o),
    ],
)
@pytest.mark.parametrize("start", [(0,), (2, 3), (7,)])
def test_factory_out_forms(fn, start):
    out_t = torch.zeros(start, dtype=torch.float64)
    out_p = pyaten.zeros(start, dtype=pyaten.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = fn(torch, out_t)
        got = fn(pyaten, out_p)
    assert got is out_p
    assert_same(got, expected, strides=True)
