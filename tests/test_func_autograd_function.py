"""autograd.Function under the function transforms, against torch.func (torch 2.13).

The same Function classes are written once over a library namespace (`_functions(lib)`) and
built for torch and for pyaten; each transform runs on both with the same inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func

import pyaten
import pyaten.func


def _functions(lib):  # noqa: C901 - one table of Function classes
    Function = lib.autograd.Function
    once_differentiable = lib.autograd.function.once_differentiable

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
            (y,) = ctx.saved_tensors
            return g * y

        @staticmethod
        def jvp(ctx, t):
            (y,) = ctx.saved_tensors
            return t * y

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
            (x,) = ctx.saved_tensors
            return g * x.cos()

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return t * x.cos()

        @staticmethod
        def vmap(info, in_dims, x):
            return Sin.apply(x), in_dims[0]

    class Mul(Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, g * x

        @staticmethod
        def vmap(info, in_dims, x, y):
            # the batch of each at the front; an unbatched one broadcasts
            x = x.movedim(in_dims[0], 0) if in_dims[0] is not None else x.unsqueeze(0)
            y = y.movedim(in_dims[1], 0) if in_dims[1] is not None else y.unsqueeze(0)
            return Mul.apply(x, y), 0

    class SumDim(Function):
        @staticmethod
        def forward(x, dim):
            return x.sum(dim)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, dim = inputs
            ctx.dim = dim
            ctx.shape = x.shape

        @staticmethod
        def backward(ctx, g):
            return g.unsqueeze(ctx.dim).expand(ctx.shape), None

        @staticmethod
        def vmap(info, in_dims, x, dim):
            x = x.movedim(in_dims[0], 0)
            return SumDim.apply(x, dim + 1 if dim >= 0 else dim), 0

    class Linear(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x, w, b):
            return x @ w.t() + b

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, w, b = inputs
            ctx.save_for_backward(x, w)

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g @ w, g.unsqueeze(-1) * x.unsqueeze(-2) if g.dim() == 1 else g.t() @ x, g

    class Cube(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * g * x * x

    class SinCos(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.sin(), x.cos()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, gs, gc):
            (x,) = ctx.saved_tensors
            return gs * x.cos() - gc * x.sin()

    class Scale(Function):
        # a non-tensor argument; the batch moved to the end by the rule
        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

        @staticmethod
        def vmap(info, in_dims, x, k):
            out = Scale.apply(x.movedim(in_dims[0], -1), k)
            return out, out.dim() - 1

    class Unbatched(Function):
        # a second output that does not depend on the batch: out_dim None
        @staticmethod
        def forward(x, y):
            return x + y, y * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g1, g2):
            return g1, g1 + 2 * g2

        @staticmethod
        def vmap(info, in_dims, x, y):
            x = x.movedim(in_dims[0], 0)
            return Unbatched.apply(x, y), (0, None)

    class AddBroadcast(Function):
        # the backward returns y's gradient broadcast to x's shape: reduced to y's
        generate_vmap_rule = True

        @staticmethod
        def forward(x, y):
            return x + y

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g, g

    class MaxAlong(Function):
        # an integer output marked non-differentiable, and saved
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            value, index = x.max(0)  # a plain tuple: torch's rule cannot flatten its namedtuple
            return value, index

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_non_differentiable(output[1])
            ctx.save_for_backward(output[1])
            ctx.n = inputs[0].shape[0]

        @staticmethod
        def backward(ctx, g, _):
            (i,) = ctx.saved_tensors
            return (lib.arange(ctx.n) == i).to(g.dtype) * g

    class NoVmap(Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class OldStyle(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class BadOutDims(NoVmap):
        @staticmethod
        def vmap(info, in_dims, x):
            return NoVmap.apply(x), (0, 0)

    class NotATuple(NoVmap):
        @staticmethod
        def vmap(info, in_dims, x):
            return NoVmap.apply(x)

    class Both(NoVmap):
        generate_vmap_rule = True

        @staticmethod
        def vmap(info, in_dims, x):
            return NoVmap.apply(x), 0

    class Info(NoVmap):
        @staticmethod
        def vmap(info, in_dims, x):
            # the batch size and randomness reach the rule
            out = NoVmap.apply(x) + info.batch_size + (info.randomness == "same")
            return out, in_dims[0]

    return {k: v for k, v in locals().items() if isinstance(v, type)}


TORCH = _functions(torch)
PYATEN = _functions(pyaten)


def _data(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


def _run(lib, fns, program, arrays):
    func = lib.func
    inputs = [lib.tensor(a, dtype=lib.float64) for a in arrays]
    return program(func, fns, *inputs)


def _as_numpy(x):
    if isinstance(x, (tuple, list)):
        return [_as_numpy(v) for v in x]
    return x.detach().numpy()


def _compare(program, *arrays):
    expected = _run(torch, TORCH, program, arrays)
    got = _run(pyaten, PYATEN, program, arrays)
    e, g = _as_numpy(expected), _as_numpy(got)
    if isinstance(e, list):
        assert len(e) == len(g)
        for a, b in zip(e, g, strict=True):
            np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)
    else:
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


B, N = 3, 4
PROGRAMS = {
    # grad transforms alone
    "grad_exp": (lambda f, F, x: f.grad(lambda x: F["Exp"].apply(x).sum())(x), [(N,)]),
    "grad_novmap": (lambda f, F, x: f.grad(lambda x: F["NoVmap"].apply(x).sum())(x), [(N,)]),
    "grad_grad_sin": (lambda f, F, x: f.grad(lambda x: f.grad(
        lambda y: F["Sin"].apply(y).sum())(x).sum())(x), [(N,)]),
    "jacrev_mul": (lambda f, F, x, y: f.jacrev(F["Mul"].apply, argnums=(0, 1))(x, y),
                   [(N,), (N,)]),
    "jacrev_linear": (lambda f, F, x, w, b: f.jacrev(F["Linear"].apply, argnums=1)(x, w, b),
                      [(N,), (2, N), (2,)]),
    "vjp_sincos": (lambda f, F, x, g1, g2: f.vjp(F["SinCos"].apply, x)[1]((g1, g2)),
                   [(N,), (N,), (N,)]),
    "jacfwd_exp": (lambda f, F, x: f.jacfwd(F["Exp"].apply)(x), [(N,)]),
    "jvp_sin": (lambda f, F, x, t: f.jvp(F["Sin"].apply, (x,), (t,)), [(N,), (N,)]),
    "hessian_sin": (lambda f, F, x: f.hessian(lambda x: F["Sin"].apply(x).sum())(x),
                    [(N,)]),
    "hessian_exp_sin": (lambda f, F, x: f.hessian(
        lambda x: (F["Exp"].apply(x) * F["Sin"].apply(x)).sum())(x), [(N,)]),
    "once_differentiable_grad": (lambda f, F, x: f.grad(
        lambda x: F["Cube"].apply(x).sum())(x), [(N,)]),
    # under functorch the once-differentiable backward is a constant to the outer grad
    "grad_grad_once_differentiable": (lambda f, F, x: f.grad(lambda x: f.grad(
        lambda y: F["Cube"].apply(y).sum())(x).sum())(x), [(N,)]),
    "vmap_keyword_bound": (lambda f, F, x: f.vmap(lambda x: F["Scale"].apply(x, k=1.5))(x),
                           [(B, N)]),
    "grad_vmap_broadcast": (lambda f, F, x, y: f.grad(lambda x, y: f.vmap(
        F["AddBroadcast"].apply, in_dims=(0, None))(x, y).pow(2).sum(), argnums=(0, 1))(
        x, y), [(B,), (N,)]),
    "grad_vmap_broadcast_scalar": (lambda f, F, x, y: f.grad(lambda x, y: f.vmap(
        F["AddBroadcast"].apply, in_dims=(0, None))(x, y).pow(2).sum(), argnums=(0, 1))(
        x, y[0, 0]), [(B, N), (1, 1)]),
    "vmap_max": (lambda f, F, x: f.vmap(F["MaxAlong"].apply)(x), [(B, N)]),
    "grad_vmap_max": (lambda f, F, x: f.grad(
        lambda x: f.vmap(F["MaxAlong"].apply)(x)[0].sum())(x), [(B, N)]),
    "vmap_grad_max": (lambda f, F, x: f.vmap(f.grad(
        lambda x: F["MaxAlong"].apply(x)[0]))(x), [(B, N)]),
    # vmap: the staticmethod and the generated rule
    "vmap_exp": (lambda f, F, x: f.vmap(F["Exp"].apply)(x), [(B, N)]),
    "vmap_sin_dim1": (lambda f, F, x: f.vmap(F["Sin"].apply, in_dims=1)(x), [(N, B)]),
    "vmap_mul_none": (lambda f, F, x, y: f.vmap(F["Mul"].apply, in_dims=(0, None))(x, y),
                      [(B, N), (N,)]),
    "vmap_sumdim": (lambda f, F, x: f.vmap(lambda x: F["SumDim"].apply(x, 0), in_dims=1)(x),
                    [(N, B, 2)]),
    "vmap_scale_out_dims": (lambda f, F, x: f.vmap(lambda x: F["Scale"].apply(x, 2.5))(x),
                            [(B, N)]),
    "vmap_linear": (lambda f, F, x, w, b: f.vmap(F["Linear"].apply, in_dims=(0, None, None))(
        x, w, b), [(B, N), (2, N), (2,)]),
    "vmap_sincos": (lambda f, F, x: f.vmap(F["SinCos"].apply)(x), [(B, N)]),
    "vmap_info": (lambda f, F, x: f.vmap(F["Info"].apply, randomness="same")(x), [(B, N)]),
    "vmap_vmap_sin": (lambda f, F, x: f.vmap(f.vmap(F["Sin"].apply))(x), [(2, B, N)]),
    "vmap_vmap_exp": (lambda f, F, x: f.vmap(f.vmap(F["Exp"].apply), in_dims=1)(x),
                      [(B, 2, N)]),
    "vmap_out_dims_none": (lambda f, F, x, y: f.vmap(
        lambda x: F["Unbatched"].apply(x, y), out_dims=(0, None))(x), [(B, N), (N,)]),
    "vmap_vmap_mul_outer_only": (lambda f, F, x, y: f.vmap(
        f.vmap(F["Mul"].apply, in_dims=(None, 0)), in_dims=(0, None))(x, y), [(B, N), (2, N)]),
    # vmap with grad, both ways round
    "vmap_grad_exp": (lambda f, F, x: f.vmap(f.grad(lambda x: F["Exp"].apply(x).sum()))(x),
                      [(B, N)]),
    "vmap_grad_sin": (lambda f, F, x: f.vmap(f.grad(lambda x: F["Sin"].apply(x).sum()))(x),
                      [(B, N)]),
    "vmap_grad_mul": (lambda f, F, x, y: f.vmap(f.grad(
        lambda x, y: F["Mul"].apply(x, y).sum(), argnums=(0, 1)), in_dims=(0, None))(x, y),
        [(B, N), (N,)]),
    "vmap_grad_cube": (lambda f, F, x: f.vmap(f.grad(lambda x: F["Cube"].apply(x).sum()))(x),
                       [(B, N)]),
    "grad_vmap_exp": (lambda f, F, x: f.grad(lambda x: f.vmap(F["Exp"].apply)(x).sum())(x),
                      [(B, N)]),
    "grad_vmap_sin": (lambda f, F, x: f.grad(lambda x: f.vmap(F["Sin"].apply)(x).sum())(x),
                      [(B, N)]),
    "grad_vmap_linear": (lambda f, F, x, w, b: f.grad(lambda w: f.vmap(
        F["Linear"].apply, in_dims=(0, None, None))(x, w, b).pow(2).sum())(w),
        [(B, N), (2, N), (2,)]),
    "grad_vmap_sincos": (lambda f, F, x: f.grad(
        lambda x: sum(o.sum() for o in f.vmap(F["SinCos"].apply)(x)))(x), [(B, N)]),
    "grad_vmap_vmap_exp": (lambda f, F, x: f.grad(
        lambda x: f.vmap(f.vmap(F["Exp"].apply))(x).sum())(x), [(2, B, N)]),
    "grad_vmap_grad_exp": (lambda f, F, x: f.grad(lambda x: f.vmap(f.grad(
        lambda y: F["Exp"].apply(y).sum()))(x).pow(2).sum())(x), [(B, N)]),
    "grad_vmap_grad_sin": (lambda f, F, x: f.grad(lambda x: f.vmap(f.grad(
        lambda y: F["Sin"].apply(y).sum()))(x).pow(2).sum())(x), [(B, N)]),
    "grad_vmap_grad_linear": (lambda f, F, x, w, b: f.grad(lambda w: f.vmap(f.grad(
        lambda x: F["Linear"].apply(x, w, b).pow(2).sum()), in_dims=0)(x).pow(2).sum())(w),
        [(B, N), (2, N), (2,)]),
    "jacrev_vmap_mul": (lambda f, F, x, y: f.jacrev(
        lambda x: f.vmap(F["Mul"].apply)(x, y))(x), [(B, N), (B, N)]),
    "vmap_jacrev_linear": (lambda f, F, x, w, b: f.vmap(
        f.jacrev(F["Linear"].apply), in_dims=(0, None, None))(x, w, b),
        [(B, N), (2, N), (2,)]),
    "vmap_jacfwd_exp": (lambda f, F, x: f.vmap(f.jacfwd(F["Exp"].apply))(x), [(B, N)]),
    "vmap_hessian_sin": (lambda f, F, x: f.vmap(f.hessian(
        lambda x: F["Sin"].apply(x).sum()))(x), [(B, N)]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_torch_func(name):
    program, shapes = PROGRAMS[name]
    _compare(program, *[_data(i, *s) for i, s in enumerate(shapes)])


ERRORS = {
    "vmap_without_rule": lambda f, F, x: f.vmap(F["NoVmap"].apply)(x),
    "vmap_grad_without_rule": lambda f, F, x: f.vmap(
        f.grad(lambda x: F["NoVmap"].apply(x).sum()))(x),
    "old_style_grad": lambda f, F, x: f.grad(lambda x: F["OldStyle"].apply(x).sum())(x[0]),
    "old_style_vmap": lambda f, F, x: f.vmap(F["OldStyle"].apply)(x),
    "old_style_jacrev": lambda f, F, x: f.jacrev(F["OldStyle"].apply)(x[0]),
    "bad_out_dims": lambda f, F, x: f.vmap(F["BadOutDims"].apply)(x),
    "not_a_tuple": lambda f, F, x: f.vmap(F["NotATuple"].apply)(x),
    "both_rules": lambda f, F, x: f.vmap(F["Both"].apply)(x),
    "jvp_without_jvp": lambda f, F, x: f.jvp(F["Mul"].apply, (x[0], x[1]), (x[0], x[1])),
    "jacfwd_without_jvp": lambda f, F, x: f.jacfwd(F["Cube"].apply)(x[0]),
    "hessian_without_jvp": lambda f, F, x: f.hessian(lambda x: F["Cube"].apply(x).sum())(x[0]),
    "vmap_kwarg_tensor": lambda f, F, x: f.vmap(lambda x: F["Scale"].apply(x, k=x))(x),
}


def _error(lib, fns, program, x):
    try:
        _run(lib, fns, program, [x])
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e), str(e)
    return None


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_as_torch(name):
    x = _data(0, B, N)
    expected = _error(torch, TORCH, ERRORS[name], x)
    got = _error(pyaten, PYATEN, ERRORS[name], x)
    assert expected is not None and got is not None, (expected, got)
    assert got[0].__name__ == expected[0].__name__
    # torch's messages quote pytree specs (TreeSpec(...)) in its own printing, and its classes
    assert _message(got[1]) == _message(expected[1])


def _message(text):
    text = text.split(" out_dims has structure")[0]
    return text.replace("pyaten.core.tensor.Tensor", "Tensor").replace("torch.Tensor", "Tensor")


def _bound_inputs(lib):
    seen = []

    class Defaults(lib.autograd.Function):
        @staticmethod
        def forward(x, k=2.0, m=1.0):
            return x * k * m

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen.append(len(inputs))

        @staticmethod
        def backward(ctx, g):
            return g

    x = lib.ones(2)
    Defaults.apply(x)
    Defaults.apply(x, k=3.0)
    Defaults.apply(x, m=3.0)
    return seen


def test_keywords_bound_to_forward():
    # with setup_context, keywords and defaults are bound to forward's positions (as torch)
    assert _bound_inputs(pyaten) == _bound_inputs(torch) == [3, 3, 3]


def _level0_history(lib, fns):
    # results of the transforms keep the history of a tensor outside them (level 0)
    w = lib.tensor([0.5, 1.5], dtype=lib.float64, requires_grad=True)
    xs = lib.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=lib.float64)
    func = lib.func
    results = [
        func.grad(lambda x: fns["Exp"].apply(x * w).sum())(xs[0]),
        func.vmap(func.grad(lambda x: fns["Sin"].apply(x * w).sum()))(xs),
        func.vmap(func.grad(lambda x: fns["Exp"].apply(x * w).sum()))(xs),
        func.vmap(fns["Exp"].apply)(xs * w),
    ]
    return [(r.requires_grad, lib.autograd.grad(r.sum(), w)[0].tolist()) for r in results]


def test_level0_history_kept():
    got, expected = _level0_history(pyaten, PYATEN), _level0_history(torch, TORCH)
    assert [g[0] for g in got] == [e[0] for e in expected]
    np.testing.assert_allclose([g[1] for g in got], [e[1] for e in expected], rtol=1e-12)


def _in_place(lib):
    class AddOne_(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x.add_(1)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_dirty(inputs[0])

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def vmap(info, in_dims, x):
            AddOne_.apply(x)
            return x, in_dims[0]

    x = lib.zeros(3, 2)
    y = lib.func.vmap(AddOne_.apply)(x)
    return y.tolist(), x.tolist(), y is x


def test_in_place_function_under_vmap():
    # the staticmethod returns its (unbatched) input: vmap hands back the caller's own tensor
    assert _in_place(pyaten) == _in_place(torch)


def test_outside_transforms_unchanged():
    # plain autograd: the old-style forward and a Function without vmap support still work
    x = pyaten.tensor([1.0, 2.0], requires_grad=True)
    PYATEN["OldStyle"].apply(x).sum().backward()
    PYATEN["NoVmap"].apply(x).sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]
    assert PYATEN["Exp"].apply(x).grad_fn.name() == "ExpBackward"


def test_default_vmap_staticmethod_raises():
    for lib in (torch, pyaten):
        with pytest.raises(NotImplementedError, match="must either override the vmap"):
            lib.autograd.Function.vmap(None, (0,), None)


def _inner_vmap_in_rule(lib):
    fns = _functions(lib)
    C = lib._C._functorch
    seen = []

    def inner(y):
        seen.append(C.current_level())
        return y * 2

    class Probe(fns["NoVmap"]):
        @staticmethod
        def vmap(info, in_dims, x):
            seen.append(C.maybe_current_level())
            seen.append(tuple(lib.func.vmap(inner)(x).shape))
            return x * 2, in_dims[0]  # x is still batched at the outer level

    lib.func.vmap(lambda x: lib.func.vmap(Probe.apply)(x))(lib.ones(2, 3, 2))
    return seen


def test_vmap_rule_sees_lower_levels():
    # inside the staticmethod the level it serves is set aside: an inner vmap gets its number
    assert _inner_vmap_in_rule(pyaten) == _inner_vmap_in_rule(torch)
