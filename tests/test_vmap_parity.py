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
