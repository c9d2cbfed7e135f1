"""Transform levels against torch.func: nested transforms do not confuse their perturbations,
and a transform's results keep the history that ordinary autograd (level 0) records outside
every transform.

Each case is a function of the library (pyaten or torch) and its `func` module; the test runs
it on both and compares values, and whether each result still requires grad.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.func as tf

import pyaten
import pyaten.func as pf


def _t(lib, values, requires_grad=False):
    return lib.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


# Perturbation confusion: the inner transform must differentiate only its own input.
def _xy(lib, F):
    x = _t(lib, 3.0)
    return F.grad(lambda x: F.grad(lambda y: x * y)(x))(x)


def _xyy(lib, F):
    x = _t(lib, 3.0)
    return F.grad(lambda x: F.grad(lambda y: x * y * y)(x))(x)


def _shift(lib, F):
    x = _t(lib, 3.0)
    return F.grad(lambda x: x * F.grad(lambda y: x + y)(x))(x)


def _inner_of_square(lib, F):
    x = _t(lib, 3.0)
    return F.grad(lambda x: F.grad(lambda y: (x * y) * (x + y))(x * x))(x)


def _closure_sin(lib, F):
    x = _t(lib, [0.5, -1.0])
    return F.grad(lambda x: F.grad(lambda y: (x.sin() * y).sum())(x).sum())(x)


def _vjp_in_grad(lib, F):
    x = _t(lib, 3.0)
    return F.grad(lambda x: F.vjp(lambda y: x * y, x)[1](_t(lib, 1.0))[0])(x)


def _jvp_in_grad(lib, F):
    x = _t(lib, 3.0)
    return F.grad(lambda x: F.jvp(lambda y: x * y.sin(), (x,), (_t(lib, 1.0),))[1])(x)


def _jvp_in_jvp(lib, F):
    x, one = _t(lib, 3.0), _t(lib, 1.0)
    return F.jvp(lambda x: F.jvp(lambda y: x * y * y, (x,), (one,))[1], (x,), (one,))


def _grad_in_jvp(lib, F):
    x, one = _t(lib, 0.7), _t(lib, 1.0)
    return F.jvp(F.grad(lambda y: y.sin() * y), (x,), (one,))


def _jacrev_jacfwd(lib, F):
    x = _t(lib, [1.0, 2.0, -0.5])
    return F.jacrev(F.jacfwd(lambda v: (v ** 3).sum() * v[0]))(x)


def _vmap_grad_closure(lib, F):
    a = _t(lib, [[1.0, 2.0], [3.0, 4.0]])
    return F.vmap(lambda r: F.grad(lambda y: (r * y * y).sum())(r))(a)


def _grad_vmap_grad(lib, F):
    x = _t(lib, [1.0, 2.0])
    return F.grad(
        lambda x: F.vmap(F.grad(lambda y: (x * y.sin()).sum()))(x.expand(3, 2)).sum()
    )(x)


def _vmap_vmap_grad(lib, F):
    x = _t(lib, np.linspace(-1, 1, 24).reshape(2, 3, 4))
    return F.vmap(F.vmap(F.grad(lambda y: (y.sin() * y).sum())))(x)


# Level 0: ordinary autograd outside every transform sees through the transform.
def _grad_then_autograd(lib, F):
    w, x = _t(lib, 2.0, True), _t(lib, 3.0)
    g = F.grad(lambda y: w * y * y)(x)
    return g, lib.autograd.grad(g, w)


def _vmap_grad_then_autograd(lib, F):
    w, x = _t(lib, [2.0, -1.0], True), _t(lib, [[1.0, 2.0], [3.0, 4.0], [0.5, 0.0]])
    g = F.vmap(F.grad(lambda y: (w * y.sin()).sum()))(x)
    return g, lib.autograd.grad(g.sum(), w)


def _grad_of_input_that_requires_grad(lib, F):
    w = _t(lib, [2.0, 0.5], True)
    g = F.grad(lambda y: (y * y * y).sum())(w)
    return g, lib.autograd.grad(g.sum(), w)


def _grad_without_level0(lib, F):
    w = _t(lib, 2.0, True)
    return F.grad(lambda y: w + y * y)(_t(lib, 3.0))  # depends on w only through a constant


def _vjp_then_autograd(lib, F):
    w, x = _t(lib, [1.5, -2.0], True), _t(lib, [0.3, 0.4])
    out, fn = F.vjp(lambda y: w * y.exp(), x)
    (g,) = fn(_t(lib, [1.0, 1.0]))
    return out, g, lib.autograd.grad((out.sum() + g.sum()), w)


def _jvp_then_autograd(lib, F):
    w, x = _t(lib, [1.5, -2.0], True), _t(lib, [0.3, 0.4])
    out, t = F.jvp(lambda y: w * y.exp(), (x,), (_t(lib, [1.0, 0.0]),))
    return out, t, lib.autograd.grad(t.sum(), w)


def _jacrev_then_autograd(lib, F):
    w, x = _t(lib, [1.5, -2.0], True), _t(lib, [0.3, 0.4])
    jac = F.jacrev(lambda y: w * y.sin())(x)
    return jac, lib.autograd.grad(jac.sum(), w)


def _hessian_then_autograd(lib, F):
    w, x = _t(lib, [1.5, -2.0], True), _t(lib, [0.3, 0.4])
    h = F.hessian(lambda y: (w * y.sin()).sum())(x)
    return h, lib.autograd.grad(h.sum(), w)


def _under_no_grad(lib, F):
    w, x = _t(lib, 2.0, True), _t(lib, 3.0)
    with lib.no_grad():
        return F.grad(lambda y: w * y * y)(x)


CASES = [
    _xy, _xyy, _shift, _inner_of_square, _closure_sin, _vjp_in_grad, _jvp_in_grad,
    _jvp_in_jvp, _grad_in_jvp, _jacrev_jacfwd, _vmap_grad_closure, _grad_vmap_grad,
    _vmap_vmap_grad, _grad_then_autograd, _vmap_grad_then_autograd,
    _grad_of_input_that_requires_grad, _grad_without_level0, _vjp_then_autograd,
    _jvp_then_autograd, _jacrev_then_autograd, _hessian_then_autograd, _under_no_grad,
]


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [leaf for item in out for leaf in _flat(item)]
    return [out]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.lstrip("_"))
def test_levels_match_torch_func(case) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = _flat(case(pyaten, pf))
    want = _flat(case(torch, tf))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
        assert g.requires_grad == w.requires_grad
