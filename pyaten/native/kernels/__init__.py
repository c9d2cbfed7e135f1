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
    "view_ops",
    "rearrange",
    "copy",
    "factory",
    "random",
    "random_factory",
    "random_gamma",
    "random_gamma_grad",
    "convert",
    "sparse",
    "sparse_ops",
    "reduce",
    "linalg",
    "blas",
    "contract",
    "linalg_ops",
    "linalg_norms",
    "linalg_decomp",
    "linalg_functions",
    "cat",
    "index",
    "gather",
    "masked",
    "sorting",
    "counting",
    "histogramdd",
    "scan",
    "order",
    "reduce_backward",
    "special",
    "pointwise_backward",
    "complex",
    "fft",
    "autograd_ops",
    "loss",
    "normalization",
    "embedding",
    "attention",
    "padding",
    "upsample",
    "grid_sample",
    "activation",
    "conv",
    "pool",
    "pool_more",
    "stft",
    "amp",
    "more_ops",
    "functionalize_ops",
    "nested",
    "quantized",
    "symbolic_sizes",
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
