"""`import pyaten` beside `import torch`: the wall time of each import in a fresh interpreter.

Run: .venv/bin/python benchmarks/bench_import.py [--quick] [--tree DIR ...] [--parts]

Each import runs in its own new process (nothing cached in memory), interleaved so that
machine load hits both alike; the best and the median of the runs are printed, wall and CPU
time (CPU time moves less with the load of a shared machine). `--tree DIR` adds `import
pyaten` from another checkout, e.g. `git worktree add /tmp/base <commit>`, to compare a
change with what it replaced; `--parts` adds where the time goes (`-X importtime` self times
by part: NumPy, the dispatcher, the kernel modules, the generated API, autograd, ...). This
replaces the timed test that tests/test_codegen.py had:
an import time is a measurement for a quiet machine, not a pass/fail check on a loaded one
(docs/performance.md, "Import", has the figures and where the time goes).

Python must be able to write bytecode caches (.pyc) for the figures to mean anything: with
PYTHONDONTWRITEBYTECODE set, every import recompiles every module's source.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

CODE = ("import time; start = time.perf_counter(); cpu = time.process_time(); import {module}; "
        "print(time.perf_counter() - start, time.process_time() - cpu)")
# Modules `import pyaten` should not load (tests/test_import_time.py checks each).
HEAVY = ("numba", "scipy", "scipy.sparse", "yaml", "pyaten.declarations")
ROOT = Path(__file__).resolve().parent.parent


def import_seconds(module: str, cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of `import module` in a new interpreter started in `cwd`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    run = subprocess.run([sys.executable, "-c", CODE.format(module=module)], cwd=cwd, env=env,
                         capture_output=True, text=True, check=True, timeout=120)
    wall, cpu = run.stdout.split()
    return float(wall), float(cpu)


# Where `import pyaten` spends its time (`--parts`): `python -X importtime` self times summed
# by the first group whose prefix a module has. The generated API (the native module, its
# schemas and bindings) runs inside `pyaten/__init__.py`, so it is the `pyaten` row.
PARTS = (  # (part, packages: a module is in a part when it is one of them or inside one)
    ("numpy, ml_dtypes", ("numpy", "ml_dtypes")),
    ("pyaten: dispatch, core, schema", ("pyaten.dispatch", "pyaten.core", "pyaten.schema")),
    ("pyaten: kernel modules", ("pyaten.native.kernels",)),
    ("pyaten: autograd (derivatives module)", ("pyaten.autograd",)),
    ("pyaten: native support modules", ("pyaten.native",)),
    ("pyaten: nn, amp, nested, sparse, ...", ("pyaten.*",)),  # not pyaten itself
    ("pyaten: generated API (pyaten/__init__)", ("pyaten",)),
    ("Python's own modules and others", ()),
)


def _part(module: str) -> str:
    for label, packages in PARTS:
        for package in packages:
            if package.endswith(".*"):
                if module.startswith(package[:-1]):
                    return label
            elif module == package or module.startswith(package + "."):
                return label
    return PARTS[-1][0]


def import_parts(cwd: Path) -> dict[str, float]:
    """Self seconds of `import pyaten` by part, from one `-X importtime` run in `cwd`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    run = subprocess.run([sys.executable, "-X", "importtime", "-c", "import pyaten"], cwd=cwd,
                         env=env, capture_output=True, text=True, check=True, timeout=120)
    parts = dict.fromkeys((label for label, _ in PARTS), 0.0)
    for line in run.stderr.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if len(fields) != 3 or not fields[0].strip().isdigit():
            continue
        parts[_part(fields[2].strip())] += int(fields[0]) / 1e6
    return parts


def print_parts(trees: list[tuple[str, Path]], repeat: int) -> None:
    """The best (smallest) self time of each part over `repeat` interleaved runs."""
    best: dict[str, dict[str, float]] = {label: {} for label, _ in trees}
    for _ in range(repeat):
        for label, cwd in trees:
            for part, seconds in import_parts(cwd).items():
                best[label][part] = min(best[label].get(part, seconds), seconds)
    width = max(12, *(len(label) + 2 for label, _ in trees))
    print(f"\n{'part (-X importtime self time, best of ' + str(repeat) + ', s)':<44}"
          + "".join(f"{label:>{width}}" for label, _ in trees))
    for part, _ in PARTS:
        print(f"{part:<44}" + "".join(f"{best[label][part]:>{width}.3f}" for label, _ in trees))
    print(f"{'sum of the parts':<44}"
          + "".join(f"{sum(best[label].values()):>{width}.3f}" for label, _ in trees))


def heavy_loaded(cwd: Path) -> list[str]:
    code = f"import sys, pyaten; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    run = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                         check=True, timeout=120)
    return run.stdout.split()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--tree", action="append", default=[], type=Path,
                        help="another checkout whose 'import pyaten' to time alongside")
    parser.add_argument("--parts", action="store_true",
                        help="also print where the time goes (python -X importtime, by part)")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7
    runs = [("pyaten", "pyaten", ROOT), ("torch", "torch", ROOT)]
    runs += [(f"pyaten@{tree}", "pyaten", tree.resolve()) for tree in args.tree]
    for _, module, cwd in runs:  # a first run writes the bytecode caches
        import_seconds(module, cwd)
    times: dict[str, list[tuple[float, float]]] = {label: [] for label, _, _ in runs}
    for _ in range(repeat):
        for label, module, cwd in runs:
            times[label].append(import_seconds(module, cwd))
    width = max(len(label) for label in times) + 2
    print(f"{'import':<{width}}{'best s':>9}{'median s':>10}{'best cpu s':>12}")
    for label, got in times.items():
        walls = [w for w, _ in got]
        cpus = [c for _, c in got]
        print(f"{label:<{width}}{min(walls):>9.3f}{statistics.median(walls):>10.3f}"
              f"{min(cpus):>12.3f}")
    ratio = min(w for w, _ in times["pyaten"]) / min(w for w, _ in times["torch"])
    print(f"pyaten / torch (best): {ratio:.2f}")
    if args.parts:
        print_parts([(label, cwd) for label, _, cwd in runs if label != "torch"], repeat)
    for label, _, cwd in runs:
        if label != "torch":
            print(f"heavy modules after 'import pyaten' ({label}): "
                  f"{' '.join(heavy_loaded(cwd)) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
