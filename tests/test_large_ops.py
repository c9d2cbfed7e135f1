"""The compiled float32 loops of the large kernels (pyaten/native/kernels/vector_loops.py,
Note: vectorised float32 exp): exp, sigmoid, silu and its gradient, (log_)softmax, cross
entropy and max_pool2d's backward, each with the compiled path forced on and forced off,
against PyTorch (special values included) and against each other."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _helpers import assert_same, from_torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
from pyaten.native import compiled
from pyaten.native.kernels import vector_loops

SPECIAL = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 88.72, 88.73, -87.3, -103.9,
           -104.5, 1e-8, -1e-8, 20.0, -20.0]


@pytest.fixture(params=[True, False], ids=["compiled", "numpy"])
def path(request):
    if request.param:
        pytest.importorskip("numba")
    compiled.set_enabled(request.param)
    yield request.param
    compiled.set_enabled(None)


def _values(n: int, seed: int = 0, scale: float = 30.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g) * scale
    return torch.cat([x, torch.tensor(SPECIAL)])


@pytest.mark.parametrize("name", ["exp", "sigmoid"])
@pytest.mark.parametrize("shape", [(5000,), (3, 7, 11), ()])
def test_unary_against_torch(path, name, shape):
    x = _values(int(np.prod(shape)) if shape else 1).reshape(-1)[: int(np.prod(shape))]
    x = x.reshape(shape)
    assert_same(getattr(pyaten, name)(from_torch(x)), getattr(torch, name)(x))
    # in place and out= take the same loop
    mine, theirs = from_torch(x.clone()), x.clone()
    getattr(mine, f"{name}_")()
    getattr(theirs, f"{name}_")()
    assert_same(mine, theirs)
    out_mine, out_theirs = pyaten.empty(shape), torch.empty(shape)
    getattr(pyaten, name)(from_torch(x), out=out_mine)
    getattr(torch, name)(x, out=out_theirs)
    assert_same(out_mine, out_theirs)


def test_exp_special_values_and_ulps(path):
    x = _values(20000)
    ours = pyaten.exp(from_torch(x)).numpy()
    theirs = torch.exp(x).numpy()
    exact = np.exp(x.numpy().astype(np.float64))
    assert np.array_equal(np.isnan(ours), np.isnan(theirs))
    assert np.array_equal(np.isinf(ours), np.isinf(theirs))
    assert np.array_equal(ours == 0, theirs == 0)
    normal = np.isfinite(exact) & (exact > 1.2e-38) & (exact < 3.4e38)
    ulps = np.abs(ours[normal] - exact[normal]) / np.spacing(ours[normal].astype(np.float32))
    assert ulps.max() <= (1.0 if path else 2.5)  # (NumPy's own exp: its bound)


def test_strided_and_float64_inputs_take_numpy(path):
    x = _values(9000).reshape(-1, 2)
    assert_same(pyaten.exp(from_torch(x)[:, 0]), torch.exp(x[:, 0]))
    assert_same(pyaten.sigmoid(from_torch(x).t()), torch.sigmoid(x.t()))
    assert_same(pyaten.exp(from_torch(x.double())), torch.exp(x.double()))


@pytest.mark.parametrize("name", ["silu", "sigmoid", "softmax", "log_softmax"])
def test_activation_forward_backward(path, name):
    x = _values(6000, scale=8.0)[:6000].reshape(60, 100).requires_grad_()
    mine = from_torch(x.detach()).requires_grad_()
    if name in ("softmax", "log_softmax"):
        fn_torch, fn_mine = getattr(torch, name), getattr(pyaten, name)
        theirs, ours = fn_torch(x, 1), fn_mine(mine, 1)
    else:
        theirs = getattr(torch.nn.functional, name)(x)
        ours = getattr(pyaten.nn.functional, name)(mine)
    assert_same(ours, theirs)
    g = torch.randn(theirs.shape, generator=torch.Generator().manual_seed(3))
    theirs.backward(g)
    ours.backward(from_torch(g))
    assert_same(mine.grad, x.grad)


@pytest.mark.parametrize("dim", [1, -1, 0])
def test_softmax_rows_special_values(path, dim):
    x = _values(8192, scale=10.0)[:8192].reshape(64, 128)
    x[3, 5] = float("nan")
    x[7, :] = -float("inf")
    x[9, 3] = float("inf")
    x[11, :] = 1e30
    for name in ("softmax", "log_softmax"):
        assert_same(getattr(pyaten, name)(from_torch(x), dim), getattr(torch, name)(x, dim))


def test_cross_entropy(path):
    g = torch.Generator().manual_seed(5)
    logits = torch.randn(256, 100, generator=g, requires_grad=True)
    target = torch.randint(0, 100, (256,), generator=g)
    mine = from_torch(logits.detach()).requires_grad_()
    theirs = torch.nn.functional.cross_entropy(logits, target)
    ours = pyaten.nn.functional.cross_entropy(mine, from_torch(target))
    assert_same(ours, theirs)
    theirs.backward()
    ours.backward()
    assert_same(mine.grad, logits.grad)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=1, padding=1),
                                dict(kernel_size=2, ceil_mode=True),
                                dict(kernel_size=2, padding=1)], ids=str)
@pytest.mark.parametrize("size", [12, 13])
def test_max_pool2d_backward(path, kw, size):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(8, 16, size, size, generator=g)
    x[0, 0, 1, 1] = float("nan")
    x[0, 0, 2:4, 2:4] = float("nan")  # two NaNs in a window: the last wins
    x[1, 1, 4:6, 4:6] = -float("inf")
    x[1, 2, 4:6, 4:6] = 1.0  # ties: the first wins
    x = x.requires_grad_()
    mine = from_torch(x.detach()).requires_grad_()
    theirs = torch.nn.functional.max_pool2d(x, **kw)
    ours = pyaten.nn.functional.max_pool2d(mine, **kw)
    assert_same(ours, theirs)
    grad = torch.randn(theirs.shape, generator=g)
    theirs.backward(grad)
    ours.backward(from_torch(grad))
    assert_same(mine.grad, x.grad)


def test_max_pool2d_backward_bad_index_writes_nothing():
    pytest.importorskip("numba")
    grad = np.ones((2, 4), np.float32)
    grad_input = np.full((2, 9), 7.0, np.float32)
    compiled.set_enabled(True)
    try:
        bad = np.array([[0, 1, 2, 9], [0, 1, 2, 3]], np.int64)
        assert not vector_loops.max_pool2d_backward(grad, bad, grad_input)
        assert (grad_input == 7.0).all()
        good = np.array([[0, 0, 2, 8], [0, 1, 2, 3]], np.int64)
        assert vector_loops.max_pool2d_backward(grad, good, grad_input)
        assert grad_input[0].tolist() == [2, 0, 1, 0, 0, 0, 0, 0, 1]
    finally:
        compiled.set_enabled(None)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.one_of(st.floats(-120, 100, width=32), st.sampled_from(SPECIAL)),
                min_size=1, max_size=64))
def test_compiled_equals_numpy_path_within_an_ulp(values):
    pytest.importorskip("numba")
    x = np.array(values, np.float32)
    results = {}
    for forced in (True, False):
        compiled.set_enabled(forced)
        try:
            t = pyaten.from_numpy(x.copy())
            results[forced] = (pyaten.exp(t).numpy(), pyaten.sigmoid(t).numpy())
        finally:
            compiled.set_enabled(None)
    for fast, slow in zip(results[True], results[False]):
        np.testing.assert_allclose(fast, slow, rtol=2.5e-7, atol=1e-44)


@pytest.mark.parametrize("options", [{}, {"weight_decay": 0.1}, {"maximize": True},
                                     {"amsgrad": True}], ids=str)
def test_adam_steps(path, options):
    g = torch.Generator().manual_seed(7)
    weights = [torch.randn(64, 70, generator=g), torch.randn(64, generator=g)]
    theirs = [torch.nn.Parameter(w.clone()) for w in weights]
    ours = [pyaten.nn.Parameter(from_torch(w.clone())) for w in weights]
    opt_theirs = torch.optim.Adam(theirs, lr=0.01, **options)
    opt_ours = pyaten.optim.Adam(ours, lr=0.01, **options)
    for _ in range(4):
        for a, b in zip(ours, theirs):
            grad = torch.randn(b.shape, generator=g)
            b.grad = grad.clone()
            a.grad = from_torch(grad.clone())
        opt_theirs.step()
        opt_ours.step()
    for a, b in zip(ours, theirs):
        assert_same(a.detach(), b.detach())
        assert a._version == b._version
        for key in ("exp_avg", "exp_avg_sq"):
            assert_same(opt_ours.state[a][key], opt_theirs.state[b][key])


def test_adam_under_a_dispatch_mode_runs_the_operators(path):
    from pyaten.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    p = pyaten.nn.Parameter(pyaten.ones(5000))
    p.grad = pyaten.ones(5000)
    opt = pyaten.optim.Adam([p])
    with Record():
        opt.step()
    assert any("addcdiv_" in name for name in seen), seen


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_relu_and_threshold_backward(path, dtype):
    x = _values(6000, scale=3.0).to(dtype)
    grad = _values(6000, seed=4).to(dtype).flip(0)  # NaN, inf and zeros in both
    assert_same(pyaten.relu(from_torch(x)), torch.relu(x))
    assert torch.equal(torch.signbit(torch.relu(x)), torch.from_numpy(
        np.signbit(pyaten.relu(from_torch(x)).numpy())))
    mine = from_torch(x.clone())
    pyaten.relu_(mine)
    assert_same(mine, torch.relu(x))
    for threshold in (0, 0.5, -1.0):
        assert_same(pyaten.ops.aten.threshold_backward(from_torch(grad), from_torch(x), threshold),
                    torch.ops.aten.threshold_backward(grad, x, threshold))
    # broadcast and strided operands take the general path
    assert_same(pyaten.ops.aten.threshold_backward(from_torch(grad[:100]), from_torch(x[:1]), 0),
                torch.ops.aten.threshold_backward(grad[:100], x[:1], 0))
    assert_same(pyaten.ops.aten.threshold_backward(from_torch(grad)[::2], from_torch(x)[::2], 0),
                torch.ops.aten.threshold_backward(grad[::2], x[::2], 0))


@pytest.mark.parametrize("kw", [dict(padding=1), dict(stride=2, padding=1),
                                dict(dilation=2, padding=2), dict(stride=(2, 1))], ids=str)
def test_conv2d_input_gradient_channels_last_columns(path, kw):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(8, 16, 9, 9, generator=g, requires_grad=True)
    w = torch.randn(12, 16, 3, 3, generator=g, requires_grad=True)
    b = torch.randn(12, generator=g, requires_grad=True)
    xm = from_torch(x.detach()).requires_grad_()
    wm = from_torch(w.detach()).requires_grad_()
    bm = from_torch(b.detach()).requires_grad_()
    theirs = torch.nn.functional.conv2d(x, w, b, **kw)
    ours = pyaten.nn.functional.conv2d(xm, wm, bm, **kw)
    assert_same(ours, theirs)
    grad = torch.randn(theirs.shape, generator=g)
    theirs.backward(grad)
    ours.backward(from_torch(grad))
    assert_same(xm.grad, x.grad)
    # (a sum over 8 samples x 81 positions of O(10) terms: float32 order differences)
    assert_same(wm.grad, w.grad, rtol=1e-4, atol=1e-4)
    assert_same(bm.grad, b.grad, rtol=1e-4, atol=1e-4)


def test_gelu_forward_backward(path):
    x = _values(6000, scale=4.0).requires_grad_()
    mine = from_torch(x.detach()).requires_grad_()
    theirs = torch.nn.functional.gelu(x)
    ours = pyaten.nn.functional.gelu(mine)
    assert_same(ours, theirs)
    g = torch.randn(theirs.shape, generator=torch.Generator().manual_seed(3))
    theirs.backward(g)
    ours.backward(from_torch(g))
    assert_same(mine.grad, x.grad)


@pytest.mark.parametrize("exponent", [2, 3, 0.5, -0.5, -1, -2, 2.0, -1.0, 1.5])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_pow_tensor_scalar_special_exponents(exponent, dtype):
    x = _values(3000, scale=3.0).to(dtype)
    assert_same(pyaten.pow(from_torch(x), exponent), torch.pow(x, exponent))
    mine, theirs = from_torch(x.clone()), x.clone()
    mine[::2].pow_(exponent)  # in place, strided
    theirs[::2].pow_(exponent)
    assert_same(mine, theirs)
    out = pyaten.empty(x.shape, dtype=from_torch(x).dtype)
    pyaten.pow(from_torch(x), exponent, out=out)
    assert_same(out, torch.pow(x, exponent))


def test_erf(path):
    x = torch.cat([_values(6000, scale=2.0), torch.tensor([0.999, 1.0, 1.001, -1.0, 1e-30])])
    assert_same(pyaten.erf(from_torch(x)), torch.erf(x))
    ours = pyaten.erf(from_torch(x)).numpy().astype(np.float64)
    exact = __import__("scipy.special", fromlist=["erf"]).erf(x.numpy().astype(np.float64))
    finite = np.isfinite(exact) & (exact != 0)
    assert (np.abs(ours - exact)[finite] <= 2.6e-7 * np.abs(exact[finite]) + 1e-45).all()
    assert np.signbit(pyaten.erf(pyaten.tensor([-0.0] * 5000)).numpy()).all()


@pytest.mark.parametrize("name", ["_softmax", "_log_softmax"])
def test_softmax_out_is_the_input(path, name):
    x = _values(8192, scale=5.0)[:8192].reshape(64, 128)
    mine = from_torch(x.clone())
    getattr(pyaten.ops.aten, name).out(mine, 1, False, out=mine)
    theirs = x.clone()
    getattr(torch.ops.aten, name).out(theirs, 1, False, out=theirs)
    assert_same(mine, theirs)
