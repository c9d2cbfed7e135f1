"""Property tests: schemas generated from the grammar round-trip and agree with torch's own
parser; mangled real schemas either parse or raise SchemaError, never anything else."""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyaten.schema import SchemaError, parse
from pyaten.schema.defaults import SCALAR_TYPE_NAMES
from pyaten.schema.validate import RESERVED

torch = pytest.importorskip("torch")
torchgen = pytest.importorskip("torchgen")

from _helpers import torch_schemas  # noqa: E402

REAL = torch_schemas()

# SCHEMA_EXAMPLES=3000 runs a deeper search locally.
SETTINGS = settings(
    max_examples=int(os.environ.get("SCHEMA_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Base types torch's C++ parser knows too, so generated schemas can be checked against it.
BASES = [
    "Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType", "Layout",
    "Device", "MemoryFormat", "Generator", "Storage", "Stream", "QScheme", "SymBool",
]  # fmt: skip
# Every dtype word torch's parser takes (each prints as its c10 ScalarType number).
SCALAR_TYPES = sorted(SCALAR_TYPE_NAMES)
MEMORY_FORMATS = ["contiguous_format"]

identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(
    lambda s: not re.fullmatch(r"out\d*|self|_scratch_.*", s)
    and not s.endswith("_")
    and s not in RESERVED
)


@st.composite
def types(draw):
    """(text without annotation, base name, list size marker or None, optional?)."""
    base = draw(st.sampled_from(BASES))
    shape = draw(st.sampled_from(["", "?", "[]", "[N]", "[]?", "?[]"]))
    if base != "Tensor" and shape == "?[]":
        shape = "[]"
    size = draw(st.integers(1, 4))
    return base, shape.replace("N", str(size))


# Float defaults whose C++ printing has a special case: whole numbers (`2.`, `-0.` -> `0.`),
# the int64 edge (9.2e18 prints whole, 9.3e18 in exponent form), and 17-digit forms.
FLOAT_EDGES = ["2.0", "0.0", "-0.0", "1.", "5e2", "1e-05", "1e-08", "0.1", "1e15", "9.2e18",
               "9.3e18", "1e300", "-1e19", ".5", "123.456"]  # fmt: skip
# String pieces: plain text, C escapes (printed back escaped) and non-ASCII text (printed, as
# c10 does, byte by byte in signed octal).
STRING_PIECES = ["a", "x", " ", ",", "(", "=", "\\n", "\\t", "\\\\", '\\"', "\\'", "é"]


def scalar_default(draw, base):
    if base in ("int", "SymInt"):
        if base == "int" and draw(st.integers(0, 9)) == 0:
            return "Mean"
        return str(draw(st.integers(-1000, 1000)))
    if base == "float":
        if draw(st.booleans()):
            return draw(st.sampled_from(FLOAT_EDGES))
        # torch's parser fails on subnormals (an IndexError from stod), so leave them out.
        finite = st.floats(-1e25, 1e25, allow_nan=False, allow_infinity=False,
                           allow_subnormal=False)
        value = draw(finite)
        return repr(value)
    if base == "bool":  # torch's parser takes no SymBool defaults
        return draw(st.sampled_from(["True", "False"]))
    if base == "str":
        body = "".join(draw(st.lists(st.sampled_from(STRING_PIECES), max_size=5)))
        quote = draw(st.sampled_from(['"', "'"]))
        if quote == "'":
            body = body.replace("\\'", "")  # torch's lexer ends a '...' string there
        return quote + body + quote
    if base == "Scalar":
        return draw(st.sampled_from(["1", "0.5", "-2", "True", "2.0", "1e-05", "-0.0"]))
    if base == "ScalarType":
        return draw(st.sampled_from(SCALAR_TYPES))
    if base == "MemoryFormat":
        return draw(st.sampled_from(MEMORY_FORMATS))
    if base == "Layout":
        return "strided"
    if base == "Device":
        return draw(st.sampled_from(['"cpu"', '"cuda:1"', "'meta'"]))
    return None


def default_for(draw, base, shape):
    """A default suiting the type, or None when there should be none."""
    if not draw(st.booleans()):
        return None
    if shape.endswith("?") and draw(st.booleans()):
        return "None"
    if shape.startswith("[") and not shape.endswith("?"):
        if base not in ("int", "SymInt", "float", "bool"):
            return None
        if shape[1] != "]" and draw(st.booleans()):
            item = scalar_default(draw, base)
            return "0" if item == "Mean" else item  # a bare word is no list (torch refuses it)
        items = [scalar_default(draw, base) for _ in range(draw(st.integers(0, 3)))]
        return "[" + ",".join(items) + "]"
    if shape in ("?[]", "[]?") or shape.endswith("]?"):
        return None
    return scalar_default(draw, base)


@st.composite
def schemas(draw):
    names = draw(st.lists(identifiers, min_size=0, max_size=6, unique=True))
    kw_count = draw(st.integers(0, len(names)))
    aliases = iter("abcdefghijklmnop")
    parts: list[str] = []
    read_aliases: list[str] = []
    seen_default = False
    for i, name in enumerate(names):
        base, shape = draw(types())
        kwarg = i >= len(names) - kw_count
        if kwarg and "*" not in parts:
            parts.append("*")
        ann = ""
        if base == "Tensor" and draw(st.integers(0, 3)) == 0:
            letter = next(aliases)
            ann = f"({letter})"
            read_aliases.append(letter)
        default = default_for(draw, base, shape)
        if not kwarg and default is None and seen_default:
            default = "None" if shape.endswith("?") else None
            if default is None:
                shape, default = "?", "None"
        seen_default = seen_default or default is not None
        text = f"{base}{ann}{shape} {name}"
        parts.append(text if default is None else f"{text}={default}")
    outs = draw(st.integers(0, 2))
    out_aliases = []
    for j in range(outs):
        if "*" not in parts:
            parts.append("*")
        letter = next(aliases)
        out_aliases.append(letter)
        parts.append(f"Tensor({letter}!) out{j}")
    if out_aliases:
        returns = [f"Tensor({a}!)" for a in out_aliases]
    else:
        count = draw(st.integers(0, 3))
        returns = []
        for _ in range(count):
            base, shape = draw(types())
            ann = ""
            if base == "Tensor" and read_aliases and draw(st.booleans()):
                ann = f"({draw(st.sampled_from(read_aliases))})"
            returns.append(f"{base}{ann}{shape}")
    if draw(st.booleans()):
        used: set[str] = set(names)
        for k, r in enumerate(returns):
            rname = draw(identifiers)
            if rname not in used:
                used.add(rname)
                returns[k] = f"{r} {rname}"
    op = draw(identifiers)
    if draw(st.booleans()):
        op = f"{op}.{draw(identifiers)}"
    if draw(st.booleans()):
        op = f"{draw(identifiers)}::{op}"
    rets = returns[0] if len(returns) == 1 else "(" + ", ".join(returns) + ")"
    return f"{op}({', '.join(parts)}) -> {rets}"


@SETTINGS
@given(schemas())
def test_generated_schemas_round_trip_and_agree_with_torch(text):
    schema = parse(text)
    assert schema.yaml_text() == text
    ref = torch._C.parse_schema(text)
    assert str(schema) == str(ref)
    try:  # the C++ text parses back (when torch's parser takes it: not `Device d=cpu`)
        torch._C.parse_schema(str(ref))
    except RuntimeError:
        pass
    else:
        assert str(parse(str(schema))) == str(schema)
    assert [a.name for a in schema.arguments] == [a.name for a in ref.arguments]
    assert [a.kwarg_only for a in schema.arguments] == [a.kwarg_only for a in ref.arguments]
    assert [a.is_out for a in schema.arguments] == [a.is_out for a in ref.arguments]
    assert [a.has_default for a in schema.arguments] == [
        a.has_default_value() for a in ref.arguments
    ]
    assert [a.is_write for a in schema.arguments] == [
        bool(a.alias_info and a.alias_info.is_write) for a in ref.arguments
    ]
    assert [r.name or "" for r in schema.returns] == [r.name for r in ref.returns]
    assert schema.name.overload == ref.overload_name


TOKENS = [
    "(", ")", "[", "]", ",", "*", "?", "!", "->", "=", " ", "a", "b!", "Tensor", "int",
    "1", "'", '"', "|", ".", "::", "None", "\\", "self", "[2]", "(a)", "out", "_", "-",
]  # fmt: skip


@st.composite
def mangled(draw):
    text = draw(st.sampled_from(REAL))
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        i = draw(st.integers(0, n))
        j = draw(st.integers(i, min(n, i + 6)))
        op = draw(st.sampled_from(["delete", "insert", "replace", "duplicate"]))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(st.sampled_from(TOKENS)) + text[i:]
        elif op == "replace":
            text = text[:i] + draw(st.sampled_from(TOKENS)) + text[j:]
        else:
            text = text[:j] + text[i:j] + text[j:]
    return text


def _parses_or_schema_error(text: str) -> None:
    try:
        schema = parse(text)
    except SchemaError as error:
        assert 0 <= error.column <= len(text)
        assert error.text == text and error.problem
        return
    canonical = str(schema)
    assert str(parse(canonical)) == canonical  # printing is a fixed point


@SETTINGS
@given(mangled())
def test_mangled_real_schemas_parse_or_raise_schema_error(text):
    _parses_or_schema_error(text)


@SETTINGS
@given(st.lists(st.sampled_from(TOKENS + ["x", "f", "->"]), max_size=30).map("".join))
def test_token_soup_parses_or_raises_schema_error(text):
    _parses_or_schema_error(text)
