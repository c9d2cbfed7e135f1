"""Helpers several test files share: PyTorch's own YAML files, the dtype names, and the
stand-ins for tensors and kernels that dispatcher tests call.

Imported as `from _helpers import ...` (pytest puts `tests/` on sys.path).
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

from pyaten.dispatch.keys import backend_keyset_bits

# torchgen ships PyTorch's YAML files; found without importing torchgen (its import is slow).
_TORCHGEN = importlib.util.find_spec("torchgen")
TORCHGEN_PACKAGED = (
    Path(_TORCHGEN.origin).parent / "packaged" if _TORCHGEN else Path("torchgen-is-missing")
)
TORCH_NATIVE_YAML = TORCHGEN_PACKAGED / "ATen" / "native" / "native_functions.yaml"
TORCH_TAGS_YAML = TORCHGEN_PACKAGED / "ATen" / "native" / "tags.yaml"
TORCH_DERIVATIVES_YAML = TORCHGEN_PACKAGED / "autograd" / "derivatives.yaml"


@functools.cache
def torch_schemas() -> tuple[str, ...]:
    """Every `func:` schema string of PyTorch's native_functions.yaml, in file order."""
    return tuple(re.findall(r"^- func: (.*)$", TORCH_NATIVE_YAML.read_text(), re.MULTILINE))


# The twelve dtypes, by name (as in both `pyaten` and `torch`).
DTYPE_NAMES = (
    "bool", "uint8", "int8", "int16", "int32", "int64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
)
FLOAT_NAMES = ("float16", "bfloat16", "float32", "float64")
REAL_NAMES = DTYPE_NAMES[:10]


class FakeTensor:
    """The dispatcher only reads `_keyset`; this stands in for pyaten.core's Tensor."""

    __slots__ = ("_keyset", "device")

    def __init__(self, device: str = "cpu") -> None:
        self._keyset = backend_keyset_bits(device)
        self.device = device


def noop_kernel(*args, **kwargs) -> None:
    """A kernel that does nothing: for tests about where calls go, not what they compute."""
    return None


def dtype_name(d: object) -> str:
    """A torch or pyaten dtype's bare name: `torch.float32` and `pyaten.float32` -> "float32"."""
    return str(d).rpartition(".")[2]
