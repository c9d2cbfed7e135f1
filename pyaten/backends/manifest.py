"""Loading and checking a device's manifest (its backend YAML) against its kernels module.

    dev.load_manifest("openreg.yaml", pyaten_openreg.kernels)

reads the manifest against pyaten's operators (plus the ones pyaten/backends/required.py
defines), generates the registration module (pyaten/codegen/gen_backend.py), binds each
kernel it names from the kernels module by the naming rule, checks REQUIRED_KERNELS, and
only then registers: a manifest with problems registers nothing. `lint_manifest(path,
kernels)` reports the same problems as diagnostics with file and line, plus kernels the
module defines that the manifest does not name (`pyaten lint --backend PATH --kernels MOD`).
"""

from __future__ import annotations

import importlib
import inspect
import os
import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyaten.codegen import naming
from pyaten.codegen.gen_backend import BackendModule, generate_backend
from pyaten.declarations.backend import LAYOUT_LISTS, BackendDeclaration, read_backend_yaml
from pyaten.declarations.model import DeclarationError, Diagnostic, Location, NativeFunction
from pyaten.declarations.reporting import did_you_mean

__all__ = ["Manifest", "lint_manifest", "load_manifest", "operator_records"]

_RECORDS: list[NativeFunction] | None = None


def operator_records() -> list[NativeFunction]:
    """pyaten's native records plus those of the operators required.py defines."""
    global _RECORDS
    if _RECORDS is None:
        from pyaten.backends import required
        from pyaten.native.loader import load
        from pyaten.schema import parse

        records = list(load().records)
        known = {str(r.func.name) for r in records}
        here = inspect.getsourcefile(required) or "pyaten/backends/required.py"
        for text in required._DEFINITIONS:
            schema = parse(text)
            if str(schema.name) not in known:
                records.append(NativeFunction(func=schema, loc=Location(here, 1)))
        _RECORDS = records
    return _RECORDS


@dataclass
class Manifest:
    """A loaded manifest: the declaration, the generated source, what was registered."""

    path: str
    declaration: BackendDeclaration
    generated: BackendModule
    registered: tuple[str, ...]


def _read(path: str | os.PathLike[str]) -> tuple[str, str]:
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    except OSError as exc:
        raise FileNotFoundError(f"load_manifest(): cannot read {path}: {exc.strerror}") from None


def _module(kernels: Any) -> Any:
    if isinstance(kernels, str):
        return importlib.import_module(kernels)
    return kernels


def _bind(
    decl: BackendDeclaration, gen: BackendModule, kernels: Any, path: str, report: Any
) -> dict[str, Any]:
    """Exec the generated module with DEVICE/UPSTREAM lookups; problems go to `report`."""
    from pyaten.native.registry import lookup

    root = decl.loc.line

    def device_fn(function: str, op: str) -> Any:
        fn = getattr(kernels, function, None)
        if not callable(fn):
            where = getattr(kernels, "__name__", type(kernels).__name__)
            report(decl.lines.get(op, root), "backend-missing-kernel",
                   f"'{op}' is named but {where} has no function '{function}'",
                   _function_hint(kernels, function))  # fmt: skip
            return _missing
        return fn

    def upstream_fn(name: str) -> Any:
        fn = lookup(name)
        if fn is None:
            report(root, "backend-no-upstream", f"pyaten has no kernel '{name}' to reuse")
            return _missing
        return fn

    def no_upstream(op: str) -> Any:
        report(decl.lines.get(op, root), "backend-no-upstream",
               f"'{op}' has no upstream CPU impl to reuse with the stub strategy",
               "use impl or meta_impl")  # fmt: skip
        return _missing

    namespace: dict[str, Any] = {
        "DEVICE": device_fn,
        "UPSTREAM": upstream_fn,
        "NO_UPSTREAM_IMPL": no_upstream,
    }
    exec(compile(gen.source, f"<pyaten backend {path}>", "exec"), namespace)
    return namespace


def layout_kernel_name(functionality_list: str, op: str) -> str:
    """The kernel a layout list names: `sparse` + `add.Tensor` -> `sparse_add_Tensor`."""
    return f"{functionality_list}_{op.replace('.', '_')}"


def _bind_layouts(decl: BackendDeclaration, kernels: Any, report: Any) -> list[tuple]:
    """(functionality, op, fn, its name) for each operator of the `sparse:` / `sparse_csr:`
    lists."""
    found = []
    for list_key, functionality in LAYOUT_LISTS.items():
        for op in getattr(decl, list_key):
            function = layout_kernel_name(list_key, op)
            fn = getattr(kernels, function, None)
            if not callable(fn):
                where = getattr(kernels, "__name__", type(kernels).__name__)
                report(decl.lines.get(f"{list_key}:{op}", decl.loc.line),
                       "backend-missing-kernel",
                       f"'{op}' is named under '{list_key}' but {where} has no function "
                       f"'{function}'", _function_hint(kernels, function))  # fmt: skip
                continue
            found.append((functionality, op, fn, function))
    return found


def _missing(*args: Any) -> Any:  # a kernel that was reported missing; never registered
    raise AssertionError("unreachable")


def _function_hint(kernels: Any, function: str) -> str:
    names = [n for n in dir(kernels) if callable(getattr(kernels, n, None))]
    return did_you_mean(function, names) or f"define {function}(...) there, or drop the entry"


