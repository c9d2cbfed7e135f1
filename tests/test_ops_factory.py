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


# --- scalar_tensor, eye, linspace, logspace, tril/triu_indices (differential) ---------------

from _helpers import assert_same_outcome  # noqa: E402

ALL_DTYPES = ("float32", "float64", "float16", "bfloat16", "complex64", "complex128", "int64",
              "int32", "int16", "int8", "uint8", "bool")

SPACED = {
    "linspace": lambda m, d: m.linspace(-2, 3, 7, dtype=d),
    "linspace_int_args": lambda m, d: m.linspace(0, 10, 4, dtype=d),
    "linspace_desc": lambda m, d: m.linspace(10, -3, 5, dtype=d),
    "linspace_one": lambda m, d: m.linspace(3, 7, 1, dtype=d),
    "linspace_zero": lambda m, d: m.linspace(3, 7, 0, dtype=d),
    "linspace_tensors": lambda m, d: m.linspace(m.tensor(1.0), m.tensor(4.0), 4, dtype=d),
    "linspace_tensor_scalar": lambda m, d: m.linspace(m.tensor(1), 4, 3, dtype=d),
    "linspace_scalar_tensor": lambda m, d: m.linspace(1, m.tensor(4.0), 3, dtype=d),
    "logspace": lambda m, d: m.logspace(0, 2, 5, dtype=d),
    "logspace_base2": lambda m, d: m.logspace(0, 6, 7, base=2, dtype=d),
    "logspace_neg": lambda m, d: m.logspace(2, -1, 4, 3.0, dtype=d),
    "logspace_tensors": lambda m, d: m.logspace(m.tensor(0.0), m.tensor(1.0), 3, dtype=d),
    "eye": lambda m, d: m.eye(3, dtype=d),
    "eye_m": lambda m, d: m.eye(2, 4, dtype=d),
    "eye_empty": lambda m, d: m.eye(0, 3, dtype=d),
    "scalar_tensor": lambda m, d: m.scalar_tensor(2.5, dtype=d),
    "scalar_tensor_bool": lambda m, d: m.scalar_tensor(True, dtype=d),
    "tril_indices": lambda m, d: m.tril_indices(4, 3, 1, dtype=d),
    "triu_indices": lambda m, d: m.triu_indices(3, 5, -1, dtype=d),
    "zeros": lambda m, d: m.zeros(2, 3, dtype=d),
    "full": lambda m, d: m.full((2,), 1, dtype=d),
}


@pytest.mark.parametrize("dtype", (None,) + ALL_DTYPES)
@pytest.mark.parametrize("name", sorted(SPACED))
def test_new_factories_match_torch(name, dtype):
    fn = SPACED[name]
    # exact bits for floating linspace: test_linspace_floating_bit_for_bit
    rtol = {"float16": 2e-3, "bfloat16": 1e-2}.get(dtype, 1e-5)
    assert_same_outcome(
        lambda: fn(pyaten, None if dtype is None else getattr(pyaten, dtype)),
        lambda: fn(torch, None if dtype is None else getattr(torch, dtype)),
        rtol=rtol, atol=1e-6, strides=True,
    )


META_CALLS = {
    "linspace": lambda m: m.linspace(-2, 3, 7, device="meta"),
    "linspace_int": lambda m: m.linspace(0, 10, 4, dtype=m.int64, device="meta"),
    "logspace": lambda m: m.logspace(0, 2, 5, base=2, device="meta"),
    "eye": lambda m: m.eye(3, device="meta"),
    "eye_m": lambda m: m.eye(2, 4, dtype=m.bool, device="meta"),
    "scalar_tensor": lambda m: m.scalar_tensor(2.5, device="meta"),
    "tril_indices": lambda m: m.tril_indices(4, 3, 1, device="meta"),
    "triu_indices": lambda m: m.triu_indices(3, 5, -1, dtype=m.int32, device="meta"),
    "eye_out": lambda m: m.eye(3, out=m.empty(0, device="meta")),
    "linspace_out": lambda m: m.linspace(0, 1, 5, out=m.empty(0, device="meta")),
}


