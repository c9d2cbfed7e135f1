"""The rules a parsed schema must keep, each raising `SchemaError` at the offending column.

- no name is a reserved word of PyTorch's schema lexer (`not`, `in`, `None`, ...);
- argument names are unique;
- a positional argument without a default does not follow one with a default;
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

_TYPE_THEN_SPACE = re.compile(r"[A-Za-z_][\w.]*(?:\([^()]*\))?(?:\?|\[\d*\])*\s+")

# Words PyTorch's schema lexer reserves; it rejects them wherever a name is expected.
RESERVED = frozenset(
    """False None True and as assert break class continue def del elif else for global if
    import in is not or pass raise return while with""".split()
)


def _check_reserved(name: str, what: str, text: str, col: int) -> None:
    if name in RESERVED:
        raise SchemaError(f"'{name}' is a reserved word and cannot be {what}", text, col)


def _check_names(schema: FunctionSchema, text: str, name_col: int, arg_cols, ret_cols) -> None:
    op = schema.name
    if op.namespace in RESERVED or op.name in RESERVED or op.overload in RESERVED:
        for word, col in (
            (op.namespace, name_col - len(op.namespace) - 2),
            (op.name, name_col),
            (op.overload, name_col + len(op.name) + 1),
        ):
            _check_reserved(word, "part of an operator name", text, col)
    for arg, col in zip(schema.arguments, arg_cols):
        if arg.name in RESERVED:
            _check_reserved(arg.name, "an argument name", text, _name_col(text, col))
    for ret, col in zip(schema.returns, ret_cols):
        if ret.name in RESERVED:
            _check_reserved(ret.name, "a return name", text, _name_col(text, col))


def validate(
    schema: FunctionSchema,
    text: str,
    name_col: int,
    arg_cols: list[int],
    ret_cols: list[int],
    star_col: int,
) -> None:
    """Check `schema` (parsed from `text`); the column lists locate each argument and return."""
    _check_names(schema, text, name_col, arg_cols, ret_cols)
    args = schema.arguments
    seen: set[str] = set()
    alias_names: set[str] = set()
    out_started = False
    defaulted: str | None = None
    for arg, col in zip(args, arg_cols):
        if arg.name in seen:
            raise SchemaError(f"duplicate argument name '{arg.name}'", text, _name_col(text, col))
        seen.add(arg.name)
        if not arg.kwarg_only:
            if arg.has_default:
                defaulted = defaulted or arg.name
            elif defaulted is not None:
                raise SchemaError(
                    f"positional argument '{arg.name}' has no default but follows "
                    f"'{defaulted}', which has one",
                    text,
                    col,
                )
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
    m = _TYPE_THEN_SPACE.match(text, col)
    return m.end() if m else col
