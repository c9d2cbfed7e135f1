"""pyaten.optim against torch.optim: the same parameters and the same losses give the same
parameters, state tensors and state dicts step after step; schedulers give the same lr
sequences; errors have the same type and message.

Each scenario is a function of the library (`m` is pyaten or torch).
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest
import torch
from _helpers import assert_same, same_error
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
import pyaten.optim

LIBS = (pyaten, torch)

# --- a small problem: three parameters of different shapes, a deterministic loss ------------

_RNG = np.random.default_rng(0)
_W = _RNG.standard_normal((3, 4))
_B = _RNG.standard_normal((3, 1))
_S = _RNG.standard_normal(2)
_X = _RNG.standard_normal((4, 5))
_Y = _RNG.standard_normal((3, 5))


def _params(m, dtype: str) -> list:
    d = getattr(m, dtype)
    return [m.tensor(v, dtype=d, requires_grad=True) for v in (_W, _B, _S)]


def _loss(m, params: list, dtype: str, step: int):
    w, b, s = params
    d = getattr(m, dtype)
    x, y = m.tensor(_X, dtype=d), m.tensor(_Y, dtype=d)
    fit = ((w.mm(x) + b - y) ** 2).sum()
    return fit + ((s - 0.1 * step) ** 2).sum() * 3.0 + (s * b.sum()).sum()


def _train(m, opt, params: list, dtype: str, steps: range, closure: bool = False) -> None:
    for i in steps:
        if closure:

            def again(i=i):
                opt.zero_grad()
                loss = _loss(m, params, dtype, i)
                loss.backward()
                return loss

            opt.step(again)
        else:
            opt.zero_grad()
            _loss(m, params, dtype, i).backward()
            opt.step()


def _state_values(opt, params: list) -> list:
    """Each parameter's state as a sorted list of (name, value)."""
    return [sorted(opt.state[p].items()) if p in opt.state else [] for p in params]


def _assert_same_state(ours: list, theirs: list, rtol: float | None, atol: float | None) -> None:
    assert [[k for k, _ in s] for s in ours] == [[k for k, _ in s] for s in theirs]
    for a, b in zip(ours, theirs):
        assert_same([v for _, v in a], [v for _, v in b], rtol, atol)


def _assert_same_groups(ours: list, theirs: list) -> None:
    """State-dict `param_groups`: the same options with the same values, same param ids."""
    assert [sorted(g) for g in ours] == [sorted(g) for g in theirs]
    for a, b in zip(ours, theirs):
        for key, value in b.items():
            if isinstance(value, torch.Tensor):
                assert_same(a[key], value)
            else:
                assert a[key] == value, (key, a[key], value)


# name -> (class name, options)
CONFIGS = {
    "sgd": ("SGD", {"lr": 0.01}),
    "sgd-momentum": ("SGD", {"lr": 0.01, "momentum": 0.9}),
    "sgd-dampening-wd": ("SGD", {"lr": 0.01, "momentum": 0.8, "dampening": 0.3,
                                 "weight_decay": 0.1}),
    "sgd-nesterov-max": ("SGD", {"lr": 0.005, "momentum": 0.9, "nesterov": True,
                                 "maximize": True}),
    "adam": ("Adam", {"lr": 0.05}),
    "adam-amsgrad-wd": ("Adam", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.1}),
    "adam-max-betas": ("Adam", {"lr": 0.01, "betas": (0.8, 0.9), "maximize": True,
                                "eps": 1e-6}),
    "adam-decoupled": ("Adam", {"lr": 0.05, "weight_decay": 0.1,
                                "decoupled_weight_decay": True}),
    "adamw": ("AdamW", {"lr": 0.05}),
    "adamw-amsgrad": ("AdamW", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.5}),
    "rmsprop": ("RMSprop", {"lr": 0.01}),
    "rmsprop-centered-momentum": ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5,
                                              "weight_decay": 0.1}),
    "rmsprop-momentum-max": ("RMSprop", {"lr": 0.01, "momentum": 0.9, "alpha": 0.9,
                                         "maximize": True}),
    "adagrad": ("Adagrad", {"lr": 0.1}),
    "adagrad-decay": ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "initial_accumulator_value": 0.3,
                                  "weight_decay": 0.1}),
    "adadelta": ("Adadelta", {}),
    "adadelta-wd": ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1,
                                 "maximize": True}),
    "adamax": ("Adamax", {"lr": 0.05}),
    "adamax-wd": ("Adamax", {"lr": 0.05, "betas": (0.7, 0.99), "weight_decay": 0.1}),
    "nadam": ("NAdam", {"lr": 0.05}),
    "nadam-decoupled": ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "momentum_decay": 0.01,
                                  "decoupled_weight_decay": True}),
    "nadam-l2-max": ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "maximize": True}),
    "radam": ("RAdam", {"lr": 0.05}),
    "radam-decoupled": ("RAdam", {"lr": 0.05, "weight_decay": 0.1,
                                  "decoupled_weight_decay": True}),
    "radam-l2-betas": ("RAdam", {"lr": 0.05, "weight_decay": 0.1, "betas": (0.9, 0.5)}),
}

