"""The layer modules (activations, conv, pooling, norms, dropout, embeddings, resampling,
padding, fold) against torch.

Each case builds the same module in both libraries (`m` is pyaten or torch), copies torch's
parameters and buffers into ours, and compares repr, state_dict keys and shapes, forward
values and input/parameter gradients in train and eval mode. Errors compare by type and
message. Random layers (dropout, RReLU) are checked by their statistics instead.
"""

from __future__ import annotations

import math
import pickle
import re

import numpy as np
import pytest
import torch
from _helpers import assert_same, from_torch, run_both, same_error
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten

TOL = {"rtol": 1e-4, "atol": 1e-5}


def make_input(shape: tuple, low: float = -2.0, high: float = 2.0, seed: int = 0):
    """The same float32 input as a (pyaten, torch) pair, both requiring grad."""
    values = np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)
    ours = pyaten.from_numpy(values.copy()).requires_grad_()
    theirs = torch.from_numpy(values.copy()).requires_grad_()
    return ours, theirs


def pair(build):
    """build(m) in both libraries, torch's state copied into ours."""
    torch.manual_seed(0)
    theirs = build(torch)
    ours = build(pyaten)
    state = {k: from_torch(v) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)
    return ours, theirs


def check_module(build, shape, *, modes=("train", "eval"), low=-2.0, high=2.0, tol=TOL):
    """repr, state_dict, forward and backward of build(m) on an input of `shape`."""
    ours, theirs = pair(build)
    assert repr(ours) == repr(theirs)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in theirs.state_dict().items()
    ]
    for mode in modes:
        ours.train(mode == "train")
        theirs.train(mode == "train")
        x, tx = make_input(shape, low, high)
        out, tout = ours(x), theirs(tx)
        assert_same(out, tout, **tol)
        weights = np.random.default_rng(1).standard_normal(tuple(tout.shape)).astype(np.float32)
        (out * pyaten.from_numpy(weights.copy())).sum().backward()
        (tout * torch.from_numpy(weights)).sum().backward()
        assert_same(x.grad, tx.grad, **tol)
        for (name, p), (tname, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
            assert name == tname
            assert_same(p.grad, tp.grad, **tol)
            p.grad, tp.grad = None, None
        for (_, b), (_, tb) in zip(ours.named_buffers(), theirs.named_buffers()):
            assert_same(b, tb, **tol)
    return ours, theirs


# --- activations ------------------------------------------------------------------------

ACTIVATIONS = [
    lambda m: m.nn.ReLU(), lambda m: m.nn.ReLU6(), lambda m: m.nn.LeakyReLU(0.2),
    lambda m: m.nn.ELU(alpha=0.7), lambda m: m.nn.SELU(), lambda m: m.nn.CELU(1.5),
    lambda m: m.nn.GELU(), lambda m: m.nn.GELU(approximate="tanh"), lambda m: m.nn.SiLU(),
    lambda m: m.nn.Mish(), lambda m: m.nn.Softplus(beta=2.0, threshold=3.0),
    lambda m: m.nn.Softshrink(0.3), lambda m: m.nn.Hardshrink(), lambda m: m.nn.Hardtanh(-0.5, 1.5),
    lambda m: m.nn.Hardsigmoid(), lambda m: m.nn.Hardswish(), lambda m: m.nn.LogSigmoid(),
    lambda m: m.nn.Tanhshrink(), lambda m: m.nn.Threshold(0.1, 20.0), lambda m: m.nn.GLU(),
    lambda m: m.nn.GLU(dim=1), lambda m: m.nn.PReLU(), lambda m: m.nn.PReLU(4, init=0.1),
    lambda m: m.nn.Softmax(dim=1), lambda m: m.nn.LogSoftmax(dim=-1), lambda m: m.nn.Softmin(0),
    lambda m: m.nn.Softsign(), lambda m: m.nn.Tanh(), lambda m: m.nn.Sigmoid(),
    lambda m: m.nn.Softmax2d(), lambda m: m.nn.RReLU(0.1, 0.3),
]


@pytest.mark.parametrize("index", range(len(ACTIVATIONS)))
def test_activation(index):
    # RReLU is random in training: compare it in eval mode only.
    modes = ("eval",) if index == len(ACTIVATIONS) - 1 else ("train", "eval")
    check_module(ACTIVATIONS[index], (2, 4, 3, 2), modes=modes)


@pytest.mark.parametrize("name", [
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "SiLU", "Mish", "Hardsigmoid",
    "Hardswish", "Hardtanh", "RReLU",
])
def test_activation_inplace(name):
    def scenario(m):
        module = getattr(m.nn, name)(inplace=True).eval()
        x = m.linspace(-3, 3, 12).reshape(3, 4)
        y = module(x)
        return repr(module), y is x, x

    ours, theirs = run_both(lambda: scenario(pyaten), lambda: scenario(torch))
    assert ours[0] == theirs[0] and ours[1] == theirs[1]
    assert_same(ours[2], theirs[2], **TOL)


@pytest.mark.parametrize("build", [
    lambda m: m.nn.Hardtanh(2.0, 1.0),
    lambda m: m.nn.Softmax2d()(m.ones(2, 2)),
    lambda m: m.nn.PReLU(3)(m.ones(2, 4)),
    lambda m: m.nn.GLU()(m.ones(2, 3)),
])
def test_activation_errors(build):
    same_error(lambda: build(pyaten), lambda: build(torch))


def test_softmax_without_dim_warns_and_picks_legacy_dim():
    def scenario(m):
        with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
            return m.nn.Softmax()(m.arange(6.0).reshape(2, 3))

    assert_same(scenario(pyaten), scenario(torch), **TOL)


def test_rrelu_training_slopes_lie_in_range():
    module = pyaten.nn.RReLU(0.1, 0.3)
    x = -pyaten.ones(4000)
    slopes = -module(x).numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 0.01
    assert np.allclose(-module.eval()(x).numpy(), 0.2)


# --- convolutions -----------------------------------------------------------------------

CONVS = [
    (lambda m: m.nn.Conv1d(4, 6, 3), (2, 4, 9)),
    (lambda m: m.nn.Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2), (2, 4, 11)),
    (lambda m: m.nn.Conv1d(4, 4, 4, padding="same", padding_mode="circular"), (2, 4, 9)),
    (lambda m: m.nn.Conv2d(3, 4, 3), (2, 3, 7, 6)),
    (lambda m: m.nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=(1, 2), bias=False), (2, 3, 7, 6)),
    (lambda m: m.nn.Conv2d(4, 6, 3, padding=1, groups=2, padding_mode="reflect"), (2, 4, 5, 5)),
    (lambda m: m.nn.Conv2d(2, 3, 3, padding=2, dilation=2, padding_mode="replicate"), (1, 2, 6, 6)),
    (lambda m: m.nn.Conv2d(2, 3, (2, 4), padding="same", dilation=(2, 1)), (2, 2, 6, 7)),
    (lambda m: m.nn.Conv2d(2, 3, (2, 3), padding="same", padding_mode="replicate"), (1, 2, 5, 6)),
    (lambda m: m.nn.Conv2d(2, 3, 3, padding="valid"), (2, 6, 6)),
    (lambda m: m.nn.Conv3d(2, 3, 2, stride=(1, 2, 1), padding=1), (1, 2, 4, 5, 4)),
    (lambda m: m.nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1, output_padding=1), (2, 4, 5)),
    (lambda m: m.nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2, dilation=2), (2, 4, 4, 3)),
    (lambda m: m.nn.ConvTranspose2d(3, 2, (2, 3), bias=False), (3, 4, 4)),
    (lambda m: m.nn.ConvTranspose3d(2, 2, 2, stride=2), (1, 2, 2, 3, 2)),
    (lambda m: m.nn.Conv3d(2, 2, (1, 2, 3), padding=(0, 1, 1), padding_mode="circular"),
     (1, 2, 3, 4, 5)),
    (lambda m: m.nn.ConvTranspose1d(2, 4, 3, groups=2, bias=False), (2, 5)),
]


