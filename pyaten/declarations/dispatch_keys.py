"""Dispatch-key names that a `dispatch:` section of native_functions.yaml may use.

Note: where the list comes from. PyTorch names per-backend keys as functionality + backend
component: the components are CPU, CUDA, HIP, XLA, MTIA, MPS, IPU, XPU, HPU, VE, Lazy, Meta
and PrivateUse1..3; the per-backend functionalities are dense (no prefix), Quantized, Sparse,
SparseCsr and NestedTensor (Autograd is per-backend too, but autograd kernels come from
derivatives.yaml, never from a `dispatch:` section). On top of those a kernel may be
registered to the alias keys (CompositeImplicitAutograd and friends) and to the two
standalone backend keys MkldnnCPU and ZeroTensor. This module is below `pyaten.dispatch` in
the layering, so it keeps its own copy of these names rather than importing the dispatcher's.
"""

from __future__ import annotations

import difflib

__all__ = [
    "BACKEND_COMPONENTS",
    "PER_BACKEND_FUNCTIONALITIES",
    "ALIAS_KEYS",
    "CODEGEN_DISPATCH_KEYS",
    "DISPATCH_KEYS",
    "RUNTIME_ONLY_KEYS",
    "STRUCTURED_DISPATCH_KEYS",
    "split_dispatch_keys",
    "suggest_dispatch_key",
]

BACKEND_COMPONENTS: tuple[str, ...] = (
    "CPU",
    "CUDA",
    "HIP",
    "XLA",
    "MTIA",
    "MPS",
    "IPU",
    "XPU",
    "HPU",
    "VE",
    "Lazy",
    "Meta",
    "PrivateUse1",
    "PrivateUse2",
    "PrivateUse3",
)

# functionality prefixes that combine with every backend component ("" is dense: CPU, CUDA...)
PER_BACKEND_FUNCTIONALITIES: tuple[str, ...] = (
    "",
    "Quantized",
    "Sparse",
    "SparseCsr",
    "NestedTensor",
)

ALIAS_KEYS: tuple[str, ...] = (
    "CompositeImplicitAutograd",
    "CompositeImplicitAutogradNestedTensor",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
)

_STANDALONE_BACKENDS: tuple[str, ...] = ("MkldnnCPU", "ZeroTensor")

DISPATCH_KEYS: frozenset[str] = frozenset(
    [f + b for f in PER_BACKEND_FUNCTIONALITIES for b in BACKEND_COMPONENTS]
    + list(ALIAS_KEYS)
    + list(_STANDALONE_BACKENDS)
)

# Real dispatch keys that exist at run time but cannot hold a kernel named in native YAML.
RUNTIME_ONLY_KEYS: frozenset[str] = frozenset(
    ["Autograd" + b for b in BACKEND_COMPONENTS]
    + [
        "Autograd",
        "AutogradOther",
        "AutogradNestedTensor",
        "AutogradFunctionality",
        "ADInplaceOrView",
        "BackendSelect",
        "Python",
        "PythonTLSSnapshot",
        "PythonDispatcher",
        "PreDispatch",
        "Functionalize",
        "Named",
        "Conjugate",
        "Negative",
        "Tracer",
        "Autocast",
        "AutocastCPU",
        "AutocastCUDA",
        "AutocastXPU",
        "Batched",
        "VmapMode",
        "FuncTorchBatched",
        "FuncTorchVmapMode",
        "FuncTorchGradWrapper",
        "FuncTorchDynamicLayerBackMode",
        "FuncTorchDynamicLayerFrontMode",
        "FuncTorchBatchedDecomposition",
        "BatchedNestedTensor",
        "Undefined",
        "CatchAll",
        "Dense",
        "Sparse",
        "SparseCsr",
        "Quantized",
        "NestedTensor",
        "MKLDNN",
    ]
)

# The keys torchgen generates registrations for from native_functions.yaml (its
# `dispatch_keys`): any other key, valid at run time (`SparsePrivateUse1`, `QuantizedXPU`,
# `XLA`), makes it stop with "Dispatch key ... is not a supported dispatch key". pyaten's reader
# accepts every key above; `pyaten lint` warns about the rest (`key-not-generated`).
CODEGEN_DISPATCH_KEYS: frozenset[str] = frozenset(
    ["CPU", "CUDA", "MPS", "XPU", "MTIA", "Meta", "MkldnnCPU", "ZeroTensor",
     "SparseCPU", "SparseCUDA", "SparseMPS", "SparseXPU", "SparseMeta",
     "SparseCsrCPU", "SparseCsrCUDA", "SparseCsrMPS", "SparseCsrXPU", "SparseCsrMeta",
     "QuantizedCPU", "QuantizedCUDA", "QuantizedMeta",
     "NestedTensorCPU", "NestedTensorCUDA", "NestedTensorXPU", "NestedTensorHPU",
     "NestedTensorMeta", *ALIAS_KEYS]
)  # fmt: skip

# Backends whose kernels for a `structured: True` function come from the structured out op.
STRUCTURED_DISPATCH_KEYS: frozenset[str] = frozenset({"CPU", "CUDA", "MPS", "XPU", "MTIA"})


def split_dispatch_keys(text: str) -> list[str]:
    """`"CPU, CUDA"` -> `["CPU", "CUDA"]`: one name per comma-separated part, stripped."""
    return [part.strip() for part in text.split(",")]


_BY_LOWER: dict[str, str] = {k.lower(): k for k in DISPATCH_KEYS}


def suggest_dispatch_key(name: str) -> str | None:
    """The closest valid key name to a misspelt one, or None when nothing is close.

    Case is ignored first (`Cuda` -> `CUDA`), so case slips never lose to a near neighbour.
    """
    lowered = name.lower()
    if lowered in _BY_LOWER:
        return _BY_LOWER[lowered]
    matches = difflib.get_close_matches(lowered, sorted(_BY_LOWER), n=1, cutoff=0.6)
    return _BY_LOWER[matches[0]] if matches else None
