"""The function-schema model: immutable objects for names, types, annotations and arguments.

Every class is a frozen, slotted dataclass whose `str()` is the canonical schema text (the
text PyTorch's C++ printer writes), so `str(parse(s)) == s` for canonical input; `yaml_text()`
is native_functions.yaml's spelling (see Note: two spellings of a schema in
`pyaten.schema.printing`). Derived facts (kind, view-ness, out arguments,
the functional signature) are computed once per schema and cached.

Note: derived-property cache
    `FunctionSchema` keeps a private dict that is excluded from equality and hashing; each
    derived property fills its entry on first use, so repeated reads by the dispatcher and
    the code generator cost one dict lookup.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from pyaten.schema.printing import cpp_default_text, cpp_type_name, yaml_default_text

# In-place dunder methods (`__iadd__`) pair with these functional dunders (`__add__`).
AUGMENTED_ASSIGNMENT_NAMES = frozenset(
    ["add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or"]
)


class _NoDefault:
    """The type of `NO_DEFAULT`: marks an argument that has no default value."""

    __slots__ = ()
    _instance: _NoDefault | None = None

    def __new__(cls) -> _NoDefault:
        # One shared instance, so `arg.default is NO_DEFAULT` always works.
        if cls._instance is None:
            cls._instance = object.__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_DEFAULT"

    def __reduce__(self) -> str:
        return "NO_DEFAULT"

    def __bool__(self) -> bool:
        return False


NO_DEFAULT: Any = _NoDefault()


# ---------------------------------------------------------------------------------------------
# Operator names
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OperatorName:
    """`ns::name.overload`; `namespace` and `overload` are "" when absent."""

    namespace: str
    name: str
    overload: str = ""

    @property
    def is_dunder(self) -> bool:
        n = self.name
        return len(n) > 4 and n.startswith("__") and n.endswith("__")

    @property
    def inplace(self) -> bool:
        """True for `add_` and for augmented-assignment dunders such as `__iand__`."""
        n = self.name
        if self.is_dunder:
            inner = n[2:-2]
            return inner[:1] == "i" and inner[1:] in AUGMENTED_ASSIGNMENT_NAMES
        return n.endswith("_")

    @property
    def base(self) -> str:
        """The name without its in-place marker: `add_` -> `add`, `__iand__` -> `__and__`."""
        n = self.name
        if self.is_dunder:
            inner = n[2:-2]
            if inner[:1] == "i" and inner[1:] in AUGMENTED_ASSIGNMENT_NAMES:
                return f"__{inner[1:]}__"
            return n
        return n[:-1] if n.endswith("_") else n

    @property
    def qualified(self) -> str:
        return str(self)

    @property
    def unqualified(self) -> str:
        """`name.overload` (`name` without an overload), the namespace left out."""
        return f"{self.name}.{self.overload}" if self.overload else self.name

    def __str__(self) -> str:
        text = self.unqualified
        return f"{self.namespace}::{text}" if self.namespace else text


# ---------------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------------

# Every base type name the schema language knows (PyTorch's file uses all but a few).
BASE_TYPE_NAMES = frozenset(
    [
        "Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType", "Layout",
        "Device", "DeviceIndex", "MemoryFormat", "Generator", "Dimname", "Storage", "Stream",
        "Any", "QScheme", "SymBool", "SymFloat", "DimVector", "GraphModule", "ConstQuantizerPtr",
        "complex", "number",
    ]
)  # fmt: skip

CUSTOM_CLASS_PREFIX = "__torch__.torch.classes."


class Type:
    """Base of the schema types; subclasses are frozen dataclasses."""

    __slots__ = ()

    def is_tensor_like(self) -> bool:
        raise NotImplementedError

    def is_list(self) -> bool:
        return False

    def is_optional(self) -> bool:
        return False

    def is_symint_like(self) -> bool:
        return False

    def is_list_like(self) -> ListType | None:
        """The list type itself, seen through one `?` (`int[]?` -> `int[]`), else None."""
        t = self.elem if isinstance(self, OptionalType) else self
        return t if isinstance(t, ListType) else None

    def annotated(self, annotation: Annotation | None) -> str:
        """The type's text with `annotation` written right after the innermost base name."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class BaseType(Type):
    name: str

    def is_tensor_like(self) -> bool:
        return self.name == "Tensor"

    def is_symint_like(self) -> bool:
        return self.name == "SymInt"

    def annotated(self, annotation: Annotation | None) -> str:
        return self.name if annotation is None else f"{self.name}({annotation})"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class OptionalType(Type):
    elem: Type

    def is_tensor_like(self) -> bool:
        return self.elem.is_tensor_like()

    def is_optional(self) -> bool:
        return True

    def is_symint_like(self) -> bool:
        return self.elem.is_symint_like()

    def annotated(self, annotation: Annotation | None) -> str:
        return f"{self.elem.annotated(annotation)}?"

    def __str__(self) -> str:
        return f"{self.elem}?"