@pytest.mark.parametrize("index", range(len(CONVS)))
def test_conv(index):
    build, shape = CONVS[index]
    check_module(build, shape)


def test_conv_transpose_output_size():
    ours, theirs = pair(lambda m: m.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1))
    x, tx = make_input((1, 2, 4, 4))
    for size in ([8, 8], [1, 3, 7, 8], (7, 7)):
        assert_same(ours(x, output_size=size), theirs(tx, output_size=size), **TOL)
    for size in ([9, 8], [3, 7, 8], [5, 5]):
        same_error(lambda s=size: ours(x, output_size=s), lambda s=size: theirs(tx, output_size=s))


@pytest.mark.parametrize("build", [
    lambda m: m.nn.Conv2d(3, 4, 3, groups=0),
    lambda m: m.nn.Conv2d(3, 4, 3, groups=2),
    lambda m: m.nn.Conv2d(4, 3, 3, groups=2),
    lambda m: m.nn.Conv2d(3, 4, 3, padding="full"),
    lambda m: m.nn.Conv2d(3, 4, 3, stride=2, padding="same"),
    lambda m: m.nn.Conv1d(3, 4, 3, padding_mode="mirror"),
    lambda m: m.nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect"),
    lambda m: m.nn.Conv2d(3, 4, 3)(m.ones(2, 2, 5, 5)),
])
def test_conv_errors(build):
    same_error(lambda: build(pyaten), lambda: build(torch), message=False)
    assert _message(build, pyaten) == _message(build, torch)


