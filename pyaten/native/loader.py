"""Turn `native_functions.yaml` into live operators at import: generate, cache, register, attach.

`load()` (run once by `import pyaten`):
1. imports `pyaten.native.kernels`, which registers every `@native` kernel;
2. generates the module source with `pyaten.codegen.gen_native.generate` from the YAML's
   records (`pyaten.declarations.load_native_functions`) - or reuses the copy cached in
   `pyaten/_generated/` (see Note: the generated-code cache);
3. defines every schema the module lists (`DEFINITIONS`) in the dispatcher, and defers the
   registration of the kernels it lists (`REGISTRATIONS`) to each operator's first use
   (`registry.defer_kernels`); a declared kernel the registry lacks fails the import (see
   Note: a declared kernel must exist);
4. builds the parsed signatures of each Python name (when first called) and attaches the
   methods and operators to `Tensor`. The functions are returned for `pyaten/__init__.py`.

Note: the generated-code cache
    The generated module is a pure function of the YAML and of the code that reads it and
    writes it: `schema/` (parsing, printing), `declarations/` (records, autogen, tags),
    `codegen/`, and this loader (what it passes to the generator). `_cache_key` hashes all of
    them and `lazy_code.py` (which splits the module into the `.lazy` file kept beside it:
    Note: a generated module's units are defined on first use), so editing any one
    regenerates; the module holds no absolute path (declaration sites
    are package-relative), so a moved checkout reuses it. The module lists what to define and
    register, as torchgen's generated registration code does, so a cached import needs no
    records: `Loaded.records` reads the YAML only when asked.

Note: a declared kernel must exist
    A `dispatch:` entry (`CPU: add_out`) or a structured group names kernels that `@native`
    must have registered. One that is not there (a misspelt name, a kernel module left out of
    `pyaten.native.kernels.FAMILIES`) would leave the operator without a kernel for that key,
    and the mistake would surface only at call time as "Could not run ...", far from its
    cause. So `load()` and `load_declarations()` raise `MissingKernelError` instead, listing
    each YAML file and line, the operator, the dispatch key and the name looked for, with the
    closest registered names. The check is the registry lookup registration does anyway: an
    import that succeeds pays nothing for it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pyaten.native.kernels  # noqa: F401 - registers every @native kernel
from pyaten.codegen.python_signature import group_signatures
from pyaten.dispatch import registry as dispatch_registry
from pyaten.dispatch.keys import parse_dispatch_key
from pyaten.dispatch.operator import UnparsedSchema
from pyaten.native import gen_support, lazy_code, registry, tensor_api
from pyaten.native.arg_parser import ParsedSignature
from pyaten.native.runtime import Tensor
from pyaten.schema import FunctionSchema, parse

if TYPE_CHECKING:
    from pyaten.declarations.model import NativeFunction

NATIVE_YAML = Path(__file__).with_name("native_functions.yaml")
GENERATED_DIR = Path(__file__).resolve().parent.parent / "_generated"
# The folder holding the `pyaten` package: declaration sites are written relative to it.
SOURCE_ROOT = Path(__file__).resolve().parent.parent.parent
NAMESPACE = "aten"
# What shapes the generated text besides the YAML (Note: the generated-code cache).
_PACKAGE = Path(__file__).resolve().parent.parent
_GENERATOR_INPUTS = ("schema", "declarations", "codegen")


class MissingKernelError(RuntimeError):
    """A kernel named in the YAML that no `@native` function registers (Note: a declared
    kernel must exist)."""


def _missing_kernel_error(missing: list[tuple[str, str, str, str]]) -> MissingKernelError:
    import difflib  # only on the failing path

    known = list(registry.NATIVE)
    lines = []
    for operator, key, name, source in missing:
        close = difflib.get_close_matches(name, known, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        lines.append(f"{source}: {operator} [{key}] names kernel '{name}', which no @native "
                     f"function registers{hint}")
    return MissingKernelError(
        f"{len(lines)} declared kernel(s) not found; define each with @native in a module that "
        "pyaten.native.kernels.FAMILIES lists, or fix the name in the YAML:\n"
        + "\n".join(lines)
    )


@dataclass
class Loaded:
    """What `load()` produced."""

    module: ModuleType
    functions: dict[str, Any]
    methods: dict[str, Any]
    missing: list[str] = field(default_factory=list)
    # (operator, dispatch key, kernel name, "file:line") per declared kernel not registered
    missing_kernels: list[tuple[str, str, str, str]] = field(default_factory=list)
    source_path: str = ""
    handles: list[Any] = field(default_factory=list)
    # Functions of a `python_module:` (`special`), by public name: `modules["special"]["entr"]`.
    modules: dict[str, dict[str, Any]] = field(default_factory=dict)
    yaml_path: Path | None = None
    _records: list[NativeFunction] | None = None

    @property
    def records(self) -> list[NativeFunction]:
        """The declarations' records (after a cached import, read from the YAML when asked)."""
        if self._records is None:
            assert self.yaml_path is not None, "records of generated text without a YAML"
            self._records = _read_records(self.yaml_path)
        return self._records


