"""Indexing along a dim and by masks against PyTorch: index_select gather scatter (src, value,
reduce) scatter_add scatter_reduce index_add index_copy index_fill masked_fill masked_select
masked_scatter take put take_along_dim, on every dtype, 0-d, empty and non-contiguous inputs,
each variant (function, method, in-place, out=), errors and Meta.

Each case is `case(m, dtype)` run once with `m = pyaten` and once with `m = torch`; inputs come
from NumPy arrays built the same way in both (`T`). Writes with duplicate indices are avoided
where PyTorch leaves the winner unspecified.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _helpers import (
    DTYPE_NAMES,
    assert_same,
    assert_same_outcome,
    opinfo_samples,
    run_both,
    sample_arguments,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten


def T(m, values, dtype: str = "int64"):
    """A tensor of module `m` holding `values` (a NumPy array or list) as `dtype`."""
    arr = np.asarray(values)
    if dtype == "bool":
        arr = arr != 0
    t = m.tensor(arr.astype(np.float64) if dtype in ("float16", "bfloat16") else arr)
    return t.to(getattr(m, dtype))


def data(shape, seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.integers(-5, 6, size=shape).astype(np.float64) + (rng.random(shape) > 0.5) * 0.5


def X(m, dtype, shape=(3, 4), seed=0, transpose=False):
    """The op's input: `shape` of values, or its transpose (a non-contiguous view)."""
    values = data(shape[::-1] if transpose else shape, seed)
    if dtype not in ("float16", "bfloat16", "float32", "float64", "complex64", "complex128"):
        values = np.trunc(values)
    if dtype.startswith("complex"):
        values = values + 1j * data(values.shape, seed + 1)
    if dtype == "uint8":
        values = np.abs(values)
    t = T(m, values, dtype)
    return t.t() if transpose else t


def idx(m, values):
    return T(m, values, "int64")


def both(case, dtype, **kwargs) -> None:
    assert_same_outcome(lambda: case(pyaten, dtype), lambda: case(torch, dtype), **kwargs)


PERM = [[2, 0, 1, 1], [0, 2, 2, 0]]  # a gather index for a (3, 4) input along dim 0
UNIQUE_ROWS = [[2, 0, 1, 3], [1, 3, 0, 2]]  # no duplicate in a row: scatter along dim 1

