"""pyaten.declarations: native_functions.yaml and derivatives.yaml as records, and a linter.

- `load_native_functions(path_or_text)` -> list of `NativeFunction` (autogen variants included)
- `group_native_functions(functions)` -> (list of `NativeFunctionsGroup`, ungrouped functions)
- `load_derivatives(path, native_functions=...)` -> list of `DerivativeEntry`
- `load_backend_yaml(path, native_functions)` -> `BackendDeclaration` (gen_backend_stubs format)
- `lint(path, warnings=False)` -> list of `Diagnostic`
See docs/declarations.md and docs/lint.md.
"""

from pyaten.declarations.autogen import generate_autogen, with_autogen
from pyaten.declarations.backend import BackendDeclaration, load_backend_yaml, read_backend_yaml
from pyaten.declarations.derivatives import load_derivatives, read_derivatives
from pyaten.declarations.dispatch_keys import DISPATCH_KEYS, split_dispatch_keys
from pyaten.declarations.grouping import group_native_functions
from pyaten.declarations.lint import lint, lint_files
from pyaten.declarations.model import (
    DeclarationError,
    DerivativeEntry,
    DerivativeFormula,
    Diagnostic,
    Location,
    NativeFunction,
    NativeFunctionsGroup,
    Precomputed,
    UfuncInnerLoop,
)
from pyaten.declarations.native import NATIVE_KEYS, load_native_functions, read_native_functions
from pyaten.declarations.tags import load_tags

__all__ = [
    "BackendDeclaration",
    "DISPATCH_KEYS",
    "NATIVE_KEYS",
    "DeclarationError",
    "DerivativeEntry",
    "DerivativeFormula",
    "Diagnostic",
    "Location",
    "NativeFunction",
    "NativeFunctionsGroup",
    "Precomputed",
    "UfuncInnerLoop",
    "generate_autogen",
    "group_native_functions",
    "lint",
    "lint_files",
    "load_backend_yaml",
    "load_derivatives",
    "load_native_functions",
    "load_tags",
    "read_backend_yaml",
    "read_derivatives",
    "read_native_functions",
    "split_dispatch_keys",
    "with_autogen",
]