@pytest.mark.parametrize("name", sorted(META_CALLS))
def test_new_factories_on_meta(name):
    fn = META_CALLS[name]
    assert_same_outcome(lambda: fn(pyaten), lambda: fn(torch), strides=True)


FACTORY_CALLS = {
    "linspace_complex": lambda m: m.linspace(0, 1 + 1j, 3),
    "logspace_complex": lambda m: m.logspace(0, 1j, 3),
    "linspace_out": lambda m: m.linspace(0, 5, 3, out=m.empty(0, dtype=m.int32)),
    "linspace_out_resize": lambda m: m.linspace(0, 5, 4, out=m.empty(2)),
    "linspace_tensor_out": lambda m: m.linspace(m.tensor(0.0), m.tensor(1.0), 3, out=m.empty(0)),
    "logspace_out": lambda m: m.logspace(0, 3, 4, 2, out=m.empty(0, dtype=m.int64)),
    "eye_out": lambda m: m.eye(3, out=m.empty(0, dtype=m.int8)),
    "eye_m_out": lambda m: m.eye(2, 3, out=m.empty(5, 5)),
    "scalar_tensor_out": lambda m: m.ops.aten.scalar_tensor.out(3, out=m.empty(0, dtype=m.int32)),
    "tril_out": lambda m: m.ops.aten.tril_indices.out(3, 3, out=m.empty(0, dtype=m.int64)),
    "linspace_neg_steps": lambda m: m.linspace(0, 1, -1),
    "logspace_neg_steps": lambda m: m.logspace(0, 1, -1),
    "linspace_1d_tensor": lambda m: m.linspace(m.tensor([0.0]), m.tensor(1.0), 3),
    "eye_neg": lambda m: m.eye(-1),
    "eye_m_neg": lambda m: m.eye(2, -1),
    "eye_chalf": lambda m: m.eye(2, dtype=m.chalf),
    "tril_neg_row": lambda m: m.tril_indices(-1, 3),
    "triu_neg_col": lambda m: m.triu_indices(3, -3),
    "tril_big_offset": lambda m: m.tril_indices(3, 3, 10),
    "triu_big_offset": lambda m: m.triu_indices(3, 3, -10),
    "tril_empty": lambda m: m.tril_indices(0, 3),
    "scalar_tensor_int_requires_grad": lambda m: m.scalar_tensor(3, dtype=m.int64,
                                                                 requires_grad=True),
    "full_int_requires_grad": lambda m: m.full((2,), 3, requires_grad=True),
    "zeros_pin_memory": lambda m: m.zeros(2, pin_memory=True),
    "empty_strided_pin_memory": lambda m: m.empty_strided((2,), (1,), pin_memory=True),
    "zeros_layout": lambda m: m.zeros(2, layout=m.strided),
    "zeros_out_dtype": lambda m: m.zeros(2, out=m.empty(0), dtype=m.float64),
    "zeros_out_same_dtype": lambda m: m.zeros(2, out=m.empty(0), dtype=m.float32),
    "zeros_out_device": lambda m: m.zeros(2, out=m.empty(0), device="meta"),
    "full_out_dtype": lambda m: m.full((2,), 1, out=m.empty(0), dtype=m.int64),
    "randint_out_dtype": lambda m: m.randint(3, (2,), out=m.empty(0, dtype=m.int64),
                                             dtype=m.int32),
    "linspace_out_dtype": lambda m: m.linspace(0, 1, 3, out=m.empty(0), dtype=m.float64),
    "eye_out_dtype": lambda m: m.eye(2, out=m.empty(0), dtype=m.float64),
    "zeros_cpu_index": lambda m: m.zeros(2, device="cpu:0"),
    "zeros_size_kw": lambda m: m.zeros(size=(2, 3)),
    "full_kw": lambda m: m.full(size=(2,), fill_value=3.0),
}


