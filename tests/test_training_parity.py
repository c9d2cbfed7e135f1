"""Training parity with PyTorch (issue 21): the same model with the same initial weights, fed
the same batches, trained 50 steps by the same optimiser (and scheduler) in both libraries,
ends with the same losses and parameters (float32 tolerance).

PyTorch runs on one thread here. Its intra-op threads split the float32 sums of convolutions
and matrix products differently for each thread count, and 50 steps of training amplify
that rounding by an amount no tolerance can bound for every machine (the Adam CNN drifts
1.1e-4 with 2 threads, within 1e-4 with one). One thread fixes the reference's order of
summation, so the tolerances below measure pyaten's rounding, not the machine's core count.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pyaten

STEPS = 50


@pytest.fixture(autouse=True)
def torch_on_one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _mlp(m):
    return m.nn.Sequential(m.nn.Linear(12, 16), m.nn.Tanh(), m.nn.Linear(16, 4))


def _cnn(m):
    return m.nn.Sequential(
        m.nn.Conv2d(1, 4, 3, padding=1), m.nn.ReLU(), m.nn.MaxPool2d(2),
        m.nn.Conv2d(4, 6, 3, bias=False), m.nn.BatchNorm2d(6), m.nn.ReLU(), m.nn.Flatten(),
        m.nn.Linear(24, 4))


class _LSTMHead:
    """An LSTM over the sequence and a linear layer on its last output, in library `m`."""

    def __new__(cls, m):
        class Model(m.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lstm = m.nn.LSTM(3, 8, num_layers=2, batch_first=True)
                self.head = m.nn.Linear(8, 4)

            def forward(self, x):
                out, _ = self.lstm(x)
                return self.head(out[:, -1])

        return Model()


class _EncoderHead:
    def __new__(cls, m):
        class Model(m.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.layer = m.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                          batch_first=True)
                self.head = m.nn.Linear(8, 4)

            def forward(self, x):
                return self.head(self.layer(x).mean(1))

        return Model()


# model builder, input shape of one batch
MODELS = {
    "mlp": (_mlp, (8, 12)),
    "cnn": (_cnn, (8, 1, 8, 8)),
    "lstm": (_LSTMHead, (8, 5, 3)),
    "transformer": (_EncoderHead, (8, 5, 8)),
}

OPTIMIZERS = {
    "SGD": {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-3},
    "Adam": {"lr": 1e-2},
    "AdamW": {"lr": 1e-2, "amsgrad": True},
    "RMSprop": {"lr": 1e-3, "centered": True, "momentum": 0.5},
    "Adagrad": {"lr": 0.05},
    "Adadelta": {"lr": 1.0},
    "Adamax": {"lr": 1e-2},
    "NAdam": {"lr": 1e-2},
    "RAdam": {"lr": 1e-2},
}

SCHEDULERS = {
    "StepLR": lambda s, o: s.StepLR(o, step_size=10, gamma=0.5),
    "MultiStepLR": lambda s, o: s.MultiStepLR(o, milestones=[10, 30], gamma=0.3),
    "ExponentialLR": lambda s, o: s.ExponentialLR(o, gamma=0.95),
    "CosineAnnealingLR": lambda s, o: s.CosineAnnealingLR(o, T_max=20),
    "CosineAnnealingWarmRestarts": lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=7),
    "LambdaLR": lambda s, o: s.LambdaLR(o, lambda epoch: 1 / (1 + epoch)),
    "LinearLR": lambda s, o: s.LinearLR(o, start_factor=0.2, total_iters=15),
    "OneCycleLR": lambda s, o: s.OneCycleLR(o, max_lr=0.1, total_steps=STEPS),
    "CyclicLR": lambda s, o: s.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5),
}


def _batches(shape, seed=0):
    rng = np.random.default_rng(seed)
    return [((rng.standard_normal(shape) * 0.5).astype(np.float32),
             rng.integers(0, 4, shape[0])) for _ in range(STEPS)]


def _twins(name):
    """The model in torch and in pyaten, with torch's initial weights copied into pyaten's."""
    build, shape = MODELS[name]
    torch.manual_seed(0)
    theirs = build(torch)
    ours = build(pyaten)
    state = {k: pyaten.tensor(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)
    return ours, theirs, shape


def _train(m, model, optimizer, scheduler, batches):
    losses = []
    for x, y in batches:
        optimizer.zero_grad()
        loss = m.nn.functional.cross_entropy(model(m.tensor(x)), m.tensor(y))
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
    return losses


def _run_both(name, optimizer_name, options, scheduler_name=None, atol=1e-4):
    ours, theirs, shape = _twins(name)
    batches = _batches(shape)
    results = []
    for m, model in ((pyaten, ours), (torch, theirs)):
        optimizer = getattr(m.optim, optimizer_name)(model.parameters(), **options)
        scheduler = None if scheduler_name is None else SCHEDULERS[scheduler_name](
            m.optim.lr_scheduler, optimizer)
        results.append(_train(m, model, optimizer, scheduler, batches))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-4, atol=1e-5)
    for (key, ours_value), (_, theirs_value) in zip(ours.state_dict().items(),
                                                     theirs.state_dict().items()):
        mine, torchs = ours_value.numpy(), theirs_value.detach().numpy()
        if key.endswith("in_proj_bias"):
            # the key bias: softmax ignores it, so its gradient is rounding noise, which an
            # adaptive optimiser scales up to full steps in either library; q and v compared
            third = mine.shape[0] // 3
            mine, torchs = np.delete(mine, np.s_[third:2 * third]), np.delete(
                torchs, np.s_[third:2 * third])
        np.testing.assert_allclose(mine, torchs, rtol=1e-3, atol=atol, err_msg=key)


@pytest.mark.parametrize("optimizer_name", sorted(OPTIMIZERS))
def test_mlp_trains_as_in_pytorch_with_every_optimizer(optimizer_name):
    _run_both("mlp", optimizer_name, OPTIMIZERS[optimizer_name])


@pytest.mark.parametrize("name", ["cnn", "lstm", "transformer"])
@pytest.mark.parametrize("optimizer_name", ["SGD", "Adam"])
def test_networks_train_as_in_pytorch(name, optimizer_name):
    options = dict(OPTIMIZERS[optimizer_name])
    if optimizer_name == "Adam":
        # Adam divides by sqrt(v) + eps: a gradient that is rounding noise in both libraries
        # (units a ReLU or BatchNorm has cut off) becomes a full step at eps=1e-8, so the
        # networks compare with eps=1e-6 (the MLP test above keeps the default)
        options["eps"] = 1e-6
    # Adam's sign-like steps let a parameter whose gradient hovers near 0 drift by a few
    # 1e-3 over 50 steps while the losses still agree to 1e-4
    _run_both(name, optimizer_name, options, atol=1e-4 if optimizer_name == "SGD" else 5e-3)


@pytest.mark.parametrize("scheduler_name", sorted(SCHEDULERS))
def test_mlp_trains_as_in_pytorch_with_every_scheduler(scheduler_name):
    options = {"lr": 0.05, "momentum": 0.9}
    _run_both("mlp", "SGD", options, scheduler_name)


def test_lbfgs_trains_as_in_pytorch():
    ours, theirs, shape = _twins("mlp")
    x, y = _batches(shape)[0]
    losses = []
    for m, model in ((pyaten, ours), (torch, theirs)):
        optimizer = m.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5)
        inputs, targets = m.tensor(x), m.tensor(y)

        def closure(m=m, model=model, optimizer=optimizer, inputs=inputs, targets=targets):
            optimizer.zero_grad()
            loss = m.nn.functional.cross_entropy(model(inputs), targets)
            loss.backward()
            return loss

        losses.append([optimizer.step(closure).item() for _ in range(4)])
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-4, atol=1e-5)