# name -> case(m, dtype); every case runs on all twelve dtypes
CASES = {
    "index_select": lambda m, d: m.index_select(X(m, d), 0, idx(m, [2, 0, 2])),
    "index_select_dim1_t": lambda m, d: X(m, d, transpose=True).index_select(1, idx(m, [1, 0])),
    "index_select_int32": lambda m, d: X(m, d).index_select(-1, T(m, [3, 1], "int32")),
    "index_select_0d": lambda m, d: X(m, d, ()).index_select(0, idx(m, 0)),
    "index_select_empty": lambda m, d: X(m, d, (0, 3)).index_select(1, idx(m, [2])),
    "index_select_out": lambda m, d: m.index_select(
        X(m, d), 1, idx(m, [0]), out=m.empty(0, dtype=getattr(m, d))),
    "gather": lambda m, d: m.gather(X(m, d), 0, idx(m, PERM)),
    "gather_dim1_small": lambda m, d: X(m, d, transpose=True).gather(1, idx(m, [[1], [0]])),
    "gather_0d": lambda m, d: X(m, d, ()).gather(0, idx(m, 0)),
    "gather_empty": lambda m, d: X(m, d).gather(1, idx(m, np.zeros((3, 0), np.int64))),
    "gather_out": lambda m, d: m.gather(X(m, d), 1, idx(m, PERM),
                                        out=m.empty(0, dtype=getattr(m, d))),
    "scatter_src": lambda m, d: X(m, d).scatter(1, idx(m, UNIQUE_ROWS), X(m, d, seed=1)),
    "scatter_src_t": lambda m, d: X(m, d, transpose=True).scatter(
        0, idx(m, [[0, 1, 2]]), X(m, d, (2, 3), seed=1)),
    "scatter_value": lambda m, d: X(m, d).scatter(1, idx(m, UNIQUE_ROWS), 1),
    "scatter__src": lambda m, d: X(m, d).scatter_(0, idx(m, [[2, 1, 0, 1]]), X(m, d, seed=2)),
    "scatter_out": lambda m, d: m.scatter(X(m, d), 1, idx(m, UNIQUE_ROWS), X(m, d, seed=1),
                                          out=m.empty(0, dtype=getattr(m, d))),
    "scatter_add": lambda m, d: X(m, d).scatter_add(0, idx(m, PERM), X(m, d, seed=3)),
    "scatter_add_": lambda m, d: X(m, d).scatter_add_(1, idx(m, PERM), X(m, d, seed=3)),
    "scatter_add_0d": lambda m, d: X(m, d, ()).scatter_add(0, idx(m, 0), X(m, d, (), 1)),
    "scatter_reduce_add": lambda m, d: X(m, d).scatter(0, idx(m, PERM), X(m, d, seed=4),
                                                      reduce="add"),
    "scatter_reduce_multiply": lambda m, d: X(m, d).scatter(0, idx(m, PERM), X(m, d, seed=4),
                                                           reduce="multiply"),
    "scatter_value_reduce": lambda m, d: X(m, d).scatter_(0, idx(m, PERM), 2, reduce="add"),
    "index_add": lambda m, d: X(m, d).index_add(0, idx(m, [2, 0, 2]), X(m, d, (3, 4), 5)),
    "index_add_alpha": lambda m, d: X(m, d).index_add_(1, idx(m, [3, 3]), X(m, d, (3, 2), 5),
                                                       alpha=2),
    "index_add_out": lambda m, d: m.index_add(X(m, d), 1, idx(m, [1]), X(m, d, (3, 1), 5),
                                              out=m.empty(0, dtype=getattr(m, d))),
    "index_copy": lambda m, d: X(m, d).index_copy(1, idx(m, [3, 0]), X(m, d, (3, 2), 6)),
    "index_copy_t": lambda m, d: X(m, d, transpose=True).index_copy_(0, idx(m, [1]),
                                                                     X(m, d, (1, 3), 6)),
    "index_copy_0d": lambda m, d: X(m, d, ()).index_copy(0, idx(m, [0]), X(m, d, (), 6)),
    "index_fill": lambda m, d: X(m, d).index_fill(1, idx(m, [3, -1, 0]), 1),
    "index_fill_tensor": lambda m, d: X(m, d, transpose=True).index_fill_(
        0, idx(m, 2), X(m, d, (), 7)),
    "masked_fill": lambda m, d: X(m, d).masked_fill(X(m, "bool", (4,), 8), 1),
    "masked_fill_tensor": lambda m, d: X(m, d, transpose=True).masked_fill_(
        X(m, "bool", (4, 3), 8), X(m, d, (), 9)),
    "masked_fill_tensor_t": lambda m, d: X(m, d, transpose=True).masked_fill_(
        X(m, "bool", (4,), 8), X(m, d, (), 9)),
    "masked_fill_broadcast": lambda m, d: X(m, d, (4,)).masked_fill(X(m, "bool", (2, 4)), 0),
    "masked_select": lambda m, d: X(m, d, transpose=True).masked_select(X(m, "bool", (4, 3))),
    "masked_select_broadcast": lambda m, d: m.masked_select(X(m, d, (4,)), X(m, "bool", (2, 1))),
    "masked_select_out": lambda m, d: m.masked_select(X(m, d), X(m, "bool", (3, 4), 2),
                                                      out=m.empty(0, dtype=getattr(m, d))),
    "masked_scatter": lambda m, d: X(m, d).masked_scatter(X(m, "bool", (3, 4), 2),
                                                          X(m, d, (4, 4), 3)),
    "masked_scatter_": lambda m, d: X(m, d, transpose=True).masked_scatter_(
        X(m, "bool", (4,), 2), X(m, d, (12,), 3)),
    "masked_scatter_bad_mask": lambda m, d: X(m, d).masked_scatter_(X(m, "bool", (3,), 2),
                                                                    X(m, d, (12,), 3)),
    "take": lambda m, d: X(m, d, transpose=True).take(idx(m, [[0, -1], [5, 3]])),
    "take_out": lambda m, d: m.take(X(m, d), idx(m, [11]), out=m.empty(0, dtype=getattr(m, d))),
    "put": lambda m, d: X(m, d).put(idx(m, [0, -1, 5]), X(m, d, (3,), 4)),
    "put_accumulate": lambda m, d: X(m, d).put_(idx(m, [[0, 0], [5, 0]]), X(m, d, (2, 2), 4),
                                                accumulate=True),
    "take_along_dim": lambda m, d: m.take_along_dim(X(m, d), idx(m, [[0, -1, 2]]), dim=1),
    "take_along_dim_none": lambda m, d: X(m, d).take_along_dim(idx(m, [[5, 0]])),
    "take_along_dim_bcast": lambda m, d: X(m, d).take_along_dim(idx(m, [[1], [0], [2]]), 0),
    "take_along_dim_out": lambda m, d: m.take_along_dim(X(m, d), idx(m, [[1]]), 1,
                                                        out=m.empty(0, dtype=getattr(m, d))),
}


