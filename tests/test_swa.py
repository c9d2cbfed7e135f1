"""optim.swa_utils (AveragedModel with SWA/EMA averaging, SWALR, update_bn) and
nn.DataParallel on the CPU against torch, from the same seeds."""

from __future__ import annotations

import importlib
import warnings

import pytest
import torch
import torch.optim.swa_utils
from _helpers import assert_same, run_both, same_error

import pyaten
import pyaten.optim.swa_utils


def _swa(m):
    return importlib.import_module(f"{m.__name__}.optim.swa_utils")


def _model(m):
    m.manual_seed(0)
    return m.nn.Sequential(m.nn.Linear(4, 6), m.nn.BatchNorm1d(6), m.nn.ReLU(),
                           m.nn.Linear(6, 2))


def _same(scenario, **tolerance) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pair = run_both(lambda: scenario(pyaten), lambda: scenario(torch))
    if pair is not None:
        assert_same(*pair, **tolerance)


def _train(m, model, averaged, steps=4):
    opt = m.optim.SGD(model.parameters(), lr=0.3)
    m.manual_seed(1)
    batches = [m.randn(8, 4) for _ in range(steps)]
    for x in batches:
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        for avg in averaged:
            avg.update_parameters(model)
    return batches


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema_single", "swa_multi", "custom"])
@pytest.mark.parametrize("use_buffers", [False, True])
def test_averaged_model(kind, use_buffers) -> None:
    def scenario(m):
        swa = _swa(m)
        model = _model(m)
        options = {
            "swa": {},
            "ema_multi": {"multi_avg_fn": swa.get_ema_multi_avg_fn(0.9)},
            "ema_single": {"avg_fn": swa.get_ema_avg_fn(0.8)},
            "swa_multi": {"multi_avg_fn": swa.get_swa_multi_avg_fn()},
            "custom": {"avg_fn": lambda avg, p, n: 0.5 * avg + 0.5 * p},
        }[kind]
        averaged = swa.AveragedModel(model, use_buffers=use_buffers, **options)
        _train(m, model, [averaged])
        state = averaged.state_dict()
        out = averaged(m.ones(3, 4))
        return sorted(state), [state[k] for k in sorted(state)], out.detach()

    _same(scenario)


def test_update_bn_recomputes_running_statistics() -> None:
    def scenario(m):
        swa = _swa(m)
        model = _model(m)
        averaged = swa.AveragedModel(model)
        batches = _train(m, model, [averaged])
        loader = [(x, 0) for x in batches]  # (input, target) pairs take the input
        swa.update_bn(loader, averaged)
        bn = averaged.module[1]
        return bn.running_mean, bn.running_var, bn.num_batches_tracked, bn.momentum, \
            averaged.training

    _same(scenario)


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 3])
def test_swalr_schedule(strategy, anneal_epochs) -> None:
    def scenario(m):
        params = [m.nn.Parameter(m.ones(2)), m.nn.Parameter(m.ones(2))]
        opt = m.optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.5}], lr=1.0)
        sched = _swa(m).SWALR(opt, swa_lr=[0.05, 0.1], anneal_epochs=anneal_epochs,
                              anneal_strategy=strategy)
        lrs = [sched.get_last_lr()]
        for _ in range(6):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr())
        return lrs

    _same(scenario)


def test_swa_errors_match_torch() -> None:
    def opt(m):
        return m.optim.SGD([m.nn.Parameter(m.ones(1))], lr=0.1)

    for bad in (
        lambda m: _swa(m).SWALR(opt(m), swa_lr=0.1, anneal_strategy="step"),
        lambda m: _swa(m).SWALR(opt(m), swa_lr=0.1, anneal_epochs=-1),
        lambda m: _swa(m).SWALR(opt(m), swa_lr=[0.1, 0.2]),
        lambda m: _swa(m).get_ema_multi_avg_fn(1.5),
        lambda m: _swa(m).get_ema_avg_fn(-0.1),
    ):
        same_error(lambda b=bad: b(pyaten), lambda b=bad: b(torch))


def test_data_parallel_on_the_cpu() -> None:
    def scenario(m):
        m.manual_seed(0)
        inner = m.nn.Linear(3, 2)
        dp = m.nn.DataParallel(inner, device_ids=[0], dim=0)
        out = dp(m.ones(4, 3))
        out.sum().backward()
        return (repr(dp), dp.device_ids, dp.module is inner, sorted(dp.state_dict()),
                out.detach(), inner.weight.grad)

    _same(scenario)
    same_error(lambda: pyaten.nn.parallel.data_parallel(pyaten.nn.Linear(1, 1), pyaten.ones(1)),
               lambda: torch.nn.parallel.data_parallel(torch.nn.Linear(1, 1), torch.ones(1)))
