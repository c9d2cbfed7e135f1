"""Gradients of indexing along a dim and of sorting against torch's: PyTorch's float64 OpInfo
samples through `tests/_grad_helpers.py` (first and, for the linear ones, second order), and
hand-written cases for what OpInfo samples leave out (the Tensor value of `masked_fill` and
`index_fill`, the nodes' names).
"""

from __future__ import annotations

import pytest
import torch
from _grad_helpers import check_grads, check_opinfo_grads, opinfo_grad_cases

import pyaten

# OpInfo names (functions of pyaten) whose gradients are compared here.
GRAD_SURFACE = frozenset("""
gather index_add index_copy index_fill index_select masked_fill masked_scatter masked_select
put scatter scatter_add sort take take_along_dim topk msort argsort
""".split())

# Linear in their differentiable inputs: the gradient of the gradient is compared too.
SECOND_ORDER = frozenset({"gather", "index_select", "scatter_add", "take", "masked_select"})

# OpInfo variants left out, with the reason.
NOT_YET: dict[tuple[str, str], str] = {}

MAX_SAMPLES = 4


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE, NOT_YET))
def test_gradients_match_torch(info) -> None:
    check_opinfo_grads(info, info.name in SECOND_ORDER, limit=MAX_SAMPLES)


def _r(*shape, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(shape, generator=g, dtype=torch.float64)


CASES = {
    "masked_fill_tensor_value": (
        lambda m, x, v: x.masked_fill(m.tensor([True, False, True, False]), v) * 2,
        (_r(3, 4), _r())),
    "index_fill_tensor_value": (
        lambda m, x, v: x.index_fill(1, m.tensor([0, 2, 2]), v) * 3, (_r(3, 4), _r())),
    "sort_descending": (lambda m, x: m.sort(x, 0, descending=True).values * 1.5, (_r(4, 3),)),
    "topk_smallest": (lambda m, x: m.topk(x, 2, largest=False).values.exp(), (_r(3, 5),)),
    "scatter_value": (lambda m, x: x.scatter(1, m.tensor([[0], [3], [1]]), 2.0) ** 2,
                      (_r(3, 4),)),
    "put_accumulate": (lambda m, x, s: x.put(m.tensor([0, 5, 0]), s, True) * 2,
                       (_r(2, 3), _r(3))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hand_written_gradients(name) -> None:
    f, inputs = CASES[name]
    check_grads(lambda *xs: f(pyaten, *xs), lambda *xs: f(torch, *xs), inputs)
