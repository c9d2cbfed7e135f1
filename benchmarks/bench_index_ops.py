"""Indexing, sorting and searching on 1M elements, pyaten beside PyTorch (one thread):
index_select gather scatter_add sort topk (the goal: within 1.5x of PyTorch each), and the
others of their family for reference; then the per-call latency of the same ops on a 4x4
tensor.

    .venv/bin/python benchmarks/bench_index_ops.py [--repeat N] [--small-only]

Prints milliseconds (large) or microseconds (small) per call and the ratio pyaten/PyTorch.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from _common import best_times, per_call_us

import pyaten

N_ROWS, N_COLS = 1000, 1000  # 1M elements


def large_cases(m, x, flat, rows, index2d, src, mask, edges, points):
    return {
        "index_select(x, 0, 1000 rows)": lambda: m.index_select(x, 0, rows),
        "gather(x, 1, idx)": lambda: m.gather(x, 1, index2d),
        "scatter_add(x, 1, idx, src)": lambda: x.scatter_add(1, index2d, src),
        "sort(1M)": lambda: m.sort(flat),
        "sort(x, 1)": lambda: m.sort(x, 1),
        "topk(1M, 10)": lambda: m.topk(flat, 10),
        "topk(x, 10, 1)": lambda: m.topk(x, 10, 1),
        "scatter(x, 1, idx, src)": lambda: x.scatter(1, index2d, src),
        "index_add(x, 0, rows, x)": lambda: x.index_add(0, rows, x),
        "masked_fill(x, mask, 0)": lambda: x.masked_fill(mask, 0.0),
        "masked_select(x, mask)": lambda: x.masked_select(mask),
        "nonzero(mask)": lambda: mask.nonzero(),
        "argsort(x, 1)": lambda: x.argsort(1),
        "unique(int 1M)": lambda: m.unique(points),
        "searchsorted(1k edges, 1M)": lambda: m.searchsorted(edges, flat),
        "take_along_dim(x, idx, 1)": lambda: m.take_along_dim(x, index2d, 1),
    }


def small_cases(m, x, idx, index2d, mask):
    return {
        "index_select(x, 0, idx)": lambda: m.index_select(x, 0, idx),
        "gather(x, 1, idx2d)": lambda: m.gather(x, 1, index2d),
        "scatter_add(x, 1, idx2d, x)": lambda: x.scatter_add(1, index2d, x),
        "masked_fill(x, mask, 0)": lambda: x.masked_fill(mask, 0.0),
        "sort(x)": lambda: m.sort(x),
        "topk(x, 2)": lambda: m.topk(x, 2),
        "nonzero(mask)": lambda: m.nonzero(mask),
    }


def _inputs(m, arrays):
    make = (lambda a: torch.from_numpy(a)) if m is torch else pyaten.from_numpy
    return [make(a) for a in arrays]


def run_large(repeat: int) -> None:
    rng = np.random.default_rng(0)
    arrays = [
        rng.standard_normal((N_ROWS, N_COLS)).astype(np.float32),
        rng.standard_normal(N_ROWS * N_COLS).astype(np.float32),
        rng.integers(0, N_ROWS, N_ROWS),
        rng.integers(0, N_COLS, (N_ROWS, N_COLS)),
        rng.standard_normal((N_ROWS, N_COLS)).astype(np.float32),
        rng.random((N_ROWS, N_COLS)) > 0.5,
        np.sort(rng.standard_normal(1000).astype(np.float32)),
        rng.integers(0, 1000, N_ROWS * N_COLS),
    ]
    ours = large_cases(pyaten, *_inputs(pyaten, arrays))
    theirs = large_cases(torch, *_inputs(torch, arrays))
    print(f"{'1M elements (float32)':32} {'pyaten ms':>10} {'torch ms':>10} {'ratio':>7}")
    for name in ours:
        (a, b), _ = best_times(repeat, [ours[name], theirs[name]])
        print(f"{name:32} {a * 1e3:10.2f} {b * 1e3:10.2f} {a / b:7.2f}")


def run_small(number: int) -> None:
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((4, 4)).astype(np.float32), np.array([2, 0]),
              rng.integers(0, 4, (4, 4)), rng.random((4, 4)) > 0.5]
    ours = small_cases(pyaten, *_inputs(pyaten, arrays))
    theirs = small_cases(torch, *_inputs(torch, arrays))
    print(f"\n{'4x4 (float32), per call':32} {'pyaten us':>10} {'torch us':>10} {'ratio':>7}")
    for name in ours:
        a = per_call_us(ours[name], number)
        b = per_call_us(theirs[name], number)
        print(f"{name:32} {a:10.2f} {b:10.2f} {a / b:7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--small-only", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if not args.small_only:
        run_large(args.repeat)
    run_small(args.number)


if __name__ == "__main__":
    main()
