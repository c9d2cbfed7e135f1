"""Default values: from their source text (`1`, `-inf`, `"L"`, `[0,1]`, `Mean`, `long`) to
Python values, and the check that a default suits its argument's type.

Values: ints, floats (`inf`, `-inf`, `nan` included), bools, None, strings (quoted text,
escapes resolved), tuples for lists, and bare words (`Mean`, `long`, `contiguous_format`) as
strings. `int[2] x=1` keeps the bare 1, as PyTorch broadcasts it when binding.
"""

from __future__ import annotations

import re

from pyaten.schema.model import BaseType, CustomClassType, ListType, OptionalType, Type

# One literal of the default grammar; the literal kind picks the Python conversion.
_LITERAL = re.compile(
    r"""(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      |(?P<float>[-+]?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+
                        |inf|nan))
      |(?P<int>[-+]?\d+)
      |(?P<word>[A-Za-z_][\w:]*)
    """,
    re.VERBOSE,
)
_LIST_ITEM = re.compile(r"""\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^,\s\]]+)\s*(,|$)""")
_ESCAPE = re.compile(r"\\(.)")
_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "0": "\0",
}

# The words PyTorch's own schema parser accepts as defaults (it rejects the rest).
SCALAR_TYPE_NAMES = frozenset(
    """short int long half float double bool bfloat16 cfloat cdouble chalf complex32
    complex64 complex128 uint8 int8 int16 int32 int64 float16 float32 float64 uint16 uint32
    uint64 float8_e5m2 float8_e4m3fn float8_e5m2fnuz float8_e4m3fnuz""".split()
)
LAYOUT_NAMES = frozenset(["strided"])
MEMORY_FORMAT_NAMES = frozenset(["contiguous_format"])
QSCHEME_NAMES: frozenset[str] = frozenset()
REDUCTION_NAMES = frozenset(["Mean"])

# Which literal kinds each base type accepts; words are checked against a name set.
_ACCEPTS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "int": (frozenset({"int"}), REDUCTION_NAMES),
    "SymInt": (frozenset({"int"}), REDUCTION_NAMES),
    "DeviceIndex": (frozenset({"int"}), frozenset()),
    "float": (frozenset({"int", "float"}), frozenset()),
    "SymFloat": (frozenset({"int", "float"}), frozenset()),
    "complex": (frozenset({"int", "float"}), frozenset()),
    "bool": (frozenset({"bool"}), frozenset()),
    "SymBool": (frozenset({"bool"}), frozenset()),
    "Scalar": (frozenset({"int", "float", "bool"}), frozenset()),
    "number": (frozenset({"int", "float", "bool"}), frozenset()),
    "str": (frozenset({"str"}), frozenset()),
    "Dimname": (frozenset({"str"}), frozenset()),
    "Device": (frozenset({"str"}), frozenset()),
    "ScalarType": (frozenset({"int"}), SCALAR_TYPE_NAMES),
    "Layout": (frozenset({"int"}), LAYOUT_NAMES),
    "MemoryFormat": (frozenset({"int"}), MEMORY_FORMAT_NAMES),
    "QScheme": (frozenset({"int"}), QSCHEME_NAMES),
}


class DefaultError(Exception):
    """Raised with a problem and an offset into the default's text; the parser adds context."""

    def __init__(self, problem: str, offset: int = 0) -> None:
        super().__init__(problem)
        self.problem = problem
        self.offset = offset


def _unescape(body: str) -> str:
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def _literal(text: str, offset: int) -> tuple[str, object]:
    """(kind, value) of one literal; kind is none/bool/int/float/str/word."""
    m = _LITERAL.fullmatch(text)
    if m is None:
        raise DefaultError(f"malformed default value {text!r}", offset)
    kind = m.lastgroup
    if kind == "str":
        return "str", _unescape(text[1:-1])
    if kind == "int":
        return "int", int(text)
    if kind == "float":
        return "float", float(text)
    if text == "None":
        return "none", None
    if text in ("True", "False"):
        return "bool", text == "True"
    return "word", text


def _list(text: str) -> list[tuple[str, object, int]]:
    """Items of `[a,b,...]` as (kind, value, offset) triples."""
    inner = text[1:-1]
    items: list[tuple[str, object, int]] = []
    if not inner.strip():
        return items
    pos = 0
    while pos < len(inner):
        m = _LIST_ITEM.match(inner, pos)
        if m is None:
            raise DefaultError(f"malformed list default {text!r}", pos + 1)
        kind, value = _literal(m.group(1), m.start(1) + 1)
        items.append((kind, value, m.start(1) + 1))
        pos = m.end()
        if m.group(2) == "," and pos >= len(inner):
            raise DefaultError(f"trailing ',' in list default {text!r}", pos)
    return items


def _fits(typ: Type, kind: str, value: object) -> bool:
    """Whether one literal suits a non-list type."""
    if isinstance(typ, OptionalType):
        return kind == "none" or _fits(typ.elem, kind, value)
    if isinstance(typ, BaseType):
        if typ.name == "Any":
            return True
        accepted = _ACCEPTS.get(typ.name)
        if accepted is None:  # Tensor, Generator, Storage, ...: only None via Optional
            return False
        kinds, words = accepted
        return kind in kinds or (kind == "word" and value in words)
    if isinstance(typ, CustomClassType):
        return False
    return False


_FLOATING = frozenset({"float", "SymFloat"})


def _as_target(typ: Type, kind: str, value: object) -> object:
    """An int literal for a float argument means the float (`float p=1` is 1.0, as are the
    items of `float[] p=[1]`); PyTorch's parser keeps it an int behind `?` (`float? p=1`)."""
    while isinstance(typ, ListType):
        typ = typ.elem
    if kind == "int" and isinstance(typ, BaseType) and typ.name in _FLOATING:
        return float(value)  # type: ignore[arg-type]
    return value


def convert_default(typ: Type, text: str) -> object:
    """The Python value of default `text` for an argument of type `typ`.

    Raises DefaultError when the text is malformed or does not suit the type.
    """
    list_type = typ.elem if isinstance(typ, OptionalType) else typ
    if text.startswith("["):
        if not text.endswith("]"):
            raise DefaultError(f"unbalanced '[' in default {text!r}", 0)
        if not isinstance(typ, ListType):
            # PyTorch's parser takes list literals only for non-optional list types.
            raise DefaultError(f"a list default does not suit type {typ}", 0)
        items = _list(text)
        for kind, value, offset in items:
            if not _fits(list_type.elem, kind, value):
                raise DefaultError(
                    f"default item {value!r} does not suit element type {list_type.elem}", offset
                )
        return tuple(_as_target(list_type, kind, value) for kind, value, _ in items)
    kind, value = _literal(text, 0)
    if kind == "none" and isinstance(typ, OptionalType):
        return None
    if isinstance(list_type, ListType):
        # A bare item stands for the whole list only when the list has a fixed size, and
        # only a literal does (PyTorch's parser refuses `int[2] x=Mean`).
        if list_type.size is not None and kind != "word" and _fits(list_type.elem, kind, value):
            return _as_target(list_type, kind, value)
        raise DefaultError(f"default {text} does not suit type {typ}", 0)
    if not _fits(typ, kind, value):
        raise DefaultError(f"default {text} does not suit type {typ}", 0)
    return _as_target(typ, kind, value)
