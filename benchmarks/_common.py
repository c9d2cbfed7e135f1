"""What the benchmark scripts share: timing helpers and where PyTorch's YAML files are.

Running `python benchmarks/bench_x.py` puts this folder on sys.path, so the import works from
any working directory.
"""

from __future__ import annotations

import gc
import importlib.util
import math
import time
import timeit
from collections.abc import Callable
from pathlib import Path

# torchgen ships PyTorch's own YAML files; found without importing torchgen.
_TORCHGEN = importlib.util.find_spec("torchgen")
TORCHGEN_PACKAGED = Path(_TORCHGEN.origin).parent / "packaged" if _TORCHGEN else Path("-")
TORCH_NATIVE_YAML = TORCHGEN_PACKAGED / "ATen" / "native" / "native_functions.yaml"
TORCH_TAGS_YAML = TORCHGEN_PACKAGED / "ATen" / "native" / "tags.yaml"
TORCH_DERIVATIVES_YAML = TORCHGEN_PACKAGED / "autograd" / "derivatives.yaml"


def per_call_us(
    fn: Callable[[], object],
    number: int,
    repeat: int = 5,
    timer: Callable[[], float] = timeit.default_timer,
) -> float:
    """Microseconds per call: the best of `repeat` runs of `number` calls, after a warm-up call
    (which fills caches such as dispatch tables and parsed signatures)."""
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat, timer=timer)) / number * 1e6


def best_times(
    repeat: int, fns: list[Callable[[], object]], *, pause_gc: bool = False
) -> tuple[list[float], list[object]]:
    """The best wall time of each function over `repeat` passes, and each one's last result.

    Passes are interleaved so that machine load hits every function alike. With `pause_gc`
    the collector runs before each timing and is off during it, as `timeit` does.
    """
    best = [float("inf")] * len(fns)
    results: list[object] = [None] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            if pause_gc:
                gc.collect()
                gc.disable()
            try:
                start = time.perf_counter()
                results[i] = fn()
                best[i] = min(best[i], time.perf_counter() - start)
            finally:
                if pause_gc:
                    gc.enable()
    return best, results


def per_call_cpu_us(fn: Callable[[], object], number: int, repeat: int) -> float:
    """`per_call_us` in CPU time of this process: the machine is shared, and wall time would
    count other jobs."""
    return per_call_us(fn, number, repeat, timer=time.process_time)


def goal_met(ours: float, torch_time: float, numpy_time: float) -> str | None:
    """Which goal a pyaten time meets: "torch" (within 1.5x of PyTorch's), else "numpy"
    (within 10% of NumPy's), else None."""
    if ours / torch_time <= 1.5:
        return "torch"
    if ours / numpy_time <= 1.1:
        return "numpy"
    return None


def against_torch_and_numpy(
    repeat: int,
    ours: Callable[[], object],
    theirs: Callable[[], object],
    numpy_fns: list[Callable[[], object]],
    *,
    pause_gc: bool = False,
) -> tuple[float, float, float, str | None]:
    """One table row's figures: the best milliseconds of pyaten, of PyTorch and of the fastest
    NumPy/SciPy expression (timed interleaved by `best_times`), and the goal met."""
    times, _ = best_times(repeat, [ours, theirs, *numpy_fns], pause_gc=pause_gc)
    ours_ms, torch_ms, numpy_ms = times[0] * 1e3, times[1] * 1e3, min(times[2:]) * 1e3
    return ours_ms, torch_ms, numpy_ms, goal_met(ours_ms, torch_ms, numpy_ms)


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))