_LOADED: Loaded | None = None
_LOCK = threading.Lock()


def _cache_key(yaml_text: str) -> str:
    """A hash of everything that shapes the generated module (Note: the generated-code cache)."""
    digest = hashlib.sha256(yaml_text.encode())
    sources = [Path(__file__), Path(lazy_code.__file__)]  # and the split kept beside it
    for folder in _GENERATOR_INPUTS:
        sources += sorted((_PACKAGE / folder).glob("*.py")) + sorted(
            (_PACKAGE / folder).glob("*.yaml")
        )
    for path in sources:
        digest.update(f"{path.parent.name}/{path.name}".encode())
        digest.update(path.read_bytes())
    digest.update(sys.version.encode())  # the marshalled code object beside it
    return digest.hexdigest()[:16]


# The YAML reader and the generator are imported only when the cache misses (or records are
# asked for): together they cost ~0.2 s of import that a cached `import pyaten` never needs.


def _read_records(path_or_text: str | Path) -> list[NativeFunction]:
    from pyaten.declarations import load_native_functions

    return load_native_functions(str(path_or_text))


def _generate_source(
    records: list[NativeFunction], display_path: str, namespace: str = NAMESPACE
) -> str:
    from pyaten.codegen.gen_native import generate

    return generate(records, display_path, namespace, str(SOURCE_ROOT)).source


def _write_atomic(path: Path, text: str) -> None:
    _write_atomic_bytes(path, text.encode())


def _write_atomic_bytes(path: Path, data: bytes) -> None:
    # Another process may import at the same time: write aside, then rename into place.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def generated_module_source(yaml_path: Path = NATIVE_YAML) -> tuple[str, list[NativeFunction]]:
    """The module source for a YAML file and its records (always freshly generated)."""
    records = _read_records(yaml_path)
    return _generate_source(records, _display_path(yaml_path)), records


def _display_path(path: Path) -> str:
    try:
        return path.resolve().relative_to(SOURCE_ROOT).as_posix()
    except ValueError:
        return str(path)


def _register(
    module: ModuleType, loaded: Loaded, namespace: str, lazy: bool = False
) -> dict[str, FunctionSchema]:
    """Define the module's schemas and register its kernels; the parsed schemas by text.
    `lazy`: define them unparsed (for the cached module of our own YAML, whose schemas the
    generator has parsed and checked already; see Note: nothing per operator is built
    before it is needed, in pyaten/dispatch/operator.py)."""
    with dispatch_registry.batch():  # each operator's table computed once, when first needed
        return _register_all(module, loaded, namespace, lazy)


def _register_all(
    module: ModuleType, loaded: Loaded, namespace: str, lazy: bool
) -> dict[str, FunctionSchema]:
    schemas: dict[str, FunctionSchema] = {}
    for text, tags, source in module.DEFINITIONS:
        if lazy:
            schema: Any = _unparsed(text, namespace)
        else:
            schemas[text] = parse(text)
            schema = dispatch_registry.with_namespace(schemas[text], namespace)
        loaded.handles.append(dispatch_registry.define(
            schema, debug=f"registered at {source}", tags=tuple(tags),
        ))
    by_operator: dict[str, list[tuple]] = {}
    known = registry.NATIVE
    for row in module.REGISTRATIONS:
        operator, key, kernel, needs, kind, source = row
        lacking = [n for n in needs if n not in known]
        if lacking:
            loaded.missing.append(f"{operator} [{key}]: no @native kernel {', '.join(lacking)}")
            loaded.missing_kernels += [(operator, key, n, source) for n in lacking]
        elif lazy:
            by_operator.setdefault(operator, []).append(row)
        else:
            _register_row(module, loaded, row)
    for operator, rows in by_operator.items():  # registered on the operator's first use
        dispatch_registry.defer_kernels(
            operator, [parse_dispatch_key(row[1]) for row in rows],
            functools.partial(_register_rows, module, loaded, rows),
        )
    return schemas


