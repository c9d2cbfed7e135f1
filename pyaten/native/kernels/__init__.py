"""Kernel families: importing this package registers every `@native` kernel.

One module per operator family. A family module that does not exist (yet) is skipped, so the
package imports while families land one by one; any other import error propagates.
"""

from __future__ import annotations

import importlib

# The family modules, imported in this order: elementwise (arithmetic, unary, comparison,
# where, bitwise), then views, copies, factories, reductions, linear algebra, concatenation,
# indexing and the rest.
FAMILIES: tuple[str, ...] = (
    "binary",
    "unary",
    "clamp",
    "compare",
    "where",
    "bitwise",
    "ternary",
    "shape",
    "copy",
    "factory",
    "reduce",
    "linalg",
    "cat",
    "index",
    "scan",
    "order",
    "special",
    "complex",
    "fft",
    "autograd_ops",
)

LOADED: list[str] = []


def _load_families() -> None:
    for family in FAMILIES:
        module_name = f"{__name__}.{family}"
        try:
            importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise
            continue
        LOADED.append(family)


_load_families()
