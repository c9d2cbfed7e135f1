"""Tensors a transformed function makes (factories, detach, operators on captured tensors) are
GradTrackingTensors of the innermost autograd transform to `_C._functorch`, as torch 2.13
wraps them; captured tensors and arguments that are not differentiated stay unwrapped."""

from __future__ import annotations

import pytest
import torch
import torch.func

import pyaten
import pyaten.func
from pyaten._C import _functorch as pyaten_C

LIBS = {"torch": (torch, torch._C._functorch), "pyaten": (pyaten, pyaten_C)}
CAPTURED: dict = {}  # per library: a tensor made outside every transform, used as a global


def _info(C, t):
    return (C.is_gradtrackingtensor(t), C.is_batchedtensor(t), C.maybe_get_level(t),
            C.is_functorch_wrapped_tensor(t))


def _made(m, x, outer):
    """name -> a tensor made inside the running transform (or captured by it)."""
    ones = m.ones(2)
    return {
        "ones": ones, "ones_like": m.ones_like(x), "ones*2": ones * 2, "sum": ones.sum(),
        "tensor": m.tensor([1.0, 2.0]), "zeros": m.zeros(2), "int": m.ones(2, dtype=m.int64),
        "arange": m.arange(3), "eye": m.eye(2), "full": m.full((2,), 3.0),
        "requires_grad": m.ones(2, requires_grad=True), "detach_x": x.detach(),
        "new_ones": x.new_ones(2), "clone": ones.clone(), "x": x, "x*ones": x * ones,
        "outer": outer, "outer*2": outer * 2, "global": CAPTURED[m.__name__],
        "global+1": CAPTURED[m.__name__] + 1,
    }


def _log(C, m, outer, log):
    def f(x, *rest):
        log.append({k: _info(C, t) for k, t in _made(m, x, outer).items()})
        for r in rest:
            log[-1]["rest"] = _info(C, r)
        return (x * x).sum()
    return f


PROGRAMS = {
    "grad": lambda F, f, m: F.grad(f)(m.ones(2)),
    "grad_other_arg": lambda F, f, m: F.grad(f)(m.ones(2), m.ones(2)),
    "vjp": lambda F, f, m: F.vjp(f, m.ones(2)),
    "jvp": lambda F, f, m: F.jvp(f, (m.ones(2),), (m.ones(2),)),
    "jacrev": lambda F, f, m: F.jacrev(f)(m.ones(2)),
    "jacfwd": lambda F, f, m: F.jacfwd(f)(m.ones(2)),
    "vmap_grad": lambda F, f, m: F.vmap(F.grad(f))(m.ones(3, 2)),
    "grad_vmap": lambda F, f, m: F.grad(lambda x: F.vmap(f)(x).sum())(m.ones(3, 2)),
    "grad_grad": lambda F, f, m: F.grad(lambda x: F.grad(f)(x * 3).sum())(m.ones(2)),
    "grad_after_inner": lambda F, f, m: F.grad(
        lambda x: f(F.grad(lambda y: (y * y).sum())(x)) + (x * x).sum())(m.ones(2)),
}


def _run(lib_name: str, name: str) -> list:
    m, C = LIBS[lib_name]
    CAPTURED[m.__name__] = m.ones(2)
    outer = m.ones(2)
    log: list = []
    PROGRAMS[name](m.func, _log(C, m, outer, log), m)
    return [facts for i, facts in enumerate(log) if facts not in log[:i]]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_made_inside_as_torch(name: str) -> None:
    assert _run("pyaten", name) == _run("torch", name)


def test_unwrapped_factory_result_is_plain() -> None:
    for m, C in LIBS.values():
        seen = []

        def f(x, m=m, C=C, seen=seen):
            inner = C.get_unwrapped(m.zeros(2))
            seen.append(_info(C, inner))
            return x.sum()

        m.func.grad(f)(m.ones(2))
        assert seen == [(False, False, -1, False)]
