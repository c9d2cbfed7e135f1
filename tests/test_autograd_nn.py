"""Gradients of gradients and forward-mode tangents of the normalisation operators, against
torch's (float64).

Second order: the first backward is taken with `create_graph=True` and a cotangent that itself
requires grad, then a random weighting of the first gradients is pulled back to every input
and to that cotangent (what `gradgradcheck` differentiates), in both libraries. Forward mode:
the same random tangents go into both libraries' dual tensors and the output tangents must
agree. The cases cover layer_norm (with and without weight/bias), batch_norm (training and
evaluation, with and without affine parameters), group_norm and instance_norm.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
import torch
from _helpers import assert_same, run_both, same_error
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten

Case = Callable[..., Any]  # (library, *tensors) -> output tensor(s)

RTOL = 1e-9
ATOL = 1e-10


def _make(lib: Any, arrays: Sequence[np.ndarray | None], requires_grad: bool) -> list:
    return [None if a is None else lib.tensor(a, dtype=lib.float64, requires_grad=requires_grad)
            for a in arrays]


def _second_order(lib: Any, fn: Case, arrays: Sequence[np.ndarray | None], seed: int) -> list:
    """The gradients, with respect to the inputs and the cotangent, of a random weighting of
    the first-order input gradients."""
    inputs = _make(lib, arrays, True)
    live = [t for t in inputs if t is not None]
    out = fn(lib, *inputs)
    rng = np.random.default_rng(seed)
    cot = lib.tensor(rng.standard_normal(tuple(out.shape)), dtype=lib.float64,
                     requires_grad=True)
    first = lib.autograd.grad(out, live, cot, create_graph=True)
    weights = [lib.tensor(rng.standard_normal(tuple(g.shape)), dtype=lib.float64)
               for g in first]
    total = sum((g * w).sum() for g, w in zip(first, weights))
    return list(lib.autograd.grad(total, [*live, cot], allow_unused=True))


def check_second_order(fn: Case, arrays: Sequence[np.ndarray | None], seed: int = 0) -> None:
    """Same second-order gradients as torch's, or the same error where torch raises."""
    pair = run_both(lambda: _second_order(pyaten, fn, arrays, seed),
                    lambda: _second_order(torch, fn, arrays, seed))
    if pair is None:
        return
    ours, theirs = pair
    assert len(ours) == len(theirs)
    for i, (o, t) in enumerate(zip(ours, theirs)):
        if t is None or o is None:
            assert o is None and t is None, (i, o, t)
            continue
        assert_same(o, t.detach(), rtol=RTOL, atol=ATOL)


