"""Training steps and a demo epoch, pyaten beside PyTorch (both on one thread).

Run: .venv/bin/python benchmarks/bench_training.py [--quick]

One training step is `zero_grad`, forward, `cross_entropy`, `backward`, Adam's `step` on a
batch of 64 (float32):
- an MLP 784-256-10 (Linear-ReLU-Linear) on random 784-pixel inputs;
- `pyaten demo`'s CNN (pyaten/commands/demo.py: two Conv2d-ReLU-MaxPool2d, then Linear) on
  64 of the 8x8 digits;
- a 2-layer LSTM language model (embedding and hidden 256, sequence 35, batch 20) and a
  small GPT block (width 128, 4 heads, sequence 64, batch 8), as benchmarks/_sequence_models.py
  builds them (issue 36's goal for both: within 1.5x of PyTorch).
Both libraries start from the same weights (PyTorch's, copied) and see the same batches.
A second table splits one step into its phases (zero_grad, forward, cross_entropy, backward,
optimizer step), each the best of its runs, to show where the remaining time goes.
A demo epoch is `pyaten demo`'s epoch: 45 steps of 32 images through each library's
DataLoader (shuffled), then the test accuracy on 359 images. Times are CPU time of this
process (the machine is shared), best of several runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

# One thread for NumPy's BLAS too, as torch.set_num_threads(1) gives torch (see main).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
from _sequence_models import SEQUENCE_MODELS  # noqa: E402

from pyaten.commands.demo import build_model, load_split  # noqa: E402

BATCH = 64


def build_mlp(nn):
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def copy_weights(ours, theirs) -> None:
    """Load torch module `theirs`'s weights into pyaten module `ours`."""
    import pyaten

    state = theirs.state_dict()
    ours.load_state_dict({name: pyaten.from_numpy(value.numpy().copy()) for name, value in
                          state.items()})


def step_fn(lib, model, images, labels) -> Callable[[], object]:
    """One training step of `model` on fixed tensors, as a no-argument function."""
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)
    cross_entropy = lib.nn.functional.cross_entropy

    def step() -> object:
        optimizer.zero_grad()
        loss = cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss

    return step


def step_cases(torch, pyaten) -> dict[str, tuple[Callable, Callable]]:
    """Case name -> (pyaten step, torch step), from the same weights and batch."""
    rng = np.random.default_rng(0)
    mlp_x = rng.standard_normal((BATCH, 784)).astype(np.float32)
    mlp_y = rng.integers(0, 10, BATCH)
    train_x, train_y, _, _ = load_split(0)
    cnn_x, cnn_y = train_x[:BATCH], train_y[:BATCH]
    cases = {}
    for name, build, x, y in (("MLP 784-256-10", build_mlp, mlp_x, mlp_y),
                              ("demo CNN", build_model, cnn_x, cnn_y)):
        torch.manual_seed(0)
        theirs = build(torch.nn)
        ours = build(pyaten.nn)
        copy_weights(ours, theirs)
        cases[f"{name}, one step"] = (
            step_fn(pyaten, ours, pyaten.from_numpy(x), pyaten.from_numpy(y)),
            step_fn(torch, theirs, torch.from_numpy(x), torch.from_numpy(y)),
        )
    for name, (ours, theirs) in sequence_cases(torch, pyaten, step_fn).items():
        cases[f"{name}, one step"] = (ours, theirs)
    return cases


def sequence_cases(torch, pyaten, make: Callable) -> dict[str, tuple[Callable, Callable]]:
    """The LSTM language model and the GPT block (benchmarks/_sequence_models.py): case name
    -> (`make` for pyaten, `make` for torch), from the same weights and batch."""
    cases = {}
    for name, build in SEQUENCE_MODELS.items():
        torch.manual_seed(0)
        theirs, their_x, their_y = build(torch)
        ours, our_x, our_y = build(pyaten)
        copy_weights(ours, theirs)
        cases[name] = (make(pyaten, ours, our_x, our_y), make(torch, theirs, their_x, their_y))
    return cases


PHASES = ("zero_grad", "forward", "cross_entropy", "backward", "optimizer.step")


def phase_fn(lib, model, images, labels) -> Callable[[], list[float]]:
    """One training step that returns the CPU seconds of each of its PHASES."""
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)
    cross_entropy = lib.nn.functional.cross_entropy
    clock = time.process_time

    def step() -> list[float]:
        t0 = clock()
        optimizer.zero_grad()
        t1 = clock()
        logits = model(images)
        t2 = clock()
        loss = cross_entropy(logits, labels)
        t3 = clock()
        loss.backward()
        t4 = clock()
        optimizer.step()
        t5 = clock()
        return [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4]

    return step


