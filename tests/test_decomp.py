"""pyaten._decomp: every decomposition equals its eager operator (and PyTorch 2.13 has one
for the same operator); make_fx with a decomposition table records the decomposed calls."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
from pyaten._decomp import core_aten_decompositions, decomposition_table, get_decompositions
from pyaten.fx.experimental.proxy_tensor import make_fx

aten = pyaten.ops.aten


def _t(*shape, low=-2.0, high=2.0, dtype=pyaten.float32, seed=0):
    g = pyaten.Generator().manual_seed(seed)
    return pyaten.rand(*shape, generator=g, dtype=dtype) * (high - low) + low


# operator -> samples: (args, kwargs) built for a dtype
SAMPLES = {
    "aten.addmm.default": lambda d: [((_t(2, 4, dtype=d), _t(2, 3, dtype=d), _t(3, 4, dtype=d)),
                                      {}),
                                     ((_t(4, dtype=d), _t(2, 3, dtype=d), _t(3, 4, dtype=d)),
                                      {"beta": 0.5, "alpha": 2})],
    "aten.mv.default": lambda d: [((_t(3, 4, dtype=d), _t(4, dtype=d)), {})],
    "aten._softmax.default": lambda d: [((_t(3, 5, dtype=d), 1, False), {}),
                                        ((_t(3, 5, dtype=d), 0, False), {})],
    "aten._log_softmax.default": lambda d: [((_t(3, 5, dtype=d), -1, False), {})],
    "aten._softmax_backward_data.default": lambda d: [
        ((_t(3, 5, dtype=d), _t(3, 5, low=0, high=1, dtype=d), 1, d), {})],
    "aten.logsumexp.default": lambda d: [((_t(3, 5, dtype=d), [1]), {}),
                                         ((_t(3, 5, dtype=d), [0, 1], True), {})],
    "aten.silu.default": lambda d: [((_t(7, dtype=d),), {})],
    "aten.gelu.default": lambda d: [((_t(7, dtype=d),), {}),
                                    ((_t(7, dtype=d),), {"approximate": "tanh"})],
    "aten.hardtanh.default": lambda d: [((_t(7, dtype=d),), {}), ((_t(7, dtype=d), -0.5, 0.5),
                                                                  {})],
    "aten.leaky_relu.default": lambda d: [((_t(7, dtype=d),), {}), ((_t(7, dtype=d), 0.2), {})],
    "aten.elu.default": lambda d: [((_t(7, dtype=d),), {}), ((_t(7, dtype=d), 0.5, 2.0, 1.5),
                                                             {})],
    "aten.hardsigmoid.default": lambda d: [((_t(9, low=-4, high=4, dtype=d),), {})],
    "aten.hardswish.default": lambda d: [((_t(9, low=-4, high=4, dtype=d),), {})],
    "aten.softplus.default": lambda d: [((_t(9, low=-30, high=30, dtype=d),), {}),
                                        ((_t(9, dtype=d), 2.0, 1.0), {})],
    "aten.mish.default": lambda d: [((_t(9, dtype=d),), {})],
    "aten.threshold_backward.default": lambda d: [((_t(6, dtype=d), _t(6, dtype=d), 0.0), {})],
    "aten.sigmoid_backward.default": lambda d: [((_t(6, dtype=d), _t(6, low=0, high=1,
                                                                      dtype=d)), {})],
    "aten.tanh_backward.default": lambda d: [((_t(6, dtype=d), _t(6, low=-1, high=1,
                                                                   dtype=d)), {})],
    "aten.silu_backward.default": lambda d: [((_t(6, dtype=d), _t(6, dtype=d)), {})],
    "aten.rsub.Tensor": lambda d: [((_t(4, dtype=d), _t(4, dtype=d)), {"alpha": 2})],
    "aten.rsub.Scalar": lambda d: [((_t(4, dtype=d), 3.0), {})],
    "aten.addcmul.default": lambda d: [((_t(4, dtype=d), _t(4, dtype=d), _t(4, dtype=d)),
                                        {"value": 0.5})],
    "aten.addcdiv.default": lambda d: [((_t(4, dtype=d), _t(4, dtype=d),
                                         _t(4, low=1, high=2, dtype=d)), {"value": 2})],
    "aten.lerp.Scalar": lambda d: [((_t(4, dtype=d), _t(4, dtype=d), 0.3), {})],
    "aten.clamp_min.default": lambda d: [((_t(5, dtype=d), 0.1), {})],
    "aten.clamp_max.default": lambda d: [((_t(5, dtype=d), 0.1), {})],
    "aten.mse_loss.default": lambda d: [((_t(5, dtype=d), _t(5, dtype=d, seed=1), r), {})
                                        for r in (0, 1, 2)],
    "aten.smooth_l1_loss.default": lambda d: [((_t(5, dtype=d), _t(5, dtype=d, seed=1), r,
                                                b), {}) for r in (0, 1, 2) for b in (1.0, 0.5)],
    "aten.huber_loss.default": lambda d: [((_t(5, dtype=d), _t(5, dtype=d, seed=1), r, 0.7),
                                           {}) for r in (0, 1, 2)],
    "aten.native_layer_norm.default": lambda d: [
        ((_t(2, 3, 4, dtype=d), [4], _t(4, dtype=d), _t(4, dtype=d), 1e-5), {}),
        ((_t(2, 3, 4, dtype=d), [3, 4], None, None, 1e-5), {})],
}


def test_every_decomposition_has_samples() -> None:
    assert sorted(SAMPLES) == sorted(str(op) for op in decomposition_table)


@pytest.mark.parametrize("name", sorted(SAMPLES))
@pytest.mark.parametrize("dtype", [pyaten.float32, pyaten.float64], ids=["f32", "f64"])
def test_decomposition_equals_the_operator(name, dtype) -> None:
    op = next(o for o in decomposition_table if str(o) == name)
    for args, kwargs in SAMPLES[name](dtype):
        expected = op(*args, **kwargs)
        got = decomposition_table[op](*args, **kwargs)
        pairs = zip(got, expected) if isinstance(expected, tuple) else [(got, expected)]
        for a, b in pairs:
            assert a.shape == b.shape and a.dtype == b.dtype
            tol = 1e-5 if dtype == pyaten.float32 else 1e-12
            assert pyaten.allclose(a, b, rtol=tol, atol=tol), (name, args, kwargs)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_pytorch_decomposes_the_same_operator(name) -> None:
    from torch._decomp import decomposition_table as torch_table

    packet, overload = name.split(".")[1:]
    assert getattr(getattr(torch.ops.aten, packet), overload) in torch_table


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(0, 1), st.integers(0, 2**16))
def test_softmax_decompositions_on_random_shapes(rows, cols, dim, seed) -> None:
    x = _t(rows, cols, low=-30, high=30, seed=seed)
    for op in (aten._softmax.default, aten._log_softmax.default):
        assert pyaten.allclose(decomposition_table[op](x, dim, False), op(x, dim, False),
                               rtol=1e-5, atol=1e-5)


def test_make_fx_with_decompositions_records_the_decomposed_calls() -> None:
    def f(x, w, b):
        return pyaten.nn.functional.linear(x, w, b).softmax(-1)

    inputs = [_t(2, 3), _t(4, 3, seed=1), _t(4, seed=2)]
    plain = make_fx(f)(*inputs)
    lowered = make_fx(f, decomposition_table=get_decompositions([aten.addmm, aten._softmax]))(
        *inputs)
    targets = [str(n.target) for n in lowered.graph.nodes if n.op == "call_function"]
    assert "aten.addmm.default" not in targets and "aten._softmax.default" not in targets
    assert "aten.mm.default" in targets and "aten.exp.default" in targets
    assert pyaten.allclose(lowered(*inputs), plain(*inputs), rtol=1e-6, atol=1e-6)
    assert set(core_aten_decompositions()) == set(decomposition_table)
    # a decomposition that calls another decomposed operator is lowered in turn
    nested = make_fx(lambda x: pyaten.nn.functional.hardswish(x),
                     decomposition_table=get_decompositions([aten.hardswish,
                                                             aten.hardsigmoid]))(_t(5))
    assert "aten.clamp.default" in [str(n.target) for n in nested.graph.nodes]
