"""`pyaten.fft`: the functions of PyTorch's `torch.fft`.

Their operators are declared in `native_functions.yaml` as `fft_<name>` with
`python_module: fft` (PyTorch's names, so `pyaten.ops.aten.fft_rfft` and the argument errors
say `fft_rfft()`); the loader puts their bindings here under the public name, without the
prefix: `pyaten.fft.rfft`. They are `CompositeImplicitAutograd` over `_fft_r2c`, `_fft_c2r`
and `_fft_c2c` (pyaten/native/kernels/fft.py), as in PyTorch. See docs/fft.md.
"""

from __future__ import annotations

from typing import Any


def _functions() -> dict[str, Any]:
    from pyaten.native.loader import load

    return load().modules.get("fft", {})


globals().update(_functions())

__all__ = sorted(_functions())  # noqa: PLE0605 - built from the generated bindings


def __getattr__(name: str) -> object:
    """Reached only when `pyaten.fft.<name>` is not found: a torch.fft name pyaten lacks says
    so (docs/coverage.md)."""
    from pyaten.utils.torch_api import not_implemented, public_names

    if name in public_names("torch.fft"):
        raise not_implemented(f"torch.fft.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
