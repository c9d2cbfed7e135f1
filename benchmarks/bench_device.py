"""Plug-in device overhead: openreg's small ops against the same ops on the CPU.

For each 4x4 float32 operation this prints the per-call time on the CPU, on openreg (its own
kernels: a structured wrapper, the DispatchStub loop, the buffer pool), their ratio (goal:
<= 1.2x), and, for operators openreg leaves to the CPU fallback, the cost of that fallback
(copy in, CPU kernel, copy out) against the CPU call. PyTorch's CPU figure is printed beside
ours for scale.

Where the time goes (4x4 add, about 8.5 us against 3.1 us): pyaten's CPU call takes the
structured fast path (pyaten/native/fastpath.py), which only serves CPU tensors, so openreg's
call runs the full structured wrapper (about 5 us); openreg's own loop costs about 3.5 us of
it (three NumPy views of pool buffers at about 0.4 us each, the allocation and release of the
output block, the floating-point-quiet context). Reaching the 1.2x goal needs the fast path to
serve plug-in devices too.

Run: .venv/bin/python benchmarks/bench_device.py   (extensions/openreg is put on sys.path)
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from _common import per_call_us

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "extensions" / "openreg"))

import pyaten_openreg  # noqa: E402, F401 - registers the device
import torch  # noqa: E402

import pyaten  # noqa: E402
import pyaten.backends as backends  # noqa: E402

N = 3000
SHAPE = (4, 4)

# (label, pyaten call, torch call); `a`, `b` are the operands, on the device under test.
NATIVE = (
    ("add", lambda a, b: a + b, lambda a, b: a + b),
    ("mul", lambda a, b: a * b, lambda a, b: a * b),
    ("exp", lambda a, b: a.exp(), lambda a, b: a.exp()),
    ("relu", lambda a, b: a.relu(), lambda a, b: a.relu()),
    ("sum(dim)", lambda a, b: a.sum(1), lambda a, b: a.sum(1)),
    ("mm", lambda a, b: a.mm(b), lambda a, b: a.mm(b)),
    ("view", lambda a, b: a.view(16), lambda a, b: a.view(16)),
)
FALLBACK = (
    ("cumsum", lambda a, b: a.cumsum(1), lambda a, b: a.cumsum(1)),
    ("sort", lambda a, b: a.sort(1), lambda a, b: a.sort(1)),
    ("flip", lambda a, b: a.flip(0), lambda a, b: a.flip(0)),
)


def _time(fn, a, b) -> float:
    return per_call_us(lambda: fn(a, b), N)


def main() -> None:
    warnings.simplefilter("ignore")
    a_cpu, b_cpu = pyaten.randn(*SHAPE), pyaten.randn(*SHAPE)
    a_dev, b_dev = a_cpu.to("openreg"), b_cpu.to("openreg")
    x, y = torch.randn(*SHAPE), torch.randn(*SHAPE)
    torch.set_num_threads(1)
    header = (f"{'op (4x4 float32)':<18}{'torch cpu':>10}{'pyaten cpu':>12}{'openreg':>10}"
              f"{'ratio':>8}")
    print(header)
    print("-" * len(header))
    ratios = []
    for label, ours, theirs in NATIVE:
        t_torch = _time(theirs, x, y)
        t_cpu = _time(ours, a_cpu, b_cpu)
        t_dev = _time(ours, a_dev, b_dev)
        ratios.append(t_dev / t_cpu)
        print(f"{label:<18}{t_torch:>8.2f}us{t_cpu:>10.2f}us{t_dev:>8.2f}us{t_dev / t_cpu:>7.2f}x")
    print()
    print(f"{'CPU fallback':<18}{'torch cpu':>10}{'pyaten cpu':>12}{'fallback':>10}{'ratio':>8}")
    print("-" * len(header))
    report = backends.fallback_report("openreg")
    report.reset()
    for label, ours, theirs in FALLBACK:
        t_torch = _time(theirs, x, y)
        t_cpu = _time(ours, a_cpu, b_cpu)
        t_dev = _time(ours, a_dev, b_dev)
        print(f"{label:<18}{t_torch:>8.2f}us{t_cpu:>10.2f}us{t_dev:>8.2f}us{t_dev / t_cpu:>7.2f}x")
    calls = backends.fallback_report("openreg").total
    print()
    worst = max(ratios)
    print(f"openreg native ops: worst ratio {worst:.2f}x against pyaten's CPU "
          f"({'meets' if worst <= 1.2 else 'misses'} the 1.2x goal); "
          f"{calls} fallback calls counted while timing the fallback rows")


if __name__ == "__main__":
    main()
