"""SchemaError: each validation rule rejects with the right problem at the right column."""

from __future__ import annotations

import pytest

from pyaten.schema import SchemaError, parse, parse_type

torch = pytest.importorskip("torch")

# (schema, words the message must contain, the text the caret must point at)
SYNTAX = [
    ("f(Tensor self -> Tensor", "unbalanced '('", "(Tensor"),
    ("f(Tensor self)) -> Tensor", "unbalanced ')'", ") -> Tensor"),
    ("f(Tensor x, int[2 y) -> Tensor", "')' closes '['", ") -> Tensor"),
    ("f(Tensor x, int y=[1,2) -> Tensor", "')' closes '['", ") -> Tensor"),
    ("f(Tensor x) -> (Tensor, Tensor", "unbalanced '('", "(Tensor, Tensor"),
    ("f(Tensr self) -> Tensor", "unknown type 'Tensr'", "Tensr self"),
    ("f(Tensor self) -> Tensr", "unknown type 'Tensr'", "Tensr"),
    ("f(Tensor x, Foo[] y) -> Tensor", "unknown type 'Foo'", "Foo[] y"),
    ("f(Tensor x y) -> Tensor", "expected ',' or ')'", "y) -> Tensor"),
    ("f(Tensor x) Tensor", "expected '->'", "Tensor"),
    ("(Tensor x) -> Tensor", "expected an operator name", "(Tensor x)"),
    ("f(Tensor x,) -> Tensor", "expected an argument type", ") -> Tensor"),
    ("f(Tensor x, int y=) -> Tensor", "expected a default value", ") -> Tensor"),
    ("f(Tensor x, str y=\"abc) -> Tensor", "unterminated string", "\"abc"),
    ("f(Tensor(a!!) x) -> Tensor", "malformed alias annotation", "a!!) x"),
    ("f(Tensor x) -> Tensor y z", "unexpected text after the return", "z"),
]

RULES = [
    ("f(Tensor x, *, *, int y) -> Tensor", "'*' may appear only once", "*, int y"),
    ("f(Tensor self, Tensor self) -> Tensor", "duplicate argument name 'self'", "self) ->"),
    ("f(Tensor a, *, int b, bool a=False) -> Tensor", "duplicate argument name 'a'", "a=False"),
    ("f(int x=1, Tensor y) -> Tensor", "'y' has no default but follows 'x'", "Tensor y"),
    ("min.in(Tensor x) -> Tensor", "'in' is a reserved word", "in("),
    ("not::f(Tensor x) -> Tensor", "'not' is a reserved word", "not::"),
    ("f(Tensor(a -> *) x, int in) -> Tensor", "cannot be an argument name", "in)"),
    ("f(Tensor(a -> *) x) -> Tensor(a) None", "cannot be a return name", "None"),
    (
        "f(Tensor(a -> *) self, int self) -> Tensor",
        "duplicate argument name 'self'",
        "self) ->",
    ),
    ("f(int x=1.5) -> Tensor", "argument 'x': default 1.5 does not suit type int", "1.5"),
    ("f(int x=True) -> Tensor", "does not suit type int", "True"),
    ("f(bool x=1) -> Tensor", "does not suit type bool", "1)"),
    ("f(str x=1) -> Tensor", "does not suit type str", "1)"),
    ("f(str x=None) -> Tensor", "does not suit type str", "None"),
    ("f(Tensor x=None) -> Tensor", "does not suit type Tensor", "None"),
    ("f(int[] x=1) -> Tensor", "does not suit type int[]", "1)"),
    ("f(int[2] x=Mean) -> Tensor", "does not suit type int[2]", "Mean"),
    ("f(int[2] x=[1,True]) -> Tensor", "does not suit element type int", "True]"),
    ("f(int[]? x=[1]) -> Tensor", "list default does not suit type int[]?", "[1]"),
    ("f(int x=[1]) -> Tensor", "list default does not suit type int", "[1]"),
    ("f(ScalarType? x=longer) -> Tensor", "does not suit type ScalarType?", "longer"),
    ("f(int x=Sum) -> Tensor", "does not suit type int", "Sum"),
    ("f(MemoryFormat x=strided) -> Tensor", "does not suit type MemoryFormat", "strided"),
    ("f(Tensor x, Tensor(a!) out) -> Tensor(a!)", "must be keyword-only", "Tensor(a!) out"),
    ("f(Tensor x, *, Tensor out) -> Tensor", "must be mutable-annotated", "Tensor out"),
    (
        "f(Tensor x, *, Tensor(a!) out, int y) -> Tensor(a!)",
        "cannot follow out arguments",
        "int y",
    ),
    ("f(Tensor self) -> Tensor(b)", "no argument has alias set 'b'", "b)"),
    ("f(Tensor(a) self) -> (Tensor, Tensor(b))", "alias set 'b'", "b))"),
    ("f_(Tensor self) -> Tensor", "in-place operator 'f_' must mark self mutable", "Tensor self"),
    ("f_(Tensor x) -> Tensor", "needs a 'self' argument", "f_("),
    ("__iadd__(Tensor self) -> Tensor", "must mark self mutable", "Tensor self"),
    ("f(Tensor x, *) -> Tensor", "'*' must be followed by keyword-only", "*)"),
    ("f(Tensor?? x) -> Tensor", "'?' repeated", "? x"),
    ("f(Tensor(a|b!) x) -> Tensor", "mutable alias annotation names one alias set", "a|b!"),
]


def _check(text: str, words: str, at: str) -> SchemaError:
    with pytest.raises(SchemaError) as info:
        parse(text)
    error = info.value
    assert words in str(error)
    assert error.text == text
    assert text[error.column :].startswith(at), (text, error.column)
    caret_line = str(error).splitlines()[-1]
    assert caret_line.index("^") - 2 == error.column  # the caret sits under the column
    return error


@pytest.mark.parametrize("text,words,at", SYNTAX)
def test_syntax_errors_point_at_the_problem(text, words, at):
    _check(text, words, at)


@pytest.mark.parametrize("text,words,at", SYNTAX)
def test_torch_also_rejects_syntax_errors(text, words, at):
    with pytest.raises(RuntimeError):
        torch._C.parse_schema(text)


@pytest.mark.parametrize("text,words,at", RULES)
def test_rule_violations_point_at_the_problem(text, words, at):
    _check(text, words, at)


def test_schema_error_is_a_value_error():
    assert issubclass(SchemaError, ValueError)


@pytest.mark.parametrize(
    "text",
    ["", "   ", "f", "f(", "f(Tensor", "f(Tensor x", "f(Tensor x)", "f(Tensor x) ->", "->"],
)
def test_truncated_schemas_raise_schema_error(text):
    with pytest.raises(SchemaError):
        parse(text)


def test_parse_rejects_non_strings_with_type_error():
    with pytest.raises(TypeError, match="parse"):
        parse(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text,words",
    [("Tensr", "unknown type"), ("int[", "unbalanced"), ("Tensor(a)", "alias annotations")],
)
def test_parse_type_errors(text, words):
    with pytest.raises(SchemaError, match=words):
        parse_type(text)
