"""`pyaten.special`: the functions of PyTorch's `torch.special`.

Their operators are declared in `native_functions.yaml` as `special_<name>` with
`python_module: special` (PyTorch's names, so `pyaten.ops.aten.special_entr` and the
argument errors say `special_entr()`); the loader puts their bindings here under the public
name, without the prefix: `pyaten.special.entr`. Many are `CompositeImplicitAutograd` aliases
of top-level operators (`expit` -> `sigmoid`, `psi` -> `digamma`), as in PyTorch. See
docs/special.md.
"""

from __future__ import annotations

from typing import Any


def _functions() -> dict[str, Any]:
    from pyaten.native.loader import load

    return load().modules.get("special", {})


globals().update(_functions())

__all__ = sorted(_functions())  # noqa: PLE0605 - built from the generated bindings


def __getattr__(name: str) -> object:
    """Reached only when `pyaten.special.<name>` is not found: a torch.special name pyaten
    lacks says so (docs/coverage.md)."""
    from pyaten.utils.torch_api import not_implemented, public_names

    if name in public_names("torch.special"):
        raise not_implemented(f"torch.special.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
