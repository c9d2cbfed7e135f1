"""The rules a parsed schema must keep, each raising `SchemaError` at the offending column.

- argument names are unique;
- out arguments (keyword-only, mutable-annotated) come after the other keyword-only
  arguments, and a keyword-only argument named `out` must be mutable-annotated;
- a mutated argument that is returned is either `self` or keyword-only (an out argument);
- every alias set a return names belongs to some argument;
- an in-place name (`add_`, `__iadd__`) has a mutable-annotated `self`.
"""

from __future__ import annotations

import re

from pyaten.schema.errors import SchemaError
from pyaten.schema.model import FunctionSchema

_OUT_NAME = re.compile(r"out\d*$")


def validate(
    schema: FunctionSchema,
    text: str,
    name_col: int,
    arg_cols: list[int],
    ret_cols: list[int],
    star_col: int,
) -> None:
    """Check `schema` (parsed from `text`); the column lists locate each argument and return."""
    args = schema.arguments
    seen: set[str] = set()
    alias_names: set[str] = set()
    out_started = False
    for arg, col in zip(args, arg_cols):
        if arg.name in seen:
            raise SchemaError(f"duplicate argument name '{arg.name}'", text, _name_col(text, col))
        seen.add(arg.name)
        ann = arg.annotation
        if ann is not None:
            alias_names.update(ann.alias_set)
            alias_names.update(ann.alias_set_after)
        if arg.is_out:
            out_started = True
        elif arg.kwarg_only:
            if _OUT_NAME.match(arg.name) and arg.type.is_tensor_like():
                raise SchemaError(
                    f"out argument '{arg.name}' must be mutable-annotated, "
                    f"e.g. Tensor(a!) {arg.name}",
                    text,
                    col,
                )
            if out_started:
                raise SchemaError(
                    f"keyword-only argument '{arg.name}' cannot follow out arguments",
                    text,
                    col,
                )

    write_returns = {r.annotation for r in schema.returns if r.is_write}
    for arg, col in zip(args, arg_cols):
        if (
            arg.is_write
            and not arg.kwarg_only
            and arg.name != "self"
            and arg.annotation in write_returns
        ):
            where = f" (after '*' at column {star_col})" if star_col >= 0 else " (after '*')"
            raise SchemaError(
                f"out argument '{arg.name}' is returned, so it must be keyword-only{where}",
                text,
                col,
            )

    for ret, col in zip(schema.returns, ret_cols):
        ann = ret.annotation
        if ann is None:
            continue
        for alias in ann.alias_set:
            if alias not in alias_names:
                raise SchemaError(
                    f"return aliases '{alias}', but no argument has alias set '{alias}'",
                    text,
                    text.find("(", col) + 1,
                )

    if schema.name.inplace:
        self_arg = schema.self_arg
        if self_arg is None:
            raise SchemaError(
                f"in-place operator '{schema.name.name}' needs a 'self' argument",
                text,
                name_col,
            )
        if not self_arg.is_write:
            col = arg_cols[args.index(self_arg)]
            raise SchemaError(
                f"in-place operator '{schema.name.name}' must mark self mutable, "
                "e.g. Tensor(a!) self",
                text,
                col,
            )


def _name_col(text: str, col: int) -> int:
    """Column of the argument name in the argument starting at `col`."""
    m = re.compile(r"\S+\s+").match(text, col)
    return m.end() if m else col
