"""Sorting and searching against PyTorch: sort (both overloads, stable, descending) argsort
msort topk nonzero (as_tuple) nonzero_static argwhere searchsorted bucketize isin unique
(sorted, return_inverse, return_counts, dim) unique_consecutive bincount histc histogram, on
every dtype, 0-d, empty and non-contiguous inputs, each variant, errors and Meta.

Each case is `case(m, dtype)` run with `m = pyaten` and with `m = torch` on the same values.
Sorts and topk are compared with their indices: among equal values, `stable=True` keeps
their order and the default unstable sort and topk leave them where PyTorch's CPU kernels
(libstdc++'s std::sort / nth_element / partial_sort) do (Note: ties in sort and topk, in
pyaten/native/kernels/quick_select.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _helpers import (
    DTYPE_NAMES,
    assert_same,
    assert_same_outcome,
    from_torch,
    opinfo_samples,
    run_both,
    sample_arguments,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten

FLOATS = ("float16", "bfloat16", "float32", "float64")


def T(m, values, dtype: str = "int64"):
    arr = np.asarray(values)
    if dtype == "bool":
        arr = arr != 0
    t = m.tensor(arr.astype(np.float64) if dtype in ("float16", "bfloat16") else arr)
    return t.to(getattr(m, dtype))


def X(m, dtype, shape=(3, 5), seed=0, transpose=False, distinct=False, nan=False):
    """Small integer values (with ties unless `distinct`), as `dtype`; NaN sprinkled in floats
    with `nan`; `transpose` gives a non-contiguous view of the transposed shape."""
    rng = np.random.default_rng(seed)
    full = shape[::-1] if transpose else shape
    n = int(np.prod(full)) if full else 1
    values = (rng.permutation(n) - n // 3 if distinct else rng.integers(-3, 4, n)).astype(float)
    if dtype == "uint8":
        values = np.abs(values)
    if nan and dtype in FLOATS and n > 2:
        values[rng.choice(n, max(1, n // 6), replace=False)] = np.nan
    if dtype.startswith("complex"):
        values = values + 1j * rng.integers(-2, 3, n)
    t = T(m, values.reshape(full), dtype)
    return t.t() if transpose else t


def both(case, dtype, **kwargs) -> None:
    assert_same_outcome(lambda: case(pyaten, dtype), lambda: case(torch, dtype), **kwargs)


def tk(m, x, k, dim=-1, **kwargs):
    """topk's values, and the input gathered at its indices (which must be the same values);
    the indices themselves are compared in the tie tests below."""
    values, indices = m.topk(x, k, dim, **kwargs)
    return values, x.gather(dim, indices)


def outs(m, dtype):
    return m.empty(0, dtype=getattr(m, dtype)), m.empty(0, dtype=m.int64)


CASES = {
    "sort": lambda m, d: m.sort(X(m, d, nan=True)),
    "sort_dim0_desc": lambda m, d: X(m, d, nan=True).sort(0, descending=True),
    "sort_stable_t": lambda m, d: X(m, d, transpose=True).sort(stable=True, dim=1),
    "sort_stable_desc": lambda m, d: m.sort(X(m, d), stable=True, descending=True, dim=-1),
    "sort_0d": lambda m, d: m.sort(X(m, d, ())),
    "sort_empty": lambda m, d: m.sort(X(m, d, (0, 3)), 0),
    "sort_out": lambda m, d: m.sort(X(m, d), 1, out=outs(m, d)),
    "sort_stable_out": lambda m, d: m.sort(X(m, d), stable=True, dim=0, out=outs(m, d)),
    "argsort": lambda m, d: X(m, d, nan=True).argsort(),
    "argsort_desc": lambda m, d: m.argsort(X(m, d, transpose=True), 0, True),
    "argsort_stable": lambda m, d: m.argsort(X(m, d), stable=True, descending=True),
    "argsort_stable_out": lambda m, d: m.argsort(X(m, d), stable=True, dim=0,
                                                 out=m.empty(0, dtype=m.int64)),
    "msort": lambda m, d: m.msort(X(m, d, transpose=True)),
    "msort_out": lambda m, d: m.msort(X(m, d), out=m.empty(0, dtype=getattr(m, d))),
    "topk": lambda m, d: tk(m, X(m, d, distinct=True), 2),
    "topk_smallest": lambda m, d: tk(m, X(m, d, (4, 30), distinct=True), 3, 1, largest=False),
    "topk_dim0_t": lambda m, d: tk(m, X(m, d, transpose=True, distinct=True), 2, dim=0),
    "topk_large_k": lambda m, d: tk(m, X(m, d, (40,), distinct=True, nan=True), 30),
    "topk_small_k_nan": lambda m, d: tk(m, X(m, d, (40,), distinct=True, nan=True), 3),
    "topk_0": lambda m, d: tk(m, X(m, d), 0),
    "topk_0d": lambda m, d: tk(m, X(m, d, ()), 1),
    "topk_out": lambda m, d: m.topk(X(m, d, (9,), distinct=True), 1, out=outs(m, d))[0],
    "nonzero": lambda m, d: m.nonzero(X(m, d)),
    "nonzero_t": lambda m, d: X(m, d, transpose=True).nonzero(),
    "nonzero_0d": lambda m, d: m.nonzero(X(m, d, ())),
    "nonzero_tuple": lambda m, d: m.nonzero(X(m, d), as_tuple=True),
    "nonzero_tuple_0d": lambda m, d: X(m, d, ()).nonzero(as_tuple=True),
    "nonzero_out": lambda m, d: m.nonzero(X(m, d), out=m.empty(0, dtype=m.int64)),
    "nonzero_static": lambda m, d: m.nonzero_static(X(m, d), size=4),
    "nonzero_static_fill": lambda m, d: X(m, d).nonzero_static(size=20, fill_value=-7),
    "argwhere": lambda m, d: m.argwhere(X(m, d, transpose=True)),
    "searchsorted": lambda m, d: m.searchsorted(T(m, [-2, 0, 0, 3], d), X(m, d)),
    "searchsorted_right": lambda m, d: m.searchsorted(T(m, [-2, 0, 0, 3], d), X(m, d),
                                                      right=True),
    "searchsorted_side": lambda m, d: m.searchsorted(T(m, [-2, 0, 0, 3], d), X(m, d),
                                                     side="right", out_int32=True),
    "searchsorted_2d": lambda m, d: m.searchsorted(T(m, [[-2, 0, 3], [0, 1, 2], [1, 1, 1]], d),
                                                   X(m, d)),
    "searchsorted_sorter": lambda m, d: m.searchsorted(T(m, [3, -2, 0], d), X(m, d),
                                                       sorter=T(m, [1, 2, 0])),
    "searchsorted_scalar": lambda m, d: m.searchsorted(T(m, [-2, 0, 3], d), 1),
    "searchsorted_out": lambda m, d: m.searchsorted(T(m, [-2, 0, 3], d), X(m, d),
                                                    out=m.empty(0, dtype=m.int64)),
    "bucketize": lambda m, d: m.bucketize(X(m, d, transpose=True), T(m, [-2, 0, 0, 3], d)),
    "bucketize_right": lambda m, d: m.bucketize(X(m, d), T(m, [-2, 0, 3], d), right=True,
                                                out_int32=True),
    "bucketize_scalar": lambda m, d: m.bucketize(2, T(m, [-2, 0, 3], d)),
    "bucketize_out": lambda m, d: m.bucketize(X(m, d), T(m, [0, 3], d),
                                              out=m.empty(0, dtype=m.int64)),
    "isin": lambda m, d: m.isin(X(m, d), T(m, [0, 2, 3], d)),
    "isin_invert": lambda m, d: m.isin(X(m, d, transpose=True), T(m, [[0], [2]], d), invert=True),
    "isin_scalar": lambda m, d: m.isin(X(m, d), 2),
    "isin_scalar_tensor": lambda m, d: m.isin(2, X(m, d)),
    "isin_out": lambda m, d: m.isin(X(m, d), T(m, [1], d), out=m.empty(0, dtype=m.bool)),
    "unique": lambda m, d: m.unique(X(m, d)),
    "unique_all": lambda m, d: m.unique(X(m, d, transpose=True), return_inverse=True,
                                        return_counts=True),
    "unique_counts": lambda m, d: X(m, d, nan=True).unique(return_counts=True),
    "unique_0d": lambda m, d: m.unique(X(m, d, ()), return_inverse=True),
    "unique_empty": lambda m, d: m.unique(X(m, d, (0,)), return_inverse=True,
                                          return_counts=True),
    "unique_dim": lambda m, d: m.unique(X(m, d, (6, 2)) % 2 if d != "bool" else X(m, d, (6, 2)),
                                        dim=0, return_inverse=True, return_counts=True),
    "unique_dim1": lambda m, d: X(m, d, (2, 6), transpose=True).unique(dim=1),
    "unique_consecutive": lambda m, d: m.unique_consecutive(X(m, d, (20,)), return_counts=True,
                                                            return_inverse=True),
    "unique_consecutive_dim": lambda m, d: X(m, d, (8, 1)).unique_consecutive(dim=0),
    "bincount": lambda m, d: m.bincount(X(m, d, (20,)).abs() if d != "bool" else X(m, d)),
    "bincount_weights": lambda m, d: m.bincount(T(m, [1, 1, 4, 0]), X(m, d, (4,)), minlength=7),
    "histc": lambda m, d: m.histc(X(m, d, (30,)), bins=5),
    "histc_range": lambda m, d: X(m, d, transpose=True).histc(4, min=-2, max=2),
    "histc_out": lambda m, d: m.histc(X(m, d), 3, out=m.empty(0, dtype=getattr(m, d))),
    "histogram": lambda m, d: m.histogram(X(m, d, (30,)), 6),
    "histogram_range": lambda m, d: m.histogram(X(m, d), 4, range=(-1.0, 2.5), density=True),
    "histogram_edges": lambda m, d: X(m, d).histogram(T(m, [-3, -1, 0, 2.5], d),
                                                      weight=X(m, d, seed=3).abs()),
}


# Each operator's main cases run on all twelve dtypes; its variants (layouts, out=, keyword
# forms) on a few that cover the dtype categories, to keep the module quick.
FULL = frozenset("""
sort sort_stable_desc argsort msort topk topk_smallest nonzero nonzero_static argwhere
searchsorted bucketize isin isin_scalar unique unique_all unique_dim unique_consecutive bincount
bincount_weights histc histogram histogram_edges
""".split())
SOME_DTYPES = ("bool", "int64", "bfloat16", "float32", "complex64")


def _dtype_cases():
    return [pytest.param(name, d, id=f"{name}-{d}") for name in sorted(CASES)
            for d in (DTYPE_NAMES if name in FULL else SOME_DTYPES)]


@pytest.mark.parametrize(("name", "dtype"), _dtype_cases())
def test_every_dtype(name, dtype) -> None:
    both(CASES[name], dtype)


def test_sort_keeps_the_order_of_ties_both_ways() -> None:
    for descending in (False, True):
        both(lambda m, d, s=descending: m.sort(T(m, [2, 1, 2, 1, 2, 0] * 5, d), descending=s,
                                              stable=True), "float32")


def test_sort_large_rows_and_meta() -> None:
    # PyTorch's default (stable=False) sort of long rows does not keep ties in order
    both(lambda m, d: m.sort(X(m, d, (7, 300), nan=True), stable=True, dim=1, descending=True),
         "float32")
    both(lambda m, d: tk(m, X(m, d, (5, 400), distinct=True, nan=True), 9, 1), "float32")


# --- errors ------------------------------------------------------------------------------------

ERRORS = [
    lambda m: m.sort(m.tensor([1 + 1j])),
    lambda m: m.sort(m.ones(2, 3), 2),
    lambda m: m.topk(m.ones(2, 3), 4),
    lambda m: m.topk(m.ones(2, 3), -1),
    lambda m: m.topk(m.tensor([True, False]), 1),
    lambda m: m.topk(m.tensor([1 + 1j]), 1),
    lambda m: m.topk(m.ones(2, 3), 1, 2),
    lambda m: m.nonzero(m.ones(2), out=m.empty(0)),
    lambda m: m.nonzero_static(m.ones(2), size=-1),
    lambda m: m.searchsorted(m.tensor([1.0, 3.0]), m.tensor([3.0]), right=True, side="left"),
    lambda m: m.searchsorted(m.tensor([1.0, 3.0]), m.tensor([3.0]), side="lft"),
    lambda m: m.searchsorted(m.ones(2, 2), m.tensor([3.0, 6.0])),
    lambda m: m.searchsorted(m.tensor(1.0), m.tensor([3.0])),
    lambda m: m.searchsorted(m.ones(4), m.ones(2), sorter=m.tensor([0, 1, 2])),
    lambda m: m.searchsorted(m.ones(4), m.ones(2), sorter=m.tensor([0, 1, 2, 7])),
    lambda m: m.searchsorted(m.tensor([True]), m.tensor([True])),
    lambda m: m.searchsorted(m.ones(4), m.ones(2), out=m.empty(0, dtype=m.int32)),
    lambda m: m.bucketize(m.ones(2), m.ones(2, 2)),
    lambda m: m.isin(m.tensor([1j]), m.tensor([1j])),
    lambda m: m.isin(m.tensor([True]), m.tensor([True])),
    lambda m: m.unique(m.tensor([1j])),
    lambda m: m.unique(m.ones(2, 0), dim=0),
    lambda m: m.unique(m.ones(2), dim=1),
    lambda m: m.unique(m.tensor(2), dim=0),
    lambda m: m.unique(m.tensor([[1j]]), dim=0),
    lambda m: m.bincount(m.tensor([1, -1])),
    lambda m: m.bincount(m.tensor([[1]])),
    lambda m: m.bincount(m.tensor([1.0])),
    lambda m: m.bincount(m.tensor([1, 2]), minlength=-1),
    lambda m: m.bincount(m.tensor([1, 2]), m.tensor([1.0])),
    lambda m: m.histc(m.tensor([1, 2])),
    lambda m: m.histc(m.ones(3), bins=0),
    lambda m: m.histc(m.ones(3), bins=3, min=3, max=1),
    lambda m: m.histc(m.tensor([1.0, float("inf")]), bins=3),
    lambda m: m.histogram(m.tensor([1, 2]), 3),
    lambda m: m.histogram(m.ones(3), 3, range=(3.0, 1.0)),
    lambda m: m.histogram(m.ones(2), 3, weight=m.ones(1)),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case) -> None:
    assert_same_outcome(lambda: ERRORS[case](pyaten), lambda: ERRORS[case](torch))


# --- Meta --------------------------------------------------------------------------------------

META = [
    lambda m, d: m.sort(m.empty(3, 4, device=d), 0),
    lambda m, d: m.empty(3, 4, device=d).sort(stable=True, descending=True),
    lambda m, d: m.argsort(m.empty(3, 4, device=d)),
    lambda m, d: m.msort(m.empty(3, 4, device=d)),
    lambda m, d: m.topk(m.empty(3, 4, device=d), 2, 0),
    lambda m, d: m.searchsorted(m.empty(5, device=d), m.empty(2, 3, device=d)),
    lambda m, d: m.bucketize(m.empty(2, 3, device=d), m.empty(5, device=d), out_int32=True),
    lambda m, d: m.isin(m.empty(2, 3, device=d), m.empty(5, device=d)),
    lambda m, d: m.histc(m.empty(7, device=d), bins=4, min=0, max=1),
    lambda m, d: m.nonzero_static(m.empty(2, 3, device=d), size=4),
]


@pytest.mark.parametrize("case", range(len(META)))
def test_meta_shapes(case) -> None:
    ours, theirs = run_both(lambda: META[case](pyaten, "meta"), lambda: META[case](torch, "meta"))
    assert_same(ours, theirs)


@pytest.mark.parametrize("op", ["nonzero", "unique", "bincount", "argwhere"])
def test_data_dependent_ops_refuse_meta(op) -> None:
    for m in (pyaten, torch):
        t = m.empty(3, dtype=m.int64, device="meta")
        with pytest.raises(NotImplementedError):
            getattr(m, op)(t)


# --- OpInfo samples and properties ----------------------------------------------------------

_OPINFO_NAMES = ("sort", "argsort", "msort", "topk", "nonzero", "argwhere", "searchsorted",
                 "bucketize", "isin", "unique", "unique_consecutive", "bincount", "histc",
                 "histogram", "nonzero_static")
_INDICES_UNSPECIFIED = ()


def _opinfos():
    from torch.testing._internal.common_methods_invocations import op_db
    return [pytest.param(i, id=f"{i.name}.{i.variant_test_name}") for i in op_db
            if i.name in _OPINFO_NAMES]


@pytest.mark.parametrize("info", _opinfos())
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_opinfo_samples(info, dtype) -> None:
    for sample in opinfo_samples(info, dtype):
        theirs, ours, kwargs = sample_arguments(sample)
        fn = getattr(pyaten, info.name)
        pair = run_both(lambda f=fn, a=ours, k=kwargs: f(*a, **k),
                        lambda a=theirs, k=sample.kwargs: info.op(*a, **k))
        if pair is None:
            continue
        if info.name in _INDICES_UNSPECIFIED:
            assert_same(pair[0][0], pair[1][0])
        else:
            assert_same(*pair)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 40), k=st.integers(0, 40), seed=st.integers(0, 2**16),
       descending=st.booleans())
def test_sort_topk_unique_property(n, k, seed, descending) -> None:
    values = np.random.default_rng(seed).integers(-4, 5, n).astype(np.float32)
    ours, theirs = pyaten.tensor(values), torch.tensor(values)
    assert_same(ours.sort(descending=descending, stable=True),
                theirs.sort(descending=descending, stable=True))
    assert_same(ours.unique(return_inverse=True, return_counts=True),
                theirs.unique(return_inverse=True, return_counts=True))
    if k <= n:
        assert_same(ours.topk(k, largest=not descending)[0],
                    theirs.topk(k, largest=not descending)[0])


# --- ties in the unstable sort and in topk: PyTorch's CPU order --------------------------------

_TIE_DTYPES = ("float32", "float64", "int64", "int32", "int16", "uint8", "int8", "float16",
               "bfloat16", "bool")


def _tied(m, dtype: str, shape: tuple, seed: int, levels: int = 4):
    """Values with many ties (NaNs too, for floating dtypes), the same for pyaten and torch."""
    gen = np.random.default_rng(seed)
    values = gen.integers(0, levels, shape).astype(np.float64)
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        values.reshape(-1)[gen.integers(0, values.size, 3)] = np.nan
    t = torch.tensor(values).to(getattr(torch, dtype))
    return t if m is torch else from_torch(t)


@pytest.mark.parametrize("dtype", _TIE_DTYPES)
@pytest.mark.parametrize(("shape", "dim"), [((17,), 0), ((300,), 0), ((3, 70), 1),
                                            ((70, 3), 0), ((2, 5, 40), -1)])
def test_unstable_sort_orders_ties_as_torch(dtype, shape, dim) -> None:
    for descending in (False, True):
        both(lambda m, d, s=descending: m.sort(_tied(m, d, shape, 1), dim=dim, descending=s),
             dtype)
        both(lambda m, d, s=descending: m.argsort(_tied(m, d, shape, 2), dim=dim,
                                                  descending=s), dtype)


def test_sort_along_an_expanded_dim_keeps_the_indices_in_order_as_torch() -> None:
    both(lambda m, d: m.sort(T(m, [[1.0], [2.0]], d).expand(2, 40), dim=1), "float32")
    both(lambda m, d: m.topk(T(m, [1.0], d).expand(40), 5), "float32")


def test_long_1d_integer_ascending_sort_is_stable_as_torchs_radix_sort() -> None:
    for dtype in ("int64", "int16"):
        both(lambda m, d: m.sort(_tied(m, d, (40000,), 3)), dtype)
        both(lambda m, d: m.sort(_tied(m, d, (40000,), 3), descending=True), dtype)


@pytest.mark.parametrize("dtype", [d for d in _TIE_DTYPES if d != "bool"])
@pytest.mark.parametrize("n", [5, 70, 700])
def test_topk_orders_ties_as_torch(dtype, n) -> None:
    for k in sorted({1, 2, n // 64 or 1, n // 5, n}):
        for largest in (True, False):
            for is_sorted in (True, False):
                both(lambda m, d, k=k, a=largest, s=is_sorted: m.topk(
                    _tied(m, d, (3, n), k + n), k, largest=a, sorted=s), dtype)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 200), seed=st.integers(0, 2**16), levels=st.integers(1, 6),
       descending=st.booleans(), k_part=st.floats(0, 1), is_sorted=st.booleans())
def test_ties_property(n, seed, levels, descending, k_part, is_sorted) -> None:
    ours, theirs = _tied(pyaten, "float32", (n,), seed, levels), _tied(torch, "float32", (n,),
                                                                        seed, levels)
    assert_same(ours.sort(descending=descending), theirs.sort(descending=descending))
    k = int(k_part * n)
    assert_same(ours.topk(k, largest=descending, sorted=is_sorted),
                theirs.topk(k, largest=descending, sorted=is_sorted))
