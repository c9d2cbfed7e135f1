"""`import pyaten` beside `import torch`: the wall time of each import in a fresh interpreter.

Run: .venv/bin/python benchmarks/bench_import.py [--quick]

Each import runs in its own new process (nothing cached in memory), interleaved so that
machine load hits both alike; the best and the median of the runs are printed. This replaces
the timed test that tests/test_codegen.py had: an import time is a measurement for a quiet
machine, not a pass/fail check on a loaded one (docs/performance.md, "Import", has the
figures and where the time goes).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

CODE = ("import time; start = time.perf_counter(); import {module}; "
        "print(time.perf_counter() - start)")
MODULES = ("pyaten", "torch")


def import_seconds(module: str) -> float:
    """The time `import module` takes in a new interpreter."""
    run = subprocess.run([sys.executable, "-c", CODE.format(module=module)],
                         capture_output=True, text=True, check=True, timeout=120)
    return float(run.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7
    times: dict[str, list[float]] = {module: [] for module in MODULES}
    for _ in range(repeat):
        for module in MODULES:
            times[module].append(import_seconds(module))
    print(f"{'import':<10}{'best s':>10}{'median s':>10}")
    for module in MODULES:
        print(f"{module:<10}{min(times[module]):>10.3f}{statistics.median(times[module]):>10.3f}")
    ratio = min(times["pyaten"]) / min(times["torch"])
    print(f"pyaten / torch (best): {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
