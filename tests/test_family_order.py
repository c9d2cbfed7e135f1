"""Order statistics against PyTorch: median nanmedian mode kthvalue quantile nanquantile, on
every dtype, shapes with and without the dim, NaN, each variant, and Meta.

Values are drawn without ties where indices are compared: PyTorch picks among equal values
with an unstable selection, so only the values are defined there.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _helpers import DTYPE_NAMES, assert_same, assert_same_outcome, run_both
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten


def distinct(shape, dtype: str, seed: int = 0, nan: bool = False):
    """A pyaten/torch pair of distinct values (a permutation), optionally with some NaN."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    values = rng.permutation(n).reshape(shape).astype(np.float64) - n // 2
    if nan and n > 2:
        values.reshape(-1)[rng.choice(n, size=max(1, n // 5), replace=False)] = np.nan
    t = torch.from_numpy(np.asarray(values))
    t = (t > 0) if dtype == "bool" else t.to(getattr(torch, dtype))
    ours = pyaten.from_numpy(t.view(torch.int16).numpy()).view(pyaten.bfloat16) \
        if dtype == "bfloat16" else pyaten.from_numpy(t.numpy())
    return ours, t


def both(case, ours, theirs, **kwargs) -> None:
    """`case(module, tensor)` run on pyaten and torch gives the same outcome."""
    assert_same_outcome(lambda: case(pyaten, ours), lambda: case(torch, theirs), **kwargs)


DIM_OPS = {
    "median": lambda m, x, d: m.median(x, d),
    "median_keepdim": lambda m, x, d: m.median(x, d, keepdim=True),
    "nanmedian": lambda m, x, d: m.nanmedian(x, dim=d),
    "mode": lambda m, x, d: m.mode(x, d),
    "kthvalue": lambda m, x, d: m.kthvalue(x, 1, d),
    "kthvalue_keepdim": lambda m, x, d: m.kthvalue(x, 2, dim=d, keepdim=True),
}
SHAPES = [((), 0), ((7,), 0), ((3, 5), 1), ((3, 5), 0), ((4, 3), -1), ((0, 3), 1), ((3, 0), 1)]


@pytest.mark.parametrize("name", sorted(DIM_OPS))
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_values_and_indices_every_dtype(name, dtype) -> None:
    for seed, (shape, dim) in enumerate(SHAPES):
        ours, theirs = distinct(shape, dtype, seed)
        call = DIM_OPS[name]
        pair = run_both(lambda o=ours, d=dim, c=call: c(pyaten, o, d),
                        lambda t=theirs, d=dim, c=call: c(torch, t, d))
        if pair is None:
            continue
        (values, indices), expected = pair
        assert type(pair[0]).__name__ == type(expected).__name__
        assert_same(values, expected.values)
        if dtype != "bool" and name != "mode":  # bool and mode have ties by construction
            assert_same(indices, expected.indices)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_of_all(name, dtype) -> None:
    for seed, shape in enumerate([(), (6,), (3, 4), (0,)]):
        ours, theirs = distinct(shape, dtype, seed)
        assert_same_outcome(lambda o=ours: getattr(pyaten, name)(o),
                            lambda t=theirs: getattr(torch, name)(t))


def test_nan_propagation() -> None:
    for seed in range(6):
        ours, theirs = distinct((4, 6), "float64", seed, nan=True)
        assert_same(pyaten.median(ours), torch.median(theirs))
        assert_same(pyaten.nanmedian(ours), torch.nanmedian(theirs))
        assert_same(tuple(pyaten.median(ours, 1)), tuple(torch.median(theirs, 1)))
        assert_same(pyaten.nanmedian(ours, 1).values, torch.nanmedian(theirs, 1).values)
        assert_same(pyaten.kthvalue(ours, 6, 1).values, torch.kthvalue(theirs, 6, 1).values)
        assert_same(pyaten.quantile(ours, 0.3, dim=1), torch.quantile(theirs, 0.3, dim=1))
        assert_same(pyaten.nanquantile(ours, 0.3, dim=0), torch.nanquantile(theirs, 0.3, dim=0))


def test_mode_ties_and_last_index() -> None:
    for values in ([1, 2, 2, 3, 3, 1, 1], [3, 2, 2, 3], [5], [4, 4, 4]):
        assert_same(tuple(pyaten.mode(pyaten.tensor(values))),
                    tuple(torch.mode(torch.tensor(values))))
    x = [[3.0, float("nan"), float("nan")], [1, 1, 2]]
    assert_same(tuple(pyaten.mode(pyaten.tensor(x), 1)), tuple(torch.mode(torch.tensor(x), 1)))


def test_values_indices_out() -> None:
    ours, theirs = distinct((3, 5), "float32", 1)
    for name, args in (("median", (1,)), ("nanmedian", (0,)), ("kthvalue", (2, 1)),
                       ("mode", (1,))):
        v, i = pyaten.empty(0), pyaten.empty(0, dtype=pyaten.int64)
        tv, ti = torch.empty(0), torch.empty(0, dtype=torch.int64)
        result = getattr(pyaten, name)(ours, *args, out=(v, i))
        expected = getattr(torch, name)(theirs, *args, out=(tv, ti))
        assert result[0] is v and result[1] is i
        assert type(result).__name__ == type(expected).__name__
        assert_same(v, tv)
        if name != "mode":
            assert_same(i, ti)
    bad = pyaten.empty(0, dtype=pyaten.float64)
    with pytest.raises(RuntimeError):
        pyaten.median(ours, 1, out=(bad, pyaten.empty(0, dtype=pyaten.int64)))


def test_errors() -> None:
    ours, theirs = distinct((2, 3), "float32", 0)
    cases = [
        (lambda m, x: m.kthvalue(x, 4, 1)), (lambda m, x: m.kthvalue(x, 0)),
        (lambda m, x: m.median(x, 2)), (lambda m, x: m.mode(m.ones(2, 0), 1)),
        (lambda m, x: m.median(m.ones(2, 0), 1)),
        (lambda m, x: m.quantile(x, 1.5)), (lambda m, x: m.quantile(x.to(m.int64), 0.5)),
        (lambda m, x: m.quantile(x, m.tensor([0.5], dtype=m.float64))),
        (lambda m, x: m.quantile(x, m.tensor([[0.5]]))),
        (lambda m, x: m.quantile(x, 0.5, interpolation="foo")),
        (lambda m, x: m.quantile(m.tensor([]), 0.5)),
        (lambda m, x: m.quantile(x, m.tensor([0.5, 2.0]))),
    ]
    for case in cases:
        both(case, ours, theirs)


INTERPOLATIONS = ["linear", "lower", "higher", "midpoint", "nearest"]
QS = [0.0, 0.25, 0.5, 0.9, 1.0]
QUANTILE_CASES = [
    lambda m, x, name, how: getattr(m, name)(x, 0.4, interpolation=how),
    lambda m, x, name, how: getattr(m, name)(x, m.tensor(QS, dtype=x.dtype), dim=1,
                                             interpolation=how),
    lambda m, x, name, how: getattr(m, name)(x, m.tensor(0.3, dtype=x.dtype), dim=0,
                                             keepdim=True, interpolation=how),
    lambda m, x, name, how: getattr(x, name)(m.tensor(QS, dtype=x.dtype), keepdim=True,
                                             interpolation=how),
]


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantile(name, interpolation) -> None:
    for dtype in ("float32", "float64"):
        ours, theirs = distinct((4, 5), dtype, 3, nan=name == "nanquantile")
        for case in QUANTILE_CASES:
            both(lambda m, x, c=case: c(m, x, name, interpolation), ours, theirs)
        out, their_out = pyaten.empty(0, dtype=ours.dtype), torch.empty(0, dtype=theirs.dtype)
        getattr(pyaten, name)(ours, 0.7, dim=1, out=out)
        getattr(torch, name)(theirs, 0.7, dim=1, out=their_out)
        assert_same(out, their_out)


@pytest.mark.parametrize("name", sorted(DIM_OPS))
def test_meta(name) -> None:
    for dtype in ("float32", "int64"):
        for shape, dim in SHAPES[:-2]:
            ours = pyaten.empty(shape, dtype=getattr(pyaten, dtype), device="meta")
            theirs = torch.empty(shape, dtype=getattr(torch, dtype), device="meta")
            pair = run_both(lambda o=ours, d=dim: DIM_OPS[name](pyaten, o, d),
                            lambda t=theirs, d=dim: DIM_OPS[name](torch, t, d), message=False)
            if pair is not None:
                assert_same(tuple(pair[0]), tuple(pair[1]))
    x, t = pyaten.empty(3, 4, device="meta"), torch.empty(3, 4, device="meta")
    assert_same(pyaten.median(x), torch.median(t))
    assert_same(pyaten.quantile(x, 0.3, dim=0), torch.quantile(t, 0.3, dim=0))


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), seed=st.integers(0, 99),
       q=st.floats(0, 1))
def test_property_quantile_and_median(shape, seed, q) -> None:
    ours, theirs = distinct(tuple(shape), "float64", seed)
    dim = seed % len(shape)
    assert_same(pyaten.quantile(ours, q, dim=dim), torch.quantile(theirs, q, dim=dim))
    assert_same(tuple(pyaten.median(ours, dim)), tuple(torch.median(theirs, dim)))
    k = 1 + seed % shape[dim]
    assert_same(tuple(pyaten.kthvalue(ours, k, dim)), tuple(torch.kthvalue(theirs, k, dim)))
