"""Reductions on 4M float32 elements, pyaten beside PyTorch (one thread) and beside the best
single NumPy/SciPy expression for each operator.

Run: .venv/bin/python benchmarks/bench_reduce.py [--quick]

The goal (docs/performance.md): each reduction within 1.5x of PyTorch, or within 10% of the
best NumPy expression ("np" column; "ratio np" is pyaten/np). `sum` of a contiguous tensor
must be within 1.5x of PyTorch (see Note: summing a large contiguous float array,
pyaten/native/reduction.py).
"""

from __future__ import annotations

import argparse
import os

# One thread for everyone: PyTorch's set_num_threads(1), and NumPy's BLAS (the gemv of `sum`).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402 - after the thread settings
from _common import geometric_mean, goal_met, per_call_cpu_us  # noqa: E402

N = 4 * 1024 * 1024


def _cases(lib, x, y):
    """name -> call on a flat (N,) tensor `x` and its (2048, 2048) view `y`."""
    return {
        "sum": lambda: lib.sum(x),
        "sum(dim=1)": lambda: lib.sum(y, dim=1),
        "sum(dim=0)": lambda: lib.sum(y, dim=0),
        "mean": lambda: lib.mean(x),
        "prod(dim=1)": lambda: lib.prod(y, 1),
        "nansum": lambda: lib.nansum(x),
        "amax": lambda: lib.amax(x),
        "max": lambda: lib.max(x),
        "max(dim=1)": lambda: lib.max(y, 1),
        "argmax": lambda: lib.argmax(x),
        "all": lambda: lib.all(x),
        "any(dim=1)": lambda: lib.any(y, 1),
        "count_nonzero": lambda: lib.count_nonzero(x),
        "std": lambda: lib.std(x),
        "var(dim=1)": lambda: lib.var(y, 1),
        "logsumexp(dim=1)": lambda: lib.logsumexp(y, 1),
        "norm": lambda: lib.norm(x),
        "dist": lambda: lib.dist(y, y),
    }


def _numpy_cases(a, b):
    """The best single NumPy expression for each case (the yardstick when torch is far)."""
    ones = np.ones(1024, np.float32)
    return {
        "sum": lambda: np.add.reduce(a.reshape(-1, 1024) @ ones),
        "sum(dim=1)": lambda: np.add.reduce(b, axis=1),
        "sum(dim=0)": lambda: np.add.reduce(b, axis=0),
        "mean": lambda: np.add.reduce(a.reshape(-1, 1024) @ ones) / N,
        "prod(dim=1)": lambda: np.multiply.reduce(b, axis=1),
        "nansum": lambda: np.nansum(a),
        "amax": lambda: np.maximum.reduce(a),
        "max": lambda: np.maximum.reduce(a),
        "max(dim=1)": lambda: np.argmax(b, axis=1),
        "argmax": lambda: np.argmax(a),
        "all": lambda: np.all(a),
        "any(dim=1)": lambda: np.any(b, axis=1),
        "count_nonzero": lambda: np.count_nonzero(a),
        "std": lambda: np.std(a, ddof=1),
        "var(dim=1)": lambda: np.var(b, axis=1, ddof=1),
        "logsumexp(dim=1)": lambda: _scipy_logsumexp(b),
        "norm": lambda: np.linalg.norm(a),
        "dist": lambda: np.linalg.norm(b - b),
    }


def _scipy_logsumexp(b):
    from scipy.special import logsumexp

    return logsumexp(b, axis=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    number, repeat = (3, 3) if args.quick else (10, 5)

    import torch

    torch.set_num_threads(1)
    import pyaten

    rng = np.random.default_rng(0)
    a = rng.random(N, dtype=np.float32) + 0.5
    b = a.reshape(2048, 2048)
    px, tx = pyaten.from_numpy(a), torch.from_numpy(a)
    ours = _cases(pyaten, px, px.view(2048, 2048))
    theirs = _cases(torch, tx, tx.view(2048, 2048))
    yard = _numpy_cases(a, b)

    print(f"{'op (4M float32)':<18}{'pyaten us':>11}{'torch us':>11}{'np us':>11}"
          f"{'ratio torch':>13}{'ratio np':>10}  ok")
    ratios = []
    for name in ours:
        p, t, n = (per_call_cpu_us(f[name], number, repeat) for f in (ours, theirs, yard))
        ratios.append(p / t)
        print(f"{name:<18}{p:>11.0f}{t:>11.0f}{n:>11.0f}{p / t:>13.2f}{p / n:>10.2f}  "
              f"{'yes' if goal_met(p, t, n) else 'NO'}")
    print(f"geometric mean pyaten/torch: {geometric_mean(ratios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
