"""Type promotion vs PyTorch: promote_types, can_cast, result_type over every dtype pair and
every priority class (dimensioned tensor, zero-dim tensor, Python scalar)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from _helpers import dtype_name

import pyaten
from pyaten.core import dtypes as dt
from pyaten.core.creation import wrapped_scalar_tensor

PAIRS = [(d, getattr(torch, d.name)) for d in dt.ALL_DTYPES]
SCALARS = [True, 3, 2.5, 1 + 2j]


def _ours(d: dt.dtype, kind: str) -> pyaten.Tensor:
    shape = (2,) if kind == "tensor" else ()
    return pyaten.tensor(np.zeros(shape), dtype=d)


def _theirs(td: torch.dtype, kind: str) -> torch.Tensor:
    return torch.zeros((2,) if kind == "tensor" else (), dtype=td)


@pytest.mark.parametrize("a,b", list(itertools.product(PAIRS, PAIRS)))
def test_promote_types_and_can_cast(a, b) -> None:
    (da, ta), (db, tb) = a, b
    assert pyaten.promote_types(da, db).name == dtype_name(torch.promote_types(ta, tb))
    assert pyaten.can_cast(da, db) == torch.can_cast(ta, tb)


OPERANDS = (
    [("tensor", p) for p in PAIRS]
    + [("zerodim", p) for p in PAIRS]
    + [("scalar", s) for s in SCALARS]
)


def _make(kind: str, spec: object) -> tuple[object, object]:
    if kind == "scalar":
        return spec, spec
    d, td = spec
    return _ours(d, kind), _theirs(td, kind)


@pytest.mark.parametrize("default", [torch.float32, torch.float64])
def test_result_type_every_pair_and_class(default) -> None:
    ours_default = dt.BY_NAME[dtype_name(default)]
    torch.set_default_dtype(default)
    pyaten.set_default_dtype(ours_default)
    try:
        mismatches = []
        for (ka, sa), (kb, sb) in itertools.product(OPERANDS, OPERANDS):
            if ka == "scalar" and kb == "scalar":
                continue
            oa, ta = _make(ka, sa)
            ob, tb = _make(kb, sb)
            expected = dtype_name(torch.result_type(ta, tb))
            got = pyaten.result_type(oa, ob).name
            if got != expected:
                mismatches.append((ka, sa, kb, sb, got, expected))
        assert mismatches == []
    finally:
        torch.set_default_dtype(torch.float32)
        pyaten.set_default_dtype(dt.float32)


@pytest.mark.parametrize("value", SCALARS)
@pytest.mark.parametrize("d,td", PAIRS)
def test_wrapped_number_promotes_like_python_scalar(value, d, td) -> None:
    ours = pyaten.result_type(pyaten.tensor([0, 0], dtype=d), wrapped_scalar_tensor(value))
    theirs = torch.result_type(torch.zeros(2, dtype=td), value)
    assert ours.name == dtype_name(theirs)


def test_result_type_three_operands_left_to_right() -> None:
    a = pyaten.tensor([1], dtype=pyaten.uint8)
    b = pyaten.tensor(1, dtype=pyaten.int8)
    assert pyaten.result_type(a, b, 1.5) is pyaten.float32
    assert pyaten.result_type(a, b) is pyaten.uint8


def test_promotion_errors() -> None:
    with pytest.raises(TypeError, match="promote_types"):
        pyaten.promote_types(pyaten.float32, "float64")
    with pytest.raises(TypeError, match="result_type"):
        pyaten.result_type()
    with pytest.raises(TypeError, match="str"):
        pyaten.result_type(pyaten.tensor([1]), "x")


def test_dtype_objects_match_torch() -> None:
    for d, td in PAIRS:
        assert d.itemsize == td.itemsize
        assert d.is_floating_point == td.is_floating_point
        assert d.is_complex == td.is_complex
        assert d.is_signed == td.is_signed
        assert repr(d) == repr(td).replace("torch.", "pyaten.")
        assert getattr(pyaten, d.name) is d
    assert pyaten.float is pyaten.float32 and pyaten.long is pyaten.int64
    for d, td in PAIRS:
        if d.is_floating_point or d.is_complex:
            assert dtype_name(d.to_real()) == dtype_name(td.to_real())
            assert dtype_name(d.to_complex()) == dtype_name(td.to_complex())
    assert pyaten.chalf is pyaten.complex32 and pyaten.cfloat is pyaten.complex64


def test_default_dtype() -> None:
    assert pyaten.get_default_dtype() is pyaten.float32
    with pytest.raises(TypeError, match="only floating-point types"):
        pyaten.set_default_dtype(pyaten.int32)
    pyaten.set_default_dtype(pyaten.float64)
    try:
        assert pyaten.tensor([1.5]).dtype is pyaten.float64
        assert pyaten.tensor([1j]).dtype is pyaten.complex128
    finally:
        pyaten.set_default_dtype(pyaten.float32)
