"""Per-call latency of small-tensor ops, pyaten beside PyTorch (both on one thread), and the
time of `import pyaten` beside `import torch` (each in a fresh interpreter).

Run: .venv/bin/python benchmarks/bench_ops.py [--quick]
     PYATEN_NO_ACCEL=1 .venv/bin/python benchmarks/bench_ops.py   # the pure-Python path

Two tables: no grad, then with inputs requiring grad; each ends with the geometric mean of
pyaten/PyTorch latency (issue 23's goals: <= 1.3 and <= 1.5, no op above 2).
A second table shows the same pyaten calls with `pyaten.dispatch.trace` imported but off, to
show tracing costs nothing while it is off.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from _common import geometric_mean, per_call_cpu_us


def _cases(lib, make, grad: bool = False):
    """The issue's small-op set on 4x4 float32; with `grad`, `a`, `m`, `x` and `w` require
    grad, so every call records a graph node (`a.add_(b)` is left out: a leaf that requires
    grad refuses in-place writes)."""
    a = make((4, 4))
    b = make((4, 4))
    m = make((4, 4))
    x = make((16,))
    w = make((3, 4))
    bias = make((3,))
    if grad:
        a.requires_grad_(True)
        m.requires_grad_(True)
        x.requires_grad_(True)
        w.requires_grad_(True)
    functional = lib.nn.functional
    return {
        "add(a, b)": lambda: lib.add(a, b),
        "a + b": lambda: a + b,
        "mul(a, 2.0)": lambda: lib.mul(a, 2.0),
        "a.add_(b)": None if grad else (lambda: a.add_(b)),
        "sigmoid(a)": lambda: lib.sigmoid(a),
        "exp(a)": lambda: lib.exp(a),
        "mm(m, m)": lambda: lib.mm(m, m),
        "sum(a)": lambda: lib.sum(a),
        "sum(a, dim=1)": lambda: lib.sum(a, dim=1),
        "a.transpose(0, 1)": lambda: a.transpose(0, 1),
        "x.view(4, 4)": lambda: x.view(4, 4),
        "a[0]": lambda: a[0],
        "cat([a, b])": lambda: lib.cat([a, b]),
        "relu(a)": lambda: lib.relu(a),
        "softmax(a, dim=1)": lambda: lib.softmax(a, dim=1),
        "linear(a, w, bias)": lambda: functional.linear(a, w, bias),
    }


def _table(title: str, ours: dict, theirs: dict, number: int, repeat: int,
           plain: dict | None = None) -> float:
    """One table: each op's pyaten and PyTorch calls timed in alternation (`repeat` rounds,
    the best of each), so that load on the shared machine hits both alike. With `plain`, the
    same pyaten calls with the bindings' direct calls off (Note: the direct call) as a third
    column, timed in the same rounds."""
    from pyaten.native.gen_support import set_direct_calls

    print(title)
    extra = f"{'no direct':>11}" if plain else ""
    print(f"{'op':<20}{'pyaten us':>12}{'torch us':>12}{'ratio':>8}{extra}")
    ratios = []
    for name, fn in ours.items():
        if fn is None:
            continue
        best_ours = best_theirs = best_plain = float("inf")
        for _ in range(repeat):
            best_ours = min(best_ours, per_call_cpu_us(fn, number, 1))
            best_theirs = min(best_theirs, per_call_cpu_us(theirs[name], number, 1))
            if plain:
                set_direct_calls(False)
                try:
                    best_plain = min(best_plain, per_call_cpu_us(plain[name], number, 1))
                finally:
                    set_direct_calls(True)
        ratios.append(best_ours / best_theirs)
        row = f"{name:<20}{best_ours:>12.2f}{best_theirs:>12.2f}{best_ours / best_theirs:>8.2f}"
        print(row + (f"{best_plain:>11.2f}" if plain else ""))
    mean = geometric_mean(ratios)
    print(f"geometric mean pyaten/torch: {mean:.2f}   worst: {max(ratios):.2f}\n")
    return mean


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
    number, repeat = (1000, 5) if args.quick else (4000, 7)

    import torch

    torch.set_num_threads(1)
    import pyaten
    from pyaten.core import accel

    pyaten.set_num_threads(1)  # NumPy's BLAS pool too (mm, linear)
    print("compiled accelerator (Note: the accelerator):",
          "loaded" if accel.ACCEL is not None else
          "off (PYATEN_NO_ACCEL)" if accel.DISABLED else f"not built ({accel.LOAD_ERROR})")

    ours = _cases(pyaten, lambda s: pyaten.ones(*s))
    _table(
        "4x4 float32, no input requires grad (goal: geomean <= 1.3, none above 2); last column:"
        " pyaten with the direct calls off",
        ours, _cases(torch, lambda s: torch.ones(*s)), number, repeat, plain=ours,
    )
    _table(
        "the same with inputs requiring grad, a node recorded per call (goal: <= 1.5)",
        _cases(pyaten, lambda s: pyaten.ones(*s), True),
        _cases(torch, lambda s: torch.ones(*s), True),
        number, repeat,
    )

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