def _register_rows(module: ModuleType, loaded: Loaded, rows: list[tuple]) -> None:
    for row in rows:
        _register_row(module, loaded, row)


def _register_row(module: ModuleType, loaded: Loaded, row: tuple) -> None:
    operator, key, kernel, needs, kind, source = row
    fn = getattr(module, kernel) if kind in GENERATED_KINDS else registry.lookup(kernel)
    where = registry.site(needs[-1]) if needs else source
    loaded.handles.append(
        dispatch_registry.register_kernel(
            operator,
            parse_dispatch_key(key),
            fn,
            debug=f"{kind} kernel {kernel} at {where} (declared at {source})",
        )
    )


def _unparsed(text: str, namespace: str) -> UnparsedSchema:
    name = text[: text.index("(")]  # `add.Tensor(Tensor self, ...) -> Tensor`
    qualified = name if "::" in name else f"{namespace}::{name}"
    return UnparsedSchema(qualified, functools.partial(_parse_qualified, text, namespace))


def _parse_qualified(text: str, namespace: str) -> FunctionSchema:
    return dispatch_registry.with_namespace(parse(text), namespace)


# Registration kinds whose kernel is a function of the generated module, not an @native one.
GENERATED_KINDS = ("structured", "autogen", "backend_select")


def _bind(module: ModuleType, schemas: dict[str, FunctionSchema], namespace: str) -> None:
    for global_name, qualified in module.ENTRIES.items():
        setattr(module, global_name, dispatch_registry.get_operator(qualified))
    for table, name, method, texts in module.BINDINGS:
        build = functools.partial(_parsed_signatures, name, texts, schemas, method, namespace)
        setattr(module, table, gen_support.Binding(name, method, build))


def _parsed_signatures(
    name: str, texts: list[str], schemas: dict[str, FunctionSchema], method: bool,
    namespace: str,
) -> list[ParsedSignature]:
    named = [schemas.get(text) or parse(text) for text in texts]  # parsed on first call
    parsed = []
    for sig in group_signatures(name, named, method):
        p = ParsedSignature(sig)
        p.functional_name = _qualify(p.functional_name, namespace)
        p.out_name = _qualify(p.out_name, namespace)
        p.resolve(dispatch_registry.get_operator)
        parsed.append(p)
    return parsed


def _qualify(name: str | None, namespace: str) -> str | None:
    if name is None or "::" in name:
        return name
    return f"{namespace}::{name}"


# Tensor attributes core defines that a YAML method must not replace.
_PROTECTED = frozenset({"data", "grad", "requires_grad", "shape", "dtype", "device"})


def _collect_functions(module: ModuleType, loaded: Loaded) -> None:
    for name in module.FUNCTIONS:
        fn = getattr(module, name, None)
        if fn is None:
            continue
        python_module = module.PYTHON_MODULES.get(name)
        if python_module is None:
            loaded.functions[name] = fn
        else:  # `special_entr` is `pyaten.special.entr`, as in torch.special
            public = name.removeprefix(f"{python_module}_")
            fn.__qualname__ = public
            fn.__module__ = f"pyaten.{python_module}"
            loaded.modules.setdefault(python_module, {})[public] = fn


def _attach(module: ModuleType, loaded: Loaded) -> None:
    for name in module.METHODS:
        if name in _PROTECTED:
            continue
        method = getattr(module, f"Tensor_{name}")
        method.__name__ = name
        method.__qualname__ = f"Tensor.{name}"
        loaded.methods[name] = method
        setattr(Tensor, name, method)
    for dunder in module.DUNDERS:
        method = getattr(module, f"Operator_{dunder}")
        method.__name__ = dunder
        method.__qualname__ = f"Tensor.{dunder}"
        setattr(Tensor, dunder, method)
    for name, fn in loaded.functions.items():
        fn.__qualname__ = name
        fn.__module__ = "pyaten"
    tensor_api.attach(loaded.functions)


