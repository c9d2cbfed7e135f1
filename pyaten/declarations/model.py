"""The records that `native_functions.yaml` and `derivatives.yaml` are read into.

Every record is a frozen dataclass that codegen and autograd read; nothing here parses YAML
(see `native.py` and `derivatives.py`) or checks files (see `lint.py`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the schema package sits below us; imported lazily to keep import cheap
    from pyaten.schema import FunctionSchema, OperatorName

__all__ = [
    "Location",
    "Diagnostic",
    "Precomputed",
    "UfuncInnerLoop",
    "NativeFunction",
    "NativeFunctionsGroup",
    "DerivativeFormula",
    "DerivativeEntry",
    "DeclarationError",
]

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_IMPLICIT_ONLY = (
    {"CompositeImplicitAutograd"},
    {"CompositeImplicitAutogradNestedTensor"},
    {"CompositeImplicitAutograd", "CompositeImplicitAutogradNestedTensor"},
)


@dataclass(frozen=True, slots=True)
class Location:
    """Where a declaration was written: a file (or `<string>`) and a 1-based line."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found in a declarations file; `str()` is `path:line: code: message`."""

    path: str
    line: int
    code: str
    message: str
    hint: str = ""
    severity: str = "error"  # "error" or "warning"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.code}: {self.message}"