def _message(build, m) -> str:
    """The error's text with any {set} sorted: PyTorch prints Python sets, whose order
    depends on how the literal was compiled."""
    try:
        build(m)
    except Exception as error:  # noqa: BLE001 - the message is what we compare
        text = str(error).replace("torch.", "pyaten.")
        return re.sub(r"\{[^}]*\}", lambda found: str(sorted(found.group(0)[1:-1].split(", "))),
                      text)
    raise AssertionError("no error")


@pytest.mark.parametrize("build", [
    lambda m: m.nn.Conv1d(6, 4, 3, groups=2),
    lambda m: m.nn.Conv2d(3, 8, (3, 5)),
    lambda m: m.nn.Conv3d(2, 2, 2, bias=False),
    lambda m: m.nn.ConvTranspose2d(6, 3, 3, groups=3),  # fan_in from weight.size(1)
    lambda m: m.nn.Linear(5, 3),
])
def test_default_init_bounds(build):
    """kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the weight;
    the bias uses the same bound. fan_in = weight.size(1) * prod(kernel_size)."""
    module = build(pyaten)
    weight = module.weight
    fan_in = weight.shape[1] * math.prod(weight.shape[2:])
    bound = 1 / math.sqrt(fan_in)
    values = weight.detach().numpy().ravel()
    assert np.abs(values).max() <= bound
    reference = build(torch)
    assert tuple(weight.shape) == tuple(reference.weight.shape)
    torch_bound = float(reference.weight.detach().abs().max())
    assert torch_bound <= bound  # the same formula in torch
    if values.size >= 60:
        assert np.abs(values).max() > 0.8 * bound  # spread over the whole range
        assert abs(values.mean()) < 0.25 * bound
    if module.bias is not None:
        assert np.abs(module.bias.detach().numpy()).max() <= bound


def test_conv_init_statistics():
    """A large layer's weight is uniform: variance bound^2 / 3."""
    module = pyaten.nn.Conv2d(16, 32, 3)
    bound = 1 / math.sqrt(16 * 9)
    values = module.weight.detach().numpy().ravel()
    assert abs(values.var() - bound**2 / 3) < 0.05 * bound**2
    assert np.histogram(values, bins=4, range=(-bound, bound))[0].min() > len(values) / 4 * 0.85


@settings(max_examples=25, deadline=None)
@given(
    stride=st.integers(1, 3), padding=st.integers(0, 2), dilation=st.integers(1, 2),
    groups=st.sampled_from([1, 2]), kernel=st.integers(1, 3),
    mode=st.sampled_from(["zeros", "reflect", "replicate", "circular"]),
)
def test_conv2d_property(stride, padding, dilation, groups, kernel, mode):
    def build(m):
        return m.nn.Conv2d(2, 4, kernel, stride, padding, dilation, groups, padding_mode=mode)

    ours, theirs = pair(build)
    x, tx = make_input((1, 2, 6, 5))
    pair_out = run_both(lambda: ours(x), lambda: theirs(tx), message=False)
    if pair_out is not None:
        assert_same(*pair_out, **TOL)
        assert repr(ours) == repr(theirs)


# --- pooling ----------------------------------------------------------------------------

