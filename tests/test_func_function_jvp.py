"""An autograd.Function's `jvp` staticmethod gives its forward-mode derivatives, against torch.

Under forward AD (dual tensors) and under pyaten.func's jvp, jacfwd and hessian, alone and
nested with vmap and grad. Each Function's `jvp` deliberately disagrees with its `backward`
(twice or thrice the true tangent), so equal numbers prove that the user's `jvp` ran, as in
torch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
from pyaten.utils._pytree import tree_map

LIBS = {"torch": torch, "pyaten": pyaten}


def functions(lib):
    """The same Function classes, written once, for torch or pyaten."""
    Function = lib.autograd.Function  # noqa: N806 - a class

    class Exp(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)
            ctx.save_for_forward(output)

        @staticmethod
        def backward(ctx, g):
            return g * ctx.saved_tensors[0]

        @staticmethod
        def jvp(ctx, t):
            return 2 * t * ctx.saved_tensors[0]

    class Sin(Function):
        @staticmethod
        def forward(x):
            return x.sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.save_for_forward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            return g * ctx.saved_tensors[0].cos()

        @staticmethod
        def jvp(ctx, t):
            return 3 * t * ctx.saved_tensors[0].cos()

        @staticmethod
        def vmap(info, in_dims, x):
            return Sin.apply(x), in_dims[0]

    class Mul(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x, y, scale=1.0):
            return x * y * scale

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, y, scale = inputs
            ctx.save_for_backward(x, y)
            ctx.save_for_forward(x, y)
            ctx.scale = scale

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y * ctx.scale, g * x * ctx.scale, None

        @staticmethod
        def jvp(ctx, xt, yt, _):
            x, y = ctx.saved_tensors
            return (xt * y + 2 * x * yt) * ctx.scale

    class SinCos(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.sin(), x.cos()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.save_for_forward(inputs[0])

        @staticmethod
        def backward(ctx, a, b):
            (x,) = ctx.saved_tensors
            return a * x.cos() - b * x.sin()

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return t * x.cos(), -3 * t * x.sin()

    class NoJvp(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return {"Exp": Exp, "Sin": Sin, "Mul": Mul, "SinCos": SinCos, "NoJvp": NoJvp}


FUNCTIONS = {name: functions(lib) for name, lib in LIBS.items()}


def assert_same(p, t):
    """pyaten's result `p` equals torch's `t`: the same structure, shapes, dtypes, values."""
    if isinstance(t, (tuple, list)):
        assert isinstance(p, (tuple, list)) and len(p) == len(t)
        for a, b in zip(p, t, strict=True):
            assert_same(a, b)
        return
    if t is None or isinstance(t, bool):
        assert p is t
        return
    assert tuple(p.shape) == tuple(t.shape)
    assert str(p.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(np.asarray(p.detach().numpy()), t.detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def both(build, *arrays):
    """`build(lib, F, *tensors)` run in each library on the same arrays; (pyaten, torch)."""
    out = {}
    for name, lib in LIBS.items():
        out[name] = build(lib, FUNCTIONS[name], *(lib.tensor(a) for a in arrays))
    return out["pyaten"], out["torch"]


def raised(build, *arrays):
    """The error each library raises for `build`: (pyaten's, torch's) class and message."""
    found = {}
    for name, lib in LIBS.items():
        try:
            build(lib, FUNCTIONS[name], *(lib.tensor(a) for a in arrays))
        except Exception as e:  # noqa: BLE001 - compared below
            found[name] = (type(e).__name__, str(e))
        else:
            found[name] = None
    return found["pyaten"], found["torch"]


RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
Y = RNG.standard_normal((3, 4)).astype(np.float32)
T = RNG.standard_normal((3, 4)).astype(np.float32)


# ---- forward AD (dual tensors) ---------------------------------------------------------


def dual_call(lib, F, name, *pairs, **kwargs):
    """F[name] applied to dual tensors made of (primal, tangent) pairs; each output's
    (primal, tangent)."""
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        duals = [fw.make_dual(p, t) if t is not None else p for p, t in pairs]
        out = F[name].apply(*duals, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        return [tuple(fw.unpack_dual(o)) for o in outs]


@pytest.mark.parametrize("case", [
    ("Exp", lambda lib, F, x, y, t: dual_call(lib, F, "Exp", (x, t))),
    ("Sin", lambda lib, F, x, y, t: dual_call(lib, F, "Sin", (x, t))),
    ("SinCos", lambda lib, F, x, y, t: dual_call(lib, F, "SinCos", (x, t))),
    # an input without a tangent gets zeros, a non-tensor None
    ("Mul x", lambda lib, F, x, y, t: dual_call(lib, F, "Mul", (x, t), (y, None), scale=3.0)),
    ("Mul y", lambda lib, F, x, y, t: dual_call(lib, F, "Mul", (x, None), (y, t))),
    ("Mul both", lambda lib, F, x, y, t: dual_call(lib, F, "Mul", (x, t), (y, t * 2))),
], ids=lambda c: c[0])
def test_forward_ad_runs_jvp(case):
    assert_same(*both(case[1], X, Y, T))


def test_forward_ad_without_a_tangent_does_not_call_jvp():
    def build(lib, F, x):
        with lib.autograd.forward_ad.dual_level():
            out = F["NoJvp"].apply(x)
            return out, lib.autograd.forward_ad.unpack_dual(out).tangent

    assert_same(*both(build, X))


def test_forward_ad_and_backward_together():
    def build(lib, F, x, t):
        x = x.requires_grad_()
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            out = F["Exp"].apply(fw.make_dual(x, t))
            tangent = fw.unpack_dual(out).tangent
            assert out.grad_fn is not None
            # the tangent is computed from the output: it has the output's history
            (g,) = lib.autograd.grad(tangent.sum(), x)
        return tangent.detach(), g

    assert_same(*both(build, X, T))


def custom(lib, forward, jvp=None):
    """A Function of one input with the given `forward(ctx, x)` and `jvp(ctx, t)` (none when
    None); its backward passes the first output's gradient on."""
    methods = {"forward": staticmethod(forward),
               "backward": staticmethod(lambda ctx, *grads: grads[0])}
    if jvp is not None:
        methods["jvp"] = staticmethod(jvp)
    return type("Custom", (lib.autograd.Function,), methods)