# Each operator's main cases run on all twelve dtypes; its variants (layouts, out=, keyword
# forms) on a few that cover the dtype categories, to keep the module quick.
FULL = frozenset("""
index_select gather scatter_src scatter_value scatter_add index_add index_copy index_fill
index_fill_tensor masked_fill masked_fill_tensor masked_select masked_scatter take put
put_accumulate take_along_dim scatter_reduce_add scatter_reduce_multiply
""".split())
SOME_DTYPES = ("bool", "int64", "bfloat16", "float32", "complex64")


def _dtype_cases():
    return [pytest.param(name, d, id=f"{name}-{d}") for name in sorted(CASES)
            for d in (DTYPE_NAMES if name in FULL else SOME_DTYPES)]


@pytest.mark.parametrize(("name", "dtype"), _dtype_cases())
def test_every_dtype(name, dtype) -> None:
    both(CASES[name], dtype)


REDUCES = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_two(reduce, include_self, dtype) -> None:
    def case(m, d):
        return X(m, d).scatter_reduce(0, idx(m, PERM), X(m, d, seed=4), reduce,
                                      include_self=include_self)
    both(case, dtype)
    both(lambda m, d: m.scatter_reduce(X(m, d, transpose=True), 1, idx(m, [[0, 0, 2, 0]]),
                                       X(m, d, (1, 4), 6), reduce, include_self=include_self),
         dtype)


def test_scatter_reduce_mean_of_integers_rounds_down() -> None:
    for include_self in (True, False):
        both(lambda m, d, s=include_self: T(m, [4, -7, 9]).scatter_reduce(
            0, idx(m, [0, 1, 1, 2]), T(m, [1, 3, -1, -4]), "mean", include_self=s), "int64")


def test_nan_in_amax_amin() -> None:
    for reduce in ("amax", "amin"):
        both(lambda m, d, r=reduce: T(m, [4.0, 7.0, 9.0], d).scatter_reduce(
            0, idx(m, [0, 0, 2]), T(m, [1.0, float("nan"), 3.0], d), r), "float32")


# --- in-place and out= semantics ---------------------------------------------------------------


@pytest.mark.parametrize("method", ["scatter_", "scatter_add_", "index_add_", "index_copy_",
                                    "index_fill_", "masked_fill_", "masked_scatter_", "put_"])
def test_in_place_returns_self_and_bumps_version(method) -> None:
    x = pyaten.zeros(3, 4)
    index = pyaten.tensor([[0, 1, 2, 0]]) if method.startswith("scatter") else pyaten.tensor([1])
    args = {
        "scatter_": (0, index, pyaten.ones(1, 4)),
        "scatter_add_": (0, index, pyaten.ones(1, 4)),
        "index_add_": (0, index, pyaten.ones(1, 4)),
        "index_copy_": (0, index, pyaten.ones(1, 4)),
        "index_fill_": (1, index, 2.0),
        "masked_fill_": (pyaten.tensor([True, False, True, False]), 2.0),
        "masked_scatter_": (pyaten.tensor([True, False, True, False]), pyaten.ones(6)),
        "put_": (index, pyaten.ones(1)),
    }[method]
    version = x._version
    assert getattr(x, method)(*args) is x
    assert x._version > version


def test_out_resizes_and_refuses_other_dtypes() -> None:
    for m in (pyaten, torch):
        out = m.empty(0)
        assert m.gather(m.ones(2, 2), 1, m.tensor([[0], [1]]), out=out) is out
    cases = [
        lambda m: m.index_select(m.ones(2, 2), 0, m.tensor([0]), out=m.empty(0, dtype=m.int64)),
        lambda m: m.gather(m.ones(2, 2), 1, m.tensor([[0]]), out=m.empty(0, dtype=m.int64)),
        lambda m: m.masked_select(m.ones(2), m.tensor([True, False]),
                                  out=m.empty(0, dtype=m.int64)),
        lambda m: m.take(m.ones(2), m.tensor([0]), out=m.empty(0, dtype=m.int64)),
        lambda m: m.scatter_add(m.ones(2), 0, m.tensor([0]), m.ones(1),
                                out=m.empty(0, dtype=m.int64)),
    ]
    for case in cases:
        assert_same_outcome(lambda c=case: c(pyaten), lambda c=case: c(torch))


