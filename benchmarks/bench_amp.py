"""Autocast's cost, pyaten beside PyTorch (both on one thread).

Run: .venv/bin/python benchmarks/bench_amp.py [--quick]

1. One MLP training step under `autocast("cpu", bfloat16)` with a GradScaler: `zero_grad`,
   forward (Linear 784-256-ReLU-Linear 256-10 in bfloat16, cross_entropy in float32),
   `scaler.scale(loss).backward()`, `scaler.step(SGD)`, `scaler.update()`, batch 64, the
   same weights in both libraries. Goal: pyaten/torch <= 1.5.
2. The per-call overhead of autocast on a small op: `mm` of two 4x4 float32 tensors outside
   autocast, inside it (a listed op: two casts, then mm in bfloat16), `add` inside it (an
   unlisted op: falls through the AutocastCPU key), and `mm` of bfloat16 inputs inside it
   (nothing to cast); beside them what the region does without autocast (a bfloat16 mm, a
   cast), so the autocast kernel's own share shows.
Times are CPU time of this process (the machine is shared), best of several runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
from _common import per_call_cpu_us  # noqa: E402

BATCH = 64


def _mlp_step(lib, seed: int = 0):
    rng = np.random.default_rng(seed)
    model = lib.nn.Sequential(lib.nn.Linear(784, 256), lib.nn.ReLU(), lib.nn.Linear(256, 10))
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.from_numpy((rng.standard_normal(tuple(p.shape)) * 0.05).astype(np.float32)))
    x = lib.from_numpy(rng.standard_normal((BATCH, 784)).astype(np.float32))
    y = lib.from_numpy(rng.integers(0, 10, BATCH).astype(np.int64))
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01)
    scaler = lib.amp.GradScaler("cpu")

    def step() -> float:
        optimizer.zero_grad()
        with lib.autocast("cpu", dtype=lib.bfloat16):
            loss = lib.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.item()

    return step


def _small_ops(lib):
    a = lib.from_numpy(np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32))
    b16 = a.to(lib.bfloat16)
    region = lib.autocast("cpu")

    def plain_mm():
        return lib.mm(a, a)

    def autocast_mm():
        with region:
            return lib.mm(a, a)

    def autocast_add():
        with region:
            return lib.add(a, a)

    def autocast_mm_bf16():
        with region:
            return lib.mm(b16, b16)

    def plain_add():
        return lib.add(a, a)

    def plain_mm_bf16():
        return lib.mm(b16, b16)

    def cast():
        return a.to(lib.bfloat16)

    def region_only():
        with region:
            pass

    return {
        "mm(a, a), autocast off": plain_mm,
        "mm(b16, b16), autocast off": plain_mm_bf16,
        "a.to(bfloat16), autocast off": cast,
        "autocast region, empty": region_only,
        "mm(a, a) in autocast (2 casts)": autocast_mm,
        "mm(b16, b16) in autocast": autocast_mm_bf16,
        "add(a, a), autocast off": plain_add,
        "add(a, a) in autocast (falls through)": autocast_add,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    import torch

    import pyaten

    torch.set_num_threads(1)
    repeat = 3 if args.quick else 7

    steps = {lib: _mlp_step(lib) for lib in (pyaten, torch)}
    losses = {lib: steps[lib]() for lib in steps}
    assert abs(losses[pyaten] - losses[torch]) < 5e-2, losses
    number = 5 if args.quick else 20
    ours = per_call_cpu_us(steps[pyaten], number, repeat) / 1e3
    theirs = per_call_cpu_us(steps[torch], number, repeat) / 1e3
    print(f"MLP 784-256-10 step, batch {BATCH}, autocast(bfloat16) + GradScaler + SGD")
    print(f"{'':38s}{'pyaten ms':>10s}{'torch ms':>10s}{'ratio':>8s}")
    print(f"{'one step':38s}{ours:10.2f}{theirs:10.2f}{ours / theirs:8.2f}   (goal <= 1.5)")
    print()

    print("per call, 4x4 float32 (microseconds)")
    print(f"{'':38s}{'pyaten us':>10s}{'torch us':>10s}{'ratio':>8s}")
    small = {lib: _small_ops(lib) for lib in (pyaten, torch)}
    number = 300 if args.quick else 2000
    for name in small[pyaten]:
        ours = per_call_cpu_us(small[pyaten][name], number, repeat)
        theirs = per_call_cpu_us(small[torch][name], number, repeat)
        print(f"{name:38s}{ours:10.2f}{theirs:10.2f}{ours / theirs:8.2f}")


if __name__ == "__main__":
    main()