def _prune_old_caches(current: Path, keep: int = 4) -> None:
    """Remove all but the newest few generated modules (each YAML edit makes a new one)."""
    try:
        sources = sorted(GENERATED_DIR.glob("native_*.py"), key=lambda p: p.stat().st_mtime)
        for old in sources[:-keep]:
            if old != current:
                old.unlink(missing_ok=True)
                old.with_suffix(".code").unlink(missing_ok=True)
                old.with_suffix(".lazy").unlink(missing_ok=True)
    except OSError:
        pass  # another process pruned at the same time


def _exec_cached(name: str, source_path: Path) -> ModuleType:
    """Run the generated module from its split code (Note: a generated module's units are
    defined on first use, in pyaten/native/lazy_code.py), made once and kept next to the
    source, whether or not Python writes .pyc files here."""
    split_path = source_path.with_suffix(".lazy")
    parts = None
    if split_path.exists():
        try:
            parts = lazy_code.read(split_path)
        except (EOFError, ValueError, TypeError, OSError):
            parts = None
    if parts is not None and parts[0].co_filename != str(source_path):
        parts = None  # made in a checkout that has moved: tracebacks would name the old one
    if parts is None:
        data = lazy_code.split(source_path.read_text(), str(source_path))
        try:
            _write_atomic_bytes(split_path, data)
        except OSError:
            pass  # a read-only install: split each time
        parts = lazy_code.load(data)
    module = ModuleType(name)
    module.__file__ = str(source_path)
    sys.modules[name] = module
    lazy_code.define(module, parts)
    return module


def _exec_code(name: str, code: Any, file: str) -> ModuleType:
    module = ModuleType(name)
    module.__file__ = file
    sys.modules[name] = module
    exec(code, module.__dict__)  # noqa: S102 - our own generated module
    return module


def load() -> Loaded:
    """Generate (or reuse), register and attach everything; runs once per process.

    The generated module is cached (Note: the generated-code cache); a cached import neither
    reads the YAML into records nor compiles."""
    global _LOADED
    with _LOCK:
        if _LOADED is not None:
            return _LOADED
        yaml_text = NATIVE_YAML.read_text()
        cache = GENERATED_DIR / f"native_{_cache_key(yaml_text)}.py"
        name = "pyaten._generated.native_functions"
        module = None
        records = None
        if not cache.exists():
            records = _read_records(NATIVE_YAML)
            source = _generate_source(records, _display_path(NATIVE_YAML))
            try:
                _write_atomic(cache, source)
                _prune_old_caches(cache)
            except OSError:  # a read-only install: generate in memory on every import
                module = _exec_code(name, compile(source, "<generated native>", "exec"),
                                    "<generated native>")
        if module is None:
            module = _exec_cached(name, cache)
        loaded = Loaded(module, {}, {}, source_path=module.__file__, yaml_path=NATIVE_YAML,
                        _records=records)
        schemas = _register(module, loaded, NAMESPACE, lazy=True)
        if loaded.missing_kernels:  # Note: a declared kernel must exist
            raise _missing_kernel_error(loaded.missing_kernels)
        _bind(module, schemas, NAMESPACE)
        _collect_functions(module, loaded)
        _attach(module, loaded)
        _LOADED = loaded
        return loaded


def load_declarations(path_or_text: str, namespace: str) -> Loaded:
    """Generate and register another set of declarations (an extension's own YAML, a test's)
    under `namespace`: operators `namespace::name.overload`, their kernels from `@native`,
    and bindings in `Loaded.functions` (Tensor is left alone). `Loaded.handles` undo it."""
    records = _read_records(path_or_text)
    display = f"<{namespace} declarations>"
    if "\n" not in str(path_or_text) and Path(path_or_text).is_file():
        display = _display_path(Path(path_or_text))  # errors name the file and line
    source = _generate_source(records, display, namespace)
    module = ModuleType(f"pyaten._generated.{namespace}")
    exec(compile(source, f"<generated {namespace}>", "exec"), module.__dict__)  # noqa: S102
    loaded = Loaded(module, {}, {}, source_path=f"<generated {namespace}>", _records=records)
    schemas = _register(module, loaded, namespace)
    if loaded.missing_kernels:  # Note: a declared kernel must exist
        for handle in reversed(loaded.handles):
            handle.remove()
        raise _missing_kernel_error(loaded.missing_kernels)
    _bind(module, schemas, namespace)
    _collect_functions(module, loaded)
    return loaded
