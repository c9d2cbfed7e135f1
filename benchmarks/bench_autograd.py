"""Autograd cost, pyaten beside PyTorch (both on one thread).

Run: .venv/bin/python benchmarks/bench_autograd.py [--quick]

1. `add` of 4x4 float32 tensors: neither requires grad (the autograd kernel only passes the
   call on), and one requires grad (a node is recorded); then a small graph run backward.
   Issue 23's goal: the recorded call within 1.5x of PyTorch's. The "recording cost" line is
   the difference of the first two rows: what autograd adds to a call.
2. Forward + backward of an MLP (batch 64, 784-256-10: mm, add, relu, log_softmax, a
   weighted sum) and of a chain of 100 small pointwise ops. (The whole training step, with
   the optimizer, is benchmarks/bench_training.py; the optimizer alone bench_optim.py.)
"""

from __future__ import annotations

import argparse
import os
import sys

# One thread for NumPy's BLAS too, as torch.set_num_threads(1) gives torch (see main).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _common import per_call_cpu_us  # noqa: E402


def _add_cases(lib):
    a = lib.ones(4, 4)
    b = lib.ones(4, 4)
    w = lib.ones(4, 4, requires_grad=True)
    return {
        "add, no grad": lambda: lib.add(a, b),
        "add, records a node": lambda: lib.add(w, b),
        "w * b + a, sum, backward": lambda: (w * b + a).sum().backward(),
    }


def _mlp(lib, rng):
    x = lib.tensor(rng.standard_normal((64, 784)).astype(np.float32))
    target = lib.tensor(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 64)])
    w1 = lib.tensor((rng.standard_normal((784, 256)) * 0.03).astype(np.float32))
    b1 = lib.tensor(np.zeros(256, dtype=np.float32))
    w2 = lib.tensor((rng.standard_normal((256, 10)) * 0.06).astype(np.float32))
    b2 = lib.tensor(np.zeros(10, dtype=np.float32))
    params = [w1, b1, w2, b2]
    for p in params:
        p.requires_grad_(True)

    def step():
        for p in params:
            p.grad = None
        h = (x.mm(w1) + b1).relu()
        logits = h.mm(w2) + b2
        loss = -(logits.log_softmax(1) * target).sum() / 64
        loss.backward()
        return loss

    return step


def _chain(lib, rng):
    x = lib.tensor(rng.standard_normal(1000).astype(np.float32), requires_grad=True)

    def run():
        x.grad = None
        y = x
        for i in range(25):
            y = (y * 0.9 + 0.1).sin().exp() if i % 2 else (y * 1.1 - 0.1).tanh().neg()
        y.sum().backward()
        return y

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    number, repeat = (1000, 3) if args.quick else (5000, 5)

    import torch

    torch.set_num_threads(1)
    import pyaten

    print(f"{'case':<34}{'pyaten us':>12}{'torch us':>12}{'ratio':>8}")
    ours, theirs = _add_cases(pyaten), _add_cases(torch)
    times = {}
    for name in ours:
        p = per_call_cpu_us(ours[name], number, repeat)
        t = per_call_cpu_us(theirs[name], number, repeat)
        times[name] = (p, t)
        print(f"{name:<34}{p:>12.2f}{t:>12.2f}{p / t:>8.2f}")
    (p0, t0), (p1, t1) = times["add, no grad"], times["add, records a node"]
    print(f"{'recording cost (row 2 - row 1)':<34}{p1 - p0:>12.2f}{t1 - t0:>12.2f}")
    for name, build, n in (("MLP 784-256-10 fwd+bwd (b=64)", _mlp, 20),
                           ("chain of 100 pointwise fwd+bwd", _chain, 20)):
        p = per_call_cpu_us(build(pyaten, np.random.default_rng(0)), n, repeat)
        t = per_call_cpu_us(build(torch, np.random.default_rng(0)), n, repeat)
        print(f"{name:<34}{p:>12.1f}{t:>12.1f}{p / t:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
