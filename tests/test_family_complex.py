"""Differential tests of the complex-part operators and float predicates against PyTorch.

real imag view_as_real view_as_complex angle conj _conj conj_physical resolve_conj resolve_neg
is_conj is_neg, isnan isinf isfinite isposinf isneginf isreal, nan_to_num: every dtype, the
shapes of the other family tests (0-d, empty, non-contiguous), each variant, views sharing
storage where PyTorch's do, and Meta. The conj bit is materialised (see "Note: the conjugate
bit" in pyaten/native/kernels/complex.py); the tests check what that design promises.
"""

from __future__ import annotations

import functools
import math
import warnings
from functools import partial

import numpy as np
import pytest
import torch
from _helpers import (
    DTYPE_NAMES,
    assert_same,
    assert_same_outcome,
    from_torch,
    opinfo_samples,
    outs,
    same_error,
    sample_arguments,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten

SPECIALS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, -2.0, 1e38, -1e300]


def _values(shape: tuple, dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype == "uint8":
        return rng.integers(0, 9, size=shape).astype(np.uint8)
    if dtype.startswith("int"):
        return rng.integers(-5, 7, size=shape).astype(dtype)
    real = rng.standard_normal(size=shape) * 2.5
    flat = real.reshape(-1)
    for i, v in enumerate(SPECIALS[: flat.size]):
        flat[(i * 5) % max(flat.size, 1)] = v
    if dtype.startswith("complex"):
        imag = rng.standard_normal(size=shape)
        imag.reshape(-1)[::4] = math.inf
        with np.errstate(over="ignore"):  # -1e300 is -inf in complex64, in both libraries
            return _complex(real, imag).astype(dtype)
    return real


def _complex(real: np.ndarray, imag: np.ndarray) -> np.ndarray:
    # (`real + 1j * imag` would turn an infinite imaginary part into NaN + inf j)
    result = np.empty(real.shape, np.complex128)
    result.real, result.imag = real, imag
    return result


def pair(shape: tuple, dtype: str, seed: int = 0, values=None):
    if values is None:
        values = _values(shape, dtype, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 1e38 overflows float16: inf in both
        t = torch.from_numpy(np.array(values)).to(getattr(torch, dtype))
    return from_torch(t), t


SHAPES = {"0d": (), "2d": (3, 4), "empty": (0, 3), "noncontig": (4, 3)}


def operand(shape_name: str, dtype: str, seed: int = 0):
    ours, theirs = pair(SHAPES[shape_name], dtype, seed)
    if shape_name == "noncontig":
        ours, theirs = ours.t(), theirs.t()
    return ours, theirs


# --- the table: functions with no extra arguments -------------------------------------------

UNARY = ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "angle", "nan_to_num",
         "conj", "conj_physical", "resolve_conj", "resolve_neg", "real", "imag", "view_as_real"]
METHODS = ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "angle", "nan_to_num",
           "conj", "conj_physical", "resolve_conj", "resolve_neg"]
INPLACE = ["nan_to_num_", "conj_physical_"]
OUT = ["isposinf", "isneginf", "angle", "nan_to_num", "conj_physical"]


@pytest.mark.parametrize("name", UNARY)
def test_all_dtypes_and_shapes(name):
    ours_fn, theirs_fn = getattr(pyaten, name), getattr(torch, name)
    for dtype in DTYPE_NAMES:
        for shape in SHAPES:
            ours, theirs = operand(shape, dtype)
            assert_same_outcome(partial(ours_fn, ours), partial(theirs_fn, theirs))


@pytest.mark.parametrize("name", METHODS)
def test_methods(name):
    for dtype in ("bool", "int64", "float16", "float32", "complex128"):
        ours, theirs = operand("noncontig", dtype)
        assert_same_outcome(getattr(ours, name), getattr(theirs, name))


@pytest.mark.parametrize("name", INPLACE)
def test_inplace(name):
    for dtype in DTYPE_NAMES:
        ours, theirs = operand("noncontig", dtype)
        result = run = getattr(ours, name)()
        expected = getattr(theirs, name)()
        assert_same(run, expected)
        assert (result is ours) == (expected is theirs)
        assert_same(ours, theirs)


