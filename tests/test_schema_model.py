"""The schema model: names, types, defaults, kinds, printing, and the `pyaten schema` command."""

from __future__ import annotations

import dataclasses
import math
import pathlib
import pickle
import re

import pytest

from pyaten.cli import main
from pyaten.schema import (
    NO_DEFAULT,
    Annotation,
    Argument,
    BaseType,
    CustomClassType,
    ListType,
    OperatorName,
    OptionalType,
    SchemaKind,
    parse,
    parse_type,
)

torchgen = pytest.importorskip("torchgen")
from torchgen.model import Type as TorchgenType  # noqa: E402


@pytest.mark.parametrize(
    "text,namespace,name,overload,base,inplace",
    [
        ("aten::add_.Tensor", "aten", "add_", "Tensor", "add", True),
        ("add", "", "add", "", "add", False),
        ("__iand__.Scalar", "", "__iand__", "Scalar", "__and__", True),
        ("__and__.Scalar", "", "__and__", "Scalar", "__and__", False),
        ("myops::__lshift__", "myops", "__lshift__", "", "__lshift__", False),
        ("_foreach_add_.List", "", "_foreach_add_", "List", "_foreach_add", True),
    ],
)
def test_operator_name_table(text, namespace, name, overload, base, inplace):
    self_ann = "Tensor(a!) self" if inplace else "Tensor self"
    ret = "Tensor(a!)" if inplace else "Tensor"
    schema = parse(f"{text}({self_ann}) -> {ret}")
    op = schema.name
    assert (op.namespace, op.name, op.overload, op.base, op.inplace) == (
        namespace,
        name,
        overload,
        base,
        inplace,
    )
    assert op.qualified == str(op) == text
    assert op.unqualified == text.rpartition("::")[2]


TYPES = [
    "Tensor", "Tensor?", "Tensor[]", "Tensor?[]", "int[2]", "SymInt[]?", "bool[3]", "float[]",
    "Scalar?", "ScalarType", "Layout?", "Device", "MemoryFormat?", "Generator?", "str?",
    "Storage", "Stream", "DeviceIndex", "QScheme", "SymBool", "Dimname[]", "Any", "int[][]",
]  # fmt: skip


@pytest.mark.parametrize("text", TYPES)
def test_parse_type_round_trips(text):
    typ = parse_type(text)
    assert str(typ) == text
    if "Dimname" not in text and "Any" not in text and "[][]" not in text:
        assert str(TorchgenType.parse(text)) == text


def test_type_structure_and_helpers():
    assert parse_type("Tensor?[]") == ListType(OptionalType(BaseType("Tensor")), None)
    assert parse_type("int[2]?") == OptionalType(ListType(BaseType("int"), 2))
    for text in ["Tensor", "Tensor?", "Tensor[]", "Tensor?[]", "Tensor[]?", "Tensor[][]"]:
        assert parse_type(text).is_tensor_like(), text
    for text in ["int", "Scalar", "int[]", "Generator?"]:
        assert not parse_type(text).is_tensor_like(), text
    assert parse_type("int[]").is_list() and not parse_type("int[]?").is_list()
    assert parse_type("int[]?").is_optional() and parse_type("int[]?").is_list_like()
    custom = parse_type(" __torch__.torch.classes.quantized.LinearPackedParamsBase")
    assert custom == CustomClassType("__torch__.torch.classes.quantized.LinearPackedParamsBase")


def test_whitespace_is_normalised_to_the_canonical_form():
    text = "  ns::f( Tensor  x ,int y = 1, *,  Tensor( a! ) out )  ->  ( Tensor(a!)  r ) "
    assert str(parse(text)) == "ns::f(Tensor x, int y=1, *, Tensor(a!) out) -> Tensor(a!) r"


def test_returns_forms():
    assert parse("f(Tensor x) -> ()").returns == ()
    one = parse("f(Tensor x) -> Tensor[] y").returns
    assert len(one) == 1 and one[0].name == "y" and str(one[0].type) == "Tensor[]"
    two = parse("f(Tensor x) -> (Tensor a, int b)")
    assert [r.name for r in two.returns] == ["a", "b"]
    assert str(parse("f(Tensor x) -> (Tensor)")) == "f(Tensor x) -> Tensor"


@pytest.mark.parametrize(
    "decl,value",
    [
        ("int x=-3", -3),
        ("float x=1", 1.0),
        ("float x=1e-05", 1e-05),
        ("float x=inf", math.inf),
        ("float x=-inf", -math.inf),
        ("bool x=True", True),
        ("Scalar x=1", 1),
        ("Scalar x=0.5", 0.5),
        ("int[] x=[0,1]", (0, 1)),
        ("int[] x=[]", ()),
        ("int[2] x=1", 1),
        ("float[] x=[1, 2.5]", (1.0, 2.5)),
        ("str x='fro'", "fro"),
        ('str x="a\\"b"', 'a"b'),
        ("int? x=None", None),
        ("int reduction=Mean", "Mean"),
        ("ScalarType? dtype=long", "long"),
        ("MemoryFormat memory_format=contiguous_format", "contiguous_format"),
        ("Layout layout=strided", "strided"),
    ],
)
def test_default_values(decl, value):
    arg = parse(f"f({decl}) -> Tensor").arguments[0]
    assert arg.default == value and type(arg.default) is type(value)
    assert arg.default_text == decl.split("=", 1)[1]
    assert arg.yaml_text() == decl


