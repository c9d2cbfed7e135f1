"""pyaten.schema against PyTorch's own file: round-trip, and differential against torchgen
(kinds, argument groups, views, functional-signature grouping) and torch's C++ parser
(default values)."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest

from pyaten.schema import NO_DEFAULT, parse

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
    mismatched = [s for s in REAL if str(parse(s)) != s]
    assert mismatched == []


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
