"""Scans and softmax against PyTorch: softmax log_softmax cumsum cumprod cummax cummin
logcumsumexp diff trace, on every dtype, several shapes and dims, each variant, and Meta."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _helpers import DTYPE_NAMES, assert_same, assert_same_outcome, run_both
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten


def pair(shape, dtype: str, seed: int = 0, transposed: bool = False):
    """The same values as a pyaten and a torch tensor (`transposed`: a non-contiguous view)."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) * 3
    if dtype.startswith("complex"):
        values = values + 1j * rng.standard_normal(shape)
    t = torch.from_numpy(np.asarray(values)).to(getattr(torch, dtype))
    if dtype == "bool":
        t = torch.from_numpy(np.asarray(np.asarray(values) > 0))
    if transposed and t.dim() >= 2:
        t = t.transpose(0, 1)
    ours = pyaten.from_numpy(t.contiguous().view(torch.int16).numpy()).view(pyaten.bfloat16) \
        if dtype == "bfloat16" else pyaten.from_numpy(t.contiguous().numpy())
    if transposed and t.dim() >= 2:
        ours = ours.transpose(0, 1).contiguous().transpose(0, 1)
    return ours, t


# (name, call(module, tensor, dim)) -- `module` is pyaten or torch
DIM_OPS = {
    "softmax": lambda m, x, d: m.softmax(x, d),
    "log_softmax": lambda m, x, d: m.log_softmax(x, d),
    "softmax_dtype": lambda m, x, d: m.softmax(x, d, dtype=m.float64),
    "cumsum": lambda m, x, d: m.cumsum(x, d),
    "cumsum_dtype": lambda m, x, d: m.cumsum(x, dim=d, dtype=m.int32),
    "cumprod": lambda m, x, d: m.cumprod(x, d),
    "cummax": lambda m, x, d: m.cummax(x, d),
    "cummin": lambda m, x, d: m.cummin(x, d),
    "logcumsumexp": lambda m, x, d: m.logcumsumexp(x, d),
    "diff": lambda m, x, d: m.diff(x, dim=d),
    "diff2": lambda m, x, d: m.diff(x, n=2, dim=d),
}
SHAPES = [((), 0), ((5,), 0), ((3, 4), 1), ((3, 4), 0), ((3, 4), -1), ((0, 3), 0), ((2, 3), 2)]


@pytest.mark.parametrize("name", sorted(DIM_OPS))
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_function_on_every_dtype_and_shape(name, dtype) -> None:
    call = DIM_OPS[name]
    for seed, (shape, dim) in enumerate(SHAPES):
        ours, theirs = pair(shape, dtype, seed)
        # cumprod/logcumsumexp of many values drift in low precision: compare loosely there
        loose = dtype in ("float16", "bfloat16")
        assert_same_outcome(lambda o=ours, d=dim: call(pyaten, o, d),
                            lambda t=theirs, d=dim: call(torch, t, d),
                            rtol=2e-2 if loose else None, atol=2e-2 if loose else None)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "cumsum", "cumprod", "cummax",
                                  "logcumsumexp", "diff"])
def test_method_and_non_contiguous(name) -> None:
    ours, theirs = pair((4, 3), "float32", 7, transposed=True)
    assert not ours.is_contiguous()
    method = {"diff": lambda x: x.diff(dim=0)}.get(name, lambda x: getattr(x, name)(0))
    assert_same(method(ours), method(theirs))


@pytest.mark.parametrize("name", ["cumsum_", "cumprod_"])
@pytest.mark.parametrize("dtype", ["int8", "float32", "bfloat16"])
def test_in_place(name, dtype) -> None:
    ours, theirs = pair((3, 4), dtype, 3)
    before = ours._version
    result = getattr(ours, name)(1)
    assert result is ours and ours._version == before + 1
    assert_same(ours, getattr(theirs, name)(1), rtol=2e-2 if dtype == "bfloat16" else None)


OUT_CASES = {
    "softmax": (lambda m, x, o: m.softmax(x, 1, out=o), "float32"),
    "log_softmax": (lambda m, x, o: m.log_softmax(x, 0, out=o), "float32"),
    "cumsum": (lambda m, x, o: m.cumsum(x, 1, out=o), "float64"),
    "cumprod": (lambda m, x, o: m.cumprod(x, 0, out=o), "float32"),
    "logcumsumexp": (lambda m, x, o: m.logcumsumexp(x, 1, out=o), "float32"),
    "diff": (lambda m, x, o: m.diff(x, out=o), "float32"),
    "trace": (lambda m, x, o: m.trace(x, out=o), "float32"),
}


