"""nn.utils.parametrize, nn.utils.parametrizations (weight_norm, spectral_norm, orthogonal),
the older weight_norm/spectral_norm hooks and nn.utils.prune against torch: values,
gradients, state-dict keys, reprs and errors from the same weights and seeds."""

from __future__ import annotations

import importlib
import warnings

import pytest
import torch
import torch.nn.utils.parametrize
import torch.nn.utils.prune
from _helpers import assert_same, run_both, same_error
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
import pyaten.nn.utils.parametrize
import pyaten.nn.utils.prune


def _lib(m, name):
    return importlib.import_module(f"{m.__name__}.{name}")


def _linear(m, out_features=3, in_features=5, seed=0):
    m.manual_seed(seed)
    return m.nn.Linear(in_features, out_features)


def _same(scenario, **tolerance) -> None:
    """Run `scenario(m)` for pyaten and torch (the same seeds) and compare what it returns."""
    pair = run_both(lambda: scenario(pyaten), lambda: scenario(torch))
    if pair is not None:
        ours, theirs = pair
        assert_same(ours, theirs, **tolerance)


def _step(m, module, x_shape):
    """The parametrized weight, the output and the originals' gradients after a backward."""
    x = m.linspace(-1, 1, x_shape[0] * x_shape[1]).reshape(*x_shape)
    out = module(x)
    (out * out).sum().backward()
    grads = [p.grad for p in module.parameters()]
    return module.weight.detach(), out.detach(), grads


# --- register_parametrization --------------------------------------------------------------


def _symmetric(m):
    class Symmetric(m.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a):
            return a.triu()

    return Symmetric()


def test_custom_parametrization_values_keys_and_repr() -> None:
    def scenario(m):
        lin = _linear(m, 4, 4)
        P = _lib(m, "nn.utils.parametrize")
        P.register_parametrization(lin, "weight", _symmetric(m))
        keys = list(lin.state_dict())
        text = repr(lin)
        assert P.is_parametrized(lin) and P.is_parametrized(lin, "weight")
        assert not P.is_parametrized(lin, "bias")
        assert P.type_before_parametrizations(lin) is m.nn.Linear
        weight, out, grads = _step(m, lin, (2, 4))
        with m.no_grad():
            lin.weight = m.eye(4) * 3  # through right_inverse
        assigned = lin.parametrizations.weight.original.clone()
        return weight, out, grads, keys, text, type(lin).__name__, assigned

    _same(scenario)


def test_chained_parametrizations_cached_and_removed() -> None:
    def scenario(m):
        lin = _linear(m, 4, 4)
        P = _lib(m, "nn.utils.parametrize")

        class Double(m.nn.Module):
            def forward(self, x):
                return 2 * x

        P.register_parametrization(lin, "weight", _symmetric(m))
        P.register_parametrization(lin, "weight", Double(), unsafe=True)
        with P.cached():
            same_object = lin.weight is lin.weight
        different = lin.weight is lin.weight
        weight = lin.weight.detach().clone()
        P.remove_parametrizations(lin, "weight", leave_parametrized=True)
        after = (type(lin).__name__, sorted(lin.state_dict()), lin.weight.detach().clone())
        return same_object, different, weight, after, isinstance(lin.weight, m.nn.Parameter)

    _same(scenario)


def test_remove_without_leaving_parametrized_restores_the_original() -> None:
    def scenario(m):
        lin = _linear(m, 4, 4)
        P = _lib(m, "nn.utils.parametrize")
        before = lin.weight.detach().clone()
        P.register_parametrization(lin, "weight", _symmetric(m))
        P.remove_parametrizations(lin, "weight", leave_parametrized=False)
        return before.triu(), lin.weight.detach(), hasattr(lin, "parametrizations")

    _same(scenario)


