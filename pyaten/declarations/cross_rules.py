"""Rules across the entries of one native file: overload names, structured delegates, autogen.

Each diagnostic goes on the line of the entry (or key) that has to change: the second of two
duplicates, the `structured_delegate:` or `autogen:` key that names the wrong thing.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyaten.declarations.model import NativeFunction
from pyaten.declarations.names import out_overload
from pyaten.declarations.reporting import Report
from pyaten.schema.model import OperatorName, SchemaKind

__all__ = ["check_native_functions", "autogen_targets"]


def _line(fn: NativeFunction, key: str) -> int:
    """The line of `key` in the entry, or the entry's line for records built by hand."""
    raw = fn.raw
    return raw.line_of(key) if hasattr(raw, "line_of") else fn.loc.line


def _key(name: OperatorName) -> tuple[str, str]:
    return (name.name, name.overload)


def autogen_targets(fn: NativeFunction) -> dict[tuple[str, str], str]:
    """The (name, overload) pairs `fn` may autogen, each with the kind it would be.

    A functional, in-place or mutable function may generate its out variant (`{base}.out` or
    `{base}.{overload}_out`) when it returns a tensor or is in-place; an in-place function
    its functional variant (`{base}.{overload}`); a mutable one its functional twin
    `{name}_functional`.
    """
    name = fn.func.name
    kind = fn.func.kind
    targets: dict[tuple[str, str], str] = {}
    if kind in (SchemaKind.out, SchemaKind.scratch):
        return targets
    # out= arguments come from tensor returns, or from `self` for an in-place op
    if kind is SchemaKind.inplace or any(r.type.is_tensor_like() for r in fn.func.returns):
        targets[(name.base, out_overload(name.overload))] = "out"
    if kind is SchemaKind.inplace:
        targets[(name.base, name.overload)] = "functional"
    if kind is SchemaKind.mutable:
        targets[(f"{name.name}_functional", name.overload)] = "functional"
    return targets


def check_native_functions(functions: Sequence[NativeFunction], report: Report):
    """Run every cross-entry rule over `functions` (in file order)."""
    by_name: dict[tuple[str, str], NativeFunction] = {}
    for fn in functions:
        name = fn.func.name
        key = _key(name)
        first = by_name.get(key)
        if first is not None:
            if name.overload:
                report(
                    fn.loc.line,
                    "duplicate-overload",
                    f"overload name '{name}' is declared twice",
                    f"first declared at line {first.loc.line}; give this one a new overload name",
                )
            else:
                report(
                    fn.loc.line,
                    "multiple-default-overloads",
                    f"'{name.name}' has more than one entry with an empty overload name",
                    f"the other is at line {first.loc.line}; name one overload, "
                    f"e.g. `{name.name}.Tensor`",
                )
            continue
        by_name[key] = fn

    _check_structured(functions, by_name, report)
    _check_autogen(functions, by_name, report)


def _check_structured(functions, by_name, report) -> None:
    for fn in functions:
        if fn.structured and fn.func.kind is not SchemaKind.out:
            report(
                _line(fn, "structured"),
                "structured-without-out",
                f"{fn.func.name} is 'structured: True' but is not an out variant",
                "put `structured: True` on the out variant and "
                f"`structured_delegate: {fn.func.name.base}.{out_overload(fn.func.name.overload)}`"
                " here",
            )
        delegate = fn.structured_delegate
        if delegate is None:
            continue
        target = by_name.get(_key(delegate))
        if target is None:
            report(
                _line(fn, "structured_delegate"),
                "structured-delegate-missing",
                f"{fn.func.name} delegates to '{delegate}', which is not declared",
                "declare the structured out variant, or fix the name",
            )
        elif not target.structured:
            report(
                _line(fn, "structured_delegate"),
                "structured-delegate-not-structured",
                f"{fn.func.name} delegates to '{delegate}', which is not 'structured: True'",
                f"add `structured: True` to {delegate} (line {target.loc.line})",
            )
        elif target.func.functional_signature() != fn.func.functional_signature():
            report(
                _line(fn, "structured_delegate"),
                "structured-delegate-mismatch",
                f"{fn.func.name} delegates to '{delegate}', whose signature differs",
                f"{delegate} computes `{target.func.functional_signature()}`",
            )


def _check_autogen(functions, by_name, report) -> None:
    generated: dict[tuple[str, str], NativeFunction] = {}
    for fn in functions:
        if not fn.autogen:
            continue
        targets = autogen_targets(fn)
        for name in fn.autogen:
            key = _key(name)
            line = _line(fn, "autogen")
            if name.namespace:
                report(line, "autogen-invalid", f"autogen name '{name}' has a namespace")
            elif key not in targets:
                allowed = ", ".join(f"{n}.{o}" if o else n for n, o in targets) or "nothing"
                report(
                    line,
                    "autogen-invalid",
                    f"{fn.func.name} cannot autogen '{name}'",
                    f"it can generate: {allowed}",
                )
            elif key in by_name:
                report(
                    line,
                    "autogen-invalid",
                    f"{fn.func.name} autogens '{name}', which is already declared at line "
                    f"{by_name[key].loc.line}",
                    "remove it from autogen or remove the declaration",
                )
            elif key in generated and (
                generated[key].func.functional_signature() != fn.func.functional_signature()
            ):
                report(
                    line,
                    "autogen-invalid",
                    f"'{name}' is autogenerated twice (also by {generated[key].func.name}, "
                    "a different function)",
                )
            else:
                generated[key] = fn
