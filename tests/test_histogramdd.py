"""histogramdd and its three kernels against PyTorch: edges bit for bit, counts exactly,
density, weights, the bins forms (int, int list, edge tensors), errors, no Meta kernel and no
derivative (a NotImplemented node), as PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _helpers import assert_same, from_torch, run_both, same_error
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten


def _exact(ours, theirs) -> None:
    """Same named tuple fields, dtypes, shapes and bits."""
    assert type(ours).__name__ == type(theirs).__name__
    assert_same(ours, theirs, rtol=0, atol=0)


def _compare(x: torch.Tensor, bins, **kwargs) -> None:
    """pyaten.histogramdd against torch.histogramdd on the same arguments, bit for bit (or the
    same error)."""
    ours = {k: from_torch(v) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    pair = run_both(lambda: pyaten.histogramdd(from_torch(x), bins, **ours),
                    lambda: torch.histogramdd(x, bins, **kwargs))
    if pair is not None:
        _exact(*pair)


def _points(seed: int, shape: tuple, dtype=torch.float32, ties: bool = False) -> torch.Tensor:
    gen = np.random.default_rng(seed)
    values = gen.integers(-3, 4, shape) if ties else gen.standard_normal(shape) * 3
    return torch.tensor(values).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(7, 1), (20, 2), (5, 4, 3), (0, 2), (1, 3)])
@pytest.mark.parametrize("bins", [1, 3, [2, 5, 4]])
def test_bin_counts_match_torch(dtype, shape, bins) -> None:
    for seed, ties in ((0, False), (1, True)):
        x = _points(seed, shape, dtype, ties)
        if isinstance(bins, list):
            bins_for = bins[: shape[-1]] + [3] * (shape[-1] - len(bins))
        else:
            bins_for = bins
        for density in (False, True):
            _compare(x, bins_for, density=density)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16,
                                   torch.bfloat16])
def test_range_and_weight(dtype) -> None:
    x = _points(2, (30, 2), dtype)
    w = torch.tensor(np.random.default_rng(3).integers(0, 5, 30)).to(dtype)
    ranges = [[-2.0, 2.0, -1.0, 3.0], [0.5, 0.5, -4.0, 4.0], [-10.0, 10.0, 1.0, 1.25]]
    for rng in ranges:
        for weight in (None, w):
            for density in (False, True):
                _compare(x, [4, 3], range=rng, weight=weight, density=density)


def test_bins_as_tensors_are_returned_as_given() -> None:
    x = _points(4, (25, 2), ties=True)
    edges_t = [torch.tensor([-3.0, -1.0, 0.0, 3.0]), torch.tensor([-2.0, 2.0, 2.5])]
    edges_p = [from_torch(e) for e in edges_t]
    for density in (False, True):
        ours = pyaten.histogramdd(from_torch(x), edges_p, density=density)
        _exact(ours, torch.histogramdd(x, edges_t, density=density))
        assert all(a is b for a, b in zip(ours.bin_edges, edges_p))
    # the range is ignored when the edges are given, as in PyTorch
    _exact(pyaten.histogramdd(from_torch(x), edges_p, range=[0.0, 1.0, 0.0, 1.0]),
           torch.histogramdd(x, edges_t, range=[0.0, 1.0, 0.0, 1.0]))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), m=st.integers(0, 40), n=st.integers(1, 3),
       bins=st.integers(1, 7), weighted=st.booleans(), density=st.booleans(),
       double=st.booleans())
def test_random_histograms_match_torch_bit_for_bit(seed, m, n, bins, weighted, density,
                                                   double) -> None:
    dtype = torch.float64 if double else torch.float32
    x = _points(seed, (m, n), dtype, ties=seed % 2 == 0)
    w = torch.tensor(np.random.default_rng(seed).integers(0, 4, m)).to(dtype)
    w_p = from_torch(w) if weighted else None
    w_t = w if weighted else None
    pair = run_both(lambda: pyaten.histogramdd(from_torch(x), bins, weight=w_p, density=density),
                    lambda: torch.histogramdd(x, bins, weight=w_t, density=density))
    if pair is not None:
        _exact(*pair)


def test_nan_points_are_left_out_of_given_edges() -> None:
    x = torch.tensor([[0.5, float("nan")], [0.2, 0.7], [float("nan"), 0.1]])
    edges = [torch.tensor([0.0, 0.5, 1.0])] * 2
    _exact(pyaten.histogramdd(from_torch(x), [from_torch(e) for e in edges]),
           torch.histogramdd(x, edges))


def test_the_three_kernels_match_torch() -> None:
    x = _points(5, (12, 2))
    _exact_list = assert_same
    _exact_list(pyaten.ops.aten._histogramdd_bin_edges.default(from_torch(x), [2, 3]),
                torch.ops.aten._histogramdd_bin_edges.default(x, [2, 3]), rtol=0, atol=0)
    assert_same(pyaten.ops.aten._histogramdd_from_bin_cts.default(from_torch(x), [2, 3],
                                                                  density=True),
                torch.ops.aten._histogramdd_from_bin_cts.default(x, [2, 3], density=True),
                rtol=0, atol=0)
    edges = [torch.tensor([-9.0, 0.0, 9.0]), torch.tensor([-1.0, 1.0])]
    assert_same(pyaten.ops.aten._histogramdd_from_bin_tensors.default(
        from_torch(x), [from_torch(e) for e in edges]),
        torch.ops.aten._histogramdd_from_bin_tensors.default(x, edges), rtol=0, atol=0)
    # the out form of the edges (a list of tensors, resized)
    outs_p, outs_t = [pyaten.empty(0), pyaten.empty(0)], [torch.empty(0), torch.empty(0)]
    pyaten.ops.aten._histogramdd_bin_edges.out(from_torch(x), [2, 3], out=outs_p)
    torch.ops.aten._histogramdd_bin_edges.out(x, [2, 3], out=outs_t)
    assert_same(outs_p, outs_t, rtol=0, atol=0)


_X = torch.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]])
_ERRORS = [
    lambda m, x: m.histogramdd(m.ones(3), 2),
    lambda m, x: m.histogramdd(x, [2]),
    lambda m, x: m.histogramdd(x.long(), 2),
    lambda m, x: m.histogramdd(x.half(), 2),
    lambda m, x: m.histogramdd(x.long(), [m.tensor([0, 1]), m.tensor([0, 1])]),
    lambda m, x: m.histogramdd(x, 2, range=[0.0, 1.0]),
    lambda m, x: m.histogramdd(x, [0, 2]),
    lambda m, x: m.histogramdd(x, 2, range=[1.0, 0.0, 0.0, 1.0]),
    lambda m, x: m.histogramdd(x, 2, range=[0.0, float("inf"), 0.0, 1.0]),
    lambda m, x: m.histogramdd(m.tensor([[float("nan"), 1.0]]), 2),
    lambda m, x: m.histogramdd(x, 2, weight=m.ones(3)),
    lambda m, x: m.histogramdd(x, 2, weight=m.ones(4).double()),
    lambda m, x: m.histogramdd(x.double(), [m.tensor([0.0, 1.0]), m.tensor([0.0, 1.0])]),
    lambda m, x: m.histogramdd(x, [m.tensor([0.0, 1.0])]),
    lambda m, x: m.histogramdd(x, [m.tensor([]), m.tensor([0.0, 1.0])]),
    lambda m, x: m.histogramdd(x, [m.tensor([0.0, 1.0]), m.tensor([[0.0, 1.0]])]),
]


@pytest.mark.parametrize("case", range(len(_ERRORS)))
def test_errors_match_torch(case) -> None:
    same_error(lambda: _ERRORS[case](pyaten, from_torch(_X)), lambda: _ERRORS[case](torch, _X))


def test_no_meta_kernel_as_torch() -> None:
    for name in ("_histogramdd_bin_edges", "_histogramdd_from_bin_cts"):
        same_error(
            lambda n=name: getattr(pyaten.ops.aten, n).default(
                pyaten.empty(4, 2, device="meta"), [2, 2]),
            lambda n=name: getattr(torch.ops.aten, n).default(torch.empty(4, 2, device="meta"),
                                                              [2, 2]),
            message=False)


def test_not_differentiable_as_torch() -> None:
    ours = pyaten.histogramdd(from_torch(_X).requires_grad_(), 2)
    theirs = torch.histogramdd(_X.clone().requires_grad_(), 2)
    assert ours.hist.requires_grad == theirs.hist.requires_grad
    assert ours.bin_edges[0].requires_grad == theirs.bin_edges[0].requires_grad
    same_error(lambda: ours.hist.sum().backward(), lambda: theirs.hist.sum().backward())
    same_error(lambda: ours.bin_edges[0].sum().backward(),
               lambda: theirs.bin_edges[0].sum().backward())


def test_opinfo_samples() -> None:
    from _helpers import opinfo_samples, sample_arguments
    from torch.testing._internal.common_methods_invocations import op_db

    info = next(i for i in op_db if i.name == "histogramdd")
    for dtype in (torch.float32, torch.float64):
        for sample in opinfo_samples(info, dtype):
            theirs_args, ours_args, ours_kwargs = sample_arguments(sample)
            pair = run_both(lambda a=ours_args, k=ours_kwargs: pyaten.histogramdd(*a, **k),
                            lambda a=theirs_args, k=sample.kwargs: info.op(*a, **k))
            if pair is None:
                continue
            if sample.kwargs.get("density") and sample.kwargs.get("weight") is not None:
                # the total of fractional weights: PyTorch's vectorized float sum is not
                # replayed (Note: the edges and the bins, bit for bit)
                assert_same(pair[0].bin_edges, pair[1].bin_edges, rtol=0, atol=0)
                assert_same(pair[0].hist, pair[1].hist, rtol=1e-6, atol=0)
            else:
                _exact(*pair)