@pytest.mark.parametrize("name", sorted(FACTORY_CALLS))
def test_factory_calls_match_torch(name):
    fn = FACTORY_CALLS[name]
    assert_same_outcome(lambda: fn(pyaten), lambda: fn(torch), rtol=1e-5, atol=1e-6)


REQUIRES_GRAD = {
    "scalar_tensor": lambda m: m.scalar_tensor(3, requires_grad=True),
    "eye": lambda m: m.eye(2, requires_grad=True),
    "linspace": lambda m: m.linspace(0, 1, 3, requires_grad=True),
    "logspace": lambda m: m.logspace(0, 1, 3, requires_grad=True),
    "empty_strided": lambda m: m.empty_strided((2,), (1,), requires_grad=True),
    "zeros_like": lambda m: m.zeros_like(m.ones(2), requires_grad=True),
    "full_like": lambda m: m.full_like(m.ones(2), 3.0, requires_grad=True),
    "new_zeros": lambda m: m.ones(2).new_zeros(3, requires_grad=True),
    "new_full": lambda m: m.ones(2).new_full((3,), 1.5, requires_grad=True),
    "new_empty": lambda m: m.ones(2).new_empty(3, requires_grad=True),
    "arange": lambda m: m.arange(3.0, requires_grad=True),
    "randn": lambda m: m.randn(2, requires_grad=True),
    "randperm": lambda m: m.randperm(3, dtype=m.float64, requires_grad=True),
}


@pytest.mark.parametrize("name", sorted(REQUIRES_GRAD))
def test_requires_grad_on_every_factory(name):
    for m in (pyaten, torch):
        t = REQUIRES_GRAD[name](m)
        assert t.requires_grad and t.is_leaf and t.grad_fn is None and t._version == 0


@settings(max_examples=40, deadline=None)
@given(
    start=st.floats(-1e3, 1e3), end=st.floats(-1e3, 1e3), steps=st.integers(0, 40),
    dtype=st.sampled_from(["float32", "float64", "int64", "int16"]),
)
def test_linspace_property(start, end, steps, dtype):
    ours = pyaten.linspace(start, end, steps, dtype=getattr(pyaten, dtype))
    theirs = torch.linspace(start, end, steps, dtype=getattr(torch, dtype))
    assert_same_outcome(lambda: ours, lambda: theirs, rtol=1e-5, atol=1e-3)


# --- PyTorch's OpInfo samples for the deterministic factories --------------------------------

import inspect  # noqa: E402

from _helpers import opinfo_samples, sample_arguments  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

OPINFO_FACTORIES = ("linspace", "logspace", "eye", "scalar_tensor", "tril_indices",
                    "triu_indices")
OPINFO_CASES = [
    pytest.param(info, dtype, id=f"{info.name}-{info.variant_test_name}-{dtype}")
    for info in op_db if info.name in OPINFO_FACTORIES and not inspect.isfunction(info.op)
    for dtype in (torch.float32, torch.int64, torch.float64)
]


@pytest.mark.parametrize("info,dtype", OPINFO_CASES)
def test_factory_opinfo_samples(info, dtype):
    for sample in opinfo_samples(info, dtype):
        theirs, ours, kwargs = sample_arguments(sample)
        assert_same_outcome(
            lambda ours=ours, kwargs=kwargs: getattr(pyaten, info.name)(*ours, **kwargs),
            lambda theirs=theirs, sample=sample: info.op(*theirs, **sample.kwargs),
            rtol=1e-5, atol=1e-5, strides=True,
        )


