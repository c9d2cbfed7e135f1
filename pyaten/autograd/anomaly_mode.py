"""Anomaly detection: `detect_anomaly()` / `set_detect_anomaly(True)` make the engine check
every gradient a node returns for NaN and name the node that produced it, as PyTorch does."""

from __future__ import annotations

from typing import Any

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]

# [enabled, check_nan]
ANOMALY = [False, True]


def is_anomaly_enabled() -> bool:
    return ANOMALY[0]


def is_anomaly_check_nan_enabled() -> bool:
    return ANOMALY[1]


class set_detect_anomaly:  # noqa: N801 - PyTorch's name
    """Turn anomaly detection on or off, at once and for a `with` block."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.previous = list(ANOMALY)
        ANOMALY[:] = [mode, check_nan]

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        ANOMALY[:] = self.previous


class detect_anomaly:  # noqa: N801
    """Context manager (and decorator) enabling anomaly detection."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self) -> None:
        self.previous = list(ANOMALY)
        ANOMALY[:] = [True, self.check_nan]

    def __exit__(self, *exc: Any) -> None:
        ANOMALY[:] = self.previous

    def __call__(self, fn: Any) -> Any:
        import functools

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


def check_outputs(node: Any, outputs: Any) -> None:
    """Raise PyTorch's error for the first gradient of `node` that holds a NaN."""
    for i, g in enumerate(outputs):
        if g is not None and (g.dtype.is_floating_point or g.dtype.is_complex):
            if bool(g.isnan().any()):
                raise RuntimeError(
                    f"Function '{node.name()}' returned nan values in its {i}th output."
                )
