"""`pyaten.save` / `pyaten.load` in PyTorch's checkpoint format, and safetensors by its own
functions (docs/serialization.md).

- checkpoint.py: `save` writes PyTorch's zip format; `load` reads it (and hands legacy,
  tar and safetensors files on), `weights_only` by default, with `mmap` and `map_location`.
- legacy_formats.py: PyTorch's legacy pickle sequence (read and written) and tar format.
- zip_archive.py: the zip container, written streaming and read within bounds.
- pickler.py / unpickler.py: the pickle with PyTorch's names; the `weights_only` interpreter
  and its allow-list (`add_safe_globals`, `safe_globals`, `get_safe_globals`,
  `clear_safe_globals`).
- torch_names.py: PyTorch's global names and the pyaten objects behind them.
- safetensors_format.py: `save_safetensors` / `load_safetensors`.
"""

from __future__ import annotations

from pyaten.serialization.checkpoint import get_unsafe_globals_in_checkpoint, load, save
from pyaten.serialization.safetensors_format import load_safetensors, save_safetensors
from pyaten.serialization.torch_names import TypedStorage
from pyaten.serialization.unpickler import (
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)

__all__ = [
    "TypedStorage", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
    "get_unsafe_globals_in_checkpoint", "load",
    "load_safetensors", "safe_globals", "save", "save_safetensors",
]
