"""`pyaten.return_types`: named tuples for operators whose schema names its returns.

`max.dim(...) -> (Tensor values, Tensor indices)` returns `pyaten.return_types.max` from the
Python bindings (`max_out` from the `out=` form), a tuple whose fields are the schema's
return names, as torch.return_types does; op handles (`pyaten.ops.aten.max.dim`) return plain
tuples, as torch.ops does.
"""

from __future__ import annotations

import collections
from typing import Any

__all__ = ["for_schema"]


def _repr(self: tuple) -> str:
    fields = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
    return f"pyaten.return_types.{type(self).__name__}(\n{fields})"


def _named_tuple(name: str, fields: tuple[str, ...]) -> type:
    existing = globals().get(name)
    if isinstance(existing, type) and getattr(existing, "_fields", None) == fields:
        return existing
    base = collections.namedtuple(name, fields)  # noqa: PYI024 - the fields come at run time
    cls = type(name, (base,), {"__slots__": (), "__repr__": _repr,
                               "__module__": "pyaten.return_types"})
    globals()[name] = cls
    return cls


def for_schema(schema: Any, out: bool) -> type | None:
    """The named tuple type a binding wraps `schema`'s results in, or None: only schemas with
    two or more returns, all named, get one (PyTorch's structseq rule)."""
    if schema is None:
        return None
    returns = schema.returns
    if len(returns) < 2 or any(r.name is None for r in returns):
        return None
    name = schema.name.name.rstrip("_") + ("_out" if out else "")
    return _named_tuple(name, tuple(r.name for r in returns))
