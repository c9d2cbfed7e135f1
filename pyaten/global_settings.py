"""Process-wide settings PyTorch programs call: threads, float32 matmul precision,
deterministic algorithms (docs/cuda-and-compat.md).

    pyaten.set_num_threads(1)                      # BLAS (and Numba's loops) use one thread
    pyaten.set_float32_matmul_precision("high")    # = backends.cuda.matmul.allow_tf32 = True
    pyaten.use_deterministic_algorithms(True)

Note: what the thread count controls
    PyTorch's intra-op pool runs its kernels; pyaten's kernels are NumPy calls, whose only
    threads are the BLAS library's (matrix products, linalg) and, when Numba is imported,
    the compiled loops' pool. `set_num_threads` limits both through threadpoolctl and
    `numba.set_num_threads`; the count it was given is what `get_num_threads` answers, as in
    PyTorch. pyaten has no inter-op pool: the interop count is kept and answered, and, as in
    PyTorch, can be set once.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = [
    "are_deterministic_algorithms_enabled", "get_deterministic_debug_mode",
    "get_float32_matmul_precision", "get_num_interop_threads", "get_num_threads",
    "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
    "set_float32_matmul_precision", "set_num_interop_threads", "set_num_threads",
    "use_deterministic_algorithms",
]


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


_THREADS = {"intra": _cpu_count(), "interop": _cpu_count(), "interop_set": False}


def _positive_int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise RuntimeError(f"{what} expects an int, but got {type(value).__name__}")
    if value <= 0:
        raise RuntimeError(f"{what} expects a positive integer")
    return value


def set_num_threads(num: int) -> None:
    """Use `num` threads in BLAS calls and Numba's compiled loops (see the Note)."""
    num = _positive_int(num, "set_num_threads")
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # an installation without it: the count is still kept
        pass
    else:  # a fresh controller each time: it sees the libraries loaded since (SciPy's BLAS)
        ThreadpoolController().limit(limits=num)
    numba = sys.modules.get("numba")
    if numba is not None:
        numba.set_num_threads(min(num, numba.config.NUMBA_NUM_THREADS))
    _THREADS["intra"] = num


def get_num_threads() -> int:
    """The thread count of `set_num_threads` (at start: the CPUs this process may use)."""
    return _THREADS["intra"]


def set_num_interop_threads(num: int) -> None:
    """Set the inter-op thread count, once, as PyTorch allows (pyaten has no such pool)."""
    num = _positive_int(num, "set_num_interop_threads")
    if _THREADS["interop_set"]:
        raise RuntimeError(
            "Error: cannot set number of interop threads after parallel work has started or "
            "set_num_interop_threads called"
        )
    _THREADS["interop"] = num
    _THREADS["interop_set"] = True


def get_num_interop_threads() -> int:
    """The inter-op thread count."""
    return _THREADS["interop"]


# -- float32 matmul precision: one setting with backends.cuda.matmul.allow_tf32 -------------

def set_float32_matmul_precision(precision: str) -> None:
    """"highest", "high" or "medium"; another string warns and changes nothing (PyTorch)."""
    from pyaten.backends.cuda import PRECISIONS, matmul

    if not isinstance(precision, str):
        raise RuntimeError(
            f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}"
        )
    if precision not in PRECISIONS:
        import warnings

        warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
            "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2
        )
        return
    matmul.set_precision(precision)


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision: "highest" unless set."""
    from pyaten.backends.cuda import matmul

    return matmul._precision


# -- deterministic algorithms ----------------------------------------------------------------

_DETERMINISTIC = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms (every pyaten kernel is: NumPy on one thread's data);
    the setting is kept and answered, as PyTorch's."""
    for name, value in (("mode", mode), ("warn_only", warn_only)):
        if not isinstance(value, bool):
            where = " (position 1)" if name == "mode" else ""
            raise TypeError(
                f"_set_deterministic_algorithms(): argument '{name}'{where} must be bool, "
                f"not {type(value).__name__}"
            )
    _DETERMINISTIC["mode"] = mode
    _DETERMINISTIC["warn_only"] = warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """Whether `use_deterministic_algorithms(True)` is in force."""
    return _DETERMINISTIC["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether it was set with `warn_only=True`."""
    return _DETERMINISTIC["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """"default"/0, "warn"/1 or "error"/2: the same setting as use_deterministic_algorithms."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                f"but got {debug_mode}"
            )
        debug_mode = _DEBUG_MODES[debug_mode]
    if not isinstance(debug_mode, int) or isinstance(debug_mode, bool) \
            or debug_mode not in (0, 1, 2):
        raise RuntimeError(
            f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}"
        )
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0 (off), 1 (warn only) or 2 (on)."""
    if not _DETERMINISTIC["mode"]:
        return 0
    return 1 if _DETERMINISTIC["warn_only"] else 2