@pytest.mark.parametrize("name", OUT)
def test_out(name):
    for dtype in DTYPE_NAMES:
        for out_dtype in ("bool", "int64", "float32", "float64", "complex64"):
            ours, theirs = operand("2d", dtype)
            out_ours, out_theirs = outs((0,), out_dtype)
            # a complex64 angle written to a float64 out= has float32's precision
            assert_same_outcome(partial(getattr(pyaten, name), ours, out=out_ours),
                                partial(getattr(torch, name), theirs, out=out_theirs), rtol=1e-6)
            assert_same(out_ours, out_theirs, rtol=1e-6)


@pytest.mark.parametrize("name", UNARY)
def test_meta(name):
    for dtype in DTYPE_NAMES:
        if dtype in ("float16",) and name == "view_as_real":
            continue
        ours = pyaten.empty((2, 0, 3), dtype=getattr(pyaten, dtype), device="meta")
        theirs = torch.empty((2, 0, 3), dtype=getattr(torch, dtype), device="meta")
        assert_same_outcome(partial(getattr(pyaten, name), ours),
                            partial(getattr(torch, name), theirs), message=False)


def test_input_keyword():
    ours, theirs = operand("2d", "complex64")
    for name in ("isnan", "angle", "conj_physical", "real"):
        assert_same(getattr(pyaten, name)(input=ours), getattr(torch, name)(input=theirs))


# --- nan_to_num -----------------------------------------------------------------------------

_REPLACEMENTS = [(None, None, None), (0.5, None, None), (None, 7.0, -7.0), (1.0, 1e10, -1e10),
                 (-0.0, math.inf, None), (2, 3, 4)]


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_nan_to_num_values(dtype):
    for nan, posinf, neginf in _REPLACEMENTS:
        ours, theirs = operand("2d", dtype)
        assert_same_outcome(
            partial(pyaten.nan_to_num, ours, nan=nan, posinf=posinf, neginf=neginf),
            partial(torch.nan_to_num, theirs, nan=nan, posinf=posinf, neginf=neginf))
        assert_same_outcome(partial(ours.nan_to_num_, nan, posinf, neginf),
                            partial(theirs.nan_to_num_, nan, posinf, neginf))
        assert_same(ours, theirs)


def test_nan_to_num_errors():
    ours, theirs = operand("2d", "float32")
    for out_dtype in ("float64", "int64"):
        out_ours, out_theirs = outs((3, 4), out_dtype)
        same_error(partial(pyaten.nan_to_num, ours, out=out_ours),
                   partial(torch.nan_to_num, theirs, out=out_theirs))
    same_error(lambda: pyaten.nan_to_num(ours, nan="a"), lambda: torch.nan_to_num(theirs, nan="a"),
               message=False)


# --- angle ----------------------------------------------------------------------------------


def test_angle_complex_into_real_or_complex_out():
    ours, theirs = operand("noncontig", "complex128")
    for out_dtype in ("float64", "float32", "complex128", "int32", "bool"):
        out_ours, out_theirs = outs((4, 3), out_dtype)
        assert_same_outcome(partial(pyaten.angle, ours, out=out_ours),
                            partial(torch.angle, theirs, out=out_theirs))
        assert_same(out_ours, out_theirs)


# --- views: real, imag, view_as_real, view_as_complex ---------------------------------------


def test_real_imag_are_views():
    ours, theirs = operand("noncontig", "complex64")
    for part in ("real", "imag"):
        got, expected = getattr(pyaten, part)(ours), getattr(torch, part)(theirs)
        assert_same(got, expected, strides=True)
        assert got.storage_offset() == expected.storage_offset()
        got.fill_(9.0)
        expected.fill_(9.0)
        assert_same(ours, theirs)
    # the properties and their setters
    assert_same(ours.real, theirs.real)
    ours.real = pyaten.tensor(2.5)
    theirs.real = torch.tensor(2.5)
    ours.imag = pyaten.tensor([1.0, 2.0, 3.0, 4.0])
    theirs.imag = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert_same(ours, theirs)
    real_ours, real_theirs = operand("2d", "float32")
    assert ours.real is not None and real_ours.real is real_ours
    assert real_theirs.real is real_theirs
    same_error(lambda: real_ours.imag, lambda: real_theirs.imag)


