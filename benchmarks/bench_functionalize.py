"""functionalize's cost, beside PyTorch, on one thread (issue 31): a program of in-place
operators and writes through views on a small (4x4) and a larger (256x256) float32 input, run

- eagerly (pyaten and torch),
- functionalized on the Functionalize key (`pyaten.func.functionalize`, torch.func.functionalize),
- functionalized by the FunctionalTensorMode (`dispatch_functionalize`, pyaten only).

Times are best-of-N wall times per call, pyaten's and torch's passes interleaved in one
process; the ratios are what to read on a shared machine.

Run: .venv/bin/python benchmarks/bench_functionalize.py [--quick]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402

import numpy as np  # noqa: E402
from _common import best_times  # noqa: E402

import pyaten  # noqa: E402
from pyaten._functionalize import dispatch_functionalize  # noqa: E402
from pyaten.func import functionalize  # noqa: E402


def _program(x):
    y = x.clone()
    y.mul_(2).add_(1)
    y[1:].relu_()
    y.t()[0].sub_(3)
    d = y.diagonal()
    d.mul_(0.5)
    return y.sum(0) + x


def _cases(ours_in, theirs_in, torch):
    return [
        ("eager", lambda: _program(ours_in), lambda: _program(theirs_in)),
        ("functionalize (key)", lambda: functionalize(_program)(ours_in),
         lambda: torch.func.functionalize(_program)(theirs_in)),
        ("functionalize (mode)", lambda: dispatch_functionalize(_program)(ours_in),
         lambda: torch.func.functionalize(_program)(theirs_in)),
    ]


def _batch(fn, number):
    def run():
        for _ in range(number):
            fn()
    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    number, repeat = (5, 2) if parser.parse_args().quick else (50, 7)
    import torch

    torch.set_num_threads(1)
    pyaten.set_num_threads(1)
    print(f"{'case':34s} {'pyaten us':>10s} {'torch us':>10s} {'ratio':>7s}")
    for n in (4, 256):
        array = np.linspace(-1, 1, n * n, dtype=np.float32).reshape(n, n)
        ours_in, theirs_in = pyaten.tensor(array), torch.from_numpy(array.copy())
        np.testing.assert_allclose(functionalize(_program)(ours_in).numpy(),
                                   torch.func.functionalize(_program)(theirs_in).numpy(),
                                   rtol=1e-6)
        for name, ours, theirs in _cases(ours_in, theirs_in, torch):
            ours(), theirs()  # warm-up: dispatch tables, caches
            (ours_s, theirs_s), _ = best_times(
                repeat, [_batch(ours, number), _batch(theirs, number)], pause_gc=True)
            ours_us, theirs_us = ours_s / number * 1e6, theirs_s / number * 1e6
            print(f"{name + f' {n}x{n}':34s} {ours_us:10.1f} {theirs_us:10.1f} "
                  f"{ours_us / theirs_us:7.2f}")


if __name__ == "__main__":
    main()
