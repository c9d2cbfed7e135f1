"""What the benchmark scripts share: timing helpers and where PyTorch's YAML files are.

Running `python benchmarks/bench_x.py` puts this folder on sys.path, so the import works from
any working directory.
"""

from __future__ import annotations

import gc
import importlib.util
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
