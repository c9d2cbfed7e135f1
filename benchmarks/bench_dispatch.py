"""Dispatch overhead: a two-tensor operator whose CPU kernel does nothing.

Prints, per call, the time of pyaten's `entry.call(a, b)` and of PyTorch's
`torch.ops.ns.op.default(a, b)` (a `torch.library` CPU kernel written in Python), each next
to the time of calling the kernel directly, and the difference (the dispatcher's own cost).

Run: .venv/bin/python benchmarks/bench_dispatch.py
"""

from __future__ import annotations

import timeit
import warnings

import torch
import torch.library as tl

import pyaten.dispatch as pd
import pyaten.library as pl
from pyaten.dispatch.keys import backend_keyset_bits

N = 200_000


class _Arg:
    """What the dispatcher reads from a tensor: its raw key-set int."""

    __slots__ = ("_keyset",)

    def __init__(self) -> None:
        self._keyset = backend_keyset_bits("cpu")


def _per_call(fn, *args) -> float:
    best = min(timeit.repeat(lambda: fn(*args), number=N, repeat=5))
    return best / N * 1e9  # ns


def _per_call_stmt(stmt: str, namespace: dict) -> float:
    best = min(timeit.repeat(stmt, globals=namespace, number=N, repeat=5))
    return best / N * 1e9


def kernel(a, b):
    return None


def main() -> None:
    warnings.simplefilter("ignore")
    ours = pl.Library("bench_dispatch", "DEF")
    ours.define("noop(Tensor a, Tensor b) -> Tensor")
    ours.impl("noop", kernel, "CPU")
    entry = pd.get_operator("bench_dispatch::noop")
    a, b = _Arg(), _Arg()

    theirs = tl.Library("bench_dispatch", "DEF")
    theirs.define("noop(Tensor a, Tensor b) -> Tensor")
    theirs.impl("noop", kernel, "CPU")
    top = torch.ops.bench_dispatch.noop.default
    x, y = torch.ones(2), torch.ones(2)

    try:  # real pyaten tensors when the tensor core is importable
        import pyaten

        pa, pb = pyaten.ones(2), pyaten.ones(2)
    except Exception:  # noqa: BLE001 - the benchmark still runs on the stand-in arguments
        pa, pb = a, b
    ns = {"call": entry.call, "top": top, "kernel": kernel, "a": a, "b": b, "x": x, "y": y}
    ns.update(pa=pa, pb=pb)
    direct = _per_call_stmt("kernel(a, b)", ns)
    ours_total = _per_call_stmt("call(a, b)", ns)
    theirs_total = _per_call_stmt("top(x, y)", ns)
    direct_torch = _per_call_stmt("kernel(x, y)", ns)
    ours_tensors = _per_call_stmt("call(pa, pb)", ns)

    print(f"{'':34}{'per call':>12}{'dispatch cost':>16}")
    print(f"{'kernel called directly':34}{direct:>10.0f}ns")
    print(f"{'pyaten  entry.call(a, b)':34}{ours_total:>10.0f}ns{ours_total - direct:>14.0f}ns")
    print(
        f"{'pyaten  same, pyaten.Tensor args':34}{ours_tensors:>10.0f}ns"
        f"{ours_tensors - direct:>14.0f}ns"
    )
    print(
        f"{'torch   torch.ops.ns.noop(x, y)':34}{theirs_total:>10.0f}ns"
        f"{theirs_total - direct_torch:>14.0f}ns"
    )
    print(
        f"pyaten dispatch cost {'<' if ours_total - direct < 500 else '>='} 0.5 us; "
        f"pyaten/torch per call: {ours_total / theirs_total:.2f}x"
    )


if __name__ == "__main__":
    main()
