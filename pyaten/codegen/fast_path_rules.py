"""Which fast paths a binding may take: the kinds of argument a fast path tests for, and the
analysis that proves every earlier signature refuses what a fast path accepts.

The generator (`pyaten.codegen.gen_bindings`) asks, for signature k of a name: may a call
with these argument classes skip the parser? The answer compares k with each signature tried
before it, using what the parser's converters (`pyaten.native.arg_parser`) accept. Pure
functions of signatures.

Note: fast-path safety
    A fast path for signature k takes arguments of exact Python classes (positionally, and
    in a keyword block by keyword too) and skips the parser. It is emitted only if every
    earlier signature j certainly refuses such a call: by arity, a missing required argument,
    an unexpected or repeated keyword, or a parameter whose converter refuses that class.
    When j's refusal depends on which keywords a call names (`sum(t, dim=1)` is refused by
    `sum(input, *, dtype)` because it names `dim`), the block tests for them at run time.
    Each test is an exact-class check (a Tensor subclass without `__torch_function__`, such
    as `nn.Parameter`, passes as the parser's `isinstance` does) on which the parser's
    converter gives the same value the fast path passes, so the result is the one the full
    parser would give. Anything the
    tests do not recognise falls through to `bind_and_call`. `tests/test_fast_bindings.py`
    holds a fast path to the parser for every binding, positional and keyword calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyaten.codegen.python_signature import PythonSignature
from pyaten.schema.model import BaseType, ListType, OptionalType

__all__ = [
    "INT_LIST",
    "TENSOR",
    "TENSOR_LIST",
    "Kind",
    "Trigger",
    "is_tensor",
    "keyword_conditions",
    "may_spread_ints",
    "param_kind",
    "param_rejects",
    "refusal_triggers",
    "refuses",
    "refuses_spread_ints",
    "rejects",
    "safe_kinds",
]


def is_tensor(value: str) -> str:
    """The test that `value` is a Tensor the fast path may take: the class first (one
    comparison for the common case), then subclasses without `__torch_function__`
    (`nn.Parameter`) or while subclasses' handlers are off on this thread (inside
    `Tensor.__torch_function__`); another subclass goes to the parser, which hands the call
    to its handler (Note: the torch-function gate, in pyaten/core/torch_function.py)."""
    return (f"({value}.__class__ is Tensor or isinstance({value}, Tensor) and "
            f"({value}.__class__.__torch_function__ is TF.DISABLED or TF.TLS.state))")


@dataclass(frozen=True)
class Kind:
    """How a fast path takes one parameter: the Python classes it accepts (named as
    `rejects` names them, for the safety analysis) and the source of its test and of its
    conversion, `{v}` standing for the value."""

    classes: tuple[str, ...]
    check: str
    convert: str = "{v}"
    strict: Kind | None = None  # an optional kind's kind without None

    def without_none(self) -> Kind:
        return self.strict or self

    def test(self, value: str) -> str:
        return self.check.replace("{v}", value)

    def value(self, value: str) -> str:
        return self.convert.replace("{v}", value)


# The generated module defines `all`, `any`, `max`... as operators: no builtins in the checks.
_SEQ = "({v}.__class__ is tuple or {v}.__class__ is list or {v}.__class__ is Size)"
_ALL_INTS = "{i.__class__ for i in {v}} <= {int}"
TENSOR = Kind(("Tensor",), is_tensor("{v}"))
_INT = Kind(("int",), "{v}.__class__ is int")
_BASE_KINDS = {
    "Tensor": TENSOR,
    "int": _INT,
    "SymInt": _INT,
    "float": Kind(("float",), "{v}.__class__ is float"),
    "bool": Kind(("bool",), "{v}.__class__ is bool"),
    "ScalarType": Kind(("dtype",), "{v}.__class__ is DType"),
    "Scalar": Kind(("int", "float"), "({v}.__class__ is int or {v}.__class__ is float)"),
    "str": Kind(("str",), "{v}.__class__ is str"),
}
INT_LIST = Kind(("seq",), f"({_SEQ} and {_ALL_INTS})", "tuple({v})")
TENSOR_LIST = Kind(
    ("seq",),
    "(({v}.__class__ is tuple or {v}.__class__ is list) and "
    "{t.__class__ for t in {v}} <= {Tensor})",
    "tuple({v})",
)


def _sized_int_list(size: int) -> Kind:
    """`int[2]`: a sequence of ints, or one bare int repeated `size` times."""
    return Kind(
        ("int", "seq"),
        "({v}.__class__ is int or (" + _SEQ + " and " + _ALL_INTS + "))",
        "(({v},) * " + str(size) + " if {v}.__class__ is int else tuple({v}))",
    )


def _optional_kind(kind: Kind) -> Kind:
    convert = kind.convert if kind.convert == "{v}" else (
        "(None if {v} is None else " + kind.convert + ")"
    )
    return Kind(kind.classes + ("None",), "({v} is None or " + kind.check + ")", convert,
                 kind)


def param_kind(param: Any) -> Kind | None:
    """The fast kind of a parameter, or None when only the parser takes it."""
    t = param.type
    optional = isinstance(t, OptionalType)
    base = t.elem if optional else t
    kind: Kind | None = None
    if isinstance(base, BaseType):
        kind = _BASE_KINDS.get(base.name)
    elif isinstance(base, ListType) and str(base.elem) in ("int", "SymInt"):
        kind = INT_LIST if base.size is None else _sized_int_list(base.size)
    elif isinstance(base, ListType) and base.size is None and str(base.elem) == "Tensor":
        kind = TENSOR_LIST
    if kind is not None and optional:
        kind = _optional_kind(kind)
    return kind


def rejects(t: Any, cls: str, numbers_as_tensors: bool) -> bool:
    """True when the parser's converter for type `t` refuses every value of class `cls`."""
    if isinstance(t, OptionalType):
        t = t.elem
    if isinstance(t, ListType):
        if cls == "seq":
            return False
        return t.size is None  # a sized list takes a bare scalar
    if not isinstance(t, BaseType):
        return False
    name = t.name
    if name == "Tensor":
        return not (cls == "Tensor" or (numbers_as_tensors and cls in ("int", "float", "bool")))
    if name == "Scalar":
        return cls in ("dtype", "seq", "str")
    if name in ("int", "SymInt"):
        return cls in ("float", "bool", "dtype", "seq", "str")
    if name == "float":
        return cls in ("dtype", "seq", "str")
    if name == "bool":
        return cls != "bool"
    if name == "ScalarType":
        return cls != "dtype"
    if name in ("str", "Dimname"):
        return cls != "str"
    if name in ("Layout", "MemoryFormat", "Generator"):
        return True
    if name == "Device":
        return cls in ("Tensor", "float", "bool", "dtype", "seq")
    return False


