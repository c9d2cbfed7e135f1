"""Decompositions: operators rewritten in terms of simpler ATen operators (`torch._decomp`).

`decomposition_table` maps an `OpOverload` to a Python function with the operator's
signature that computes the same result from a small core set (pointwise, reductions,
views, `mm`). Capture uses it: `make_fx(fn, decomposition_table=get_decompositions([...]))`
records the decomposition's calls instead of the operator. Each entry is registered next to
its definition with `@register_decomposition(aten.x.overload)` (pyaten/_decomp/rules.py), and
`tests/test_decomp.py` checks every entry against the eager operator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "decomposition_table",
    "register_decomposition",
    "get_decompositions",
    "core_aten_decompositions",
]

decomposition_table: dict[Any, Callable[..., Any]] = {}


def register_decomposition(ops: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: `fn` decomposes `ops` (an OpOverload, a packet meaning all its overloads,
    or a list of them)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for op in ops if isinstance(ops, (list, tuple)) else [ops]:
            for overload in _overloads(op):
                if overload in decomposition_table:
                    raise RuntimeError(f"duplicate registrations for {overload}")
                decomposition_table[overload] = fn
        return fn

    return register


def _overloads(op: Any) -> list[Any]:
    if hasattr(op, "overloads") and not hasattr(op, "overloadpacket"):  # a packet
        return [getattr(op, name) for name in op.overloads()]
    return [op]


def get_decompositions(ops: Iterable[Any]) -> dict[Any, Callable[..., Any]]:
    """The table's entries for `ops` (overloads, or packets standing for all theirs)."""
    wanted = {o for op in ops for o in _overloads(op)}
    return {op: fn for op, fn in decomposition_table.items() if op in wanted}


def core_aten_decompositions() -> dict[Any, Callable[..., Any]]:
    """Every registered decomposition (what lowering to the core operator set uses)."""
    return dict(decomposition_table)


from pyaten._decomp import rules as _rules  # noqa: E402,F401 - registers the table
