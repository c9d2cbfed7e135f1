"""The optional compiled accelerator: C equivalents of layers of the small-call path.

Loaded here, at the lowest layer that uses it (dispatch/tls.py's `call_below_autograd`);
`pyaten.core.accel` re-exports it for the layers above.

Note: the accelerator
    A small operator call spends most of its time in Python object work (docs/performance.md,
    "Where a call's time goes"): making the result (a `Storage`, its bytes, the `Tensor`, its
    NumPy view; ~0.9 us) and the structured fast function's checks (~0.4 us). `pyaten._accel`
    (csrc/accel.c, built at install time where a C compiler exists) does both in C:

    - `new_row_major` (core/broadcast.py) builds the row-major CPU result in one call,
      writing the Python classes' slots at the offsets their member descriptors report;
    - `fastpath.unary`/`fastpath.binary` (native/fastpath.py) return C objects doing the same
      checks, in the same order, and the same NumPy call into the same arrays, as the Python
      closures; they decline with None where those decline;
    - the recording path (Note: the accelerated recording path, in pyaten/autograd/graph.py):
      `call_below_autograd` (dispatch/tls.py) for the default thread-local sets,
      `Node.__init__`, `AccumulateGrad.__init__` and `grad_accumulator`;
    - `make_dataless` (core/tensor.py's): vmap's BatchedTensor wrapper (func/_batched.py);
      `make_batched` (func/_batched.py's `_make_batched`) and `vmap_route` (func/_key.py's
      binding route: the checks and the fast entry's call on the values, per operator's plan);
      `vmap_call` (func/_vmap.py's `_vmap_once` for in_dims of ints or None, mapped at 0).

    Each replaces its Python layer when loaded; it does not stack another layer on top. The
    Python functions stay the reference, and the fallback for every case the C code does not
    take itself (another device, complex32, an allocation error). `PYATEN_NO_ACCEL=1` (read at
    import) keeps the pure-Python path; CI runs the fast-path tests both ways, and
    tests/test_accel.py compares every accelerated function with its Python reference.
    Tracing (`pyaten.explain()`) and modes never reach either layer, as before.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["ACCEL", "DISABLED", "LOAD_ERROR", "load_extension"]

# PYATEN_NO_ACCEL=1: the pure-Python reference path, even where the extension was built
DISABLED: bool = os.environ.get("PYATEN_NO_ACCEL", "") not in ("", "0")


def load_extension(name: str, source: str, version: int) -> tuple[ModuleType | None, str | None]:
    """The optional extension `pyaten.<name>` built from `source`, when enabled, importable
    and of `version` (its VERSION constant); else None and why not (None when disabled)."""
    if DISABLED:
        return None, None
    try:  # (by name: the extension module, not the package, is what a layer loads)
        module = importlib.import_module(f"pyaten.{name}")
    except ImportError as error:  # not built (no compiler at install time): pure Python
        return None, str(error)
    built = getattr(module, "VERSION", None)
    if built != version:
        return None, (f"pyaten.{name} was built from another {source} (version {built}, "
                      f"expected {version}): rebuild it with "
                      "`pip install -e . --no-deps --no-build-isolation`")
    return module, None


VERSION = 5  # the csrc/accel.c API this module drives (its ACCEL_VERSION)
ACCEL, LOAD_ERROR = load_extension("_accel", "csrc/accel.c", VERSION)