_NONE_REFUSED = frozenset({"Tensor", "int", "SymInt", "float", "bool", "Scalar", "ScalarType",
                           "str"})


def param_rejects(param: Any, cls: str, numbers_as_tensors: bool) -> bool:
    """True when the parser refuses every value of class `cls` for this parameter."""
    if cls != "None":
        return rejects(param.type, cls, numbers_as_tensors)
    t = param.type
    if isinstance(t, OptionalType) or (not param.required and param.default is None):
        return False  # the parser takes None for an optional or None-defaulted parameter
    if isinstance(t, ListType):
        return True
    return isinstance(t, BaseType) and t.name in _NONE_REFUSED


def may_spread_ints(sig: PythonSignature, classes: Sequence[tuple[str, ...]]) -> bool:
    """`sig` may take these positional arguments as one spread int list (`view(2, 3)`): ints,
    or 0-dim integer tensors, which the int converter takes too."""
    return sig.allow_varargs_intlist and len(classes) >= 1 and all(
        any(c in ("int", "Tensor") for c in options) for options in classes
    )


def refuses(sig: PythonSignature, classes: list[tuple[str, ...]]) -> bool:
    """Signature `sig` certainly refuses positional arguments of these classes, no keywords."""
    n = len(classes)
    if may_spread_ints(sig, classes):
        return False
    positional = [p for p in sig.params if not p.keyword_only]
    if n > len(positional):
        return True
    if any(p.required for p in sig.params[n:]) or any(
        p.required and p.keyword_only for p in sig.params
    ):
        return True
    for param, options in zip(positional, classes):
        if all(param_rejects(param, c, sig.allow_numbers_as_tensors) for c in options):
            return True
    return False


