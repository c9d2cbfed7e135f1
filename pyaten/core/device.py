"""Devices: `device("cpu")`, `device("meta")`, `device("cuda:0")`, plug-in names.

A device type is valid when the dispatcher knows a backend for it (plug-in names are
registered with `pyaten.dispatch.keys.register_backend_name`). Devices are immutable and
interned by (type, index), so the common ones are shared objects.
"""

from __future__ import annotations

import re

from pyaten.dispatch.keys import backend_keyset_bits

__all__ = ["device", "as_device", "check_compiled", "forget_device_type", "keyset_for_device"]

_TORCH_DEVICE_TYPES = (
    "cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, "
    "mps, meta, hpu, mtia, privateuseone"
)
_DEVICE_RE = re.compile(r"^([a-zA-Z_][a-zA-Z0-9_]*)(?::(0|[1-9][0-9]*))?$")


class device:  # noqa: N801 - named like torch.device
    """Where a tensor's storage lives: a type ("cpu", "meta", "cuda", ...) and an index."""

    __slots__ = ("type", "index", "_keyset")

    def __new__(cls, type_or_str: str | device, index: int | None = None) -> device:
        if isinstance(type_or_str, device):
            if index is not None:
                raise RuntimeError("device(): cannot give an index together with a device")
            return type_or_str
        if not isinstance(type_or_str, str):
            raise TypeError(
                f"device() received an invalid combination of arguments - got "
                f"({type(type_or_str).__name__})"
            )
        key = (type_or_str, index)
        cached = _INTERNED.get(key)
        if cached is not None:
            return cached
        match = _DEVICE_RE.match(type_or_str)
        if not type_or_str:
            raise RuntimeError("Device string must not be empty")
        if match is None:
            raise RuntimeError(f"Invalid device string: '{type_or_str}'")
        dev_type, idx_text = match.groups()
        if idx_text is not None:
            if index is not None:
                raise RuntimeError(
                    f"type (string) must not include an index because index was passed "
                    f"explicitly: {type_or_str}"
                )
            index = int(idx_text)
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        try:
            bits = backend_keyset_bits(dev_type)
        except RuntimeError:
            raise RuntimeError(
                f"Expected one of {_TORCH_DEVICE_TYPES} device type at start of device string: "
                f"{type_or_str}"
            ) from None
        self = object.__new__(cls)
        object.__setattr__(self, "type", dev_type)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "_keyset", bits)
        _INTERNED[key] = self
        _INTERNED[(str(self), None)] = self
        return self

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("pyaten.device is immutable")

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, device):
            return self.type == other.type and self.index == other.index
        if isinstance(other, str):
            try:
                return self == device(other)
            except RuntimeError:
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self) -> tuple:
        return (device, (self.type, self.index))


_INTERNED: dict[tuple[str, int | None], device] = {}

CPU = device("cpu")
META = device("meta")


# Note: a device this build cannot use
#     A CPU-only PyTorch accepts `device("cuda")` but refuses to make or move a tensor there:
#     the binding that receives the device raises `AssertionError: Torch not compiled with
#     CUDA enabled` (its lazy CUDA init), before any operator runs. pyaten refuses in the same
#     place, `as_device`, which bindings, factories and `.to()` pass a user's device through.
#     The check is on the device's key-set bits, so a plug-in registered under the name
#     "cuda" (pyaten.backends.register_device), whose devices carry its PrivateUse bits,
#     is not refused.
_NOT_COMPILED: dict[str, tuple[int, str]] = {
    "cuda": (backend_keyset_bits("cuda"), "Torch not compiled with CUDA enabled"),
}


def check_compiled(value: device) -> device:
    """`value`, or PyTorch's AssertionError when this build has no backend for its type
    (Note: a device this build cannot use)."""
    refused = _NOT_COMPILED.get(value.type)
    if refused is not None and value._keyset == refused[0]:
        raise AssertionError(refused[1])
    return value


def as_device(value: device | str | None) -> device:
    """Normalise a user's device argument (None means CPU); a device this build cannot use
    raises (Note: a device this build cannot use)."""
    if value is None:
        return CPU
    if type(value) is device:
        if value.type in _NOT_COMPILED:
            check_compiled(value)
        return value
    if isinstance(value, str):
        return check_compiled(device(value))
    raise TypeError(f"expected a device (pyaten.device or str), got {type(value).__name__}")


def keyset_for_device(dev: device) -> int:
    """The raw dispatch key-set bits of a normal tensor on `dev`."""
    return dev._keyset


def forget_device_type(device_type: str) -> None:
    """Drop the interned devices of a plug-in type being unregistered (their key sets go)."""
    if device_type in ("cpu", "meta"):
        raise ValueError(f"forget_device_type(): '{device_type}' is a built-in device type")
    for key in [k for k, d in _INTERNED.items() if d.type == device_type]:
        del _INTERNED[key]
