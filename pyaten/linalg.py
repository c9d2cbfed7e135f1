"""`pyaten.linalg`: the functions of PyTorch's `torch.linalg`.

Their operators are declared in `native_functions.yaml` as `linalg_<name>` with
`python_module: linalg` (PyTorch's names, so `pyaten.ops.aten.linalg_inv` and the argument
errors say `linalg_inv()`); the loader puts their bindings here under the public name, without
the prefix: `pyaten.linalg.inv`. Kernels: pyaten/native/kernels/linalg_ops.py (norms, inverse,
solve, determinants, products) and linalg_decomp.py (the LAPACK factorizations). See
docs/linalg.md.
"""

from __future__ import annotations

from typing import Any

# A failed factorization or solve: a RuntimeError, as torch.linalg.LinAlgError.
from pyaten.native.kernels.linalg_ops import LinAlgError  # noqa: F401 - re-exported


def _functions() -> dict[str, Any]:
    from pyaten.native.loader import load

    return load().modules.get("linalg", {})


globals().update(_functions())

__all__ = sorted([*_functions(), "LinAlgError"])  # noqa: PLE0605 - from the bindings


def __getattr__(name: str) -> object:
    """Reached only when `pyaten.linalg.<name>` is not found: a torch.linalg name pyaten lacks
    says so (docs/coverage.md)."""
    from pyaten.utils.torch_api import not_implemented, public_names

    if name in public_names("torch.linalg"):
        raise not_implemented(f"torch.linalg.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
