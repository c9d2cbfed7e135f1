"""vmap cases where pyaten once differed from torch.func.vmap (PyTorch 2.13): a 0-dim sample
of another dtype in a binary pointwise operator (promoted by the logical operands, no
per-sample loop), ... Each case against torch's values, dtype, shape and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.func as tf

import pyaten
import pyaten.func as pf
from pyaten.func import _rules

_DTYPES = ["float64", "float32", "int64", "int32", "bool"]
_BINARY = [
    "add", "sub", "mul", "div", "floor_divide", "pow", "atan2", "fmod", "remainder",
    "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "ge", "bitwise_and",
    "bitwise_xor", "logical_and", "logical_xor", "heaviside", "hypot", "copysign", "xlogy",
    "logaddexp", "gcd", "float_power", "nextafter",
]


def _run(lib, fn):
    """(dtype name, shape, values) or (error class name, message)."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return type(e).__name__.replace("ArgumentParseError", "TypeError"), str(e)
    return str(out.dtype).split(".")[-1], tuple(out.shape), np.asarray(out.tolist())


def _same(got, want):
    assert got[:2] == want[:2], (got, want)
    if len(want) == 3:
        np.testing.assert_allclose(got[2], want[2], rtol=1e-6, equal_nan=True)


def _binary_case(lib, vmap, name, vec, sample, order):
    op, a, b = getattr(lib, name), lib.tensor(vec), lib.tensor(sample)
    return vmap(lambda s: op(a, s) if order == 0 else op(s, a))(b)


@pytest.mark.parametrize("name", _BINARY)
def test_zero_dim_sample_promotes_logically(name):
    rng = np.random.default_rng(len(name))
    vec = np.abs(rng.standard_normal(3)) * 3 + 1
    sample = np.abs(rng.standard_normal(2)) * 3 + 1
    before = sum(_rules.FALLBACK_CALLS.values())
    for da in _DTYPES:
        for db in _DTYPES:
            if da == db:
                continue
            for order in (0, 1):
                case = (name, vec.astype(da), sample.astype(db), order)
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    got = _run(pyaten, lambda c=case: _binary_case(pyaten, pf.vmap, *c))
                _same(got, _run(torch, lambda c=case: _binary_case(torch, tf.vmap, *c)))
    # both batched: a 0-dim sample with a dimensioned one
    pa = pyaten.tensor(np.tile(vec, (2, 1)).astype("float64"))
    ta = torch.tensor(np.tile(vec, (2, 1)).astype("float64"))
    got = _run(pyaten, lambda: pf.vmap(getattr(pyaten, name))(pa, pyaten.tensor(sample)))
    want = _run(torch, lambda: tf.vmap(getattr(torch, name))(ta, torch.tensor(sample)))
    _same(got, want)
    assert sum(_rules.FALLBACK_CALLS.values()) == before  # no per-sample loop


def test_zero_dim_sample_inplace_and_where_keep_torch_behaviour():
    x64 = np.arange(3.0)
    s = np.ones(2, np.float32)
    cond = np.array([True, False, True])

    def where(lib, vmap):
        return vmap(lambda t: lib.where(lib.tensor(cond), lib.tensor(x64), t))(lib.tensor(s))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(_run(pyaten, lambda: where(pyaten, pf.vmap)), _run(torch, lambda: where(
            torch, tf.vmap)))
        # in place on the 0-dim sample: the sample's own dtype
        got = _run(pyaten, lambda: pf.vmap(lambda t: t.clone().add_(pyaten.tensor(x64[1])))(
            pyaten.tensor(s)))
    want = _run(torch, lambda: tf.vmap(lambda t: t.clone().add_(torch.tensor(x64[1])))(
        torch.tensor(s)))
    _same(got, want)


