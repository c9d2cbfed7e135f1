"""Turn `native_functions.yaml` into live operators at import: generate, cache, register, attach.

`load()` (run once by `import pyaten`):
1. imports `pyaten.native.kernels`, which registers every `@native` kernel;
2. reads the YAML into records (`pyaten.declarations.load_native_functions`);
3. generates the module source with `pyaten.codegen.gen_native.generate` - or reuses the
   copy cached in `pyaten/_generated/` under a hash of the YAML and the generator's sources;
4. defines every schema in the dispatcher and registers the kernels the module lists
   (a kernel name the registry lacks is recorded in `Loaded.missing`, not fatal);
5. builds the parsed signatures of each Python name and attaches the methods and operators
   to `Tensor`. The functions are returned for `pyaten/__init__.py` to export.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import marshal
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from pyaten.native import gen_support, registry, tensor_api
from pyaten.native.arg_parser import ParsedSignature
from pyaten.native.runtime import Tensor

NATIVE_YAML = Path(__file__).with_name("native_functions.yaml")
GENERATED_DIR = Path(__file__).resolve().parent.parent / "_generated"
_CODEGEN_DIR = Path(__file__).resolve().parent.parent / "codegen"
_DECLARATIONS_DIR = Path(__file__).resolve().parent.parent / "declarations"
NAMESPACE = "aten"


@dataclass
class Loaded:
    """What `load()` produced."""

    module: ModuleType
    functions: dict[str, Any]
    methods: dict[str, Any]
    records: list[Any]
    missing: list[str] = field(default_factory=list)
    source_path: str = ""
    handles: list[Any] = field(default_factory=list)


_LOADED: Loaded | None = None
_LOCK = threading.Lock()


def _cache_key(yaml_text: str) -> str:
    # The generated module depends on the YAML, the generator and how declarations are read.
    digest = hashlib.sha256(yaml_text.encode())
    for path in sorted(_CODEGEN_DIR.glob("*.py")) + sorted(_DECLARATIONS_DIR.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()[:16]


def _generate_source(records: list[Any], yaml_path: str) -> str:
    from pyaten.codegen.gen_native import generate

    return generate(records, yaml_path, NAMESPACE).source


def _write_atomic(path: Path, text: str) -> None:
    _write_atomic_bytes(path, text.encode())


def _write_atomic_bytes(path: Path, data: bytes) -> None:
    # Another process may import at the same time: write aside, then rename into place.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _import_file(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def generated_module_source(yaml_path: Path = NATIVE_YAML) -> tuple[str, list[Any]]:
    """The module source for a YAML file and its records (always freshly generated)."""
    from pyaten.declarations import load_native_functions

    records = load_native_functions(str(yaml_path))
    return _generate_source(records, _display_path(yaml_path)), records


def _display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path(__file__).resolve().parent.parent.parent))
    except ValueError:
        return str(path)


def _register(module: ModuleType, records: list[Any], loaded: Loaded, namespace: str) -> None:
    from pyaten.dispatch import registry as dispatch_registry

    with dispatch_registry.batch():  # each operator's table computed once, at the end
        _register_all(module, records, loaded, namespace)


def _register_all(module: ModuleType, records: list[Any], loaded: Loaded, namespace: str) -> None:
    from pyaten.dispatch import registry as dispatch_registry
    from pyaten.dispatch.keys import parse_dispatch_key

    for fn in records:
        schema = dispatch_registry.with_namespace(fn.func, namespace)
        debug = f"registered at {fn.loc.path}:{fn.loc.line}" if fn.loc else "native_functions"
        loaded.handles.append(
            dispatch_registry.define(schema, debug=debug, tags=tuple(sorted(fn.tags)))
        )
    for operator, key, kernel, needs, kind, source in module.REGISTRATIONS:
        lacking = [n for n in needs if registry.lookup(n) is None]
        if lacking:
            loaded.missing.append(f"{operator} [{key}]: no @native kernel {', '.join(lacking)}")
            continue
        fn = getattr(module, kernel) if kind in GENERATED_KINDS else registry.lookup(
            kernel
        )
        where = registry.site(needs[-1]) if needs else source
        loaded.handles.append(
            dispatch_registry.register_kernel(
                operator,
                parse_dispatch_key(key),
                fn,
                debug=f"{kind} kernel {kernel} at {where} (declared at {source})",
            )
        )


# Registration kinds whose kernel is a function of the generated module, not an @native one.
GENERATED_KINDS = ("structured", "autogen", "backend_select")


def _bind(module: ModuleType, records: list[Any], namespace: str) -> None:
    from pyaten.codegen.gen_native import python_names
    from pyaten.dispatch.registry import get_operator

    for global_name, qualified in module.ENTRIES.items():
        setattr(module, global_name, get_operator(qualified))
    funcs, methods = python_names(records)
    for table, name, method in module.BINDINGS:
        schemas = (methods if method else funcs)[name]
        build = functools.partial(_parsed_signatures, name, schemas, method, namespace)
        setattr(module, table, gen_support.Binding(name, method, build))


def _parsed_signatures(name: str, schemas: list[Any], method: bool, namespace: str):
    from pyaten.codegen.python_signature import group_signatures
    from pyaten.dispatch.registry import get_operator

    parsed = []
    for sig in group_signatures(name, schemas, method):
        p = ParsedSignature(sig)
        p.functional_name = _qualify(p.functional_name, namespace)
        p.out_name = _qualify(p.out_name, namespace)
        p.resolve(get_operator)
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
        if fn is not None:
            loaded.functions[name] = fn


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


@dataclass(frozen=True)
class DeclaredFunction:
    """What the loader needs of a declaration, rebuilt from the generated module's
    `DECLARATIONS` so a cached import skips reading the YAML (see `load`)."""

    func: Any
    variants: frozenset[str]
    tags: frozenset[str]
    loc: Any
    generated_from: Any


@dataclass(frozen=True)
class _Location:
    path: str
    line: int


def _declared_functions(module: ModuleType) -> list[DeclaredFunction]:
    from pyaten.schema import OperatorName, parse

    records = []
    for text, variants, tags, path, line, generated_from in module.DECLARATIONS:
        records.append(DeclaredFunction(
            parse(text), frozenset(variants), frozenset(tags), _Location(path, line),
            OperatorName("", *generated_from.partition(".")[::2]) if generated_from else None,
        ))
    return records


def _prune_old_caches(current: Path, keep: int = 4) -> None:
    """Remove all but the newest few generated modules (each YAML edit makes a new one)."""
    try:
        sources = sorted(GENERATED_DIR.glob("native_*.py"), key=lambda p: p.stat().st_mtime)
        for old in sources[:-keep]:
            if old != current:
                old.unlink(missing_ok=True)
                old.with_suffix(".code").unlink(missing_ok=True)
    except OSError:
        pass  # another process pruned at the same time


def _exec_cached(name: str, source_path: Path) -> ModuleType:
    """Run the generated module from its marshalled code object (compiled once and kept next
    to the source, whether or not Python writes .pyc files here)."""
    code_path = source_path.with_suffix(".code")
    code = None
    if code_path.exists():
        try:
            code = marshal.loads(code_path.read_bytes())
        except (EOFError, ValueError, TypeError):
            code = None
    if code is None:
        code = compile(source_path.read_text(), str(source_path), "exec")
        try:
            _write_atomic_bytes(code_path, marshal.dumps(code))
        except OSError:
            pass  # a read-only install: compile each time
    return _exec_code(name, code, str(source_path))


def _exec_code(name: str, code: Any, file: str) -> ModuleType:
    module = ModuleType(name)
    module.__file__ = file
    sys.modules[name] = module
    exec(code, module.__dict__)  # noqa: S102 - our own generated module
    return module


def load() -> Loaded:
    """Generate (or reuse), register and attach everything; runs once per process.

    The generated module is cached under a hash of the YAML, the generator and the
    declarations reader; a cached import neither reads the YAML into records nor compiles."""
    global _LOADED
    with _LOCK:
        if _LOADED is not None:
            return _LOADED
        import pyaten.native.kernels  # noqa: F401 - registers every @native kernel

        yaml_text = NATIVE_YAML.read_text()
        cache = GENERATED_DIR / f"native_{_cache_key(yaml_text)}.py"
        name = "pyaten._generated.native_functions"
        module = None
        if not cache.exists():
            from pyaten.declarations import load_native_functions

            full_records = load_native_functions(str(NATIVE_YAML))
            source = _generate_source(full_records, _display_path(NATIVE_YAML))
            try:
                _write_atomic(cache, source)
                _prune_old_caches(cache)
            except OSError:  # a read-only install: generate in memory on every import
                module = _exec_code(name, compile(source, "<generated native>", "exec"),
                                    "<generated native>")
        if module is None:
            module = _exec_cached(name, cache)
        records = _declared_functions(module)
        loaded = Loaded(module, {}, {}, records, source_path=module.__file__)
        _register(module, records, loaded, NAMESPACE)
        _bind(module, records, NAMESPACE)
        _collect_functions(module, loaded)
        _attach(module, loaded)
        _LOADED = loaded
        return loaded


def load_declarations(path_or_text: str, namespace: str) -> Loaded:
    """Generate and register another set of declarations (an extension's own YAML, a test's)
    under `namespace`: operators `namespace::name.overload`, their kernels from `@native`,
    and bindings in `Loaded.functions` (Tensor is left alone). `Loaded.handles` undo it."""
    from pyaten.codegen.gen_native import generate
    from pyaten.declarations import load_native_functions

    records = load_native_functions(path_or_text)
    source = generate(records, f"<{namespace} declarations>", namespace).source
    module = ModuleType(f"pyaten._generated.{namespace}")
    exec(compile(source, f"<generated {namespace}>", "exec"), module.__dict__)  # noqa: S102
    loaded = Loaded(module, {}, {}, records, source_path=f"<generated {namespace}>")
    _register(module, records, loaded, namespace)
    _bind(module, records, namespace)
    _collect_functions(module, loaded)
    return loaded