POOLS = [
    (lambda m: m.nn.MaxPool1d(3, stride=2, padding=1), (2, 3, 9)),
    (lambda m: m.nn.MaxPool2d(2), (2, 3, 6, 5)),
    (lambda m: m.nn.MaxPool2d((3, 2), stride=(2, 1), padding=1, dilation=1, ceil_mode=True),
     (2, 3, 7, 6)),
    (lambda m: m.nn.MaxPool3d(2, stride=1), (1, 2, 3, 4, 3)),
    (lambda m: m.nn.AvgPool1d(3, padding=1, count_include_pad=False), (2, 3, 8)),
    (lambda m: m.nn.AvgPool2d(2), (2, 3, 6, 6)),
    (lambda m: m.nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, divisor_override=5),
     (2, 3, 7, 6)),
    (lambda m: m.nn.AvgPool3d((2, 2, 1)), (1, 2, 4, 4, 3)),
    (lambda m: m.nn.AdaptiveAvgPool1d(4), (2, 3, 9)),
    (lambda m: m.nn.AdaptiveAvgPool2d((1, 1)), (2, 3, 5, 6)),
    (lambda m: m.nn.AdaptiveAvgPool2d((3, None)), (2, 3, 7, 5)),
    (lambda m: m.nn.AdaptiveAvgPool3d(2), (1, 2, 5, 4, 3)),
    (lambda m: m.nn.AdaptiveMaxPool1d(3), (2, 3, 8)),
    (lambda m: m.nn.AdaptiveMaxPool2d((2, 3)), (2, 3, 5, 7)),
    (lambda m: m.nn.LPPool1d(2, 3, stride=2), (2, 3, 9)),
    (lambda m: m.nn.LPPool2d(1.5, (2, 3)), (2, 3, 6, 6)),
]


@pytest.mark.parametrize("index", range(len(POOLS)))
def test_pooling(index):
    build, shape = POOLS[index]
    lp = index >= len(POOLS) - 2  # power pooling of positive values (p-th roots)
    check_module(build, shape, low=0.5 if lp else -2.0, tol={"rtol": 1e-4, "atol": 1e-4})


@settings(max_examples=25, deadline=None)
@given(
    kind=st.sampled_from(["MaxPool2d", "AvgPool2d"]), kernel=st.integers(1, 3),
    stride=st.one_of(st.none(), st.integers(1, 3)), padding=st.integers(0, 1),
    ceil_mode=st.booleans(), height=st.integers(3, 7),
)
def test_pool2d_property(kind, kernel, stride, padding, ceil_mode, height):
    def build(m):
        return getattr(m.nn, kind)(kernel, stride, padding, ceil_mode=ceil_mode)

    ours, theirs = build(pyaten), build(torch)
    x, tx = make_input((2, 2, height, 5))
    outs = run_both(lambda: ours(x), lambda: theirs(tx))
    if outs is not None:
        assert repr(ours) == repr(theirs)
        assert_same(*outs, **TOL)
        outs[0].sum().backward()
        outs[1].sum().backward()
        assert_same(x.grad, tx.grad, **TOL)


def test_pooling_with_indices_and_unpool():
    def scenario(m, x):
        pool1, unpool1 = m.nn.MaxPool1d(2, return_indices=True), m.nn.MaxUnpool1d(2)
        pool2 = m.nn.MaxPool2d(2, stride=2, return_indices=True)
        unpool2 = m.nn.MaxUnpool2d(2, stride=2)
        adaptive = m.nn.AdaptiveMaxPool2d(2, return_indices=True)
        out1, idx1 = pool1(x.flatten(2))
        out2, idx2 = pool2(x)
        out3, idx3 = adaptive(x)
        return (
            repr(unpool1), repr(unpool2), out1, idx1, unpool1(out1, idx1), out2, idx2,
            unpool2(out2, idx2), unpool2(out2, idx2, output_size=[5, 5]), out3, idx3,
        )

    x, tx = make_input((2, 3, 4, 4))
    ours, theirs = scenario(pyaten, x), scenario(torch, tx)
    assert ours[:2] == theirs[:2]
    assert_same(ours[2:], theirs[2:], **TOL)


def test_pooling_reprs():
    def reprs(m):
        return [repr(x) for x in (
            m.nn.MaxPool2d(3), m.nn.MaxPool1d((2,), 1, ceil_mode=True), m.nn.AvgPool1d(2),
            m.nn.AvgPool2d((2, 3), padding=1), m.nn.AvgPool3d(2, divisor_override=3),
            m.nn.LPPool2d(2, 3), m.nn.AdaptiveMaxPool1d(2), m.nn.AdaptiveAvgPool3d((1, None, 2)),
            m.nn.MaxUnpool2d((2, 3), padding=1),
        )]

    assert reprs(pyaten) == reprs(torch)


# --- batch, instance, layer, group, RMS, local response norms ----------------------------

