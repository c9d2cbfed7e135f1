"""Helpers several test files share: PyTorch's own YAML files and the dtype names.

Imported as `from _helpers import ...` (pytest puts `tests/` on sys.path).
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

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
