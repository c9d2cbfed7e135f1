"""Reading native_functions.yaml into `NativeFunction` records.

`read_native_functions` never raises for a bad file: it returns the records it could build
and a `Diagnostic` for every problem (the linter shows them all). `load_native_functions`
raises `DeclarationError` when there is any error. Each entry's keys are checked here;
rules about the schema alone live in `schema_rules.py`, rules across entries in
`cross_rules.py`.
"""

from __future__ import annotations

import os
from types import MappingProxyType

from pyaten.declarations._yaml import YamlMap, paused_gc
from pyaten.declarations.autogen import with_autogen
from pyaten.declarations.cross_rules import check_native_functions
from pyaten.declarations.dispatch_keys import (
    DISPATCH_KEYS,
    RUNTIME_ONLY_KEYS,
    suggest_dispatch_key,
)
from pyaten.declarations.entry_rules import check_entry
from pyaten.declarations.model import (
    Diagnostic,
    Location,
    NativeFunction,
    Precomputed,
    UfuncInnerLoop,
)
from pyaten.declarations.names import operator_name
from pyaten.declarations.reporting import (
    Report,
    collect_diagnostics,
    did_you_mean,
    load_entry_list,
    mappings,
    raise_on_errors,
    report_duplicate_keys,
)
from pyaten.declarations.schema_rules import check_schema, classify_schema_error
from pyaten.declarations.tags import load_tags, tags_path_for
from pyaten.schema import SchemaError, parse

__all__ = ["NATIVE_KEYS", "read_native_functions", "load_native_functions", "read_source"]

# Every key an entry may have (PyTorch 2.13's set), in the order the docs describe them.
NATIVE_KEYS: tuple[str, ...] = (
    "func",
    "variants",
    "dispatch",
    "structured",
    "structured_delegate",
    "structured_inherits",
    "precomputed",
    "autogen",
    "device_guard",
    "device_check",
    "manual_kernel_registration",
    "manual_cpp_binding",
    "use_const_ref_for_mutable_tensors",
    "python_module",
    "category_override",
    "tags",
    "cpp_no_default_args",
    "ufunc_inner_loop",
)
_KNOWN_KEYS = frozenset(NATIVE_KEYS)
_BOOL_KEYS = (
    "structured",
    "device_guard",
    "manual_kernel_registration",
    "manual_cpp_binding",
    "use_const_ref_for_mutable_tensors",
)
_STR_KEYS = ("structured_inherits", "python_module", "category_override")
_VARIANTS = frozenset({"function", "method"})
_DEVICE_CHECKS = frozenset({"NoCheck", "ExactSame"})
_UFUNC_KEYS = frozenset(
    {
        "CUDAFunctor",
        "CUDAFunctorOnOther",
        "CUDAFunctorOnSelf",
        "CPUScalar",
        "CPUVector",
        "ScalarOnly",
        "Generic",
    }
)


def read_source(path_or_text: str | os.PathLike[str]) -> tuple[str, str | None]:
    """`(text, path)` for a path, or `(text, None)` for YAML text.

    A string is text when it has a newline, is blank, or is no file and reads like YAML
    (`- func: ...` on one line).
    """
    if isinstance(path_or_text, str):
        text = path_or_text
        if "\n" in text or not text.strip():
            return text, None
        if not os.path.exists(text) and (text.lstrip()[:1] in "-#[{" or ": " in text):
            return text, None
    path = os.fspath(path_or_text)
    with open(path, encoding="utf-8") as f:
        return f.read(), path


