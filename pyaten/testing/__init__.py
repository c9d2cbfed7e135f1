"""`pyaten.testing`: tools for checking pyaten and the devices plugged into it.

`assert_close(actual, expected)` is PyTorch's `torch.testing.assert_close`, with its messages
(pyaten/testing/comparison.py).

`run_backend_conformance(device, ops=None)` runs operators' sample inputs on a plug-in device
and on the CPU and reports, per operator, whether it ran natively, through the fallback, or
failed (pyaten/testing/conformance.py; the pytest plugin is pyaten/testing/pytest_plugin.py).
"""

from __future__ import annotations

from typing import Any

from pyaten.testing.comparison import assert_close

__all__ = ["ConformanceReport", "assert_close", "run_backend_conformance"]


def run_backend_conformance(device: str, ops: Any = None) -> Any:
    """See `pyaten.testing.conformance.run_backend_conformance` (imported on first use)."""
    from pyaten.testing.conformance import run_backend_conformance as run

    return run(device, ops)


def __getattr__(name: str) -> Any:
    # ConformanceReport and the rest of the kit load on first use (the kit imports operators).
    if name == "ConformanceReport":
        from pyaten.testing.conformance import ConformanceReport

        return ConformanceReport
    raise AttributeError(f"module 'pyaten.testing' has no attribute {name!r}")