@settings(max_examples=60, deadline=None)
@given(
    low=st.floats(-1e6, 1e6, allow_nan=False),
    high=st.floats(-1e6, 1e6, allow_nan=False),
    steps=st.one_of(st.integers(0, 40), st.integers(1000, 5000)),
    name=st.sampled_from(["float32", "float64", "float16", "bfloat16"]),
)
def test_linspace_floating_bit_for_bit(low, high, steps, name):
    # ATen's loop fuses each value's multiply and add (float32/float64) or rounds every
    # step in the result's dtype (float16/bfloat16): the same bits, not within a tolerance
    _assert_same_bits(lambda: pyaten.linspace(low, high, steps, dtype=getattr(pyaten, name)),
                      lambda: torch.linspace(low, high, steps, dtype=getattr(torch, name)))


def _assert_same_bits(ours, theirs) -> None:  # noqa: ANN001
    """Both raise alike (an endpoint overflows float16), or give the same bits."""
    from _helpers import run_both

    pair = run_both(ours, theirs)
    if pair is None:
        return
    ours, theirs = pair
    assert ours.dtype.itemsize == theirs.dtype.itemsize and ours.shape == theirs.shape
    bits = {2: (pyaten.int16, torch.int16), 4: (pyaten.int32, torch.int32),
            8: (pyaten.int64, torch.int64)}[theirs.dtype.itemsize]
    assert np.array_equal(ours.view(bits[0]).numpy(), theirs.view(bits[1]).numpy())


@settings(max_examples=60, deadline=None)
@given(
    low=st.floats(-40, 40, allow_nan=False),
    high=st.floats(-40, 40, allow_nan=False),
    steps=st.one_of(st.integers(0, 40), st.integers(1000, 3000)),
    base=st.sampled_from([10.0, 2.0, 2.718281828459045, 3.3, 0.5]),
    name=st.sampled_from(["float32", "float64", "float16", "bfloat16"]),
)
def test_logspace_floating_bit_for_bit(low, high, steps, base, name):
    # ATen's loop takes the exponents in double from endpoints of the result's type (their
    # difference rounded to it), then one double pow per value: the same bits
    _assert_same_bits(
        lambda: pyaten.logspace(low, high, steps, base, dtype=getattr(pyaten, name)),
        lambda: torch.logspace(low, high, steps, base, dtype=getattr(torch, name)))


@settings(max_examples=50, deadline=None)
@given(
    low=st.complex_numbers(max_magnitude=1e4, allow_nan=False, allow_infinity=False),
    high=st.complex_numbers(max_magnitude=1e4, allow_nan=False, allow_infinity=False),
    steps=st.one_of(st.integers(0, 40), st.integers(1000, 3000)),
    name=st.sampled_from(["complex64", "complex128"]),
)
def test_linspace_complex_bit_for_bit(low, high, steps, name):
    # each component takes one fused multiply-add, as in the real dtypes
    ours = pyaten.linspace(low, high, steps, dtype=getattr(pyaten, name))
    theirs = torch.linspace(low, high, steps, dtype=getattr(torch, name))
    assert ours.dtype.itemsize == theirs.dtype.itemsize and ours.shape == theirs.shape
    bits = pyaten.int32 if name == "complex64" else pyaten.int64
    torch_bits = torch.int32 if name == "complex64" else torch.int64
    assert np.array_equal(pyaten.view_as_real(ours).view(bits).numpy(),
                          torch.view_as_real(theirs).view(torch_bits).numpy())


@pytest.mark.parametrize("name", ["float32", "complex64"])
def test_linspace_float32_product_on_a_midpoint(name):
    # 47 + step * k lands exactly on a float32 midpoint and the tiny endpoint decides the
    # rounding: a wide-precision sum loses it, an FMA does not (found by hypothesis)
    low, high = 47.0, 3.5892216191139005e-22
    if name == "complex64":
        low, high = low * 1j, high * 1j
    _assert_same_bits(lambda: pyaten.view_as_real(pyaten.linspace(low, high, 1000, dtype=getattr(
        pyaten, name))) if name == "complex64" else pyaten.linspace(low, high, 1000),
        lambda: torch.view_as_real(torch.linspace(low, high, 1000, dtype=getattr(
            torch, name))) if name == "complex64" else torch.linspace(low, high, 1000))