NORMS = [
    (lambda m: m.nn.BatchNorm1d(3), (4, 3)),
    (lambda m: m.nn.BatchNorm1d(3, affine=False, momentum=0.3), (4, 3, 5)),
    (lambda m: m.nn.BatchNorm2d(3), (4, 3, 3, 2)),
    (lambda m: m.nn.BatchNorm2d(3, track_running_stats=False), (4, 3, 3, 2)),
    (lambda m: m.nn.BatchNorm2d(3, momentum=None, eps=1e-3), (2, 3, 3, 2)),
    (lambda m: m.nn.BatchNorm3d(2, bias=False), (2, 2, 2, 3, 2)),
    (lambda m: m.nn.InstanceNorm1d(3), (2, 3, 6)),
    (lambda m: m.nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4)),
    (lambda m: m.nn.InstanceNorm2d(3, track_running_stats=True), (2, 3, 4, 4)),
    (lambda m: m.nn.InstanceNorm3d(2, affine=True, track_running_stats=True), (2, 2, 3, 2, 3)),
    (lambda m: m.nn.InstanceNorm1d(3, affine=True), (3, 6)),
    (lambda m: m.nn.InstanceNorm3d(2), (2, 3, 3, 3)),
    (lambda m: m.nn.LayerNorm(4), (2, 3, 4)),
    (lambda m: m.nn.LayerNorm([3, 4], eps=1e-3, bias=False), (2, 3, 4)),
    (lambda m: m.nn.LayerNorm((4,), elementwise_affine=False), (2, 4)),
    (lambda m: m.nn.GroupNorm(2, 4), (2, 4, 3, 2)),
    (lambda m: m.nn.GroupNorm(1, 3, affine=False), (2, 3, 5)),
    (lambda m: m.nn.RMSNorm(4), (2, 3, 4)),
    (lambda m: m.nn.RMSNorm([3, 4], eps=1e-4, elementwise_affine=False), (2, 3, 4)),
    (lambda m: m.nn.LocalResponseNorm(3, alpha=0.1, beta=0.5, k=2.0), (2, 5, 3, 3)),
]


@pytest.mark.parametrize("index", range(len(NORMS)))
def test_norm(index):
    build, shape = NORMS[index]
    ours, theirs = check_module(build, shape, tol={"rtol": 1e-4, "atol": 1e-4})
    if hasattr(theirs, "running_mean"):
        assert list(ours.state_dict()) == list(theirs.state_dict())


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
def test_batchnorm_running_stats_over_steps(momentum):
    ours, theirs = pair(lambda m: m.nn.BatchNorm2d(3, momentum=momentum))
    for step in range(4):
        x, tx = make_input((2 + step, 3, 2, 3), -1.0 - step, 2.0 + step, seed=step)
        assert_same(ours(x), theirs(tx), rtol=1e-4, atol=1e-4)
    for key, value in theirs.state_dict().items():
        assert_same(ours.state_dict()[key], value, rtol=1e-5, atol=1e-5)
    assert int(ours.num_batches_tracked) == 4
    ours.eval()
    theirs.eval()
    x, tx = make_input((2, 3, 2, 3), seed=9)
    assert_same(ours(x), theirs(tx), rtol=1e-4, atol=1e-4)
    assert int(ours.num_batches_tracked) == 4  # eval mode leaves the statistics alone
    ours.reset_running_stats()
    assert int(ours.num_batches_tracked) == 0 and ours.running_var.tolist() == [1.0] * 3


@settings(max_examples=15, deadline=None)
@given(
    momentum=st.one_of(st.none(), st.floats(0.05, 1.0)), steps=st.integers(1, 4),
    affine=st.booleans(), batch=st.integers(2, 4),
)
def test_batchnorm1d_running_stats_property(momentum, steps, affine, batch):
    ours, theirs = pair(lambda m: m.nn.BatchNorm1d(3, momentum=momentum, affine=affine))
    for step in range(steps):
        x, tx = make_input((batch, 3, 2), seed=step)
        assert_same(ours(x), theirs(tx), rtol=1e-4, atol=1e-4)
    for key, value in theirs.state_dict().items():
        assert_same(ours.state_dict()[key], value, rtol=1e-5, atol=1e-5)


def test_batchnorm_buffers_and_loading():
    def scenario(m):
        tracked = m.nn.BatchNorm1d(2)
        plain = m.nn.BatchNorm1d(2, affine=False, track_running_stats=False)
        old = {"weight": m.ones(2), "bias": m.zeros(2), "running_mean": m.ones(2),
               "running_var": m.ones(2)}
        old_dict = type(tracked.state_dict())(old)
        old_dict._metadata = {"": {"version": 1}}
        result = tracked.load_state_dict(old_dict)
        return (
            list(tracked.state_dict()), list(plain.state_dict()), plain.running_mean,
            tracked.num_batches_tracked.dtype, tracked.num_batches_tracked.shape,
            list(result.missing_keys), tracked.state_dict()._metadata[""]["version"],
        )

    ours, theirs = run_both(lambda: scenario(pyaten), lambda: scenario(torch))
    assert ours[:3] == theirs[:3]
    assert str(ours[3]) == "pyaten.int64" and tuple(ours[4]) == ()
    assert ours[5:] == theirs[5:]


