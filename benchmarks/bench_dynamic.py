"""pyaten.compile with dynamic shapes beside static captures and eager (one thread).

Run: .venv/bin/python benchmarks/bench_dynamic.py [--quick]

A stream of calls whose batch size changes (6 sizes, as a loader with ragged batches gives),
for a chain of 10 pointwise operators on (B, 4096) float32 and the MLP 784-256-10 forward:
- cold: the first pass over the 6 sizes in a fresh compiled function, in ms, and how many
  captures it made: `dynamic=False` captures each size, `dynamic=True` once (the pyaten
  backend then builds a runner per size from the one graph);
- warm: a pass over the 6 sizes once every size has been seen, best CPU time of this
  process over interleaved repeats (the machine is shared), beside pyaten eager and
  PyTorch eager.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from functools import partial

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SIZES = (16, 24, 32, 40, 48, 56)


def chain(x):  # noqa: ANN001, ANN201 - the same program for both libraries
    y = x * 1.5 + 0.25
    y = y.relu() * x - 0.5
    y = -y * 0.75 / 1.25
    return y.maximum(x) + x


def _programs(lib):  # noqa: ANN001, ANN202
    lib.manual_seed(0)
    nn = lib.nn
    mlp = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    return {"10-op chain (B, 4096)": (chain, 4096), "MLP 784-256-10 forward": (mlp, 784)}


def _pass(fn, inputs) -> None:  # noqa: ANN001
    for x in inputs:
        fn(x)


def main() -> None:
    import torch

    import pyaten

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    repeat = 5 if parser.parse_args().quick else 20
    torch.set_num_threads(1)
    pyaten.set_num_threads(1)
    print(f"batch sizes {SIZES}; cold = first pass (captures included), warm = best pass")
    print(f"{'case':<26}{'static cold':>13}{'dynamic cold':>14}{'static warm':>13}"
          f"{'dynamic warm':>14}{'pyaten eager':>14}{'torch eager':>13}")
    ours, theirs = _programs(pyaten), _programs(torch)
    with pyaten.no_grad(), torch.no_grad():
        for name, (fn, width) in ours.items():
            inputs = [pyaten.randn(b, width) for b in SIZES]
            torch_inputs = [torch.from_numpy(x.numpy()) for x in inputs]
            compiled = {}
            cold = {}
            for dynamic in (False, True):
                f = pyaten.compile(fn, dynamic=dynamic)
                start = time.perf_counter()
                _pass(f, inputs)
                cold[dynamic] = (time.perf_counter() - start) * 1e3
                compiled[dynamic] = f
            report = {d: (f._compiled if hasattr(f, "_compiled") else f).report
                      for d, f in compiled.items()}
            fns = [partial(_pass, compiled[False], inputs), partial(_pass, compiled[True], inputs),
                   partial(_pass, fn, inputs), partial(_pass, theirs[name][0], torch_inputs)]
            best = [float("inf")] * len(fns)
            for _ in range(repeat):
                for i, run in enumerate(fns):
                    start = time.process_time()
                    run()
                    best[i] = min(best[i], time.process_time() - start)
            ms = [b * 1e3 for b in best]
            static_cold = f"{cold[False]:.0f} ({report[False].captures}c)"
            dynamic_cold = f"{cold[True]:.0f} ({report[True].captures}c)"
            print(f"{name:<26}{static_cold:>13}{dynamic_cold:>14}{ms[0]:>13.2f}{ms[1]:>14.2f}"
                  f"{ms[2]:>14.2f}{ms[3]:>13.2f}")
    print("ms; (Nc): captures made")


if __name__ == "__main__":
    main()
