"""pyaten.func's autograd transforms, functional_call and per-sample gradients, against
torch.func (PyTorch 2.13)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf

import pyaten
import pyaten.func as pf
from pyaten.utils._pytree import tree_flatten

RNG = np.random.default_rng(0)


def both(*shape: int) -> tuple[pyaten.Tensor, torch.Tensor]:
    data = RNG.standard_normal(shape)
    return pyaten.tensor(data), torch.tensor(data)


def assert_same(ours, theirs, atol: float = 1e-9) -> None:
    ours_flat, ours_spec = tree_flatten(ours)
    theirs_flat = torch.utils._pytree.tree_flatten(theirs)[0]
    assert len(ours_flat) == len(theirs_flat), (ours, theirs)
    for a, b in zip(ours_flat, theirs_flat, strict=True):
        if isinstance(b, torch.Tensor):
            assert isinstance(a, pyaten.Tensor), type(a)
            assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
            assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=atol, rtol=1e-7)
        else:
            assert a == b


# --- Jacobians and Hessians of ten functions ----------------------------------------------

FUNCTIONS = {
    "sin_sum": (lambda m: lambda x: m.sin(x).sum(), (3,)),
    "poly": (lambda m: lambda x: (x**3 - 2 * x * x + x).sum(), (4,)),
    "exp_dot": (lambda m: lambda x: m.exp(x).dot(x), (3,)),
    "tanh_mat": (lambda m: lambda x: m.tanh(x @ x.T).sum(), (2, 3)),
    "logsumexp": (lambda m: lambda x: m.logsumexp(x, 0), (5,)),
    "softmax_w": (lambda m: lambda x: (m.softmax(x, 0) * m.arange(3.0, dtype=x.dtype)).sum(),
                  (3,)),
    "norm": (lambda m: lambda x: (x * x).sum().sqrt(), (4,)),
    "sigmoid_prod": (lambda m: lambda x: m.sigmoid(x).prod(), (3,)),
    "rational": (lambda m: lambda x: (x / (1 + x * x)).sum(), (3,)),
    "mixed": (lambda m: lambda x: (m.sin(x[0]) * m.cos(x[1]) + x[2] ** 2).sum(), (3, 2)),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jacobians_and_hessians(name: str) -> None:
    make, shape = FUNCTIONS[name]
    ours_f, theirs_f = make(pyaten), make(torch)
    x, tx = both(*shape)
    assert_same(pf.grad(ours_f)(x), tf.grad(theirs_f)(tx))
    assert_same(pf.jacrev(ours_f)(x), tf.jacrev(theirs_f)(tx))
    assert_same(pf.jacfwd(ours_f)(x), tf.jacfwd(theirs_f)(tx))
    assert_same(pf.hessian(ours_f)(x), tf.hessian(theirs_f)(tx))
    assert not pf.hessian(ours_f)(x).requires_grad


def test_vector_jacobians_argnums_and_aux() -> None:
    x, tx = both(3)
    y, ty = both(3)

    def make(m):
        def f(a, b):
            return m.sin(a) * b, (a + b).sum()

        return f

    assert_same(pf.jacrev(make(pyaten), argnums=(0, 1), has_aux=True)(x, y),
                tf.jacrev(make(torch), argnums=(0, 1), has_aux=True)(tx, ty))
    assert_same(pf.jacfwd(make(pyaten), argnums=1, has_aux=True)(x, y),
                tf.jacfwd(make(torch), argnums=1, has_aux=True)(tx, ty))


def test_grad_and_value_argnums_aux() -> None:
    x, tx = both(3)
    y, ty = both(3)

    def make(m):
        def f(a, b):
            return (a * b.exp()).sum(), {"aux": a * 2}

        return f

    assert_same(pf.grad_and_value(make(pyaten), argnums=(0, 1), has_aux=True)(x, y),
                tf.grad_and_value(make(torch), argnums=(0, 1), has_aux=True)(tx, ty))
    assert_same(pf.grad(make(pyaten), argnums=1, has_aux=True)(x, y),
                tf.grad(make(torch), argnums=1, has_aux=True)(tx, ty))


def test_grad_of_grad_and_unused_input() -> None:
    x, tx = both(3)
    assert_same(pf.grad(lambda a: pf.grad(lambda b: (b**3).sum())(a).sum())(x),
                tf.grad(lambda a: tf.grad(lambda b: (b**3).sum())(a).sum())(tx))
    assert_same(pf.grad(lambda a, b: (b * 2).sum())(x, x), tf.grad(
        lambda a, b: (b * 2).sum())(tx, tx))


def test_vjp_jvp_linearize() -> None:
    x, tx = both(2, 3)
    v, tv = both(2, 3)
    out, fn = pf.vjp(lambda a: a.sin() * a, x)
    tout, tfn = tf.vjp(lambda a: a.sin() * a, tx)
    assert_same(out, tout)
    assert_same(fn(v), tfn(tv))
    assert_same(fn(v), tfn(tv))  # vjp_fn may be called again
    assert_same(pf.jvp(lambda a: a.exp().sum(0), (x,), (v,)),
                tf.jvp(lambda a: a.exp().sum(0), (tx,), (tv,)))
    out, jfn = pf.linearize(lambda a: a.tanh(), x)
    tout, tjfn = tf.linearize(lambda a: a.tanh(), tx)
    assert_same(out, tout)
    assert_same(jfn(v), tjfn(tv))


TRANSFORM_ERRORS = [
    ("non-scalar", lambda m, F: F.grad(lambda a: a * 2)(m.ones(3))),
    ("non-tensor", lambda m, F: F.grad(lambda a: 3.0)(m.ones(3))),
    ("argnums out of range", lambda m, F: F.grad(lambda a: a.sum(), argnums=2)(m.ones(3))),
    ("argnums list", lambda m, F: F.grad(lambda a: a.sum(), argnums=[0])(m.ones(3))),
    ("grad aux", lambda m, F: F.grad(lambda a: a.sum(), has_aux=True)(m.ones(3))),
    ("vjp aux", lambda m, F: F.vjp(lambda a: a, m.ones(3), has_aux=True)),
    ("jacrev aux", lambda m, F: F.jacrev(lambda a: a, has_aux=True)(m.ones(3))),
    ("jacfwd aux", lambda m, F: F.jacfwd(lambda a: a, has_aux=True)(m.ones(3))),
    ("jvp primals", lambda m, F: F.jvp(lambda a: a, m.ones(3), (m.ones(3),))),
    ("vjp cotangents", lambda m, F: F.vjp(lambda a: (a, [a]), m.ones(3))[1](m.ones(3))),
    ("vjp cotangents dict", lambda m, F: F.vjp(lambda a: a, m.ones(3))[1]({"a": m.ones(3)})),
]


@pytest.mark.parametrize("case", TRANSFORM_ERRORS, ids=[c[0] for c in TRANSFORM_ERRORS])
def test_transform_errors_as_torch(case) -> None:
    _, program = case
    with pytest.raises(Exception) as theirs:
        program(torch, tf)
    with pytest.raises(Exception) as ours:
        program(pyaten, pf)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


# --- per-sample gradients ------------------------------------------------------------------


def _mlp_params():
    data = {"w1": RNG.standard_normal((8, 5)) * 0.3, "b1": RNG.standard_normal(8),
            "w2": RNG.standard_normal((3, 8)) * 0.3, "b2": RNG.standard_normal(3)}
    return ({k: pyaten.tensor(v) for k, v in data.items()},
            {k: torch.tensor(v) for k, v in data.items()})


def _mlp_loss(m):
    F = m.nn.functional

    def loss(params, x, y):
        h = F.relu(F.linear(x, params["w1"], params["b1"]))
        out = F.linear(h, params["w2"], params["b2"])
        return F.mse_loss(out, y)

    return loss


def test_per_sample_gradients_mlp() -> None:
    params, tparams = _mlp_params()
    x, tx = both(6, 5)
    y, ty = both(6, 3)
    ours = pf.vmap(pf.grad(_mlp_loss(pyaten)), in_dims=(None, 0, 0))(params, x, y)
    theirs = tf.vmap(tf.grad(_mlp_loss(torch)), in_dims=(None, 0, 0))(tparams, tx, ty)
    assert_same(ours, theirs)


def _cnn_loss(m):
    F = m.nn.functional

    def loss(params, x, label):
        h = F.conv2d(x.unsqueeze(0), params["conv"], params["cb"], padding=1)
        h = F.max_pool2d(F.relu(h), 2)
        logits = F.linear(h.flatten(1), params["fc"])
        return F.cross_entropy(logits, label.unsqueeze(0))

    return loss


def test_per_sample_gradients_cnn() -> None:
    data = {"conv": RNG.standard_normal((2, 1, 3, 3)) * 0.5, "cb": RNG.standard_normal(2),
            "fc": RNG.standard_normal((3, 2 * 2 * 2)) * 0.5}
    params = {k: pyaten.tensor(v) for k, v in data.items()}
    tparams = {k: torch.tensor(v) for k, v in data.items()}
    x, tx = both(4, 1, 4, 4)
    labels = np.array([0, 2, 1, 2])
    ours = pf.vmap(pf.grad(_cnn_loss(pyaten)), in_dims=(None, 0, 0))(
        params, x, pyaten.tensor(labels))
    theirs = tf.vmap(tf.grad(_cnn_loss(torch)), in_dims=(None, 0, 0))(
        tparams, tx, torch.tensor(labels))
    assert_same(ours, theirs)


# --- functional_call and ensembles --------------------------------------------------------


def _models(m, count: int):
    torch_models = []
    ours = []
    for _ in range(count):
        tm = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(),
                                 torch.nn.Linear(6, 2)).double()
        om = pyaten.nn.Sequential(pyaten.nn.Linear(4, 6), pyaten.nn.Tanh(),
                                  pyaten.nn.Linear(6, 2)).double()
        for (_, tp), (_, op) in zip(tm.named_parameters(), om.named_parameters(), strict=True):
            with pyaten.no_grad():
                op.copy_(pyaten.tensor(tp.detach().numpy()))
        torch_models.append(tm)
        ours.append(om)
    return ours, torch_models


def test_functional_call_swaps_and_restores() -> None:
    (model,), (tmodel,) = _models(pyaten, 1)
    new = {k: v.detach() * 2 for k, v in model.named_parameters()}
    tnew = {k: v.detach() * 2 for k, v in tmodel.named_parameters()}
    x, tx = both(3, 4)
    assert_same(pf.functional_call(model, new, (x,)), tf.functional_call(tmodel, tnew, (tx,)))
    assert_same(model(x), tmodel(tx))  # the module's own parameters are back
    assert isinstance(model[0].weight, pyaten.nn.Parameter)


def test_ensemble_of_five_models() -> None:
    models, tmodels = _models(pyaten, 5)
    params, buffers = pf.stack_module_state(models)
    tparams, tbuffers = tf.stack_module_state(tmodels)
    assert_same(params, tparams)
    assert all(p.requires_grad for p in params.values())
    x, tx = both(3, 4)
    base = models[0]
    tbase = tmodels[0]

    def run(m, b):
        def one(p, bufs, data):
            return m.func.functional_call(b, (p, bufs), (data,))

        return one

    ours = pf.vmap(run(pyaten, base), in_dims=(0, 0, None))(params, buffers, x)
    theirs = tf.vmap(run(torch, tbase), in_dims=(0, 0, None))(tparams, tbuffers, tx)
    assert_same(ours, theirs)
    # each model its own minibatch
    xs, txs = both(5, 3, 4)
    assert_same(pf.vmap(run(pyaten, base))(params, buffers, xs),
                tf.vmap(run(torch, tbase))(tparams, tbuffers, txs))


def test_hessian_vector_products_and_batched_jacobians() -> None:
    x, tx = both(4)
    v, tv = both(4)

    def f(m):
        return lambda a: (m.sin(a) * a.sum()).sum()

    # forward-over-reverse and reverse-over-reverse Hessian-vector products
    assert_same(pf.jvp(pf.grad(f(pyaten)), (x,), (v,)), tf.jvp(tf.grad(f(torch)), (tx,), (tv,)))
    _, hvp = pf.vjp(pf.grad(f(pyaten)), x)
    _, thvp = tf.vjp(tf.grad(f(torch)), tx)
    assert_same(hvp(v), thvp(tv))
    xs, txs = both(3, 4)
    assert_same(pf.vmap(pf.hessian(f(pyaten)))(xs), tf.vmap(tf.hessian(f(torch)))(txs))
    assert_same(pf.vmap(pf.jacfwd(lambda a: a.exp() * a.sum()))(xs),
                tf.vmap(tf.jacfwd(lambda a: a.exp() * a.sum()))(txs))


def _cube(m):
    class Cube(m.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x**3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    return Cube


def test_autograd_function_under_transforms() -> None:
    xs, txs = both(4, 3)
    ours, theirs = _cube(pyaten), _cube(torch)
    assert_same(pf.vmap(ours.apply)(xs), tf.vmap(theirs.apply)(txs))
    assert_same(pf.vmap(pf.grad(lambda a: ours.apply(a).sum()))(xs),
                tf.vmap(tf.grad(lambda a: theirs.apply(a).sum()))(txs))
    assert_same(pf.jacrev(ours.apply)(xs[0]), tf.jacrev(theirs.apply)(txs[0]))


def test_functional_call_tied_weights_and_strict() -> None:
    def build(m):
        model = m.nn.Sequential(m.nn.Linear(3, 3, bias=False), m.nn.Linear(3, 3, bias=False))
        model[1].weight = model[0].weight
        return model.double()

    ours, theirs = build(pyaten), build(torch)
    with pyaten.no_grad():
        ours[0].weight.copy_(pyaten.tensor(theirs[0].weight.detach().numpy()))
    w = RNG.standard_normal((3, 3))
    x, tx = both(2, 3)
    assert_same(pf.functional_call(ours, {"0.weight": pyaten.tensor(w)}, x),
                tf.functional_call(theirs, {"0.weight": torch.tensor(w)}, tx))
    assert_same(pf.functional_call(ours, {"0.weight": pyaten.tensor(w)}, x, tie_weights=False),
                tf.functional_call(theirs, {"0.weight": torch.tensor(w)}, tx,
                                   tie_weights=False))
    with pytest.raises(RuntimeError) as theirs_error:
        tf.functional_call(torch.nn.Linear(2, 2).double(), {"weight": torch.ones(2, 2)},
                           tx[:, :2], strict=True)
    with pytest.raises(RuntimeError) as ours_error:
        pf.functional_call(pyaten.nn.Linear(2, 2).double(), {"weight": pyaten.ones(2, 2)},
                           x[:, :2], strict=True)
    assert str(ours_error.value) == str(theirs_error.value)
