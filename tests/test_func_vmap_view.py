"""`view` on a sample whose batch is not in front (in_dims=-1, 1, ...) under vmap, against
torch.func (PyTorch 2.13): a view where the strides allow one (writes reach the input), and
torch's error where they do not (no silent copy)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pyaten

# in_dims -> the sample sizes viewed; the input is arange(24).reshape(2, 3, 4)
CASES = [(dims, size) for dims, sizes in {
    -1: [(6,), (-1,), (3, 2), (1, 6), (2, 1, 3), (6, 1)],
    2: [(6,), (-1,), (3, 2)],
    1: [(8,), (-1,), (4, 2), (2, 4), (1, 8), (8, 1)],
    0: [(12,), (-1,), (4, 3), (2, 6)],
}.items() for size in sizes]


def _outcome(m, dims: int, size: tuple, transposed: bool):
    data = m.arange(24.0).reshape(2, 3, 4)
    if transposed:
        data = data.transpose(0, 2)
    try:
        out = m.func.vmap(lambda t: t.view(*size), in_dims=dims)(data)
    except RuntimeError as e:
        return ("error", str(e))
    return ("ok", tuple(out.shape), out.numpy().tolist())


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize(("dims", "size"), CASES)
def test_view_of_a_sample_as_torch(dims: int, size: tuple, transposed: bool) -> None:
    assert _outcome(pyaten, dims, size, transposed) == _outcome(torch, dims, size, transposed)


def test_view_of_a_sample_is_a_view() -> None:
    for m in (pyaten, torch):
        data = m.arange(12.0).reshape(3, 4)

        def zero(t):
            t.view(-1).mul_(0)
            return t

        m.func.vmap(zero, in_dims=-1)(data)
        np.testing.assert_array_equal(data.numpy(), np.zeros((3, 4)))