def best_phases(step: Callable[[], list[float]], number: int) -> list[float]:
    """Each phase's best time over `number` steps (after two warm-up steps)."""
    step()
    step()
    best = [float("inf")] * len(PHASES)
    for _ in range(number):
        best = [min(a, b) for a, b in zip(best, step())]
    return best


def phase_cases(torch, pyaten) -> dict[str, tuple[Callable, Callable]]:
    """Case name -> (pyaten phase step, torch phase step), as `step_cases` builds them."""
    rng = np.random.default_rng(0)
    mlp_x = rng.standard_normal((BATCH, 784)).astype(np.float32)
    mlp_y = rng.integers(0, 10, BATCH)
    train_x, train_y, _, _ = load_split(0)
    cases = {}
    for name, build, x, y in (("MLP 784-256-10", build_mlp, mlp_x, mlp_y),
                              ("demo CNN", build_model, train_x[:BATCH], train_y[:BATCH])):
        torch.manual_seed(0)
        theirs = build(torch.nn)
        ours = build(pyaten.nn)
        copy_weights(ours, theirs)
        cases[name] = (
            phase_fn(pyaten, ours, pyaten.from_numpy(x), pyaten.from_numpy(y)),
            phase_fn(torch, theirs, torch.from_numpy(x), torch.from_numpy(y)),
        )
    cases.update(sequence_cases(torch, pyaten, phase_fn))
    return cases


def demo_epoch_fn(lib) -> Callable[[], float]:
    """`pyaten demo`'s epoch in library `lib`: train 45 steps of 32, then test accuracy."""
    train_x, train_y, test_x, test_y = load_split(0)
    lib.manual_seed(0)
    model = build_model(lib.nn)
    optimizer = lib.optim.Adam(model.parameters(), lr=0.01)
    data = lib.utils.data
    loader = data.DataLoader(
        data.TensorDataset(lib.from_numpy(train_x), lib.from_numpy(train_y)),
        batch_size=32, shuffle=True,
    )
    test_images, test_labels = lib.from_numpy(test_x), lib.from_numpy(test_y)

    def epoch() -> float:
        for images, labels in loader:
            optimizer.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            loss.item()  # as the demo does, for its running loss
        with lib.no_grad():
            return (model(test_images).argmax(1) == test_labels).float().mean().item()

    return epoch


def best_cpu_seconds(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def interleaved_cpu_ms(ours: Callable[[], object], theirs: Callable[[], object], number: int,
                       repeat: int) -> tuple[float, float]:
    """Milliseconds of CPU time per call of each, the best of `repeat` rounds of `number`
    calls, the two libraries' rounds alternating (machine load hits both alike)."""
    ours(), theirs()
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for i, fn in enumerate((ours, theirs)):
            start = time.process_time()
            for _ in range(number):
                fn()
            best[i] = min(best[i], (time.process_time() - start) / number)
    return best[0] * 1e3, best[1] * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--cases", default="", help="comma-separated words: only the cases "
                        "whose name has one (MLP,CNN), and no demo epoch")
    args = parser.parse_args()
    words = [w for w in args.cases.split(",") if w]

    def wanted(name: str) -> bool:
        return not words or any(w in name for w in words)

    number, repeat = (5, 3) if args.quick else (20, 5)

    import torch

    torch.set_num_threads(1)
    import pyaten

    print(f"one thread; CPU time per step (batch {BATCH}) and per demo epoch")
    print(f"{'case':<36}{'pyaten ms':>12}{'torch ms':>12}{'ratio':>8}")
    for name, (ours, theirs) in step_cases(torch, pyaten).items():
        if not wanted(name):
            continue
        ours_ms, theirs_ms = interleaved_cpu_ms(ours, theirs, number, repeat)
        print(f"{name:<36}{ours_ms:>12.2f}{theirs_ms:>12.2f}{ours_ms / theirs_ms:>7.2f}x")
    print("\nwhere a step's time goes: the best of each phase (us)")
    print(f"{'case, phase':<44}{'pyaten us':>12}{'torch us':>12}{'ratio':>8}")
    for name, (ours, theirs) in phase_cases(torch, pyaten).items():
        if not wanted(name):
            continue
        for phase, a, b in zip(PHASES, best_phases(ours, number), best_phases(theirs, number)):
            label = f"{name}, {phase}"
            print(f"{label:<44}{a * 1e6:>12.0f}{b * 1e6:>12.0f}{a / b:>7.2f}x")
    if words:
        return 0
    print()
    ours_s = best_cpu_seconds(demo_epoch_fn(pyaten), repeat)
    theirs_s = best_cpu_seconds(demo_epoch_fn(torch), repeat)
    name = "demo epoch (45 steps + test)"
    print(f"{name:<30}{1e3 * ours_s:>12.1f}{1e3 * theirs_s:>12.1f}{ours_s / theirs_s:>7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
