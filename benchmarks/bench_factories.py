"""The `*_like`, `new_*` and fill factories at small sizes, pyaten beside PyTorch.

One thread each; for every row the torch call, pyaten's with its direct steps (Note: the
direct steps of a factory, pyaten/native/kernels/factory_steps.py) and pyaten's through the
dispatcher (`set_direct_calls(False)`) are timed in interleaved passes, best of N. The machine
is shared: read the ratios.

    python benchmarks/bench_factories.py [--repeat 7] [--number 4000]
"""

from __future__ import annotations

import argparse
import timeit

import torch

import pyaten
from pyaten.core.tensor import preserve_format
from pyaten.native.gen_support import set_direct_calls
from pyaten.native.ops_handles import aten_entry


def _rows(lib, x, y):
    return {
        "ones_like(0-dim)": lambda: lib.ones_like(x),
        "zeros_like(0-dim)": lambda: lib.zeros_like(x),
        "empty_like(0-dim)": lambda: lib.empty_like(x),
        "full_like(0-dim, 2.0)": lambda: lib.full_like(x, 2.0),
        "ones_like(64x10)": lambda: lib.ones_like(y),
        "zeros_like(64x10)": lambda: lib.zeros_like(y),
        "x.new_zeros((64, 10))": lambda: x.new_zeros((64, 10)),
        "x.new_ones((64, 10))": lambda: x.new_ones((64, 10)),
        "x.fill_(1) (0-dim)": lambda: x.fill_(1),
        "x.zero_() (0-dim)": lambda: x.zero_(),
        "y.fill_(1.5) (64x10)": lambda: y.fill_(1.5),
    }


def _time(fn, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=1)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=4000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    pyaten.set_num_threads(1)
    theirs = _rows(torch, torch.tensor(1.0), torch.ones(64, 10))
    ours = _rows(pyaten, pyaten.tensor(1.0), pyaten.ones(64, 10))
    seed = aten_entry("ones_like")
    out = pyaten.tensor(2.0, requires_grad=True) * 3
    ours["backward seed: ones_like entry"] = lambda: seed.call(
        out, None, None, None, False, preserve_format)
    tout = torch.tensor(2.0, requires_grad=True) * 3
    theirs["backward seed: ones_like entry"] = lambda: torch.ones_like(
        tout, memory_format=torch.preserve_format)
    print(f"{'call':34s} {'torch µs':>9s} {'pyaten':>8s} {'ratio':>6s} "
          f"{'dispatched':>10s} {'ratio':>6s}")
    for name in ours:
        best = [float("inf")] * 3
        for _ in range(args.repeat):
            best[0] = min(best[0], _time(theirs[name], args.number))
            best[1] = min(best[1], _time(ours[name], args.number))
            previous = set_direct_calls(False)
            try:
                best[2] = min(best[2], _time(ours[name], args.number))
            finally:
                set_direct_calls(previous)
        t, p, d = best
        print(f"{name:34s} {t:9.2f} {p:8.2f} {p / t:6.1f} {d:10.2f} {d / t:6.1f}")


if __name__ == "__main__":
    main()
