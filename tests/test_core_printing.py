"""Printing vs PyTorch's repr: every dtype, 0-d to 3-d, large (summarised) tensors, -0.0,
nan/inf, scientific and integer modes, options, suffixes."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
from _helpers import DTYPE_NAMES
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pyaten
from pyaten.core.views import empty_tensor


def ours_of(t: torch.Tensor) -> pyaten.Tensor:
    p = pyaten.from_dlpack(t.detach().clone())
    if t.requires_grad:
        p.requires_grad_()
    return p


def expected_repr(t: torch.Tensor) -> str:
    return repr(t).replace("torch.", "pyaten.")


_SUFFIX_WRAP = re.compile(r",\n *(dtype|requires_grad|grad_fn|device|size)=")


def check(t: torch.Tensor) -> None:
    ours, theirs = repr(ours_of(t)), expected_repr(t)
    if ours != theirs:
        # "pyaten.float64" is one character longer than "torch.float64", which can move a
        # suffix to the next line at the width limit: compare with suffixes unwrapped.
        assert _SUFFIX_WRAP.sub(r", \1=", ours) == _SUFFIX_WRAP.sub(r", \1=", theirs)


DTYPES = [getattr(torch, name) for name in DTYPE_NAMES]

VALUES = [
    [[1.0, 2.0], [3.0, 4.0]],
    [0.1, -2.5, 3.75],
    [-0.0, 0.0, 1.0],
    [math.nan, math.inf, -math.inf, 1.5],
    [math.nan, math.inf],
    [1e-5, 1.0, 10.0],
    [1e10, 1.0],
    [123456789.0, 2.0],
    [0.0, 0.0],
    [[[1.5, -2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.25]]],
    3.5,
    -0.0,
    [[1, 2, 3]],
    [100, -7, 12345],
]


@pytest.mark.parametrize("values", VALUES, ids=range(len(VALUES)))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_values_every_dtype(values, dtype) -> None:
    base = torch.tensor(values, dtype=torch.float64)
    if dtype.is_complex:
        base = torch.complex(base, -base.flip(-1) * 0.5 if base.dim() else -base)
    with np.errstate(all="ignore"):
        t = base.to(dtype) if not (dtype.is_complex) else base.to(dtype)
    if not (dtype.is_floating_point or dtype.is_complex) and not torch.isfinite(base).all():
        return
    check(t)


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.arange(2000.0),
        lambda: torch.arange(1200).reshape(30, 40),
        lambda: torch.randn(12, 11, 10, generator=torch.Generator().manual_seed(0)),
        lambda: torch.randn(1001, generator=torch.Generator().manual_seed(1)) * 1e5,
        lambda: torch.arange(3000).reshape(3, 1000) % 7 == 0,
        lambda: torch.randn(
            40, 40, dtype=torch.complex64, generator=torch.Generator().manual_seed(2)
        ),
        lambda: torch.linspace(-1, 1, 97),
        lambda: torch.randn(5, 30, generator=torch.Generator().manual_seed(3)),
    ],
)
def test_large_and_wrapped(make) -> None:
    check(make())


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0, 1), (3, 0)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float64, torch.bool])
def test_empty(shape, dtype) -> None:
    check(torch.zeros(shape, dtype=dtype))


def test_requires_grad_grad_fn_and_meta() -> None:
    check(torch.tensor([1.0, 2.0], requires_grad=True))
    check(torch.zeros(3, 100, requires_grad=True))

    class _Node:
        def name(self) -> str:
            return "AddBackward0"

    p = pyaten.tensor([1.0, 2.0])
    p._requires_grad = True
    p.grad_fn = _Node()
    t = torch.tensor([1.0, 2.0], requires_grad=True) + 0
    assert repr(p) == expected_repr(t)
    meta = empty_tensor((2, 3), pyaten.float64, pyaten.device("meta"))
    assert repr(meta) == expected_repr(torch.empty(2, 3, dtype=torch.float64, device="meta"))
    meta32 = empty_tensor((4,), pyaten.float32, pyaten.device("meta"))
    assert repr(meta32) == expected_repr(torch.empty(4, device="meta"))


@pytest.mark.parametrize(
    "options",
    [
        dict(precision=2),
        dict(precision=8),
        dict(threshold=5),
        dict(threshold=5, edgeitems=1),
        dict(linewidth=30),
        dict(sci_mode=True),
        dict(sci_mode=False),
        dict(profile="short"),
        dict(profile="full"),
    ],
)
def test_print_options(options) -> None:
    tensors = [
        torch.tensor([[1.123456789, 2e-3], [30.5, 4.0]]),
        torch.arange(30.0).reshape(5, 6) / 7,
        torch.arange(2000),
        torch.tensor([1e-7, 1.0]),
    ]
    torch.set_printoptions(**options)
    pyaten.set_printoptions(**options)
    try:
        for t in tensors:
            check(t)
    finally:
        torch.set_printoptions(profile="default")
        pyaten.set_printoptions(profile="default")


def test_non_default_dtype_suffix_follows_default_dtype() -> None:
    torch.set_default_dtype(torch.float64)
    pyaten.set_default_dtype(pyaten.float64)
    try:
        for t in (
            torch.tensor([1.5]),
            torch.tensor([1.5], dtype=torch.float32),
            torch.tensor([1j]),
            torch.tensor([1j], dtype=torch.complex64),
        ):
            check(t)
    finally:
        torch.set_default_dtype(torch.float32)
        pyaten.set_default_dtype(pyaten.float32)


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=0, max_dims=3, max_side=6),
        elements=st.one_of(
            st.floats(-1e12, 1e12, allow_nan=False),
            st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0]),
            st.integers(-1000, 1000).map(float),
        ),
    ),
    st.sampled_from([torch.float32, torch.float64, torch.float16]),
)
def test_random_floats(array, dtype) -> None:
    with np.errstate(all="ignore"):
        t = torch.from_numpy(array).to(dtype)
    check(t)


def test_str_format_and_scalar() -> None:
    p = pyaten.tensor(2.5)
    assert str(p) == repr(p) == "tensor(2.5000)"
    assert f"{p:.1f}" == "2.5"
    assert f"{pyaten.tensor([1, 2])}" == "tensor([1, 2])"
