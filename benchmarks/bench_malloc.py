"""What glibc allocator tuning (`PYATEN_MALLOC_TUNING=1`, Note: freed memory kept in
pyaten/core/memory.py) gains on large pointwise work, beside PyTorch (one thread).

Run: .venv/bin/python benchmarks/bench_malloc.py [--quick]

mallopt settings are per process, so each configuration runs in its own child process:
pyaten with glibc's defaults (the default since issue 35), pyaten with the tuning, and
PyTorch. Each child times a few large calls whose temporaries are freed and made again
(relu's backward, gelu's backward, an add), best of `repeat` runs, and reports its peak
resident memory, the price of keeping freed buffers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
name, n, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if name == "torch":
    import torch as lib
    lib.set_num_threads(1)
else:
    import pyaten as lib
    from pyaten.core.memory import malloc_tuned
x = lib.randn(n)
y = lib.randn(n)
xg = lib.randn(n, requires_grad=True)

def relu_backward():
    lib.relu(xg).sum().backward()

def gelu_backward():
    lib.nn.functional.gelu(xg).sum().backward()

def add():
    return x + y

cases = {"relu forward+backward": relu_backward, "gelu forward+backward": gelu_backward,
         "add": add}
result = {}
for label, fn in cases.items():
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    result[label] = best * 1e3
result["peak RSS MiB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
result["tuned"] = malloc_tuned() if name != "torch" else None
print(json.dumps(result))
"""


def _run(name: str, tuning: str, n: int, repeat: int) -> dict:
    env = dict(os.environ, PYATEN_MALLOC_TUNING=tuning, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", CHILD, name, str(n), str(repeat)], env=env,
                         capture_output=True, text=True, check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2M elements, 3 runs")
    args = parser.parse_args()
    n, repeat = (2 * 1024 * 1024, 3) if args.quick else (8 * 1024 * 1024, 7)
    rows = {
        "pyaten (glibc defaults)": _run("pyaten", "0", n, repeat),
        "pyaten (PYATEN_MALLOC_TUNING=1)": _run("pyaten", "1", n, repeat),
        "torch": _run("torch", "0", n, repeat),
    }
    labels = [k for k in next(iter(rows.values())) if k != "tuned"]
    print(f"{n:,} float32 elements, best of {repeat} (ms; peak RSS in MiB)")
    print(f"{'':34s}" + "".join(f"{label:>24s}" for label in labels))
    for name, values in rows.items():
        print(f"{name:34s}" + "".join(f"{values[label]:24.1f}" for label in labels))


if __name__ == "__main__":
    main()
