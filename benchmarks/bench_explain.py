"""Explaining costs nothing while it is off.

Each row times one call three ways, each in a fresh process so no state leaks between them:
- "never on": pyaten in a process where `pyaten.explain()` has never been entered;
- "after off": the same call after a `with pyaten.explain():` block has run and ended (the
  dispatcher's call caches were dropped when tracing started and stopped, the result hook
  removed);
- "while on": the cost of explaining itself, for scale (one explained call per iteration);
and PyTorch's time for the same call beside them.

Run: .venv/bin/python benchmarks/bench_explain.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 5  # fresh processes per mode, interleaved; the best of each is kept

# name -> (setup, statement), written once for a module `m` (pyaten or torch).
CASES = {
    "add(a, b)": ("a = m.ones(4, 4); b = m.ones(4)", "m.add(a, b)"),
    "add(a, 1.5, alpha=2)": ("a = m.ones(4, 4)", "m.add(a, 1.5, alpha=2)"),
    "a.add_(b)": ("a = m.ones(4, 4); b = m.ones(4)", "a.add_(b)"),
    "a.view(16)": ("a = m.ones(4, 4)", "a.view(16)"),
    "zeros(4, 4)": ("", "m.zeros(4, 4)"),
    "matmul(a, a)": ("a = m.ones(4, 4)", "m.matmul(a, a)"),
}

_CHILD = r"""
import json, sys, timeit, warnings
warnings.simplefilter("ignore")
mode, setup, stmt = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "torch":
    import torch as m
else:
    import pyaten as m
ns = {"m": m}
exec(setup, ns)
if mode == "after":
    with m.explain():
        exec(stmt, ns)
code = compile(stmt, "<bench>", "exec")
if mode == "on":
    def one():
        with m.explain():
            exec(code, ns)
    number = 100
else:
    def one():
        exec(code, ns)
    number = 3000
one()
best = min(timeit.repeat(one, number=number, repeat=5)) / number
print(json.dumps(best * 1e6))
"""


def _time(mode: str, setup: str, stmt: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, setup, stmt],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    print(f"per-call time in microseconds (best of {ROUNDS} fresh processes x 5 repeats)")
    header = f"{'call':<24}{'never on':>10}{'after off':>11}{'off/never':>11}"
    header += f"{'while on':>11}{'torch':>9}"
    print(header)
    for name, (setup, stmt) in CASES.items():
        # Interleaved fresh processes, best of each: the machine's noise hits both alike.
        never, after = float("inf"), float("inf")
        for _ in range(ROUNDS):
            never = min(never, _time("never", setup, stmt))
            after = min(after, _time("after", setup, stmt))
        on = _time("on", setup, stmt)
        theirs = _time("torch", setup, stmt)
        print(f"{name:<24}{never:>10.2f}{after:>11.2f}{after / never:>10.2f}x"
              f"{on:>11.1f}{theirs:>9.2f}")


if __name__ == "__main__":
    main()