def note_and_double(ctx, x):
    ctx.save_for_forward(x)
    ctx.note = 5.0
    return x * 2


def double_in_place(ctx, x):
    ctx.mark_dirty(x)
    return x.mul_(2)


def double_frozen(ctx, x):
    y = x * 2
    ctx.mark_non_differentiable(y)
    return y


def as_is(ctx, x):
    return x


def double(ctx, x):
    return x * 2


def double_and_triple(ctx, x):
    return x * 2, x * 3


def double_and_integer(ctx, x):
    return x * 2, x.long()


def dual_apply(forward, jvp):
    def build(lib, F, x, t):
        fw = lib.autograd.forward_ad
        cls = custom(lib, forward, jvp)
        with fw.dual_level():
            dual = fw.make_dual(x.clone(), t.clone())
            out = cls.apply(dual)
            outs = out if isinstance(out, tuple) else (out,)
            return [fw.unpack_dual(o).tangent for o in outs], out is dual

    return build


ACCEPTED = {
    "ctx in forward": (note_and_double, lambda ctx, t: t * ctx.note + ctx.saved_tensors[0] * 0),
    "in place, jvp in place": (double_in_place, lambda ctx, t: t.mul_(7)),
    "as is, jvp a view": (as_is, lambda ctx, t: t.view_as(t)),
    "tuple of one": (double, lambda ctx, t: (t * 5,)),
    "integer output, None tangent": (double_and_integer, lambda ctx, t: (t, None)),
}


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_forward_ad_accepted(name):
    assert_same(*both(dual_apply(*ACCEPTED[name]), X, T))


