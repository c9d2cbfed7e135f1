"""openreg's runtime functions: what `pyaten.openreg` offers, as `torch.cuda` does.

Two devices (indices 0 and 1) are always available; the current device is per thread.
`synchronize` has nothing to wait for: openreg's kernels finish before they return.
"""

from __future__ import annotations

import threading
from typing import Any

from pyaten_openreg import memory

__all__ = ["Runtime"]


class Runtime:
    """The object `register_device(runtime=...)` builds the module `pyaten.openreg` from."""

    def __init__(self) -> None:
        self._state = threading.local()

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return memory.DEVICE_COUNT

    def current_device(self) -> int:
        return getattr(self._state, "index", 0)

    def set_device(self, device: Any) -> None:
        self._state.index = memory.pool(device).index

    def synchronize(self, device: Any = None) -> None:
        memory.pool(device if device is not None else self.current_device())

    def manual_seed(self, seed: int) -> None:
        # openreg has no generator of its own: random operators run through the CPU fallback,
        # which draws from pyaten's default (CPU) generator.
        import pyaten

        pyaten.manual_seed(seed)
