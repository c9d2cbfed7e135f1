"""`pyaten schema "<text>"`: parse a function schema and show its structure, or the error."""

from __future__ import annotations

import argparse
import sys

from pyaten.schema import NO_DEFAULT, FunctionSchema, SchemaError, parse

HELP = "parse a function schema and print its arguments, returns, kind and aliasing"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "text", help='a schema, e.g. "add.Tensor(Tensor self, Tensor other) -> Tensor"'
    )


def _annotation_text(ann) -> str:
    if ann is None:
        return "-"
    text = "alias " + "|".join(ann.alias_set)
    if ann.is_write:
        text += " (written)"
    if ann.alias_set_after:
        text += " -> " + "|".join(ann.alias_set_after)
    return text


def describe(schema: FunctionSchema) -> str:
    """A readable, multi-line description of a parsed schema."""
    name = schema.name
    lines = [
        f"schema:     {schema}",
        f"name:       {name.name}"
        + (f"  (namespace {name.namespace})" if name.namespace else "")
        + (f"  overload {name.overload}" if name.overload else "  (no overload name)"),
        f"base name:  {name.base}{'  (in-place)' if name.inplace else ''}",
        f"kind:       {schema.kind.name}",
        f"view:       {'yes' if schema.is_view else 'no'}",
        "arguments:" if schema.arguments else "arguments:  (none)",
    ]
    for arg in schema.arguments:
        role = "out" if arg.is_out else ("keyword-only" if arg.kwarg_only else "positional")
        default = ""
        if arg.default is not NO_DEFAULT:
            default = f"  default {arg.default_text} = {arg.default!r}"
        lines.append(
            f"  {arg.name:<16} {str(arg.type):<14} {role:<12} {_annotation_text(arg.annotation)}"
            f"{default}"
        )
    lines.append("returns:" if schema.returns else "returns:    (none)")
    for i, ret in enumerate(schema.returns):
        label = ret.name or f"#{i}"
        lines.append(f"  {label:<16} {str(ret.type):<14} {_annotation_text(ret.annotation)}")
    lines.append(f"functional signature: {schema.functional_signature()}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        schema = parse(args.text)
    except SchemaError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(describe(schema))
    return 0
