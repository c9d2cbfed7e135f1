"""The "cpu" fallback policy: run an operator on CPU copies of a plug-in's tensors.

Data moves only through the device's `_copy_from` (both directions) and `empty_strided`
kernels, so the fallback works for any device that has the required kernels. Arguments are
checked for mixed devices first, with the rule of the operator's `device_check:` (see
pyaten/backends/device_check.py), so a fallback never hides a cross-device call.
"""

from __future__ import annotations

from typing import Any

from pyaten.backends import device_check
from pyaten.core.device import CPU
from pyaten.core.tensor import Tensor
from pyaten.core.views import contiguous_strides, empty_tensor, is_non_overlapping_and_dense
from pyaten.dispatch.registry import get_operator

__all__ = ["run_on_cpu", "to_cpu", "to_device"]

_CHECKERS: dict[tuple[str, str], Any] = {}


def _op(name: str) -> Any:
    entry = get_operator(name)
    if entry is None:  # defined by pyaten.backends.required on import
        raise RuntimeError(f"{name} is not defined; import pyaten.backends first")
    return entry


def to_cpu(t: Tensor) -> Tensor:
    """A contiguous CPU copy of `t` (made by the device's `_copy_from`)."""
    if t._device.type == "cpu":
        return t
    if hasattr(t, "_parts"):  # a sparse tensor: its parts, each copied
        return _op("aten::_to_copy").call(t, None, None, CPU, None, False, None)
    cpu = empty_tensor(t._sizes, t._dtype, CPU)
    _op("aten::_copy_from").call(t, cpu, False)
    return cpu


def to_device(t: Tensor, device: Any) -> Tensor:
    """A copy of the CPU tensor `t` on `device` (the device's `empty_strided`, `_copy_from`;
    a sparse tensor's parts each so)."""
    if hasattr(t, "_parts"):  # a sparse result (to_sparse of a device tensor)
        return _op("aten::_to_copy").call(t, None, None, device, None, False, None)
    strides = t._strides
    if not is_non_overlapping_and_dense(t._sizes, strides):
        strides = contiguous_strides(t._sizes)
    dst = _op("aten::empty_strided").call(t._sizes, strides, t._dtype, None, device, None)
    _op("aten::_copy_from").call(t, dst, False)
    return dst


def _check_devices(op: Any, args: tuple, slot: str) -> None:
    key = (op.name, slot)
    checker = _CHECKERS.get(key)
    if checker is None:
        checker = _CHECKERS[key] = device_check.wrap(op, _no_op, slot)
    if checker is not _no_op:
        checker(*args)
        return
    # Operators that may mix devices still may not mix two accelerators.
    seen = None
    for t in _tensors(args):
        if t._device.type in ("cpu", "meta"):
            continue
        if seen is None:
            seen = t._device
        elif t._device != seen:
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least two "
                f"devices, {seen} and {t._device}!"
            )


def _no_op(*args: Any) -> None:
    return None


def _tensors(args: Any):
    for value in args:
        if isinstance(value, Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, Tensor):
                    yield item


def _is_device_type(t: Any) -> bool:
    text = str(t)
    return text in ("Device", "Device?")


def run_on_cpu(op: Any, args: tuple, device_type: str) -> Any:
    """Run `op` with CPU copies of `args`' `device_type` tensors; results back on the device."""
    from pyaten.backends.registry import get_device

    schema = op.schema
    _check_devices(op, args, get_device(device_type).slot)
    target = None
    copies: dict[int, Tensor] = {}  # id(original) -> CPU copy: aliases stay aliases

    def down(value: Any) -> Any:
        nonlocal target
        if isinstance(value, Tensor) and value._device.type == device_type:
            if target is None:
                target = value._device
            found = copies.get(id(value))
            if found is None:
                found = copies[id(value)] = to_cpu(value)
            return found
        return value

    cpu_args = []
    for arg, value in zip(schema.arguments, args):
        if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
            cpu_args.append(type(value)(down(v) for v in value))  # Tensor[], Tensor?[]
        elif _is_device_type(arg.type) and value is not None:
            dev = getattr(value, "type", None) == device_type or (
                isinstance(value, str) and value.split(":", 1)[0] == device_type
            )
            if dev:
                from pyaten.backends.kernel_api import with_index

                if target is None:
                    target = with_index(value)
                value = CPU
            cpu_args.append(value)
        else:
            cpu_args.append(down(value))
    result = op.call(*cpu_args)
    _write_back(schema, args, cpu_args)
    if target is None:
        return result
    if len(schema.returns) == 1:
        return _up(schema, 0, result, args, target)
    return tuple(_up(schema, j, r, args, target) for j, r in enumerate(result))


def _write_back(schema: Any, args: tuple, cpu_args: list) -> None:
    """Copy each mutated device argument's CPU copy back (resizing it when it changed)."""
    for arg, original, cpu in zip(schema.arguments, args, cpu_args):
        if arg.annotation is None or not arg.annotation.is_write:
            continue
        pairs = zip(original, cpu) if isinstance(original, (list, tuple)) else [(original, cpu)]
        for dst, src in pairs:
            if not isinstance(dst, Tensor) or dst is src:
                continue
            if dst._sizes != src._sizes:
                _op("aten::_copy_from_and_resize").call(src, dst)
            else:
                _op("aten::_copy_from").call(src, dst, False)


def _up(schema: Any, j: int, value: Any, args: tuple, target: Any) -> Any:
    ret = schema.returns[j]
    if ret.annotation is not None and ret.annotation.is_write:
        # in-place / out=: return the device argument the result aliases
        for arg, original in zip(schema.arguments, args):
            if arg.annotation is not None and arg.annotation.alias_set == ret.annotation.alias_set:
                return original
    if isinstance(value, Tensor):
        return to_device(value, target) if value._device.type == "cpu" else value
    if isinstance(value, (list, tuple)):
        return type(value)(
            to_device(v, target) if isinstance(v, Tensor) and v._device.type == "cpu" else v
            for v in value
        )
    return value
