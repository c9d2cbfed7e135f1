"""Quantized tensors, quantized operators and the eager quantization flows against PyTorch.

Integers are compared exactly (int_repr), float outputs of the dynamic modules to the last
bit (Linear) or a few float32 ulps (LSTM, whose sigmoid/tanh are NumPy's), and the static flow
to one output quantum (its calibration runs float layers whose last bits may differ).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
import pyaten.ao.quantization as pq

torch = pytest.importorskip("torch")
import torch.ao.quantization as tq  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

DTYPES = [(torch.quint8, pyaten.quint8, 0, 255), (torch.qint8, pyaten.qint8, -128, 127),
          (torch.qint32, pyaten.qint32, -(2**31), 2**31 - 1)]


def _pair(values: np.ndarray) -> tuple:
    return torch.from_numpy(values.copy()), pyaten.from_numpy(values.copy())


def assert_same_q(expected: object, actual: object) -> None:
    """Same quantized tensor: dtype, shape, quantizer and integers."""
    assert str(actual.dtype).split(".")[1] == str(expected.dtype).split(".")[1]
    assert tuple(actual.shape) == tuple(expected.shape)
    assert str(actual.qscheme()).split(".")[1] == str(expected.qscheme()).split(".")[1]
    if expected.qscheme() == torch.per_tensor_affine:
        assert actual.q_scale() == expected.q_scale()
        assert actual.q_zero_point() == expected.q_zero_point()
    else:
        np.testing.assert_array_equal(actual.q_per_channel_scales().numpy(),
                                      expected.q_per_channel_scales().numpy())
        np.testing.assert_array_equal(actual.q_per_channel_zero_points().numpy(),
                                      expected.q_per_channel_zero_points().numpy())
        assert actual.q_per_channel_axis() == expected.q_per_channel_axis()
    np.testing.assert_array_equal(actual.int_repr().numpy(), expected.int_repr().numpy())
    np.testing.assert_array_equal(actual.dequantize().numpy(), expected.dequantize().numpy())


def _values(rng: np.random.Generator, shape: tuple, scale: float) -> np.ndarray:
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    flat = x.reshape(-1)
    flat[: flat.size // 4] = np.arange(flat.size // 4, dtype=np.float32) * np.float32(scale) / 2
    return x  # a quarter of the values are ties of x / scale


# --- creating, reading and printing quantized tensors ----------------------------------------


@pytest.mark.parametrize("tdt, pdt, low, high", DTYPES)
@pytest.mark.parametrize("scale, zero_point", [(0.1, 3), (0.037, 0), (0.0173, 5), (0.5, 1)])
def test_quantize_per_tensor_matches_torch(tdt, pdt, low, high, scale, zero_point) -> None:
    x = _values(np.random.default_rng(0), (40, 50), scale)
    tx, px = _pair(x)
    assert_same_q(torch.quantize_per_tensor(tx, scale, zero_point, tdt),
                  pyaten.quantize_per_tensor(px, scale, zero_point, pdt))
    qparams = (torch.tensor(scale), torch.tensor(zero_point))
    assert_same_q(torch.quantize_per_tensor(tx, *qparams, tdt),
                  pyaten.quantize_per_tensor(px, pyaten.tensor(scale), pyaten.tensor(zero_point),
                                             pdt))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e4, 1e4, width=32), min_size=1, max_size=30),
       st.floats(1e-3, 10.0), st.integers(0, 255))
def test_quantize_rounding_property(values, scale, zero_point) -> None:
    x = np.array(values, np.float32)
    tx, px = _pair(x)
    assert_same_q(torch.quantize_per_tensor(tx, scale, zero_point, torch.quint8),
                  pyaten.quantize_per_tensor(px, scale, zero_point, pyaten.quint8))


def test_quantize_per_tensor_list_form() -> None:
    xs = [np.array([1.0, 2.0, -0.3], np.float32), np.array([3.0, 0.05], np.float32)]
    expected = torch.quantize_per_tensor([torch.from_numpy(x) for x in xs],
                                         torch.tensor([0.1, 0.2]), torch.tensor([1, 2]),
                                         torch.quint8)
    actual = pyaten.quantize_per_tensor([pyaten.from_numpy(x) for x in xs],
                                        pyaten.tensor([0.1, 0.2]), pyaten.tensor([1, 2]),
                                        pyaten.quint8)
    assert len(actual) == 2
    for e, a in zip(expected, actual):
        assert_same_q(e, a)
    for e, a in zip(torch.dequantize(expected), pyaten.dequantize(actual)):
        np.testing.assert_array_equal(a.numpy(), e.numpy())


@pytest.mark.parametrize("tdt, pdt, low, high", DTYPES[:2])
@pytest.mark.parametrize("axis", [0, 1])
def test_quantize_per_channel_matches_torch(tdt, pdt, low, high, axis) -> None:
    rng = np.random.default_rng(1)
    x = _values(rng, (30, 20), 0.05)
    channels = x.shape[axis]
    scales = rng.random(channels) * 0.1 + 0.01
    zero_points = rng.integers(0, 6, channels) + (0 if low == 0 else -3)
    tx, px = _pair(x)
    ts, ps = _pair(scales)
    tz, pz = _pair(zero_points)
    assert_same_q(torch.quantize_per_channel(tx, ts, tz, axis, tdt),
                  pyaten.quantize_per_channel(px, ps, pz, axis, pdt))


def test_make_per_tensor_quantized_tensor_and_int_repr() -> None:
    ints = np.array([[0, 5, 255], [128, 7, 9]], np.uint8)
    ti, pi = _pair(ints)
    expected = torch._make_per_tensor_quantized_tensor(ti, 0.25, 7)
    actual = pyaten._make_per_tensor_quantized_tensor(pi, 0.25, 7)
    assert_same_q(expected, actual)
    assert actual.int_repr().dtype is pyaten.uint8
    assert actual.is_quantized and not pi.is_quantized
    assert pyaten._make_per_tensor_quantized_tensor(
        pyaten.tensor([1, 2], dtype=pyaten.int32), 0.1, 0).dtype is pyaten.qint32


def test_keys_and_metadata_match_torch() -> None:
    tq_ = torch.quantize_per_tensor(torch.tensor([1.0, 2.5]), 0.5, 3, torch.quint8)
    pq_ = pyaten.quantize_per_tensor(pyaten.tensor([1.0, 2.5]), 0.5, 3, pyaten.quint8)
    assert repr(pyaten._C._dispatch_keys(pq_)) == repr(torch._C._dispatch_keys(tq_))
    assert pq_.qscheme() is pyaten.per_tensor_affine
    assert pq_.layout is pyaten.strided
    assert pq_.element_size() == tq_.element_size()
    assert (pyaten.qint8.itemsize, pyaten.quint8.is_signed) == (1, False)


@pytest.mark.parametrize("make", [
    lambda lib, d: lib.quantize_per_tensor(lib.tensor([1.0, 2.5, -3.0]), 0.5, 3, d.quint8),
    lambda lib, d: lib.quantize_per_tensor(lib.tensor([[1.0, 2.5], [7.0, 0.0]]), 0.1, 0,
                                           d.qint8),
    lambda lib, d: lib.quantize_per_channel(lib.tensor([[1.0, 2.5], [-3.0, 4]]),
                                            lib.tensor([0.5, 0.25], dtype=lib.float64),
                                            lib.tensor([1, 2]), 1, d.qint8),
    lambda lib, d: lib.quantize_per_tensor(lib.arange(200.0) / 7, 0.01, 0, d.qint32),
])
def test_printing_matches_torch(make) -> None:
    expected = repr(make(torch, torch)).replace("torch.", "pyaten.")
    assert repr(make(pyaten, pyaten)) == expected


# --- fake quantization ------------------------------------------------------------------------


@pytest.mark.parametrize("scale, zero_point", [(0.1, 3), (0.0173, 0), (0.5, 200)])
def test_fake_quantize_per_tensor_values_and_gradient(scale, zero_point) -> None:
    x = _values(np.random.default_rng(2), (500,), scale) * 20
    tx, px = _pair(x)
    tx.requires_grad_(True)
    px.requires_grad_(True)
    ty = torch.fake_quantize_per_tensor_affine(tx, scale, zero_point, 0, 255)
    py = pyaten.fake_quantize_per_tensor_affine(px, scale, zero_point, 0, 255)
    np.testing.assert_array_equal(py.detach().numpy(), ty.detach().numpy())
    ty.sum().backward()
    py.sum().backward()
    np.testing.assert_array_equal(px.grad.numpy(), tx.grad.numpy())


def test_fake_quantize_per_channel_values_and_gradient() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 6)).astype(np.float32) * 4
    scales = (rng.random(6) * 0.05 + 0.01).astype(np.float32)
    zero_points = rng.integers(0, 20, 6).astype(np.int32)
    tx, px = _pair(x)
    tx.requires_grad_(True)
    px.requires_grad_(True)
    ty = torch.fake_quantize_per_channel_affine(tx, torch.from_numpy(scales),
                                                torch.from_numpy(zero_points), 1, 0, 255)
    py = pyaten.fake_quantize_per_channel_affine(px, pyaten.from_numpy(scales),
                                                 pyaten.from_numpy(zero_points), 1, 0, 255)
    np.testing.assert_array_equal(py.detach().numpy(), ty.detach().numpy())
    (ty * ty).sum().backward()
    (py * py).sum().backward()
    np.testing.assert_array_equal(px.grad.numpy(), tx.grad.numpy())


# --- errors ----------------------------------------------------------------------------------


def _error(fn: object) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        fn()
    return info.type, str(info.value).split("\n")[0]


@pytest.mark.parametrize("call", [
    lambda lib, d: lib.quantize_per_tensor(lib.tensor([1, 2]), 0.1, 0, d.qint8),
    lambda lib, d: lib.quantize_per_tensor(lib.tensor([1.0, 2], dtype=lib.float64), 0.1, 0,
                                           d.quint8),
    lambda lib, d: lib.quantize_per_tensor(lib.tensor([1.0, 2]), 0.1, 0, d.float32),
    lambda lib, d: lib.quantize_per_tensor(lib.tensor([1.0, 2]), 0.1, 300, d.quint8),
    lambda lib, d: lib.quantize_per_tensor(lib.tensor([1.0, 2]), 0.1, -1, d.quint8),
    lambda lib, d: lib.quantize_per_channel(lib.ones(2, 2), lib.tensor([0.5, 0.25, 1.0]),
                                            lib.tensor([1, 2, 3]), 1, d.qint8),
    lambda lib, d: lib.quantize_per_channel(lib.ones(2, 2), lib.tensor([0.5, 0.25]),
                                            lib.tensor([1, 2]), 2, d.qint8),
    lambda lib, d: lib._make_per_tensor_quantized_tensor(lib.tensor([1.0]), 0.1, 0),
    lambda lib, d: lib.quantize_per_tensor(lib.tensor([1.0]), 0.1, 0, d.quint8)
    .q_per_channel_scales(),
    lambda lib, d: lib.fake_quantize_per_tensor_affine(lib.tensor([1.0]), 0.1, 300, 0, 255),
    lambda lib, d: lib.fake_quantize_per_tensor_affine(lib.tensor([1.0]), 0.1, 3, 10, 5),
])
def test_errors_match_torch(call) -> None:
    expected = _error(lambda: call(torch, torch))
    actual = _error(lambda: call(pyaten, pyaten))
    assert actual[0] is expected[0]
    assert actual[1] == expected[1]


@pytest.mark.parametrize("call, backend", [
    (lambda lib, d: lib.tensor([1.0]).q_scale(), "CPU"),
    (lambda lib, d: lib.tensor([1.0]).int_repr(), "CPU"),
    (lambda lib, d: lib.exp(lib.quantize_per_tensor(lib.tensor([1.0]), 0.1, 0, d.quint8)),
     "QuantizedCPU"),
    (lambda lib, d: lib.quantize_per_tensor(lib.tensor([1.0]), 0.1, 0, d.quint8).sum(),
     "QuantizedCPU"),
])
def test_missing_kernels_say_could_not_run(call, backend) -> None:
    expected = _error(lambda: call(torch, torch))
    actual = _error(lambda: call(pyaten, pyaten))
    assert actual[0] is expected[0] is NotImplementedError
    for message in (expected[1], actual[1]):
        assert message.startswith("Could not run 'aten::")
        assert f"with arguments from the '{backend}' backend" in message


# --- quantized operators -----------------------------------------------------------------------


def _q(lib: object, d: object, x: np.ndarray, scale: float, zero_point: int) -> object:
    return lib.quantize_per_tensor(lib.from_numpy(x.copy()), scale, zero_point, d.quint8)


@pytest.fixture(scope="module")
def images() -> np.ndarray:
    return np.random.default_rng(4).standard_normal((2, 3, 7, 6)).astype(np.float32)


@pytest.mark.parametrize("op", [
    lambda lib, q, r: lib.relu(q),
    lambda lib, q, r: lib.nn.functional.max_pool2d(q, 2),
    lambda lib, q, r: lib.nn.functional.max_pool2d(q, 3, stride=2, padding=1),
    lambda lib, q, r: lib.cat([q, r], 1),
    lambda lib, q, r: lib.nn.functional.avg_pool2d(q, 2),
    lambda lib, q, r: lib.nn.functional.avg_pool2d(q, 3, stride=2, padding=1, ceil_mode=True),
    lambda lib, q, r: lib.nn.functional.avg_pool2d(q, 3, 2, 1, count_include_pad=False),
    lambda lib, q, r: lib.nn.functional.avg_pool2d(q, 2, divisor_override=3),
    lambda lib, q, r: lib.nn.functional.adaptive_avg_pool2d(q, (3, 4)),
    lambda lib, q, r: lib.nn.functional.adaptive_avg_pool2d(q, 1),
    lambda lib, q, r: lib.relu_(q.clone()),
    lambda lib, q, r: q.mean([2, 3], keepdim=True),
    lambda lib, q, r: q.mean([-1]),
    lambda lib, q, r: q.mean([0, 2]),
    lambda lib, q, r: lib.ao.nn.quantized.ReLU6()(q),
    lambda lib, q, r: q.reshape(2, -1),
    lambda lib, q, r: lib.ops.quantized.add(q, r, 0.1, 100),
    lambda lib, q, r: lib.ops.quantized.add_relu(q, r, 0.1, 100),
    lambda lib, q, r: lib.ops.quantized.mul(q, r, 0.1, 100),
    lambda lib, q, r: lib.ops.quantized.cat([q, r], 0, 0.07, 90),
])
def test_quantized_operators_match_torch(op, images) -> None:
    other = images[:, :, ::-1].copy() * 0.7
    expected = op(torch, _q(torch, torch, images, 0.05, 128), _q(torch, torch, other, 0.03, 120))
    actual = op(pyaten, _q(pyaten, pyaten, images, 0.05, 128),
                _q(pyaten, pyaten, other, 0.03, 120))
    assert_same_q(expected, actual)


def _linear_pair(rng: np.random.Generator, per_channel: bool) -> tuple:
    w = rng.standard_normal((7, 27)).astype(np.float32) * 0.3
    b = rng.standard_normal(7).astype(np.float32)
    packed = []
    for lib, d in ((torch, torch), (pyaten, pyaten)):
        if per_channel:
            scales = lib.from_numpy(np.abs(w).max(1).astype(np.float64) / 127)
            qw = lib.quantize_per_channel(lib.from_numpy(w.copy()), scales,
                                          lib.zeros(7, dtype=d.long), 0, d.qint8)
        else:
            qw = lib.quantize_per_tensor(lib.from_numpy(w.copy()), 0.01, 0, d.qint8)
        packed.append(lib.ops.quantized.linear_prepack(qw, lib.from_numpy(b.copy())))
    return packed


@pytest.mark.parametrize("per_channel", [False, True])
def test_quantized_linear_matches_torch(per_channel) -> None:
    rng = np.random.default_rng(5)
    tp, pp = _linear_pair(rng, per_channel)
    x = rng.standard_normal((5, 27)).astype(np.float32)
    for name in ("linear", "linear_relu"):
        expected = getattr(torch.ops.quantized, name)(_q(torch, torch, x, 0.03, 128), tp, 0.1, 70)
        actual = getattr(pyaten.ops.quantized, name)(_q(pyaten, pyaten, x, 0.03, 128), pp, 0.1,
                                                     70)
        assert_same_q(expected, actual)
    for reduce_range in (True, False):
        expected = torch.ops.quantized.linear_dynamic(torch.from_numpy(x), tp, reduce_range)
        actual = pyaten.ops.quantized.linear_dynamic(pyaten.from_numpy(x), pp, reduce_range)
        np.testing.assert_array_equal(actual.numpy(), expected.numpy())
    w, b = pyaten.ops.quantized.linear_unpack(pp)
    assert w.is_quantized and tuple(b.shape) == (7,)


def test_quantized_linear_saturates_as_fbgemm() -> None:
    # Full-range activations against full-range weights: fbgemm's int16 pair sums saturate.
    rng = np.random.default_rng(6)
    w = np.where(rng.random((16, 64)) < 0.5, -1.0, 1.0).astype(np.float32)
    x = rng.random((8, 64)).astype(np.float32) * 2.55
    tp = torch.ops.quantized.linear_prepack(
        torch.quantize_per_tensor(torch.from_numpy(w), 1 / 127, 0, torch.qint8), None)
    pp = pyaten.ops.quantized.linear_prepack(
        pyaten.quantize_per_tensor(pyaten.from_numpy(w), 1 / 127, 0, pyaten.qint8), None)
    expected = torch.ops.quantized.linear(_q(torch, torch, x, 0.01, 0), tp, 0.5, 128)
    actual = pyaten.ops.quantized.linear(_q(pyaten, pyaten, x, 0.01, 0), pp, 0.5, 128)
    assert_same_q(expected, actual)


@pytest.mark.parametrize("stride, padding, groups", [(1, 1, 1), (2, 0, 1), (1, 1, 3)])
def test_quantized_conv2d_matches_torch(stride, padding, groups) -> None:
    rng = np.random.default_rng(7)
    w = rng.standard_normal((6, 3 // groups, 3, 3)).astype(np.float32) * 0.3
    b = rng.standard_normal(6).astype(np.float32)
    x = (rng.random((2, 3, 7, 6)) * 2 - 1).astype(np.float32)
    results = []
    for lib, d in ((torch, torch), (pyaten, pyaten)):
        scales = lib.from_numpy(np.abs(w).reshape(6, -1).max(1).astype(np.float64) / 127)
        qw = lib.quantize_per_channel(lib.from_numpy(w.copy()), scales,
                                      lib.zeros(6, dtype=d.long), 0, d.qint8)
        packed = lib.ops.quantized.conv2d_prepack(qw, lib.from_numpy(b.copy()), [stride] * 2,
                                                  [padding] * 2, [1, 1], groups)
        qx = _q(lib, d, x, 2 / 127, 64)  # a reduced range, as the default qconfig observes
        results.append((lib.ops.quantized.conv2d(qx, packed, 0.2, 64),
                        lib.ops.quantized.conv2d_relu(qx, packed, 0.2, 64)))
    for expected, actual in zip(*results):
        assert_same_q(expected, actual)


# --- the eager flows ---------------------------------------------------------------------------


def _copy_weights(tmodel: object, pmodel: object) -> None:
    pmodel.load_state_dict({k: pyaten.from_numpy(v.detach().numpy().copy())
                            for k, v in tmodel.state_dict().items()})


def test_dynamically_quantized_mlp_matches_torch() -> None:
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    pm = pyaten.nn.Sequential(pyaten.nn.Linear(16, 32), pyaten.nn.ReLU(),
                              pyaten.nn.Linear(32, 8))
    _copy_weights(tm, pm)
    tqm, pqm = tq.quantize_dynamic(tm), pq.quantize_dynamic(pm)
    assert repr(pqm).replace("pyaten.", "torch.") == repr(tqm)
    x = np.random.default_rng(8).standard_normal((4, 16)).astype(np.float32)
    expected = tqm(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_array_equal(pqm(pyaten.from_numpy(x)).numpy(), expected)
    assert isinstance(pm[0], pyaten.nn.Linear)  # not in place


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional, batch_first", [(True, False), (False, True)])
def test_dynamically_quantized_rnn_matches_torch(mode, bidirectional, batch_first) -> None:
    torch.manual_seed(1)
    kwargs = dict(num_layers=2, bidirectional=bidirectional, batch_first=batch_first)
    tm = torch.nn.Sequential(getattr(torch.nn, mode)(6, 5, **kwargs))
    pm = pyaten.nn.Sequential(getattr(pyaten.nn, mode)(6, 5, **kwargs))
    _copy_weights(tm, pm)
    tqm = tq.quantize_dynamic(tm)
    pqm = pq.quantize_dynamic(pm)
    assert repr(pqm) == repr(tqm)
    x = np.random.default_rng(9).standard_normal((3, 7, 6)).astype(np.float32)
    expected, tstate = tqm[0](torch.from_numpy(x))
    actual, pstate = pqm[0](pyaten.from_numpy(x))
    pairs = [(expected, actual)] + (list(zip(tstate, pstate)) if mode == "LSTM"
                                    else [(tstate, pstate)])
    for e, a in pairs:
        np.testing.assert_allclose(a.numpy(), e.detach().numpy(), rtol=0, atol=1e-6)


def _static_model(lib: object, quant: object) -> object:
    nn = lib.nn

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.quant = quant.QuantStub()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.relu = nn.ReLU()
            self.fc = nn.Linear(4 * 6 * 6, 5)
            self.dequant = quant.DeQuantStub()

        def forward(self, x: object) -> object:
            x = self.relu(self.conv(self.quant(x)))
            return self.dequant(self.fc(x.reshape(x.shape[0], -1)))

    return Model()


@pytest.mark.parametrize("qconfig", ["minmax", "x86"])
def test_static_flow_matches_torch(qconfig) -> None:
    torch.manual_seed(2)
    tm, pm = _static_model(torch, tq), _static_model(pyaten, pq)
    _copy_weights(tm, pm)
    if qconfig == "minmax":
        tm.qconfig = tq.QConfig(activation=tq.MinMaxObserver.with_args(reduce_range=True),
                                weight=tq.default_per_channel_weight_observer)
        pm.qconfig = pq.QConfig(activation=pq.MinMaxObserver.with_args(reduce_range=True),
                                weight=pq.default_per_channel_weight_observer)
    else:
        tm.qconfig, pm.qconfig = tq.get_default_qconfig("x86"), pq.get_default_qconfig("x86")
    tp, pp = tq.prepare(tm.eval()), pq.prepare(pm.eval())
    assert type(pp.fc.activation_post_process).__name__ == \
        type(tp.fc.activation_post_process).__name__
    rng = np.random.default_rng(10)
    for i in range(3):
        x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32) * (i + 1)
        tp(torch.from_numpy(x))
        pp(pyaten.from_numpy(x))
    tc, pc = tq.convert(tp), pq.convert(pp)
    assert type(pc.conv).__name__ == "Conv2d" and pc.conv._get_name() == "QuantizedConv2d"
    assert not hasattr(pc.fc, "activation_post_process")
    np.testing.assert_allclose(pc.fc.scale, tc.fc.scale, rtol=1e-5)
    assert abs(pc.fc.zero_point - tc.fc.zero_point) <= 1
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    expected = tc(torch.from_numpy(x)).numpy()
    actual = pc(pyaten.from_numpy(x)).numpy()
    np.testing.assert_allclose(actual, expected, rtol=0, atol=tc.fc.scale * 1.01)


def test_observers_match_torch() -> None:
    rng = np.random.default_rng(11)
    batches = [rng.standard_normal((4, 5)).astype(np.float32) * s for s in (1, 3, 0.5)]
    cases = [
        (tq.MinMaxObserver(), pq.MinMaxObserver()),
        (tq.MinMaxObserver(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric,
                           reduce_range=True),
         pq.MinMaxObserver(dtype=pyaten.qint8, qscheme=pyaten.per_tensor_symmetric,
                           reduce_range=True)),
        (tq.PerChannelMinMaxObserver(ch_axis=1), pq.PerChannelMinMaxObserver(ch_axis=1)),
        (tq.default_per_channel_weight_observer(), pq.default_per_channel_weight_observer()),
        (tq.HistogramObserver(reduce_range=True), pq.HistogramObserver(reduce_range=True)),
    ]
    for tobs, pobs in cases:
        for b in batches:
            tobs(torch.from_numpy(b))
            pobs(pyaten.from_numpy(b))
        (ts, tz), (ps, pz) = tobs.calculate_qparams(), pobs.calculate_qparams()
        np.testing.assert_allclose(ps.numpy(), ts.numpy(), rtol=1e-6)
        np.testing.assert_array_equal(pz.numpy(), tz.numpy())


def test_views_clone_and_pickle_stay_quantized() -> None:
    import copy
    import pickle

    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 3
    tx, px = _pair(x)
    tq_ = torch.quantize_per_tensor(tx, 0.1, 2, torch.quint8)
    pq_ = pyaten.quantize_per_tensor(px, 0.1, 2, pyaten.quint8)
    for op in (lambda q: q[1], lambda q: q.t(), lambda q: q.flatten(), lambda q: q.clone(),
               lambda q: q.detach(),
               lambda q: q.t().contiguous(), lambda q: copy.deepcopy(q),
               lambda q: pickle.loads(pickle.dumps(q))):
        assert_same_q(op(tq_), op(pq_))
    tc = torch.quantize_per_channel(tx, torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64),
                                    torch.tensor([0, 1, 2]), 0, torch.qint8)
    pc = pyaten.quantize_per_channel(px, pyaten.tensor([0.1, 0.2, 0.3], dtype=pyaten.float64),
                                     pyaten.tensor([0, 1, 2]), 0, pyaten.qint8)
    assert_same_q(pickle.loads(pickle.dumps(tc)), pickle.loads(pickle.dumps(pc)))


@pytest.mark.parametrize("tdt, pdt", [(torch.quint8, pyaten.quint8), (torch.qint8, pyaten.qint8)])
@pytest.mark.parametrize("reduce_range", [True, False])
@pytest.mark.parametrize("values", [[1.0, -2.0, 3.0], [1e-6, 2e-6], [0.5, 0.25, 7.0]])
def test_quantize_per_tensor_dynamic_and_equal(tdt, pdt, reduce_range, values) -> None:
    x = np.array(values, np.float32)
    tx, px = _pair(x)
    expected = torch.quantize_per_tensor_dynamic(tx, tdt, reduce_range)
    actual = pyaten.quantize_per_tensor_dynamic(px, pdt, reduce_range)
    assert_same_q(expected, actual)
    other = pyaten.quantize_per_tensor(px, 0.1, 0, pdt)
    assert pyaten.equal(actual, actual.clone()) and not pyaten.equal(actual, other)


def test_quantized_engine_setting() -> None:
    assert pyaten.backends.quantized.engine == torch.backends.quantized.engine == "x86"
    assert set(pyaten.backends.quantized.supported_engines) <= set(
        torch.backends.quantized.supported_engines)
    pyaten.backends.quantized.engine = "fbgemm"
    assert pyaten.backends.quantized.engine == "fbgemm"
    pyaten.backends.quantized.engine = "x86"
    expected = _error(lambda: setattr(torch.backends.quantized, "engine", "foo"))
    actual = _error(lambda: setattr(pyaten.backends.quantized, "engine", "foo"))
    assert actual == expected


def _functional_model(lib: object, quant: object, nnq: object) -> object:
    nn = lib.nn

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.quant = quant.QuantStub()
            self.fc1, self.fc2 = nn.Linear(8, 8), nn.Linear(8, 8)
            self.add = nnq.FloatFunctional()
            self.cat_mul = nnq.FloatFunctional()
            self.dequant = quant.DeQuantStub()

        def forward(self, x: object) -> object:
            x = self.quant(x)
            a, b = self.fc1(x), self.fc2(x)
            z = self.cat_mul.cat([self.add.add_relu(a, b), a], 1)
            return self.dequant(self.cat_mul.mul(z, z))

    return Model()


def test_static_flow_float_functional_matches_torch() -> None:
    import torch.ao.nn.quantized as tnnq

    torch.manual_seed(3)
    tm = _functional_model(torch, tq, tnnq)
    pm = _functional_model(pyaten, pq, pyaten.ao.nn.quantized)
    _copy_weights(tm, pm)
    tm.qconfig = tq.QConfig(activation=tq.MinMaxObserver.with_args(reduce_range=True),
                            weight=tq.default_weight_observer)
    pm.qconfig = pq.QConfig(activation=pq.MinMaxObserver.with_args(reduce_range=True),
                            weight=pq.default_weight_observer)
    tp, pp = tq.prepare(tm.eval()), pq.prepare(pm.eval())
    rng = np.random.default_rng(12)
    for _ in range(3):
        x = rng.standard_normal((4, 8)).astype(np.float32)
        tp(torch.from_numpy(x))
        pp(pyaten.from_numpy(x))
    tc, pc = tq.convert(tp), pq.convert(pp)
    assert pc.add._get_name() == type(tc.add).__name__ == "QFunctional"
    x = rng.standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_allclose(pc(pyaten.from_numpy(x)).numpy(), tc(torch.from_numpy(x)).numpy(),
                               rtol=0, atol=tc.cat_mul.scale * 1.01)


def _fusable_model(lib: object, quant: object) -> object:
    nn = lib.nn

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.quant = quant.QuantStub()
            self.conv, self.bn, self.relu = nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), \
                nn.ReLU()
            self.conv2, self.relu2 = nn.Conv2d(4, 4, 3), nn.ReLU()
            self.fc, self.relu3 = nn.Linear(4 * 4 * 4, 5), nn.ReLU()
            self.dequant = quant.DeQuantStub()

        def forward(self, x: object) -> object:
            x = self.relu(self.bn(self.conv(self.quant(x))))
            x = self.relu2(self.conv2(x))
            return self.dequant(self.relu3(self.fc(x.reshape(x.shape[0], -1))))

    return Model()


def test_fuse_modules_and_static_flow_match_torch() -> None:
    torch.manual_seed(4)
    tm, pm = _fusable_model(torch, tq), _fusable_model(pyaten, pq)
    with torch.no_grad():
        tm.bn.running_mean.uniform_(-1, 1)
        tm.bn.running_var.uniform_(0.5, 2)
        tm.bn.weight.uniform_(0.5, 1.5)
        tm.bn.bias.uniform_(-0.5, 0.5)
    _copy_weights(tm, pm)
    groups = [["conv", "bn", "relu"], ["conv2", "relu2"], ["fc", "relu3"]]
    tf, pf = tq.fuse_modules(tm.eval(), groups), pq.fuse_modules(pm.eval(), groups)
    assert repr(pf).replace("pyaten.", "torch.") == repr(tf)
    tf.qconfig, pf.qconfig = tq.get_default_qconfig("x86"), pq.get_default_qconfig("x86")
    tp, pp = tq.prepare(tf), pq.prepare(pf)
    rng = np.random.default_rng(13)
    for _ in range(3):
        x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
        tp(torch.from_numpy(x))
        pp(pyaten.from_numpy(x))
    tc, pc = tq.convert(tp), pq.convert(pp)
    assert [m._get_name() for m in (pc.conv, pc.conv2, pc.fc)] == \
        ["QuantizedConvReLU2d", "QuantizedConvReLU2d", "QuantizedLinearReLU"]
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(pc(pyaten.from_numpy(x)).numpy(), tc(torch.from_numpy(x)).numpy(),
                               rtol=0, atol=tc.fc.scale * 1.01)
    with pytest.raises(NotImplementedError, match="Cannot fuse modules"):
        pq.fuse_modules(pm, ["relu", "conv"])


@pytest.mark.parametrize("shapes", [((2, 3), (3,)), ((70,),) * 2, ((4, 100), (1, 100)),
                                    ((4, 100), (4, 1)), ((300,), (1,)), ((130,),) * 2])
@pytest.mark.parametrize("name", ["add", "add_relu", "mul"])
def test_quantized_binary_broadcasting_matches_torch(shapes, name) -> None:
    # Rows of every length: ATen's vectorized loop and its scalar tail round differently.
    rng = np.random.default_rng(14)
    xa, xb = ((rng.standard_normal(s) * 2).astype(np.float32) for s in shapes)
    expected = getattr(torch.ops.quantized, name)(_q(torch, torch, xa, 0.05, 128),
                                                  _q(torch, torch, xb, 0.03, 120), 0.1, 100)
    actual = getattr(pyaten.ops.quantized, name)(_q(pyaten, pyaten, xa, 0.05, 128),
                                                 _q(pyaten, pyaten, xb, 0.03, 120), 0.1, 100)
    assert_same_q(expected, actual)


@pytest.mark.parametrize("call", [
    lambda lib, d: lib.ops.quantized.add(
        lib.quantize_per_tensor(lib.ones(2, 3), 0.1, 10, d.quint8),
        lib.quantize_per_tensor(lib.ones(2, 3), 0.1, 10, d.qint8), 0.1, 5),
    lambda lib, d: lib.ops.quantized.mul(
        lib.quantize_per_tensor(lib.ones(2, 3), 0.1, 10, d.quint8),
        lib.quantize_per_tensor(lib.ones(2, 3), 0.1, 10, d.qint8), 0.1, 5),
    lambda lib, d: lib.ops.quantized.add(
        lib.quantize_per_tensor(lib.ones(2, 3), 0.1, 10, d.quint8),
        lib.quantize_per_tensor(lib.ones(4), 0.1, 10, d.quint8), 0.1, 5),
    lambda lib, d: lib.ops.quantized.add(
        lib.quantize_per_tensor(lib.ones(2, 3), 0.1, 10, d.quint8), lib.ones(2, 3), 0.1, 5),
])
def test_quantized_binary_errors_match_torch(call) -> None:
    expected = _error(lambda: call(torch, torch))
    actual = _error(lambda: call(pyaten, pyaten))
    assert actual[0] is expected[0]
    assert actual[1].split(" backend.")[0] == expected[1].split(" backend.")[0]  # short form


def _converted(lib: object, quant: object) -> object:
    model = lib.nn.Sequential(quant.QuantStub(), lib.nn.Linear(4, 4), lib.nn.Conv2d(2, 2, 3),
                              quant.DeQuantStub())
    model.qconfig = quant.default_qconfig
    prepared = quant.prepare(model)
    prepared[0](lib.randn(2))
    prepared[1](lib.randn(2, 4))
    prepared[2](lib.randn(1, 2, 5, 5))
    return quant.convert(prepared)


def test_quantized_state_dict_keys_and_round_trip() -> None:
    pyaten.manual_seed(5)
    expected = _converted(torch, tq).state_dict()
    model = _converted(pyaten, pq)
    state = model.state_dict()
    assert list(state) == list(expected)
    assert state["1._packed_params.dtype"] is pyaten.qint8
    assert state["2.weight"].is_quantized
    fresh = _converted(pyaten, pq)
    fresh.load_state_dict(state)
    x = pyaten.quantize_per_tensor(pyaten.randn(3, 4), 0.1, 10, pyaten.quint8)
    assert pyaten.equal(fresh[1](x), model[1](x))
    assert (fresh[2].scale, fresh[2].zero_point) == (model[2].scale, model[2].zero_point)
    dynamic = pq.quantize_dynamic(pyaten.nn.Sequential(pyaten.nn.Linear(4, 4)))
    assert list(dynamic.state_dict()) == list(
        tq.quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(4, 4))).state_dict())


def test_dynamically_quantized_cells_match_torch() -> None:
    torch.manual_seed(6)
    kinds = [("LSTMCell", {}), ("GRUCell", {}), ("RNNCell", {"nonlinearity": "relu"}),
             ("RNNCell", {})]
    tm = torch.nn.Sequential(*(getattr(torch.nn, k)(6, 5, **kw) for k, kw in kinds))
    pm = pyaten.nn.Sequential(*(getattr(pyaten.nn, k)(6, 5, **kw) for k, kw in kinds))
    _copy_weights(tm, pm)
    tqm, pqm = tq.quantize_dynamic(tm), pq.quantize_dynamic(pm)
    assert repr(pqm) == repr(tqm)
    rng = np.random.default_rng(15)
    x = rng.standard_normal((3, 6)).astype(np.float32) * 3
    h = rng.standard_normal((3, 5)).astype(np.float32)
    tx, px = _pair(x)
    th, ph = _pair(h)
    pairs = list(zip(tqm[0](tx, (th, th)), pqm[0](px, (ph, ph))))
    pairs += [(tqm[i](tx, th), pqm[i](px, ph)) for i in (1, 2, 3)]
    pairs += [(tqm[1](tx), pqm[1](px))]
    for e, a in pairs:
        np.testing.assert_allclose(a.numpy(), e.detach().numpy(), rtol=0, atol=1e-6)


# --- index_select on QuantizedCPU ---------------------------------------------------------------

@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 999), which=st.integers(0, 2), dim=st.integers(-2, 1),
       count=st.integers(0, 5), transposed=st.booleans(), int32=st.booleans())
def test_index_select_quantized_as_torch(seed, which, dim, count, transposed, int32) -> None:
    rng = np.random.default_rng(seed)
    tdt, pdt, _, _ = DTYPES[which]
    values = rng.standard_normal((3, 4)).astype(np.float32)
    tx, px = _pair(values)
    tq = torch.quantize_per_tensor(tx, 0.05, 3, tdt)
    pq = pyaten.quantize_per_tensor(px, 0.05, 3, pdt)
    if transposed:
        tq, pq = tq.t(), pq.t()
    index = rng.integers(0, tq.shape[dim], size=count).astype(np.int32 if int32 else np.int64)
    ti, pi = _pair(index)
    assert_same_q(torch.index_select(tq, dim, ti), pyaten.index_select(pq, dim, pi))
    assert_same_q(tq.index_select(dim, ti), pq.index_select(dim, pi))


def test_index_select_quantized_errors_as_torch() -> None:
    values = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    tx, px = _pair(values)
    tq = torch.quantize_per_tensor(tx, 0.1, 2, torch.quint8)
    pq = pyaten.quantize_per_tensor(px, 0.1, 2, pyaten.quint8)
    tc = torch.quantize_per_channel(tx, torch.tensor([.1, .2, .3], dtype=torch.float64),
                                    torch.tensor([0, 1, 2]), 0, torch.quint8)
    pc = pyaten.quantize_per_channel(px, pyaten.tensor([.1, .2, .3], dtype=pyaten.float64),
                                     pyaten.tensor([0, 1, 2]), 0, pyaten.quint8)
    cases = [
        (lambda: pyaten.index_select(pc, 1, pyaten.tensor([0])),
         lambda: torch.index_select(tc, 1, torch.tensor([0]))),
        (lambda: pyaten.index_select(pq, 0, pyaten.tensor([5])),
         lambda: torch.index_select(tq, 0, torch.tensor([5]))),
        (lambda: pyaten.index_select(pq, 0, pyaten.tensor([1.0])),
         lambda: torch.index_select(tq, 0, torch.tensor([1.0]))),
        (lambda: pyaten.index_select(pq, 0, pyaten.tensor([[1]])),
         lambda: torch.index_select(tq, 0, torch.tensor([[1]]))),
        (lambda: pyaten.index_select(pq, 2, pyaten.tensor([1])),
         lambda: torch.index_select(tq, 2, torch.tensor([1]))),
    ]
    for ours_call, theirs_call in cases:
        with pytest.raises(Exception) as expected:
            theirs_call()
        with pytest.raises(type(expected.value)) as got:
            ours_call()
        assert str(got.value) == str(expected.value)
