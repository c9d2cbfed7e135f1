"""pyaten.schema against PyTorch's own file: round-trip, and differential against torchgen
(kinds, argument groups, views, functional-signature grouping) and torch's C++ parser
(default values, and `str()` as its printer writes every schema it knows)."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from collections import defaultdict

import pytest

import pyaten
from pyaten.library import Library
from pyaten.schema import NO_DEFAULT, SchemaError, parse

torchgen = pytest.importorskip("torchgen")
torch = pytest.importorskip("torch")
from _helpers import torch_schemas  # noqa: E402
from torchgen.model import FunctionSchema as TorchgenSchema  # noqa: E402

REAL = torch_schemas()


@pytest.fixture(scope="module")
def pairs():
    return [(parse(s), TorchgenSchema.parse(s)) for s in REAL]


def test_real_file_has_all_entries():
    assert len(REAL) == 2584


def test_every_real_schema_round_trips():
    """`yaml_text()` is the file's own spelling (torchgen's str)."""
    mismatched = [s for s in REAL if parse(s).yaml_text() != s]
    assert mismatched == []


def test_str_is_torchs_printing_of_every_real_schema():
    """`str()` is what torch's C++ printer writes (`float eps=1e-05` -> `1.0000000000000001e-05`,
    `reduction=Mean` -> `1`, `SymInt[2] stride=1` -> `[1, 1]`, `DeviceIndex` -> `int`), and
    that text parses back to itself."""
    mismatched = []
    for s in REAL:
        theirs = str(torch._C.parse_schema(s))
        ours = parse(s)
        if str(ours) != theirs or str(parse(theirs)) != theirs:
            mismatched.append((s, str(ours), theirs))
    assert mismatched == []
    assert sum(parse(s).yaml_text() != str(parse(s)) for s in REAL) > 150  # both spellings met


# TorchScript-only forms of the registered operators' schemas, outside native_functions.yaml's
# grammar: type variables and containers (`t`, `Dict(str, t)`, `Future(t)`, ...), varargs
# (`...`), alias sets on list containers (`int[](a!)`) and the wildcard alias `Tensor(*)`.
_TORCHSCRIPT_ONLY = re.compile(
    r"\b(?:t\d?|Dict|Future|Await|RRef|AnyEnumType|AnyClassType)\b|\.\.\.|\[\]\(|\(\*\)"
)


def _registered_schemas() -> list[str]:
    # Read in a fresh interpreter: operators other tests define with torch.library stay
    # registered in this one.
    code = (
        "import json, torch\n"
        "print(json.dumps([str(s) for s in torch._C._jit_get_all_schemas()]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=600)
    return json.loads(out.stdout)


def test_str_is_torchs_printing_of_every_registered_operator():
    """Every schema torch has registered (`torch._C._jit_get_all_schemas()`, already in the
    C++ printer's spelling) parses (grammar only: operators outside native_functions.yaml need
    not keep its rules) and prints back unchanged."""
    texts = _registered_schemas()
    outside, mismatched = [], []
    for text in texts:
        try:
            schema = parse(text, validate_rules=False)
        except SchemaError:
            outside.append(text)
            continue
        if str(schema) != text:
            mismatched.append(text)
    assert mismatched == []
    assert [t for t in outside if not _TORCHSCRIPT_ONLY.search(t)] == []
    assert len(texts) - len(outside) > 4000


LIBRARY_SCHEMAS = [
    "scale(Tensor x, float s=2.0) -> Tensor",
    "eps(Tensor x, float eps=1e-05, float tiny=1e-300, float big=1e20, float neg=-0.0) -> Tensor",
    "words(Tensor x, int r=Mean, ScalarType? d=long, MemoryFormat f=contiguous_format, "
    "Layout l=strided) -> Tensor",
    "lists(Tensor x, SymInt[2] k=1, int[2] p=0, int[1] q=3, int[] r=[1,1], float[] w=[1, 2.5], "
    "bool[2] b=True) -> Tensor",
    "texts(Tensor x, str m='none', str? n=\"a\\tb\", Device d=\"cpu\") -> Tensor",
    "scalars(Tensor x, Scalar a=1.0, Scalar b=1, Scalar c=True, float? q=3) -> Tensor",
    "aliases.out(Tensor(a)[] xs, Tensor(b)?[] ys, *, Tensor(c!) out) -> Tensor(c!)",
    "index(Tensor x, DeviceIndex i=0) -> (Tensor values, Tensor indices)",
]


@pytest.mark.parametrize("text", LIBRARY_SCHEMAS)
def test_library_defined_schema_prints_like_torch(text):
    ns = "fidelity_schema"
    with Library(ns, "DEF") as ours:
        theirs = torch.library.Library(ns, "DEF")
        try:
            ours.define(text)
            theirs.define(text)
            name, _, overload = text.partition("(")[0].partition(".")
            overload = overload or "default"
            mine = getattr(getattr(pyaten.ops, ns), name)
            torch_op = getattr(getattr(torch.ops, ns), name)
            expected = str(getattr(torch_op, overload)._schema)
            assert str(getattr(mine, overload)._schema) == expected
        finally:
            theirs._destroy()


def test_operator_name_parts_match_torchgen(pairs):
    for a, t in pairs:
        ours, theirs = a.name, t.name
        base = theirs.name.base
        if theirs.name.functional_overload:
            base += "_functional"
        if theirs.name.dunder_method:
            base = f"__{base}__"
        assert (ours.base, ours.inplace, ours.overload) == (
            base,
            theirs.name.inplace,
            theirs.overload_name,
        ), str(a)


def test_kind_matches_torchgen(pairs):
    wrong = [str(a) for a, t in pairs if a.kind.name != t.kind().name]
    assert wrong == []


def test_argument_groups_match_torchgen(pairs):
    for a, t in pairs:
        assert [x.name for x in a.positional] == [x.name for x in t.arguments.flat_positional]
        assert [x.name for x in a.kwarg_only] == [x.name for x in t.arguments.flat_kwarg_only]
        assert [x.name for x in a.out] == [x.name for x in t.arguments.out]
        t_self = t.arguments.self_arg
        assert (a.self_arg and a.self_arg.name) == (t_self and t_self.argument.name)


def test_types_and_annotations_match_torchgen(pairs):
    for a, t in pairs:
        for x, y in zip(a.arguments, t.schema_order_arguments()):
            assert str(x.type) == str(y.type)
            assert x.type.is_tensor_like() == y.type.is_tensor_like()
            assert str(x.type.is_list_like()) == str(y.type.is_list_like())
            assert x.type.is_list() == (type(y.type).__name__ == "ListType")
            assert x.type.is_optional() == (type(y.type).__name__ == "OptionalType")
            assert str(x.annotation) == str(y.annotation)
            assert x.is_write == bool(y.annotation and y.annotation.is_write)
        for r, q in zip(a.returns, t.returns):
            assert (r.name, str(r.type)) == (q.name, str(q.type))
            assert str(r.annotation) == str(q.annotation)


def test_tensor_arg_indices_and_views_match_torchgen(pairs):
    for a, t in pairs:
        order = list(t.schema_order_arguments())
        assert a.tensor_arg_indices == tuple(
            i for i, x in enumerate(order) if x.type.is_tensor_like()
        )
        t_view = any(r.annotation is not None and not r.annotation.is_write for r in t.returns)
        assert a.is_view == t_view, str(a)


def test_functional_signature_groups_like_torchgen(pairs):
    """The partition into functional/in-place/out families equals torchgen's grouping key."""
    ours: dict = defaultdict(set)
    theirs: dict = defaultdict(set)
    for a, t in pairs:
        ours[a.functional_signature()].add(str(a))
        theirs[str(t.signature())].add(str(a))
    assert {frozenset(g) for g in ours.values()} == {frozenset(g) for g in theirs.values()}
    add = {str(s) for s in ours[parse("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor").functional_signature()]}  # noqa: E501
    assert {"add.Tensor", "add_.Tensor", "add.out"} <= {s.split("(")[0] for s in add}


def test_default_values_match_torch_parser():
    """Python values of defaults equal torch._C.parse_schema's (bare words excepted: torch
    turns `Mean`/`long` into enum ints, we keep the word; `int[2] x=1` stays 1)."""
    checked = 0
    for s in REAL:
        ours = parse(s)
        ref = torch._C.parse_schema(s)
        for x, y in zip(ours.arguments, ref.arguments):
            assert x.name == y.name
            if x.default is NO_DEFAULT:
                assert not y.has_default_value(), (s, x.name)
                continue
            value, expected = x.default, y.default_value
            if isinstance(value, str) and not isinstance(expected, str):
                assert value in ("Mean", "long", "contiguous_format")
                continue
            if x.type.is_list() and not isinstance(value, tuple):
                assert expected == [value] * len(expected)
                continue
            if isinstance(value, tuple):
                value = list(value)
            if isinstance(value, float) and math.isnan(value):
                assert math.isnan(expected)
            else:
                assert value == expected and type(value) is type(expected), (s, x.name)
            checked += 1
    assert checked > 2000