def _spaced_cases(lib, vmap):
    """linspace/logspace with a 0-dim tensor start or end (the Tensor_Scalar and
    Scalar_Tensor overloads; `base` by keyword goes through the binding's general match)."""
    s = lib.tensor([1.0, 4.0])
    cases = []
    for steps in (0, 1, 5):
        for kw in ({}, {"dtype": lib.float64}, {"dtype": lib.int64}):
            cases += [
                lambda st=steps, k=kw: vmap(lambda t: lib.linspace(t, -3, st, **k))(s),
                lambda st=steps, k=kw: vmap(lambda t: lib.linspace(-3, t, st, **k))(s),
                lambda st=steps, k=kw: vmap(lambda t: lib.logspace(t, 0, st, base=2, **k))(s),
                lambda st=steps, k=kw: vmap(lambda t: lib.logspace(0, t, st, 2.0, **k))(s),
                lambda st=steps, k=kw: lib.linspace(s[1], -3, st, **k),
                lambda st=steps, k=kw: lib.logspace(-3, s[1], st, base=3, **k),
            ]
    cases += [  # a tensor with dims: the overload's message
        lambda: lib.linspace(lib.ones(2), -3, 4),
        lambda: lib.linspace(-3, lib.ones(2), 4),
        lambda: lib.logspace(lib.ones(2), lib.tensor(1.0), 4, base=2),
        lambda: lib.logspace(lib.ones(2), lib.ones(1), 4),
        lambda: vmap(lambda t: lib.add(t, t, alpha=t))(s),  # a Number read under vmap
    ]
    return cases


def test_spaced_with_tensor_endpoints_matches_torch():
    for got, want in zip(_spaced_cases(pyaten, pf.vmap), _spaced_cases(torch, tf.vmap),
                         strict=True):
        _same(_run(pyaten, got), _run(torch, want))


def _warned(fn):
    """fn's result as _run gives it, and the vmap warnings it raised."""
    _rules._WARNED.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _run(None, fn)
    # (torch's adds where in its C++ sources the warning came from)
    return got, [str(w.message).split(" (Triggered internally")[0] for w in caught
                 if "batching rule" in str(w.message)]


