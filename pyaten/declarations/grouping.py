"""Grouping the functional, in-place, out and mutable variants of one function.

Variants belong together when their schemas share `functional_signature()` (the base name
and arguments with annotations, defaults, out arguments and TensorOptions stripped). A group
needs an out variant, as in PyTorch: functions with only functional and in-place variants,
and view functions, stay ungrouped. Run `with_autogen` first so that `autogen:` variants
take part (`load_native_functions` already returns them).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyaten.declarations._yaml import paused_gc
from pyaten.declarations.model import NativeFunction, NativeFunctionsGroup
from pyaten.schema.model import SchemaKind

__all__ = ["group_native_functions", "pre_group"]

_KIND_FIELD = {
    SchemaKind.functional: "functional",
    SchemaKind.inplace: "inplace",
    SchemaKind.out: "out",
    SchemaKind.mutable: "mutable",
}


def pre_group(
    functions: Sequence[NativeFunction],
) -> dict[object, dict[SchemaKind, NativeFunction]]:
    """Functions by functional signature, then by kind (the first of a kind wins)."""
    by_signature: dict[object, dict[SchemaKind, NativeFunction]] = {}
    for fn in functions:
        kinds = by_signature.setdefault(fn.func.functional_signature(), {})
        kind = fn.func.kind
        if kind in kinds:
            # two variants of one kind (e.g. a scratch and a plain out) cannot share a group
            by_signature.setdefault((fn.func.functional_signature(), id(fn)), {})[kind] = fn
        else:
            kinds[kind] = fn
    return by_signature


def group_native_functions(
    functions: Sequence[NativeFunction],
) -> tuple[list[NativeFunctionsGroup], list[NativeFunction]]:
    """`(groups, ungrouped)`: groups in first-declared order, the rest in file order."""
    with paused_gc():
        return _group(functions)


def _group(
    functions: Sequence[NativeFunction],
) -> tuple[list[NativeFunctionsGroup], list[NativeFunction]]:
    groups: list[NativeFunctionsGroup] = []
    ungrouped: list[NativeFunction] = []
    for kinds in pre_group(functions).values():
        if SchemaKind.out in kinds and len(kinds) > 1 and SchemaKind.scratch not in kinds:
            fields = {_KIND_FIELD[k]: f for k, f in kinds.items()}
            groups.append(NativeFunctionsGroup(**fields))
        else:
            ungrouped.extend(kinds.values())
    position = {id(f): i for i, f in enumerate(functions)}
    ungrouped.sort(key=lambda f: position[id(f)])
    return groups, ungrouped