class DeclarationError(ValueError):
    """A declarations file has errors; `.diagnostics` lists them all, the message the first."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        first = diagnostics[0]
        more = f" (and {len(diagnostics) - 1} more)" if len(diagnostics) > 1 else ""
        hint = f"\n  hint: {first.hint}" if first.hint else ""
        super().__init__(f"{first}{more}{hint}")


@dataclass(frozen=True, slots=True)
class Precomputed:
    """A structured kernel's `precomputed:` list.

    `replace` maps a kernel parameter to the declarations (`"int dim"`) computed in `meta`
    that replace it; `add` holds declarations added without replacing anything.
    """

    replace: tuple[tuple[str, tuple[str, ...]], ...]
    add: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class UfuncInnerLoop:
    """One `ufunc_inner_loop:` entry: `Generic: add (AllAndComplex, BFloat16)`."""

    key: str
    name: str
    dtypes: tuple[str, ...]


@dataclass(frozen=True, slots=True, eq=False)
class NativeFunction:
    """One entry of native_functions.yaml. Defaults are those of an absent key."""

    func: FunctionSchema
    loc: Location
    variants: frozenset[str] = frozenset({"function"})
    # one dispatch key -> kernel name, comma-separated keys split into one item each
    dispatch: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    dispatch_declared: bool = False  # a `dispatch:` key is written, even `dispatch: {}`
    structured: bool = False
    structured_delegate: OperatorName | None = None
    structured_inherits: str | None = None
    precomputed: Precomputed | None = None
    autogen: tuple[OperatorName, ...] = ()
    device_guard: bool = True
    device_check: str = "ExactSame"  # or "NoCheck"
    manual_kernel_registration: bool = False
    manual_cpp_binding: bool = False
    use_const_ref_for_mutable_tensors: bool = False
    python_module: str | None = None
    category_override: str | None = None
    tags: frozenset[str] = frozenset()  # as written; PyTorch's implicit `out`/`inplace` not added
    cpp_no_default_args: frozenset[str] = frozenset()
    ufunc_inner_loop: Mapping[str, UfuncInnerLoop] = field(default_factory=lambda: _EMPTY)
    generated_from: OperatorName | None = None  # set on records made from another's `autogen`
    raw: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False)

    @property
    def name(self) -> OperatorName:
        return self.func.name

    @property
    def has_implicit_dispatch(self) -> bool:
        """No `dispatch:` and not structured: the entry is CompositeImplicitAutograd."""
        return (
            not self.dispatch_declared
            and not self.structured
            and self.structured_delegate is None
            and not self.ufunc_inner_loop
            and not self.manual_kernel_registration
        )

    @property
    def has_composite_implicit_autograd_kernel(self) -> bool:
        return "CompositeImplicitAutograd" in self.dispatch or self.has_implicit_dispatch

    @property
    def has_composite_implicit_autograd_nested_tensor_kernel(self) -> bool:
        return "CompositeImplicitAutogradNestedTensor" in self.dispatch

    @property
    def has_composite_explicit_autograd_kernel(self) -> bool:
        return "CompositeExplicitAutograd" in self.dispatch

    @property
    def has_composite_explicit_autograd_non_functional_kernel(self) -> bool:
        return "CompositeExplicitAutogradNonFunctional" in self.dispatch

    @property
    def is_abstract(self) -> bool:
        """Kernels differ per backend (not only a composite-implicit kernel)."""
        if self.structured_delegate is not None:
            return True
        keys = {"CompositeImplicitAutograd"} if self.has_implicit_dispatch else set(self.dispatch)
        if self.ufunc_inner_loop:
            keys |= {"CPU", "CUDA"}  # the kernels ufunc loops generate
        return keys not in _IMPLICIT_ONLY

    def __repr__(self) -> str:
        return f"NativeFunction({self.func}, {self.loc})"


@dataclass(frozen=True, slots=True, eq=False)
class NativeFunctionsGroup:
    """The functional, in-place, out and mutable variants of one function signature.

    `structured` is True when the out variant is `structured: True`; the other members then
    delegate to it.
    """

    functional: NativeFunction | None = None
    inplace: NativeFunction | None = None
    out: NativeFunction | None = None
    mutable: NativeFunction | None = None

    def __post_init__(self) -> None:
        members = [f for f in (self.functional, self.inplace, self.out, self.mutable) if f]
        if not members:
            raise ValueError("NativeFunctionsGroup: a group needs at least one member")
        signature = members[0].func.functional_signature()
        for f in members[1:]:
            if f.func.functional_signature() != signature:
                raise ValueError(
                    f"NativeFunctionsGroup: {f.func.name} does not share the functional "
                    f"signature of {members[0].func.name}"
                )
        if self.out is not None and not self.out.func.out:
            raise ValueError(f"NativeFunctionsGroup: {self.out.func.name} is not an out variant")

    @property
    def structured(self) -> bool:
        return self.out is not None and self.out.structured

    @property
    def root_name(self) -> str:
        """The base name shared by the members (`add` for add.Tensor/add_.Tensor/add.out)."""
        return self.signature_owner.func.name.base

    @property
    def signature_owner(self) -> NativeFunction:
        for f in (self.functional, self.out, self.inplace, self.mutable):
            if f is not None:
                return f
        raise ValueError("NativeFunctionsGroup: a group needs at least one member")

    def functions(self) -> Iterator[NativeFunction]:
        """The members, functional first, then in-place, mutable and out."""
        for f in (self.functional, self.inplace, self.mutable, self.out):
            if f is not None:
                yield f

    def __repr__(self) -> str:
        names = ", ".join(str(f.func.name) for f in self.functions())
        return f"NativeFunctionsGroup({names}{', structured' if self.structured else ''})"


@dataclass(frozen=True, slots=True)
class DerivativeFormula:
    """One `names: formula` line: `self, other: foo(grad)` has names `("self", "other")`."""

    names: tuple[str, ...]
    formula: str
    line: int

    @property
    def is_non_differentiable(self) -> bool:
        return self.formula.strip().lower() == "non_differentiable"


@dataclass(frozen=True, slots=True, eq=False)
class DerivativeEntry:
    """One entry of derivatives.yaml, matched to the native function it differentiates.

    `dispatch` maps "Default" (the Autograd alias) or an autograd key to that section's
    formulas; an entry written without `dispatch:` has only "Default". `formulas` and
    `result` are the Default section's backward (per input) and forward (per output)
    formulas, for the common case.
    """

    name: str  # the schema text as written after `name:`
    schema: FunctionSchema
    function: NativeFunction | None
    dispatch: Mapping[str, tuple[DerivativeFormula, ...]]
    output_differentiability: tuple[bool | str, ...] | None
    loc: Location

    @property
    def formulas(self) -> tuple[DerivativeFormula, ...]:
        """Backward formulas of the Default section (keys that name inputs)."""
        return tuple(f for f in self._default() if not self._is_forward(f))

    @property
    def result(self) -> tuple[DerivativeFormula, ...]:
        """Forward-mode formulas of the Default section (`result: auto_element_wise`...)."""
        return tuple(f for f in self._default() if self._is_forward(f))

    @property
    def non_differentiable(self) -> tuple[str, ...]:
        """Inputs declared `non_differentiable` in the Default section."""
        return tuple(n for f in self.formulas if f.is_non_differentiable for n in f.names)

    def formula_for(self, input_name: str, key: str = "Default") -> str | None:
        for f in self.dispatch.get(key, ()):
            if input_name in f.names:
                return f.formula
        return None

    def _default(self) -> tuple[DerivativeFormula, ...]:
        return self.dispatch.get("Default", ())

    def _is_forward(self, formula: DerivativeFormula) -> bool:
        inputs = {a.name for a in self.schema.arguments}
        return formula.names[0] not in inputs

    def __repr__(self) -> str:
        return f"DerivativeEntry({self.name}, {self.loc})"
