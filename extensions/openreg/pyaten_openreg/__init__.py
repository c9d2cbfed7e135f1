"""pyaten_openreg: an example plug-in device for pyaten, built on the public extension API.

    import pyaten
    import pyaten_openreg  # registers the device "openreg" (indices 0 and 1)

    x = pyaten.ones(2, 3).to("openreg")
    (x * 2).sum().item()                 # 12.0, computed by openreg's kernels
    pyaten_openreg.memory_allocated()    # bytes of live openreg tensors on device 0

Its memory is a pool per device index (memory.py, reached through access.py), its kernels are
in kernels.py (named by the manifest openreg.yaml) and loops.py (DispatchStub loops); every
other operator runs through pyaten's CPU fallback. README.md is the step-by-step tutorial for
writing a device like it.
"""

from __future__ import annotations

from pathlib import Path

import pyaten.backends as backends
from pyaten_openreg import kernels, loops, memory
from pyaten_openreg.memory import (
    empty_cache,
    max_memory_allocated,
    memory_allocated,
    memory_reserved,
    memory_stats,
    reset_peak_memory_stats,
)
from pyaten_openreg.runtime import Runtime

__all__ = [
    "DEVICE",
    "MANIFEST",
    "empty_cache",
    "max_memory_allocated",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "register",
    "reset_peak_memory_stats",
    "unregister",
]

NAME = "openreg"
MANIFEST = Path(__file__).with_name("openreg.yaml")
_MEMORY_FUNCTIONS = (memory_allocated, max_memory_allocated, memory_reserved, memory_stats,
                     reset_peak_memory_stats, empty_cache)  # fmt: skip


def register() -> backends.Device:
    """Register the device `openreg` (done on import; again after `unregister_device`)."""
    device = backends.register_device(
        NAME, runtime=Runtime(), allocator=memory.allocate, grow=memory.grow, fallback="cpu"
    )
    try:
        device.load_manifest(str(MANIFEST), kernels)
        device.check_required()
        loops.register_stubs(NAME)
    except BaseException:
        backends.unregister_device(NAME)
        loops.deregister_stubs(NAME)
        raise
    for fn in _MEMORY_FUNCTIONS:  # pyaten.openreg.memory_allocated(), as torch.cuda has
        setattr(device.module, fn.__name__, fn)
    return device


def unregister() -> None:
    """Undo `register()`: the device, its kernels and its stub loops (for tests)."""
    backends.unregister_device(NAME)
    loops.deregister_stubs(NAME)


DEVICE = backends.get_device(NAME) if NAME in backends.devices() else register()