def _tangents(lib: Any, fn: Case, arrays: Sequence[np.ndarray | None],
              tangents: Sequence[np.ndarray | None]) -> list:
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        inputs = []
        for a, t in zip(arrays, tangents):
            if a is None:
                inputs.append(None)
                continue
            primal = lib.tensor(a, dtype=lib.float64)
            inputs.append(primal if t is None else
                          fw.make_dual(primal, lib.tensor(t, dtype=lib.float64)))
        out = fn(lib, *inputs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [fw.unpack_dual(o).tangent for o in outs]


def check_forward(fn: Case, arrays: Sequence[np.ndarray | None], seed: int = 1,
                  skip: Sequence[int] = ()) -> None:
    """Forward-mode tangents against torch's; inputs at positions in `skip` get none."""
    rng = np.random.default_rng(seed)
    tangents = [None if a is None or i in skip else rng.standard_normal(a.shape)
                for i, a in enumerate(arrays)]
    ours = _tangents(pyaten, fn, arrays, tangents)
    theirs = _tangents(torch, fn, arrays, tangents)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert_same(o, t, rtol=RTOL, atol=ATOL)


def _randn(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape)


RNG = np.random.default_rng(20)
X3 = _randn(RNG, 3, 4, 5)
X4 = _randn(RNG, 2, 3, 4, 2)
X2 = _randn(RNG, 6, 3)
W5, B5 = _randn(RNG, 5), _randn(RNG, 5)
W20, B20 = _randn(RNG, 4, 5), _randn(RNG, 4, 5)
W3, B3 = _randn(RNG, 3), _randn(RNG, 3)
W6, B6 = _randn(RNG, 6), _randn(RNG, 6)
X6 = _randn(RNG, 2, 6, 5)
RUNNING_MEAN = _randn(RNG, 3)
RUNNING_VAR = RNG.random(3) + 0.5


def _layer_norm(shape: tuple[int, ...]) -> Case:
    return lambda m, x, w=None, b=None: m.nn.functional.layer_norm(x, shape, w, b)


def _batch_norm(training: bool) -> Case:
    def call(m: Any, x: Any, w: Any = None, b: Any = None) -> Any:
        mean = m.tensor(RUNNING_MEAN, dtype=m.float64)
        var = m.tensor(RUNNING_VAR, dtype=m.float64)
        return m.nn.functional.batch_norm(x, mean, var, w, b, training=training, eps=1e-3)
    return call


def _batch_norm_no_stats(m: Any, x: Any, w: Any = None, b: Any = None) -> Any:
    return m.nn.functional.batch_norm(x, None, None, w, b, training=True)


def _group_norm(groups: int) -> Case:
    return lambda m, x, w=None, b=None: m.nn.functional.group_norm(x, groups, w, b, eps=1e-4)


def _instance_norm(m: Any, x: Any, w: Any = None, b: Any = None) -> Any:
    return m.nn.functional.instance_norm(x, weight=w, bias=b)


def _instance_norm_stats(m: Any, x: Any, w: Any = None, b: Any = None) -> Any:
    mean = m.tensor(RUNNING_MEAN, dtype=m.float64)
    var = m.tensor(RUNNING_VAR, dtype=m.float64)
    return m.nn.functional.instance_norm(x, mean, var, w, b, use_input_stats=False)


def _legit(training: bool) -> Case:
    def call(m: Any, x: Any, w: Any = None, b: Any = None) -> Any:
        mean = m.tensor(RUNNING_MEAN, dtype=m.float64)
        var = m.tensor(RUNNING_VAR, dtype=m.float64)
        return m.ops.aten._native_batch_norm_legit(x, w, b, mean, var, training, 0.1, 1e-5)[0]
    return call


def _legit_no_stats(m: Any, x: Any, w: Any = None, b: Any = None) -> Any:
    return m.ops.aten._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5)[0]