def test_nan_default():
    arg = parse("f(float x=nan) -> Tensor").arguments[0]
    assert math.isnan(arg.default)


def test_no_default_sentinel():
    arg = parse("f(Tensor x) -> Tensor").arguments[0]
    assert arg.default is NO_DEFAULT and arg.default_text is None and not arg.has_default
    assert pickle.loads(pickle.dumps(NO_DEFAULT)) is NO_DEFAULT


def test_programmatic_argument_prints_its_default():
    arg = Argument("dims", ListType(BaseType("int"), None), default=(0, -1), kwarg_only=True)
    assert arg.yaml_text() == "int[] dims=[0,-1]"
    assert str(arg) == "int[] dims=[0, -1]"
    ann = Annotation(("a",), True, ())
    assert str(Argument("out", BaseType("Tensor"), ann)) == "Tensor(a!) out"
    assert str(Annotation(("a",), False, ("*",))) == "a -> *"


@pytest.mark.parametrize(
    "text,kind,view",
    [
        ("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", "functional", 0),
        ("add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", "inplace", 0),
        ("add.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", "out", 0),
        ("f(Tensor x, Tensor(a!) state) -> Tensor", "mutable", 0),
        ("f.out(Tensor x, *, Tensor(a!) out, Tensor(b!) _scratch_t) -> Tensor(a!)", "scratch", 0),
        ("view(Tensor(a) self, SymInt[] size) -> Tensor(a)", "functional", 1),
        ("unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]", "functional", 1),
    ],
)
def test_kind_and_view(text, kind, view):
    schema = parse(text)
    assert schema.kind is SchemaKind[kind]
    assert schema.is_view == bool(view)


def test_argument_views_and_tensor_indices():
    schema = parse(
        "f.out(Tensor self, int k, Tensor? w=None, *, bool flag=False, "
        "Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)"
    )
    assert [a.name for a in schema.positional] == ["self", "k", "w"]
    assert [a.name for a in schema.kwarg_only] == ["flag"]
    assert [a.name for a in schema.out] == ["values", "indices"]
    assert schema.self_arg is schema.arguments[0]
    assert schema.tensor_arg_indices == (0, 2, 4, 5)
    assert all(a.is_write for a in schema.out)


def test_functional_signature_is_shared_and_hashable():
    texts = [
        "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
        "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
        "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    ]
    sigs = {parse(t).functional_signature() for t in texts}
    assert len(sigs) == 1
    assert str(sigs.pop()) == "add(Tensor self, Tensor other, *, Scalar alpha) -> Tensor"
    other = parse("add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor")
    assert other.functional_signature() not in {parse(t).functional_signature() for t in texts}


def test_schemas_are_frozen_hashable_and_picklable():
    text = "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)"
    a, b = parse(text), parse(text)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    _ = a.kind  # filling the derived cache must not change equality
    assert a == b and hash(a) == hash(b)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.name = OperatorName("", "sub", "")  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(a)) == a


def test_cli_describes_a_schema(capsys):
    text = "aten::topk.values(Tensor self, SymInt k, int dim=-1, *, Tensor(a!) values, " \
        "Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)"
    assert main(["schema", text]) == 0
    out = capsys.readouterr().out
    assert "kind:       out" in out and "view:       no" in out
    assert re.search(r"dim\s+int\s+positional\s+-\s+default -1 = -1", out)
    assert re.search(r"values\s+Tensor\s+out\s+alias a \(written\)", out)


def test_cli_reports_errors_with_caret(capsys):
    assert main(["schema", "f(Tensr x) -> Tensor"]) == 1
    err = capsys.readouterr().err
    assert "unknown type 'Tensr'" in err
    lines = err.splitlines()
    assert lines[-1].index("^") == lines[-2].index("Tensr")


def test_docs_example_prints_what_its_comments_say(capsys):
    doc = pathlib.Path(__file__).resolve().parents[1] / "docs/schema.md"
    code = re.search(r"```python\n(.*?)```", doc.read_text(), re.S).group(1)
    exec(compile(code, "docs/schema.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    expected = [
        line.split("#", 1)[1].strip()
        for line in code.splitlines()
        if line.lstrip().startswith("print(") and "#" in line
    ]
    assert printed[: len(expected)] == expected
    assert printed[-1].index("^") - 2 == 15
