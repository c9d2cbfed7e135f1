"""Python signatures: how the overloads of one name look from Python, and in which order.

A `PythonSignature` is what PyTorch's Python argument parser matches a call against: the
schema's arguments seen from Python (`self` spelled `input` in the function form and dropped
in the method form, out arguments as one keyword `out=`, factories gaining `requires_grad=`).
The functional and out variants of one function share a signature; `out=None` picks the
functional one. Everything here is pure data computed from schemas; the runtime parser in
`pyaten.native.arg_parser` interprets it.

Note: overload order
    Several signatures can accept the same call: a zero-dim tensor is a valid `Scalar`, a
    Python number is a valid `Tensor` for the arithmetic ops. PyTorch tries the signatures in
    a fixed order (Tensor before Scalar, int before int[], lists of tensors last) so the most
    specific one wins; `sort_signatures` computes the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pyaten.schema.model import (
    NO_DEFAULT,
    Argument,
    BaseType,
    FunctionSchema,
    ListType,
    OptionalType,
    SchemaKind,
    Type,
)

# Overloads PyTorch keeps out of Python: a number is accepted as a Tensor for these names, so
# the Scalar overloads would only shadow the Tensor ones.
HIDDEN_SIGNATURES: frozenset[str] = frozenset(
    [
        "add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
        "add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
        "sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
        "sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
        "mul.Scalar(Tensor self, Scalar other) -> Tensor",
        "mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
        "div.Scalar(Tensor self, Scalar other) -> Tensor",
        "div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
    ]
)
# Out variants of hidden signatures are hidden with them (their functional key matches).
HIDDEN_OVERLOADS: frozenset[str] = frozenset(
    ["add.Scalar_out", "sub.Scalar_out", "mul.Scalar_out", "div.Scalar_out"]
)

# Names whose Tensor parameters also accept Python numbers (PyTorch's parser does the same).
NUMBERS_AS_TENSORS: frozenset[str] = frozenset(
    """add add_ add_out div div_ div_out divide divide_ divide_out mul mul_ mul_out multiply
    multiply_ multiply_out sub sub_ sub_out subtract subtract_ subtract_out true_divide
    true_divide_ true_divide_out to _to_copy copy_ floor_divide floor_divide_
    floor_divide_out""".split()
)

# Keyword arguments that make a schema a factory: Python adds `requires_grad=False`.
TENSOR_OPTIONS = ("dtype", "layout", "device", "pin_memory")


@dataclass(frozen=True, slots=True)
class PythonParam:
    """One parameter as Python sees it.

    `type` is the schema type (for `out` of several tensors, a `Tensor[]`); `schema_name` is the
    argument's name in the schema (`self` for the parameter Python calls `input`).
    """

    name: str
    type: Type
    keyword_only: bool
    default: object  # NO_DEFAULT when required
    default_text: str | None
    schema_name: str

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT

    def type_name(self) -> str:
        return python_type_name(self.type)

    def __str__(self) -> str:
        text = f"{self.type_name()} {self.name}"
        if not self.required:
            text += f" = {python_default_text(self)}"
        return text


@dataclass(frozen=True, slots=True)
class PythonSignature:
    """The Python face of a functional schema and, if it has one, its out variant."""

    name: str
    method: bool
    functional: FunctionSchema | None
    out_variant: FunctionSchema | None
    params: tuple[PythonParam, ...]
    allow_numbers_as_tensors: bool
    has_requires_grad: bool

    @property
    def schema(self) -> FunctionSchema:
        """The schema whose non-out arguments define the parameters."""
        return self.functional if self.functional is not None else self.out_variant

    @property
    def positional(self) -> tuple[PythonParam, ...]:
        return tuple(p for p in self.params if not p.keyword_only)

    @property
    def allow_varargs_intlist(self) -> bool:
        """`zeros(2, 3)`: the only positional parameter is an int list, so ints may be spread."""
        pos = self.positional
        return len(pos) == 1 and _is_int_list(pos[0].type)

    def signature_text(self) -> str:
        """`(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)`."""
        parts: list[str] = []
        star = False
        for param in self.params:
            if param.keyword_only and not star:
                parts.append("*")
                star = True
            parts.append(str(param))
        return "(" + ", ".join(parts) + ")"

    def sort_key_text(self) -> str:
        return self.name + self.signature_text()


def _is_int_list(t: Type) -> bool:
    return isinstance(t, ListType) and isinstance(t.elem, BaseType) and t.elem.name in (
        "int",
        "SymInt",
    )


_TYPE_NAMES = {
    "Tensor": "Tensor",
    "int": "int",
    "SymInt": "int",
    "float": "float",
    "bool": "bool",
    "str": "str",
    "Scalar": "Number",
    "ScalarType": "pyaten.dtype",
    "Layout": "pyaten.layout",
    "Device": "pyaten.device",
    "MemoryFormat": "pyaten.memory_format",
    "Generator": "pyaten.Generator",
    "Dimname": "name",
    "Storage": "Storage",
    "Stream": "Stream",
}

_LIST_NAMES = {
    "Tensor": "tuple of Tensors",
    "int": "tuple of ints",
    "SymInt": "tuple of ints",
    "float": "tuple of floats",
    "bool": "tuple of bools",
    "Dimname": "tuple of names",
    "Scalar": "tuple of Scalars",
}


def python_type_name(t: Type) -> str:
    """The type as PyTorch's parser names it in messages (`Number`, `tuple of ints`)."""
    if isinstance(t, OptionalType):
        return python_type_name(t.elem)
    if isinstance(t, ListType):
        elem = t.elem.elem if isinstance(t.elem, OptionalType) else t.elem
        if isinstance(elem, BaseType):
            return _LIST_NAMES.get(elem.name, f"tuple of {python_type_name(elem)}")
        return "tuple"
    if isinstance(t, BaseType):
        return _TYPE_NAMES.get(t.name, t.name)
    return str(t)