@dataclass(frozen=True, slots=True)
class ListType(Type):
    elem: Type
    size: int | None = None

    def is_tensor_like(self) -> bool:
        return self.elem.is_tensor_like()

    def is_list(self) -> bool:
        return True

    def is_symint_like(self) -> bool:
        return self.elem.is_symint_like()

    def annotated(self, annotation: Annotation | None) -> str:
        size = "" if self.size is None else self.size
        return f"{self.elem.annotated(annotation)}[{size}]"

    def __str__(self) -> str:
        size = "" if self.size is None else self.size
        return f"{self.elem}[{size}]"


@dataclass(frozen=True, slots=True)
class CustomClassType(Type):
    """A TorchScript custom class such as `__torch__.torch.classes.quantized.Conv2dPackedParams`."""

    qualified_name: str

    def is_tensor_like(self) -> bool:
        return False

    def annotated(self, annotation: Annotation | None) -> str:
        if annotation is None:
            return self.qualified_name
        return f"{self.qualified_name}({annotation})"

    def __str__(self) -> str:
        return self.qualified_name


# ---------------------------------------------------------------------------------------------
# Alias annotations, arguments, returns
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Annotation:
    """`(a)`, `(a!)`, `(a! -> a|b)`, `(a -> *)`: alias sets before and after the call."""

    alias_set: tuple[str, ...]
    is_write: bool = False
    alias_set_after: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = "|".join(self.alias_set)
        if self.is_write:
            text += "!"
        if self.alias_set_after:
            text += " -> " + "|".join(self.alias_set_after)
        return text


def render_default(value: object) -> str:
    """YAML-spelled source text for a default value (used when no source text was kept)."""
    return yaml_default_text(value)


def _cpp_annotated(typ: Type, annotation: Annotation | None) -> str:
    """A type with its annotation as the C++ printer writes it (DeviceIndex as int)."""
    if isinstance(typ, BaseType):
        name = cpp_type_name(typ.name)
        return name if annotation is None else f"{name}({annotation})"
    if isinstance(typ, OptionalType):
        return f"{_cpp_annotated(typ.elem, annotation)}?"
    if isinstance(typ, ListType):
        # A list's annotation follows its whole element type: `Tensor(a)?[]` is `Tensor?(a)[]`.
        size = "" if typ.size is None else typ.size
        alias = "" if annotation is None else f"({annotation})"
        return f"{_cpp_annotated(typ.elem, None)}{alias}[{size}]"
    return typ.annotated(annotation)


def _cpp_default(typ: Type, value: object) -> str:
    if isinstance(typ, OptionalType):
        typ = typ.elem
    is_list = isinstance(typ, ListType)
    size = typ.size if is_list else None
    while isinstance(typ, OptionalType | ListType):
        typ = typ.elem
    base = typ.name if isinstance(typ, BaseType) else str(typ)
    return cpp_default_text(base, size, is_list, value)


@dataclass(frozen=True, slots=True)
class Argument:
    name: str
    type: Type
    annotation: Annotation | None = None
    default: object = NO_DEFAULT
    default_text: str | None = None
    kwarg_only: bool = False
    is_out: bool = False

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    def __str__(self) -> str:
        """The argument as PyTorch's C++ printer writes it (see Note: two spellings)."""
        text = f"{_cpp_annotated(self.type, self.annotation)} {self.name}"
        if self.default is NO_DEFAULT:
            return text
        return f"{text}={_cpp_default(self.type, self.default)}"

    def yaml_text(self) -> str:
        """The argument as native_functions.yaml spells it: the default's source text."""
        text = f"{self.type.annotated(self.annotation)} {self.name}"
        if self.default_text is not None:
            return f"{text}={self.default_text}"
        if self.default is not NO_DEFAULT:
            return f"{text}={render_default(self.default)}"
        return text


