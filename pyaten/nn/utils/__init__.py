"""`nn.utils`: gradient clipping, parameters as one vector, `rnn.pad_sequence`,
parametrizations (`parametrize`, `parametrizations`), the older `weight_norm` and
`spectral_norm` hooks, and `prune` (docs/parametrizations.md). The last ones load on first
use."""

import importlib

from pyaten.nn.utils import rnn
from pyaten.nn.utils.clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_
from pyaten.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

# public name -> the submodule defining it (loaded on first use)
_LAZY = {
    "weight_norm": "pyaten.nn.utils.weight_norm",
    "remove_weight_norm": "pyaten.nn.utils.weight_norm",
    "spectral_norm": "pyaten.nn.utils.spectral_norm",
    "remove_spectral_norm": "pyaten.nn.utils.spectral_norm",
}
_SUBMODULES = ("parametrizations", "parametrize", "prune")

__all__ = [
    "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "rnn",
    "vector_to_parameters", *_LAZY, *_SUBMODULES,
]


def __getattr__(name: str) -> object:
    if name in _SUBMODULES:
        return importlib.import_module(f"pyaten.nn.utils.{name}")
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pyaten.nn.utils' has no attribute '{name}'", name=name)