def test_parametrize_errors_match_torch() -> None:
    def not_found(m):
        _lib(m, "nn.utils.parametrize").register_parametrization(
            _linear(m), "nope", _symmetric(m))

    def changes_shape(m):
        class Cut(m.nn.Module):
            def forward(self, x):
                return x[:1]

        _lib(m, "nn.utils.parametrize").register_parametrization(_linear(m), "weight", Cut())

    def changes_dtype(m):
        class Half(m.nn.Module):
            def forward(self, x):
                return x.double()

        _lib(m, "nn.utils.parametrize").register_parametrization(_linear(m), "weight", Half())

    def remove_missing(m):
        _lib(m, "nn.utils.parametrize").remove_parametrizations(_linear(m), "weight")

    def returns_non_tensor(m):
        class Bad(m.nn.Module):
            def forward(self, x):
                return 3

        _lib(m, "nn.utils.parametrize").register_parametrization(_linear(m), "weight", Bad())

    for scenario in (not_found, changes_shape, changes_dtype, remove_missing, returns_non_tensor):
        same_error(lambda s=scenario: s(pyaten), lambda s=scenario: s(torch))


def test_pickling_a_parametrized_module_refused() -> None:
    import pickle

    lin = pyaten.nn.Linear(2, 2)
    pyaten.nn.utils.parametrize.register_parametrization(lin, "weight", _symmetric(pyaten))
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(lin)


# --- parametrizations ----------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm(dim) -> None:
    def scenario(m):
        lin = _linear(m)
        m.nn.utils.parametrizations.weight_norm(lin, dim=dim)
        pl = lin.parametrizations.weight
        return (pl.original0.detach(), pl.original1.detach(), *_step(m, lin, (2, 5)),
                sorted(lin.state_dict()))

    _same(scenario)


def test_weight_norm_loads_the_older_state_dict_keys() -> None:
    old = pyaten.nn.Linear(5, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pyaten.nn.utils.weight_norm(old)
    new = pyaten.nn.utils.parametrizations.weight_norm(pyaten.nn.Linear(5, 3))
    new.load_state_dict(old.state_dict())
    assert pyaten.allclose(new.weight, old.weight_g * old.weight_v / old.weight_v.norm(
        dim=1, keepdim=True))


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4)])
@pytest.mark.parametrize("iterations", [1, 3])
def test_spectral_norm(shape, iterations) -> None:
    def scenario(m):
        lin = _linear(m, *shape)
        m.nn.utils.parametrizations.spectral_norm(lin, n_power_iterations=iterations)
        sn = lin.parametrizations.weight[0]
        first = (sn._u.clone(), sn._v.clone())
        result = _step(m, lin, (2, shape[1]))
        lin.eval()
        frozen = lin.weight.detach()
        return first, result, frozen, sorted(lin.state_dict())

    _same(scenario, rtol=1e-4, atol=1e-5)


def test_spectral_norm_conv_transpose_and_errors() -> None:
    def scenario(m):
        m.manual_seed(1)
        conv = m.nn.ConvTranspose2d(2, 3, 3)
        m.nn.utils.parametrizations.spectral_norm(conv)
        return conv.parametrizations.weight[0].dim, conv.weight.detach()

    _same(scenario, rtol=1e-4, atol=1e-5)
    same_error(lambda: pyaten.nn.utils.parametrizations.spectral_norm(pyaten.nn.Linear(2, 2),
                                                                      "nope"),
               lambda: torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(2, 2),
                                                                     "nope"))
    same_error(lambda: pyaten.nn.utils.parametrizations.spectral_norm(pyaten.nn.Linear(2, 2),
                                                                      dim=3),
               lambda: torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(2, 2),
                                                                     dim=3))


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder", None])
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_orthogonal(orthogonal_map, shape) -> None:
    def scenario(m):
        lin = _linear(m, *shape)
        m.nn.utils.parametrizations.orthogonal(lin, orthogonal_map=orthogonal_map)
        weight, out, grads = _step(m, lin, (2, shape[1]))
        w = weight if shape[0] >= shape[1] else weight.mT
        gram = w.mT @ w  # orthonormal columns
        tall = m.eye(max(shape), min(shape)) + 0.3 * m.linspace(-1, 1, lin.weight.numel()).reshape(
            max(shape), min(shape))
        q = m.linalg.qr(tall)[0]
        with m.no_grad():
            lin.weight = q if shape[0] >= shape[1] else q.mT  # stored as base, X = -I
        return weight, out, grads, gram, lin.weight.detach(), sorted(lin.state_dict())

    _same(scenario, rtol=1e-4, atol=1e-5)