# float32 drifts by rounding over many steps; float64 must agree to ~1e-10.
TOL = {"float32": (1e-4, 1e-5), "float64": (None, None)}


def _make(m, name: str, params, groups: bool = False):
    """The optimizer of CONFIGS[name]; with `groups`, the last parameter in a second group
    with its own weight decay."""
    cls, options = CONFIGS[name]
    if groups:
        params = [{"params": params[:-1]}, {"params": params[-1:], "weight_decay": 0.05}]
    return getattr(m.optim, cls)(params, **options)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_steps_match_torch(name: str, dtype: str) -> None:
    rtol, atol = TOL[dtype]
    results = []
    for m in LIBS:
        params = _params(m, dtype)
        opt = _make(m, name, params, groups=True)
        # two parameter groups, and 25 steps (the last ones through a closure)
        _train(m, opt, params, dtype, range(20))
        _train(m, opt, params, dtype, range(20, 25), closure=True)
        results.append((params, _state_values(opt, params), opt.state_dict()))
    (ours, ours_state, ours_sd), (theirs, theirs_state, theirs_sd) = results
    assert_same(ours, theirs, rtol, atol)
    _assert_same_state(ours_state, theirs_state, rtol, atol)
    assert sorted(ours_sd) == sorted(theirs_sd) == ["param_groups", "state"]
    assert sorted(ours_sd["state"]) == sorted(theirs_sd["state"])
    _assert_same_groups(ours_sd["param_groups"], theirs_sd["param_groups"])


def test_step_counter_is_a_float32_scalar_tensor() -> None:
    for m in LIBS:
        params = _params(m, "float64")
        opt = m.optim.Adam(params)
        _train(m, opt, params, "float64", range(3))
        step = opt.state[params[0]]["step"]
        assert step.dtype == m.float32 and step.dim() == 0 and step.item() == 3.0


@pytest.mark.parametrize("name", ["sgd-momentum", "adam-amsgrad-wd", "rmsprop-centered-momentum",
                                  "adagrad-decay", "adadelta", "adamax", "nadam", "radam"])
def test_state_dict_round_trip(name: str) -> None:
    """Saved after 10 steps and loaded into a fresh optimizer, training goes on exactly as
    without the interruption; the saved dict is laid out as torch's."""
    dtype = "float64"
    m = pyaten
    params = _params(m, dtype)
    opt = _make(m, name, params)
    _train(m, opt, params, dtype, range(10))
    saved = copy.deepcopy(opt.state_dict())  # as if written to disk and read back

    fresh = [p.detach().clone().requires_grad_(True) for p in params]
    resumed = _make(m, name, fresh)
    resumed.load_state_dict(saved)
    _train(m, opt, params, dtype, range(10, 20))
    _train(m, resumed, fresh, dtype, range(10, 20))
    # NAdam's float32 `mu_product` comes back in the parameter's dtype (torch casts every
    # state tensor but `step`), so its resumed run differs by rounding only.
    rtol = 1e-6 if name == "nadam" else 0.0
    for a, b in zip(fresh, params):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=0)
    for a, b in zip(_state_values(resumed, fresh), _state_values(opt, params)):
        assert [k for k, _ in a] == [k for k, _ in b]
        for (k, x), (_, y) in zip(a, b):
            assert x.dtype == y.dtype or k == "mu_product"
            np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=rtol, atol=0)

    theirs_params = _params(torch, dtype)
    theirs = _make(torch, name, theirs_params)
    _train(torch, theirs, theirs_params, dtype, range(10))
    theirs_sd = theirs.state_dict()
    assert sorted(saved["state"]) == sorted(theirs_sd["state"])
    for i in theirs_sd["state"]:
        assert sorted(saved["state"][i]) == sorted(theirs_sd["state"][i])
    _assert_same_groups(saved["param_groups"], theirs_sd["param_groups"])


def test_load_state_dict_casts_and_keeps_step() -> None:
    """Floating state is cast to the parameter's dtype; `step` stays as saved."""
    def scenario(m):
        source = [m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)]
        opt = m.optim.Adam(source)
        source[0].grad = m.tensor([0.5, -0.5], dtype=m.float64)
        opt.step()
        target = [m.tensor([1.0, 2.0], dtype=m.float32, requires_grad=True)]
        loaded = m.optim.Adam(target, lr=0.5)
        loaded.load_state_dict(opt.state_dict())
        state = loaded.state[target[0]]
        return state["exp_avg"], state["step"], loaded.param_groups[0]["lr"]

    assert_same(scenario(pyaten), scenario(torch))


