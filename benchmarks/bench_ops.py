"""Per-call latency of small-tensor ops, pyaten beside PyTorch (both on one thread), and the
time of `import pyaten` beside `import torch` (each in a fresh interpreter).

Run: .venv/bin/python benchmarks/bench_ops.py [--quick]

The geometric mean of pyaten/PyTorch latency is printed last; the issue's goal is <= 1.0.
A second table shows the same pyaten calls with `pyaten.dispatch.trace` imported but off, to
show tracing costs nothing while it is off.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from _common import geometric_mean, per_call_cpu_us


def _cases(lib, make):
    a = make((4, 4))
    b = make((4, 4))
    m = make((4, 4))
    x = make((16,))
    return {
        "add(a, b)": lambda: lib.add(a, b),
        "a + b": lambda: a + b,
        "mul(a, 2.0)": lambda: lib.mul(a, 2.0),
        "a.add_(b)": lambda: a.add_(b),
        "sigmoid(a)": lambda: lib.sigmoid(a),
        "relu(a)": lambda: lib.relu(a),
        "mm(m, m)": lambda: lib.mm(m, m),
        "sum(a)": lambda: lib.sum(a),
        "sum(a, dim=1)": lambda: lib.sum(a, dim=1),
        "m.t()": lambda: m.t(),
        "x.view(4, 4)": lambda: x.view(4, 4),
        "a[0]": lambda: a[0],
        "cat([a, b])": lambda: lib.cat([a, b]),
    }


def _import_time(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; " \
           "print(time.perf_counter() - t)"
    runs = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True)
        runs.append(float(out.stdout.strip()))
    return min(runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    number, repeat = (2000, 3) if args.quick else (10000, 5)

    import torch

    torch.set_num_threads(1)
    import pyaten

    ours = _cases(pyaten, lambda s: pyaten.ones(*s))
    theirs = _cases(torch, lambda s: torch.ones(*s))
    print(f"{'op':<16}{'pyaten us':>12}{'torch us':>12}{'ratio':>8}")
    ratios = []
    for name in ours:
        p = per_call_cpu_us(ours[name], number, repeat)
        t = per_call_cpu_us(theirs[name], number, repeat)
        ratios.append(p / t)
        print(f"{name:<16}{p:>12.2f}{t:>12.2f}{p / t:>8.2f}")
    print(f"geometric mean pyaten/torch: {geometric_mean(ratios):.2f}")

    # Tracing off vs. never imported: the call path must not change.
    from pyaten.dispatch import trace

    assert not trace.ACTIVE
    a = pyaten.ones(4, 4)
    with trace():
        pyaten.add(a, a)  # turn tracing on and off once
    after = per_call_cpu_us(lambda: pyaten.add(a, a), number, repeat)
    print(f"add(a, b) after a trace was on and off again: {after:.2f} us")

    pa, ta = _import_time("pyaten"), _import_time("torch")
    print(f"import pyaten: {pa:.3f} s   import torch: {ta:.3f} s   ratio {pa / ta:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
