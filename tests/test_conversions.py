"""Conversions vs PyTorch: Tensor.type (dtype and string forms), type_as, the dtype shorthands
(float double half bfloat16 int long short char byte bool cfloat cdouble chalf), tensor /
as_tensor / asarray from Python data and NumPy arrays (memory sharing and copy=), and the
sparse conversions' layouts and argument errors (the sparse layouts: tests/test_sparse.py)."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest
import torch
from _helpers import assert_same, assert_same_outcome, same_error
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten

DTYPES = ("float32", "float64", "float16", "bfloat16", "complex64", "complex128", "int64",
          "int32", "int16", "int8", "uint8", "bool")

SHORTHANDS = ("float", "double", "half", "bfloat16", "int", "long", "short", "char", "byte",
              "bool", "cfloat", "cdouble", "chalf")


def _source(m, dtype: str, shape: str):
    base = m.tensor([[0, 1, 2], [3, 4, 5]], dtype=getattr(m, dtype))
    return {"2d": base, "t": base.t(), "0d": base[1, 1], "empty": base[:, :0]}[shape]


@pytest.mark.parametrize("shape", ["2d", "t", "0d", "empty"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", SHORTHANDS)
def test_dtype_shorthands_match_torch(name, dtype, shape):
    def fn(m):
        x = _source(m, dtype, shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = getattr(x, name)()
        # converting to the same dtype returns the tensor itself
        assert (y is x) == (y.dtype == x.dtype)
        return y.to(m.complex64) if y.dtype == m.complex32 else y

    assert_same_outcome(lambda: fn(pyaten), lambda: fn(torch), strides=True)


def test_shorthands_take_memory_format():
    for m in (pyaten, torch):
        x = m.ones(2, 3, 4, 5)
        y = x.double(memory_format=m.channels_last)
        assert y.is_contiguous(memory_format=m.channels_last)
        assert x.float(memory_format=m.preserve_format) is x


TYPE_CALLS = {  # type() strings compared without their `pyaten.`/`torch.` prefix
    "no_arg": lambda m: m.ones(2).type().split(".", 1)[1],
    "no_arg_int": lambda m: m.ones(2, dtype=m.int8).type().split(".", 1)[1],
    "no_arg_meta": lambda m: m.ones(2, device="meta", dtype=m.int64)
    .type()
    .split(".", 1)[1],
    "no_arg_complex": lambda m: m.ones(2, dtype=m.complex128).type().split(".", 1)[1],
    "dtype": lambda m: m.ones(2).type(m.int32),
    "dtype_kw": lambda m: m.ones(2).type(dtype=m.float64),
    "string": lambda m: m.ones(2).type(f"{m.__name__}.DoubleTensor"),
    "string_bf16": lambda m: m.ones(2).type(f"{m.__name__}.BFloat16Tensor"),
    "string_bool": lambda m: m.arange(3).type(f"{m.__name__}.BoolTensor"),
    "string_short": lambda m: m.arange(3).type(f"{m.__name__}.ShortTensor"),
    "string_cdouble": lambda m: m.arange(3).type(f"{m.__name__}.ComplexDoubleTensor"),
    "non_blocking": lambda m: m.ones(2).type(m.float16, True),
    "bad_string": lambda m: m.ones(2).type("foo"),
    "dtype_string": lambda m: m.ones(2).type(f"{m.__name__}.float32"),
    "bad_object": lambda m: m.ones(2).type(3),
    "type_as": lambda m: m.ones(2).type_as(m.ones(1, dtype=m.int8)),
    "type_as_same": lambda m: m.ones(2, 3).t().type_as(m.zeros(1)),
    "type_as_meta": lambda m: m.ones(2).type_as(m.ones(1, device="meta", dtype=m.float64)),
    "type_as_bool": lambda m: m.tensor([0.0, 2.0]).type_as(m.ones(1, dtype=m.bool)),
}


@pytest.mark.parametrize("name", sorted(TYPE_CALLS))
def test_type_and_type_as_match_torch(name):
    fn = TYPE_CALLS[name]
    assert_same_outcome(lambda: fn(pyaten), lambda: fn(torch), strides=True)


def test_type_returns_self_for_the_same_dtype():
    for m in (pyaten, torch):
        x = m.ones(2)
        assert x.type(m.float32) is x and x.type_as(m.zeros(3)) is x
        assert x.type(f"{m.__name__}.FloatTensor") is x


# --- tensor / as_tensor from every dtype ------------------------------------------------------

NUMPY_TYPES = {
    "float32": np.float32, "float64": np.float64, "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16, "complex64": np.complex64, "complex128": np.complex128,
    "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8,
    "uint8": np.uint8, "bool": np.bool_,
}


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_from_nested_lists_with_every_dtype(dtype):
    data = [[1, 0], [3, 2], [0, 1]]
    assert_same(pyaten.tensor(data, dtype=getattr(pyaten, dtype)),
                torch.tensor(data, dtype=getattr(torch, dtype)), strides=True)
    assert_same(pyaten.tensor([], dtype=getattr(pyaten, dtype)),
                torch.tensor([], dtype=getattr(torch, dtype)))
    assert_same(pyaten.tensor(True, dtype=getattr(pyaten, dtype)),
                torch.tensor(True, dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_and_as_tensor_from_numpy_arrays(dtype):
    array = np.array([[1, 0, 2], [3, 2, 1]]).astype(NUMPY_TYPES[dtype])
    for make in (pyaten.tensor, pyaten.as_tensor):
        t = make(array)
        assert t.dtype is getattr(pyaten, dtype)
        assert np.array_equal(np.asarray(t.float().tolist()), array.astype(np.float32).real)
    # lists of NumPy scalars keep their dtype too
    t = pyaten.tensor([array[0, 0], array[1, 1]])
    assert t.dtype is getattr(pyaten, dtype)


def test_bfloat16_arrays_are_accepted_where_torch_refuses():
    # Deliberate difference: torch cannot read ml_dtypes' bfloat16; pyaten stores it as is.
    array = np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16)
    with pytest.raises(TypeError):
        torch.tensor(array)
    for make in (pyaten.tensor, pyaten.as_tensor, pyaten.asarray, pyaten.from_numpy):
        t = make(array)
        assert t.dtype is pyaten.bfloat16 and t.tolist() == [1.5, -2.0]


def test_as_tensor_shares_and_converts_as_torch():
    array = np.arange(4.0)
    for m in (pyaten, torch):
        shared = m.as_tensor(array)
        copied = m.as_tensor(array, dtype=m.float32)
        array[0] = 9.0
        assert shared[0].item() == 9.0 and copied[0].item() == 0.0
        array[0] = 0.0
        t = m.ones(2)
        assert m.as_tensor(t) is t


# --- asarray -----------------------------------------------------------------------------------

ASARRAY = {
    "list": lambda m: m.asarray([1, 2]),
    "nested_float": lambda m: m.asarray([[1.0, 2.0], [3.0, 4.0]]),
    "scalar": lambda m: m.asarray(3.5),
    "numpy_scalar": lambda m: m.asarray(np.float64(2)),
    "numpy_int32_list": lambda m: m.asarray([np.int32(1), np.int32(2)]),
    "list_dtype": lambda m: m.asarray([1, 2], dtype=m.float64),
    "list_meta": lambda m: m.asarray([1, 2], device="meta"),
    "list_no_copy": lambda m: m.asarray([1, 2], copy=False),
    "numpy": lambda m: m.asarray(np.arange(3.0)),
    "numpy_strided": lambda m: m.asarray(np.arange(6.0)[::2]),
    "numpy_negative_stride": lambda m: m.asarray(np.arange(3.0)[::-1]),
    "numpy_dtype": lambda m: m.asarray(np.arange(3.0), dtype=m.float32),
    "numpy_dtype_no_copy": lambda m: m.asarray(np.arange(3.0), dtype=m.float32, copy=False),
    "numpy_meta": lambda m: m.asarray(np.arange(3.0), device="meta"),
    "tensor_dtype": lambda m: m.asarray(m.ones(3), dtype=m.int32),
    "tensor_dtype_no_copy": lambda m: m.asarray(m.ones(3), dtype=m.int32, copy=False),
    "tensor_meta": lambda m: m.asarray(m.ones(3), device="meta"),
    "tensor_meta_no_copy": lambda m: m.asarray(m.ones(3), device="meta", copy=False),
    "requires_grad": lambda m: m.asarray([1.0, 2.0], requires_grad=True),
    "requires_grad_int": lambda m: m.asarray([1, 2], requires_grad=True),
    "bytes": lambda m: m.asarray(b"abcd"),
    "bytes_uint8": lambda m: m.asarray(b"abcd", dtype=m.uint8),
    "string": lambda m: m.asarray("a"),
    "tensors_list": lambda m: m.asarray([m.tensor(1.0), m.tensor(2.0)]),
}


@pytest.mark.parametrize("name", sorted(ASARRAY))
def test_asarray_matches_torch(name):
    fn = ASARRAY[name]
    assert_same_outcome(lambda: fn(pyaten), lambda: fn(torch), strides=True)


def test_asarray_shares_memory_when_it_can():
    for m in (pyaten, torch):
        array = np.zeros(3)
        shared, copied = m.asarray(array), m.asarray(array, copy=True)
        array[1] = 5.0
        assert shared.tolist() == [0.0, 5.0, 0.0] and copied.tolist() == [0.0, 0.0, 0.0]
        t = m.ones(2)
        assert m.asarray(t) is t
        assert m.asarray(t, copy=True) is not t
        buffer = bytearray(4)
        view = m.asarray(buffer, dtype=m.uint8)
        buffer[2] = 7
        assert view.tolist() == [0, 0, 7, 0]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.integers(-100, 100), st.floats(-1e3, 1e3), st.booleans()),
                min_size=0, max_size=6))
def test_asarray_infers_dtype_as_torch(values):
    assert_same(pyaten.asarray(values), torch.asarray(values))


# --- sparse layouts ----------------------------------------------------------------------------

SPARSE = {
    "to_sparse": lambda t: t.to_sparse(),
    "to_sparse_dim": lambda t: t.to_sparse(1),
    "to_sparse_csr": lambda t: t.to_sparse_csr(),
    "to_sparse_csc": lambda t: t.to_sparse_csc(),
    "to_sparse_bsr": lambda t: t.to_sparse_bsr((1, 1)),
    "to_sparse_bsc": lambda t: t.to_sparse_bsc((1, 1)),
}


@pytest.mark.parametrize("name", sorted(SPARSE))
def test_sparse_conversions_give_torchs_layout(name):
    ours, theirs = SPARSE[name](pyaten.ones(2, 2)), SPARSE[name](torch.ones(2, 2))
    assert ours.layout.name == str(theirs.layout).removeprefix("torch.")
    assert ours._nnz() == theirs._nnz()


def test_sparse_argument_errors_are_torchs():
    same_error(lambda: pyaten.ones(2).to_sparse_bsr(), lambda: torch.ones(2).to_sparse_bsr(),
               message=False)


# --- PyTorch's OpInfo samples for the shorthands (their ops call the method on the input) ------

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

from _helpers import opinfo_samples, sample_arguments  # noqa: E402

OPINFO_CASES = [
    pytest.param(info, dtype, id=f"{info.name}-{dtype}")
    for info in op_db if info.name in SHORTHANDS
    for dtype in (torch.float32, torch.int64, torch.complex64, torch.bool)
]


@pytest.mark.parametrize("info,dtype", OPINFO_CASES)
def test_shorthand_opinfo_samples(info, dtype):
    for sample in opinfo_samples(info, dtype):
        theirs, ours, kwargs = sample_arguments(sample)
        if "memory_format" in kwargs:  # torch's format token, as pyaten's
            kwargs["memory_format"] = getattr(pyaten, str(kwargs["memory_format"]).split(".")[-1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pair = (getattr(ours[0], info.name)(*ours[1:], **kwargs),
                    getattr(theirs[0], info.name)(*theirs[1:], **sample.kwargs))
        ours_result, theirs_result = pair
        if theirs_result.dtype == torch.complex32:
            ours_result, theirs_result = ours_result.cfloat(), theirs_result.cfloat()
        assert_same(ours_result, theirs_result, strides=True)