CASES: dict[str, tuple[Case, list]] = {
    "batch_norm-legit-train": (_legit(True), [X4, W3, B3]),
    "batch_norm-legit-eval": (_legit(False), [X4, W3, B3]),
    "batch_norm-legit-no-stats": (_legit_no_stats, [X4, W3, B3]),
    "layer_norm-affine": (_layer_norm((5,)), [X3, W5, B5]),
    "layer_norm-weight": (_layer_norm((5,)), [X3, W5]),
    "layer_norm-bias": (_layer_norm((5,)), [X3, None, B5]),
    "layer_norm-plain": (_layer_norm((4, 5)), [X3]),
    "layer_norm-2d-affine": (_layer_norm((4, 5)), [X3, W20, B20]),
    "batch_norm-train-affine": (_batch_norm(True), [X4, W3, B3]),
    "batch_norm-train-weight": (_batch_norm(True), [X4, W3]),
    "batch_norm-train-plain": (_batch_norm(True), [X4]),
    "batch_norm-train-bias": (_batch_norm(True), [X4, None, B3]),
    "batch_norm-eval-bias": (_batch_norm(False), [X4, None, B3]),
    "batch_norm-train-2d": (_batch_norm(True), [X2, W3, B3]),
    "batch_norm-no-stats": (_batch_norm_no_stats, [X2, W3, B3]),
    "batch_norm-eval-affine": (_batch_norm(False), [X4, W3, B3]),
    "batch_norm-eval-plain": (_batch_norm(False), [X4]),
    "group_norm-affine": (_group_norm(3), [X6, W6, B6]),
    "group_norm-plain": (_group_norm(2), [X6]),
    "group_norm-one-group": (_group_norm(1), [X6, W6]),
    "instance_norm-affine": (_instance_norm, [X4, W3, B3]),
    "instance_norm-plain": (_instance_norm, [X4]),
    "instance_norm-running-stats": (_instance_norm_stats, [X4, W3, B3]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_order(name: str) -> None:
    fn, arrays = CASES[name]
    check_second_order(fn, arrays)


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_mode(name: str) -> None:
    fn, arrays = CASES[name]
    check_forward(fn, arrays)


@pytest.mark.parametrize("name", ["layer_norm-affine", "batch_norm-train-affine",
                                  "group_norm-affine"])
def test_forward_mode_input_tangent_only(name: str) -> None:
    fn, arrays = CASES[name]
    check_forward(fn, arrays, skip=(1, 2))


def test_forward_mode_weight_tangent_only() -> None:
    fn, arrays = CASES["batch_norm-eval-affine"]
    check_forward(fn, arrays, skip=(0,))


def _native_group_norm(m: Any, x: Any, w: Any = None, b: Any = None) -> Any:
    return m.native_group_norm(x, w, b, 2, 6, 5, 3, 1e-5)


def test_native_group_norm_statistics_tangents() -> None:
    check_forward(_native_group_norm, [X6, W6, B6])


def _native_group_norm_grad(lib: Any, used: Sequence[int], create_graph: bool) -> Any:
    x = lib.tensor(X6, dtype=lib.float64, requires_grad=True)
    outs = lib.native_group_norm(x, None, None, 2, 6, 5, 3, 1e-5)
    loss = sum((outs[i] * lib.arange(1.0, outs[i].numel() + 1, dtype=lib.float64)
                .reshape(outs[i].shape)).sum() for i in used)
    return lib.autograd.grad(loss, x, allow_unused=True, create_graph=create_graph)[0]


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("used", [(0,), (1,), (2,), (1, 2), (0, 1), (0, 2), (0, 1, 2)])
def test_native_group_norm_statistics_gradients(used: tuple[int, ...],
                                                create_graph: bool) -> None:
    # As in PyTorch, the gradients of the mean and rstd outputs count only when both got one.
    ours = _native_group_norm_grad(pyaten, used, create_graph)
    theirs = _native_group_norm_grad(torch, used, create_graph)
    if theirs is None:
        assert ours is None
    else:
        assert_same(ours, theirs.detach(), rtol=RTOL, atol=ATOL)


def _native_group_norm_stats_second(lib: Any) -> list:
    x = lib.tensor(X6, dtype=lib.float64, requires_grad=True)
    w = lib.tensor(W6, dtype=lib.float64, requires_grad=True)
    out, mean, rstd = lib.native_group_norm(x, w, None, 2, 6, 5, 3, 1e-5)
    loss = (out * out).sum() + (mean * rstd).sum()
    gx, gw = lib.autograd.grad(loss, (x, w), create_graph=True)
    return list(lib.autograd.grad((gx * gx).sum() + gw.sum(), (x, w)))


def test_native_group_norm_statistics_second_order() -> None:
    for o, t in zip(_native_group_norm_stats_second(pyaten),
                    _native_group_norm_stats_second(torch)):
        assert_same(o, t, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name,node", [
    ("layer_norm-affine", "NativeLayerNormBackwardBackward0"),
    ("batch_norm-train-affine", "NativeBatchNormBackwardBackward0"),
    ("batch_norm-eval-affine", "NativeBatchNormBackwardBackward0"),
])
def test_double_backward_node(name: str, node: str) -> None:
    fn, arrays = CASES[name]
    for lib in (pyaten, torch):
        inputs = _make(lib, arrays, True)
        out = fn(lib, *inputs)
        (g,) = lib.autograd.grad(out.exp().sum(), inputs[0], create_graph=True)
        assert g.grad_fn.name() == node


def test_first_gradient_has_no_graph_without_create_graph() -> None:
    fn, arrays = CASES["layer_norm-affine"]
    inputs = _make(pyaten, arrays, True)
    (g,) = pyaten.autograd.grad(fn(pyaten, *inputs).sum(), inputs[0])
    assert g.grad_fn is None and not g.requires_grad


def test_gradgradcheck_batch_norm() -> None:
    x = pyaten.tensor(_randn(RNG, 3, 2, 2), dtype=pyaten.float64, requires_grad=True)
    w = pyaten.tensor(_randn(RNG, 2), dtype=pyaten.float64, requires_grad=True)
    assert pyaten.autograd.gradgradcheck(
        lambda a, b: pyaten.nn.functional.batch_norm(a, None, None, b, training=True), [x, w])


def test_forward_mode_eval_running_stats_with_tangent() -> None:
    def call(lib: Any) -> Any:
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(lib.tensor(X4, dtype=lib.float64),
                             lib.tensor(X4, dtype=lib.float64))
            mean = fw.make_dual(lib.tensor(RUNNING_MEAN, dtype=lib.float64),
                                lib.ones(3, dtype=lib.float64))
            var = lib.tensor(RUNNING_VAR, dtype=lib.float64)
            return lib.nn.functional.batch_norm(x, mean, var, training=False)

    same_error(lambda: call(pyaten), lambda: call(torch))


@settings(max_examples=12, deadline=None)
@given(
    batch=st.integers(1, 3),
    channels=st.integers(1, 3),
    inner=st.integers(2, 4),
    affine=st.booleans(),
    which=st.sampled_from(["layer", "batch-train", "batch-eval", "group"]),
    seed=st.integers(0, 2**16),
)
def test_second_order_property(batch: int, channels: int, inner: int, affine: bool,
                               which: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, channels, inner))
    if which == "layer":
        params = [rng.standard_normal(inner), rng.standard_normal(inner)] if affine else []
        fn = _layer_norm((inner,))
    elif which == "group":
        params = ([rng.standard_normal(channels), rng.standard_normal(channels)]
                  if affine else [])
        fn = _group_norm(channels)
    else:
        params = ([rng.standard_normal(channels), rng.standard_normal(channels)]
                  if affine else [])
        mean, var = rng.standard_normal(channels), rng.random(channels) + 0.5

        def fn(m: Any, x: Any, w: Any = None, b: Any = None) -> Any:
            return m.nn.functional.batch_norm(
                x, m.tensor(mean, dtype=m.float64), m.tensor(var, dtype=m.float64), w, b,
                training=which == "batch-train")
    check_second_order(fn, [x, *params], seed)
    check_forward(fn, [x, *params], seed)


