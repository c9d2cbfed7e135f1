"""Deferred imports: a module's functions named at import, the module imported on first call.

`import pyaten` must stay quick, and SciPy's `special` and `fft` cost about 0.2 s to import,
which a program that never calls `pyaten.special.erf` or `pyaten.fft.fft` should not pay.
Family rows and kernels name `sc.erf` as usual, with `sc = LazyModule("scipy.special")`.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["LazyModule"]


class LazyModule:
    """Stands for a module: `lazy.name` is a callable that imports the module when called."""

    __slots__ = ("_module_name", "_module")

    def __init__(self, module_name: str) -> None:
        self._module_name = module_name
        self._module: ModuleType | None = None

    def load(self) -> ModuleType:
        if self._module is None:
            self._module = importlib.import_module(self._module_name)
        return self._module

    def __getattr__(self, name: str) -> LazyFunction:
        if name.startswith("__"):
            raise AttributeError(name)
        return LazyFunction(self, name)

    def __repr__(self) -> str:
        return f"<lazy module {self._module_name}>"


class LazyFunction:
    """`module.name`, looked up on the first call and called directly after that."""

    __slots__ = ("_owner", "_name", "_fn")

    def __init__(self, owner: LazyModule, name: str) -> None:
        self._owner = owner
        self._name = name
        self._fn: Any = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fn = self._fn
        if fn is None:
            fn = self._fn = getattr(self._owner.load(), self._name)
        return fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<lazy {self._owner._module_name}.{self._name}>"