def test_view_as_real_and_complex():
    for shape in ("0d", "2d", "empty", "noncontig"):
        ours, theirs = operand(shape, "complex128")
        got, expected = pyaten.view_as_real(ours), torch.view_as_real(theirs)
        assert_same(got, expected, strides=shape != "empty")  # (from_numpy's empty strides)
        assert got.storage_offset() == expected.storage_offset()
        if shape not in ("noncontig", "empty"):
            assert_same(pyaten.view_as_complex(got), torch.view_as_complex(expected),
                        strides=True)
    ours, theirs = pair((3, 4), "float32")
    assert_same(pyaten.view_as_complex(ours.view(3, 2, 2)),
                torch.view_as_complex(theirs.view(3, 2, 2)), strides=True)
    offset_ours = pyaten.view_as_complex(ours.view(12)[2:].view(5, 2))
    offset_theirs = torch.view_as_complex(theirs.view(12)[2:].view(5, 2))
    assert_same(offset_ours, offset_theirs)
    assert offset_ours.storage_offset() == offset_theirs.storage_offset()
    cases = [
        lambda m, x: m.view_as_complex(x),                        # last dim 4
        lambda m, x: m.view_as_complex(x.view(12)[1:11].view(5, 2)),  # odd offset
        lambda m, x: m.view_as_complex(x[:, ::2]),                # last stride 2
        lambda m, x: m.view_as_complex(x.view(12)[0]),            # 0-d
        lambda m, x: m.view_as_complex(x.to(m.int64)),            # integer
        lambda m, x: m.view_as_complex(x.view(2, 3, 2)[:, ::3]),  # size 1 middle... fine
        lambda m, x: m.view_as_complex(x.view(12).view(6, 2).t()),  # last dim 6
        lambda m, x: m.view_as_real(x),                           # real input
    ]
    for case in cases:
        assert_same_outcome(partial(case, pyaten, ours), partial(case, torch, theirs))


# --- conj and its bit (materialised; see the Note in complex.py) ----------------------------


def test_conj_values_and_bits():
    rng = np.random.default_rng(5)
    values = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
    ours, theirs = pair((3, 4), "complex64", values=values)
    ours, theirs = ours.t(), theirs.t()
    conj_ours, conj_theirs = ours.conj(), theirs.conj()
    assert_same(conj_ours, conj_theirs)
    assert conj_ours.is_conj() and conj_theirs.is_conj()
    assert pyaten.is_conj(conj_ours) and not ours.is_conj()
    back_ours, back_theirs = conj_ours.conj(), conj_theirs.conj()
    assert_same(back_ours, back_theirs)
    assert not back_ours.is_conj() and not back_theirs.is_conj()
    resolved = conj_ours.resolve_conj()
    assert_same(resolved, conj_theirs.resolve_conj())
    assert not resolved.is_conj()
    # arithmetic on a conj tensor sees the conjugated values
    assert_same(conj_ours + ours, conj_theirs + theirs)
    assert_same(conj_ours.real, conj_theirs.real)
    assert_same(conj_ours.imag, conj_theirs.imag)
    assert_same(pyaten.conj_physical(conj_ours), torch.conj_physical(conj_theirs))
    same_error(lambda: pyaten.view_as_real(conj_ours), lambda: torch.view_as_real(conj_theirs))
    assert_same(pyaten._conj(ours), torch._conj(theirs))
    assert_same(pyaten._conj_physical(conj_ours), torch._conj_physical(conj_theirs))


def test_identity_for_real_dtypes():
    for dtype in ("bool", "int32", "float16", "float64"):
        ours, theirs = operand("2d", dtype)
        for name in ("conj", "conj_physical", "resolve_conj", "resolve_neg", "real"):
            assert getattr(pyaten, name)(ours) is ours
            assert getattr(torch, name)(theirs) is theirs
        assert ours.conj_physical_() is ours
        assert not ours.is_conj() and not ours.is_neg()


