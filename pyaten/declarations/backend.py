"""Reading an out-of-tree backend's YAML (PyTorch's `gen_backend_stubs` format, extended).

```
backend: PrivateUse1          # a backend component: its key and Autograd<backend> are used,
                              # or a plug-in device name (`openreg`, lower case)
cpp_namespace: my_backend     # required, as in PyTorch
class_name: MyBackendNativeFunctions
supported:                    # operators whose kernels the backend provides
- add.Tensor
- abs
- func: mm                    # PyTorch's long form; `dispatch:` names the kernel
  dispatch: {PrivateUse1: my_mm}
autograd:                     # operators the backend differentiates itself
- relu
symint: [add.Tensor]          # kernels that take SymInts (name gets `_symint`)
fallback: cpu                 # plug-in devices: error | warn | cpu
structured:                   # structured operators (out entries) and how the device runs them
  add.out: stub               # upstream meta and impl; the device registers DispatchStub kernels
  mul.out: impl               # upstream meta, the device's impl
  exp.out: meta_impl          # the device's meta and impl
fallback_overrides:           # per-operator fallback policy (a name means all its overloads)
  topk: error
force_fallback:               # composites that read memory directly: run them on the CPU
- convolution
autocast: cpu                 # plug-in devices: autocast with this device type's policy lists
sparse:                       # kernels for sparse COO tensors on the device (Sparse<backend>),
- _to_dense                   # named sparse_<op> (`sparse__to_dense`, `sparse_add_Tensor`)
sparse_csr: [values]          # compressed layouts (SparseCsr<backend>), named sparse_csr_<op>
```

Every operator named must be declared in the native file it is read against; all variants
of one function go either under `supported` or under `autograd`, never split, as PyTorch
requires.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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

__all__ = [
    "BACKEND_KEYS",
    "LAYOUT_LISTS",
    "FALLBACK_POLICIES",
    "STRUCTURED_STRATEGIES",
    "BackendDeclaration",
    "load_backend_yaml",
    "read_backend_yaml",
]

BACKEND_KEYS: tuple[str, ...] = (
    "backend", "class_name", "cpp_namespace", "extra_headers", "supported", "autograd",
    "full_codegen", "non_native", "ir_gen", "symint", "use_out_as_primary", "device_guard",
    "fallback", "structured", "fallback_overrides", "force_fallback", "autocast", "sparse",
    "sparse_csr",
)  # fmt: skip
_OP_LISTS = ("supported", "autograd", "full_codegen", "symint", "force_fallback", "sparse",
             "sparse_csr")  # fmt: skip
# layout lists -> the functionality of the key their kernels go to (Sparse<backend>) and the
# prefix of the kernel names (`sparse_add_Tensor`, `sparse_csr_values`)
LAYOUT_LISTS: dict[str, str] = {"sparse": "Sparse", "sparse_csr": "SparseCsr"}
FALLBACK_POLICIES: tuple[str, ...] = ("error", "warn", "cpu")
STRUCTURED_STRATEGIES: tuple[str, ...] = ("stub", "impl", "meta_impl")
# Device types that are not plug-in names (their backends are written CPU, CUDA, ...).
_BUILTIN_DEVICE_TYPES = frozenset(
    ["cpu", "cuda", "hip", "xla", "mps", "ipu", "xpu", "hpu", "ve", "lazy", "mtia", "maia",
     "meta", "fpga", "vulkan", "metal", "mkldnn", "privateuseone"]
)  # fmt: skip


def _no_entries() -> Mapping[str, str]:
    return MappingProxyType({})


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
    device: str | None = None  # a plug-in device name given as `backend:`
    fallback: str | None = None
    # out entry -> strategy; per-operator policies; each named operator's line; the kernel
    # names `dispatch:` gives
    structured: Mapping[str, str] = field(default_factory=_no_entries)
    fallback_overrides: Mapping[str, str] = field(default_factory=_no_entries)
    lines: Mapping[str, int] = field(default_factory=_no_entries)
    dispatch_names: Mapping[str, str] = field(default_factory=_no_entries)
    force_fallback: tuple[str, ...] = ()
    autocast: str | None = None  # whose autocast policy lists a plug-in device uses (docs/amp.md)
    # operators with kernels for sparse COO / compressed tensors (the `sparse:`, `sparse_csr:`
    # lists), registered at Sparse<backend> / SparseCsr<backend>
    sparse: tuple[str, ...] = ()
    sparse_csr: tuple[str, ...] = ()


def _kernel_name(fn: NativeFunction, symint: set[str]) -> str:
    name = fn.func.name.name + ("_out" if fn.func.out else "")
    return name + "_symint" if str(fn.func.name) in symint else name


class _Reader:
    __slots__ = ("path", "report", "by_name", "lines", "dispatch_names")

    def __init__(self, path: str, report: Report, functions: Sequence[NativeFunction]) -> None:
        self.path = path
        self.report = report
        self.by_name = {str(f.func.name): f for f in functions}
        self.lines: dict[str, int] = {}
        self.dispatch_names: dict[str, str] = {}

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
        device = None
        if isinstance(backend, str) and backend and backend not in BACKEND_COMPONENTS:
            if _is_device_name(backend):
                device = backend
            else:
                hint = did_you_mean(backend, BACKEND_COMPONENTS) or (
                    "out-of-tree backends use PrivateUse1, a plug-in device name (lower case, "
                    "e.g. openreg) or a built-in backend name"
                )
                report(
                    e.line_of("backend"),
                    "unknown-backend",
                    f"'{backend}' is not a backend with its own dispatch key",
                    hint,
                )
                return None
        policy = self._policy(e, "fallback", e.get("fallback"), e.line_of("fallback"))
        autocast = e.get("autocast")
        if autocast is not None and (not isinstance(autocast, str) or not autocast):
            report(e.line_of("autocast"), "bad-value",
                   "'autocast' names the device type whose policy lists to use (e.g. cpu)")
            autocast = None
        elif autocast is not None and device is None:
            report(e.line_of("autocast"), "bad-value",
                   "'autocast' is for plug-in devices (a lower-case `backend:` name)")
            autocast = None
        structured = self._structured(e)
        overrides = self._overrides(e)
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
            device=device,
            fallback=policy,
            structured=MappingProxyType(structured),
            fallback_overrides=MappingProxyType(overrides),
            lines=MappingProxyType(dict(self.lines)),
            dispatch_names=MappingProxyType(dict(self.dispatch_names)),
            force_fallback=tuple(str(f.func.name) for f in lists["force_fallback"]),
            autocast=autocast,
            sparse=tuple(str(f.func.name) for f in lists["sparse"]),
            sparse_csr=tuple(str(f.func.name) for f in lists["sparse_csr"]),
        )

    def _policy(self, e: YamlMap, key: str, value: object, line: int) -> str | None:
        if value is None:
            return None
        if value not in FALLBACK_POLICIES:
            hint = did_you_mean(str(value), FALLBACK_POLICIES) or (
                "one of: " + ", ".join(FALLBACK_POLICIES)
            )
            self.report(line, "bad-fallback", f"'{key}' must be error, warn or cpu, got "
                        f"{value!r}", hint)  # fmt: skip
            return None
        return str(value)

    def _structured(self, e: YamlMap) -> dict[str, str]:
        value = e.get("structured")
        if value is None:
            return {}
        if not isinstance(value, YamlMap):
            self.report(e.line_of("structured"), "bad-value",
                        "'structured' must map out operators to a strategy (stub, impl, "
                        "meta_impl)")  # fmt: skip
            return {}
        found: dict[str, str] = {}
        for name, strategy in value.items():
            line = value.line_of(name)
            name = str(name).strip()
            fn = self.by_name.get(name)
            if fn is None:
                hint = did_you_mean(name, self.by_name) or "declare it in the native file"
                self.report(line, "backend-unknown-op",
                            f"'{name}' under 'structured' is not a declared operator", hint)
                continue
            if not fn.structured:
                delegate = fn.structured_delegate
                hint = (
                    f"name its out entry instead: {delegate.name}.{delegate.overload}".rstrip(".")
                    if delegate is not None
                    else "list it under 'supported' instead"
                )
                self.report(line, "backend-not-structured",
                            f"'{name}' under 'structured' is not a structured out operator",
                            hint)  # fmt: skip
                continue
            if strategy not in STRUCTURED_STRATEGIES:
                hint = did_you_mean(str(strategy), STRUCTURED_STRATEGIES) or (
                    "one of: " + ", ".join(STRUCTURED_STRATEGIES)
                )
                self.report(line, "bad-strategy",
                            f"strategy of '{name}' must be stub, impl or meta_impl, got "
                            f"{strategy!r}", hint)  # fmt: skip
                continue
            found[name] = str(strategy)
            self.lines.setdefault(name, line)
        return found

    def _overrides(self, e: YamlMap) -> dict[str, str]:
        value = e.get("fallback_overrides")
        if value is None:
            return {}
        if not isinstance(value, YamlMap):
            self.report(e.line_of("fallback_overrides"), "bad-value",
                        "'fallback_overrides' must map operator names to a policy")
            return {}
        bases = {f.func.name.name for f in self.by_name.values()}
        found: dict[str, str] = {}
        for name, policy in value.items():
            line = value.line_of(name)
            name = str(name).strip()
            if name not in self.by_name and name not in bases:
                hint = did_you_mean(name, [*self.by_name, *bases]) or (
                    "declare it in the native file"
                )
                self.report(line, "backend-unknown-op",
                            f"'{name}' under 'fallback_overrides' is not a declared operator",
                            hint)  # fmt: skip
                continue
            checked = self._policy(e, name, policy, line)
            if checked is not None:
                found[name] = checked
        return found

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
            if isinstance(name, YamlMap) and key == "supported":
                name = self._long_form(name, line)
                if name is None:
                    continue
            if not isinstance(name, str):
                self.report(line, "bad-value", f"'{key}' items must be operator names")
                continue
            name = name.strip()
            fn = self.by_name.get(name)
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
                self.lines.setdefault(f"{key}:{name}" if key in LAYOUT_LISTS else name, line)
        return found

    def _long_form(self, item: YamlMap, line: int) -> str | None:
        """`- func: mm` with an optional `dispatch: {Key: kernel_name}`: the operator's name."""
        name = item.get("func")
        if not isinstance(name, str):
            self.report(line, "bad-value", "a 'supported' mapping needs 'func: name.overload'")
            return None
        for extra in item:
            if extra not in ("func", "dispatch"):
                self.report(item.line_of(extra), "unknown-key",
                            f"unknown key '{extra}' in a 'supported' entry",
                            "keys: func, dispatch")  # fmt: skip
        dispatch = item.get("dispatch")
        if dispatch is not None:
            if not isinstance(dispatch, dict) or len(dispatch) != 1:
                self.report(item.line_of("dispatch"), "bad-value",
                            "'dispatch' maps one key to the kernel's name")
            else:
                kernel = next(iter(dispatch.values()))
                if not isinstance(kernel, str) or not kernel.isidentifier():
                    self.report(item.line_of("dispatch"), "bad-value",
                                f"the kernel name must be an identifier, got {kernel!r}")
                else:
                    self.dispatch_names[name.strip()] = kernel
        return name

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


def _is_device_name(name: str) -> bool:
    return name.isidentifier() and name == name.lower() and name not in _BUILTIN_DEVICE_TYPES


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
