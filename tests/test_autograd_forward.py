"""Forward mode against torch's, on the OpInfo samples of every gradient table.

Every OpInfo that a family's gradient module lists (`GRAD_SURFACE` of test_autograd_*.py)
and that supports forward AD in torch runs here: the sample's floating-point tensors become
dual tensors with the same random tangents in both libraries, and the output tangents must
agree. Since torch's forward mode is itself checked against its backward mode, this checks
pyaten's `result:` formulas and the generated tangent propagation.
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest
import torch
from _grad_helpers import _pyaten_callable, _substitute, _tensors
from _helpers import assert_same, from_torch, run_both, to_numpy

import pyaten

_MODULES = ("test_autograd_opinfo", "test_autograd_pointwise", "test_autograd_binary",
            "test_autograd_reduce", "test_autograd_shape", "test_autograd_indexing")

# OpInfo names (or name.variant) left out, with the reason.
NOT_YET: dict[str, str] = {
    "_softmax_backward_data": "no result: formula for the backward helper yet",
    "as_strided.partial_views": "samples view a larger storage, which from_torch copies",
    "where": "the OpInfo's op takes (self, condition, other)",
    "norm.nuc": "needs _linalg_svd's forward formula (the linalg slice)",
    "polygamma": "the OpInfo's op takes (x, n)",
    "special.polygamma": "the OpInfo's op takes (x, n)",
}

MAX_SAMPLES = 3


def _surface() -> frozenset[str]:
    names: set[str] = set()
    for module in _MODULES:
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        names |= set(getattr(mod, "GRAD_SURFACE", ()))
    return frozenset(names)


def _cases():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db
    surface = _surface()
    cases = []
    for info in op_db:
        label = info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")
        if info.name not in surface or not info.supports_forward_ad:
            continue
        if info.name in NOT_YET or label in NOT_YET:
            continue
        cases.append(pytest.param(info, id=label))
    return cases


def _dual_run(library, fw, fn, structure, tensors, tangents, convert):
    mapping = {}
    for t, u in zip(tensors, tangents):
        base = convert(t.detach())
        if u is not None:
            base = fw.make_dual(base, convert(u))
        mapping[id(t)] = base
    inp, args, kwargs = _substitute(structure, mapping, ours=library is pyaten)
    out = fn(inp, *args, **kwargs)
    items = out if isinstance(out, (tuple, list)) else [out]
    return [fw.unpack_dual(o).tangent if isinstance(o, library.Tensor) else None for o in items]


@pytest.mark.parametrize("info", _cases())
def test_forward_mode_matches_torch(info) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = list(info.sample_inputs("cpu", torch.float64, requires_grad=False))
    gen = torch.Generator().manual_seed(0)
    fn = _pyaten_callable(info)
    for sample in samples[:MAX_SAMPLES]:
        structure = (sample.input, tuple(sample.args), dict(sample.kwargs))
        tensors = _tensors(structure, [])
        tangents = [torch.randn(t.shape, generator=gen, dtype=t.dtype)
                    if t.is_floating_point() else None for t in tensors]
        if all(u is None for u in tangents):
            continue

        def theirs(structure=structure, tensors=tensors, tangents=tangents):
            with torch.autograd.forward_ad.dual_level():
                return _dual_run(torch, torch.autograd.forward_ad, info.op, structure, tensors,
                                 tangents, lambda x: x)

        def ours(structure=structure, tensors=tensors, tangents=tangents):
            with pyaten.autograd.forward_ad.dual_level():
                return _dual_run(pyaten, pyaten.autograd.forward_ad, fn, structure, tensors,
                                 tangents, from_torch)

        pair = run_both(ours, theirs, message=False)
        if pair is None:
            continue
        got, expected = pair
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            if e is None:
                continue
            assert g is not None, "pyaten gave no tangent"
            assert tuple(g.shape) == tuple(e.shape)
            np.testing.assert_allclose(to_numpy(g), to_numpy(e), rtol=1e-6, atol=1e-7)


def test_inplace_writes_into_views_carry_tangents_to_the_base():
    def scenario(m):
        fw = m.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(m.arange(4.0, dtype=m.float64),
                             m.tensor([1.0, 2.0, 3.0, 4.0], dtype=m.float64))
            base = m.zeros(3, 6, dtype=m.float64)
            base[1, :4].copy_(x)
            base[:, 1:3].mul_(3)
            view = base.t()[2:5]
            view.add_(x[:3].unsqueeze(1))
            return fw.unpack_dual(base).tangent, fw.unpack_dual(view).tangent
    ours, theirs = scenario(pyaten), scenario(torch)
    assert_same(ours, theirs)
