"""The bindings of operators declared with `python_module: nn` (PyTorch's `torch._C._nn`).

`pyaten.nn._C.elu(x)` is the generated binding of `aten::elu`, as `torch._C._nn.elu` is.
The functional wrappers in `pyaten.nn.functional` call these (or `pyaten.<op>` for operators
PyTorch keeps in the torch namespace), so every call still dispatches.
"""

from __future__ import annotations

from typing import Any


def _functions() -> dict[str, Any]:
    from pyaten.native.loader import load

    return load().modules.get("nn", {})


globals().update(_functions())


def __getattr__(name: str) -> object:
    raise AttributeError(
        f"pyaten.nn._C has no operator {name!r}: declare it in native_functions.yaml with "
        "`python_module: nn`",
        name=name,
    )
