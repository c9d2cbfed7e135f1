"""The minimum kernel set of a device, the operators it needs, and the generic glue kernels.

A device must supply REQUIRED_KERNELS: allocation, copies between the CPU and the device,
`resize_`, `set_`, `as_strided` and `view`, `_local_scalar_dense` and `fill_`. Everything
else can come from the fallback. `_copy_from(self, dst)` is the one way data crosses: it is
called with equal shapes and dtypes, one side on the device, either side any strides.

Three operators are glue that pyaten registers on every device's key (a device kernel of the
same name replaces it): `copy_`, which broadcasts, converts dtypes on the host and routes
copies between two plug-ins through the host before calling `_copy_from`; `_to_copy`
(`.to()`, `.cpu()`), which allocates with the target's `empty_strided` and calls `copy_`;
and `clone`, the same on the tensor's own device.

`_copy_from`, `_copy_from_and_resize`, `set_` and `_local_scalar_dense` are PyTorch
operators that pyaten's native_functions.yaml does not declare; they are defined here, with
PyTorch's schemas, when this package is imported (with CPU kernels where PyTorch has them).
"""

from __future__ import annotations

from typing import Any

from pyaten.core.device import CPU
from pyaten.core.device import device as make_device
from pyaten.core.tensor import Tensor, write_fresh
from pyaten.core.views import empty_tensor
from pyaten.dispatch.registry import get_operator, list_operators
from pyaten.library import Library

__all__ = [
    "REQUIRED_KERNELS",
    "aten_operator",
    "check_required",
    "install_glue",
    "short_name",
    "upstream_kernel",
]

REQUIRED_KERNELS: tuple[str, ...] = (
    "empty.memory_format",
    "empty_strided",
    "_copy_from",
    "_copy_from_and_resize",
    "resize_",
    "set_.source_Storage_storage_offset",
    "as_strided",
    "view",
    "_local_scalar_dense",
    "fill_.Scalar",
)

_DEFINITIONS = (
    "_copy_from(Tensor self, Tensor dst, bool non_blocking=False) -> Tensor",
    "_copy_from_and_resize(Tensor self, Tensor dst) -> Tensor",
    "set_.source_Storage(Tensor(a!) self, Storage source) -> Tensor(a!)",
    "set_.source_Storage_storage_offset(Tensor(a!) self, Storage source, SymInt storage_offset, "
    "SymInt[] size, SymInt[] stride=[]) -> Tensor(a!)",
    "set_.source_Tensor(Tensor(a!) self, Tensor source) -> Tensor(a!)",
    "set_(Tensor(a!) self) -> Tensor(a!)",
    "_local_scalar_dense(Tensor self) -> Scalar",
)

_LIBRARIES: list[Library] = []  # kept alive for the process


def short_name(qualified: str) -> str:
    """`"aten::add.Tensor"` -> `"add.Tensor"`."""
    return qualified.split("::", 1)[1] if "::" in qualified else qualified


def aten_operator(op_name: str, where: str) -> Any:
    """The operator entry of `aten::op_name`; ValueError with a did-you-mean otherwise."""
    if not isinstance(op_name, str) or not op_name:
        raise TypeError(f"{where}(): the operator must be a name such as 'add.Tensor', "
                        f"got {op_name!r}")  # fmt: skip
    qualified = op_name if "::" in op_name else "aten::" + op_name
    entry = get_operator(qualified)
    if entry is None:
        from pyaten.declarations.reporting import did_you_mean  # here: no YAML at import

        known = [short_name(n) for n in list_operators("aten")]
        hint = did_you_mean(short_name(qualified), known)
        raise ValueError(
            f"{where}(): unknown operator '{qualified}'" + (f"; {hint}" if hint else "")
        )
    return entry


def upstream_kernel(op_name: str, key: str = "CPU") -> Any:
    """The kernel pyaten itself registered for `aten::op_name` under `key` (the first one,
    whatever was stacked on it later): for a device that reuses a metadata-only kernel such
    as `view` or `as_strided`, or a structured wrapper whose `impl` calls DispatchStubs."""
    from pyaten.dispatch.keys import parse_dispatch_key

    entry = aten_operator(op_name, "upstream_kernel")
    stack = entry.kernels.get(parse_dispatch_key(key)) or []
    if not stack or stack[0].fn is None:
        have = ", ".join(sorted(k.name for k, v in entry.kernels.items() if v)) or "none"
        raise ValueError(
            f"upstream_kernel(): {entry.name} has no {key} kernel (it has kernels for: {have})"
        )
    return stack[0].fn


# --- the operators pyaten's YAML lacks ----------------------------------------------------------


def _local_scalar_dense_cpu(self: Tensor) -> Any:
    return self.item()


def _set_storage_cpu(self: Tensor, source: Any, storage_offset: int, size: Any, stride: Any = ()):
    from pyaten.backends.kernel_api import set_storage

    return set_storage(self, source, storage_offset, size, stride)


