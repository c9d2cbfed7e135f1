"""The layout a copy keeps (preserve_format), against PyTorch 2.13: `empty_like`, `clone`,
`zeros_like` and `tensor()` of a tensor or a NumPy array keep a non-overlapping and dense
source's strides, and a source with gaps or broadcast dims gets dense strides in its own dim
order (ATen's infer_dense_strides), not row-major ones."""

from __future__ import annotations

import warnings

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
from pyaten.core.views import infer_dense_strides


@st.composite
def _views(draw):
    """(sizes of a base, a permutation, per-dim steps, an expanded size-1 dim or None)."""
    ndim = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim))
    perm = draw(st.permutations(range(ndim)))
    steps = draw(st.lists(st.integers(1, 2), min_size=ndim, max_size=ndim))
    expand = draw(st.one_of(st.none(), st.integers(0, ndim - 1)))
    return sizes, list(perm), steps, expand


def _make(lib, sizes, perm, steps, expand):
    big = lib.arange(float(np.prod([max(s, 1) * 2 for s in sizes]))).reshape(
        [max(s, 1) * 2 for s in sizes])
    v = big.permute(perm)
    v = v[tuple(slice(0, sizes[i] * steps[i], steps[i]) for i in range(len(sizes)))]
    if expand is not None and v.shape[expand] == 1:
        shape = list(v.shape)
        shape[expand] = 3
        v = v.expand(shape)
    return v


@settings(max_examples=150, deadline=None)
@given(case=_views())
def test_copies_keep_the_layout_as_torch(case) -> None:
    ours, theirs = _make(pyaten, *case), _make(torch, *case)
    assert ours.stride() == theirs.stride()
    if not _dense(theirs):  # ATen's own helper, as empty_like uses it
        assert infer_dense_strides(tuple(theirs.shape), theirs.stride()) == tuple(
            torch.empty_like(theirs).stride())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tensor(tensor)'s copy-construct advice
        pairs = [
            (pyaten.empty_like(ours), torch.empty_like(theirs)),
            (ours.clone(), theirs.clone()),
            (pyaten.zeros_like(ours, dtype=pyaten.float64),
             torch.zeros_like(theirs, dtype=torch.float64)),
            (pyaten.tensor(ours), torch.tensor(theirs)),
        ]
        if theirs.numel():  # (torch gives an empty array's copy strides of 0: not followed)
            pairs += [
                (pyaten.tensor(ours.numpy()), torch.tensor(theirs.numpy())),
                (pyaten.tensor(ours.numpy(), dtype=pyaten.float32),
                 torch.tensor(theirs.numpy(), dtype=torch.float32)),
            ]
    for mine, want in pairs:
        assert mine.stride() == want.stride()
        assert tuple(mine.shape) == tuple(want.shape)
    for mine, want in pairs[1:]:
        np.testing.assert_array_equal(mine.numpy(), want.numpy())


def _dense(t: torch.Tensor) -> bool:
    return torch.empty_like(t).stride() == t.stride()


def test_arrays_torch_refuses_are_copied_row_major() -> None:
    """Negative strides (torch refuses them) give pyaten a row-major copy, as before."""
    a = np.arange(12.0).reshape(3, 4)[::-1]
    t = pyaten.tensor(a)
    assert t.stride() == (4, 1) and np.array_equal(t.numpy(), a)
