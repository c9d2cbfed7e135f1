"""pyaten.vmap over a table of operators: one and two levels, in_dims on each argument, equal
to a Python loop over the samples and to torch.func.vmap (PyTorch 2.13); vmap's errors."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch
import torch.func as tf

import pyaten
import pyaten.func as pf
from pyaten.utils._pytree import tree_flatten

B1, B2 = 3, 2


def F(*shape):  # a float argument
    return ("f", shape)


def Int(high, *shape):  # an int64 argument in [0, high)
    return ("i", shape, high)


# name -> (function of the module m and the arguments, argument specs)
OPS = {
    "sin": (lambda m, x: m.sin(x), [F(3, 4)]),
    "exp_neg": (lambda m, x: (-x).exp(), [F(4)]),
    "relu": (lambda m, x: m.relu(x), [F(2, 3)]),
    "sigmoid_tanh": (lambda m, x: m.sigmoid(x) * m.tanh(x), [F(5)]),
    "abs_sqrt": (lambda m, x: x.abs().sqrt(), [F(3)]),
    "add": (lambda m, x, y: x + y, [F(3, 4), F(3, 4)]),
    "add_broadcast": (lambda m, x, y: x + y, [F(3, 4), F(4)]),
    "mul_scalar": (lambda m, x: x * 2.5 - 1, [F(3)]),
    "div": (lambda m, x, y: x / (y.abs() + 1), [F(2, 3), F(3)]),
    "pow": (lambda m, x: x.abs() ** 1.5, [F(4)]),
    "maximum": (lambda m, x, y: m.maximum(x, y), [F(3), F(3)]),
    "where": (lambda m, x, y: m.where(x > 0, x, y), [F(3, 2), F(3, 2)]),
    "clamp": (lambda m, x: x.clamp(-0.5, 0.5), [F(4)]),
    "eq": (lambda m, x, y: x > y, [F(4), F(4)]),
    "nansum_dims": (lambda m, x: m.nansum(x, (0, 1)) + m.nansum(x), [F(2, 3)]),
    "count_nonzero": (lambda m, x: m.count_nonzero(x > 0) + m.count_nonzero(x > 0, 1).sum(),
                      [F(2, 3)]),
    "vector_norm": (lambda m, x: m.linalg.vector_norm(x) + m.linalg.vector_norm(x, 1, -1).sum(),
                    [F(2, 3)]),
    "var_dims": (lambda m, x: x.var((0, 1)) + x.std(), [F(3, 4)]),
    "argmax_flat": (lambda m, x: x.argmax(), [F(3, 4)]),
    "sum_all": (lambda m, x: x.sum(), [F(3, 4)]),
    "sum_dim": (lambda m, x: x.sum(0), [F(3, 4)]),
    "sum_keepdim": (lambda m, x: x.sum(-1, keepdim=True), [F(3, 4)]),
    "mean": (lambda m, x: x.mean(1), [F(2, 5)]),
    "amax": (lambda m, x: x.amax(0), [F(3, 4)]),
    "max_dim": (lambda m, x: x.max(1), [F(3, 4)]),
    "max_all": (lambda m, x: x.max(), [F(3, 4)]),
    "argmax": (lambda m, x: x.argmax(1), [F(3, 4)]),
    "var": (lambda m, x: x.var(0), [F(4, 3)]),
    "std": (lambda m, x: x.std(), [F(4, 3)]),
    "logsumexp": (lambda m, x: m.logsumexp(x, 1), [F(2, 3)]),
    "prod": (lambda m, x: x.prod(0), [F(3, 2)]),
    "cumsum": (lambda m, x: x.cumsum(1), [F(2, 4)]),
    "softmax": (lambda m, x: m.softmax(x, -1), [F(3, 4)]),
    "log_softmax": (lambda m, x: m.log_softmax(x, 0), [F(3, 4)]),
    "sort": (lambda m, x: m.sort(x, 1), [F(2, 4)]),
    "topk": (lambda m, x: m.topk(x, 2), [F(5)]),
    "view": (lambda m, x: x.view(-1), [F(3, 4)]),
    "reshape": (lambda m, x: x.reshape(4, 3), [F(3, 4)]),
    "transpose": (lambda m, x: x.transpose(0, 1), [F(3, 4)]),
    "permute": (lambda m, x: x.permute(2, 0, 1), [F(2, 3, 4)]),
    "t": (lambda m, x: x.t(), [F(3, 4)]),
    "unsqueeze": (lambda m, x: x.unsqueeze(-1), [F(3)]),
    "squeeze": (lambda m, x: x.squeeze(), [F(3, 1, 2)]),
    "expand": (lambda m, x: x.expand(2, 3), [F(3)]),
    "flatten": (lambda m, x: x.flatten(), [F(2, 3)]),
    "select": (lambda m, x: x[1], [F(3, 4)]),
    "slice": (lambda m, x: x[:, 1:3], [F(3, 4)]),
    "narrow": (lambda m, x: x.narrow(1, 1, 2), [F(3, 4)]),
    "chunk": (lambda m, x: x.chunk(2, 0), [F(4, 3)]),
    "split": (lambda m, x: x.split([1, 3], 1), [F(2, 4)]),
    "unbind": (lambda m, x: x.unbind(1), [F(2, 3)]),
    "flip": (lambda m, x: x.flip(0), [F(3, 2)]),
    "movedim": (lambda m, x: m.movedim(x, 0, 1), [F(3, 2)]),
    "cat": (lambda m, x, y: m.cat([x, y], 0), [F(2, 3), F(1, 3)]),
    "stack": (lambda m, x, y: m.stack([x, y], 1), [F(3), F(3)]),
    "mm": (lambda m, x, y: x @ y, [F(2, 3), F(3, 4)]),
    "mv": (lambda m, x, y: m.mv(x, y), [F(2, 3), F(3)]),
    "dot": (lambda m, x, y: m.dot(x, y), [F(3), F(3)]),
    "vec_mat": (lambda m, x, y: x @ y, [F(3), F(3, 2)]),
    "bmm": (lambda m, x, y: m.bmm(x, y), [F(2, 2, 3), F(2, 3, 2)]),
    "addmm": (lambda m, b, x, y: m.addmm(b, x, y, beta=0.5, alpha=2.0),
              [F(4), F(2, 3), F(3, 4)]),
    "linear": (lambda m, x, w, b: m.nn.functional.linear(x, w, b), [F(2, 3), F(4, 3), F(4)]),
    "gather": (lambda m, x, i: m.gather(x, 1, i), [F(3, 4), Int(4, 3, 2)]),
    "index_select": (lambda m, x, i: m.index_select(x, 0, i), [F(3, 4), Int(3, 2)]),
    "index_tensor": (lambda m, x, i: x[i], [F(4, 2), Int(4, 3)]),
    "index_two": (lambda m, x, i, j: x[i, j], [F(4, 3), Int(4, 2, 2), Int(3, 2)]),
    "conv2d": (lambda m, x, w: m.nn.functional.conv2d(x, w, padding=1),
               [F(1, 2, 4, 4), F(3, 2, 3, 3)]),
    "conv1d_bias_stride": (lambda m, x, w, b: m.nn.functional.conv1d(x, w, b, stride=2),
                           [F(2, 2, 7), F(4, 2, 3), F(4)]),
    "conv2d_groups": (lambda m, x, w: m.nn.functional.conv2d(x, w, groups=2),
                      [F(1, 4, 3, 3), F(2, 2, 2, 2)]),
    "batch_norm_eval": (lambda m, x, rm, w: m.nn.functional.batch_norm(
        x, rm, rm.abs() + 1, w, None, training=False), [F(2, 3, 4), F(3), F(3)]),
    "batch_norm_train": (lambda m, x: m.nn.functional.batch_norm(x, None, None, training=True),
                         [F(4, 3, 2)]),
    "max_pool2d": (lambda m, x: m.nn.functional.max_pool2d(x, 2), [F(2, 4, 4)]),
    "avg_pool2d": (lambda m, x: m.nn.functional.avg_pool2d(x, 2), [F(1, 2, 4, 4)]),
    "layer_norm": (lambda m, x, w: m.nn.functional.layer_norm(x, (3,), w), [F(2, 3), F(3)]),
    "embedding": (lambda m, i, w: m.nn.functional.embedding(i, w), [Int(5, 3), F(5, 2)]),
    "mse_loss": (lambda m, x, y: m.nn.functional.mse_loss(x, y), [F(4), F(4)]),
    "cross_entropy": (lambda m, x, t: m.nn.functional.cross_entropy(x, t), [F(2, 3), Int(3, 2)]),
    "dropout_eval": (lambda m, x: m.nn.functional.dropout(x, 0.5, training=False), [F(4)]),
    "new_zeros": (lambda m, x: x.new_zeros(2) + x.sum(), [F(3)]),
    "zeros_like": (lambda m, x: m.zeros_like(x) + m.ones_like(x), [F(3)]),
    "clone_copy": (lambda m, x: x.clone().mul_(2).add_(1), [F(3)]),
    "inplace_view": (lambda m, x: x.clone().unsqueeze_(0), [F(3)]),
    "tril": (lambda m, x: m.tril(x), [F(3, 3)]),
    "cross": (lambda m, x, y: m.linalg.cross(x, y), [F(3), F(3)]),
    "kron": (lambda m, x, y: m.kron(x, y), [F(2), F(2)]),
    "outer": (lambda m, x, y: m.outer(x, y), [F(3), F(2)]),
    "diag": (lambda m, x: m.diag(x), [F(3)]),
    "triu": (lambda m, x: m.triu(x, 1), [F(3, 4)]),
    "pad": (lambda m, x: m.nn.functional.pad(x, (1, 2)), [F(2, 3)]),
    "reflect_pad": (lambda m, x: m.nn.functional.pad(x, (1, 1), mode="reflect"), [F(2, 4)]),
    "upsample": (lambda m, x: m.nn.functional.interpolate(x, scale_factor=2), [F(1, 2, 3)]),
    "roll": (lambda m, x: m.roll(x, 1, 1), [F(2, 3)]),
    "roll_flat": (lambda m, x: m.roll(x, 1), [F(2, 3)]),
    "hardswish": (lambda m, x: m.nn.functional.hardswish(x), [F(4)]),
    "floor_divide": (lambda m, x, y: m.floor_divide(x, y.abs() + 1), [F(3), F(3)]),
    "det": (lambda m, x: m.linalg.det(x), [F(3, 3)]),
    "qr": (lambda m, x: m.linalg.qr(x), [F(3, 2)]),
    "pixel_shuffle": (lambda m, x: m.nn.functional.pixel_shuffle(x, 2), [F(4, 1, 2)]),
}


def _make(spec, rng):
    if spec[0] == "f":
        return rng.standard_normal(spec[1])
    return rng.integers(0, spec[2], spec[1])


def _batched_inputs(specs, in_dims, sizes, rng):
    """NumPy inputs with a batch of each size in `sizes` inserted at its in_dim (outermost
    level last in `sizes`)."""
    arrays = []
    for spec, d in zip(specs, in_dims, strict=True):
        a = _make(spec, rng)
        if d is not None:
            for size in sizes:
                a = np.stack([_make(spec, rng) if i else a for i in range(size)], axis=0)
                a = np.moveaxis(a, 0, d if d >= 0 else a.ndim + d)
        arrays.append(a)
    return arrays


def _to(m, arrays):
    # a copy in the arrays' own layout, as torch.tensor keeps it (a view of a sample is
    # possible, or refused, for the same strides in both)
    return [m.from_numpy(np.array(a, order="K")) for a in arrays]


def _same(ours, theirs):
    a_flat = tree_flatten(ours)[0]
    b_flat = torch.utils._pytree.tree_flatten(theirs)[0]
    assert len(a_flat) == len(b_flat)
    for a, b in zip(a_flat, b_flat, strict=True):
        assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-10)


def _in_dims_cases(n):
    cases = [(0,) * n, (-1,) * n]
    for k in range(n):
        cases.append(tuple(1 if i == k else None for i in range(n)))
    return cases


@pytest.mark.parametrize("name", sorted(OPS))
def test_one_level(name: str) -> None:
    fn, specs = OPS[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    for in_dims in _in_dims_cases(len(specs)):
        arrays = _batched_inputs(specs, in_dims, [B1], rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = pf.vmap(lambda *a: fn(pyaten, *a), in_dims=in_dims)(*_to(pyaten, arrays))
        theirs = tf.vmap(lambda *a: fn(torch, *a), in_dims=in_dims)(*_to(torch, arrays))
        _same(ours, theirs)
        # equal to the loop over samples
        samples = []
        for i in range(B1):
            per = [pyaten.tensor(np.take(a, i, axis=d)) if d is not None else pyaten.tensor(a)
                   for a, d in zip(arrays, in_dims, strict=True)]
            samples.append(fn(pyaten, *per))
        first = tree_flatten(ours)[0]
        for j, column in enumerate(zip(*[tree_flatten(s)[0] for s in samples], strict=True)):
            np.testing.assert_allclose(first[j].numpy(), pyaten.stack(column).numpy(),
                                       atol=1e-10)


@pytest.mark.parametrize("name", sorted(OPS))
def test_two_levels(name: str) -> None:
    fn, specs = OPS[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32 + 1)
    n = len(specs)
    inner = tuple(0 for _ in range(n))
    outer = tuple(None if (n > 1 and i == n - 1) else 1 for i in range(n))
    arrays = []
    for spec, d in zip(specs, outer, strict=True):
        shape = (B1, B2, *spec[1]) if d is not None else (B1, *spec[1])
        arrays.append(_make((spec[0], shape, *spec[2:]), rng))

    def run(m, vm):
        return vm(vm(lambda *a: fn(m, *a), in_dims=inner), in_dims=outer)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = run(pyaten, pf.vmap)(*_to(pyaten, arrays))
    theirs = run(torch, tf.vmap)(*_to(torch, arrays))
    _same(ours, theirs)


# --- randomness, chunks, out_dims, pytrees -------------------------------------------------


def test_randomness() -> None:
    x = pyaten.ones(4, 3)
    same = pf.vmap(lambda a: a * pyaten.rand_like(a), randomness="same")(x)
    assert all(pyaten.equal(same[0], same[i]) for i in range(4))
    different = pf.vmap(lambda a: pyaten.rand_like(a), randomness="different")(x)
    assert not pyaten.equal(different[0], different[1])
    factory = pf.vmap(lambda a: a + pyaten.randn(3), randomness="different")(x)
    assert not pyaten.equal(factory[0], factory[1])
    factory = pf.vmap(lambda a: a + pyaten.randint(0, 1000, (3,)), randomness="same")(x)
    assert all(pyaten.equal(factory[0], factory[i]) for i in range(4))
    drop = pf.vmap(lambda a: pyaten.nn.functional.dropout(a, 0.5), randomness="different")(
        pyaten.ones(64, 16))
    assert 0.3 < float((drop == 0).double().mean()) < 0.7


def test_chunk_size_out_dims_and_pytrees() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 3))

    def f(m):
        return lambda d: {"s": d["x"].sin(), "t": (d["x"].sum(), d["x"] * 2)}

    ours = pf.vmap(f(pyaten), out_dims={"s": 1, "t": (0, 1)}, chunk_size=2)(
        {"x": pyaten.tensor(a)})
    theirs = tf.vmap(f(torch), out_dims={"s": 1, "t": (0, 1)}, chunk_size=2)(
        {"x": torch.tensor(a)})
    _same(ours, theirs)
    out = pf.vmap(lambda x: (x, 3), out_dims=(0, None))(pyaten.tensor(a))
    assert out[1] == 3
    unbatched = pf.vmap(lambda x: pyaten.ones(2))(pyaten.tensor(a))
    assert tuple(unbatched.shape) == (5, 2)


def test_vmap_of_grad_and_jacobian_of_vmap() -> None:
    rng = np.random.default_rng(2)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))

    def loss(m):
        return lambda w, x: (x @ w).tanh().sum()

    _same(pf.vmap(pf.grad(loss(pyaten)), in_dims=(None, 0))(pyaten.tensor(w), pyaten.tensor(x)),
          tf.vmap(tf.grad(loss(torch)), in_dims=(None, 0))(torch.tensor(w), torch.tensor(x)))
    _same(pf.jacrev(pf.vmap(lambda v: v.sin() * v))(pyaten.tensor(x[0])),
          tf.jacrev(tf.vmap(lambda v: v.sin() * v))(torch.tensor(x[0])))
    _same(pf.vmap(pf.jacrev(lambda v: v.sin() * v.sum()))(pyaten.tensor(x)),
          tf.vmap(tf.jacrev(lambda v: v.sin() * v.sum()))(torch.tensor(x)))


def test_fallback_warns_and_coverage() -> None:
    with pytest.warns(UserWarning, match="performance drop"):
        pyaten.func._rules._WARNED.clear()
        pf.vmap(lambda x: pyaten.diag(x))(pyaten.ones(2, 3))
    coverage = pf.batching_coverage()
    assert "aten::add.Tensor" in coverage["rule"]
    assert "aten::mm" in coverage["rule"] or "aten::mm.default" in coverage["rule"]
    assert coverage["fallback"]
    assert not set(coverage["rule"]) & set(coverage["fallback"])


# --- errors --------------------------------------------------------------------------------

ERRORS = [
    ("mismatched sizes", lambda m, vm: vm(lambda x, y: x + y)(m.ones(3, 2), m.ones(4, 2))),
    ("in_dim out of range", lambda m, vm: vm(lambda x: x, in_dims=2)(m.ones(3, 2))),
    ("in_dims structure", lambda m, vm: vm(lambda x: x, in_dims=(0, 0))(m.ones(3, 2))),
    ("in_dims list", lambda m, vm: vm(lambda x: x, in_dims=[0])(m.ones(3, 2))),
    ("in_dims None", lambda m, vm: vm(lambda x: x, in_dims=None)(m.ones(3, 2))),
    ("non-tensor input", lambda m, vm: vm(lambda x: x)(3)),
    ("no inputs", lambda m, vm: vm(lambda: 1)()),
    ("0-dim input", lambda m, vm: vm(lambda x: x)(m.ones(()))),
    ("inplace on unbatched", lambda m, vm: vm(lambda x, y: y.copy_(x), in_dims=(0, None))(
        m.ones(3, 2), m.ones(2))),
    ("random in error mode", lambda m, vm: vm(lambda x: m.rand_like(x))(m.ones(3, 2))),
    ("random factory in error mode", lambda m, vm: vm(lambda x: x + m.rand(2))(m.ones(3, 2))),
    ("non-tensor output", lambda m, vm: vm(lambda x: 3)(m.ones(3, 2))),
    ("boolean mask", lambda m, vm: vm(lambda x: x[x > 0].sum())(m.ones(3, 2))),
    ("nonzero", lambda m, vm: vm(lambda x: m.nonzero(x))(m.ones(3, 2))),
    ("item", lambda m, vm: vm(lambda x: x.sum().item())(m.ones(3, 2))),
    ("bad randomness", lambda m, vm: vm(lambda x: x, randomness="foo")(m.ones(3))),
    ("out_dims structure", lambda m, vm: vm(lambda x: x, out_dims=(0, 0))(m.ones(3, 2))),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_as_torch(case) -> None:
    _, program = case
    with pytest.raises(Exception) as theirs:
        program(torch, tf.vmap)
    with pytest.raises(Exception) as ours:
        program(pyaten, pf.vmap)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value).replace("pyaten", "torch") == str(theirs.value)


def test_pyaten_vmap_is_func_vmap() -> None:
    assert pyaten.vmap is pf.vmap
    assert list(itertools.islice(pf.__all__, 1)) == ["vmap"]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_per_sample_nll_loss_gradients(reduction: str, weighted: bool) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 2, 3))
    t = np.array([[0, 2], [1, -100], [2, 2], [-100, -100]])
    w = rng.random(3) + 0.5

    def loss(m, weight):
        def f(a, target):
            out = m.nn.functional.nll_loss(m.log_softmax(a, 1), target, weight=weight,
                                           reduction=reduction)
            return out.sum()

        return f

    ours = pf.vmap(pf.grad_and_value(loss(pyaten, pyaten.tensor(w) if weighted else None)))(
        pyaten.tensor(x), pyaten.tensor(t))
    theirs = tf.vmap(tf.grad_and_value(loss(torch, torch.tensor(w) if weighted else None)))(
        torch.tensor(x), torch.tensor(t))
    if reduction == "mean":  # a sample whose targets are all ignored: 0/0 in both
        ours, theirs = tuple(o[:3] for o in ours), tuple(o[:3] for o in theirs)
    _same(ours, theirs)


# --- property: chains of operators under vmap equal the loop and torch.func.vmap -----------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

CHAIN = [
    lambda m, x: x.sin(),
    lambda m, x: x * 2 + x,
    lambda m, x: x.sum(-1, keepdim=True) - x,
    lambda m, x: m.softmax(x, -1),
    lambda m, x: x.transpose(0, -1),
    lambda m, x: x.cumsum(0),
    lambda m, x: x.unsqueeze(0).squeeze(0).exp().clamp(max=3.0),
    lambda m, x: x.flip(-1) * x.amax(0, keepdim=True),
    lambda m, x: x @ x.transpose(0, -1) if x.dim() == 2 else x.abs(),
    lambda m, x: x.reshape(-1).view(x.shape).contiguous(),
]


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    batch=st.integers(1, 4),
    where=st.integers(0, 3),
    ops=st.lists(st.integers(0, len(CHAIN) - 1), min_size=1, max_size=4),
    seed=st.integers(0, 2**16),
)
def test_property_chains(shape, batch, where, ops, seed) -> None:
    rng = np.random.default_rng(seed)
    in_dim = where % (len(shape) + 1)
    data = np.moveaxis(rng.standard_normal((batch, *shape)), 0, in_dim)

    def run(m):
        def f(x):
            for k in ops:
                x = CHAIN[k](m, x)
            return x

        return f

    ours = pf.vmap(run(pyaten), in_dims=in_dim)(pyaten.tensor(data))
    theirs = tf.vmap(run(torch), in_dims=in_dim)(torch.tensor(data))
    _same(ours, theirs)
    loop = pyaten.stack([run(pyaten)(pyaten.tensor(np.take(data, i, in_dim)))
                         for i in range(batch)])
    np.testing.assert_allclose(ours.numpy(), loop.numpy(), atol=1e-10)


# --- vmap(grad) over the table: per-sample gradients of every differentiable operator -----

NOT_DIFFERENTIABLE = {"eq", "argmax", "argmax_flat", "count_nonzero", "new_zeros",
                      "floor_divide"}
def _scalar(m, out):
    flat = (tree_flatten(out)[0] if m is pyaten else torch.utils._pytree.tree_flatten(out)[0])
    total = None
    for o in flat:
        if o.is_floating_point():
            term = (o * o).sum()
            total = term if total is None else total + term
    return total


@pytest.mark.parametrize("name", sorted(n for n, (_, specs) in OPS.items()
                                        if specs[0][0] == "f"
                                        and n not in NOT_DIFFERENTIABLE))
def test_vmap_of_grad(name: str) -> None:
    fn, specs = OPS[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32 + 2)
    in_dims = tuple(0 for _ in specs)
    arrays = _batched_inputs(specs, in_dims, [B1], rng)

    def per_sample(m, transform):
        return transform(lambda x, *rest: _scalar(m, fn(m, x, *rest)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = pf.vmap(per_sample(pyaten, pf.grad), in_dims=in_dims)(*_to(pyaten, arrays))
    theirs = tf.vmap(per_sample(torch, tf.grad), in_dims=in_dims)(*_to(torch, arrays))
    _same(ours, theirs)