def _define_missing() -> None:
    lib = Library("aten", "FRAGMENT")
    defined = []
    for text in _DEFINITIONS:
        name = text.split("(", 1)[0]
        if get_operator("aten::" + name) is None:
            lib.define(text)
            defined.append(name)
    _LIBRARIES.append(lib)
    cpu = Library("aten", "IMPL", "CPU")
    for name, fn in (
        ("_local_scalar_dense", _local_scalar_dense_cpu),
        ("set_.source_Storage_storage_offset", _set_storage_cpu),
    ):
        if name in defined:
            cpu.impl(name, fn, "CPU")
    _LIBRARIES.append(cpu)


_define_missing()


# --- glue kernels -------------------------------------------------------------------------------


def _broadcast_view(src: Tensor, sizes: tuple) -> Tensor:
    """`src` expanded to `sizes` (a strided view; no kernel of the device involved)."""
    from pyaten.core.views import as_strided_view
    from pyaten.native.kernels.copy import check_broadcast_into

    check_broadcast_into(sizes, src._sizes)
    lead = len(sizes) - len(src._sizes)
    strides = [0] * len(sizes)
    for i, (n, st) in enumerate(zip(src._sizes, src._strides)):
        strides[lead + i] = 0 if n == 1 and sizes[lead + i] != 1 else st
    return as_strided_view(src, tuple(sizes), tuple(strides), src._offset)


def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """`copy_` for plug-in devices: broadcast, convert, then the device's `_copy_from`."""
    from pyaten.backends.cpu_fallback import to_cpu

    if self is src:
        return self
    if "meta" in (self._device.type, src._device.type):
        raise NotImplementedError(
            "Cannot copy out of meta tensor; no data!"
            if src._device.type == "meta"
            else "copy_(): cannot copy into a meta tensor from a tensor with data"
        )
    if src._sizes != self._sizes:
        src = _broadcast_view(src, self._sizes)
    other = src._device.type
    mine = self._device.type
    if src._dtype is not self._dtype:  # convert on the host
        src = (to_cpu(src) if other != "cpu" else src).to(self._dtype)
        other = "cpu"
    if other != "cpu" and mine != "cpu" and other != mine:  # two plug-ins: through the host
        src = to_cpu(src)
        other = "cpu"
    if other == "cpu" and mine == "cpu":
        return get_operator("aten::copy_").call(self, src, non_blocking)
    _copy_from().call(src, self, non_blocking)
    self._bump_version()
    return self


def _to_copy(
    self: Tensor,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: Any = None,
    non_blocking: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """`_to_copy` for plug-in devices: the target's `empty_strided`, then `copy_`."""
    from pyaten.native.kernels.copy import like_strides

    dtype = self._dtype if dtype is None else dtype
    from pyaten.backends.kernel_api import with_index

    target = self._device if device is None else with_index(make_device(device))
    strides = like_strides(self, memory_format)
    if target.type == "cpu":
        result = empty_tensor(self._sizes, dtype, CPU, strides)
    else:
        empty = get_operator("aten::empty_strided")
        result = empty.call(self._sizes, strides, dtype, None, target, None)
    # the new tensor's first write is no user write: its version stays 0, as in PyTorch
    write_fresh(get_operator("aten::copy_").call, result, self, non_blocking)
    return result


def clone(self: Tensor, memory_format: Any = None) -> Tensor:
    """`clone` for plug-in devices: the device's `empty_strided`, then `copy_` (PyTorch's
    definition; pyaten's composite kernel copies through NumPy views)."""
    from pyaten.native.kernels.copy import like_strides

    empty = get_operator("aten::empty_strided")
    result = empty.call(self._sizes, like_strides(self, memory_format), self._dtype, None,
                        self._device, None)  # fmt: skip
    write_fresh(get_operator("aten::copy_").call, result, self, False)
    return result


def _copy_from() -> Any:
    return get_operator("aten::_copy_from")


GLUE = {"copy_": copy_, "_to_copy": _to_copy, "clone": clone}


def install_glue(dev: Any) -> None:
    """Register the glue kernels on `dev`'s slot, one Library each (so each can be replaced)."""
    for name, fn in GLUE.items():
        lib = Library("aten", "IMPL", dev.slot)
        lib.impl(name, fn, dev.slot)
        dev._glue[name] = lib


def check_required(dev: Any, planned: Any = ()) -> None:
    """RuntimeError listing the REQUIRED_KERNELS neither registered on `dev` nor `planned`."""
    have = set(dev.kernels) | set(planned)
    missing = [k for k in REQUIRED_KERNELS if k not in have]
    if missing:
        raise RuntimeError(
            f"device '{dev.name}' is missing {len(missing)} of the required kernels: "
            f"{', '.join(missing)} (every device supplies {', '.join(REQUIRED_KERNELS)}; "
            "see docs/backends.md, 'The minimum kernel set')"
        )