def test_orthogonal_without_trivialization_and_errors() -> None:
    def scenario(m):
        lin = _linear(m, 5, 3)
        m.nn.utils.parametrizations.orthogonal(lin, "householder", use_trivialization=False)
        return _step(m, lin, (2, 3)), sorted(lin.state_dict())

    _same(scenario, rtol=1e-4, atol=1e-5)
    for bad in (
        lambda m: m.nn.utils.parametrizations.orthogonal(m.nn.Linear(2, 2), "svd"),
        lambda m: m.nn.utils.parametrizations.orthogonal(m.nn.BatchNorm1d(3), "weight"),
        lambda m: m.nn.utils.parametrizations.orthogonal(m.nn.Linear(2, 2), "nope"),
    ):
        same_error(lambda b=bad: b(pyaten), lambda b=bad: b(torch))


# --- the older hooks ------------------------------------------------------------------------


def test_old_weight_norm_hook() -> None:
    def scenario(m):
        lin = _linear(m)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m.nn.utils.weight_norm(lin)
        message = str(caught[0].message).replace("torch.", "pyaten.")
        result = _step(m, lin, (2, 5))
        keys = sorted(lin.state_dict())
        m.nn.utils.remove_weight_norm(lin)
        return message, caught[0].category, result, keys, lin.weight.detach()

    _same(scenario)
    for bad in (lambda m: m.nn.utils.weight_norm(m.nn.utils.weight_norm(m.nn.Linear(2, 2))),
                lambda m: m.nn.utils.remove_weight_norm(m.nn.Linear(2, 2))):
        same_error(lambda b=bad: b(pyaten), lambda b=bad: b(torch))


def test_old_spectral_norm_hook() -> None:
    def scenario(m):
        m.manual_seed(0)
        conv = m.nn.Conv1d(2, 3, 3)
        m.nn.utils.spectral_norm(conv)
        x = m.linspace(-1, 1, 10).reshape(1, 2, 5)
        for _ in range(3):
            out = conv(x)
        out.sum().backward()
        keys = sorted(conv.state_dict())
        conv.eval()
        frozen = conv(x).detach()
        m.nn.utils.remove_spectral_norm(conv)
        return out.detach(), conv.weight.detach(), frozen, keys, sorted(conv.state_dict())

    _same(scenario, rtol=1e-4, atol=1e-5)
    for bad in (lambda m: m.nn.utils.spectral_norm(m.nn.utils.spectral_norm(m.nn.Linear(2, 2))),
                lambda m: m.nn.utils.remove_spectral_norm(m.nn.Linear(2, 2)),
                lambda m: m.nn.utils.spectral_norm(m.nn.Linear(2, 2), n_power_iterations=0)):
        same_error(lambda b=bad: b(pyaten), lambda b=bad: b(torch))


# --- pruning --------------------------------------------------------------------------------


def test_pruning_methods_compose_as_torchs() -> None:
    def scenario(m):
        prune = _lib(m, "nn.utils.prune")
        m.manual_seed(0)
        lin, conv = m.nn.Linear(6, 5), m.nn.Conv2d(3, 4, 2)
        prune.random_unstructured(lin, "weight", amount=0.3)
        prune.l1_unstructured(lin, "weight", amount=5)
        prune.l1_unstructured(lin, "bias", amount=0.4)
        prune.ln_structured(conv, "weight", amount=0.5, n=2, dim=0)
        prune.random_structured(conv, "weight", amount=1, dim=1)
        prune.l1_unstructured(conv, "bias", amount=0.5, importance_scores=m.arange(4.0))
        prune.identity(conv, "bias")
        hooks = [type(h).__name__ for h in conv._forward_pre_hooks.values()]
        out = conv(m.ones(1, 3, 3, 3)) + 0
        out.sum().backward()
        return (lin.weight.detach(), lin.weight_mask, lin.bias.detach(), conv.weight.detach(),
                conv.weight_mask, conv.bias.detach(), hooks, sorted(conv.state_dict()),
                prune.is_pruned(conv), conv.weight_orig.grad, len(conv._forward_pre_hooks))

    _same(scenario)