# --- grid sampling: grid_sampler_2d_backward / grid_sampler_3d_backward double backward -----

GRID_RNG = np.random.default_rng(31)
GRID_INPUTS = {
    2: (_randn(GRID_RNG, 2, 2, 3, 4), GRID_RNG.uniform(-1.2, 1.2, (2, 3, 2, 2))),
    3: (_randn(GRID_RNG, 1, 2, 2, 3, 4), GRID_RNG.uniform(-1.2, 1.2, (1, 2, 2, 2, 3))),
}
GRID_CASES = [
    (dims, mode, padding, align)
    for dims, modes in ((2, ("bilinear", "nearest", "bicubic")), (3, ("bilinear", "nearest")))
    for mode in modes
    for padding in ("zeros", "border", "reflection")
    for align in (False, True)
]


def _grid_sample(mode: str, padding: str, align: bool) -> Case:
    return lambda m, x, g: m.nn.functional.grid_sample(x, g, mode=mode, padding_mode=padding,
                                                        align_corners=align)


@pytest.mark.parametrize("dims,mode,padding,align", GRID_CASES)
def test_grid_sample_second_order(dims: int, mode: str, padding: str, align: bool) -> None:
    x, g = GRID_INPUTS[dims]
    check_second_order(_grid_sample(mode, padding, align), [x, g], seed=dims)


