"""DispatchStub: a named table from device type to kernel function.

A structured op's `impl` calls `add_stub(iter.device.type, iter, alpha)`; each backend
registers its loop with `add_stub.register("cpu", fn)`. This is the second, finer dispatch
inside a kernel (PyTorch's DispatchStub), after the dispatcher has chosen the op's kernel.
"""

from __future__ import annotations

from collections.abc import Callable

from pyaten.dispatch import trace as _trace

__all__ = ["DispatchStub", "all_stubs"]

_REGISTRY: dict[str, DispatchStub] = {}


class DispatchStub:
    """`stub = DispatchStub("add_stub")`; `stub.register("cpu", fn)`; `stub("cpu", *args)`."""

    __slots__ = ("name", "_kernels")

    def __init__(self, name: str) -> None:
        if name in _REGISTRY:
            raise RuntimeError(f"DispatchStub {name!r} is already defined")
        self.name = name
        self._kernels: dict[str, Callable] = {}
        _REGISTRY[name] = self

    def register(self, device_type: str, fn: Callable | None = None) -> Callable:
        """Register `fn` for `device_type`; usable as a decorator when `fn` is omitted."""
        if fn is None:
            return lambda f: self.register(device_type, f)
        if not isinstance(device_type, str):
            raise TypeError(
                f"{self.name}.register(): device_type must be a str such as 'cpu', got "
                f"{type(device_type).__name__}"
            )
        self._kernels[device_type] = fn
        return fn

    def deregister(self, device_type: str) -> None:
        """Remove the kernel for `device_type` (plug-in backends unloading)."""
        self._kernels.pop(device_type, None)

    def __call__(self, device_type: str, *args: object, **kwargs: object) -> object:
        try:
            fn = self._kernels[device_type]
        except KeyError:
            raise NotImplementedError(
                f"DispatchStub {self.name}: no kernel registered for device type "
                f"'{device_type}' (registered: {', '.join(sorted(self._kernels)) or 'none'})"
            ) from None
        if _trace.ACTIVE:
            _trace.note("stub", stub=self.name, device=device_type, kernel=_site(fn))
        if kwargs:
            return fn(*args, **kwargs)
        return fn(*args)

    def kernel(self, device_type: str) -> Callable | None:
        """The registered function for `device_type`, or None."""
        return self._kernels.get(device_type)

    def devices(self) -> list[str]:
        return sorted(self._kernels)

    def __repr__(self) -> str:
        return f"DispatchStub({self.name!r}, devices={self.devices()})"


def _site(fn: Callable) -> str:
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__qualname__", type(fn).__name__)
    return f"{name} at {code.co_filename}:{code.co_firstlineno}" if code else name


def all_stubs() -> dict[str, DispatchStub]:
    """Every stub defined so far, by name (for introspection tools)."""
    return dict(_REGISTRY)
