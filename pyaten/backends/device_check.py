"""The device check around a plug-in's kernels (Note: where the device check lives, registry.py).

PyTorch's generated backend wrappers check, for an operator declared `device_check:
ExactSame` (the default), that every tensor argument is on one device, naming the first that
is not:

    Expected all tensors to be on the same device, but got mat2 is on cpu, different from
    other tensors on openreg:0 (when checking argument in method wrapper_PrivateUse1__mm)

`NoCheck` operators are left to `TensorIterator`, which allows 0-dim CPU tensors beside a
device tensor and says "found at least two devices, openreg:0 and cpu!". A pointwise `NoCheck`
operator whose kernel the device writes itself (no upstream `meta`, so no TensorIterator) gets
that rule here. The wrapper is generated per schema, like the dispatcher's `call`: one
attribute read and one identity test per tensor argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["check_mode", "wrap", "wrapper_name"]

# Operators that move data between devices: never checked.
CROSS_DEVICE_OPS = frozenset(
    ["_copy_from", "_copy_from_and_resize", "copy_", "_to_copy", "to.device", "to.other",
     "to.dtype_layout", "set_.source_Storage_storage_offset", "set_.source_Storage",
     "set_.source_Tensor", "_has_compatible_shallow_copy_type"]
)  # fmt: skip

_FLAGS: dict[str, tuple[str, frozenset[str], bool]] | None = None


def native_flags() -> dict[str, tuple[str, frozenset[str], bool]]:
    """`"name.overload"` -> (device_check, tags, device_guard) for pyaten's YAML operators."""
    global _FLAGS
    if _FLAGS is None:
        from pyaten.native.loader import load

        flags = {}
        for record in load().records:
            flags[str(record.func.name)] = (
                record.device_check, frozenset(record.tags), record.device_guard
            )
        _FLAGS = flags
    return _FLAGS


def wants_guard(short_name: str) -> bool:
    """Whether `name.overload` is declared `device_guard: True` (the default)."""
    found = native_flags().get(short_name)
    return short_name not in CROSS_DEVICE_OPS if found is None else found[2]


def check_mode(short_name: str) -> str:
    """"exact" (ExactSame), "iterator" (pointwise NoCheck) or "none" for `name.overload`."""
    if short_name in CROSS_DEVICE_OPS:
        return "none"
    found = native_flags().get(short_name)
    if found is None:
        return "exact"
    check, tags, _ = found
    if check == "ExactSame":
        return "exact"
    return "iterator" if "pointwise" in tags else "none"


def wrapper_name(slot: str, name: str, overload: str) -> str:
    """PyTorch's name of a backend wrapper: `wrapper_PrivateUse1__mm`,
    `wrapper_PrivateUse1_Tensor_add_Tensor`."""
    unambiguous = f"{name}_{overload}" if overload else name
    return f"wrapper_{slot}_{overload}_{unambiguous}"


def exact_failure(common: Any, tensor: Any, arg: str, method: str) -> None:
    raise RuntimeError(
        f"Expected all tensors to be on the same device, but got {arg} is on "
        f"{tensor._device}, different from other tensors on {common} (when checking argument "
        f"in method {method})"
    )


def iterator_failure(common: Any, tensor: Any, arg: str, method: str) -> None:
    # TensorIterator's rule: a 0-dim CPU tensor may join a device computation.
    if tensor._device.type == "cpu" and not tensor._sizes:
        return
    raise RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{common} and {tensor._device}!"
    )


def _exact_check(value: str, arg: str, depth: int, method: str) -> list[str]:
    pad = "    " * depth
    return [
        f"{pad}if d is None:",
        f"{pad}    d = {value}._device",
        f"{pad}elif {value}._device is not d and {value}._device != d:",
        f"{pad}    fail(d, {value}, {arg!r}, {method!r})",
    ]


def _tensor_slots(schema: Any) -> list[tuple[int, str, str]]:
    found = []
    for i in schema.tensor_arg_indices:
        arg = schema.arguments[i]
        kind = "list" if arg.type.is_list() else "optional" if arg.type.is_optional() else "one"
        found.append((i, kind, arg.name))
    return found


def wrap(entry: Any, fn: Callable, slot: str, guard: Any = None) -> Callable:
    """`fn` with the device check of `entry`'s operator in front (or `fn` when none applies).

    `guard` (the device's runtime module, for a device with several indices) adds PyTorch's
    device guard for operators declared `device_guard: True`: the kernel runs with the index
    of its first tensor argument current.
    """
    schema = entry.schema
    short = entry.name.split("::", 1)[1]
    mode = check_mode(short)
    slots = _tensor_slots(schema)
    if len(slots) == 0 or (len(slots) == 1 and slots[0][1] == "one"):
        mode = "none"  # one tensor: nothing to compare
    firsts = [i for i, kind, _ in slots if kind == "one"]
    if guard is not None and not (firsts and wants_guard(short)):
        guard = None
    if mode == "none" and guard is None:
        return fn
    method = wrapper_name(slot, schema.name.name, schema.name.overload)
    fail = exact_failure if mode == "exact" else iterator_failure
    n = len(schema.arguments)
    params = ", ".join(f"_a{i}" for i in range(n))
    lines = [f"def {method}({params}):", "    d = None"]
    if mode == "iterator":
        # TensorIterator's rule: the common device is the first one that is not the CPU.
        lines.append("    ts = []")
        for i, kind, arg in slots:
            if kind == "one":
                lines.append(f"    ts.append((_a{i}, {arg!r}))")
            elif kind == "optional":
                lines.append(f"    if _a{i} is not None: ts.append((_a{i}, {arg!r}))")
            else:
                lines.append(f"    ts += [(t, {arg!r}) for t in _a{i} if t is not None]")
        lines += [
            "    for t, name in ts:",
            "        if t._device.type != 'cpu':",
            "            d = t._device",
            "            break",
            "    if d is not None:",
            "        for t, name in ts:",
            "            if t._device is not d and t._device != d:",
            f"                fail(d, t, name, {method!r})",
        ]
    elif mode == "exact":
        # PyTorch's check_and_update_common_device: the first tensor sets the device.
        for i, kind, arg in slots:
            if kind == "one":
                lines += _exact_check(f"_a{i}", arg, 1, method)
            elif kind == "optional":
                lines.append(f"    if _a{i} is not None:")
                lines += _exact_check(f"_a{i}", arg, 2, method)
            else:
                lines.append(f"    for t in _a{i}:")
                lines.append("        if t is not None:")
                lines += _exact_check("t", arg, 3, method)
    if guard is not None:
        direct = getattr(guard, "_current_index", None)  # the default runtime's state
        lines += [
            f"    i = _a{firsts[0]}._device.index",
            "    if i is not None and i != "
            + ("state.index:" if direct is not None else "current():"),
            "        previous = current()",
            "        set_device(i)",
            "        try:",
            f"            return fn({params})",
            "        finally:",
            "            set_device(previous)",
        ]
    lines.append(f"    return fn({params})")
    namespace: dict[str, Any] = {"fn": fn, "fail": fail}
    if guard is not None:
        namespace["current"] = guard.current_device
        namespace["set_device"] = guard.set_device
        namespace["state"] = getattr(guard, "_current_index", None)
    exec(compile("\n".join(lines), f"<pyaten device check {entry.name}>", "exec"), namespace)
    wrapper = namespace[method]
    wrapper.__wrapped__ = fn
    guarded = ", device guard" if guard is not None else ""
    wrapper.__doc__ = f"{entry.name} on {slot}: device check ({mode}){guarded}, then {_name(fn)}."
    return wrapper


def _name(fn: Callable) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__
