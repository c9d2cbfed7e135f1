"""What the benchmark scripts share: per-call timing and where PyTorch's YAML files are.

Running `python benchmarks/bench_x.py` puts this folder on sys.path, so the import works from
any working directory.
"""

from __future__ import annotations

import importlib.util
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