def test_param_groups_and_state_dict_layout() -> None:
    def scenario(m):
        a = m.ones(2, requires_grad=True)
        b = m.ones(3, requires_grad=True)
        c = m.ones(1, requires_grad=True)
        opt = m.optim.SGD([{"params": [a, b]}, {"params": c, "lr": 0.5}], lr=0.1, momentum=0.9)
        for p in (a, b):
            p.grad = m.ones_like(p)
        opt.step()
        sd = opt.state_dict()
        return sd["param_groups"], sorted(sd["state"]), sorted(sd["state"][0])

    ours, theirs = scenario(pyaten), scenario(torch)
    _assert_same_groups(ours[0], theirs[0])
    assert ours[1:] == theirs[1:]


def test_sgd_without_momentum_keeps_no_state() -> None:
    for m in LIBS:
        params = _params(m, "float64")
        opt = m.optim.SGD(params, lr=0.1)
        _train(m, opt, params, "float64", range(2))
        assert opt.state_dict()["state"] == {}


def test_adagrad_state_exists_before_the_first_step() -> None:
    ours = pyaten.optim.Adagrad(_params(pyaten, "float32"), initial_accumulator_value=0.2)
    theirs = torch.optim.Adagrad(_params(torch, "float32"), initial_accumulator_value=0.2)
    assert_same(
        [s["sum"] for s in ours.state_dict()["state"].values()],
        [s["sum"] for s in theirs.state_dict()["state"].values()],
    )


def test_parameters_without_grad_are_skipped() -> None:
    def scenario(m):
        a = m.tensor([1.0, 2.0], requires_grad=True)
        b = m.tensor([3.0], requires_grad=True)
        opt = m.optim.Adam([a, b], lr=0.1)
        a.grad = m.tensor([1.0, -1.0])
        opt.step()
        return a, b, len(opt.state)

    ours, theirs = scenario(pyaten), scenario(torch)
    assert_same(ours[:2], theirs[:2])
    assert ours[2] == theirs[2]


def test_zero_grad() -> None:
    def scenario(m):
        a = m.tensor([1.0, 2.0], requires_grad=True)
        opt = m.optim.SGD([a], lr=0.1)
        (a * a).sum().backward()
        opt.zero_grad(set_to_none=False)
        zeroed = a.grad.clone()
        opt.zero_grad()
        return zeroed, a.grad is None

    ours, theirs = scenario(pyaten), scenario(torch)
    assert_same(ours[0], theirs[0])
    assert ours[1] is theirs[1] is True


def test_step_hooks() -> None:
    def scenario(m):
        a = m.tensor([1.0], requires_grad=True)
        opt = m.optim.SGD([a], lr=0.1)
        a.grad = m.tensor([1.0])
        calls = []
        pre = opt.register_step_pre_hook(
            lambda o, args, kwargs: calls.append(("pre", args[0] is o, len(args), kwargs)))
        opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", len(args))))
        opt.step()
        pre.remove()
        opt.step()
        # a pre-hook may replace the arguments: here it adds a closure
        opt.register_step_pre_hook(lambda o, args, kwargs: (args, {"closure": lambda: 7.0}))
        return calls, a, opt.step()

    ours, theirs = scenario(pyaten), scenario(torch)
    assert ours[0] == theirs[0] == [("pre", True, 1, {})] + [("post", 1)] * 3
    assert ours[2] == theirs[2] == 7.0
    assert_same(ours[1], theirs[1])


def test_deepcopy_of_an_optimizer_steps_on_its_own() -> None:
    def scenario(m):
        params = _params(m, "float64")
        opt = m.optim.Adam(params, lr=0.1)
        _train(m, opt, params, "float64", range(3))
        twin = copy.deepcopy(opt)
        twin_params = twin.param_groups[0]["params"]
        _train(m, twin, twin_params, "float64", range(3, 6))
        return params, twin_params, sorted(twin.state[twin_params[0]])

    ours, theirs = scenario(pyaten), scenario(torch)
    assert_same(ours[:2], theirs[:2])
    assert ours[2] == theirs[2]


def test_state_dict_hooks() -> None:
    def scenario(m):
        a = m.tensor([1.0, 2.0], requires_grad=True)
        opt = m.optim.SGD([a], lr=0.1, momentum=0.9)
        a.grad = m.tensor([1.0, 1.0])
        opt.step()
        calls = []
        opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
        opt.register_state_dict_pre_hook(lambda o: calls.append("first"), prepend=True)
        opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
        saved = opt.state_dict()
        opt.register_load_state_dict_pre_hook(
            lambda o, sd: {k: v for k, v in sd.items() if k != "extra"})
        handle = opt.register_load_state_dict_post_hook(lambda o: calls.append("loaded"))
        opt.load_state_dict(saved)
        handle.remove()
        opt.load_state_dict(saved)
        return calls, sorted(saved)

    assert scenario(pyaten) == scenario(torch)


def test_named_parameters() -> None:
    def scenario(m):
        opt = m.optim.SGD([("w", m.ones(2, requires_grad=True))], lr=0.1)
        return opt.state_dict()["param_groups"][0]["param_names"]

    assert scenario(pyaten) == scenario(torch) == ["w"]


