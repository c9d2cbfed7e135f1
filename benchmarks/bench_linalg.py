"""Linear algebra, pyaten beside PyTorch (one thread) and beside the best single NumPy/SciPy
expression: einsum and batched matmul, and inv/solve/svd/det/eigh/cholesky/qr on 256x256.

Run: .venv/bin/python benchmarks/bench_linalg.py [--quick]

The goal: each within 1.5x of PyTorch, or within 10% of the NumPy/SciPy expression ("np"
column; LAPACK builds differ: PyTorch's wheel links MKL, NumPy OpenBLAS), with nn's small
`addmm` (linear: 32x64 @ 64x64 + bias) as the per-call-overhead case.
"""

from __future__ import annotations

import argparse
import os

# One thread for everyone: PyTorch's set_num_threads(1), NumPy's and SciPy's BLAS/LAPACK.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402 - after the thread settings
from _common import geometric_mean, goal_met, per_call_cpu_us  # noqa: E402

N = 256


def _cases(lib, a, spd, b, x, y, bias, w):
    """name -> call; a: (256, 256), spd: symmetric positive-definite, b: (256, 64),
    x/y: (64, 128, 128) batches, bias/w: a linear layer's (64,), (64, 64) on (32, 64)."""
    lin = lib.linalg
    return {
        "einsum bij,bjk->bik": lambda: lib.einsum("bij,bjk->bik", x, y),
        "einsum ij,ij->i": lambda: lib.einsum("ij,ij->i", a, a),
        "bmm (64,128,128)": lambda: lib.bmm(x, y),
        "matmul batched": lambda: lib.matmul(x, y),
        "baddbmm": lambda: lib.baddbmm(x, x, y),
        "addmm linear": lambda: lib.addmm(bias, w[:32], w.t()),
        "inv 256": lambda: lin.inv(a),
        "solve 256": lambda: lin.solve(a, b),
        "svd 256": lambda: lin.svd(a),
        "svdvals 256": lambda: lin.svdvals(a),
        "det 256": lambda: lin.det(a),
        "slogdet 256": lambda: lin.slogdet(a),
        "eigh 256": lambda: lin.eigh(spd),
        "cholesky 256": lambda: lin.cholesky(spd),
        "qr 256": lambda: lin.qr(a),
        "matrix_norm nuc": lambda: lin.matrix_norm(a, "nuc"),
        "vector_norm": lambda: lin.vector_norm(a),
    }


def _numpy_cases(a, spd, b, x, y, bias, w):
    import scipy.linalg as sl

    return {
        "einsum bij,bjk->bik": lambda: np.matmul(x, y),
        "einsum ij,ij->i": lambda: np.einsum("ij,ij->i", a, a),
        "bmm (64,128,128)": lambda: np.matmul(x, y),
        "matmul batched": lambda: np.matmul(x, y),
        "baddbmm": lambda: x + np.matmul(x, y),
        "addmm linear": lambda: w[:32] @ w.T + bias,
        "inv 256": lambda: np.linalg.inv(a),
        "solve 256": lambda: sl.lu_solve(sl.lu_factor(a), b),
        "svd 256": lambda: np.linalg.svd(a),
        "svdvals 256": lambda: np.linalg.svd(a, compute_uv=False),
        "det 256": lambda: sl.lu_factor(a),
        "slogdet 256": lambda: sl.lu_factor(a),
        "eigh 256": lambda: np.linalg.eigh(spd),
        "cholesky 256": lambda: np.linalg.cholesky(spd),
        "qr 256": lambda: np.linalg.qr(a),
        "matrix_norm nuc": lambda: np.linalg.svd(a, compute_uv=False).sum(),
        "vector_norm": lambda: np.linalg.norm(a),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    number, repeat = (2, 3) if args.quick else (5, 5)

    import torch

    torch.set_num_threads(1)
    import pyaten

    rng = np.random.default_rng(0)
    arrays = [
        (rng.standard_normal((N, N)) + N * np.eye(N)).astype(np.float32),
        None,
        rng.standard_normal((N, 64)).astype(np.float32),
        rng.standard_normal((64, 128, 128)).astype(np.float32),
        rng.standard_normal((64, 128, 128)).astype(np.float32),
        rng.standard_normal(64).astype(np.float32),
        rng.standard_normal((64, 64)).astype(np.float32),
    ]
    arrays[1] = (arrays[0] @ arrays[0].T / N + np.eye(N)).astype(np.float32)
    ours = _cases(pyaten, *[pyaten.from_numpy(v) for v in arrays])
    theirs = _cases(torch, *[torch.from_numpy(v) for v in arrays])
    yard = _numpy_cases(*arrays)

    print(f"{'op (float32)':<22}{'pyaten us':>11}{'torch us':>11}{'np us':>11}"
          f"{'ratio torch':>13}{'ratio np':>10}  ok")
    ratios = []
    for name in ours:
        p, t, n = (per_call_cpu_us(f[name], number, repeat) for f in (ours, theirs, yard))
        ratios.append(p / t)
        print(f"{name:<22}{p:>11.0f}{t:>11.0f}{n:>11.0f}{p / t:>13.2f}{p / n:>10.2f}  "
              f"{'yes' if goal_met(p, t, n) else 'NO'}")
    print(f"geometric mean pyaten/torch: {geometric_mean(ratios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
