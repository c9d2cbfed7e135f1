"""The generated operator bindings that `pyaten.nn` calls (`ops.empty`, `ops.linalg.qr`),
looked up on first use: pyaten.nn sits below the top-level `pyaten` package, so it cannot
import it.
"""

from __future__ import annotations

from typing import Any


class _Bindings:
    def __init__(self, module: str | None = None) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        from pyaten.native.loader import load

        loaded = load()
        table = loaded.functions if self._module is None else loaded.modules[self._module]
        fn = table[name]
        setattr(self, name, fn)
        return fn


ops = _Bindings()
ops.linalg = _Bindings("linalg")