@settings(max_examples=20, deadline=None)
@given(
    lr=st.floats(1e-3, 0.5),
    momentum=st.sampled_from([0.0, 0.5, 0.9]),
    dampening=st.sampled_from([0.0, 0.25]),
    weight_decay=st.sampled_from([0.0, 0.01, 0.3]),
    nesterov=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_sgd_any_options_and_gradients(lr, momentum, dampening, weight_decay, nesterov, seed):
    """Fixed gradients assigned to `.grad`, any SGD options: the same parameters (or the
    same error when the options are invalid)."""
    rng = np.random.default_rng(seed)
    grads = [rng.standard_normal((2, 3)) for _ in range(6)]
    options = {"lr": lr, "momentum": momentum, "dampening": dampening,
               "weight_decay": weight_decay, "nesterov": nesterov}

    def run(m):
        p = m.tensor(np.ones((2, 3)), requires_grad=True)
        opt = m.optim.SGD([p], **options)
        for g in grads:
            p.grad = m.tensor(g)
            opt.step()
        return p

    if nesterov and (momentum <= 0 or dampening != 0):
        same_error(lambda: run(pyaten), lambda: run(torch))
    else:
        assert_same(run(pyaten), run(torch))


@settings(max_examples=15, deadline=None)
@given(
    name=st.sampled_from(["Adam", "AdamW", "NAdam", "RAdam", "Adamax", "RMSprop"]),
    lr=st.floats(1e-3, 0.2),
    beta1=st.floats(0.0, 0.95),
    seed=st.integers(0, 2**16),
)
def test_adaptive_optimizers_any_gradients(name, lr, beta1, seed):
    rng = np.random.default_rng(seed)
    grads = [rng.standard_normal(4) * 10.0 ** rng.integers(-3, 3) for _ in range(8)]
    options = {"lr": lr}
    if name != "RMSprop":
        options["betas"] = (beta1, 0.99)
    else:
        options["alpha"] = beta1

    def run(m):
        p = m.tensor(np.linspace(-1.0, 1.0, 4), requires_grad=True)
        opt = getattr(m.optim, name)([p], **options)
        for g in grads:
            p.grad = m.tensor(g)
            opt.step()
        return p

    assert_same(run(pyaten), run(torch))


# --- errors ---------------------------------------------------------------------------------

def _one(m):
    return m.ones(2, requires_grad=True)


ERRORS = {
    "negative lr": lambda m: m.optim.SGD([_one(m)], lr=-0.1),
    "negative momentum": lambda m: m.optim.SGD([_one(m)], lr=0.1, momentum=-0.5),
    "negative weight decay": lambda m: m.optim.SGD([_one(m)], weight_decay=-1.0),
    "nesterov without momentum": lambda m: m.optim.SGD([_one(m)], lr=0.1, nesterov=True),
    "nesterov with dampening": lambda m: m.optim.SGD([_one(m)], momentum=0.9, dampening=0.1,
                                                     nesterov=True),
    "adam beta": lambda m: m.optim.Adam([_one(m)], betas=(1.0, 0.999)),
    "adam beta2": lambda m: m.optim.Adam([_one(m)], betas=(0.9, -0.1)),
    "adam int betas": lambda m: m.optim.Adam([_one(m)], betas=(0, 0.99)),
    "adam eps": lambda m: m.optim.Adam([_one(m)], eps=-1e-8),
    "adamw lr": lambda m: m.optim.AdamW([_one(m)], lr=-1.0),
    "rmsprop alpha": lambda m: m.optim.RMSprop([_one(m)], alpha=-0.5),
    "adagrad lr_decay": lambda m: m.optim.Adagrad([_one(m)], lr_decay=-0.5),
    "adagrad accumulator": lambda m: m.optim.Adagrad([_one(m)], initial_accumulator_value=-1),
    "adadelta rho": lambda m: m.optim.Adadelta([_one(m)], rho=1.5),
    "nadam momentum_decay": lambda m: m.optim.NAdam([_one(m)], momentum_decay=-1.0),
    "radam beta": lambda m: m.optim.RAdam([_one(m)], betas=(0.9, 1.0)),
    "tensor lr of 2 elements": lambda m: m.optim.SGD([_one(m)], lr=m.tensor([0.1, 0.2])),
    "param twice": lambda m: (lambda p: m.optim.SGD([{"params": [p]}, {"params": [p]}]))(_one(m)),
    "non-leaf": lambda m: m.optim.SGD([_one(m) * 2], lr=0.1),
    "a tensor as params": lambda m: m.optim.SGD(_one(m), lr=0.1),
    "empty": lambda m: m.optim.SGD([], lr=0.1),
    "a set": lambda m: m.optim.SGD([{"params": {_one(m)}}], lr=0.1),
    "not a tensor": lambda m: m.optim.SGD([_one(m), 3.0], lr=0.1),
    "group not a dict": lambda m: m.optim.SGD([_one(m)]).add_param_group([_one(m)]),
    "names for some params": lambda m: m.optim.SGD([("a", _one(m)), _one(m)]),
    "named and unnamed groups": lambda m: m.optim.SGD([("a", _one(m))]).add_param_group(
        {"params": [_one(m)]}),
    "load: group count": lambda m: m.optim.SGD([_one(m)]).load_state_dict(
        {"state": {}, "param_groups": []}),
    "load: group size": lambda m: m.optim.SGD([_one(m)]).load_state_dict(
        m.optim.SGD([_one(m), _one(m)]).state_dict()),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_match_torch(case: str) -> None:
    fn = ERRORS[case]
    same_error(lambda: fn(pyaten), lambda: fn(torch))


def test_duplicate_parameter_in_one_group_warns() -> None:
    for m in LIBS:
        p = _one(m)
        with pytest.warns(UserWarning, match="duplicate parameters"):
            m.optim.SGD([p, p], lr=0.1)


# --- schedulers -----------------------------------------------------------------------------

SCHEDULERS = {
    "step": lambda m, o: m.optim.lr_scheduler.StepLR(o, step_size=7, gamma=0.5),
    "multistep": lambda m, o: m.optim.lr_scheduler.MultiStepLR(o, [5, 12, 12, 30], gamma=0.3),
    "exponential": lambda m, o: m.optim.lr_scheduler.ExponentialLR(o, gamma=0.95),
    "cosine": lambda m, o: m.optim.lr_scheduler.CosineAnnealingLR(o, T_max=15, eta_min=0.001),
    "cosine-restarts": lambda m, o: m.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        o, T_0=5, T_mult=2, eta_min=0.01),
    "cosine-restarts-1": lambda m, o: m.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=7),
    "lambda": lambda m, o: m.optim.lr_scheduler.LambdaLR(o, lambda e: 1.0 / (1 + e)),
    "lambda-per-group": lambda m, o: m.optim.lr_scheduler.LambdaLR(
        o, [lambda e: 0.9**e, lambda e: 1.0 + 0.1 * e]),
    "multiplicative": lambda m, o: m.optim.lr_scheduler.MultiplicativeLR(o, lambda e: 0.97),
    "constant": lambda m, o: m.optim.lr_scheduler.ConstantLR(o, factor=0.25, total_iters=8),
    "linear": lambda m, o: m.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=20),
    "linear-down": lambda m, o: m.optim.lr_scheduler.LinearLR(o, 1.0, 0.05, total_iters=30),
    "polynomial": lambda m, o: m.optim.lr_scheduler.PolynomialLR(o, total_iters=25, power=2.0),
    "onecycle": lambda m, o: m.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=61),
    "onecycle-3phase-linear": lambda m, o: m.optim.lr_scheduler.OneCycleLR(
        o, max_lr=[0.5, 2.0], epochs=6, steps_per_epoch=11, anneal_strategy="linear",
        three_phase=True, pct_start=0.4),
    "cyclic": lambda m, o: m.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=6),
    "cyclic-triangular2": lambda m, o: m.optim.lr_scheduler.CyclicLR(
        o, [0.01, 0.02], 0.1, step_size_up=4, step_size_down=7, mode="triangular2"),
    "cyclic-exp-range": lambda m, o: m.optim.lr_scheduler.CyclicLR(
        o, 0.01, 0.1, step_size_up=5, mode="exp_range", gamma=0.97),
    "cyclic-scale-fn": lambda m, o: m.optim.lr_scheduler.CyclicLR(
        o, 0.01, 0.1, step_size_up=5, scale_fn=lambda x: 1 / (1.0 + x), scale_mode="iterations",
        cycle_momentum=False),
    "sequential": lambda m, o: m.optim.lr_scheduler.SequentialLR(
        o, [m.optim.lr_scheduler.LinearLR(o, 0.1, total_iters=10),
            m.optim.lr_scheduler.CosineAnnealingLR(o, T_max=20),
            m.optim.lr_scheduler.StepLR(o, 5, 0.5)], milestones=[10, 35]),
    "chained": lambda m, o: m.optim.lr_scheduler.ChainedScheduler(
        [m.optim.lr_scheduler.ExponentialLR(o, 0.97),
         m.optim.lr_scheduler.MultiStepLR(o, [10, 20], 0.5)]),
}