@pytest.mark.parametrize("build", [
    lambda m: m.nn.BatchNorm1d(3)(m.ones(2, 3, 2, 2)),
    lambda m: m.nn.BatchNorm2d(3)(m.ones(2, 3, 2)),
    lambda m: m.nn.BatchNorm3d(3)(m.ones(2, 3, 2, 2)),
    lambda m: m.nn.BatchNorm1d(3)(m.ones(1, 3)),
    lambda m: m.nn.InstanceNorm2d(3)(m.ones(2, 2)),
    lambda m: m.nn.InstanceNorm1d(3, affine=True)(m.ones(2, 4, 5)),
    lambda m: m.nn.GroupNorm(3, 4),
    lambda m: m.nn.LayerNorm(3)(m.ones(2, 4)),
])
def test_norm_errors(build):
    same_error(lambda: build(pyaten), lambda: build(torch))


def test_norm_reprs():
    def reprs(m):
        return [repr(x) for x in (
            m.nn.BatchNorm2d(4, eps=1e-3, momentum=None, affine=False),
            m.nn.InstanceNorm1d(3), m.nn.InstanceNorm3d(2, affine=True, bias=False),
            m.nn.LayerNorm([2, 3]), m.nn.GroupNorm(2, 6, affine=False), m.nn.RMSNorm(5),
            m.nn.LocalResponseNorm(2),
        )]

    assert reprs(pyaten) == reprs(torch)


# --- dropout ----------------------------------------------------------------------------

DROPOUTS = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
            "FeatureAlphaDropout"]


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_repr_eval_and_errors(name):
    def scenario(m):
        module = getattr(m.nn, name)(p=0.25)
        x = m.arange(24.0).reshape((2, 3, 4) if name == "Dropout1d" else (2, 3, 2, 2))
        return repr(module), repr(getattr(m.nn, name)(0.5, True)), module.eval()(x)

    ours, theirs = run_both(lambda: scenario(pyaten), lambda: scenario(torch))
    assert ours[:2] == theirs[:2]
    assert_same(ours[2], theirs[2])
    for p in (-0.1, 1.5):
        same_error(lambda p=p: getattr(pyaten.nn, name)(p), lambda p=p: getattr(torch.nn, name)(p))


def test_dropout_training_statistics():
    x = pyaten.ones(20000)
    y = pyaten.nn.Dropout(0.25)(x).numpy()
    assert set(np.unique(y).tolist()) <= {0.0, float(np.float32(1 / 0.75))}
    assert abs((y == 0).mean() - 0.25) < 0.02
    channels = pyaten.nn.Dropout2d(0.5)(pyaten.ones(4, 400, 3, 3)).numpy()
    per_channel = channels.reshape(4, 400, 9)
    assert (per_channel.min(axis=2) == per_channel.max(axis=2)).all()  # whole channels
    assert abs((per_channel[..., 0] == 0).mean() - 0.5) < 0.06
    alpha = pyaten.nn.AlphaDropout(0.2)(pyaten.randn(50000)).numpy()
    assert abs(alpha.mean()) < 0.05 and abs(alpha.std() - 1) < 0.05


def test_dropout_backward_masks_gradient():
    x = pyaten.ones(1000, requires_grad=True)
    y = pyaten.nn.Dropout(0.5)(x)
    y.sum().backward()
    assert np.array_equal(x.grad.numpy(), y.detach().numpy())


# --- embeddings -------------------------------------------------------------------------

def test_embedding_forward_backward():
    for build in (
        lambda m: m.nn.Embedding(10, 3),
        lambda m: m.nn.Embedding(10, 3, padding_idx=-2, scale_grad_by_freq=True),
        lambda m: m.nn.Embedding(10, 4, max_norm=1.0, norm_type=1.0),
    ):
        ours, theirs = pair(build)
        assert repr(ours) == repr(theirs)
        idx = [[1, 2, 8], [8, 0, 1]]
        out, tout = ours(pyaten.tensor(idx)), theirs(torch.tensor(idx))
        assert_same(out, tout, **TOL)
        out.pow(2).sum().backward()
        tout.pow(2).sum().backward()
        assert_same(ours.weight.grad, theirs.weight.grad, **TOL)
        assert_same(ours.weight, theirs.weight, **TOL)  # max_norm renormalises in place