def python_default_text(param: PythonParam) -> str:
    """Default as shown in signatures: Python spelling of the schema default."""
    value = param.default
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]" if value else "[]"
    if isinstance(value, float):
        return repr(value)
    if param.default_text is not None and not isinstance(value, (int, float)):
        return param.default_text
    return str(value)


def _python_name_of(arg: Argument, method: bool) -> str:
    # PyTorch calls a Tensor `self` "input" in the function form.
    if arg.name == "self" and not method and _base_name(arg.type) == "Tensor":
        return "input"
    return arg.name


def _base_name(t: Type) -> str:
    while isinstance(t, (OptionalType, ListType)):
        t = t.elem
    return t.name if isinstance(t, BaseType) else str(t)


def _is_factory(schema: FunctionSchema) -> bool:
    names = {a.name for a in schema.kwarg_only}
    return "dtype" in names and "device" in names and len(schema.returns) == 1


def build_signature(
    name: str,
    functional: FunctionSchema | None,
    out_variant: FunctionSchema | None,
    method: bool,
) -> PythonSignature:
    """The Python signature of a functional schema (and its out variant) for `name`."""
    schema = functional if functional is not None else out_variant
    assert schema is not None
    params: list[PythonParam] = []
    for arg in schema.arguments:
        if arg.is_out:
            continue
        if method and arg.name == "self":
            continue
        params.append(
            PythonParam(
                name=_python_name_of(arg, method),
                type=arg.type,
                keyword_only=arg.kwarg_only,
                default=arg.default,
                default_text=arg.default_text,
                schema_name=arg.name,
            )
        )
    # PyTorch gives `requires_grad=` to factories and to the `new_*` methods
    has_requires_grad = (not method or name.startswith("new_")) and _is_factory(schema)
    if has_requires_grad:
        params.append(
            PythonParam("requires_grad", BaseType("bool"), True, False, "False", "")
        )
    if out_variant is not None and not method:
        outs = out_variant.out
        out_type: Type = outs[0].type if len(outs) == 1 else ListType(BaseType("Tensor"))
        # `out` is required when there is no functional variant to fall back on.
        default = None if functional is not None else NO_DEFAULT
        params.append(PythonParam("out", out_type, True, default, "None", "out"))
    return PythonSignature(
        name=name,
        method=method,
        functional=functional,
        out_variant=out_variant,
        params=tuple(params),
        allow_numbers_as_tensors=name in NUMBERS_AS_TENSORS,
        has_requires_grad=has_requires_grad,
    )


def is_hidden(schema: FunctionSchema) -> bool:
    """True for the overloads PyTorch does not expose to Python."""
    return str(schema) in HIDDEN_SIGNATURES or _overload_text(schema) in HIDDEN_OVERLOADS


def _overload_text(schema: FunctionSchema) -> str:
    n = schema.name
    return f"{n.name}.{n.overload}" if n.overload else n.name


def group_signatures(
    name: str, schemas: Iterable[FunctionSchema], method: bool
) -> list[PythonSignature]:
    """Pair each functional schema with its out variant and build their signatures, sorted."""
    functionals: dict[object, FunctionSchema] = {}
    outs: dict[object, FunctionSchema] = {}
    order: list[object] = []
    for schema in schemas:
        if is_hidden(schema):
            continue
        key = schema.functional_signature()
        if schema.kind is SchemaKind.out:
            if method:
                continue  # methods have no out= form
            if key in outs:
                continue
            outs[key] = schema
        else:
            if key in functionals:
                continue
            functionals[key] = schema
        if key not in order:
            order.append(key)
    signatures = [
        build_signature(name, functionals.get(key), outs.get(key), method) for key in order
    ]
    return sort_signatures(signatures)


def _arg_smaller(t1: str, t2: str) -> bool:
    # See Note: overload order.
    return (
        (t1 == "Scalar" and t2 == "Tensor")
        or (t1 == "Scalar?" and t2 == "Tensor?")
        or (t1 == "int[]" and t2 in ("int", "int?"))
        or (t1 == "Tensor[]" and "[]" in t2)
        or (t1 == "SymInt[]" and t2 == "int[]")
        or (t1 in ("SymInt", "int") and t2 == "Tensor")
    )


def _types_for_order(sig: PythonSignature) -> list[str]:
    return [str(p.type) for p in sig.params if p.name != "out"]


def _smaller(s1: PythonSignature, s2: PythonSignature) -> bool:
    a1, a2 = _types_for_order(s1), _types_for_order(s2)
    if len(a1) != len(a2):
        return False
    if a1 == a2:
        return False
    return all(x == y or _arg_smaller(x, y) for x, y in zip(a1, a2))


def sort_signatures(signatures: Sequence[PythonSignature]) -> list[PythonSignature]:
    """Order signatures by text, then move each below every signature it is smaller than."""
    ordered = sorted(signatures, key=lambda s: s.sort_key_text())
    result: list[PythonSignature] = []
    remaining = list(ordered)
    while remaining:
        for candidate in remaining:
            # A candidate may go next when nothing still waiting is larger than it.
            if not any(_smaller(candidate, other) for other in remaining if other is not candidate):
                result.append(candidate)
                remaining.remove(candidate)
                break
        else:  # a cycle cannot happen for a strict partial order; keep text order if it does
            result.extend(remaining)
            break
    return result