def _sched_optimizer(m, kind: str = "SGD"):
    groups = [{"params": [m.ones(2, requires_grad=True)]},
              {"params": [m.ones(3, requires_grad=True)], "lr": 0.3}]
    if kind == "Adam":
        return m.optim.Adam(groups, lr=0.1)
    return m.optim.SGD(groups, lr=0.1, momentum=0.9)


def _lr_sequence(sched, opt, steps: int) -> list:
    """The lrs (and momentums / beta1) the groups hold after each step."""
    out = []
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append((sched.get_last_lr(),
                    [g.get("momentum", g.get("betas", (None,))[0]) for g in opt.param_groups]))
    return out


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_lrs_match_torch(name: str) -> None:
    runs = []
    for m in LIBS:
        opt = _sched_optimizer(m, "Adam" if name == "onecycle" else "SGD")
        sched = SCHEDULERS[name](m, opt)
        initial = [g["lr"] for g in opt.param_groups]
        runs.append((initial, _lr_sequence(sched, opt, 60), getattr(sched, "last_epoch", None)))
    assert runs[0] == runs[1]  # exactly: the same float arithmetic in the same order


@pytest.mark.parametrize("name", ["step", "multistep", "exponential", "cosine", "linear",
                                  "constant", "polynomial"])
def test_scheduler_closed_form_with_epoch_matches_torch(name: str) -> None:
    runs = []
    for m in LIBS:
        opt = _sched_optimizer(m)
        sched = SCHEDULERS[name](m, opt)
        seq = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in (3, 9, 4, 20, 30, 14):
                opt.step()
                sched.step(epoch)
                seq.append(sched.get_last_lr())
        runs.append(seq)
    assert runs[0] == runs[1]