def test_bad_index_leaves_self_unchanged() -> None:
    for op in (lambda x: x.scatter_(1, pyaten.tensor([[0, 9]]), 1.0),
               lambda x: x.index_add_(0, pyaten.tensor([0, 7]), pyaten.ones(2, 4)),
               lambda x: x.index_fill_(0, pyaten.tensor([0, 7]), 1.0),
               lambda x: x.put_(pyaten.tensor([0, 70]), pyaten.ones(2))):
        x = pyaten.zeros(3, 4)
        with pytest.raises((RuntimeError, IndexError)):
            op(x)
        assert x.sum().item() == 0


# --- errors ------------------------------------------------------------------------------------

ERRORS = [
    lambda m: m.ones(3, 4).index_select(0, m.tensor([[0]])),
    lambda m: m.ones(3, 4).index_select(0, m.tensor([0.0])),
    lambda m: m.ones(3, 4).index_select(0, m.tensor([5])),
    lambda m: m.ones(3, 4).index_select(0, m.tensor([-1])),
    lambda m: m.ones(3, 4).index_select(2, m.tensor([0])),
    lambda m: m.ones(3, 4).index_select(1, m.tensor([2], dtype=m.int16)),
    lambda m: m.empty(0, 3).index_select(0, m.tensor([0])),
    lambda m: m.tensor(5.0).index_select(0, m.tensor([1])),
    lambda m: m.ones(3, 4).gather(1, m.tensor([[0, 5]])),
    lambda m: m.ones(3, 4).gather(1, m.tensor([[-1]])),
    lambda m: m.ones(3, 4).gather(1, m.tensor([[0]], dtype=m.int16)),
    lambda m: m.ones(3, 4).gather(1, m.tensor([[0], [1], [2], [0]])),
    lambda m: m.ones(3, 4).gather(1, m.tensor([[[0]]])),
    lambda m: m.ones(3, 4).gather(2, m.tensor([[0]])),
    lambda m: m.ones(3, 4).scatter(1, m.tensor([[5]]), 1.0),
    lambda m: m.ones(3, 4).scatter(1, m.tensor([[1]]), m.ones(1, 1, dtype=m.float64)),
    lambda m: m.ones(3, 4).scatter(1, m.tensor([[1, 2]]), m.ones(2, 1)),
    lambda m: m.ones(3, 4).scatter(1, m.tensor([[[1]]]), 1.0),
    lambda m: m.ones(3, 4).scatter(1, m.tensor([[1]]), m.ones(1, 1), reduce="mean"),
    lambda m: m.ones(3, 4).scatter_reduce(1, m.tensor([[1]]), m.ones(1, 1), reduce="add"),
    lambda m: m.ones(3, 4).scatter_add(1, m.tensor([[1.0]]), m.ones(1, 1)),
    lambda m: m.ones(2, dtype=m.complex64).scatter_reduce(0, m.tensor([0]),
                                                          m.ones(1, dtype=m.complex64), "amax"),
    lambda m: m.ones(3, 4).index_add(0, m.tensor([0, 5]), m.ones(2, 4)),
    lambda m: m.ones(3, 4).index_add(0, m.tensor([0, 1]), m.ones(2, 3)),
    lambda m: m.ones(3, 4).index_add(0, m.tensor([0, 1]), m.ones(3, 4)),
    lambda m: m.ones(3, 4).index_add(0, m.tensor([[0, 1]]), m.ones(2, 4)),
    lambda m: m.ones(3, 4).index_add(0, m.tensor([0, 1]), m.ones(2, 4, dtype=m.float64)),
    lambda m: m.ones(3, 4).index_add(0, m.tensor([1.0]), m.ones(1, 4)),
    lambda m: m.ones(3, 4).index_copy(0, m.tensor([0, 5]), m.ones(2, 4)),
    lambda m: m.ones(3, 4).index_copy(0, m.tensor([0, 1]), m.ones(3, 4)),
    lambda m: m.ones(3, 4).index_copy(0, m.tensor([1], dtype=m.int32), m.ones(1, 4)),
    lambda m: m.ones(3, 4).index_copy(0, m.tensor([0, 1]), m.ones(2, 4, dtype=m.float64)),
    lambda m: m.ones(3, 4).index_fill(0, m.tensor([0, 5]), 2),
    lambda m: m.ones(3, 4).index_fill(0, m.tensor([-4]), 2),
    lambda m: m.ones(3, 4).index_fill(0, m.tensor([0, 1]), m.tensor([2.0, 3.0])),
    lambda m: m.ones(3, 4).index_fill(0, m.tensor([[0, 1]]), 2),
    lambda m: m.ones(3, 4).index_fill(0, m.tensor([1.0]), 5),
    lambda m: m.ones(3, 4).masked_fill(m.ones(3, 4), 2),
    lambda m: m.ones(3, 4).masked_fill(m.ones(3, 5, dtype=m.bool), 2),
    lambda m: m.ones(3, 4).masked_fill(m.ones(3, 4, dtype=m.bool), m.tensor([2.0])),
    lambda m: m.ones(1).masked_fill_(m.ones(3, dtype=m.bool), 2.5),
    lambda m: m.tensor([1, 2], dtype=m.int8).masked_fill(m.tensor([True, False]), 1000),
    lambda m: m.tensor([1, 2]).masked_fill(m.tensor([1, 0], dtype=m.uint8), 3),
    lambda m: m.ones(3, 4).masked_select(m.ones(3, 4)),
    lambda m: m.ones(3, 4).masked_select(m.ones(3, 5, dtype=m.bool)),
    lambda m: m.ones(3, 4).masked_scatter(m.ones(3, 4, dtype=m.bool), m.ones(3)),
    lambda m: m.ones(3, 4).masked_scatter(m.ones(3, 4, dtype=m.bool), m.ones(13, dtype=m.float64)),
    lambda m: m.ones(3, 4).take(m.tensor([12])),
    lambda m: m.ones(3, 4).take(m.tensor([-13])),
    lambda m: m.ones(3, 4).take(m.tensor([1], dtype=m.int32)),
    lambda m: m.empty(0).take(m.tensor([0])),
    lambda m: m.ones(3, 4).put(m.tensor([12]), m.tensor([1.0])),
    lambda m: m.ones(3, 4).put(m.tensor([1, 2]), m.tensor([1.0])),
    lambda m: m.ones(3, 4).put(m.tensor([1]), m.tensor([1], dtype=m.float64)),
    lambda m: m.ones(3, 4).put(m.tensor([1.0]), m.tensor([1.0])),
    lambda m: m.zeros(1).expand(4).scatter_(0, m.tensor([0]), 1.0),
    lambda m: m.zeros(1).expand(4).scatter_add_(0, m.tensor([0]), m.ones(1)),
    lambda m: m.zeros(1).expand(4).index_add_(0, m.tensor([0]), m.ones(1)),
    lambda m: m.zeros(1).expand(4).index_copy_(0, m.tensor([0]), m.ones(1)),
    lambda m: m.zeros(1).expand(4).masked_fill_(m.ones(4, dtype=m.bool), 1.0),
    lambda m: m.zeros(1).expand(4).index_fill_(0, m.tensor([0]), 1.0),
    lambda m: m.ones(3, 4).take_along_dim(m.tensor([[1]], dtype=m.int32), 1),
    lambda m: m.ones(3, 4).take_along_dim(m.tensor([1]), 1),
    lambda m: m.ones(3, 4).take_along_dim(m.tensor([[1]]), 2),
    lambda m: m.ones(3, 4).take_along_dim(m.tensor([[1], [1]]), 1),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case) -> None:
    assert_same_outcome(lambda: ERRORS[case](pyaten), lambda: ERRORS[case](torch))


