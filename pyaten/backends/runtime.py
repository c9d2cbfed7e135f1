"""A plug-in's runtime module (`pyaten.openreg`) and its generated Tensor/Module methods.

The runtime module holds PyTorch's per-device functions (`torch.cuda`'s shape):
`is_available`, `device_count`, `current_device`, `set_device`, `synchronize`, `manual_seed`
(and `manual_seed_all`, `device(i)` as a guard). Each comes from the device's runtime object
when it has it, else a default that treats the device as one always-available device whose
current index pyaten tracks. The methods are PyTorch's
`generate_methods_for_privateuse1_backend`: `Tensor.<name>(device=None, non_blocking=False)`,
`Tensor.is_<name>`, `Module.<name>(device=None)`.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
from collections.abc import Iterator
from typing import Any

__all__ = ["RUNTIME_FUNCTIONS", "attach_methods", "build_module", "detach_methods"]

RUNTIME_FUNCTIONS = (
    "is_available", "device_count", "current_device", "set_device", "synchronize", "manual_seed",
)  # fmt: skip


class _CurrentIndex(threading.local):
    index = 0  # each thread starts on device 0


class _DefaultRuntime:
    """What a device gets for runtime functions it does not define."""

    def __init__(self, name: str, given: Any) -> None:
        self.name = name
        self.given = given
        self.state = _CurrentIndex()

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return self.state.index

    def set_device(self, device: Any) -> None:
        self.state.index = _index_of(self.name, device, self._count())

    def synchronize(self, device: Any = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        from pyaten.core.generator import manual_seed

        manual_seed(seed)

    def _count(self) -> int:
        fn = getattr(self.given, "device_count", None)
        return int(fn()) if callable(fn) else 1


def _index_of(name: str, device: Any, count: int) -> int:
    """The index `set_device` was given (an int, "name:1", a pyaten.device)."""
    from pyaten.core.device import device as make_device

    if isinstance(device, str):
        device = make_device(device)
    if isinstance(device, int) and not isinstance(device, bool):
        index = device
    elif getattr(device, "type", None) == name:
        index = 0 if device.index is None else device.index
    else:
        raise ValueError(f"pyaten.{name}.set_device(): expected a {name} device or an index, "
                         f"got {device!r}")
    if not 0 <= index < count:
        raise RuntimeError(f"pyaten.{name}.set_device(): invalid device index {index} "
                           f"(device_count() is {count})")
    return index


def build_module(name: str, given: Any) -> types.ModuleType:
    """`pyaten.<name>`: the runtime functions of `given` (defaults for missing ones)."""
    module = types.ModuleType(f"pyaten.{name}", f"Runtime functions of the '{name}' device.")
    defaults = _DefaultRuntime(name, given)
    for fn_name in RUNTIME_FUNCTIONS:
        fn = getattr(given, fn_name, None) if given is not None else None
        setattr(module, fn_name, fn if callable(fn) else getattr(defaults, fn_name))
    if module.current_device == defaults.current_device:
        # device guards read the index directly (pyaten/backends/device_check.py)
        module._current_index = defaults.state
    seed = module.manual_seed
    module.manual_seed_all = getattr(given, "manual_seed_all", None) or seed

    @contextlib.contextmanager
    def device(index: Any) -> Iterator[None]:
        """A guard: `with pyaten.<name>.device(1):` makes index 1 current inside the block."""
        previous = module.current_device()
        module.set_device(index)
        try:
            yield
        finally:
            module.set_device(previous)

    module.device = device
    return module


def _tensor_method(name: str):
    def to_device(self, device: Any = None, non_blocking: bool = False, **kwargs: Any):
        if device is None:
            device = sys.modules[f"pyaten.{name}"].current_device()
        if isinstance(device, int):
            device = f"{name}:{device}"
        return self.to(device, non_blocking=non_blocking, **kwargs)

    to_device.__name__ = to_device.__qualname__ = name
    to_device.__doc__ = (
        f"A copy of this tensor on the '{name}' device (index: `device`, or the current one); "
        "`self` when it is already there."
    )
    return to_device


def _module_method(name: str):
    def to_device(self, device: Any = None):
        if device is None:
            device = sys.modules[f"pyaten.{name}"].current_device()
        if isinstance(device, int):
            device = f"{name}:{device}"
        return self.to(device)

    to_device.__name__ = to_device.__qualname__ = name
    to_device.__doc__ = f"Move every parameter and buffer to the '{name}' device."
    return to_device


# (class, attribute) -> the method a device took over (`Tensor.cuda`), given back on detach.
_REPLACED: dict[tuple[type, str], Any] = {}


def attach_methods(name: str, replace: bool = False) -> None:
    """`Tensor.<name>()`, `Tensor.is_<name>`, `Module.<name>()` (refusing to shadow, unless
    `replace`: a device taking over a built-in type such as "cuda")."""
    from pyaten.core.tensor import Tensor
    from pyaten.nn.modules.module import Module

    for cls, attr in ((Tensor, name), (Tensor, "is_" + name), (Module, name)):
        if attr in cls.__dict__:
            if replace:
                _REPLACED[(cls, attr)] = cls.__dict__[attr]
                continue
            raise RuntimeError(
                f"register_device('{name}'): {cls.__name__}.{attr} already exists"
            )
    setattr(Tensor, name, _tensor_method(name))
    setattr(Tensor, "is_" + name, property(lambda self: self._device.type == name,
                                           doc=f"Whether the tensor is on the '{name}' device."))
    setattr(Module, name, _module_method(name))


def detach_methods(name: str) -> None:
    from pyaten.core.tensor import Tensor
    from pyaten.nn.modules.module import Module

    for cls, attr in ((Tensor, name), (Tensor, "is_" + name), (Module, name)):
        if attr in cls.__dict__:
            delattr(cls, attr)
        if (cls, attr) in _REPLACED:
            setattr(cls, attr, _REPLACED.pop((cls, attr)))