def test_embedding_init_and_padding_row():
    module = pyaten.nn.Embedding(2000, 5, padding_idx=3)
    values = module.weight.detach().numpy()
    assert (values[3] == 0).all()
    assert abs(values.mean()) < 0.05 and abs(values.std() - 1) < 0.05  # N(0, 1)
    assert module.padding_idx == 3


def test_embedding_from_pretrained():
    def scenario(m):
        table = m.arange(12.0).reshape(4, 3)
        frozen = m.nn.Embedding.from_pretrained(table, padding_idx=1)
        free = m.nn.Embedding.from_pretrained(table, freeze=False, max_norm=2.0)
        bag = m.nn.EmbeddingBag.from_pretrained(table, mode="sum")
        idx = m.tensor([[0, 1], [3, 3]])
        return (
            repr(frozen), frozen.weight.requires_grad, free.weight.requires_grad, repr(bag),
            bag.weight.requires_grad, frozen(idx), bag(idx),
        )

    ours, theirs = run_both(lambda: scenario(pyaten), lambda: scenario(torch))
    assert ours[:5] == theirs[:5]
    assert_same(ours[5:], theirs[5:])


@pytest.mark.parametrize("build", [
    lambda m: m.nn.Embedding(4, 2, padding_idx=4),
    lambda m: m.nn.Embedding(4, 2, padding_idx=-5),
    lambda m: m.nn.EmbeddingBag(4, 2, padding_idx=7),
    lambda m: m.nn.Embedding(4, 2, _weight=m.ones(3, 2)),
    lambda m: m.nn.Embedding.from_pretrained(m.ones(3)),
])
def test_embedding_errors(build):
    same_error(lambda: build(pyaten), lambda: build(torch))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    ours, theirs = pair(lambda m: m.nn.EmbeddingBag(10, 3, mode=mode, padding_idx=0))
    assert repr(ours) == repr(theirs)
    idx, offsets = [1, 2, 4, 5, 4, 0, 9], [0, 3, 5]
    out = ours(pyaten.tensor(idx), pyaten.tensor(offsets))
    tout = theirs(torch.tensor(idx), torch.tensor(offsets))
    assert_same(out, tout, **TOL)
    out.sum().backward()
    tout.sum().backward()
    assert_same(ours.weight.grad, theirs.weight.grad, **TOL)


# --- upsampling, shuffles, padding, fold ------------------------------------------------

RESAMPLING = [
    (lambda m: m.nn.Upsample(scale_factor=2), (1, 2, 3, 3)),
    (lambda m: m.nn.Upsample(size=(5, 4), mode="bilinear"), (1, 2, 3, 3)),
    (lambda m: m.nn.Upsample(scale_factor=(1.5, 2), mode="bicubic", align_corners=True),
     (1, 2, 4, 3)),
    (lambda m: m.nn.Upsample(size=7, mode="linear"), (2, 2, 4)),
    (lambda m: m.nn.UpsamplingNearest2d(scale_factor=3), (1, 2, 2, 3)),
    (lambda m: m.nn.UpsamplingBilinear2d(size=(4, 6)), (1, 2, 2, 3)),
    (lambda m: m.nn.PixelShuffle(2), (1, 8, 2, 3)),
    (lambda m: m.nn.PixelUnshuffle(2), (1, 2, 4, 6)),
    (lambda m: m.nn.ChannelShuffle(2), (1, 4, 2, 2)),
    (lambda m: m.nn.ZeroPad1d((1, 2)), (2, 3, 4)),
    (lambda m: m.nn.ZeroPad2d(1), (2, 3, 4)),
    (lambda m: m.nn.ZeroPad3d((1, 0, 2, 1, 0, 1)), (1, 2, 2, 3, 2)),
    (lambda m: m.nn.ConstantPad1d(2, 3.5), (2, 3, 4)),
    (lambda m: m.nn.ConstantPad2d((1, 0, 2, 1), -1.0), (2, 3, 4)),
    (lambda m: m.nn.ConstantPad3d(1, 0.5), (1, 2, 2, 3, 2)),
    (lambda m: m.nn.ReflectionPad1d((2, 1)), (2, 3, 4)),
    (lambda m: m.nn.ReflectionPad2d(2), (1, 2, 4, 3)),
    (lambda m: m.nn.ReflectionPad3d((1, 1, 0, 1, 1, 0)), (1, 2, 2, 3, 3)),
    (lambda m: m.nn.ReplicationPad1d(3), (2, 3, 4)),
    (lambda m: m.nn.ReplicationPad2d((0, 1, 2, 3)), (1, 2, 4, 3)),
    (lambda m: m.nn.ReplicationPad3d(1), (1, 2, 2, 3, 2)),
    (lambda m: m.nn.CircularPad1d((1, 2)), (2, 3, 4)),
    (lambda m: m.nn.CircularPad2d(1), (1, 2, 4, 3)),
    (lambda m: m.nn.CircularPad3d((1, 0, 1, 1, 0, 1)), (1, 2, 2, 3, 3)),
    (lambda m: m.nn.Unfold(2, padding=1, stride=(1, 2)), (2, 3, 4, 5)),
    (lambda m: m.nn.Fold((4, 5), (2, 3), stride=1), (2, 12, 9)),
]