@dataclass(frozen=True, slots=True)
class Return:
    name: str | None
    type: Type
    annotation: Annotation | None = None

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write

    def __str__(self) -> str:
        text = _cpp_annotated(self.type, self.annotation)
        return f"{text} {self.name}" if self.name else text

    def yaml_text(self) -> str:
        text = self.type.annotated(self.annotation)
        return f"{text} {self.name}" if self.name else text


# ---------------------------------------------------------------------------------------------
# Function schemas
# ---------------------------------------------------------------------------------------------


class SchemaKind(enum.Enum):
    """torchgen's classification of a schema."""

    functional = "functional"  # returns fresh outputs
    inplace = "inplace"  # name ends in `_`, mutates self
    out = "out"  # writes into keyword-only mutable `out` arguments
    mutable = "mutable"  # mutates a positional argument that is not self
    scratch = "scratch"  # an out variant with `_scratch_` buffers


# Keyword-only arguments that make up TensorOptions; dropped from functional signatures so
# factory functions pair with their out variants (as torchgen does).
_TENSOR_OPTIONS = (
    ("dtype", "ScalarType"),
    ("layout", "Layout"),
    ("device", "Device"),
    ("pin_memory", "bool"),
)


def _is_option(arg: Argument, name: str, base: str) -> bool:
    t = arg.type
    if isinstance(t, OptionalType):
        t = t.elem
    return arg.name == name and isinstance(t, BaseType) and t.name == base