class _EntryReader:
    """Turns one YAML entry into a NativeFunction, reporting problems as it goes."""

    __slots__ = ("path", "valid_tags", "report")

    def __init__(self, path: str, valid_tags: frozenset[str], report: Report) -> None:
        self.path = path
        self.valid_tags = valid_tags
        self.report = report

    def read(self, e: YamlMap) -> NativeFunction | None:
        report = self.report
        report_duplicate_keys(e, report)
        for key in e:
            if key not in _KNOWN_KEYS:
                hint = did_you_mean(str(key), NATIVE_KEYS) or "valid keys: " + ", ".join(
                    NATIVE_KEYS
                )
                report(e.line_of(key), "unknown-key", f"unknown key '{key}'", hint)
        func_text = e.get("func")
        if func_text is None:
            report(
                e.line,
                "missing-func",
                "entry has no 'func:' schema",
                "every entry starts with `- func: name.overload(args) -> returns`",
            )
            return None
        if not isinstance(func_text, str):
            report(e.line_of("func"), "bad-value", "'func' must be a schema string")
            return None
        try:
            func = parse(func_text)
        except SchemaError as exc:
            code, hint = classify_schema_error(exc)
            caret = f"{func_text}\n{' ' * exc.column}^"
            report(
                e.line_of("func"),
                code,
                f"{exc.problem} (schema column {exc.column + 1})",
                f"{hint}\n{caret}" if hint else caret,
            )
            return None

        fields: dict[str, object] = {}
        for key in _BOOL_KEYS:
            value = e.get(key)
            if value is not None:
                if isinstance(value, bool):
                    fields[key] = value
                else:
                    report(
                        e.line_of(key), "bad-value", f"'{key}' must be True or False, got {value!r}"
                    )
        for key in _STR_KEYS:
            value = e.get(key)
            if value is not None:
                if isinstance(value, str):
                    fields[key] = value
                else:
                    report(e.line_of(key), "bad-value", f"'{key}' must be a string")
        self._variants(e, fields)
        self._device_check(e, fields)
        self._structured_delegate(e, fields)
        self._autogen(e, fields)
        self._tags(e, fields)
        self._cpp_no_default_args(e, func, fields)
        self._precomputed(e, fields)
        self._ufunc(e, fields)
        self._dispatch(e, func, fields)
        fn = NativeFunction(func=func, loc=Location(self.path, e.line), raw=e, **fields)
        check_schema(fn, report)
        check_entry(e, fn, report)
        return fn

    # -- one method per key with structure ----------------------------------------------

    def _variants(self, e: YamlMap, fields: dict[str, object]) -> None:
        value = e.get("variants")
        if value is None:
            return
        if not isinstance(value, str):
            self.report(
                e.line_of("variants"),
                "bad-value",
                "'variants' must be a string",
                "write `variants: function, method`",
            )
            return
        names = [v.strip() for v in value.split(",")]
        for v in names:
            if v not in _VARIANTS:
                hint = did_you_mean(v, tuple(_VARIANTS)) or "variants are 'function' and 'method'"
                self.report(e.line_of("variants"), "bad-value", f"unknown variant '{v}'", hint)
        fields["variants"] = frozenset(v for v in names if v in _VARIANTS)

    def _device_check(self, e: YamlMap, fields: dict[str, object]) -> None:
        value = e.get("device_check")
        if value is None:
            return
        if not isinstance(value, str) or value not in _DEVICE_CHECKS:
            self.report(
                e.line_of("device_check"),
                "bad-value",
                f"device_check must be NoCheck or ExactSame, got {value!r}",
            )
            return
        fields["device_check"] = value

    def _structured_delegate(self, e: YamlMap, fields: dict[str, object]) -> None:
        value = e.get("structured_delegate")
        if value is None:
            return
        if not isinstance(value, str) or "::" in value or not value.strip():
            self.report(
                e.line_of("structured_delegate"),
                "bad-value",
                "'structured_delegate' must name an operator without a namespace",
                "write `structured_delegate: add.out`",
            )
            return
        fields["structured_delegate"] = operator_name(value.strip())

    def _autogen(self, e: YamlMap, fields: dict[str, object]) -> None:
        value = e.get("autogen")
        if value is None or value == "":
            return
        if not isinstance(value, str):
            self.report(
                e.line_of("autogen"),
                "bad-value",
                "'autogen' must be a string",
                "write `autogen: foo.out, foo_functional`",
            )
            return
        fields["autogen"] = tuple(operator_name(v.strip()) for v in value.split(","))

    def _tags(self, e: YamlMap, fields: dict[str, object]) -> None:
        value = e.get("tags")
        if value is None:
            return
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(t, str) for t in items):
            self.report(e.line_of("tags"), "bad-value", "'tags' must be a name or a list of names")
            return
        for tag in items:
            if tag not in self.valid_tags:
                hint = did_you_mean(tag, self.valid_tags) or "tags are listed in tags.yaml"
                self.report(
                    e.line_of("tags"), "unknown-tag", f"tag '{tag}' is not in tags.yaml", hint
                )
        fields["tags"] = frozenset(t for t in items if t in self.valid_tags)

    def _cpp_no_default_args(self, e: YamlMap, func, fields: dict[str, object]) -> None:
        value = e.get("cpp_no_default_args")
        if value is None:
            return
        if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
            self.report(
                e.line_of("cpp_no_default_args"),
                "bad-value",
                "'cpp_no_default_args' must be a list of argument names",
            )
            return
        names = {a.name for a in func.arguments}
        for name in value:
            if name not in names:
                self.report(
                    e.line_of("cpp_no_default_args"),
                    "bad-value",
                    f"cpp_no_default_args names '{name}', which is not an argument of {func.name}",
                )
        fields["cpp_no_default_args"] = frozenset(value)

    def _precomputed(self, e: YamlMap, fields: dict[str, object]) -> None:
        value = e.get("precomputed")
        if value is None:
            return
        line = e.line_of("precomputed")
        if not isinstance(value, list) or not value or not all(isinstance(t, str) for t in value):
            self.report(
                line,
                "bad-value",
                "'precomputed' must be a list of strings",
                "write `- dim -> int dim` items",
            )
            return
        replace: list[tuple[str, tuple[str, ...]]] = []
        add: tuple[str, ...] = ()
        for i, item in enumerate(value):
            if " -> " in item:
                param, _, decls = item.partition(" -> ")
                replace.append((param.strip(), tuple(d.strip() for d in decls.split(","))))
            elif i == len(value) - 1:
                add = tuple(d.strip() for d in item.split(","))
            else:
                self.report(
                    line,
                    "bad-value",
                    f"precomputed item '{item}' has no '->'",
                    "only the last item may add parameters without replacing one",
                )
        fields["precomputed"] = Precomputed(tuple(replace), add)

    def _ufunc(self, e: YamlMap, fields: dict[str, object]) -> None:
        value = e.get("ufunc_inner_loop")
        if value is None:
            return
        line = e.line_of("ufunc_inner_loop")
        pairs = [("Generic", value)] if isinstance(value, str) else None
        if isinstance(value, dict):
            pairs = list(value.items())
        if pairs is None:
            self.report(line, "bad-value", "'ufunc_inner_loop' must be a string or a mapping")
            return
        loops: dict[str, UfuncInnerLoop] = {}
        for key, text in pairs:
            key_line = value.line_of(key) if isinstance(value, YamlMap) else line
            if key not in _UFUNC_KEYS:
                self.report(
                    key_line,
                    "bad-value",
                    f"unknown ufunc key '{key}'",
                    did_you_mean(str(key), tuple(_UFUNC_KEYS)),
                )
                continue
            name, _, rest = str(text).partition(" ")
            rest = rest.strip()
            if not name or not (rest.startswith("(") and rest.endswith(")")):
                self.report(
                    key_line,
                    "bad-value",
                    f"ufunc loop '{text}' is not 'name (dtypes)'",
                    "write e.g. `Generic: add (AllAndComplex, BFloat16, Half)`",
                )
                continue
            dtypes = tuple(d.strip() for d in rest[1:-1].split(","))
            loops[key] = UfuncInnerLoop(key, name, dtypes)
        fields["ufunc_inner_loop"] = MappingProxyType(loops)

    def _dispatch(self, e: YamlMap, func, fields: dict[str, object]) -> None:
        value = e.get("dispatch")
        if value is None:
            return
        if not isinstance(value, YamlMap):
            self.report(
                e.line_of("dispatch"),
                "bad-value",
                "'dispatch' must map dispatch keys to kernel names",
            )
            return
        table: dict[str, str] = {}
        for keys, kernel in value.items():
            line = value.line_of(keys)
            if not isinstance(keys, str) or not isinstance(kernel, str) or not kernel.strip():
                self.report(
                    line,
                    "bad-value",
                    f"dispatch entry '{keys}: {kernel}' must map key names to a kernel name",
                )
                continue
            for key in keys.split(","):
                key = key.strip()
                if key not in DISPATCH_KEYS:
                    self._unknown_key(key, line)
                elif key in table:
                    self.report(
                        line,
                        "duplicate-dispatch-key",
                        f"dispatch key '{key}' is given two kernels for {func.name}",
                        f"'{table[key]}' and '{kernel}'",
                    )
                else:
                    table[key] = kernel.strip()
        fields["dispatch"] = MappingProxyType(table)
        fields["dispatch_declared"] = True

    def _unknown_key(self, key: str, line: int) -> None:
        if key in RUNTIME_ONLY_KEYS:
            hint = (
                "autograd kernels come from derivatives.yaml"
                if key.startswith("Autograd")
                else "register kernels to a backend key or a Composite* alias key"
            )
            self.report(
                line,
                "unknown-dispatch-key",
                f"'{key}' cannot hold a kernel in native_functions.yaml",
                hint,
            )
            return
        guess = suggest_dispatch_key(key)
        hint = f"did you mean '{guess}'?" if guess else "see docs/declarations.md for valid keys"
        self.report(line, "unknown-dispatch-key", f"unknown dispatch key '{key}'", hint)


