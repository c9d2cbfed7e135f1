"""The differential gradient helper: run a call in pyaten and torch, backward both, compare.

`grad_outcomes(call_ours, call_theirs, inputs)` takes float64 torch leaves, makes the same
leaves in pyaten, runs both calls, pulls the same random cotangent back through every
differentiable output and returns both sets of input gradients; `assert_same_grads` compares
them (a missing gradient must be missing in both). `second_order` does the same for the
gradient of the gradient (create_graph=True).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from _helpers import from_torch, to_numpy

import pyaten


def leaves(tensors: Sequence[torch.Tensor]) -> tuple[list, list]:
    """The same float leaves requiring grad in both libraries."""
    theirs, ours = [], []
    for t in tensors:
        t2 = t.detach().clone().requires_grad_(t.is_floating_point() or t.is_complex())
        o = from_torch(t.detach())
        if t2.requires_grad:
            o.requires_grad_(True)
        theirs.append(t2)
        ours.append(o)
    return ours, theirs


def _outputs(result: Any, library: Any) -> list:
    items = result if isinstance(result, (tuple, list)) else [result]
    return [
        r for r in items
        if isinstance(r, library.Tensor) and (r.dtype.is_floating_point or r.dtype.is_complex)
    ]


def _cotangents(outputs: list, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    cots = []
    for o in outputs:
        shape = tuple(o.shape)
        c = rng.standard_normal(shape)
        if o.dtype.is_complex:
            c = c + 1j * rng.standard_normal(shape)
        cots.append(c)
    return cots


def grad_outcomes(
    call_ours: Callable[..., Any],
    call_theirs: Callable[..., Any],
    inputs: Sequence[torch.Tensor],
    create_graph: bool = False,
) -> tuple[list, list, Any, Any]:
    """Input gradients in pyaten and torch for the same cotangents (None where unused)."""
    ours_in, theirs_in = leaves(inputs)
    theirs_out = _outputs(call_theirs(*theirs_in), torch)
    ours_out = _outputs(call_ours(*ours_in), pyaten)
    assert len(ours_out) == len(theirs_out), (len(ours_out), len(theirs_out))
    cots = _cotangents(theirs_out, 0)
    wanted_t = [t for t in theirs_in if t.requires_grad]
    wanted_o = [t for t in ours_in if t.requires_grad]
    pairs_t = [(o, torch.from_numpy(c).to(o.dtype)) for o, c in zip(theirs_out, cots)
               if o.requires_grad]
    pairs_o = [(o, pyaten.tensor(c, dtype=o.dtype)) for o, c in zip(ours_out, cots)
               if o.requires_grad]
    assert len(pairs_t) == len(pairs_o), "outputs requiring grad differ"
    if not pairs_t:
        return [], [], ours_in, theirs_in
    g_t = torch.autograd.grad([o for o, _ in pairs_t], wanted_t, [c for _, c in pairs_t],
                              allow_unused=True, create_graph=create_graph)
    g_o = pyaten.autograd.grad([o for o, _ in pairs_o], wanted_o, [c for _, c in pairs_o],
                               allow_unused=True, create_graph=create_graph)
    return list(g_o), list(g_t), wanted_o, wanted_t


def assert_same_grads(ours: list, theirs: list, rtol: float = 1e-7, atol: float = 1e-7) -> None:
    assert len(ours) == len(theirs)
    for i, (o, t) in enumerate(zip(ours, theirs)):
        if t is None:
            # torch's engine may skip an unused input where ours returns zeros, or vice versa
            assert o is None or not np.any(to_numpy(o)), f"grad {i}: torch has none"
            continue
        if o is None:
            assert not np.any(to_numpy(t)), f"grad {i}: pyaten has none"
            continue
        assert tuple(o.shape) == tuple(t.shape), (i, tuple(o.shape), tuple(t.shape))
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (i, o.dtype, t.dtype)
        np.testing.assert_allclose(to_numpy(o), to_numpy(t), rtol=rtol, atol=atol,
                                   err_msg=f"grad {i}")


def check_grads(call_ours: Callable, call_theirs: Callable, inputs: Sequence[torch.Tensor],
                second_order: bool = False, rtol: float = 1e-7, atol: float = 1e-7) -> None:
    """First (and optionally second) order gradients agree with torch's."""
    g_o, g_t, in_o, in_t = grad_outcomes(call_ours, call_theirs, inputs,
                                         create_graph=second_order)
    assert_same_grads(g_o, g_t, rtol, atol)
    if not second_order:
        return
    pairs_t = [(g, i) for g, i in zip(g_t, range(len(g_t))) if g is not None and g.requires_grad]
    if not pairs_t:
        return
    rng = np.random.default_rng(7)
    w = [rng.standard_normal(tuple(g_t[i].shape)) for _, i in pairs_t]
    gg_t = torch.autograd.grad([g_t[i] for _, i in pairs_t], in_t,
                               [torch.from_numpy(x) for x in w], allow_unused=True)
    live = [(g_o[i], x) for (_, i), x in zip(pairs_t, w)
            if g_o[i] is not None and g_o[i].requires_grad]
    if not live:
        assert all(g is None or not torch.any(g) for g in gg_t), "pyaten's grad has no graph"
        return
    gg_o = pyaten.autograd.grad([g for g, _ in live], in_o,
                                [pyaten.tensor(x, dtype=g.dtype) for g, x in live],
                                allow_unused=True)
    assert_same_grads(list(gg_o), list(gg_t), rtol, atol)
