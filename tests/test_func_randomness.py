"""Random calls under vmap and jacfwd, each `randomness` mode, against torch.func (PyTorch
2.13): the same errors (class and message), and the same numbers drawn from the same seed."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pyaten

# name -> f(m, x): a function of x (3 elements) that draws on tensors vmap does not batch
DRAWS = {
    "rand": lambda m, x: x * m.rand(3),
    "randn_scalar": lambda m, x: x + m.randn(()),
    "rand_like": lambda m, x: x * m.rand_like(x),
    "uniform_": lambda m, x: x * m.empty(3).uniform_(),
    "normal_": lambda m, x: x * m.rand(3).normal_(),
    "bernoulli": lambda m, x: x * m.bernoulli(m.full((3,), 0.5)),
    "randperm": lambda m, x: x * m.randperm(3),
    "randint": lambda m, x: x * m.randint(0, 5, (3,)),
    "normal_float_float": lambda m, x: x * m.normal(0.0, 1.0, (3,)),
    "normal_tensors": lambda m, x: x * m.normal(m.zeros(3), m.ones(3)),
    "poisson": lambda m, x: x * m.poisson(m.ones(3)),
    "multinomial": lambda m, x: x * m.multinomial(m.ones(3), 3),
    "dropout": lambda m, x: m.dropout(x, 0.5, True),
    "F.dropout": lambda m, x: m.nn.functional.dropout(m.ones(3), 0.5) * x,
    "alpha_dropout": lambda m, x: m.alpha_dropout(m.ones(3), 0.5, True) * x,
    "dropout_eval": lambda m, x: m.nn.functional.dropout(x, 0.5, training=False),
    "dropout_": lambda m, x: m.dropout_(m.ones(3), 0.5, True) * x,
    "cauchy": lambda m, x: x * m.ops.aten.cauchy(m.empty(3)),
    "rand_out": lambda m, x: x * m.rand(3, out=m.empty(3)),
}
MODES = ("error", "same", "different")


def _outcome(m, run):
    m.manual_seed(0)
    try:
        out = run()
    except RuntimeError as e:
        return ("error", str(e))
    return ("ok", tuple(out.shape), out.detach().numpy())


def _assert_same(ours, theirs) -> None:
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "error":
        assert ours[1] == theirs[1]
        return
    assert ours[1] == theirs[1]
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(DRAWS))
def test_jacfwd_randomness(name: str, mode: str) -> None:
    f = DRAWS[name]
    data = np.arange(1.0, 4.0)
    ours = _outcome(pyaten, lambda: pyaten.func.jacfwd(lambda x: f(pyaten, x),
                                                       randomness=mode)(pyaten.tensor(data)))
    theirs = _outcome(torch, lambda: torch.func.jacfwd(lambda x: f(torch, x),
                                                       randomness=mode)(torch.tensor(data)))
    _assert_same(ours, theirs)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(DRAWS))
def test_vmap_randomness_on_unbatched_tensors(name: str, mode: str) -> None:
    f = DRAWS[name]
    data = np.zeros((2, 3))
    ours = _outcome(pyaten, lambda: pyaten.func.vmap(lambda x: f(pyaten, x),
                                                     randomness=mode)(pyaten.tensor(data)))
    theirs = _outcome(torch, lambda: torch.func.vmap(lambda x: f(torch, x),
                                                     randomness=mode)(torch.tensor(data)))
    _assert_same(ours, theirs)


# jacfwd's per-vector loop: an input that requires grad, and jacfwd under vmap
LOOPS = {
    "requires_grad": lambda m, f, mode: m.func.jacfwd(f, randomness=mode)(
        m.ones(3, requires_grad=True)),
    "under_vmap": lambda m, f, mode: m.func.vmap(m.func.jacfwd(f, randomness=mode),
                                                 randomness="same")(m.ones(2, 3)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["rand", "rand_like", "uniform_", "bernoulli", "randperm",
                                  "dropout"])
@pytest.mark.parametrize("where", sorted(LOOPS))
def test_jacfwd_randomness_in_its_loop(where: str, name: str, mode: str) -> None:
    f, run = DRAWS[name], LOOPS[where]
    ours = _outcome(pyaten, lambda: run(pyaten, lambda x: f(pyaten, x), mode))
    theirs = _outcome(torch, lambda: run(torch, lambda x: f(torch, x), mode))
    _assert_same(ours, theirs)


def test_jacfwd_bad_randomness() -> None:
    for m in (pyaten, torch):
        with pytest.raises(RuntimeError, match="Only allowed values for randomness are "
                                               "'error', 'different', or 'same'. Got foo"):
            m.func.jacfwd(lambda x: x, randomness="foo")(m.ones(2))


def test_jacfwd_without_random_calls_is_unchanged() -> None:
    data = np.arange(1.0, 4.0)
    for mode in MODES:
        ours = pyaten.func.jacfwd(lambda x: x.sin() * x.sum(), randomness=mode)(
            pyaten.tensor(data))
        theirs = torch.func.jacfwd(lambda x: x.sin() * x.sum(), randomness=mode)(
            torch.tensor(data))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["dropout1d", "dropout2d", "feature_alpha_dropout"])
@pytest.mark.parametrize("randomness", ["different", "same"])
def test_feature_dropouts_draw_per_sample_as_torch(name, randomness) -> None:
    """Feature dropout's noise is made with `new_empty`, as torch's: under vmap it is
    batched, so 'different' draws a mask per sample; the values equal torch's, same seed."""
    shape = (4, 3, 5) if name == "dropout1d" else (4, 3, 5, 2)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)

    def run(lib, func):
        lib.manual_seed(3)
        fn = getattr(lib.nn.functional, name)
        return func.vmap(lambda a: fn(a, 0.5, training=True), randomness=randomness)(
            lib.tensor(x))

    ours, theirs = run(pyaten, pyaten.func), run(torch, torch.func)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)
    if "alpha" not in name:  # (alpha dropout sets dropped values to a constant, not 0)
        masks = {tuple((ours[i] != 0).flatten().tolist()) for i in range(4)}
        assert (len(masks) > 1) == (randomness == "different")
