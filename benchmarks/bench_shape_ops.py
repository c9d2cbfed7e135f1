"""Per-call latency of the shape, copy, factory, reduction, product and indexing operators:
pyaten beside PyTorch (one thread), small tensors, in one run.

    .venv/bin/python benchmarks/bench_shape_ops.py [--number N]

Prints microseconds per call for each, the ratio pyaten/PyTorch and the geometric mean.
"""

from __future__ import annotations

import argparse
import math

import torch
from _common import per_call_us

import pyaten


def cases(m, x, idx, y3):
    return {
        "x.view(16)": lambda: x.view(16),
        "x.reshape(2, 8)": lambda: x.reshape(2, 8),
        "x.t()": lambda: x.t(),
        "x.permute(1, 0)": lambda: x.permute(1, 0),
        "x.unsqueeze(0)": lambda: x.unsqueeze(0),
        "x.expand(2, 4, 4)": lambda: x.expand(2, 4, 4),
        "x[0]": lambda: x[0],
        "x[:, 1:3]": lambda: x[:, 1:3],
        "x[idx]": lambda: x[idx],
        "x[0] = 1.0": lambda: x.__setitem__(0, 1.0),
        "x.clone()": lambda: x.clone(),
        "x.fill_(2.0)": lambda: x.fill_(2.0),
        "x.to(float64)": lambda: x.to(m.float64),
        "zeros(4, 4)": lambda: m.zeros(4, 4),
        "arange(16)": lambda: m.arange(16),
        "x.sum()": lambda: x.sum(),
        "x.sum(0)": lambda: x.sum(0),
        "x.mean(1)": lambda: x.mean(1),
        "mm(x, x)": lambda: m.mm(x, x),
        "matmul(y3, x)": lambda: m.matmul(y3, x),
        "cat([x, x])": lambda: m.cat([x, x]),
        # shapes and views (kernels/view_ops.py, kernels/rearrange.py)
        "x.diagonal()": lambda: x.diagonal(),
        "x.movedim(0, 1)": lambda: x.movedim(0, 1),
        "x.unflatten(1, (2, 2))": lambda: x.unflatten(1, (2, 2)),
        "x.unfold(0, 2, 1)": lambda: x.unfold(0, 2, 1),
        "x.broadcast_to(2, 4, 4)": lambda: x.broadcast_to((2, 4, 4)),
        "x.unbind()": lambda: x.unbind(),
        "x.chunk(2)": lambda: x.chunk(2),
        "x.tensor_split(3)": lambda: x.tensor_split(3),
        "stack([x, x])": lambda: m.stack([x, x]),
        "hstack([x, x])": lambda: m.hstack([x, x]),
        "x.flip(0)": lambda: x.flip(0),
        "x.roll(1, 0)": lambda: x.roll(1, 0),
        "x.rot90()": lambda: x.rot90(),
        "x.repeat(2, 2)": lambda: x.repeat(2, 2),
        "x.tril()": lambda: x.tril(),
        "x.diag_embed()": lambda: x.diag_embed(),
        "x.repeat_interleave(2)": lambda: x.repeat_interleave(2),
        "x.select_scatter(x[0], 0, 1)": lambda: x.select_scatter(x[0], 0, 1),
        "x.diagonal_scatter(x[0])": lambda: x.diagonal_scatter(x[0]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    ours = cases(pyaten, pyaten.ones(4, 4), pyaten.tensor([0, 2]), pyaten.ones(3, 4, 4))
    theirs = cases(torch, torch.ones(4, 4), torch.tensor([0, 2]), torch.ones(3, 4, 4))
    print(f"{'operation':30s} {'pyaten us':>10s} {'torch us':>9s} {'ratio':>7s}")
    ratios = []
    for name, fn in ours.items():
        a = per_call_us(fn, args.number)
        b = per_call_us(theirs[name], args.number)
        ratios.append(a / b)
        print(f"{name:30s} {a:10.2f} {b:9.2f} {a / b:7.1f}")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"geometric mean of pyaten/torch: {geo:.1f}")


if __name__ == "__main__":
    main()
