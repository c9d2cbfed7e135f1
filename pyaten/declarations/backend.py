"""Reading an out-of-tree backend's YAML (PyTorch's `gen_backend_stubs` format).

```
backend: PrivateUse1          # a backend component: its key and Autograd<backend> are used
cpp_namespace: my_backend     # required, as in PyTorch
class_name: MyBackendNativeFunctions
supported:                    # operators whose kernels the backend provides
- add.Tensor
- abs
autograd:                     # operators the backend differentiates itself
- relu
symint: [add.Tensor]          # kernels that take SymInts (name gets `_symint`)
```

Every operator named must be declared in the native file it is read against; all variants
of one function go either under `supported` or under `autograd`, never split, as PyTorch
requires.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from pyaten.declarations._yaml import YamlMap, YamlSyntaxError, load_yaml
from pyaten.declarations.dispatch_keys import BACKEND_COMPONENTS
from pyaten.declarations.grouping import pre_group
from pyaten.declarations.model import Diagnostic, Location, NativeFunction
from pyaten.declarations.native import load_native_functions, read_source
from pyaten.declarations.reporting import (
    Report,
    collect_diagnostics,
    did_you_mean,
    raise_on_errors,
)

__all__ = ["BACKEND_KEYS", "BackendDeclaration", "read_backend_yaml", "load_backend_yaml"]

BACKEND_KEYS: tuple[str, ...] = (
    "backend", "class_name", "cpp_namespace", "extra_headers", "supported", "autograd",
    "full_codegen", "non_native", "ir_gen", "symint", "use_out_as_primary", "device_guard",
)  # fmt: skip
_OP_LISTS = ("supported", "autograd", "full_codegen", "symint")


@dataclass(frozen=True, slots=True, eq=False)
class BackendDeclaration:
    """A backend YAML file: which operators the backend implements, and under which key.

    `kernels` maps each supported operator's name (`"add.Tensor"`) to the kernel name PyTorch
    expects (`add`, `add_out` for out variants, `_symint` appended for `symint:` ops);
    `autograd_kernels` the same for the `autograd:` list.
    """

    backend: str
    cpp_namespace: str
    class_name: str | None
    dispatch_key: str
    autograd_key: str | None
    supported: tuple[NativeFunction, ...]
    autograd: tuple[NativeFunction, ...]
    kernels: Mapping[str, str]
    autograd_kernels: Mapping[str, str]
    use_out_as_primary: bool
    device_guard: bool
    loc: Location


def _kernel_name(fn: NativeFunction, symint: set[str]) -> str:
    name = fn.func.name.name + ("_out" if fn.func.out else "")
    return name + "_symint" if str(fn.func.name) in symint else name


class _Reader:
    __slots__ = ("path", "report", "by_name")

    def __init__(self, path: str, report: Report, functions: Sequence[NativeFunction]) -> None:
        self.path = path
        self.report = report
        self.by_name = {str(f.func.name): f for f in functions}

    def read(self, e: YamlMap) -> BackendDeclaration | None:
        report = self.report
        for key, line in e.duplicates:
            report(line, "duplicate-key", f"key '{key}' appears twice", "remove one")
        for key in e:
            if key not in BACKEND_KEYS:
                hint = did_you_mean(str(key), BACKEND_KEYS) or "keys: " + ", ".join(BACKEND_KEYS)
                report(e.line_of(key), "unknown-key", f"unknown key '{key}'", hint)
        backend = e.get("backend")
        namespace = e.get("cpp_namespace")
        for key, value in (("backend", backend), ("cpp_namespace", namespace)):
            if not isinstance(value, str) or not value:
                report(e.line_of(key), "missing-backend-key", f"'{key}' is required (a name)")
        flags = {}
        for key in ("use_out_as_primary", "device_guard"):
            flags[key] = e.get(key, False)
            if not isinstance(flags[key], bool):
                report(e.line_of(key), "bad-value", f"'{key}' must be True or False")
        lists = {key: self._op_list(e, key) for key in _OP_LISTS}
        supported = lists["supported"] + lists["full_codegen"]
        if isinstance(backend, str) and backend and backend not in BACKEND_COMPONENTS:
            hint = did_you_mean(backend, BACKEND_COMPONENTS) or (
                "out-of-tree backends use PrivateUse1 (or a built-in backend name)"
            )
            report(
                e.line_of("backend"),
                "unknown-backend",
                f"'{backend}' is not a backend with its own dispatch key",
                hint,
            )
            return None
        self._check_split(e, supported, lists["autograd"])
        if not isinstance(backend, str) or not backend or not isinstance(namespace, str):
            return None
        symint = {str(f.func.name) for f in lists["symint"]}
        return BackendDeclaration(
            backend=backend,
            cpp_namespace=namespace,
            class_name=e.get("class_name") if isinstance(e.get("class_name"), str) else None,
            dispatch_key=backend,
            autograd_key=f"Autograd{backend}" if lists["autograd"] else None,
            supported=tuple(supported),
            autograd=tuple(lists["autograd"]),
            kernels=MappingProxyType(
                {str(f.func.name): _kernel_name(f, symint) for f in supported}
            ),
            autograd_kernels=MappingProxyType(
                {str(f.func.name): _kernel_name(f, symint) for f in lists["autograd"]}
            ),
            use_out_as_primary=bool(flags["use_out_as_primary"]),
            device_guard=bool(flags["device_guard"]),
            loc=Location(self.path, e.line),
        )

    def _op_list(self, e: YamlMap, key: str) -> list[NativeFunction]:
        value = e.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.report(e.line_of(key), "bad-value", f"'{key}' must be a list of operator names")
            return []
        lines = getattr(value, "lines", None) or [e.line_of(key)] * len(value)
        found: list[NativeFunction] = []
        seen: set[str] = set()
        for name, line in zip(value, lines):
            if not isinstance(name, str):
                self.report(line, "bad-value", f"'{key}' items must be operator names")
                continue
            fn = self.by_name.get(name.strip())
            if fn is None:
                hint = did_you_mean(name, self.by_name) or "declare it in the native file"
                self.report(
                    line,
                    "backend-unknown-op",
                    f"'{name}' under '{key}' is not a declared operator",
                    hint,
                )
            elif name in seen:
                self.report(line, "duplicate-op", f"'{name}' is listed twice under '{key}'")
            else:
                seen.add(name)
                found.append(fn)
        return found

    def _check_split(self, e: YamlMap, supported, autograd) -> None:
        """All variants of a function go under one list (PyTorch cannot mix them)."""
        forward = {id(f) for f in supported}
        backward = {id(f) for f in autograd}
        for kinds in pre_group([*supported, *autograd]).values():
            members = list(kinds.values())
            if any(id(f) in forward for f in members) and any(id(f) in backward for f in members):
                names = ", ".join(str(f.func.name) for f in members)
                self.report(
                    e.line_of("autograd"),
                    "backend-mixed-autograd",
                    f"variants of one function ({names}) are split between "
                    "'supported' and 'autograd'",
                    "list them all under one key",
                )


def read_backend_yaml(
    text: str, path: str, native_functions: Sequence[NativeFunction]
) -> tuple[BackendDeclaration | None, list[Diagnostic]]:
    """The declaration (None when unusable) and every problem found (never raises)."""
    diagnostics, report = collect_diagnostics(path)
    try:
        data = load_yaml(text)
    except YamlSyntaxError as exc:
        report(exc.line, "yaml-syntax", exc.message)
        return None, diagnostics
    if not isinstance(data, YamlMap):
        report(1, "bad-file", "a backend YAML file is a mapping (`backend:`, `supported:`...)")
        return None, diagnostics
    declaration = _Reader(path, report, native_functions).read(data)
    diagnostics.sort(key=lambda d: d.line)
    return declaration, diagnostics


def load_backend_yaml(
    path_or_text: str | os.PathLike[str],
    native_functions: Sequence[NativeFunction] | str | os.PathLike[str],
) -> BackendDeclaration:
    """A backend YAML (path or text) read against a native file (records or a path)."""
    text, path = read_source(path_or_text)
    if isinstance(native_functions, (str, os.PathLike)):
        native_functions = load_native_functions(native_functions)
    declaration, diagnostics = read_backend_yaml(text, path or "<string>", native_functions)
    raise_on_errors(diagnostics)
    assert declaration is not None  # no errors means every required key was read
    return declaration
