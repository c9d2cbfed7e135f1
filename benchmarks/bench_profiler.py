"""What profiling costs: one training step of a small MLP, plain and under the profiler, in
pyaten and in torch (best of N, warmed up).

Run: .venv/bin/python benchmarks/bench_profiler.py [--repeat N]

pyaten's profiler runs on the dispatcher's trace, which builds a node per call (argument
keys, the result's text): docs/profiler.md, "How it works, and what it costs".
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.profiler

import pyaten
import pyaten.profiler


def make_step(m):
    m.manual_seed(0)
    model = m.nn.Sequential(m.nn.Linear(64, 128), m.nn.ReLU(), m.nn.Linear(128, 10))
    opt = m.optim.Adam(model.parameters())
    x, y = m.randn(32, 64), m.randn(32, 10)

    def step():
        loss = m.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    repeat = parser.parse_args().repeat
    torch.set_num_threads(1)  # one thread each, as pyaten's NumPy kernels run
    print(f"{'':<8}{'plain':>12}{'profiled':>12}{'ratio':>8}")
    for name, m, prof_mod in (("pyaten", pyaten, pyaten.profiler),
                              ("torch", torch, torch.profiler)):
        step = make_step(m)
        for _ in range(3):
            step()
        plain = best(step, repeat)
        with prof_mod.profile():
            for _ in range(3):
                step()
            profiled = best(step, repeat)
        print(f"{name:<8}{plain * 1e3:>9.2f} ms{profiled * 1e3:>9.2f} ms{profiled / plain:>7.1f}x")


if __name__ == "__main__":
    main()