REFUSED = {
    "no jvp": (double, None),
    "in place, jvp not in place": (double_in_place, lambda ctx, t: t * 7),
    "as is, jvp not a view": (as_is, lambda ctx, t: t),
    "as is, jvp a new tensor": (as_is, lambda ctx, t: t * 1),
    "too many tangents": (double, lambda ctx, t: (t, t)),
    "too few tangents": (double_and_triple, lambda ctx, t: t),
    "a number": (double, lambda ctx, t: 3),
    "wrong shape": (double, lambda ctx, t: t[:2]),
    "non-differentiable output": (double_frozen, lambda ctx, t: t),
    "integer output with a tangent": (double_and_integer, lambda ctx, t: (t, t)),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_forward_ad_errors_as_torch(name):
    mine, theirs = raised(dual_apply(*REFUSED[name]), X, T)
    assert theirs is not None
    assert mine == theirs


# ---- pyaten.func's transforms ----------------------------------------------------------

TRANSFORMS = {
    "jvp": lambda lib, F, x, y, t: lib.func.jvp(F["Exp"].apply, (x,), (t,)),
    "jvp two inputs": lambda lib, F, x, y, t: lib.func.jvp(
        lambda a, b: F["Mul"].apply(a, b, 0.5), (x, y), (t, t * 3)),
    "jvp two outputs": lambda lib, F, x, y, t: lib.func.jvp(F["SinCos"].apply, (x,), (t,)),
    "jvp vmap staticmethod": lambda lib, F, x, y, t: lib.func.jvp(F["Sin"].apply, (x,), (t,)),
    "jacfwd": lambda lib, F, x, y, t: lib.func.jacfwd(F["Exp"].apply)(x[0]),
    "jacfwd argnums": lambda lib, F, x, y, t: lib.func.jacfwd(
        lambda a, b: F["Mul"].apply(a, b), argnums=(0, 1))(x[0], y[0]),
    "jacfwd two outputs": lambda lib, F, x, y, t: lib.func.jacfwd(F["SinCos"].apply)(x[0]),
    "hessian": lambda lib, F, x, y, t: lib.func.hessian(
        lambda a: F["Exp"].apply(a).sum())(x[0]),
    "hessian sin": lambda lib, F, x, y, t: lib.func.hessian(
        lambda a: F["Sin"].apply(a).sum())(x[0]),
    "hessian mul": lambda lib, F, x, y, t: lib.func.hessian(
        lambda a: F["Mul"].apply(a, a.sin()).sum())(x[0]),
    "jacrev of jacfwd": lambda lib, F, x, y, t: lib.func.jacrev(lib.func.jacfwd(
        lambda a: F["Exp"].apply(a).sum()))(x[0]),
    "grad of jvp": lambda lib, F, x, y, t: lib.func.grad(
        lambda a: lib.func.jvp(F["Exp"].apply, (a,), (t,))[1].sum())(x),
    "jvp of grad": lambda lib, F, x, y, t: lib.func.jvp(
        lib.func.grad(lambda a: F["Exp"].apply(a).sum()), (x,), (t,)),
    "jvp of vmap, generated rule": lambda lib, F, x, y, t: lib.func.jvp(
        lib.func.vmap(F["Exp"].apply), (x,), (t,)),
    "jvp of vmap, vmap staticmethod": lambda lib, F, x, y, t: lib.func.jvp(
        lib.func.vmap(F["Sin"].apply), (x,), (t,)),
    "jvp of vmap, two inputs": lambda lib, F, x, y, t: lib.func.jvp(
        lib.func.vmap(F["Mul"].apply, in_dims=(0, None)), (x, y[0]), (t, t[0])),
    "vmap of jvp": lambda lib, F, x, y, t: lib.func.vmap(
        lambda a, b: lib.func.jvp(F["Exp"].apply, (a,), (b,)))(x, t),
    "vmap of jacfwd": lambda lib, F, x, y, t: lib.func.vmap(lib.func.jacfwd(F["Exp"].apply))(x),
    "vmap of hessian": lambda lib, F, x, y, t: lib.func.vmap(lib.func.hessian(
        lambda a: F["Sin"].apply(a).sum()))(x),
    "jacfwd of vmap": lambda lib, F, x, y, t: lib.func.jacfwd(
        lib.func.vmap(F["SinCos"].apply))(x[:2, :2]),
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transforms_run_jvp(name):
    assert_same(*both(TRANSFORMS[name], X, Y, T))


def test_jacfwd_of_a_function_inside_a_module():
    def build(lib, F, x, w, b):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Linear(4, 3)

            def forward(self, x):
                return F["Exp"].apply(self.fc(x))

        net = Net()
        params = {"fc.weight": w, "fc.bias": b}
        return lib.func.jacfwd(
            lambda p, a: lib.func.functional_call(net, p, (a,)), argnums=(0, 1))(params, x)

    mine, theirs = both(build, X[0], Y * 0.5, T[0, :3])
    (pw, px), (tw, tx) = mine, theirs
    assert pw.keys() == tw.keys()
    for k in tw:
        assert_same(pw[k], tw[k])
    assert_same(px, tx)


@pytest.mark.parametrize("transform", ["jvp", "jacfwd", "hessian"])
def test_a_function_without_jvp_errors_as_torch(transform):
    def build(lib, F, x):
        f = F["NoJvp"].apply
        if transform == "jvp":
            return lib.func.jvp(f, (x,), (x,))
        if transform == "jacfwd":
            return lib.func.jacfwd(f)(x)
        return lib.func.hessian(lambda a: f(a).sum())(x)

    mine, theirs = raised(build, X[0])
    assert theirs is not None and mine == theirs


@settings(max_examples=15, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=0, max_size=3), seed=st.integers(0, 999),
       scale=st.floats(-2, 2))
def test_jvp_of_mul_any_shape(shape, seed, scale):
    rng = np.random.default_rng(seed)
    x, y, t, u = (rng.standard_normal(shape).astype(np.float64) for _ in range(4))

    def build(lib, F, x, y, t, u):
        return lib.func.jvp(lambda a, b: F["Mul"].apply(a, b, scale), (x, y), (t, u))

    assert_same(*both(build, x, y, t, u))


# ---- jacfwd: one vmapped jvp over the basis, the per-vector loop as the reference ------

JACFWD_CASES = {
    "sin": (lambda lib, F: lambda a: a.sin() * a.sum(), 0),
    "two inputs": (lambda lib, F: lambda a, b: (a * b).cumsum(0), (0, 1)),
    "two outputs": (lambda lib, F: lambda a, b: (a @ b.T, b.exp()), 1),
    "Function": (lambda lib, F: F["SinCos"].apply, 0),
    "Function two inputs": (lambda lib, F: lambda a, b: F["Mul"].apply(a, b), (0, 1)),
}


@pytest.mark.parametrize("name", list(JACFWD_CASES))
def test_jacfwd_runs_the_function_once_as_torch(name):
    make, argnums = JACFWD_CASES[name]
    calls = {}

    def build(lib, F, x, y):
        f = make(lib, F)
        calls[lib.__name__] = 0

        def counted(*args):
            calls[lib.__name__] += 1
            return f(*args)

        args = (x, y) if isinstance(argnums, tuple) or argnums == 1 else (x,)
        return lib.func.jacfwd(counted, argnums=argnums)(*args)

    assert_same(*both(build, X[:2], Y[:2]))
    assert calls["pyaten"] == calls["torch"] == 1


@pytest.mark.parametrize("name", list(JACFWD_CASES))
def test_jacfwd_by_vmap_equals_the_loop(name):
    # an input that requires grad outside the transforms takes the per-vector loop
    make, argnums = JACFWD_CASES[name]
    f = make(pyaten, FUNCTIONS["pyaten"])
    args = [pyaten.tensor(X[:2]), pyaten.tensor(Y[:2])]
    if not (isinstance(argnums, tuple) or argnums == 1):
        args = args[:1]
    fast = pyaten.func.jacfwd(f, argnums=argnums)(*args)
    slow = pyaten.func.jacfwd(f, argnums=argnums)(*[a.requires_grad_() for a in args])
    assert_same(fast, tree_map(lambda t: t.detach(), slow))