@pytest.mark.parametrize("index", range(len(RESAMPLING)))
def test_resampling_padding_fold(index):
    build, shape = RESAMPLING[index]
    check_module(build, shape, modes=("train",))


@pytest.mark.parametrize("build", [
    lambda m: m.nn.CircularPad2d(1)(m.ones(2, 2)),
    lambda m: m.nn.CircularPad1d(1)(m.ones(1, 2, 2, 2)),
    lambda m: m.nn.PixelShuffle(2)(m.ones(1, 3, 2, 2)),
])
def test_resampling_errors(build):
    same_error(lambda: build(pyaten), lambda: build(torch))


# --- the whole: a small CNN, pickling, public names -------------------------------------

def small_cnn(m):
    return m.nn.Sequential(
        m.nn.Conv2d(3, 8, 3, padding=1), m.nn.BatchNorm2d(8), m.nn.ReLU(inplace=True),
        m.nn.MaxPool2d(2), m.nn.Conv2d(8, 8, 3, padding="same", padding_mode="reflect"),
        m.nn.GroupNorm(2, 8), m.nn.GELU(), m.nn.AvgPool2d(2), m.nn.Dropout(0.0),
        m.nn.AdaptiveAvgPool2d(1), m.nn.Flatten(), m.nn.Linear(8, 4), m.nn.LogSoftmax(dim=1),
    )


def test_small_cnn_train_and_eval():
    ours, theirs = check_module(small_cnn, (4, 3, 8, 8), tol={"rtol": 1e-4, "atol": 1e-4})
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_modules_pickle_and_deepcopy():
    import copy

    module = small_cnn(pyaten).eval()
    x = pyaten.randn(2, 3, 8, 8)
    for clone in (pickle.loads(pickle.dumps(module)), copy.deepcopy(module)):
        assert repr(clone) == repr(module)
        assert np.allclose(clone(x).detach().numpy(), module(x).detach().numpy())


def test_public_names_match_torch():
    from pyaten.nn.modules import (
        activation,
        batchnorm,
        conv,
        dropout,
        fold,
        normalization,
        padding,
        pixelshuffle,
        pooling,
        sparse,
        upsampling,
    )

    for module in (activation, batchnorm, conv, dropout, fold, normalization, padding,
                   pixelshuffle, pooling, sparse, upsampling):
        for name in module.__all__:
            assert hasattr(torch.nn, name), name
            assert getattr(pyaten.nn, name) is getattr(module, name)
            assert getattr(pyaten.nn.modules, name) is getattr(module, name)


def test_import_pyaten_does_not_load_layers():
    import subprocess
    import sys

    code = "import sys, pyaten; print('pyaten.nn.modules.conv' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=600)
    assert result.stdout.strip() == "False", result.stderr


def test_factory_dtype_arguments():
    def scenario(m):
        f64 = m.float64
        modules = (
            m.nn.Conv2d(2, 3, 3, dtype=f64), m.nn.ConvTranspose1d(2, 2, 2, dtype=f64),
            m.nn.BatchNorm2d(3, dtype=f64), m.nn.LayerNorm(3, dtype=m.float16),
            m.nn.GroupNorm(1, 2, dtype=f64), m.nn.RMSNorm(2, dtype=f64),
            m.nn.Embedding(3, 2, dtype=f64), m.nn.PReLU(dtype=f64),
            m.nn.InstanceNorm1d(2, affine=True, track_running_stats=True, dtype=f64),
        )
        return [[str(v.dtype) for v in module.state_dict().values()] for module in modules]

    ours, theirs = run_both(lambda: scenario(pyaten), lambda: scenario(torch))
    assert ours == [[d.replace("torch.", "pyaten.") for d in row] for row in theirs]


def test_dropout_inplace_in_training():
    x = pyaten.ones(200)
    y = pyaten.nn.Dropout(0.5, inplace=True)(x)
    assert y is x and (x.numpy() == 0).any() and (x.numpy() == 2).any()
