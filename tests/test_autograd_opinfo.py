"""Gradients of PyTorch's OpInfo samples, pyaten against torch, in float64.

For every OpInfo whose name is in `GRAD_SURFACE` (and that pyaten has), each float64 sample
runs forward in both libraries with its floating-point tensors as leaves; the same random
cotangent is pulled back through every differentiable output, and the input gradients must
agree. The first sample of each also passes `pyaten.autograd.gradcheck` (fast mode, finite
differences), and the operators in `SECOND_ORDER` compare their gradients' gradients too.

Adding an operator's derivative: add its OpInfo name to `GRAD_SURFACE` (docs/autograd.md).
"""

from __future__ import annotations

import warnings

import pytest
import torch
from _grad_helpers import assert_same_grads
from _helpers import from_torch, run_both

import pyaten

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

# OpInfo names whose gradients are compared (by family).
GRAD_SURFACE = frozenset("""
add sub mul div neg exp sum mm clone
""".split())

# Second order (the gradient of the gradient) compared too.
SECOND_ORDER = frozenset("""
add sub mul div neg exp sum mm
""".split())

# OpInfo variants left out, with the reason.
NOT_YET: dict[tuple[str, str], str] = {}

MAX_SAMPLES = 8  # per operator, to keep the module fast


def _cases():
    cases = []
    for info in op_db:
        if info.name not in GRAD_SURFACE or not info.supports_autograd:
            continue
        if (info.name, info.variant_test_name) in NOT_YET:
            continue
        label = info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")
        cases.append(pytest.param(info, id=label))
    return cases


def _substitute(value, mapping):
    if isinstance(value, torch.Tensor):
        return mapping.get(id(value), value)
    if isinstance(value, (list, tuple)):
        return type(value)(_substitute(v, mapping) for v in value)
    if isinstance(value, dict):
        return {k: _substitute(v, mapping) for k, v in value.items()}
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


def _run_sample(info, sample, second_order: bool, gradcheck: bool) -> None:
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
    ours_args = _substitute(structure, fresh_o)
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
    outs_t = [o for o in (theirs if isinstance(theirs, (tuple, list)) else [theirs])
              if isinstance(o, torch.Tensor) and o.requires_grad]
    outs_o = [o for o in (ours if isinstance(ours, (tuple, list)) else [ours])
              if isinstance(o, pyaten.Tensor) and o.requires_grad]
    assert len(outs_o) == len(outs_t), "outputs requiring grad differ"
    if not outs_t:
        return
    gen = torch.Generator().manual_seed(0)
    cots_t = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in outs_t]
    cots_o = [from_torch(c) for c in cots_t]
    ins_t = [fresh_t[id(t)] for t in leaves_t]
    ins_o = [fresh_o[id(t)] for t in leaves_t]
    g_t = torch.autograd.grad(outs_t, ins_t, cots_t, allow_unused=True,
                              create_graph=second_order)
    g_o = pyaten.autograd.grad(outs_o, ins_o, cots_o, allow_unused=True,
                               create_graph=second_order)
    assert_same_grads(list(g_o), list(g_t), rtol=1e-6, atol=1e-7)
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
            assert_same_grads(list(gg_o), list(gg_t), rtol=1e-6, atol=1e-7)
    if gradcheck:
        def as_function(*xs):
            mapping = {id(t): x for t, x in zip(leaves_t, xs)}
            for t in all_tensors:
                mapping.setdefault(id(t), fresh_o[id(t)])
            inp, args, kwargs = _substitute(structure, mapping)
            return fn(inp, *args, **kwargs)

        points = [fresh_o[id(t)].detach().clone().requires_grad_(True) for t in leaves_t]
        if all(p.dtype is pyaten.float64 for p in points):
            assert pyaten.autograd.gradcheck(as_function, points, fast_mode=True)


@pytest.mark.parametrize("info", _cases())
def test_gradients_match_torch(info) -> None:
    samples = [s for s in opinfo_samples_grad(info)][:MAX_SAMPLES]
    assert samples, "OpInfo gave no float64 samples"
    for k, sample in enumerate(samples):
        _run_sample(info, sample, info.name in SECOND_ORDER, gradcheck=(k == 0))


def opinfo_samples_grad(info):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(info.sample_inputs("cpu", torch.float64, requires_grad=True))


def test_surface_names_are_opinfo_names() -> None:
    known = {info.name for info in op_db}
    assert not sorted(GRAD_SURFACE - known)
