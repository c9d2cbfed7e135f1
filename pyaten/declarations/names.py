"""Operator names written outside a schema (`structured_delegate: add.out`, `autogen:`)."""

from __future__ import annotations

from pyaten.schema.model import OperatorName

__all__ = ["operator_name", "out_overload"]


def operator_name(text: str) -> OperatorName:
    """`"ns::name.overload"` -> OperatorName; namespace and overload may be absent."""
    namespace, sep, rest = text.rpartition("::")
    name, _, overload = rest.partition(".")
    return OperatorName(namespace if sep else "", name, overload)


def out_overload(overload: str) -> str:
    """The overload name an out variant gets: `out`, or `{overload}_out`."""
    return f"{overload}_out" if overload else "out"
