"""pyaten.nn.functional's activations against torch.nn.functional: values and gradients
(float32 and float64, first and second order), OpInfo samples, non-contiguous and
channels-last inputs, in-place forms, `out=`, PyTorch's errors, `rrelu`'s random slopes, and
Meta shapes of every declared activation operator (`elu`, `gelu_backward`,
`log_sigmoid_forward`, `_prelu_kernel_backward`, `rrelu_with_noise`, ...).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from _grad_helpers import check_grads, check_opinfo_grads, opinfo_grad_cases
from _helpers import (
    assert_same,
    compare_samples,
    from_torch,
    opinfo_samples,
    run_both,
    same_error,
    to_pyaten,
)

import pyaten
import pyaten.nn.functional as F
from pyaten.ops import aten

# OpInfo names whose gradients are compared here.
GRAD_SURFACE = frozenset("""
nn.functional.relu nn.functional.relu6 nn.functional.leaky_relu nn.functional.elu
nn.functional.selu nn.functional.celu nn.functional.gelu nn.functional.silu nn.functional.mish
nn.functional.softplus nn.functional.softshrink nn.functional.hardshrink nn.functional.hardtanh
nn.functional.hardsigmoid nn.functional.hardswish nn.functional.logsigmoid
nn.functional.tanhshrink nn.functional.threshold nn.functional.glu nn.functional.prelu
nn.functional.rrelu nn.functional.softmin nn.functional.softsign
""".split())

# Second order compared too (PyTorch has no derivative of hardsigmoid_backward).
SECOND_ORDER = GRAD_SURFACE - {"nn.functional.hardsigmoid"}

# OpInfo variants left out, with the reason (covered by hand-written cases below).
NOT_YET = {
    ("nn.functional.rrelu", ""): (
        "its samples train (random slopes drawn by each library's own generator); "
        "test_rrelu_training checks the slopes and their gradient"
    ),
}

MAX_SAMPLES = 5


def _ours(name):
    return getattr(F, name.rpartition(".")[2])


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE, NOT_YET))
def test_opinfo_gradients_match_torch(info) -> None:
    check_opinfo_grads(info, info.name in SECOND_ORDER, limit=MAX_SAMPLES)


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE, NOT_YET))
def test_opinfo_values_match_torch_float32(info) -> None:
    fn = _ours(info.name)
    compare_samples(fn, info.op, opinfo_samples(info, torch.float32)[:MAX_SAMPLES],
                    rtol=1e-5, atol=1e-5)


# --- hand-written differential cases ---------------------------------------------------------

# (name, keyword arguments): every pointwise activation, with non-default arguments too.
POINTWISE = [
    ("relu", {}), ("relu6", {}), ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.2}),
    ("elu", {}), ("elu", {"alpha": 0.7}), ("selu", {}), ("celu", {}), ("celu", {"alpha": 1.3}),
    ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("mish", {}),
    ("softplus", {}), ("softplus", {"beta": 2, "threshold": 1}), ("softshrink", {}),
    ("softshrink", {"lambd": 0.3}), ("hardshrink", {}), ("hardshrink", {"lambd": 0.3}),
    ("hardtanh", {}), ("hardtanh", {"min_val": -0.5, "max_val": 2.0}), ("hardsigmoid", {}),
    ("hardswish", {}), ("logsigmoid", {}), ("tanhshrink", {}),
    ("threshold", {"threshold": 0.1, "value": -2.0}), ("rrelu", {}),
    ("rrelu", {"lower": 0.1, "upper": 0.4}), ("softsign", {}), ("tanh", {}), ("sigmoid", {}),
]

# Points on and around every kink and branch (-3, 3, 0, +-0.5, +-1, 6 ...), and far out.
EDGES = [-30.0, -6.0, -3.5, -3.0, -2.0, -1.0, -0.5, -0.3, -0.0, 0.0, 0.1, 0.3, 0.5, 1.0, 2.0,
         3.0, 3.5, 6.0, 7.0, 20.0, 25.0]


def _ids(case):
    name, kwargs = case
    return name + "".join(f"-{k}={v}" for k, v in kwargs.items())


def _noncontiguous(dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(6, 5, generator=g, dtype=dtype) * 3).t()


@pytest.mark.parametrize("case", POINTWISE, ids=_ids)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pointwise_values_and_gradients(case, dtype) -> None:
    name, kwargs = case
    tdtype = getattr(torch, dtype)
    x = _noncontiguous(tdtype)
    ours, theirs = getattr(F, name), getattr(TF, name)
    assert_same(ours(from_torch(x), **kwargs), theirs(x, **kwargs), rtol=1e-5, atol=1e-6)
    edges = torch.tensor(EDGES, dtype=tdtype)
    assert_same(ours(from_torch(edges), **kwargs), theirs(edges, **kwargs), rtol=1e-5,
                atol=1e-6)
    tol = 1e-5 if dtype == "float32" else 1e-7
    check_grads(lambda t: ours(t, **kwargs), lambda t: theirs(t, **kwargs),
                [x.detach()], second_order=dtype == "float64" and name != "hardsigmoid",
                rtol=tol, atol=tol)
    check_grads(lambda t: ours(t, **kwargs), lambda t: theirs(t, **kwargs), [edges],
                rtol=tol, atol=tol)


@pytest.mark.parametrize("case", [c for c in POINTWISE if c[0] not in (
    "logsigmoid", "tanhshrink", "softsign", "softplus", "softshrink", "hardshrink", "gelu",
    "tanh", "sigmoid")], ids=_ids)
def test_inplace_forms(case) -> None:
    name, kwargs = case
    x = _noncontiguous(torch.float64)
    expected = getattr(TF, name)(x, **kwargs)
    for call in (lambda t: getattr(F, name)(t, **kwargs, inplace=True),
                 lambda t: getattr(F, name + "_")(t, **kwargs) if hasattr(F, name + "_")
                 else getattr(F, name)(t, **kwargs, inplace=True)):
        ours = from_torch(x.clone())
        version = ours._version
        result = call(ours)
        assert result is ours and ours._version > version
        assert_same(ours, expected)
    # on a non-leaf: the gradient flows through the in-place form as torch's does
    check_grads(lambda t: getattr(F, name)(t * 1, **kwargs, inplace=True),
                lambda t: getattr(TF, name)(t * 1, **kwargs, inplace=True), [x.detach()])


def test_tensor_and_torch_namespace_forms() -> None:
    x = _noncontiguous(torch.float64)
    p = from_torch(x)
    assert_same(pyaten.selu(p), torch.selu(x))
    assert_same(pyaten.celu(p, 0.5), torch.celu(x, 0.5))
    assert_same(pyaten.threshold(p, 0.5, 9.0), torch.threshold(x, 0.5, 9.0))
    assert_same(pyaten.hardshrink(p, 0.7), torch.hardshrink(x, 0.7))
    assert_same(p.hardshrink(0.7), x.hardshrink(0.7))
    assert_same(pyaten.rrelu(p), torch.rrelu(x))
    w = torch.tensor([0.25, 0.5, 0.1, 0.2, 0.3, 0.6], dtype=torch.float64)
    assert_same(p.prelu(from_torch(w)), x.prelu(w))
    assert_same(pyaten.relu(p), torch.relu(x))
    for name in ("elu", "gelu", "silu", "mish", "softplus", "softshrink", "hardtanh",
                 "hardsigmoid", "hardswish", "leaky_relu", "relu6", "glu", "log_sigmoid"):
        assert_same(getattr(pyaten.nn._C, name)(p), getattr(torch._C._nn, name)(x))
    q, xq = from_torch(x.clone()), x.clone()
    pyaten.selu_(q), torch.selu_(xq)
    pyaten.threshold_(q, 0.0, 1.5), torch.threshold_(xq, 0.0, 1.5)
    pyaten.rrelu_(q), torch.rrelu_(xq)
    assert_same(q, xq)


def test_out_variants() -> None:
    x = _noncontiguous(torch.float64)
    p = from_torch(x)
    for name, args in [("elu", ()), ("gelu", ()), ("silu", ()), ("mish", ()),
                       ("softplus", (2, 5)), ("softshrink", (0.2,)), ("hardtanh", (-0.5, 1)),
                       ("hardsigmoid", ()), ("hardswish", ()), ("leaky_relu", (0.3,)),
                       ("log_sigmoid", ()), ("glu", (-1,))]:
        out_o, out_t = pyaten.empty(0, dtype=pyaten.float64), torch.empty(0, dtype=torch.float64)
        r_o = getattr(pyaten.nn._C, name)(p, *args, out=out_o)
        r_t = getattr(torch._C._nn, name)(x, *args, out=out_t)
        assert r_o is out_o
        assert_same(out_o, r_t)
    for name, args in [("threshold", (0.1, 3.0)), ("hardshrink", (0.4,)), ("celu", (0.5,))]:
        out_o, out_t = pyaten.empty(0, dtype=pyaten.float64), torch.empty(0, dtype=torch.float64)
        getattr(pyaten.ops.aten, name).out(p, *args, out=out_o)
        getattr(torch.ops.aten, name).out(x, *args, out=out_t)
        assert_same(out_o, out_t)


@pytest.mark.parametrize("case", [c for c in POINTWISE if c[0] != "rrelu"] +
                         [("glu", {})], ids=_ids)
def test_forward_mode(case) -> None:
    name, kwargs = case
    x, v = _noncontiguous(torch.float64, 1), _noncontiguous(torch.float64, 2)
    fw_t, fw_o = torch.autograd.forward_ad, pyaten.autograd.forward_ad
    with fw_t.dual_level():
        theirs = fw_t.unpack_dual(getattr(TF, name)(fw_t.make_dual(x, v), **kwargs)).tangent
    with fw_o.dual_level():
        dual = fw_o.make_dual(from_torch(x), from_torch(v))
        ours = fw_o.unpack_dual(getattr(F, name)(dual, **kwargs)).tangent
    assert_same(ours, theirs)


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_glu(dim, dtype) -> None:
    x = torch.randn(4, 6, 2, 8, dtype=getattr(torch, dtype)).permute(0, 3, 1, 2)  # 4x8x6x2
    assert_same(F.glu(from_torch(x), dim), TF.glu(x, dim), rtol=1e-5, atol=1e-6)
    if dtype == "float64":
        check_grads(lambda t: F.glu(t, dim), lambda t: TF.glu(t, dim), [x], second_order=True)


@pytest.mark.parametrize("weight", [[0.25], [0.1, 0.2, 0.3], []])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3), (3,)])
def test_prelu(shape, weight) -> None:
    x = torch.randn(*shape, dtype=torch.float64)
    w = torch.tensor(weight or 0.3, dtype=torch.float64)
    if len(shape) == 4:
        x = x.contiguous(memory_format=torch.channels_last)
    pair = run_both(lambda: F.prelu(from_torch(x), from_torch(w)), lambda: TF.prelu(x, w))
    if pair is None:
        return
    assert_same(*pair)
    check_grads(F.prelu, TF.prelu, [x, w], second_order=True)


def test_channels_last_inputs() -> None:
    x = torch.randn(2, 3, 4, 5, dtype=torch.float64).contiguous(memory_format=torch.channels_last)
    for name in ("relu", "gelu", "elu", "hardswish", "silu", "leaky_relu", "logsigmoid"):
        ours, theirs = getattr(F, name)(from_torch(x)), getattr(TF, name)(x)
        assert_same(ours, theirs, strides=True)
    assert_same(F.softmax(from_torch(x), 1), TF.softmax(x, 1))


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_softmax_family(name) -> None:
    x = torch.randn(3, 4, 5, dtype=torch.float64)
    ours, theirs = getattr(F, name), getattr(TF, name)
    for dim in (0, 1, -1):
        assert_same(ours(from_torch(x), dim), theirs(x, dim))
        assert_same(ours(from_torch(x), dim, dtype=pyaten.float32),
                    theirs(x, dim, dtype=torch.float32))
    check_grads(lambda t: ours(t, 1), lambda t: theirs(t, 1), [x], second_order=True)
    for shape in [(), (4,), (2, 3), (2, 3, 4), (2, 3, 4, 5)]:  # implicit dim: warns, as torch
        t = torch.randn(shape, dtype=torch.float64)
        with pytest.warns(UserWarning, match="Implicit dimension choice for " + name):
            got = ours(from_torch(t))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_same(got, theirs(t))


def test_rrelu_training() -> None:
    x = torch.randn(200, dtype=torch.float64)
    x[0], x[1] = 0.0, -1.0
    for lower, upper in [(0.125, 1 / 3), (0.1, 0.5), (0.2, 0.2)]:
        p = from_torch(x).requires_grad_(True)
        y = F.rrelu(p, lower, upper, training=True)
        y.sum().backward()
        xs, ys, gs = x.numpy(), y.detach().numpy(), p.grad.numpy()
        neg = xs < 0
        slope = ys[neg] / xs[neg]
        assert np.all(slope >= lower - 1e-12) and np.all(slope <= upper + 1e-12)
        if upper > lower:
            assert len(np.unique(np.round(slope, 12))) > 1  # each element draws its own slope
        np.testing.assert_allclose(gs[neg], slope)
        np.testing.assert_array_equal(ys[~neg], xs[~neg])
        np.testing.assert_array_equal(gs[xs > 0], 1.0)
    # a generator makes it reproducible; eval mode uses the mean slope
    noise = pyaten.empty(0, dtype=pyaten.float64)
    g = pyaten.Generator().manual_seed(3)
    a = pyaten.ops.aten.rrelu_with_noise(from_torch(x), noise, 0.1, 0.5, True, generator=g)
    g.manual_seed(3)
    b = pyaten.ops.aten.rrelu_with_noise(from_torch(x), noise, 0.1, 0.5, True, generator=g)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert tuple(noise.shape) == (200,)
    assert_same(F.rrelu(from_torch(x), 0.1, 0.5), TF.rrelu(x, 0.1, 0.5))
    # in place while training
    q = from_torch(x.clone())
    assert F.rrelu(q, training=True, inplace=True) is q
    assert np.all(q.numpy()[x.numpy() > 0] == x.numpy()[x.numpy() > 0])


def test_backward_helpers_directly() -> None:
    g = torch.randn(5, 4, dtype=torch.float64)
    x = torch.randn(5, 4, dtype=torch.float64) * 3
    cases = [
        ("elu_backward", (g, 1.0, 1.0, 1.0, False, x)),
        ("elu_backward", (g, 0.5, 1.2, 0.7, True, TF.elu(x, 0.5))),
        ("gelu_backward", (g, x)), ("silu_backward", (g, x)), ("mish_backward", (g, x)),
        ("softplus_backward", (g, x, 1.5, 2.0)), ("softshrink_backward", (g, x, 0.5)),
        ("hardshrink_backward", (g, x, 0.5)), ("hardtanh_backward", (g, x, -1.0, 1.0)),
        ("hardsigmoid_backward", (g, x)), ("hardswish_backward", (g, x)),
        ("leaky_relu_backward", (g, x, 0.01, False)),
        ("log_sigmoid_backward", (g, x, torch.exp(-x.abs()))),
        ("glu_backward", (g[:, :2], x, 1)),
        ("rrelu_with_noise_backward", (g, x, torch.ones_like(x), 0.1, 0.3, False, False)),
    ]
    for name, args in cases:
        ours = getattr(aten, name).default(*to_pyaten(args))
        assert_same(ours, getattr(torch.ops.aten, name).default(*args))
    assert_same(aten.gelu_backward.default(from_torch(g), from_torch(x), approximate="tanh"),
                torch.ops.aten.gelu_backward(g, x, approximate="tanh"))
    assert_same(aten._prelu_kernel_backward.default(*to_pyaten((g, x, torch.full((1, 4), 0.2,
                dtype=torch.float64)))),
                torch.ops.aten._prelu_kernel_backward(g, x, torch.full((1, 4), 0.2,
                                                                       dtype=torch.float64)))
    # their own derivatives: the gradient of the gradient
    for _name, make in [
        ("elu_backward", lambda m, g, x: m.ops.aten.elu_backward(g, 1.0, 1.0, 1.0, False, x)),
        ("gelu_backward", lambda m, g, x: m.ops.aten.gelu_backward(g, x)),
        ("softplus_backward", lambda m, g, x: m.ops.aten.softplus_backward(g, x, 1.0, 20.0)),
        ("log_sigmoid_backward",
         lambda m, g, x: m.ops.aten.log_sigmoid_backward(g, x, m.exp(-x.abs()).detach())),
        ("glu_backward", lambda m, g, x: m.ops.aten.glu_backward(g[:, :2], x, 1)),
        ("hardswish_backward", lambda m, g, x: m.ops.aten.hardswish_backward(g, x)),
        ("leaky_relu_backward",
         lambda m, g, x: m.ops.aten.leaky_relu_backward(g, x, 0.2, False)),
    ]:
        check_grads(lambda gg, xx, f=make: f(pyaten, gg, xx),
                    lambda gg, xx, f=make: f(torch, gg, xx), [g, x])


def test_errors() -> None:
    x = torch.randn(3, 5)
    p = from_torch(x)
    same_error(lambda: F.glu(p, 1), lambda: TF.glu(x, 1))
    same_error(lambda: F.glu(from_torch(torch.tensor(1.0))), lambda: TF.glu(torch.tensor(1.0)))
    same_error(lambda: F.hardtanh(p, 2.0, 1.0), lambda: TF.hardtanh(x, 2.0, 1.0))
    same_error(lambda: F.gelu(p, approximate="fast"), lambda: TF.gelu(x, approximate="fast"))
    same_error(lambda: F.softshrink(p, -1.0), lambda: TF.softshrink(x, -1.0))
    same_error(lambda: F.rrelu(p, 0.5, 0.1, True), lambda: TF.rrelu(x, 0.5, 0.1, True))
    same_error(lambda: F.celu(p, 0.0), lambda: TF.celu(x, 0.0))
    w = torch.ones(3)
    same_error(lambda: F.prelu(from_torch(torch.randn(2, 4)), from_torch(w)),
               lambda: TF.prelu(torch.randn(2, 4), w))
    same_error(lambda: F.prelu(p, from_torch(torch.ones(3, 5))),
               lambda: TF.prelu(x, torch.ones(3, 5)))
    same_error(lambda: F.prelu(p, from_torch(torch.ones(1, dtype=torch.float64))),
               lambda: TF.prelu(x, torch.ones(1, dtype=torch.float64)))
    same_error(lambda: F.prelu(from_torch(torch.tensor(1.0)), from_torch(w)),
               lambda: TF.prelu(torch.tensor(1.0), w))
    ints = torch.arange(6)
    for name in ("elu", "gelu", "silu", "mish", "softplus", "softshrink", "hardshrink",
                 "hardsigmoid", "hardswish", "leaky_relu", "logsigmoid", "glu", "selu", "celu",
                 "rrelu"):
        same_error(lambda n=name: getattr(F, n)(from_torch(ints)),
                   lambda n=name: getattr(TF, n)(ints))
    bools = torch.tensor([True, False])
    same_error(lambda: F.hardtanh(from_torch(bools)), lambda: TF.hardtanh(bools))
    same_error(lambda: F.relu6(from_torch(bools)), lambda: TF.relu6(bools))
    u8 = torch.arange(4, dtype=torch.uint8)
    same_error(lambda: F.hardtanh(from_torch(u8)), lambda: TF.hardtanh(u8))
    assert_same(F.relu6(from_torch(u8 * 3)), TF.relu6(u8 * 3))
    assert_same(F.threshold(from_torch(ints), 2, 9), TF.threshold(ints, 2, 9))
    assert_same(F.hardtanh(from_torch(ints), 0, 3), TF.hardtanh(ints, 0, 3))
    # integer inputs take float bounds truncated (no promotion); uint8 refuses negative ones
    assert_same(F.hardtanh(from_torch(ints - 3), -2.7, 1.9), TF.hardtanh(ints - 3, -2.7, 1.9))
    assert_same(F.hardtanh(from_torch(ints)), TF.hardtanh(ints))
    assert_same(F.hardtanh(from_torch(u8), -0.5, 2), TF.hardtanh(u8, -0.5, 2))
    # 0-dim and empty inputs; complex silu (PyTorch's silu takes complex)
    for t in (torch.tensor(-2.5), torch.tensor(3.0), torch.empty(0, 3)):
        for name in ("leaky_relu", "elu", "gelu", "hardtanh", "logsigmoid", "hardswish"):
            assert_same(getattr(F, name)(from_torch(t)), getattr(TF, name)(t))
    c = torch.tensor([1 + 1j, -2 + 0.5j], dtype=torch.complex128)
    assert_same(F.silu(from_torch(c)), TF.silu(c))
    assert_same(aten.silu_backward.default(from_torch(c), from_torch(c)),
                torch.ops.aten.silu_backward(c, c))


@pytest.mark.parametrize("name,kwargs", [("elu", {"alpha": -0.5}),
                                         ("leaky_relu", {"negative_slope": -0.5})])
def test_inplace_negative_slope_backward(name, kwargs) -> None:
    """PyTorch's in-place `elu_`/`leaky_relu_` entries differentiate from the result and so
    refuse a negative slope at backward time. pyaten's derivatives.yaml keeps one entry per
    operator group (docs/autograd.md): the in-place kernel saves the input before the write,
    so the gradient is the out-of-place one, which is what torch computes without `inplace`."""
    x = torch.randn(6, dtype=torch.float64)

    def grad(m, f, t, inplace):
        t = t.detach().clone().requires_grad_(True)
        y = getattr(f, name)(t * 1, **kwargs, inplace=inplace)
        return m.autograd.grad(y.sum(), t)[0]

    with pytest.raises(RuntimeError, match="In-place"):
        grad(torch, TF, x, True)
    assert_same(grad(pyaten, F, from_torch(x), True), grad(torch, TF, x, False))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_reduced_precision(dtype) -> None:
    x = torch.randn(4, 6).to(getattr(torch, dtype))
    for name in ("relu", "elu", "gelu", "silu", "mish", "softplus", "hardswish", "hardsigmoid",
                 "leaky_relu", "hardtanh", "logsigmoid", "softshrink", "glu"):
        assert_same(getattr(F, name)(from_torch(x)), getattr(TF, name)(x))


def _meta(t):
    return t.to("meta") if isinstance(t, pyaten.Tensor) else t


META_CASES = [
    ("elu", lambda m, x, g: (x,)), ("elu_backward", lambda m, x, g: (g, 1, 1, 1, False, x)),
    ("gelu", lambda m, x, g: (x,)), ("gelu_backward", lambda m, x, g: (g, x)),
    ("silu", lambda m, x, g: (x,)), ("silu_backward", lambda m, x, g: (g, x)),
    ("mish", lambda m, x, g: (x,)), ("mish_backward", lambda m, x, g: (g, x)),
    ("softplus", lambda m, x, g: (x,)), ("softplus_backward", lambda m, x, g: (g, x, 1, 20)),
    ("softshrink", lambda m, x, g: (x,)), ("softshrink_backward", lambda m, x, g: (g, x, 0.5)),
    ("hardshrink", lambda m, x, g: (x,)), ("hardshrink_backward", lambda m, x, g: (g, x, 0.5)),
    ("hardsigmoid", lambda m, x, g: (x,)), ("hardsigmoid_backward", lambda m, x, g: (g, x)),
    ("hardswish", lambda m, x, g: (x,)), ("hardswish_backward", lambda m, x, g: (g, x)),
    ("hardtanh", lambda m, x, g: (x,)), ("hardtanh_backward", lambda m, x, g: (g, x, -1, 1)),
    ("leaky_relu", lambda m, x, g: (x,)),
    ("leaky_relu_backward", lambda m, x, g: (g, x, 0.01, False)),
    ("threshold", lambda m, x, g: (x, 0.5, 1.0)), ("relu6", lambda m, x, g: (x,)),
    ("selu", lambda m, x, g: (x,)), ("celu", lambda m, x, g: (x,)),
    ("log_sigmoid", lambda m, x, g: (x,)), ("log_sigmoid_forward", lambda m, x, g: (x,)),
    ("log_sigmoid_backward", lambda m, x, g: (g, x, x)),
    ("glu", lambda m, x, g: (x, 1)), ("glu_backward", lambda m, x, g: (g[:, :2], x, 1)),
    ("prelu", lambda m, x, g: (x, m.ones(4))),
    ("_prelu_kernel", lambda m, x, g: (x, m.ones(1, 4))),
    ("_prelu_kernel_backward", lambda m, x, g: (g, x, m.ones(1, 4))),
    ("rrelu", lambda m, x, g: (x,)),
    ("rrelu_with_noise", lambda m, x, g: (x, m.empty(3, 4), 0.1, 0.3, True)),
    ("rrelu_with_noise_backward", lambda m, x, g: (g, x, x, 0.1, 0.3, True, False)),
]


@pytest.mark.parametrize("name,make", META_CASES, ids=[c[0] for c in META_CASES])
def test_meta_shapes(name, make) -> None:
    x_t, g_t = torch.randn(3, 4, device="meta"), torch.randn(3, 4, device="meta")
    x_o, g_o = pyaten.empty(3, 4, device="meta"), pyaten.empty(3, 4, device="meta")
    theirs = getattr(torch.ops.aten, name)(
        *(a.to("meta") if isinstance(a, torch.Tensor) else a for a in make(torch, x_t, g_t)))
    args = tuple(_meta(a) for a in make(pyaten, x_o, g_o))
    ours = getattr(aten, name)(*args)
    assert_same(ours, theirs)
    # and in place, where the operator has that form
    inplace = name + "_"
    if hasattr(torch.ops.aten, inplace) and name not in ("rrelu_with_noise",):
        y_o = pyaten.empty(3, 4, device="meta")
        assert getattr(aten, inplace)(y_o, *args[1:]) is y_o
