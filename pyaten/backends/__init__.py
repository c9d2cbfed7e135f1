"""`pyaten.backends`: plug-in devices (docs/backends.md).

    import pyaten.backends as backends

    dev = backends.register_device("openreg", allocator=pool.allocate, fallback="cpu")
    dev.load_manifest("openreg.yaml", kernels)      # or dev.register_kernel("mm", fn)
    backends.set_fallback("openreg", "error", op="topk")
    print(backends.fallback_report())

A device is a name bound to one of the PrivateUse1/2/3 dispatch-key slots (three devices can
be registered at once), an allocator, a runtime module (`pyaten.openreg`), kernels for at
least REQUIRED_KERNELS, and a fallback policy for the operators it has no kernel for.
"""

from pyaten.backends import kernel_api
from pyaten.backends.fallback import POLICIES, FallbackReport, fallback_report
from pyaten.backends.registry import (
    SLOTS,
    Device,
    devices,
    get_device,
    register_device,
    set_fallback,
    unregister_device,
)
from pyaten.backends.required import REQUIRED_KERNELS, upstream_kernel

__all__ = [
    "POLICIES",
    "REQUIRED_KERNELS",
    "SLOTS",
    "Device",
    "FallbackReport",
    "devices",
    "fallback_report",
    "get_device",
    "kernel_api",
    "register_device",
    "set_fallback",
    "unregister_device",
    "upstream_kernel",
]
