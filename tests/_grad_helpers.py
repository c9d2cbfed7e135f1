"""The differential gradient helper: run a call in pyaten and torch, backward both, compare.

`grad_outcomes(call_ours, call_theirs, inputs)` takes float64 torch leaves, makes the same
leaves in pyaten, runs both calls, pulls the same random cotangent back through every
differentiable output and returns both sets of input gradients; `assert_same_grads` compares
them (a missing gradient must be missing in both). `second_order` does the same for the
gradient of the gradient (create_graph=True).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
import torch
from _helpers import from_torch, run_both, to_numpy, to_pyaten

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
    w = [x + 1j * rng.standard_normal(x.shape) if g_t[i].is_complex() else x
         for x, (_, i) in zip(w, pairs_t)]
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


def _op_db():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db
    return op_db


def grad_samples(info, limit: int = 8) -> list:
    """An OpInfo's float64 samples that require grad (at most `limit`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(info.sample_inputs("cpu", torch.float64, requires_grad=True))[:limit]


def check_opinfo_grads(info, second_order: bool, limit: int = 8) -> None:
    """Every sample of `info` (up to `limit`); the first also through gradcheck."""
    samples = grad_samples(info, limit)
    assert samples, "OpInfo gave no float64 samples"
    for k, sample in enumerate(samples):
        run_grad_sample(info, sample, second_order, gradcheck=(k == 0))


def opinfo_grad_cases(surface, not_yet=None):
    """pytest params, one per OpInfo (variants included) whose name is in `surface`."""
    not_yet = not_yet or {}
    cases = []
    for info in _op_db():
        if info.name not in surface or not info.supports_autograd:
            continue
        if (info.name, info.variant_test_name) in not_yet:
            continue
        label = info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")
        cases.append(pytest.param(info, id=label))
    return cases


def _substitute(value, mapping, ours=False):
    """`value` with its tensors replaced from `mapping` (by id); `ours`: torch dtypes become
    pyaten's too (a sample's `dtype=` keyword)."""
    if isinstance(value, torch.Tensor):
        return mapping.get(id(value), value)
    if ours and isinstance(value, torch.dtype):
        return to_pyaten(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_substitute(v, mapping, ours) for v in value)
    if isinstance(value, dict):
        return {k: _substitute(v, mapping, ours) for k, v in value.items()}
    return value


def _tensors(value, found):
    if isinstance(value, torch.Tensor):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _tensors(v, found)
    elif isinstance(value, dict):
        for v in value.values():
            _tensors(v, found)
    return found


def _pyaten_callable(info):
    name = info.name
    if "." in name:
        module, _, attr = name.rpartition(".")
        target = pyaten
        for part in module.split("."):
            target = getattr(target, part)
        return getattr(target, attr)
    return getattr(pyaten, name)


def run_grad_sample(info, sample, second_order: bool, gradcheck: bool) -> None:
    """One OpInfo sample: gradients (and gradients of gradients) against torch's."""
    structure = (sample.input, tuple(sample.args), dict(sample.kwargs))
    all_tensors = _tensors(structure, [])
    leaves_t = [t for t in all_tensors if t.requires_grad]
    if not leaves_t:
        return
    fresh_t = {id(t): t.detach().clone().requires_grad_(True) for t in leaves_t}
    plain_t = {id(t): t.detach() for t in all_tensors if not t.requires_grad}
    fresh_o = {}
    for t in all_tensors:
        o = from_torch(t.detach())
        if t.requires_grad:
            o.requires_grad_(True)
        fresh_o[id(t)] = o
    theirs_args = _substitute(structure, {**plain_t, **fresh_t})
    ours_args = _substitute(structure, fresh_o, ours=True)
    fn = _pyaten_callable(info)

    def call_ours():
        inp, args, kwargs = ours_args
        return fn(inp, *args, **kwargs)

    def call_theirs():
        inp, args, kwargs = theirs_args
        return info.op(inp, *args, **kwargs)

    pair = run_both(call_ours, call_theirs)
    if pair is None:
        return  # torch refuses the sample; run_both checked we refuse it alike
    ours, theirs = pair
    if not compare_gradients(ours, theirs, leaves_t, fresh_o, fresh_t, second_order, 1e-6):
        return
    if gradcheck:
        def as_function(*xs):
            mapping = {id(t): x for t, x in zip(leaves_t, xs)}
            for t in all_tensors:
                mapping.setdefault(id(t), fresh_o[id(t)])
            inp, args, kwargs = _substitute(structure, mapping, ours=True)
            return fn(inp, *args, **kwargs)

        points = [fresh_o[id(t)].detach().clone().requires_grad_(True) for t in leaves_t]
        if all(p.dtype is pyaten.float64 for p in points):
            assert pyaten.autograd.gradcheck(as_function, points, fast_mode=True)


def compare_gradients(ours: Any, theirs: Any, leaves_t: list, fresh_o: dict, fresh_t: dict,
                      second_order: bool, rtol: float, atol: float = 1e-7) -> bool:
    """The gradients of the outputs that require grad (random cotangents), and with
    `second_order` the gradients of those gradients, equal in both libraries; False when no
    output requires grad."""
    outs_t = [o for o in (theirs if isinstance(theirs, (tuple, list)) else [theirs])
              if isinstance(o, torch.Tensor) and o.requires_grad]
    outs_o = [o for o in (ours if isinstance(ours, (tuple, list)) else [ours])
              if isinstance(o, pyaten.Tensor) and o.requires_grad]
    assert len(outs_o) == len(outs_t), "outputs requiring grad differ"
    if not outs_t:
        return False
    gen = torch.Generator().manual_seed(0)
    cots_t = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in outs_t]
    cots_o = [from_torch(c) for c in cots_t]
    ins_t = [fresh_t[id(t)] for t in leaves_t]
    ins_o = [fresh_o[id(t)] for t in leaves_t]
    g_t = torch.autograd.grad(outs_t, ins_t, cots_t, allow_unused=True,
                              create_graph=second_order)
    g_o = pyaten.autograd.grad(outs_o, ins_o, cots_o, allow_unused=True,
                               create_graph=second_order)
    assert_same_grads(list(g_o), list(g_t), rtol=rtol, atol=atol)
    if second_order:
        live = [(i, g) for i, g in enumerate(g_t) if g is not None and g.requires_grad]
        if live:
            w_t = [torch.randn(g.shape, generator=gen, dtype=g.dtype) for _, g in live]
            gg_t = torch.autograd.grad([g for _, g in live], ins_t, w_t, allow_unused=True)
            pairs = [(g_o[i], from_torch(w)) for (i, _), w in zip(live, w_t)]
            assert all(g is not None and g.requires_grad for g, _ in pairs), \
                "pyaten's gradient has no graph"
            gg_o = pyaten.autograd.grad([g for g, _ in pairs], ins_o, [w for _, w in pairs],
                                        allow_unused=True)
            assert_same_grads(list(gg_o), list(gg_t), rtol=rtol, atol=atol)
    return True