def refuses_spread_ints(earlier: Sequence[PythonSignature]) -> bool:
    """Every earlier signature refuses any number of int arguments (past its positional
    parameters, by arity)."""
    for j in earlier:
        most = len([p for p in j.params if not p.keyword_only])
        if j.allow_varargs_intlist or not all(
            refuses(j, [("int",)] * count) for count in range(1, most + 2)
        ):
            return False
    return True


def safe_kinds(earlier: Sequence[PythonSignature], kinds: list[Kind]) -> list[Kind] | None:
    """`kinds`, or failing that the same without None (`clamp(t, 0, 1)` after
    `clamp(Tensor? min, Tensor? max)`), when every earlier signature refuses them; else None."""
    for candidate in (kinds, [k.without_none() for k in kinds]):
        if all(refuses(j, [k.classes for k in candidate]) for j in earlier):
            return candidate
    return None


Trigger = tuple[str, bool]  # (keyword, named): the call names it (True) or does not (False)


def refusal_triggers(
    sig: PythonSignature,
    positional_classes: Sequence[tuple[str, ...]],
    keyword_classes: dict[str, tuple[str, ...]],
    always_given: set[str],
) -> bool | list[Trigger]:
    """How the earlier signature `sig` refuses a call with these positional classes and some
    of these keywords (those in `always_given` always among them): True when it always does,
    else the keywords, named or not, that make it (an empty list: it may accept)."""
    n = len(positional_classes)
    positional = [p for p in sig.params if not p.keyword_only]
    if n > len(positional):
        return True
    if may_spread_ints(sig, positional_classes):
        return []
    numbers = sig.allow_numbers_as_tensors
    for param, options in zip(positional, positional_classes):
        if all(param_rejects(param, c, numbers) for c in options):
            return True
    filled = {p.name for p in positional[:n]}
    triggers: list[Trigger] = []
    for p in sig.params:
        if p.required and p.name not in filled:
            if p.name not in keyword_classes:
                return True  # never given: "missing required argument"
            if p.name not in always_given:
                triggers.append((p.name, False))
    by_name = {p.name: p for p in sig.params}
    for name, classes in keyword_classes.items():
        param = by_name.get(name)
        if param is None or name in filled or all(
            param_rejects(param, c, numbers) for c in classes
        ):
            if name in always_given:
                return True
            triggers.append((name, True))
    return triggers


def _trigger_test(trigger: Trigger) -> str:
    name, named = trigger
    return f"{name!r} in kwargs" if named else f"{name!r} not in kwargs"


def keyword_conditions(earlier: Sequence[PythonSignature], head_kinds: list[Kind],
                        keyword: list[tuple[Any, Kind, str | None]], always: set[str],
                        only: str | None = None) -> list[str] | None:
    """The run-time tests under which every earlier signature refuses the block's calls;
    None when one of them may accept one. With `only`, for calls naming that one keyword:
    decided here, so no tests."""
    keyword_classes = {p.name: kind.classes for p, kind, _ in keyword}
    conditions: list[str] = []
    for j in earlier:
        triggers = refusal_triggers(j, [k.classes for k in head_kinds], keyword_classes,
                                     always)
        if triggers is True:
            continue
        if only is not None:
            if not any((name == only) is named for name, named in triggers):
                return None
            continue
        if not triggers:
            return None
        tests = [_trigger_test(t) for t in triggers]
        conditions.append(tests[0] if len(tests) == 1 else f"({' or '.join(tests)})")
    return conditions
