"""Rules about one entry's schema: naming, alias annotations, `method` needing `self`.

Each rule reports through `report(line, code, message, hint)`; the line is the entry's
`func:` line. Cross-entry rules (overloads, delegates, autogen) are in `cross_rules.py`.
"""

from __future__ import annotations

from pyaten.declarations.model import NativeFunction
from pyaten.declarations.reporting import Report
from pyaten.schema import SchemaError
from pyaten.schema.model import Annotation, FunctionSchema, SchemaKind

__all__ = ["check_schema", "classify_schema_error"]


# Schema rules that `pyaten.schema.parse` itself enforces, told apart by the problem's wording
# so each keeps its own diagnostic code: (words in SchemaError.problem, code, hint); the
# first match wins.
_SCHEMA_RULE_CODES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (
        ("out argument", "mutable-annotated"),
        "out-not-mutable",
        "out arguments are keyword-only and mutable: `*, Tensor(a!) out`",
    ),
    (
        ("cannot follow out arguments",),
        "out-not-last",
        "out arguments come last, after every other keyword-only argument",
    ),
    (("out argument", "keyword-only"), "out-not-keyword-only", "out arguments come after `*`"),
    (
        ("return aliases",),
        "return-alias-unknown",
        "annotate the aliased argument with the same letter, e.g. `Tensor(a) self`",
    ),
    (
        ("in-place operator",),
        "inplace-naming",
        "an in-place op (trailing '_') takes `Tensor(a!) self` and returns `Tensor(a!)`",
    ),
)


def classify_schema_error(exc: SchemaError) -> tuple[str, str]:
    """The diagnostic code and hint for a schema that `parse` rejected."""
    problem = exc.problem
    for words, code, hint in _SCHEMA_RULE_CODES:
        if all(w in problem for w in words):
            return code, hint
    return "schema-syntax", ""


def _line(fn: NativeFunction, key: str) -> int:
    """The line of `key` in the entry, or the entry's line for records built by hand."""
    raw = fn.raw
    return raw.line_of(key) if hasattr(raw, "line_of") else fn.loc.line


def check_schema(fn: NativeFunction, report: Report) -> None:
    """Run every single-schema rule on `fn`."""
    func = fn.func
    line = _line(fn, "func")
    name = func.name
    if "method" in fn.variants and func.self_arg is None:
        report(
            _line(fn, "variants"),
            "method-without-self",
            f"{name} is a 'method' variant but has no 'self' argument",
            "rename the tensor argument to `self`, or drop `method` from variants",
        )
    _check_out_arguments(fn, line, report)
    _check_return_aliases(fn, line, report)
    _check_inplace_naming(fn, line, report)


def _check_out_arguments(fn: NativeFunction, line: int, report: Report) -> None:
    func = fn.func
    seen_out = False
    for arg in func.arguments:
        if arg.is_out:
            seen_out = True
            continue
        looks_out = (
            arg.kwarg_only
            and arg.type.is_tensor_like()
            and (seen_out or arg.name.startswith("out"))
        )
        if looks_out and not arg.is_write:
            report(
                line,
                "out-not-mutable",
                f"{func.name}: out argument '{arg.name}' is not mutable-annotated",
                f"write `{arg.type.annotated(_write_hint(func))} {arg.name}`",
            )


def _write_hint(func: FunctionSchema) -> Annotation:
    """A write annotation with the first alias letter the schema does not use yet."""
    used = {s for a in func.arguments if a.annotation for s in a.annotation.alias_set}
    for letter in "abcdefghijklmnopqrstuvwxyz":
        if letter not in used:
            return Annotation((letter,), is_write=True)
    return Annotation(("z",), is_write=True)


def _check_return_aliases(fn: NativeFunction, line: int, report: Report) -> None:
    func = fn.func
    sets: set[str] = set()
    for arg in func.arguments:
        if arg.annotation is not None:
            sets.update(arg.annotation.alias_set)
            sets.update(arg.annotation.alias_set_after)
    for i, ret in enumerate(func.returns):
        ann = ret.annotation
        if ann is None:
            continue
        missing = [s for s in ann.alias_set if s != "*" and s not in sets]
        if missing:
            what = f"return '{ret.name}'" if ret.name else f"return {i}"
            report(
                line,
                "return-alias-unknown",
                f"{func.name}: {what} aliases '{missing[0]}', which no argument carries",
                "annotate the aliased argument with the same letter, e.g. `Tensor(a) self`, "
                "or drop the annotation from the return",
            )


def _check_inplace_naming(fn: NativeFunction, line: int, report: Report) -> None:
    func = fn.func
    name = func.name
    self_arg = func.self_arg
    if name.inplace:
        if func.out:
            report(
                line,
                "inplace-naming",
                f"{name} has out arguments but its name ends in '_' (in-place)",
                f"name the out variant `{name.base}.out`",
            )
            return
        if self_arg is None or not self_arg.is_write:
            report(
                line,
                "inplace-naming",
                f"{name} is named in-place (trailing '_') but does not mutate 'self'",
                "annotate `Tensor(a!) self` or drop the trailing '_'",
            )
            return
        if self_arg.type.is_tensor_like() and not self_arg.type.is_list():
            if len(func.returns) != 1 or func.returns[0].annotation != self_arg.annotation:
                report(
                    line,
                    "inplace-naming",
                    f"{name} is in-place but does not return 'self'",
                    f"return `Tensor({self_arg.annotation})`",
                )
        elif func.returns:
            report(
                line,
                "inplace-naming",
                f"{name} mutates a non-Tensor 'self' in place, so it must return nothing",
                "write `-> ()`",
            )
        return
    if (
        func.kind is SchemaKind.functional
        and self_arg is not None
        and self_arg.is_write
        and len(func.returns) == 1
        and func.returns[0].annotation == self_arg.annotation
    ):
        report(
            line,
            "inplace-naming",
            f"{name} mutates and returns 'self' but its name does not end in '_'",
            f"rename it `{name.name}_`",
        )