def test_warm_restarts_with_fractional_epochs() -> None:
    runs = []
    for m in LIBS:
        opt = _sched_optimizer(m)
        sched = m.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=3)
        seq = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in (0.5, 1.25, 3.9, 4.0, 7.5, 15.9, 16.0, 40.0, 2.0):
                opt.step()
                sched.step(epoch)
                seq.append((sched.get_last_lr(), sched.T_cur, sched.T_i, sched.last_epoch))
        runs.append(seq)
    assert runs[0] == runs[1]


METRICS = [1.0, 0.9, 0.9, 0.95, 0.91, 0.9, 0.9, 0.9, 0.8, 0.8, 0.8, 0.8, 0.85, 0.79, 0.79,
           0.79, 0.79, 0.79, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2]


@pytest.mark.parametrize("options", [
    {},
    {"patience": 2, "factor": 0.5},
    {"patience": 1, "cooldown": 2, "min_lr": [0.01, 0.05], "threshold": 0.05},
    {"mode": "max", "patience": 0, "threshold_mode": "abs", "threshold": 0.01},
    {"patience": 0, "factor": 0.5, "min_lr": 0.02, "eps": 1e-3},
])
def test_reduce_lr_on_plateau_matches_torch(options: dict) -> None:
    runs = []
    for m in LIBS:
        opt = _sched_optimizer(m)
        sched = m.optim.lr_scheduler.ReduceLROnPlateau(opt, **options)
        seq = []
        for metric in METRICS * 2:
            opt.step()
            sched.step(metric)
            seq.append((sched.get_last_lr(), sched.num_bad_epochs, sched.cooldown_counter))
        runs.append((seq, sched.best))
    assert runs[0] == runs[1]


def _plain(value):
    """A state-dict value torch and pyaten can compare: numbers and containers as they are,
    anything else (functions, Counter) by type name."""
    if isinstance(value, (bool, int, float, str, type(None))):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return type(value).__name__


@pytest.mark.parametrize("name", ["step", "multistep", "cosine", "cosine-restarts", "onecycle",
                                  "cyclic", "sequential", "chained", "linear", "lambda"])
def test_scheduler_state_dict_round_trip(name: str) -> None:
    """Saved after 20 steps, loaded into a fresh scheduler (and optimizer): the next 20 lrs
    are those of an uninterrupted run; the saved dict is torch's."""
    m = pyaten
    opt = _sched_optimizer(m)
    sched = SCHEDULERS[name](m, opt)
    _lr_sequence(sched, opt, 20)
    saved, opt_saved = copy.deepcopy(sched.state_dict()), copy.deepcopy(opt.state_dict())
    layout = _plain(saved)  # CyclicLR.load_state_dict pops a key from the dict it is given
    expected = _lr_sequence(sched, opt, 20)

    opt2 = _sched_optimizer(m)
    sched2 = SCHEDULERS[name](m, opt2)
    opt2.load_state_dict(opt_saved)
    sched2.load_state_dict(saved)
    assert _lr_sequence(sched2, opt2, 20) == expected

    topt = _sched_optimizer(torch)
    tsched = SCHEDULERS[name](torch, topt)
    _lr_sequence(tsched, topt, 20)
    assert layout == _plain(tsched.state_dict())


def test_plateau_state_dict_round_trip() -> None:
    def run(m, metrics):
        opt = _sched_optimizer(m)
        sched = m.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1)
        for x in metrics:
            sched.step(x)
        return opt, sched

    _, sched = run(pyaten, METRICS[:12])
    _, theirs = run(torch, METRICS[:12])
    assert sched.state_dict() == theirs.state_dict()
    opt2, sched2 = run(pyaten, [])
    sched2.load_state_dict(copy.deepcopy(sched.state_dict()))
    assert sched2.best == sched.best and sched2.num_bad_epochs == sched.num_bad_epochs