def _drop_tensor_options(args: list[Argument]) -> list[Argument]:
    n = len(_TENSOR_OPTIONS)
    for i in range(len(args) - n + 1):
        window = args[i : i + n]
        if all(_is_option(a, nm, b) for a, (nm, b) in zip(window, _TENSOR_OPTIONS)):
            return args[:i] + args[i + n :]
    return args


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    """A parsed `name.overload(args) -> returns`; see the module note on derived properties."""

    name: OperatorName
    arguments: tuple[Argument, ...]
    returns: tuple[Return, ...]
    _derived: dict = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    # -- argument views --------------------------------------------------------------------

    @property
    def positional(self) -> tuple[Argument, ...]:
        d = self._derived
        if "positional" not in d:
            d["positional"] = tuple(a for a in self.arguments if not a.kwarg_only)
        return d["positional"]

    @property
    def kwarg_only(self) -> tuple[Argument, ...]:
        """Keyword-only arguments that are not out arguments."""
        d = self._derived
        if "kwarg_only" not in d:
            d["kwarg_only"] = tuple(a for a in self.arguments if a.kwarg_only and not a.is_out)
        return d["kwarg_only"]

    @property
    def out(self) -> tuple[Argument, ...]:
        d = self._derived
        if "out" not in d:
            d["out"] = tuple(a for a in self.arguments if a.is_out)
        return d["out"]

    @property
    def self_arg(self) -> Argument | None:
        """The positional argument named `self`, or None."""
        d = self._derived
        if "self_arg" not in d:
            d["self_arg"] = next((a for a in self.positional if a.name == "self"), None)
        return d["self_arg"]

    @property
    def post_self_positional(self) -> tuple[Argument, ...]:
        """Positional arguments after `self` (all of them when there is no `self`)."""
        pos = self.positional
        for i, a in enumerate(pos):
            if a.name == "self":
                return pos[i + 1 :]
        return pos

    @property
    def tensor_arg_indices(self) -> tuple[int, ...]:
        """Indices into `arguments` of tensor-like arguments (the dispatcher's key sources).

        A list of tensor lists (`Tensor[][]`, c10d's) is not one, as in c10's key extractor."""
        d = self._derived
        if "tensor_arg_indices" not in d:
            d["tensor_arg_indices"] = tuple(
                i
                for i, a in enumerate(self.arguments)
                if a.type.is_tensor_like() and not _is_nested_list(a.type)
            )
        return d["tensor_arg_indices"]

    # -- classification --------------------------------------------------------------------

    @property
    def kind(self) -> SchemaKind:
        d = self._derived
        if "kind" not in d:
            d["kind"] = self._compute_kind()
        return d["kind"]

    def _compute_kind(self) -> SchemaKind:
        if self.name.inplace:
            return SchemaKind.inplace
        outs = self.out
        if any(a.name.startswith("_scratch_") for a in outs):
            return SchemaKind.scratch
        if outs:
            return SchemaKind.out
        if any(a.is_write for a in self.post_self_positional):
            return SchemaKind.mutable
        return SchemaKind.functional

    @property
    def is_view(self) -> bool:
        """True when some return aliases an input without writing to it (`Tensor(a)`)."""
        d = self._derived
        if "is_view" not in d:
            read_sets = set()
            for a in self.arguments:
                if a.annotation is not None:
                    read_sets.update(a.annotation.alias_set)
            d["is_view"] = any(
                r.annotation is not None
                and not r.annotation.is_write
                and any(s in read_sets for s in r.annotation.alias_set)
                for r in self.returns
            )
        return d["is_view"]

    @property
    def is_mutating(self) -> bool:
        return any(a.is_write for a in self.arguments)

    def functional_signature(self) -> FunctionSchema:
        """The signature shared by a function's functional, in-place and out variants.

        Like torchgen's `signature()` with defaults stripped: base name without overload,
        in-place marker or `_functional` suffix; out arguments and TensorOptions dropped;
        annotations, defaults and return names stripped; mutated inputs that are not
        returned appended as returns. Groups exactly as torchgen groups PyTorch's file.
        """
        d = self._derived
        if "signature" in d:
            return d["signature"]
        returned = {r.annotation for r in self.returns if r.annotation is not None}
        self_a = self.self_arg
        mutated = ([self_a] if self_a is not None else []) + list(self.out)
        mutated += list(self.post_self_positional)
        extra = tuple(
            Return(None, a.type)
            for a in mutated
            if a.is_write and a.annotation not in returned
        )
        returns = tuple(Return(None, r.type) for r in self.returns) + extra
        positional = [Argument(a.name, a.type) for a in self.positional]
        kwargs = [Argument(a.name, a.type, kwarg_only=True) for a in self.kwarg_only]
        kwargs = _drop_tensor_options(kwargs)
        base = self.name.base
        if base.endswith("_functional"):  # `normal_functional` pairs with `normal_`
            base = base[: -len("_functional")]
        sig = FunctionSchema(OperatorName("", base, ""), tuple(positional + kwargs), returns)
        d["signature"] = sig
        return sig

    # -- printing --------------------------------------------------------------------------

    def arguments_text(self, yaml: bool = False) -> str:
        parts: list[str] = []
        star = False
        for a in self.arguments:
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(a.yaml_text() if yaml else str(a))
        return ", ".join(parts)

    def returns_text(self, yaml: bool = False) -> str:
        rets = [r.yaml_text() if yaml else str(r) for r in self.returns]
        if len(rets) == 1:
            return rets[0]
        return "(" + ", ".join(rets) + ")"

    def __str__(self) -> str:
        """The schema as PyTorch's C++ printer writes it (see Note: two spellings of a
        schema in `pyaten.schema.printing`)."""
        d = self._derived
        if "str" not in d:
            d["str"] = f"{self.name}({self.arguments_text()}) -> {self.returns_text()}"
        return d["str"]

    def yaml_text(self) -> str:
        """The schema as native_functions.yaml spells it (torchgen's `str`): defaults keep
        their source text, so `parse(s).yaml_text() == s` for every `func:` of the file."""
        d = self._derived
        if "yaml" not in d:
            d["yaml"] = (
                f"{self.name}({self.arguments_text(True)}) -> {self.returns_text(True)}"
            )
        return d["yaml"]


def _is_nested_list(t: Type) -> bool:
    inner = t.is_list_like()
    return inner is not None and inner.elem.is_list_like() is not None