def _check(
    path: str | os.PathLike[str], kernels: Any, key: str, device: Any = None
) -> tuple[BackendDeclaration | None, BackendModule | None, dict, list[Diagnostic], str]:
    from pyaten.backends.required import REQUIRED_KERNELS

    text, path = _read(path)
    records = operator_records()
    decl, diagnostics = read_backend_yaml(text, path, records)
    if decl is None:
        return None, None, {}, diagnostics, path

    def report(line: int, code: str, message: str, hint: str = "", severity: str = "error"):
        diagnostics.append(Diagnostic(path, line, code, message, hint, severity))

    if device is not None and decl.backend not in (device.name, device.slot):
        report(decl.loc.line, "backend-wrong-device",
               f"this manifest is for '{decl.backend}', not for device '{device.name}'")
    supported = {str(f.func.name) for f in decl.supported}
    if decl.structured:
        from pyaten.codegen.gen_native import structured_groups

        groups = structured_groups(records)
        for out_name in decl.structured:
            group = groups.get(tuple(out_name.partition(".")[::2]))
            members = [m for m in (group.out, group.functional, group.inplace) if m] \
                if group is not None else []  # fmt: skip
            for member in members:
                name = str(member.func.name)
                if name in supported:
                    report(decl.lines.get(name, decl.loc.line), "backend-duplicate-op",
                           f"'{name}' is listed under 'supported' but the structured "
                           f"'{out_name}' ({decl.structured[out_name]}) already provides it",
                           "keep it under one of them")  # fmt: skip
    gen = generate_backend(decl, records, key, os.path.basename(path))
    namespace = _bind(decl, gen, kernels, path, report)
    namespace["<layout kernels>"] = _bind_layouts(decl, kernels, report)
    planned = {op for op, _, kind in gen.registrations if kind != "autograd"}
    have = set(device.kernels) if device is not None else set()
    missing = [k for k in REQUIRED_KERNELS if k not in planned | have]
    if missing:
        report(decl.loc.line, "backend-missing-required",
               f"the device lacks {len(missing)} required kernel(s): {', '.join(missing)}",
               "every device supplies " + ", ".join(REQUIRED_KERNELS))  # fmt: skip
    diagnostics.sort(key=lambda d: d.line)
    return decl, gen, namespace, diagnostics, path


def load_manifest(device: Any, path: str | os.PathLike[str], kernels: Any) -> Manifest:
    """Register what the manifest at `path` names, from `kernels` (a module, an object with
    the functions as attributes, or a module name); DeclarationError listing every problem
    (file:line) and registering nothing when there is one."""
    kernels = _module(kernels)
    decl, gen, namespace, diagnostics, path = _check(path, kernels, device.slot, device)
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors or decl is None or gen is None:
        raise DeclarationError(errors)
    registered = []
    for op, glob, kind in gen.registrations:
        fn = namespace[glob]
        if kind == "kernel":
            device.register_kernel(op, fn)
        elif kind == "structured":
            device.register_structured(op, fn)
        else:
            device.register_autograd(op, fn)
        registered.append(op)
    for functionality, op, fn, _ in namespace["<layout kernels>"]:
        device.register_kernel(op, fn, layout=functionality)
        registered.append(f"{functionality}:{op}")
    for op in decl.force_fallback:
        device.force_fallback(op)
        registered.append(op)
    if decl.fallback is not None:
        device.set_fallback(decl.fallback)
    for op, policy in decl.fallback_overrides.items():
        device.set_fallback(policy, op=op)
    if decl.autocast is not None:  # the device opts into autocast (docs/amp.md)
        from pyaten.amp.autocast_mode import register_autocast_device

        device._extra_handles.append(register_autocast_device(device.name, policy=decl.autocast))
    return Manifest(path, decl, gen, tuple(registered))


def lint_manifest(
    path: str | os.PathLike[str], kernels: Any, key: str = "PrivateUse1"
) -> list[Diagnostic]:
    """Every problem of the manifest at `path` read with `kernels`, with file and line:
    unknown operator names (did-you-mean), operators named but not implemented, required
    kernels missing, and kernels `kernels` defines that the manifest does not name."""
    kernels = _module(kernels)
    decl, gen, namespace, diagnostics, path = _check(path, kernels, key)
    if decl is None or gen is None:
        return diagnostics
    diagnostics += _unlisted(kernels, gen, operator_records(),
                             namespace.get("<layout kernels>", ()))
    return diagnostics


def _unlisted(kernels: Any, gen: BackendModule, records: Sequence[NativeFunction],
              namespace_layouts: Sequence[tuple] = ()):
    """Public functions of `kernels` named like a kernel of an operator the manifest omits."""
    used = set(gen.device_kernels.values())
    used |= {name for *_, name in namespace_layouts}
    by_kernel_name: dict[str, str] = {}
    for r in records:
        by_kernel_name.setdefault(naming.ident(r.func.name), str(r.func.name))
        by_kernel_name.setdefault(naming.meta_name(r.func.name), str(r.func.name))
    found = []
    module_name = getattr(kernels, "__name__", None)
    for name, fn in sorted(vars(kernels).items()) if hasattr(kernels, "__dict__") else []:
        if name.startswith("_") or name in used:
            continue
        if not isinstance(fn, types.FunctionType) or fn.__module__ != module_name:
            continue
        op, where = by_kernel_name.get(name), "'supported:' (or 'structured:')"
        if op is None:  # a layout kernel: sparse_csr_<op> or sparse_<op>
            list_key = next((k for k in sorted(LAYOUT_LISTS, key=len, reverse=True)
                             if name.startswith(k + "_")), None)  # fmt: skip
            op = by_kernel_name.get(name[len(list_key) + 1:]) if list_key else None
            where = f"'{list_key}:'"
        if op is None:
            continue
        code = fn.__code__
        found.append(Diagnostic(
            code.co_filename, code.co_firstlineno, "backend-unlisted-kernel",
            f"{name}() implements '{op}' but the manifest does not name it",
            f"add it under {where}, or rename it with a leading _",
        ))  # fmt: skip
    return found