def _grid_partial(lib: Any, mode: str, which: str) -> list:
    """Second order with only one of grad_input / grad_grid carried on (the other unused)."""
    x_np, g_np = GRID_INPUTS[2]
    x = lib.tensor(x_np, dtype=lib.float64, requires_grad=True)
    g = lib.tensor(g_np, dtype=lib.float64, requires_grad=True)
    out = lib.nn.functional.grid_sample(x, g, mode=mode, align_corners=False)
    cot = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)),
                     dtype=lib.float64, requires_grad=True)
    gx, gg = lib.autograd.grad(out, (x, g), cot, create_graph=True)
    picked = gx if which == "input" else gg
    return list(lib.autograd.grad((picked * picked).sum(), (cot, x, g), allow_unused=True))


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("which", ["input", "grid"])
def test_grid_sample_second_order_one_gradient(mode: str, which: str) -> None:
    # Which gradients exist (None) follows PyTorch: e.g. no input gradient from grad_input.
    for o, t in zip(_grid_partial(pyaten, mode, which), _grid_partial(torch, mode, which)):
        assert (o is None) == (t is None)
        if t is not None:
            assert_same(o, t, rtol=RTOL, atol=ATOL)


def _grid_third_order(lib: Any, mode: str) -> list:
    x_np, g_np = GRID_INPUTS[2]
    x = lib.tensor(x_np, dtype=lib.float64, requires_grad=True)
    g = lib.tensor(g_np, dtype=lib.float64, requires_grad=True)
    out = lib.nn.functional.grid_sample(x, g, mode=mode, padding_mode="border",
                                        align_corners=False)
    cot = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)),
                     dtype=lib.float64, requires_grad=True)
    first = lib.autograd.grad(out, (x, g), cot, create_graph=True)
    second = lib.autograd.grad(sum((t * t).sum() for t in first), (x, g, cot),
                               create_graph=True)
    return list(lib.autograd.grad(sum((t * t).sum() for t in second), (x, g, cot)))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_third_order(mode: str) -> None:
    for o, t in zip(_grid_third_order(pyaten, mode), _grid_third_order(torch, mode)):
        assert_same(o, t, rtol=1e-8, atol=1e-9)


def _norm_third_order(lib: Any, name: str) -> list:
    fn, arrays = CASES[name]
    inputs = _make(lib, arrays, True)
    live = [t for t in inputs if t is not None]
    out = fn(lib, *inputs)
    first = lib.autograd.grad((out * out.sin()).sum(), live, create_graph=True)
    second = lib.autograd.grad(sum((t * t).sum() for t in first), live, create_graph=True)
    return list(lib.autograd.grad(sum((t * t * t).sum() for t in second), live))


@pytest.mark.parametrize("name", ["layer_norm-affine", "batch_norm-train-affine",
                                  "batch_norm-eval-affine", "group_norm-affine"])
def test_third_order(name: str) -> None:
    for o, t in zip(_norm_third_order(pyaten, name), _norm_third_order(torch, name)):
        assert_same(o, t, rtol=1e-8, atol=1e-9)


def test_group_norm_bias_without_weight_create_graph() -> None:
    # PyTorch's differentiable group-norm backward shapes the bias gradient like the absent
    # weight and fails; the same error here.
    def call(lib: Any) -> Any:
        x = lib.tensor(X6, dtype=lib.float64, requires_grad=True)
        b = lib.tensor(B6, dtype=lib.float64, requires_grad=True)
        y = lib.nn.functional.group_norm(x, 3, None, b)
        return lib.autograd.grad((y * y).sum(), (x, b), create_graph=True)

    same_error(lambda: call(pyaten), lambda: call(torch))
