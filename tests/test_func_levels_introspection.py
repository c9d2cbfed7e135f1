"""torch._functorch's introspection on one level stack: nested transforms report the same
levels, interpreters and wrappers in pyaten as in torch 2.13."""

from __future__ import annotations

import pytest
import torch
import torch._functorch.pyfunctorch
import torch.func

import pyaten
import pyaten._functorch.pyfunctorch
import pyaten.func
from pyaten._C import _functorch as pyaten_C

LIBS = {
    "torch": (torch, torch._C._functorch, torch._functorch.pyfunctorch),
    "pyaten": (pyaten, pyaten_C, pyaten._functorch.pyfunctorch),
}


def _facts(C, P, x):
    """What the introspection says inside a transform, about it and about `x`."""
    here = P.retrieve_current_functorch_interpreter()
    facts = {
        "level": C.current_level(),
        "maybe": C.maybe_current_level(),
        "depth": C.get_dynamic_layer_stack_depth(),
        "current": (here.key().name, here.level()),
        "stack": [(i.key().name, i.level()) for i in C.get_interpreter_stack()],
        "peek": C.peek_interpreter_stack().level(),
    }
    if here.key().name == "Vmap":
        facts["vmap"] = (here.batch_size(), here.randomness())
    if here.key().name == "Grad":
        facts["prev_grad_mode"] = here.prev_grad_mode()
    y = x * 2
    for name, t in (("x", x), ("y", y)):
        facts[name] = (C.is_batchedtensor(t), C.is_gradtrackingtensor(t),
                       C.is_functorch_wrapped_tensor(t), C.maybe_get_level(t))
    # one wrapper down
    inner = C.get_unwrapped(y)
    facts["inner"] = (C.is_batchedtensor(inner), C.is_gradtrackingtensor(inner),
                      C.maybe_get_level(inner))
    return facts


def _probe(C, P, log):
    def f(x):
        log.append(_facts(C, P, x))
        return x.sin().sum()
    return f


PROGRAMS = {
    "vmap": lambda F, f, x: F.vmap(f)(x),
    "vmap_same": lambda F, f, x: F.vmap(f, randomness="same")(x),
    "grad": lambda F, f, x: F.grad(f)(x[0]),
    "vjp": lambda F, f, x: F.vjp(f, x[0]),
    "jvp": lambda F, f, x: F.jvp(f, (x[0],), (x[0],)),
    "jacrev": lambda F, f, x: F.jacrev(f)(x[0]),
    "jacfwd": lambda F, f, x: F.jacfwd(f)(x[0]),
    "hessian": lambda F, f, x: F.hessian(f)(x[0]),
    "vmap_vmap": lambda F, f, x: F.vmap(F.vmap(f))(x.reshape(2, 3, 2)),
    "vmap_grad": lambda F, f, x: F.vmap(F.grad(f))(x),
    "grad_vmap": lambda F, f, x: F.grad(lambda x: F.vmap(f)(x).sum())(x),
    "grad_grad": lambda F, f, x: F.grad(lambda x: F.grad(f)(x).sum())(x[0]),
    "vmap_grad_grad": lambda F, f, x: F.vmap(F.grad(lambda x: F.grad(f)(x).sum()))(x),
    "grad_vmap_grad": lambda F, f, x: F.grad(lambda x: F.vmap(F.grad(f))(x).sum())(x),
    "vmap_vmap_grad": lambda F, f, x: F.vmap(F.vmap(F.grad(f)))(x.reshape(2, 3, 2)),
    "vmap_jacrev": lambda F, f, x: F.vmap(F.jacrev(f))(x),
    "one_after_another": lambda F, f, x: (F.vmap(f)(x), F.grad(f)(x[0])),
    "grad_no_grad_outside": lambda F, f, x: F.grad(f)(x[0]),
}


def _run(lib_name, name):
    lib, C, P = LIBS[lib_name]
    log: list = []
    x = lib.tensor([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8], [0.9, 1.0], [1.1, 1.2]],
                   dtype=lib.float64)
    if name == "grad_no_grad_outside":
        with lib.no_grad():
            PROGRAMS[name](lib.func, _probe(C, P, log), x)
    else:
        PROGRAMS[name](lib.func, _probe(C, P, log), x)
    # pyaten's jacfwd runs the function once per basis vector where torch vmaps it once
    return [facts for i, facts in enumerate(log) if facts not in log[:i]]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_levels_as_torch(name):
    expected = _run("torch", name)
    got = _run("pyaten", name)
    assert got == expected


@pytest.mark.parametrize("lib_name", sorted(LIBS))
def test_outside_every_transform(lib_name):
    lib, C, P = LIBS[lib_name]
    x = lib.ones(2)
    assert C.maybe_current_level() is None
    assert C.get_interpreter_stack() is None
    assert C.peek_interpreter_stack() is None
    assert C.get_dynamic_layer_stack_depth() == 0
    assert (C.is_batchedtensor(x), C.is_gradtrackingtensor(x), C.maybe_get_level(x),
            C.maybe_get_bdim(x)) == (False, False, -1, -1)
    assert C._unwrap_for_grad(x, 1) is x
    with pytest.raises(RuntimeError):
        C.current_level()
    with pytest.raises(RuntimeError, match="No wrappers present!"):
        C.get_unwrapped(x)
    with pytest.raises(AssertionError, match="interpreter must not be None"):
        P.retrieve_current_functorch_interpreter()


def test_enums_as_torch():
    for ours, theirs in ((pyaten_C.TransformType, torch._C._functorch.TransformType),
                         (pyaten_C.RandomnessType, torch._C._functorch.RandomnessType)):
        assert {m.name: int(m) for m in ours} == {
            k: int(v) for k, v in theirs.__members__.items()}
        assert str(ours.Grad if ours is pyaten_C.TransformType else ours.Same) == str(
            theirs.Grad if ours is pyaten_C.TransformType else theirs.Same)


def test_batch_dims_and_unwrap():
    def probe(lib_name):
        lib, C, P = LIBS[lib_name]
        seen = []

        def f(x):
            level = C.current_level()
            seen.append((C.maybe_get_bdim(x), tuple(C.get_unwrapped(x).shape),
                         C._unwrap_for_grad(x, level) is x))
            moved = C._remove_batch_dim(x * 1, level, 4, 1)
            seen.append(tuple(moved.shape))
            back = C._add_batch_dim(moved, 1, level)
            seen.append((C.is_batchedtensor(back), tuple(back.shape)))
            return back
        out = lib.func.vmap(f)(lib.ones(4, 3))
        seen.append(tuple(out.shape))
        return seen

    assert probe("pyaten") == probe("torch")


def test_lower_sets_the_level_aside():
    def probe(lib_name):
        lib, C, P = LIBS[lib_name]
        seen = []

        def f(x):
            with P.retrieve_current_functorch_interpreter().lower():
                seen.append(C.maybe_current_level())
            seen.append(C.current_level())
            return x
        lib.func.vmap(lib.func.vmap(f))(lib.ones(2, 3))
        return seen

    assert probe("pyaten") == probe("torch")