def test_argwhere_runs_per_sample_as_torch():
    same = [[1.0, 0.0, 2.0], [0.0, 3.0, 4.0]]
    differ = [[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]
    for data in (same, differ, [[0.0, 0.0], [0.0, 0.0]]):
        got, got_w = _warned(lambda d=data: pf.vmap(pyaten.argwhere)(pyaten.tensor(d)))
        want, want_w = _warned(lambda d=data: tf.vmap(torch.argwhere)(torch.tensor(d)))
        _same(got, want)
        assert got_w == want_w  # the fallback's warning names aten::argwhere as torch's
    got = _run(None, lambda: pf.vmap(lambda t: t.argwhere())(pyaten.tensor(same)))
    _same(got, _run(None, lambda: tf.vmap(lambda t: t.argwhere())(torch.tensor(same))))
    for lib, vmap in ((pyaten, pf.vmap), (torch, tf.vmap)):  # its parts stay refused
        assert _run(None, lambda lib=lib, vmap=vmap: vmap(lib.nonzero)(lib.tensor(same)))[
            0] == "RuntimeError"


def test_fallback_warning_names_the_operator_as_torch():
    got, got_w = _warned(lambda: pf.vmap(lambda t: pyaten.histc(t, 3))(pyaten.ones(2, 3)))
    want, want_w = _warned(lambda: tf.vmap(lambda t: torch.histc(t, 3))(torch.ones(2, 3)))
    _same(got, want)
    assert got_w == want_w


def _ctc_cases(lib, vmap, functional):
    rng = np.random.default_rng(0)
    lp = lib.tensor(rng.standard_normal((3, 6, 2, 4)).astype(np.float32)).log_softmax(-1)
    tg = lib.tensor(rng.integers(1, 4, (3, 2, 3)))
    il, tl = lib.tensor([6, 5]), lib.tensor([3, 2])
    ilb, tlb = lib.tensor([[6, 5], [5, 5], [4, 6]]), lib.tensor([[3, 2], [2, 2], [3, 1]])
    cases = []
    for red in ("mean", "sum", "none"):
        def loss(p, t, a, b, red=red):
            return functional.ctc_loss(p, t, a, b, reduction=red)
        cases += [
            lambda loss=loss: vmap(loss)(lp, tg, ilb, tlb),  # every sample its own lengths
            lambda loss=loss: vmap(lambda p, a: loss(p, tg[0], a, tl))(lp, ilb),
            lambda loss=loss: vmap(lambda a, b: loss(lp[0], tg[0], a, b))(ilb, tlb),
            lambda loss=loss: vmap(lambda p, t: loss(p, t, il, tl))(lp, tg),  # shared
        ]
    cases.append(lambda: vmap(lambda p, a: functional.ctc_loss(p, tg[0], a, tl))(
        lp, lib.tensor([[6, 5], [7, 5], [4, 6]])))  # a length past the input: the error
    return cases


def test_ctc_loss_with_batched_lengths_as_torch():
    import torch.nn.functional as tnf

    import pyaten.nn.functional as pnf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for got, want in zip(_ctc_cases(pyaten, pf.vmap, pnf), _ctc_cases(torch, tf.vmap, tnf),
                             strict=True):
            _same(_run(None, got), _run(None, want))


def _ctc_grad_cases(lib, vmap, grad, functional):
    rng = np.random.default_rng(1)
    lp = lib.tensor(rng.standard_normal((3, 6, 2, 4)).astype(np.float32))
    tg = lib.tensor(rng.integers(1, 4, (3, 2, 3)))
    il, tl = lib.tensor([6, 5]), lib.tensor([3, 2])
    ilb, tlb = lib.tensor([[6, 5], [5, 5], [4, 6]]), lib.tensor([[3, 2], [2, 2], [3, 1]])

    def loss(p, t, a, b):
        return functional.ctc_loss(p.log_softmax(-1), t, a, b)

    def backward():
        x = lp.clone().requires_grad_()
        vmap(loss)(x, tg, ilb, tlb).sum().backward()
        return x.grad

    return [
        # the composite decomposes under grad: _ctc_loss.Tensor per sample, whose log_alpha
        # differ in size (torch's stack error); shared lengths fold into one loss
        lambda: vmap(grad(loss))(lp, tg, ilb, tlb),
        lambda: vmap(grad(loss), in_dims=(0, 0, None, None))(lp, tg, il, tl),
        backward,
    ]


def test_ctc_loss_grad_with_tensor_lengths_as_torch():
    import torch.nn.functional as tnf

    import pyaten.nn.functional as pnf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for got, want in zip(_ctc_grad_cases(pyaten, pf.vmap, pf.grad, pnf),
                             _ctc_grad_cases(torch, tf.vmap, tf.grad, tnf), strict=True):
            g, w = _run(None, got), _run(None, want)
            assert g[:2] == w[:2], (g, w)
            if len(w) == 3:
                np.testing.assert_allclose(g[2], w[2], rtol=1e-4, atol=1e-6)


def test_subclass_like_one_check_for_formulas_and_kernels():
    from pyaten.core.subclass_like import subclass_like

    seen = []
    pf.vmap(lambda t: seen.append(subclass_like(t)) or t)(pyaten.ones(2, 2))
    pf.functionalize(lambda t: seen.append(subclass_like(t)) or t)(pyaten.ones(2))
    assert seen == [True, True] and not subclass_like(pyaten.ones(2), pyaten.ones(()))
    # LAPACK's codes on such a tensor: the operator's check, torch's error (functionalized)
    for lib, func in ((pyaten, pf), (torch, tf)):
        got = _run(None, lambda lib=lib, func=func: func.functionalize(lib.linalg.cholesky)(
            -lib.eye(2)))
        assert got[0].lstrip("_") == "LinAlgError" and "factorization" in got[1]
