"""`parse(text) -> FunctionSchema` and `parse_type(text) -> Type`.

Note: how the parser is fast and still precise
    Valid text takes a fast path: one compiled regex consumes a whole argument (type token,
    name, default, separator), and the type token and default are converted through caches
    keyed by their text, so each distinct `Tensor(a!)` or `int[2]=1` is analysed once per
    process. Only when a regex fails does the parser slow down: `_diagnose` walks the same
    grammar piece by piece to find the exact column and name the problem.
"""

from __future__ import annotations

import re

from pyaten.schema.defaults import DefaultError, convert_default
from pyaten.schema.errors import SchemaError
from pyaten.schema.model import (
    BASE_TYPE_NAMES,
    CUSTOM_CLASS_PREFIX,
    NO_DEFAULT,
    Annotation,
    Argument,
    BaseType,
    CustomClassType,
    FunctionSchema,
    ListType,
    OperatorName,
    OptionalType,
    Return,
    Type,
)
from pyaten.schema.validate import validate

_IDENT = r"[A-Za-z_]\w*"
_TYPE_TOKEN = r"[A-Za-z_][\w.]*(?:\([^()]*\))?(?:\?|\[\d*\])*"
_DEFAULT = r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\[[^\[\]()]*\]|[^\s,()\[\]="']+"""

_HEAD = re.compile(rf"\s*(?:({_IDENT})::)?({_IDENT})(?:\.(\w+))?\s*\(\s*")
_ARG = re.compile(rf"({_TYPE_TOKEN})\s+({_IDENT})(?:\s*=\s*({_DEFAULT}))?\s*([,)])\s*")
_STAR = re.compile(r"\*\s*([,)])\s*")
_ARROW = re.compile(r"->\s*")
_RET = re.compile(rf"({_TYPE_TOKEN})(?:\s+({_IDENT}))?\s*([,)])\s*")
_RET_SINGLE = re.compile(rf"({_TYPE_TOKEN})(?:\s+({_IDENT}))?\s*$")

_TYPE_PARTS = re.compile(r"([A-Za-z_][\w.]*)(?:\(([^()]*)\))?((?:\?|\[\d*\])*)")
_SUFFIX = re.compile(r"\?|\[(\d*)\]")
_ALIAS_SET = r"[a-z]\w*(?:\s*\|\s*[a-z]\w*)*"
_ANNOTATION = re.compile(rf"\s*({_ALIAS_SET})\s*(!?)\s*(?:->\s*(\*|{_ALIAS_SET}))?\s*")
_CUSTOM_CLASS = re.compile(r"__torch__\.torch\.classes\.\w+(?:\.\w+)+")
_BAR = re.compile(r"\s*\|\s*")

# Caches of successful conversions (see the module note).
_TYPE_CACHE: dict[str, tuple[Type, Annotation | None]] = {}
_DEFAULT_CACHE: dict[tuple[Type, str], object] = {}


def clear_caches() -> None:
    """Forget cached type tokens and defaults (benchmarks use it to time cold parses)."""
    _TYPE_CACHE.clear()
    _DEFAULT_CACHE.clear()


# ---------------------------------------------------------------------------------------------
# Type tokens and annotations
# ---------------------------------------------------------------------------------------------


def _annotation(text: str, inner: str, col: int) -> Annotation:
    m = _ANNOTATION.fullmatch(inner)
    if m is None:
        raise SchemaError(f"malformed alias annotation '({inner})'", text, col)
    before = tuple(_BAR.split(m.group(1)))
    is_write = m.group(2) == "!"
    after = tuple(_BAR.split(m.group(3))) if m.group(3) else ()
    if is_write and len(before) > 1:
        raise SchemaError(
            f"a mutable alias annotation names one alias set, got '({inner})'", text, col
        )
    return Annotation(before, is_write, after)


def _type_token(text: str, token: str, col: int) -> tuple[Type, Annotation | None]:
    """Type and annotation of a token such as `Tensor(a!)?[]`, starting at column `col`."""
    cached = _TYPE_CACHE.get(token)
    if cached is not None:
        return cached
    m = _TYPE_PARTS.fullmatch(token)
    if m is None:
        raise SchemaError(f"malformed type '{token}'", text, col)
    base, inner, suffixes = m.groups()
    typ: Type
    if base in BASE_TYPE_NAMES:
        typ = BaseType(base)
    elif base.startswith(CUSTOM_CLASS_PREFIX) and _CUSTOM_CLASS.fullmatch(base):
        typ = CustomClassType(base)
    else:
        raise SchemaError(f"unknown type '{base}'", text, col)
    ann = None if inner is None else _annotation(text, inner, col + len(base) + 1)
    scol = col + m.start(3)
    for s in _SUFFIX.finditer(suffixes):
        if s.group(0) == "?":
            if isinstance(typ, OptionalType):
                raise SchemaError(f"'?' repeated in type '{token}'", text, scol + s.start())
            typ = OptionalType(typ)
        else:
            size = s.group(1)
            typ = ListType(typ, int(size) if size else None)
    _TYPE_CACHE[token] = (typ, ann)
    return typ, ann


def _default(text: str, arg_name: str, typ: Type, default: str, col: int) -> object:
    key = (typ, default)
    try:
        return _DEFAULT_CACHE[key]
    except KeyError:
        pass
    try:
        value = convert_default(typ, default)
    except DefaultError as e:
        raise SchemaError(f"argument '{arg_name}': {e.problem}", text, col + e.offset) from None
    _DEFAULT_CACHE[key] = value
    return value


# ---------------------------------------------------------------------------------------------
# Schemas
# ---------------------------------------------------------------------------------------------


def parse(text: str, *, validate_rules: bool = True) -> FunctionSchema:
    """Parse `ns::name.overload(args) -> returns` into a validated `FunctionSchema`.

    `validate_rules=False` checks the grammar only, not the rules of native_functions.yaml
    (`pyaten.schema.validate`): PyTorch's own C++ parser accepts, for operators outside that
    file, in-place names without `self` and positional out arguments."""
    if not isinstance(text, str):
        raise TypeError(f"parse(): schema must be a str, got {type(text).__name__}")
    head = _HEAD.match(text)
    if head is None:
        _diagnose(text, 0, "head")
    name = OperatorName(head.group(1) or "", head.group(2), head.group(3) or "")
    pos = head.end()
    args: list[Argument] = []
    cols: list[int] = []
    kwarg_only = False
    star_col = -1
    if text.startswith(")", pos):
        pos = _skip_ws(text, pos + 1)
    else:
        arg_match = _ARG.match
        while True:
            m = arg_match(text, pos)
            if m is None:
                if text.startswith("*", pos):
                    s = _STAR.match(text, pos)
                    if s is None or kwarg_only or s.group(1) == ")":
                        _diagnose(text, pos, "star")
                    kwarg_only = True
                    star_col = pos
                    pos = s.end()
                    continue
                _diagnose(text, pos, "argument")
            token, arg_name, default_text, sep = m.groups()
            typ, ann = _type_token(text, token, pos)
            if default_text is None:
                default = NO_DEFAULT
            else:
                default = _default(text, arg_name, typ, default_text, m.start(3))
            is_out = kwarg_only and ann is not None and ann.is_write
            args.append(
                Argument(arg_name, typ, ann, default, default_text, kwarg_only, is_out)
            )
            cols.append(pos)
            pos = m.end()
            if sep == ")":
                break
    arrow = _ARROW.match(text, pos)
    if arrow is None:
        _diagnose(text, pos, "arrow")
    pos = arrow.end()
    returns, ret_cols = _returns(text, pos)
    schema = FunctionSchema(name, tuple(args), returns)
    if validate_rules:
        validate(schema, text, head.start(2), cols, ret_cols, star_col)
    return schema


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _returns(text: str, pos: int) -> tuple[tuple[Return, ...], list[int]]:
    rets: list[Return] = []
    cols: list[int] = []
    if not text.startswith("(", pos):
        m = _RET_SINGLE.match(text, pos)
        if m is None:
            _diagnose(text, pos, "return")
        typ, ann = _type_token(text, m.group(1), pos)
        return (Return(m.group(2), typ, ann),), [pos]
    pos = _skip_ws(text, pos + 1)
    if text.startswith(")", pos):
        pos = _skip_ws(text, pos + 1)
    else:
        while True:
            m = _RET.match(text, pos)
            if m is None:
                _diagnose(text, pos, "returns")
            typ, ann = _type_token(text, m.group(1), pos)
            rets.append(Return(m.group(2), typ, ann))
            cols.append(pos)
            pos = m.end()
            if m.group(3) == ")":
                break
    if pos != len(text):
        _diagnose(text, pos, "end")
    return tuple(rets), cols


def parse_type(text: str) -> Type:
    """Parse a type such as `int[2]?`, `Tensor?[]` or `__torch__.torch.classes.ns.Cls`."""
    if not isinstance(text, str):
        raise TypeError(f"parse_type(): type must be a str, got {type(text).__name__}")
    stripped = text.strip()
    col = len(text) - len(text.lstrip())
    m = re.fullmatch(_TYPE_TOKEN, stripped)
    if m is None:
        _check_brackets(text)
        raise SchemaError("malformed type", text, col)
    typ, ann = _type_token(text, stripped, col)
    if ann is not None:
        raise SchemaError(
            "alias annotations belong to arguments and returns, not to bare types",
            text,
            col + stripped.index("("),
        )
    return typ


# ---------------------------------------------------------------------------------------------
# Diagnostics: only reached when the fast path fails
# ---------------------------------------------------------------------------------------------

_OPEN = {"(": ")", "[": "]"}
_CLOSE = {")": "(", "]": "["}
_STRING = re.compile(r""""(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?""")


def _check_brackets(text: str) -> None:
    """Raise at the first bracket without a partner (string literals are skipped)."""
    stack: list[tuple[str, int]] = []
    pos = 0
    n = len(text)
    while pos < n:
        c = text[pos]
        if c in "\"'":
            m = _STRING.match(text, pos)
            end = m.end()
            if text[end - 1] != c or end - pos < 2:
                raise SchemaError("unterminated string literal", text, pos)
            pos = end
            continue
        if c in _OPEN:
            stack.append((c, pos))
        elif c in _CLOSE:
            if not stack:
                raise SchemaError(f"unbalanced '{c}': nothing to close", text, pos)
            opener, where = stack.pop()
            if opener != _CLOSE[c]:
                raise SchemaError(
                    f"'{c}' closes '{opener}' opened at column {where}", text, pos
                )
        elif c == "-" and text.startswith("->", pos):
            pos += 2
            continue
        pos += 1
    if stack:
        opener, where = stack[-1]
        raise SchemaError(f"unbalanced '{opener}': never closed", text, where)


_TYPE_START = re.compile(rf"{_TYPE_TOKEN}")
_NAME_AFTER = re.compile(rf"\s+({_IDENT})")
_DEFAULT_AFTER = re.compile(rf"\s*=\s*({_DEFAULT})?")


def _diagnose(text: str, pos: int, where: str) -> None:
    """Raise a SchemaError naming what is wrong at or after `pos`; never returns."""
    _check_brackets(text)
    if where == "head":
        start = _skip_ws(text, 0)
        m = re.compile(rf"(?:{_IDENT}::)?({_IDENT})(?:\.(\w*))?").match(text, start)
        if m is None:
            raise SchemaError("expected an operator name", text, start)
        if m.group(2) == "":
            raise SchemaError("expected an overload name after '.'", text, m.end())
        raise SchemaError("expected '(' after the operator name", text, _skip_ws(text, m.end()))
    if where == "star":
        s = _STAR.match(text, pos)
        if s is not None and s.group(1) == ")":
            raise SchemaError("'*' must be followed by keyword-only arguments", text, pos)
        if s is not None:
            raise SchemaError("'*' may appear only once", text, pos)
        raise SchemaError("expected ',' after '*'", text, _skip_ws(text, pos + 1))
    if where == "arrow":
        raise SchemaError("expected '->' and the returns after the arguments", text, pos)
    if where == "end":
        raise SchemaError("unexpected text after the returns", text, pos)
    if pos >= len(text):
        raise SchemaError("unexpected end of schema", text, pos)
    is_return = where in ("return", "returns")
    t = _TYPE_START.match(text, pos)
    if t is None:
        what = "a return type" if is_return else "an argument type"
        raise SchemaError(f"expected {what}", text, pos)
    _type_token(text, t.group(0), pos)  # raises for unknown types and bad annotations
    after_type = t.end()
    if text.startswith("(", after_type):
        raise SchemaError("malformed alias annotation", text, after_type)
    n = _NAME_AFTER.match(text, after_type)
    if is_return:
        end = n.end() if n else after_type
        if where == "return":
            raise SchemaError("unexpected text after the return", text, _skip_ws(text, end))
        raise SchemaError("expected ',' or ')' after a return", text, _skip_ws(text, end))
    if n is None:
        raise SchemaError("expected an argument name after the type", text, after_type)
    end = n.end()
    d = _DEFAULT_AFTER.match(text, end)
    if d is not None:
        if d.group(1) is None:
            raise SchemaError("expected a default value after '='", text, _skip_ws(text, end + 1))
        end = d.end()
    raise SchemaError("expected ',' or ')' after an argument", text, _skip_ws(text, end))