def read_native_functions(
    text: str, path: str = "<string>", *, valid_tags: frozenset[str] | None = None
) -> tuple[list[NativeFunction], list[Diagnostic]]:
    """All records that could be built from `text`, and every problem found (never raises)."""
    with paused_gc():
        return _read_native_functions(text, path, valid_tags)


def _read_native_functions(
    text: str, path: str, valid_tags: frozenset[str] | None
) -> tuple[list[NativeFunction], list[Diagnostic]]:
    diagnostics, report = collect_diagnostics(path)
    data = load_entry_list(text, report, "native_functions.yaml", "func")
    if data is None:
        return [], diagnostics
    if valid_tags is None:
        valid_tags = load_tags(tags_path_for(path if path != "<string>" else None))
    reader = _EntryReader(path, valid_tags, report)
    functions: list[NativeFunction] = []
    for entry in mappings(data, report):
        fn = reader.read(entry)
        if fn is not None:
            functions.append(fn)
    check_native_functions(functions, report)
    diagnostics.sort(key=lambda d: d.line)
    return functions, diagnostics


def load_native_functions(
    path_or_text: str | os.PathLike[str],
    *,
    tags_path: str | os.PathLike[str] | None = None,
    autogen: bool = True,
) -> list[NativeFunction]:
    """Records for every entry of a native_functions.yaml (a path, or the YAML text itself).

    With `autogen` (the default, as in PyTorch) the variants that entries' `autogen:` keys
    name follow the declared ones, tagged `generated`. Raises `DeclarationError` (a
    ValueError) listing every error; warnings are ignored. Tags are checked against
    `tags_path`, else the tags.yaml beside the file, else pyaten's bundled one.
    """
    text, path = read_source(path_or_text)
    valid_tags = load_tags(tags_path if tags_path is not None else tags_path_for(path))
    functions, diagnostics = read_native_functions(text, path or "<string>", valid_tags=valid_tags)
    raise_on_errors(diagnostics)
    if not autogen:
        return functions
    with paused_gc():
        return with_autogen(functions)