# --- Meta --------------------------------------------------------------------------------------

META = [
    lambda m, d: m.index_select(m.empty(3, 4, device=d), 1, m.tensor([0, 1, 1], device=d)),
    lambda m, d: m.gather(m.empty(3, 4, device=d), 0, m.zeros(2, 4, dtype=m.int64, device=d)),
    lambda m, d: m.empty(3, 4, device=d).scatter(0, m.zeros(2, 4, dtype=m.int64, device=d), 1.0),
    lambda m, d: m.empty(3, 4, device=d).scatter_add_(0, m.zeros(1, 4, dtype=m.int64, device=d),
                                                      m.empty(2, 4, device=d)),
    lambda m, d: m.empty(3, 4, device=d).scatter_reduce(
        0, m.zeros(1, 4, dtype=m.int64, device=d), m.empty(2, 4, device=d), "amax"),
    lambda m, d: m.empty(3, 4, device=d).index_add(0, m.tensor([0], device=d),
                                                   m.empty(1, 4, device=d)),
    lambda m, d: m.empty(3, 4, device=d).index_copy(1, m.tensor([0], device=d),
                                                    m.empty(3, 1, device=d)),
    lambda m, d: m.empty(3, 4, device=d).index_fill(1, m.tensor([0], device=d), 2),
    lambda m, d: m.empty(3, 4, device=d).masked_fill(m.empty(4, dtype=m.bool, device=d), 2),
    lambda m, d: m.empty(3, 4, device=d).masked_scatter(m.empty(4, dtype=m.bool, device=d),
                                                        m.empty(12, device=d)),
    lambda m, d: m.empty(3, 4, device=d).take(m.zeros(2, 5, dtype=m.int64, device=d)),
    lambda m, d: m.empty(3, 4, device=d).put_(m.zeros(5, dtype=m.int64, device=d),
                                              m.empty(5, device=d)),
    lambda m, d: m.take_along_dim(m.empty(3, 4, device=d),
                                  m.zeros(1, 2, dtype=m.int64, device=d), 1),
    lambda m, d: m.empty(3, 4, device=d).gather(1, m.zeros(2, 4, dtype=m.int32, device=d)),
]