def test_global_unstructured_remove_and_custom_mask() -> None:
    def scenario(m):
        prune = _lib(m, "nn.utils.prune")
        m.manual_seed(0)
        a, b = m.nn.Linear(6, 5), m.nn.Linear(5, 3)
        prune.global_unstructured([(a, "weight"), (b, "weight"), (b, "bias")],
                                  pruning_method=prune.L1Unstructured, amount=0.4)
        masks = (a.weight_mask, b.weight_mask, b.bias_mask)
        prune.custom_from_mask(a, "bias", mask=m.tensor([1.0, 0, 1, 0, 1]))
        prune.remove(a, "weight")
        after = (sorted(a.state_dict()), type(a.weight).__name__, a.weight.detach(),
                 a.bias.detach())
        pruned = prune.L1Unstructured(amount=2).prune(m.tensor([3.0, -1, 2, 0.5]))
        return masks, after, prune.is_pruned(m.nn.Sequential(a, b)), pruned

    _same(scenario)


def test_pruning_errors_match_torch() -> None:
    def lin(m):
        m.manual_seed(0)
        return m.nn.Linear(6, 5)

    for bad in (
        lambda m, p: p.l1_unstructured(lin(m), "weight", amount=1.5),
        lambda m, p: p.l1_unstructured(lin(m), "weight", amount=100),
        lambda m, p: p.l1_unstructured(lin(m), "weight", amount=-1),
        lambda m, p: p.l1_unstructured(lin(m), "weight", amount="x"),
        lambda m, p: p.remove(lin(m), "weight"),
        lambda m, p: p.ln_structured(lin(m), "bias", amount=1, n=1, dim=0),
        lambda m, p: p.random_structured(lin(m), "weight", amount=1, dim=4),
        lambda m, p: p.global_unstructured([(lin(m), "weight")], p.RandomStructured, amount=1),
    ):
        same_error(lambda b=bad: b(pyaten, pyaten.nn.utils.prune),
                   lambda b=bad: b(torch, torch.nn.utils.prune))


def test_pruned_module_trains() -> None:
    def scenario(m):
        lin = _linear(m)
        _lib(m, "nn.utils.prune").l1_unstructured(lin, "weight", amount=0.5)
        opt = m.optim.SGD(lin.parameters(), lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            lin(m.linspace(-1, 1, 10).reshape(2, 5)).pow(2).sum().backward()
            opt.step()
        return lin.weight.detach(), lin.weight_orig.detach(), int((lin.weight == 0).sum())

    _same(scenario)


@settings(max_examples=25, deadline=None)
@given(
    values=st.lists(st.integers(-1000, 1000), min_size=2, max_size=40, unique=True),
    fraction=st.floats(0, 1),
    as_count=st.booleans(),
)
def test_l1_unstructured_prune_property(values, fraction, as_count) -> None:
    amount = round(fraction * len(values)) if as_count else fraction
    ours = pyaten.nn.utils.prune.L1Unstructured(amount).prune(pyaten.tensor(values) / 7.0)
    theirs = torch.nn.utils.prune.L1Unstructured(amount).prune(torch.tensor(values) / 7.0)
    assert_same(ours, theirs)
    pruned = amount if as_count else round(fraction * len(values))
    assert int((ours == 0).sum()) == pruned + (0 in values and ours[values.index(0)] == 0
                                               and not _pruned_zero(values, pruned))


def _pruned_zero(values: list[int], pruned: int) -> bool:
    """Whether the entry 0 is among the `pruned` smallest magnitudes (it is the smallest)."""
    return 0 in values and pruned > 0