def test_initial_lr_and_last_epoch() -> None:
    def scenario(m):
        opt = _sched_optimizer(m)
        m.optim.lr_scheduler.StepLR(opt, 3)
        return [g["initial_lr"] for g in opt.param_groups]

    assert scenario(pyaten) == scenario(torch) == [0.1, 0.3]


SCHEDULER_ERRORS = {
    "not an optimizer": lambda m: m.optim.lr_scheduler.StepLR(object(), 3),
    "resume without initial_lr": lambda m: m.optim.lr_scheduler.StepLR(
        _sched_optimizer(m), 3, last_epoch=4),
    "lambdas count": lambda m: m.optim.lr_scheduler.LambdaLR(_sched_optimizer(m), [abs]),
    "linear start": lambda m: m.optim.lr_scheduler.LinearLR(_sched_optimizer(m), 0.0),
    "constant factor": lambda m: m.optim.lr_scheduler.ConstantLR(_sched_optimizer(m), 2.0),
    "restarts T_0": lambda m: m.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        _sched_optimizer(m), 0),
    "restarts T_mult": lambda m: m.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        _sched_optimizer(m), 2, T_mult=0),
    "onecycle no steps": lambda m: m.optim.lr_scheduler.OneCycleLR(_sched_optimizer(m), 1.0),
    "onecycle pct": lambda m: m.optim.lr_scheduler.OneCycleLR(
        _sched_optimizer(m), 1.0, total_steps=10, pct_start=1),
    "onecycle anneal": lambda m: m.optim.lr_scheduler.OneCycleLR(
        _sched_optimizer(m), 1.0, total_steps=10, anneal_strategy="exp"),
    "onecycle max_lr list": lambda m: m.optim.lr_scheduler.OneCycleLR(
        _sched_optimizer(m), [1.0], total_steps=10),
    "onecycle past the end": lambda m: [
        s.step() for s in [m.optim.lr_scheduler.OneCycleLR(_sched_optimizer(m), 1.0,
                                                          total_steps=3)] for _ in range(4)],
    "cyclic mode": lambda m: m.optim.lr_scheduler.CyclicLR(_sched_optimizer(m), 0.1, 1.0,
                                                           mode="wave"),
    "cyclic no momentum": lambda m: m.optim.lr_scheduler.CyclicLR(
        m.optim.Adagrad([m.ones(1, requires_grad=True)]), 0.1, 1.0),
    "plateau factor": lambda m: m.optim.lr_scheduler.ReduceLROnPlateau(
        _sched_optimizer(m), factor=1.0),
    "plateau mode": lambda m: m.optim.lr_scheduler.ReduceLROnPlateau(
        _sched_optimizer(m), mode="best"),
    "plateau min_lrs": lambda m: m.optim.lr_scheduler.ReduceLROnPlateau(
        _sched_optimizer(m), min_lr=[0.1]),
    "sequential milestones": lambda m: (lambda o: m.optim.lr_scheduler.SequentialLR(
        o, [m.optim.lr_scheduler.StepLR(o, 2)], milestones=[3]))(_sched_optimizer(m)),
    "sequential empty": lambda m: m.optim.lr_scheduler.SequentialLR(
        _sched_optimizer(m), [], milestones=[]),
    "chained plateau": lambda m: (lambda o: m.optim.lr_scheduler.ChainedScheduler(
        [m.optim.lr_scheduler.ReduceLROnPlateau(o)]))(_sched_optimizer(m)),
}


@pytest.mark.parametrize("case", list(SCHEDULER_ERRORS))
def test_scheduler_errors_match_torch(case: str) -> None:
    fn = SCHEDULER_ERRORS[case]
    same_error(lambda: fn(pyaten), lambda: fn(torch))


def test_scheduler_before_optimizer_step_warns() -> None:
    for m in LIBS:
        opt = _sched_optimizer(m)
        sched = m.optim.lr_scheduler.StepLR(opt, 3)
        with pytest.warns(UserWarning, match="before `optimizer.step"):
            sched.step()


def test_optim_loads_lazily() -> None:
    import subprocess
    import sys

    code = ("import sys, pyaten; assert 'pyaten.optim' not in sys.modules; "
            "assert pyaten.optim.lr_scheduler.StepLR.__name__ == 'StepLR'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=600)


def test_training_converges_like_torch() -> None:
    """A small regression trained 40 steps with Adam + OneCycleLR reaches torch's loss."""
    losses, initial = [], _loss(pyaten, _params(pyaten, "float64"), "float64", 0).item()
    for m in LIBS:
        params = _params(m, "float64")
        opt = m.optim.Adam(params, lr=0.05)
        sched = m.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=40)
        for _ in range(40):
            opt.zero_grad()
            loss = _loss(m, params, "float64", 0)
            loss.backward()
            opt.step()
            sched.step()
        losses.append(loss.item())
    assert math.isclose(losses[0], losses[1], rel_tol=1e-9)
    assert losses[0] < initial / 4


# --- LBFGS ----------------------------------------------------------------------------------