@pytest.mark.parametrize("case", range(len(META)))
def test_meta_shapes(case) -> None:
    ours, theirs = run_both(lambda: META[case](pyaten, "meta"), lambda: META[case](torch, "meta"))
    assert_same(ours, theirs, strides=True)


def test_masked_select_has_no_meta_kernel() -> None:
    for m in (pyaten, torch):
        with pytest.raises(NotImplementedError):
            m.masked_select(m.empty(3, device="meta"), m.empty(3, dtype=m.bool, device="meta"))


# --- OpInfo samples and properties ----------------------------------------------------------

_OPINFO_NAMES = ("index_select", "gather", "scatter", "scatter_add", "scatter_reduce",
                 "index_add", "index_copy", "index_fill", "masked_fill", "masked_select",
                 "masked_scatter", "take", "put", "take_along_dim")


def _opinfos():
    from torch.testing._internal.common_methods_invocations import op_db
    return [pytest.param(i, id=f"{i.name}.{i.variant_test_name}") for i in op_db
            if i.name in _OPINFO_NAMES]


@pytest.mark.parametrize("info", _opinfos())
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_opinfo_samples(info, dtype) -> None:
    nondeterministic = info.name in ("scatter", "index_copy", "put", "index_put")
    for sample in opinfo_samples(info, dtype):
        theirs, ours, kwargs = sample_arguments(sample)
        fn = getattr(pyaten, info.name)
        pair = run_both(lambda f=fn, a=ours, k=kwargs: f(*a, **k),
                        lambda a=theirs, k=sample.kwargs: info.op(*a, **k))
        if pair is not None and not nondeterministic:
            assert_same(*pair)


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 5), cols=st.integers(1, 6), k=st.integers(0, 7),
       seed=st.integers(0, 2**16), dim=st.integers(0, 1))
def test_gather_scatter_add_property(rows, cols, k, seed, dim) -> None:
    rng = np.random.default_rng(seed)
    shape = (rows, cols)
    index_shape = (k, cols) if dim == 0 else (rows, k)
    index = rng.integers(0, shape[dim], size=index_shape)
    values = rng.standard_normal(shape)
    src = rng.standard_normal(index_shape)
    x, i, s = pyaten.tensor(values), pyaten.tensor(index), pyaten.tensor(src)
    tx, ti, ts = torch.tensor(values), torch.tensor(index), torch.tensor(src)
    assert_same(x.gather(dim, i), tx.gather(dim, ti))
    assert_same(x.scatter_add(dim, i, s), tx.scatter_add(dim, ti, ts))
    assert_same(x.scatter_reduce(dim, i, s, "amin", include_self=False),
                tx.scatter_reduce(dim, ti, ts, "amin", include_self=False))
