"""How `pyaten explain` writes values down: tensors, key sets and source locations.

A call's result is described when the call returns (through `trace.describe_result`), so a
later in-place call cannot change what the explanation says the earlier call produced.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

from pyaten.core.tensor import Tensor

_VALUES_WIDTH = 120  # characters of a tensor's printed values kept in a result
_REPO_ROOT = Path(__file__).resolve().parent.parent.parent
_SITE = re.compile(r"(/[^\s:()]+):(\d+)")


def short_path(path: str) -> str:
    """`path` relative to the working directory or the repository root when inside them."""
    return _short_path(path, os.getcwd())


@functools.lru_cache(maxsize=4096)
def _short_path(path: str, cwd: str) -> str:
    # Resolving is slow and the same few files recur in every explanation: cached.
    for base in (Path(cwd), _REPO_ROOT):
        try:
            return str(Path(path).resolve().relative_to(base))
        except (ValueError, OSError):
            continue
    return path


def short_paths(text: str) -> str:
    """Every absolute `path:line` inside `text` shortened with `short_path`."""
    return _SITE.sub(lambda m: f"{short_path(m.group(1))}:{m.group(2)}", text)


def first_site(text: str) -> str:
    """The first `path:line` in a registration's debug text ("" when it has none)."""
    match = re.search(r"([^\s()]+):(\d+)", text)
    return f"{match.group(1)}:{match.group(2)}" if match else ""


def key_names(text: str) -> list[str]:
    """`"DispatchKeySet(CPU, AutogradCPU)"` -> `["CPU", "AutogradCPU"]`."""
    inner = text.strip()
    if inner.startswith("DispatchKeySet(") and inner.endswith(")"):
        inner = inner[len("DispatchKeySet(") : -1]
    return [k.strip() for k in inner.split(",") if k.strip()]


def _values_text(t: Tensor) -> str:
    try:
        text = " ".join(repr(t).split())
    except Exception as exc:  # printing must never break the call being explained
        text = f"<values not printable: {type(exc).__name__}>"
    if len(text) > _VALUES_WIDTH:
        text = text[: _VALUES_WIDTH - 3] + "..."
    return text


def describe(value: Any) -> dict[str, Any]:
    """A JSON-ready description of a value a call returned."""
    if isinstance(value, Tensor):
        return {
            "type": "Tensor",
            "shape": list(value._sizes),
            "dtype": value._dtype.name,
            "strides": list(value._strides),
            "storage_offset": value._offset,
            "device": str(value._device),
            "values": _values_text(value),
        }
    if isinstance(value, (tuple, list)):
        return {"type": type(value).__name__, "items": [describe(v) for v in value]}
    text = " ".join(repr(value).split())
    return {"type": type(value).__name__, "value": text[:_VALUES_WIDTH]}


def describe_text(info: dict[str, Any] | None, values: bool = True) -> list[str]:
    """The lines a description prints as (the tensor summary, then its values)."""
    if info is None:
        return ["(nothing recorded)"]
    kind = info.get("type")
    if kind == "Tensor":
        offset = f", offset {info['storage_offset']}" if info.get("storage_offset") else ""
        device = f", device {info['device']}" if info.get("device") not in (None, "cpu") else ""
        lines = [
            f"Tensor shape {info['shape']}, dtype {info['dtype']}, strides {info['strides']}"
            f"{offset}{device}"
        ]
        if values and "values" in info:
            lines.append(info["values"])
        return lines
    if "items" in info:
        lines = [f"{kind} of {len(info['items'])}:"]
        for i, item in enumerate(info["items"]):
            sub = describe_text(item, values)
            lines.append(f"  [{i}] {sub[0]}")
            lines += [f"      {s}" for s in sub[1:]]
        return lines
    return [f"{kind} {info.get('value', '')}"]