def _rosenbrock_run(m, steps: int, **options):
    xy = m.tensor([-1.5, 2.0], dtype=m.float64, requires_grad=True)
    extra = m.tensor(np.linspace(-0.5, 0.5, 3), requires_grad=True)
    opt = m.optim.LBFGS([xy, extra], **options)
    target = m.tensor([0.3, -0.2, 0.1], dtype=m.float64)

    def closure():
        opt.zero_grad()
        x, y = xy[0], xy[1]
        loss = (1 - x) ** 2 + 5 * (y - x * x) ** 2 + ((extra - target) ** 4).sum()
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(steps)]
    state = opt.state[xy]
    return [xy, extra, state["d"], state["prev_flat_grad"]], losses, (
        state["func_evals"], state["n_iter"], float(state["t"]), len(state["old_dirs"]))


# Few iterations: near the minimum, rounding decides the tolerance tests, and the runs part.
@pytest.mark.parametrize("options", [
    {"max_iter": 6},
    {"max_iter": 5, "line_search_fn": "strong_wolfe"},
    {"lr": 0.5, "max_iter": 7, "history_size": 3},
    {"lr": 0.9, "history_size": 2, "max_iter": 6, "line_search_fn": "strong_wolfe"},
    {"max_iter": 4, "max_eval": 6, "line_search_fn": "strong_wolfe", "tolerance_change": 1e-5},
    {"max_iter": 50, "tolerance_grad": 1e-2, "tolerance_change": 1e-3},
])
def test_lbfgs_matches_torch(options: dict) -> None:
    ours, theirs = _rosenbrock_run(pyaten, 2, **options), _rosenbrock_run(torch, 2, **options)
    assert_same(ours[0], theirs[0], 1e-7, 1e-9)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-9)
    assert ours[2][0:2] == theirs[2][0:2] and ours[2][3] == theirs[2][3]
    assert math.isclose(ours[2][2], theirs[2][2], rel_tol=1e-7)


def test_lbfgs_errors() -> None:
    same_error(
        lambda: pyaten.optim.LBFGS([{"params": [_one(pyaten)]}, {"params": [_one(pyaten)]}]),
        lambda: torch.optim.LBFGS([{"params": [_one(torch)]}, {"params": [_one(torch)]}]),
    )
    same_error(lambda: _rosenbrock_run(pyaten, 1, line_search_fn="armijo"),
               lambda: _rosenbrock_run(torch, 1, line_search_fn="armijo"))


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta",
                                  "Adamax", "NAdam", "RAdam"])
def test_complex_parameters_update_through_their_real_view(name: str) -> None:
    rng = np.random.default_rng(3)
    grads = [rng.standard_normal(3) + 1j * rng.standard_normal(3) for _ in range(5)]
    options = {"lr": 0.1, "momentum": 0.9} if name in ("SGD", "RMSprop") else {"lr": 0.1}

    def run(m):
        p = m.tensor(np.array([1 + 2j, -0.5j, 3.0]), dtype=m.complex128, requires_grad=True)
        opt = getattr(m.optim, name)([p], **options)
        for g in grads:
            p.grad = m.tensor(g, dtype=m.complex128)
            opt.step()
        return p, sorted(opt.state[p])

    ours, theirs = run(pyaten), run(torch)
    assert_same(ours[0], theirs[0])
    assert ours[1] == theirs[1]


def test_repr_matches_torch() -> None:
    def scenario(m):
        a, b = _one(m), _one(m)
        return repr(m.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1,
                                momentum=0.9))

    assert scenario(pyaten) == scenario(torch)


def test_load_state_dict_shares_tensors_that_need_no_cast() -> None:
    def scenario(m):
        a = m.tensor([1.0, 2.0], requires_grad=True)
        opt = m.optim.SGD([a], lr=0.1, momentum=0.9)
        a.grad = m.tensor([1.0, 1.0])
        opt.step()
        saved = opt.state_dict()
        b = m.tensor([1.0, 2.0], requires_grad=True)
        other = m.optim.SGD([b], lr=0.1, momentum=0.9)
        other.load_state_dict(saved)
        return other.state[b]["momentum_buffer"] is saved["state"][0]["momentum_buffer"]

    assert scenario(pyaten) is scenario(torch) is True


@pytest.mark.parametrize("cls", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta",
                                 "Adamax", "NAdam", "RAdam"])
def test_tensor_lr_and_a_scheduler(cls: str) -> None:
    """A float32 0-d tensor lr: torch computes the step sizes in float32, and so must we."""
    options = {"weight_decay": 0.1}
    if cls in ("NAdam", "RAdam"):
        options["decoupled_weight_decay"] = True

    def scenario(m):
        params = _params(m, "float64")
        opt = getattr(m.optim, cls)(params, lr=m.tensor(0.05), **options)
        sched = m.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        for i in range(5):
            _train(m, opt, params, "float64", range(i, i + 1))
            sched.step()
        return params, opt.param_groups[0]["lr"], sched.get_last_lr()[0]

    assert_same(scenario(pyaten), scenario(torch))
