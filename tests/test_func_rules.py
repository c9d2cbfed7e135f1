"""vmap on the FuncTorchBatched key (pyaten/func/_key.py): the key set of a BatchedTensor,
which calls the key's kernel batches itself and which go below it, what a trace shows; the
batching rules of the pooling family by planes, against torch.func.vmap (PyTorch 2.13)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.func as tf

import pyaten
import pyaten.func as pf
from pyaten.dispatch import trace
from pyaten.dispatch.keys import DispatchKeySet
from pyaten.func import _rules


def _pair(shape, seed=0, unit=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    if unit:
        a = np.abs(a) % 1
    return pyaten.tensor(a), torch.tensor(a)


def _notes(recorded) -> list[tuple[str, str]]:
    found = []

    def walk(node):
        found.extend((node.operator, n["ran"]) for n in node.notes if n["kind"] == "vmap")
        for child in node.children:
            walk(child)

    for node in recorded.nodes:
        walk(node)
    return found


def test_batched_tensor_keys() -> None:
    seen = []

    def f(x):
        seen.append(DispatchKeySet.from_raw(x._keyset))
        return x

    pf.vmap(f)(pyaten.zeros(2, 3))
    keys = {k.name for k in seen[0]}
    # torch's BatchedTensor: its device's keys and FuncTorchBatched; pyaten's also carries
    # the layer's back key (below autograd) and Python (for calls inside a handler)
    assert {"FuncTorchBatched", "FuncTorchDynamicLayerBackMode", "CPU", "AutogradCPU"} <= keys
    assert "PythonTLSSnapshot" not in keys


def test_trace_names_rule_composite_and_fallback() -> None:
    x, w = pyaten.randn(4, 3), pyaten.randn(5, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with trace() as recorded:
            pf.vmap(lambda a: pyaten.diag(pyaten.nn.functional.linear(a, w).relu()))(x)
    notes = _notes(recorded)
    assert ("aten::linear", "rule linear (whole composite)") in notes
    assert ("aten::relu", "rule pointwise") in notes
    assert ("aten::diag", "decomposed (CompositeImplicitAutograd)") in notes
    assert any(ran == "per-sample fallback loop" for _, ran in notes)


def test_trace_autograd_first_under_vmap_grad() -> None:
    x = pyaten.randn(4, 3)
    with trace() as recorded:
        pf.vmap(pf.grad(lambda a: (a.sin() * 2).sum()))(x)
    notes = _notes(recorded)
    assert ("aten::sin", "autograd first, batched below autograd") in notes
    assert ("aten::sin", "rule pointwise") in notes  # on FuncTorchDynamicLayerBackMode


@pytest.mark.parametrize("in_dims", [(0, None), (None, 0), (0, 0)])
def test_matmul_whole_rule(in_dims) -> None:
    a_shape = (3, 4, 5) if in_dims[0] == 0 else (4, 5)
    b_shape = (3, 5, 2) if in_dims[1] == 0 else (5, 2)
    (pa, ta), (pb, tb) = _pair(a_shape), _pair(b_shape, 1)
    got = pf.vmap(pyaten.matmul, in_dims=in_dims)(pa, pb)
    want = tf.vmap(torch.matmul, in_dims=in_dims)(ta, tb)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_linear_whole_rule_and_batched_weight() -> None:
    (pa, ta), (pw, tw), (pc, tc) = _pair((3, 4, 5)), _pair((6, 5), 2), _pair(6, 3)
    got = pf.vmap(pyaten.nn.functional.linear, in_dims=(0, None, None))(pa, pw, pc)
    want = tf.vmap(torch.nn.functional.linear, in_dims=(0, None, None))(ta, tw, tc)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    # a batched weight: linear decomposes, and its parts are batched
    (pw3, tw3) = _pair((3, 6, 5), 4)
    got = pf.vmap(pyaten.nn.functional.linear)(pa, pw3)
    want = tf.vmap(torch.nn.functional.linear)(ta, tw3)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_grad_of_vmap_records_through_the_values() -> None:
    (px, tx), (pw, tw) = _pair((4, 3)), _pair((2, 3), 1)
    pw.requires_grad_(True)
    tw.requires_grad_(True)

    def run(lib, func, x, w):
        out = func.vmap(lambda a: lib.nn.functional.linear(a, w).tanh())(x)
        out.sum().backward()
        return w.grad

    np.testing.assert_allclose(run(pyaten, pf, px, pw).numpy(), run(torch, tf, tx, tw).numpy(),
                               rtol=1e-5, atol=1e-6)


def _aten(lib, name):
    return getattr(lib.ops.aten, name)


# name, the call with the module, argument shapes (batch first), in_dims
PLANES = [
    ("adaptive_max_pool3d", lambda m, x: _aten(m, "adaptive_max_pool3d")(x, [2, 2, 2]),
     [(3, 2, 4, 4, 4)], 0),
    ("adaptive_max_pool3d 5-d", lambda m, x: _aten(m, "adaptive_max_pool3d")(x, [2, 1, 2]),
     [(3, 2, 2, 4, 4, 4)], 0),
    ("fractional_max_pool2d", lambda m, x, s: _aten(m, "fractional_max_pool2d")(
        x, [2, 2], [3, 3], s), [(3, 2, 6, 6), (3, 1, 2, 2)], 0),
    ("fractional_max_pool2d 4-d", lambda m, x, s: _aten(m, "fractional_max_pool2d")(
        x, [2, 2], [3, 3], s), [(3, 2, 2, 6, 6), (3, 2, 2, 2)], 0),
    ("fractional_max_pool2d shared samples", lambda m, x, s: _aten(m, "fractional_max_pool2d")(
        x, [2, 2], [3, 3], s), [(3, 2, 2, 6, 6), (2, 2, 2)], (0, None)),
    ("fractional_max_pool3d", lambda m, x, s: _aten(m, "fractional_max_pool3d")(
        x, [2, 2, 2], [2, 2, 2], s), [(3, 2, 5, 5, 5), (3, 1, 2, 3)], 0),
]


@pytest.mark.parametrize("case", PLANES, ids=[c[0] for c in PLANES])
def test_planes_rules_against_torch(case) -> None:
    name, fn, shapes, in_dims = case
    pairs = [_pair(s, i, unit=i > 0) for i, s in enumerate(shapes)]
    before = dict(_rules.FALLBACK_CALLS)
    got = pf.vmap(lambda *a: fn(pyaten, *a), in_dims=in_dims)(*[p for p, _ in pairs])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch runs some of these through its fallback
        want = tf.vmap(lambda *a: fn(torch, *a), in_dims=in_dims)(*[t for _, t in pairs])
    assert _rules.FALLBACK_CALLS == before
    for g, w in zip(got, want, strict=True):
        assert g.dtype.itemsize == w.dtype.itemsize and tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-6)


def _max_unpool(dims):
    def fn(m, x):
        F = m.nn.functional
        pool = F.max_pool2d if dims == 2 else F.max_pool3d
        unpool = F.max_unpool2d if dims == 2 else F.max_unpool3d
        out, idx = pool(x, 2, return_indices=True)
        return unpool(out, idx, 2)

    return fn


def _frac(m, x):
    samples = m.full((1, 2, 2), 0.3)
    return m.nn.functional.fractional_max_pool2d(x, 2, output_size=3, _random_samples=samples)


# per-sample gradients through the pooling backward operators (and the unpools forward)
BACKWARD = [
    ("max_unpool2d", _max_unpool(2), (3, 2, 4, 4)),
    ("max_unpool3d", _max_unpool(3), (3, 2, 2, 4, 4, 4)),
    ("max_pool2d", lambda m, x: m.nn.functional.max_pool2d(x, 2), (3, 2, 4, 4)),
    ("max_pool3d", lambda m, x: m.nn.functional.max_pool3d(x, 2), (3, 1, 2, 4, 4, 4)),
    ("avg_pool2d", lambda m, x: m.nn.functional.avg_pool2d(x, 2), (3, 2, 2, 4, 4)),
    ("avg_pool3d", lambda m, x: m.nn.functional.avg_pool3d(x, 2), (3, 2, 4, 4, 4)),
    ("adaptive_max_pool2d", lambda m, x: m.nn.functional.adaptive_max_pool2d(x, 2),
     (3, 2, 4, 4)),
    ("adaptive_max_pool3d", lambda m, x: m.nn.functional.adaptive_max_pool3d(x, 2),
     (3, 2, 4, 4, 4)),
    ("adaptive_avg_pool2d", lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, 3),
     (3, 2, 2, 5, 5)),
    ("adaptive_avg_pool3d", lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, 3),
     (3, 2, 5, 5, 5)),
    ("fractional_max_pool2d", _frac, (3, 2, 6, 6)),
]


@pytest.mark.parametrize("case", BACKWARD, ids=[c[0] for c in BACKWARD])
def test_pooling_per_sample_grads_against_torch(case) -> None:
    _, fn, shape = case
    px, tx = _pair(shape)
    before = dict(_rules.FALLBACK_CALLS)
    got = pf.vmap(pf.grad(lambda x: fn(pyaten, x).sum()))(px)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = tf.vmap(tf.grad(lambda x: fn(torch, x).sum()))(tx)
    assert _rules.FALLBACK_CALLS == before
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_coverage_lists_the_new_rules() -> None:
    coverage = pf.batching_coverage()
    for name in ("adaptive_max_pool3d", "fractional_max_pool2d", "fractional_max_pool3d",
                 "max_unpool2d", "max_unpool3d", "fractional_max_pool2d_backward",
                 "adaptive_max_pool3d_backward", "max_pool2d_with_indices_backward"):
        assert f"aten::{name}" in coverage["rule"], name
    assert "aten::stft" in coverage["decomposed"]


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("items", [None, 1, 3])
def test_nll_loss_unweighted_values_and_per_sample_grads(reduction, items) -> None:
    shape = (4, 5) if items is None else (4, items, 5)
    px, tx = _pair(shape)
    labels = np.random.default_rng(1).integers(0, 5, shape[:-1])
    labels[1] = -100  # a sample (or all its items) ignored
    if items == 3:
        labels[2, 0] = -100
    py, ty = pyaten.tensor(labels), torch.tensor(labels)

    def loss(lib):
        def f(x, y):
            out = lib.nn.functional.cross_entropy(x, y, reduction=reduction)
            return out.sum() if reduction == "none" else out
        return f

    got = pf.vmap(loss(pyaten))(px, py)
    want = tf.vmap(loss(torch))(tx, ty)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    got = pf.vmap(pf.grad(loss(pyaten)))(px, py)
    want = tf.vmap(tf.grad(loss(torch)))(tx, ty)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


# Derivative formulas that chose a path by reading values (`.item()`) take the path right
# for every value on a BatchedTensor (PyTorch's isTensorSubclassLike), so vmap(grad) of
# these runs; the samples hold zeros, ties and NaNs to reach every case.
_READING = np.array([[1.5, -2.0, 0.5, 3.0], [0.0, 2.0, -1.0, 0.5], [0.0, 1.0, 0.0, 2.0],
                     [2.0, 2.0, np.nan, -1.0], [np.nan, 1.0, np.nan, 1.0]])
READING_FORMULAS = [
    ("prod", lambda lib, x: x.prod()),
    ("prod.dim", lambda lib, x: x.reshape(2, 2).prod(1)),
    ("prod.dim_keepdim", lambda lib, x: x.reshape(2, 2).prod(0, keepdim=True)),
    ("cumprod", lambda lib, x: x.cumprod(0)),
    ("cumprod.2d", lambda lib, x: x.reshape(2, 2).cumprod(1)),
    ("det", lambda lib, x: lib.linalg.det(x.reshape(2, 2))),  # the third is singular
    ("max", lambda lib, x: x.max()),
    ("min", lambda lib, x: x.min()),
    ("median", lambda lib, x: x.median()),
    ("nanmedian", lambda lib, x: x.nanmedian()),
]


@pytest.mark.parametrize("case", READING_FORMULAS, ids=[c[0] for c in READING_FORMULAS])
def test_vmap_grad_of_value_reading_formulas(case) -> None:
    _, fn = case
    rows = _READING if case[0] in ("max", "min", "median", "nanmedian") else _READING[:3]

    def loss(lib):
        return lambda x: (fn(lib, x) * fn(lib, x)).sum()

    want = tf.vmap(tf.grad(loss(torch)))(torch.tensor(rows))
    got = pf.vmap(pf.grad(loss(pyaten)))(pyaten.tensor(rows))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12,
                               equal_nan=True)
    # and the same gradients one sample at a time, outside vmap (the value-reading path)
    for i in range(len(rows)):
        one = pf.grad(loss(pyaten))(pyaten.tensor(rows[i]))
        np.testing.assert_allclose(one.numpy(), want[i].numpy(), rtol=1e-12, atol=1e-12,
                                   equal_nan=True)


def test_vmap_grad_of_quantile_composition() -> None:
    # quantile's differentiable composition ranks with tensor operations (no value read)
    rows = np.array([[0.5, -1.0, 2.0, 0.25, 3.0], [1.0, np.nan, -2.0, 0.0, 4.0],
                     [2.0, 2.0, 1.0, -1.0, 0.5]])

    def loss(lib, name, q, interpolation):
        def f(x):
            out = getattr(lib, name)(x, q, dim=0, interpolation=interpolation)
            return (out.nan_to_num() ** 2).sum()
        return f

    for name in ("quantile", "nanquantile"):
        for interpolation in ("linear", "lower", "higher", "midpoint", "nearest"):
            for q in (0.3, [0.0, 0.4, 1.0]):
                tq = torch.tensor(q, dtype=torch.float64) if isinstance(q, list) else q
                pq = pyaten.tensor(q, dtype=pyaten.float64) if isinstance(q, list) else q
                want = tf.vmap(tf.grad(loss(torch, name, tq, interpolation)))(
                    torch.tensor(rows))
                got = pf.vmap(pf.grad(loss(pyaten, name, pq, interpolation)))(
                    pyaten.tensor(rows))
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12,
                                           atol=1e-14)


LINALG_CHECKED = [  # composite kernels that check LAPACK's `info` (_linalg_check_errors)
    ("inv", lambda lib, m: lib.linalg.inv(m), False),
    ("cholesky", lambda lib, m: lib.linalg.cholesky(m), True),
    ("solve", lambda lib, m: lib.linalg.solve(m, m[0]), False),
    ("logdet", lambda lib, m: lib.logdet(m), True),
]


@pytest.mark.parametrize("case", LINALG_CHECKED, ids=[c[0] for c in LINALG_CHECKED])
def test_vmap_of_info_checked_linalg(case) -> None:
    _, fn, spd = case
    a = np.random.default_rng(3).standard_normal((3, 4, 4))
    if spd:
        a = a @ a.transpose(0, 2, 1) + 4 * np.eye(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for tmap, pmap in ((lambda f: f, lambda f: f),
                           (lambda f: tf.grad(lambda m: (f(m) ** 2).sum()),
                            lambda f: pf.grad(lambda m: (f(m) ** 2).sum()))):
            want = tf.vmap(tmap(lambda m: fn(torch, m)))(torch.tensor(a))
            got = pf.vmap(pmap(lambda m: fn(pyaten, m)))(pyaten.tensor(a))
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["inv", "cholesky"])
def test_vmap_of_info_checked_linalg_error_names_the_sample(name) -> None:
    a = np.stack([np.eye(3), np.zeros((3, 3)), np.eye(3)])
    with pytest.raises(RuntimeError) as want:
        tf.vmap(getattr(torch.linalg, name))(torch.tensor(a))
    with pytest.raises(RuntimeError) as got:
        pf.vmap(getattr(pyaten.linalg, name))(pyaten.tensor(a))
    assert str(got.value) == str(want.value)
    assert "(Batch element 1)" in str(got.value)


@pytest.mark.parametrize("shapes", [((4,), (4,)), ((2, 4), (2, 4)), ((2, 4), (4,)),
                                    ((4,), (2, 4)), ((1, 4), (3, 1))])
def test_masked_select_with_an_unbatched_mask(shapes) -> None:
    x_shape, mask_shape = shapes
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, *x_shape))
    mask = rng.standard_normal(mask_shape) > 0
    mask.reshape(-1)[0] = True
    tm, pm = torch.tensor(mask), pyaten.tensor(mask)
    want = tf.vmap(lambda t: t.masked_select(tm))(torch.tensor(x))
    got = pf.vmap(lambda t: t.masked_select(pm))(pyaten.tensor(x))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = tf.vmap(tf.grad(lambda t: (t.masked_select(tm) ** 2).sum()))(torch.tensor(x))
        got = pf.vmap(pf.grad(lambda t: (t.masked_select(pm) ** 2).sum()))(pyaten.tensor(x))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_masked_select_with_a_batched_mask_is_refused_as_torch() -> None:
    x, mask = np.ones((3, 4)), np.ones((3, 4), dtype=bool)
    with pytest.raises(RuntimeError) as want:
        tf.vmap(torch.masked_select)(torch.tensor(x), torch.tensor(mask))
    with pytest.raises(RuntimeError) as got:
        pf.vmap(pyaten.masked_select)(pyaten.tensor(x), pyaten.tensor(mask))
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("r,with_replacement", [(0, False), (1, False), (2, False), (3, True)])
def test_combinations_batches_through_masked_select(r, with_replacement) -> None:
    x = np.random.default_rng(6).standard_normal((3, 4))
    want = tf.vmap(lambda t: torch.combinations(t, r, with_replacement))(torch.tensor(x))
    got = pf.vmap(lambda t: pyaten.combinations(t, r, with_replacement))(pyaten.tensor(x))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unfold_moves_its_dimension_past_the_batch(dim) -> None:
    x = np.random.default_rng(7).standard_normal((3, 5, 12))
    want = tf.vmap(lambda t: t.unfold(dim, 3, 2))(torch.tensor(x))
    got = pf.vmap(lambda t: t.unfold(dim, 3, 2))(pyaten.tensor(x))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("center", [False, True])
def test_stft_frames_each_sample(center) -> None:
    # stft's composite frames the signal with `unfold` (its `dimension` past the batch)
    x = np.random.default_rng(8).standard_normal((3, 2, 40))
    window = np.sin(np.pi * np.arange(8) / 8) ** 2  # a Hann window
    tw, pw = torch.tensor(window), pyaten.tensor(window)

    def run(lib, window):
        return lambda t: lib.stft(t, 16, hop_length=4, win_length=8, window=window,
                                  center=center, return_complex=True)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = tf.vmap(run(torch, tw))(torch.tensor(x))
        got = pf.vmap(run(pyaten, pw))(pyaten.tensor(x))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


_GRID = np.arange(12.0).reshape(3, 4)
AS_STRIDED = [  # (id, the view, the batch as the sample sees it, in_dims)
    ("offset0", lambda t: t.as_strided((2,), (1,), 0), lambda a: a, 0),
    ("offset1", lambda t: t.as_strided((2,), (1,), 1), lambda a: a, 0),
    ("no_offset", lambda t: t.as_strided((2,), (2,)), lambda a: a, 0),
    ("sliced", lambda t: t.as_strided((2,), (1,), 1), lambda a: a[:, 1:], 0),
    ("batch_not_in_front", lambda t: t.as_strided((2,), (1,), 0),
     lambda a: a.t().contiguous().t(), 0),
    ("in_dims_1", lambda t: t.as_strided((2,), (1,), 1), lambda a: a, 1),
    ("fresh", lambda t: (t * 2).as_strided((2, 2), (1, 2), 1), lambda a: a, 0),
    ("outside", lambda t: t.as_strided((3,), (2,), 0), lambda a: a, 0),
    ("before_the_sample", lambda t: t.as_strided((2,), (1,), 0), lambda a: a[:, 1:], 0),
    ("lengths", lambda t: t.as_strided((2, 2), (1,)), lambda a: a, 0),
]


def _result_or_error(fn):
    try:
        return fn().detach().numpy()
    except RuntimeError as e:
        return str(e)


@pytest.mark.parametrize("case", AS_STRIDED, ids=[c[0] for c in AS_STRIDED])
def test_as_strided_views_each_sample_from_its_batch_stride(case) -> None:
    _, view, batch, in_dims = case
    want = _result_or_error(lambda: tf.vmap(view, in_dims=in_dims)(batch(torch.tensor(_GRID))))
    got = _result_or_error(lambda: pf.vmap(view, in_dims=in_dims)(batch(pyaten.tensor(_GRID))))
    if isinstance(want, str):
        assert got == want
    else:
        np.testing.assert_array_equal(got, want)


def test_as_strided_over_two_levels_and_under_grad() -> None:
    cube = np.arange(24.0).reshape(2, 3, 4)
    for in_dims in (0, 1):
        want = tf.vmap(tf.vmap(lambda t: t.as_strided((2,), (1,), 1)), in_dims=in_dims)(
            torch.tensor(cube))
        got = pf.vmap(pf.vmap(lambda t: t.as_strided((2,), (1,), 1)), in_dims=in_dims)(
            pyaten.tensor(cube))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    want = tf.vmap(tf.grad(lambda t: (t.as_strided((2, 2), (1, 2), 0) ** 2).sum()))(
        torch.tensor(_GRID))
    got = pf.vmap(pf.grad(lambda t: (t.as_strided((2, 2), (1, 2), 0) ** 2).sum()))(
        pyaten.tensor(_GRID))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def _outcome(fn):
    try:
        out = fn()
    except RuntimeError as e:
        return str(e).replace("pyaten.", "torch.")
    return [t.detach().numpy() for t in (out if isinstance(out, tuple) else (out,))]


def _same_outcome(got, want) -> None:
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
        return
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


LSTSQ = [  # (A's shape, b's shape, in_dims, driver): batched and unbatched, vector and matrix
    ((3, 5, 3), (3, 5, 2), (0, 0), None), ((3, 5, 3), (5, 2), (0, None), None),
    ((5, 3), (3, 5, 2), (None, 0), None), ((3, 5, 3), (3, 5, 2), (0, 0), "gelsd"),
    ((3, 2, 5, 3), (3, 2, 5, 1), (0, 0), "gels"), ((3, 5, 3), (5,), (0, None), None),
    ((3, 5, 3), (3, 5), (0, 0), None), ((3, 5), (3, 5), (0, 0), None),
    ((3, 2, 5, 3), (3, 5, 2), (0, 0), None),
]


@pytest.mark.parametrize("case", LSTSQ, ids=[str(i) for i in range(len(LSTSQ))])
def test_lstsq_batches_as_torch(case) -> None:
    a_shape, b_shape, in_dims, driver = case
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)

    def run(lib, vmap):
        return _outcome(lambda: vmap(lambda x, y: lib.linalg.lstsq(x, y, driver=driver),
                                     in_dims=in_dims)(lib.tensor(a), lib.tensor(b)))

    _same_outcome(run(pyaten, pf.vmap), run(torch, tf.vmap))


def test_ctc_loss_folds_the_batch_into_its_own() -> None:
    t, n, c, s = 12, 2, 5, 4
    rng = np.random.default_rng(10)
    logits = rng.standard_normal((3, t, n, c))
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    targets = rng.integers(1, c, (3, n, s))
    for reduction in ("none", "sum"):  # (torch's "mean" reads the lengths' data: refused)
        def loss(lib, reduction=reduction):
            return lambda lp, tg: lib.nn.functional.ctc_loss(lp, tg, [t] * n, [s, 3],
                                                             reduction=reduction)
        for in_dims in ((0, 0), (0, None)):
            tg_t = torch.tensor(targets if in_dims[1] == 0 else targets[0])
            tg_p = pyaten.tensor(targets if in_dims[1] == 0 else targets[0])
            want = tf.vmap(loss(torch), in_dims=in_dims)(torch.tensor(log_probs), tg_t)
            got = pf.vmap(loss(pyaten), in_dims=in_dims)(pyaten.tensor(log_probs), tg_p)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = tf.vmap(tf.grad(loss(torch)), in_dims=(0, None))(torch.tensor(log_probs),
                                                                 torch.tensor(targets[0]))
        got = pf.vmap(pf.grad(loss(pyaten)), in_dims=(0, None))(pyaten.tensor(log_probs),
                                                                pyaten.tensor(targets[0]))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)])
def test_householder_product_with_one_side_batched(in_dims) -> None:
    rng = np.random.default_rng(11)
    a, tau = rng.standard_normal((3, 5, 4)), rng.standard_normal((3, 4))
    a = a if in_dims[0] == 0 else a[0]
    tau = tau if in_dims[1] == 0 else tau[0]
    want = tf.vmap(torch.linalg.householder_product, in_dims=in_dims)(torch.tensor(a),
                                                                     torch.tensor(tau))
    got = pf.vmap(pyaten.linalg.householder_product, in_dims=in_dims)(pyaten.tensor(a),
                                                                      pyaten.tensor(tau))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_real_of_a_conjugate_marked_batch_under_grad() -> None:
    # hfft's derivative takes the real part of a conjugate-marked (ifft) result
    x = np.random.default_rng(12).standard_normal((3, 5, 6))

    def f(lib):
        return lambda t: (lib.fft.hfft(t, n=8, dim=1, norm="ortho") ** 2).sum()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = tf.vmap(tf.grad(f(torch)))(torch.tensor(x))
        got = pf.vmap(pf.grad(f(pyaten)))(pyaten.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_vander_of_scalars() -> None:
    # linalg.vander takes a 0-dim x as one point (as torch), so it batches over scalars
    x = np.array([1.0, 2.0, 3.0])
    for n in (2, 4):
        want = tf.vmap(lambda t, n=n: torch.linalg.vander(t, N=n))(torch.tensor(x))
        got = pf.vmap(lambda t, n=n: pyaten.linalg.vander(t, N=n))(pyaten.tensor(x))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(RuntimeError, match="N must be greater than 1"):
        pyaten.linalg.vander(pyaten.tensor(2.0))


SPACED = [(op, steps, dtype, form) for op in ("linspace", "logspace") for steps in (0, 1, 5)
          for dtype in (None, "float32", "int64") for form in ("tensors", "end", "start")]


@pytest.mark.parametrize("case", SPACED, ids=["-".join(map(str, c)) for c in SPACED])
def test_linspace_logspace_from_batched_ends(case) -> None:
    op, steps, dtype, form = case
    starts, ends = [1.0, 2.0, -3.0], [4.0, 0.5, 2.0]

    def run(lib, vmap):
        kwargs = {} if dtype is None else {"dtype": getattr(lib, dtype)}
        f = getattr(lib, op)
        s, e = lib.tensor(starts, dtype=lib.float64), lib.tensor(ends, dtype=lib.float64)
        if form == "tensors":
            return vmap(lambda a, b: f(a, b, steps, **kwargs))(s, e)
        if form == "end":  # start batched, end a number
            return vmap(lambda a: f(a, 2.5, steps, **kwargs))(s)
        return vmap(lambda b: f(-1, b, steps, **kwargs))(e)

    want, got = run(torch, tf.vmap), run(pyaten, pf.vmap)
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_zero_dim_samples_reduced_over_dim_0() -> None:
    x = np.array([1.0, 5.0, 3.0])
    for keepdim in (False, True):
        want = tf.vmap(lambda t, k=keepdim: torch.aminmax(t, dim=0, keepdim=k))(torch.tensor(x))
        got = pf.vmap(lambda t, k=keepdim: pyaten.aminmax(t, dim=0, keepdim=k))(
            pyaten.tensor(x))
        for g, w in zip(got, want, strict=True):
            assert tuple(g.shape) == tuple(w.shape)
            np.testing.assert_array_equal(g.numpy(), w.numpy())
        want = tf.vmap(lambda t, k=keepdim: torch.quantile(t, 0.5, dim=0, keepdim=k))(
            torch.tensor(x))
        got = pf.vmap(lambda t, k=keepdim: pyaten.quantile(t, 0.5, dim=0, keepdim=k))(
            pyaten.tensor(x))
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


_INDICES = [[1, 0, 2], [2, 1, 0]]
DATA_DEPENDENT = [  # refused as torch refuses them, or batched/looped as torch's
    ("unique", lambda lib: lambda t: lib.unique(t)),
    ("unique_consecutive", lambda lib: lambda t: lib.unique_consecutive(t)),
    ("nonzero", lambda lib: lambda t: lib.nonzero(t)),
    ("bincount_same_sizes", lambda lib: lambda t: lib.bincount(t, minlength=3)),
    ("bincount_other_sizes", lambda lib: lambda t: lib.bincount(t * t)),
    ("repeat_interleave", lambda lib: lambda t: lib.repeat_interleave(t)),
    ("one_hot", lambda lib: lambda t: lib.nn.functional.one_hot(t, 3)),
    ("one_hot_no_count", lambda lib: lambda t: lib.nn.functional.one_hot(t)),
    ("one_hot_float", lambda lib: lambda t: lib.nn.functional.one_hot(t.float(), 3)),
]


@pytest.mark.parametrize("case", DATA_DEPENDENT, ids=[c[0] for c in DATA_DEPENDENT])
def test_data_dependent_operators_as_torch(case) -> None:
    _, fn = case

    def run(lib, vmap):
        try:
            out = vmap(fn(lib))(lib.tensor(_INDICES))
        except RuntimeError as e:
            return str(e)
        return tuple(out.shape), str(out.dtype).split(".")[-1], out.tolist()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert run(pyaten, pf.vmap) == run(torch, tf.vmap)
