"""Per-call timing shared by the benchmark scripts (`from _timing import per_call_us`).

Running `python benchmarks/bench_x.py` puts this folder on sys.path, so the import works from
any working directory.
"""

from __future__ import annotations

import timeit
from collections.abc import Callable


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