def test_neg_view():
    ours, theirs = operand("2d", "float32")
    neg_ours, neg_theirs = pyaten._neg_view(ours), torch._neg_view(theirs)
    assert_same(neg_ours, neg_theirs)
    assert neg_ours.is_neg() and neg_theirs.is_neg()
    assert_same(neg_ours.resolve_neg(), neg_theirs.resolve_neg())
    assert not neg_ours.resolve_neg().is_neg()


def test_conj_physical_inplace_and_out_dtypes():
    ours, theirs = operand("noncontig", "complex128")
    assert_same(ours.conj_physical_(), theirs.conj_physical_())
    assert_same(ours, theirs)
    for out_dtype in ("complex64", "float64"):
        out_ours, out_theirs = outs((4, 3), out_dtype)
        same_error(partial(pyaten.conj_physical, ours, out=out_ours),
                   partial(torch.conj_physical, theirs, out=out_theirs))


def test_conj_meta():
    ours = pyaten.empty((2, 3), dtype=pyaten.complex64, device="meta")
    theirs = torch.empty((2, 3), dtype=torch.complex64, device="meta")
    assert_same(ours.conj(), theirs.conj())
    assert ours.conj().is_conj() == theirs.conj().is_conj()
    assert_same(pyaten.view_as_real(ours), torch.view_as_real(theirs), strides=True)


# --- predicates: errors and out= ------------------------------------------------------------


@pytest.mark.parametrize("name", ["isposinf", "isneginf"])
def test_signed_inf_errors(name):
    ours, theirs = operand("2d", "complex64")
    same_error(lambda: getattr(pyaten, name)(ours), lambda: getattr(torch, name)(theirs))
    ours = pyaten.empty(2, dtype=pyaten.complex64, device="meta")
    theirs = torch.empty(2, dtype=torch.complex64, device="meta")
    same_error(lambda: getattr(pyaten, name)(ours), lambda: getattr(torch, name)(theirs))
    ours, theirs = operand("2d", "float32")
    out_ours, out_theirs = outs((3, 4), "float32")
    same_error(lambda: getattr(pyaten, name)(ours, out=out_ours),
               lambda: getattr(torch, name)(theirs, out=out_theirs))


def test_predicates_have_no_python_out():
    ours, theirs = operand("2d", "float32")
    for name in ("isnan", "isinf", "isfinite", "isreal"):
        out_ours, out_theirs = outs((3, 4), "bool")
        same_error(partial(getattr(pyaten, name), ours, out=out_ours),
                   partial(getattr(torch, name), theirs, out=out_theirs), message=False)


# --- PyTorch's OpInfo samples ---------------------------------------------------------------

_OPINFO_NAMES = {"angle", "conj", "conj_physical", "resolve_conj", "resolve_neg", "real", "imag",
                 "isfinite", "isinf", "isnan", "isneginf", "isposinf", "isreal", "nan_to_num",
                 "view_as_real", "view_as_complex"}


@functools.cache
def _op_infos() -> dict:
    from torch.testing._internal.common_methods_invocations import op_db

    return {(i.name, i.variant_test_name): i for i in op_db if i.name in _OPINFO_NAMES}


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_opinfo_samples(dtype):
    checked = 0
    for (name, _), info in sorted(_op_infos().items()):
        if getattr(torch, dtype) not in info.dtypes:
            continue
        samples = opinfo_samples(info, getattr(torch, dtype))
        for sample in samples:
            theirs, ours, kwargs = sample_arguments(sample)
            assert_same_outcome(partial(getattr(pyaten, name), *ours, **kwargs),
                                partial(getattr(torch, name), *theirs, **sample.kwargs))
            checked += 1
    assert checked > 20


# --- hypothesis -----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    real=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=1,
                  max_size=8),
    name=st.sampled_from(["isnan", "isinf", "isfinite", "isposinf", "isneginf", "angle",
                          "nan_to_num", "isreal", "conj_physical"]),
    dtype=st.sampled_from(["float16", "bfloat16", "float32", "float64", "complex64"]),
)
def test_hypothesis_values(real, name, dtype):
    values = np.array(real, np.float64)
    if dtype.startswith("complex"):
        values = _complex(values, values[::-1])
    ours, theirs = pair(values.shape, dtype, values=values)
    assert_same_outcome(lambda: getattr(pyaten, name)(ours), lambda: getattr(torch, name)(theirs))
