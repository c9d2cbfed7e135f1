"""Grad mode: whether operators record a graph, per thread.

`no_grad`, `enable_grad`, `set_grad_enabled` and `inference_mode` work as context managers
and as decorators, as PyTorch's do. The flag lives on a `threading.local` whose class
attribute is the default, so the autograd kernels read it with one attribute load.
`inference_mode` also excludes the autograd keys from dispatch (PyTorch's
`InferenceMode` guard), so operators inside it skip the autograd kernels entirely.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

from pyaten.dispatch.tls import AD_INPLACE_OR_VIEW_BIT, AUTOGRAD_BITS, STATE, _set

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
]


class _GradState(threading.local):
    enabled: bool = True
    inference: bool = False


GRAD = _GradState()


def is_grad_enabled() -> bool:
    """True when operators record the graph on this thread."""
    return GRAD.enabled


def is_inference_mode_enabled() -> bool:
    return GRAD.inference


class _Decorating:
    """A context manager that is also a decorator (each call enters a fresh copy)."""

    def __call__(self, fn: Callable) -> Callable:
        if inspect.isclass(fn):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def generator(*args: Any, **kwargs: Any) -> Any:
                gen = fn(*args, **kwargs)
                value = None
                while True:
                    with self.clone():
                        try:
                            item = gen.send(value)
                        except StopIteration as stop:
                            return stop.value
                    value = yield item

            return generator

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self) -> _Decorating:
        return type(self)()

    def __enter__(self) -> None:
        raise NotImplementedError

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        raise NotImplementedError


class _GradFlag(_Decorating):
    """Set the grad flag on entry, restore the previous one on exit."""

    _value = True

    def __enter__(self) -> None:
        self._previous = GRAD.enabled
        GRAD.enabled = self._value

    def __exit__(self, *exc: object) -> None:
        GRAD.enabled = self._previous


class no_grad(_GradFlag):  # noqa: N801 - PyTorch's name
    """Operators inside record no graph: results do not require grad."""

    _value = False


class enable_grad(_GradFlag):  # noqa: N801
    """Operators inside record the graph again (inside `no_grad`)."""

    _value = True


class set_grad_enabled(_GradFlag):  # noqa: N801
    """Set grad mode to `mode`: at once when called, and for a `with` block or a function."""

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not "
                            f"{type(mode).__name__}")
        self._previous = GRAD.enabled
        self._value = mode
        GRAD.enabled = mode

    def clone(self) -> set_grad_enabled:
        return set_grad_enabled(self._value)

    def __enter__(self) -> None:
        GRAD.enabled = self._value

    def __exit__(self, *exc: object) -> None:
        GRAD.enabled = self._previous


class inference_mode(_Decorating):  # noqa: N801
    """No graph, no version tracking: the autograd keys are excluded from dispatch."""

    def __init__(self, mode: bool = True) -> None:
        if not isinstance(mode, bool):
            raise TypeError("inference_mode(): argument 'mode' must be bool")
        self.mode = mode

    def __call__(self, fn: Callable | bool) -> Callable:  # type: ignore[override]
        if isinstance(fn, bool):  # `@inference_mode(False)` spelled as a call
            return inference_mode(fn)
        return super().__call__(fn)

    def clone(self) -> inference_mode:
        return inference_mode(self.mode)

    def __enter__(self) -> None:
        self._saved = (GRAD.enabled, GRAD.inference, STATE.included, STATE.excluded)
        if self.mode:
            GRAD.enabled = False
            GRAD.inference = True
            _set(STATE.included, STATE.excluded | AUTOGRAD_BITS | AD_INPLACE_OR_VIEW_BIT)
        else:
            GRAD.enabled = True
            GRAD.inference = False
            _set(STATE.included, STATE.excluded & ~(AUTOGRAD_BITS | AD_INPLACE_OR_VIEW_BIT))

    def __exit__(self, *exc: object) -> None:
        enabled, inference, included, excluded = self._saved
        GRAD.enabled = enabled
        GRAD.inference = inference
        _set(included, excluded)