@pytest.mark.parametrize("name", sorted(OUT_CASES))
@pytest.mark.parametrize("out_dtype", ["float32", "float64", "int64"])
def test_out_variant(name, out_dtype) -> None:
    call, _ = OUT_CASES[name]
    ours, theirs = pair((3, 4), "float32", 5)
    our_out = pyaten.empty(0, dtype=getattr(pyaten, out_dtype))
    their_out = torch.empty(0, dtype=getattr(torch, out_dtype))
    pair_ = run_both(lambda: call(pyaten, ours, our_out), lambda: call(torch, theirs, their_out))
    if pair_ is not None:
        assert pair_[0] is our_out
        assert_same(our_out, their_out)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_values_indices_out_and_named_tuple(name) -> None:
    ours, theirs = pair((3, 4), "float64", 2)
    v, i = pyaten.empty(0, dtype=pyaten.float64), pyaten.empty(0, dtype=pyaten.int64)
    tv, ti = torch.empty(0, dtype=torch.float64), torch.empty(0, dtype=torch.int64)
    result = getattr(pyaten, name)(ours, 1, out=(v, i))
    expected = getattr(torch, name)(theirs, 1, out=(tv, ti))
    assert result[0] is v and result[1] is i
    assert type(result).__name__ == type(expected).__name__ == f"{name}_out"
    assert_same((v, i), (tv, ti))
    functional = getattr(pyaten, name)(ours, 0)
    assert type(functional).__name__ == name
    assert_same(functional.values, getattr(torch, name)(theirs, 0).values)
    assert_same(functional.indices, getattr(torch, name)(theirs, 0).indices)


def test_cummax_nan_and_ties() -> None:
    values = [1.0, float("nan"), 3.0, 2.0, 2.0, float("nan")]
    for dtype in ("float32", "float64"):
        for name in ("cummax", "cummin"):
            ours = getattr(pyaten, name)(pyaten.tensor(values, dtype=getattr(pyaten, dtype)), 0)
            theirs = getattr(torch, name)(torch.tensor(values, dtype=getattr(torch, dtype)), 0)
            assert_same(tuple(ours), tuple(theirs))
    ties = [3, 1, 3, 1, 3]
    for name in ("cummax", "cummin"):
        assert_same(tuple(getattr(pyaten, name)(pyaten.tensor(ties), 0)),
                    tuple(getattr(torch, name)(torch.tensor(ties), 0)))


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_trace(dtype) -> None:
    for shape in ((3, 3), (2, 4), (0, 2), (3,)):
        ours, theirs = pair(shape, dtype, 1)
        assert_same_outcome(lambda o=ours: pyaten.trace(o), lambda t=theirs: torch.trace(t))


def test_diff_prepend_append_and_errors() -> None:
    ours, theirs = pair((2, 3), "int64", 4)
    p_ours, p_theirs = pair((2, 1), "int64", 5)
    assert_same(pyaten.diff(ours, dim=1, prepend=p_ours, append=p_ours),
                torch.diff(theirs, dim=1, prepend=p_theirs, append=p_theirs))
    assert_same_outcome(lambda: pyaten.diff(pyaten.tensor(1)), lambda: torch.diff(torch.tensor(1)))
    assert_same_outcome(lambda: pyaten.diff(ours, n=-1), lambda: torch.diff(theirs, n=-1))
    assert_same(pyaten.diff(ours, n=5, dim=1), torch.diff(theirs, n=5, dim=1))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ["bool", "int64", "float32"])
def test_bool_result_dtype_is_refused(name, dtype) -> None:
    # ATen's scan kernels have no bool result: cumsum/cumprod(dtype=bool) raise, whatever
    # the input; a bool input without dtype gives int64
    ours, theirs = pair((2, 3), dtype, 6)
    assert_same_outcome(lambda: getattr(pyaten, name)(ours, 1, dtype=pyaten.bool),
                        lambda: getattr(torch, name)(theirs, 1, dtype=torch.bool))
    assert_same_outcome(lambda: getattr(pyaten, name)(ours, 1),
                        lambda: getattr(torch, name)(theirs, 1))


def test_softmax_errors() -> None:
    x, t = pair((2, 3), "float16", 0)
    assert_same_outcome(lambda: pyaten.ops.aten._softmax.default(x, 1, True),
                        lambda: torch.ops.aten._softmax.default(t, 1, True))
    assert_same_outcome(lambda: pyaten.softmax(x, 5), lambda: torch.softmax(t, 5))


@pytest.mark.parametrize("name", sorted(DIM_OPS))
def test_meta(name) -> None:
    call = DIM_OPS[name]
    for dtype in ("float32", "int64", "bool"):
        # torch's Python meta softmax skips the dim check (its CPU kernel does it): leave out
        # the dim-out-of-range case, which pyaten refuses on both devices
        if name == "log_softmax" and dtype == "bool":
            continue  # torch's Python meta computes `x - max` there and raises sub's error
        for shape, dim in SHAPES[:-1]:
            ours = pyaten.empty(shape, dtype=getattr(pyaten, dtype), device="meta")
            theirs = torch.empty(shape, dtype=getattr(torch, dtype), device="meta")
            pair_ = run_both(lambda o=ours, d=dim: call(pyaten, o, d),
                             lambda t=theirs, d=dim: call(torch, t, d), message=False)
            if pair_ is not None:
                assert_same(*pair_)
    assert_same(pyaten.trace(pyaten.empty(2, 3, device="meta")),
                torch.trace(torch.empty(2, 3, device="meta")))


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3), seed=st.integers(0, 99),
       name=st.sampled_from(["softmax", "log_softmax", "cumsum", "cummax", "logcumsumexp"]))
def test_property_any_shape_any_dim(shape, seed, name) -> None:
    ours, theirs = pair(tuple(shape), "float64", seed)
    dim = seed % len(shape) - len(shape) * (seed % 2)
    assert_same(DIM_OPS[name](pyaten, ours, dim), DIM_OPS[name](torch, theirs, dim))
