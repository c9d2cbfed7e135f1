"""Turn derivatives.yaml into autograd kernels at import: generate, cache, register.

As for native_functions.yaml (see Note: the generated-code cache in pyaten/native/loader.py):
the module `pyaten.codegen.gen_autograd` writes is cached in `pyaten/_generated/`, keyed by a
hash of both YAML files and of the code that reads and writes them, so a cached import
parses neither file. Each kernel is registered at the `Autograd` alias key.
"""

from __future__ import annotations

import functools
import hashlib
import sys
import threading
from pathlib import Path
from types import ModuleType

from pyaten.dispatch import registry as dispatch_registry
from pyaten.dispatch.keys import parse_dispatch_key
from pyaten.native import lazy_code
from pyaten.native import loader as native_loader

DERIVATIVES_YAML = Path(__file__).with_name("derivatives.yaml")
_PACKAGE = Path(__file__).resolve().parent.parent
_INPUTS = ("schema", "declarations", "codegen")

_LOADED: ModuleType | None = None
_LOCK = threading.Lock()
HANDLES: list = []
_AUTOGRAD = parse_dispatch_key("Autograd")
_AUTOGRAD_KEYS = (_AUTOGRAD,)


def _cache_key(texts: list[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode())
    sources = [Path(__file__), Path(lazy_code.__file__)]  # and the split kept beside it
    for folder in _INPUTS:
        sources += sorted((_PACKAGE / folder).glob("*.py"))
    for path in sources:
        digest.update(f"{path.parent.name}/{path.name}".encode())
        digest.update(path.read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()[:16]


def _prune_old(current: Path, keep: int = 4) -> None:
    """Keep only the newest few generated modules (each YAML edit makes a new one)."""
    try:
        old = sorted(current.parent.glob("autograd_*.py"), key=lambda p: p.stat().st_mtime)
        for path in old[:-keep]:
            if path != current:
                path.unlink(missing_ok=True)
                path.with_suffix(".code").unlink(missing_ok=True)
                path.with_suffix(".lazy").unlink(missing_ok=True)
    except OSError:
        pass  # another process pruned at the same time


def generated_source() -> str:
    """The generated module's text (always freshly generated)."""
    from pyaten.codegen.gen_autograd import generate
    from pyaten.declarations import load_derivatives, load_native_functions

    records = load_native_functions(str(native_loader.NATIVE_YAML))
    entries = load_derivatives(str(DERIVATIVES_YAML), records)
    return generate(
        entries, records, "pyaten/autograd/derivatives.yaml", "pyaten/native/native_functions.yaml"
    ).source


def load() -> ModuleType:
    """Generate (or reuse) the autograd module and register its kernels, once."""
    global _LOADED
    with _LOCK:
        if _LOADED is not None:
            return _LOADED
        texts = [DERIVATIVES_YAML.read_text(), native_loader.NATIVE_YAML.read_text()]
        path = native_loader.GENERATED_DIR / f"autograd_{_cache_key(texts)}.py"
        if not path.exists():
            native_loader._write_atomic(path, generated_source())
            _prune_old(path)
        # split beside the source, as the native module is (no .pyc needed; its functions
        # and classes are defined on first use)
        module = native_loader._exec_cached("pyaten._generated.autograd", path)
        with dispatch_registry.batch():
            for row in module.REGISTRATIONS:
                if dispatch_registry.get_operator(row[0]) is None:
                    continue
                # registered on the operator's first use (registry.defer_kernels)
                dispatch_registry.defer_kernels(
                    row[0], _AUTOGRAD_KEYS, functools.partial(_register, module, row)
                )
        _LOADED = module
        return module


def _register(module: ModuleType, row: tuple[str, str, str]) -> None:
    operator, kernel, site = row
    HANDLES.append(dispatch_registry.register_kernel(
        operator, _AUTOGRAD, getattr(module, kernel), debug=f"registered at {site}",
    ))
