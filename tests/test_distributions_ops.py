"""The sampling operators behind pyaten.distributions (`_standard_gamma`,
`_sample_dirichlet`, `binomial`) draw PyTorch's numbers after `manual_seed`, bit for bit;
their gradient operators (`_standard_gamma_grad`, `_dirichlet_grad`) give PyTorch's values;
errors, Meta and autograd as PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
from pyaten.native import compiled

_R = np.random.default_rng(2)
DTYPES = ["float32", "float64"]


@pytest.fixture(params=["compiled", "python"])
def loops(request):
    """Run a sampler test on the Numba loops and on the pure-Python ones."""
    compiled.set_enabled(request.param == "compiled")
    yield request.param
    compiled.set_enabled(None)


def seeded(seed: int, fn_t, fn_p, *arrays):
    torch.manual_seed(seed)
    pyaten.manual_seed(seed)
    a = fn_t(*[torch.tensor(x) for x in arrays])
    b = fn_p(*[pyaten.tensor(x) for x in arrays])
    return a, b


def assert_bits(ours, theirs) -> None:
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_standard_gamma_stream(dtype, loops):
    alpha = np.concatenate([_R.uniform(0.01, 1, 40), _R.uniform(1, 40, 40),
                            [0.0, 1e-4, 1.0, 1e3, -1.0, np.nan, np.inf]]).astype(dtype)
    a, b = seeded(11, torch._standard_gamma, pyaten._standard_gamma, alpha.reshape(-1, 1))
    assert_bits(b, a)
    # the generator (its words and its cached normal) is left where torch leaves it
    assert_bits(pyaten.randn(5), torch.randn(5))
    assert_bits(pyaten.normal(pyaten.zeros(3), 1.0), torch.normal(torch.zeros(3), 1.0))


@settings(max_examples=15)
@given(st.lists(st.floats(0.05, 50.0), min_size=1, max_size=6), st.integers(0, 2**31))
def test_standard_gamma_stream_property(alphas, seed):
    a, b = seeded(seed, torch._standard_gamma, pyaten._standard_gamma,
                  np.array(alphas, dtype=np.float64))
    assert_bits(b, a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sample_dirichlet_stream(dtype, loops):
    conc = _R.uniform(0.05, 6.0, (12, 4)).astype(dtype)
    a, b = seeded(3, torch._sample_dirichlet, pyaten._sample_dirichlet, conc)
    assert_bits(b, a)
    assert_bits(pyaten.rand(3), torch.rand(3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_binomial_stream(dtype, loops):
    count = _R.integers(0, 300, 200).astype(dtype)
    prob = _R.uniform(0, 1, 200).astype(dtype)
    prob[:6] = [0.0, 1.0, 0.5, 1e-6, 1 - 1e-6, np.nan]
    a, b = seeded(5, torch.binomial, pyaten.binomial, count, prob)
    assert_bits(b, a)
    assert_bits(pyaten.rand(3), torch.rand(3))


def test_binomial_broadcasts_prob_and_keeps_generator_argument(loops):
    g_t = torch.Generator().manual_seed(4)
    g_p = pyaten.Generator().manual_seed(4)
    count = np.full((3, 2), 20.0)
    a = torch.binomial(torch.tensor(count), torch.tensor([0.3, 0.9], dtype=torch.float64),
                       generator=g_t)
    b = pyaten.binomial(pyaten.tensor(count), pyaten.tensor([0.3, 0.9], dtype=pyaten.float64),
                        generator=g_p)
    assert_bits(b, a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_standard_gamma_grad_values(dtype):
    x = np.concatenate([_R.uniform(0.01, 0.8, 30), _R.uniform(0.8, 60, 70)]).astype(dtype)
    alpha = np.concatenate([_R.uniform(0.1, 8, 60), _R.uniform(8, 40, 40)]).astype(dtype)
    alpha[-5:] = x[-5:] * 1.05  # the saddle-point branch around x = alpha
    a = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x))
    b = pyaten._standard_gamma_grad(pyaten.tensor(alpha), pyaten.tensor(x))
    assert_bits(b, a)


def test_dirichlet_grad_values():
    x = _R.uniform(0.01, 0.99, 300)
    alpha = _R.uniform(0.1, 20, 300)
    total = alpha + _R.uniform(0.1, 20, 300)
    args = (x, alpha, total)
    a = torch._dirichlet_grad(*map(torch.tensor, args))
    b = pyaten._dirichlet_grad(*map(pyaten.tensor, args))
    assert_bits(b, a)
    # float32: ATen's float32 steps (series branches, digammas) emulated
    a32 = torch._dirichlet_grad(*[torch.tensor(v, dtype=torch.float32) for v in args])
    b32 = pyaten._dirichlet_grad(*[pyaten.tensor(v, dtype=pyaten.float32) for v in args])
    assert_bits(b32, a32)


def test_standard_gamma_backward_uses_the_reparameterised_gradient(loops):
    values = [0.3, 2.0, 12.0]
    torch.manual_seed(1)
    pyaten.manual_seed(1)
    xt = torch.tensor(values, requires_grad=True)
    xp = pyaten.tensor(values, requires_grad=True)
    torch._standard_gamma(xt).sum().backward()
    pyaten._standard_gamma(xp).sum().backward()
    assert_bits(xp.grad, xt.grad)


def test_not_differentiable_samplers():
    x = pyaten.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="_sample_dirichlet"):
        pyaten._sample_dirichlet(x).sum().backward()
    with pytest.raises(NotImplementedError, match="binomial"):
        pyaten.binomial(x, pyaten.tensor([0.5, 0.5])).sum().backward()


def _error(fn):
    try:
        fn()
    except Exception as error:
        return type(error), str(error)
    return None


@pytest.mark.parametrize("call", [
    lambda m: m._standard_gamma(m.tensor([1, 2])),
    lambda m: m._standard_gamma(m.tensor([1.0, 2.0]).half()),
    lambda m: m._sample_dirichlet(m.tensor([1, 2])),
    lambda m: m._sample_dirichlet(m.tensor([1.0]).half()),
    lambda m: m.binomial(m.tensor([1, 2]), m.tensor([0.5, 0.5])),
    lambda m: m.binomial(m.tensor([1.0, 2.0]), m.tensor([1, 0])),
    lambda m: m.binomial(m.tensor([1.0, 2.0]).half(), m.tensor([0.5, 0.5])),
    lambda m: m.binomial(m.tensor([1.0, 2.0]), m.tensor([0.5, 0.5], dtype=m.float64)),
    lambda m: m.binomial(m.tensor([1.0, 2.0]).half(), m.tensor([0.5, 0.5]).half()),
    lambda m: m._standard_gamma_grad(m.tensor([1, 2]), m.tensor([1, 2])),
])
def test_errors_as_torch(call):
    assert _error(lambda: call(pyaten)) == _error(lambda: call(torch))


def test_meta_and_empty():
    assert tuple(pyaten._standard_gamma(pyaten.ones(2, 3, device="meta")).shape) == (2, 3)
    # the others have no Meta kernel in PyTorch either: the same NotImplementedError
    for call in (lambda m: m._sample_dirichlet(m.ones(3, device="meta")),
                 lambda m: m.binomial(m.ones(3, device="meta"), m.ones(3, device="meta")),
                 lambda m: m._dirichlet_grad(*(m.ones(3, device="meta"),) * 3)):
        assert _error(lambda c=call: c(pyaten)) == _error(lambda c=call: c(torch))
    out = pyaten._standard_gamma(pyaten.ones(0, 3))
    assert tuple(out.shape) == (0, 3)
    assert tuple(pyaten._sample_dirichlet(pyaten.ones(0, 3)).shape) == (0, 3)


def test_distributions_use_the_operators():
    import torch.distributions as TD

    import pyaten.distributions as PD

    conc = _R.uniform(0.5, 3.0, (2, 3))
    for name, args in [("Gamma", (conc, conc[::-1].copy())), ("Dirichlet", (conc,)),
                       ("Beta", (conc[0], conc[1])), ("Chi2", (conc,)),
                       ("StudentT", (conc,)), ("Binomial", (conc.round() * 7, conc / 3))]:
        torch.manual_seed(8)
        pyaten.manual_seed(8)
        a = getattr(TD, name)(*map(torch.tensor, args)).sample((2,))
        b = getattr(PD, name)(*map(pyaten.tensor, args)).sample((2,))
        assert_bits(b, a)
