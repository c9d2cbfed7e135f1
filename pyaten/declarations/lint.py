"""The linter: every problem in native_functions.yaml, derivatives.yaml and tags.yaml files.

`lint(path)` decides what a file is from its name (`*derivatives*.yaml`, `*tags*.yaml`,
anything else is a native file) or, failing that, from its first entry's key (`func`,
`name`, `tag`; a top-level `backend:` is a backend file). A derivatives or backend file is
checked against a native file: the one passed as
`native=`, else the one found beside it (see `derivatives.default_native_path`).
`lint_files(paths)` lints several files at once; a native file among them is used for the
derivatives files among them. Rules and codes: docs/lint.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from pyaten.declarations.autogen import with_autogen
from pyaten.declarations.backend import read_backend_yaml
from pyaten.declarations.derivatives import default_native_path, read_derivatives
from pyaten.declarations.dispatch_keys import CODEGEN_DISPATCH_KEYS
from pyaten.declarations.model import Diagnostic, NativeFunction
from pyaten.declarations.native import read_native_functions
from pyaten.declarations.tags import read_tags, tags_path_for

__all__ = ["lint", "lint_files", "file_kind"]

_FIRST_KEY = re.compile(r"^(?:-\s+(func|name|tag)|(backend))\s*:", re.MULTILINE)


def file_kind(path: str, text: str) -> str:
    """ "native", "derivatives" or "tags"."""
    base = os.path.basename(path).lower()
    if "derivatives" in base:
        return "derivatives"
    if "tags" in base:
        return "tags"
    m = _FIRST_KEY.search(text)
    if m is not None:
        kinds = {"func": "native", "name": "derivatives", "tag": "tags", "backend": "backend"}
        return kinds[m.group(1) or m.group(2)]
    return "native"


def _read(path: str) -> tuple[str | None, Diagnostic | None]:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), None
    except OSError as exc:
        return None, Diagnostic(path, 0, "unreadable", f"cannot read file: {exc.strerror}")
    except UnicodeDecodeError:
        return None, Diagnostic(path, 0, "unreadable", "file is not UTF-8 text")


# Recent native-file results, so that linting a native file and a derivatives file that
# depends on it reads it once: (path, mtime, size, tags mtime) -> (functions, diagnostics).
_NATIVE_MEMO: dict[tuple, tuple[list[NativeFunction], list[Diagnostic]]] = {}


def _stamp(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0)
    return (st.st_mtime_ns, st.st_size)


def _lint_native(path: str, text: str) -> tuple[list[NativeFunction], list[Diagnostic]]:
    tags_file = tags_path_for(path)
    key = (os.path.abspath(path), *_stamp(path), *_stamp(tags_file), hash(text))
    cached = _NATIVE_MEMO.get(key)
    if cached is not None:
        return cached
    tags, tag_diags = read_tags(_read(tags_file)[0] or "", tags_file)
    if tag_diags:
        problem = Diagnostic(path, 1, "bad-tags-file", f"the tags file {tags_file} has errors")
        return [], [*tag_diags, problem]
    functions, diagnostics = read_native_functions(text, path, valid_tags=tags)
    extra = _keys_not_generated(functions, text, path)
    if extra:
        diagnostics = sorted(diagnostics + extra, key=lambda d: d.line)
    result = (functions, diagnostics)
    if len(_NATIVE_MEMO) >= 4:
        _NATIVE_MEMO.clear()
    _NATIVE_MEMO[key] = result
    return result


def _keys_not_generated(
    functions: Sequence[NativeFunction], text: str, path: str
) -> list[Diagnostic]:
    """`key-not-generated` warnings: keys pyaten reads but torchgen refuses in a native file
    (`SparsePrivateUse1`, `QuantizedXPU`), each at the line that names it."""
    found: list[Diagnostic] = []
    lines: list[str] | None = None
    for fn in functions:
        odd = [k for k in fn.dispatch if k not in CODEGEN_DISPATCH_KEYS]
        if not odd:
            continue
        lines = text.splitlines() if lines is None else lines
        for key in odd:
            line = _line_naming(lines, fn.loc.line, key)
            if key.endswith(_PLUGIN_SLOTS) and key.startswith("Sparse"):
                hint = ("a plug-in device registers its sparse kernels itself: its manifest's "
                        "'sparse:' / 'sparse_csr:' lists (docs/backends.md)")  # fmt: skip
            elif key.endswith(_PLUGIN_SLOTS):
                hint = f"register it at run time: pyaten.library.Library('aten', 'IMPL', '{key}')"
            else:
                hint = "torchgen's keys: pyaten.declarations.dispatch_keys.CODEGEN_DISPATCH_KEYS"
            found.append(Diagnostic(
                path, line, "key-not-generated",
                f"{fn.func.name}: torchgen generates no registration for '{key}' (it stops "
                f"with 'Dispatch key {key} of kernel {fn.dispatch[key]} is not a supported "
                "dispatch key.')", hint, "warning",
            ))  # fmt: skip
    return found


_PLUGIN_SLOTS = ("PrivateUse1", "PrivateUse2", "PrivateUse3")


def _line_naming(lines: list[str], entry_line: int, key: str) -> int:
    """The line of the entry starting at `entry_line` whose dispatch keys name `key`."""
    pattern = re.compile(rf"^\s+(?:[\w ]+,\s*)*{re.escape(key)}\s*(?:,[\w ,]*)?:")
    for number in range(entry_line, len(lines)):  # lines[number] is line number + 1
        if number > entry_line and lines[number].startswith("- "):
            break
        if pattern.match(lines[number]):
            return number + 1
    return entry_line


def lint(
    path: str | os.PathLike[str],
    warnings: bool = False,
    *,
    native: str | os.PathLike[str] | Sequence[NativeFunction] | None = None,
) -> list[Diagnostic]:
    """Every error in the file at `path` (and every warning too with `warnings=True`)."""
    path = os.fspath(path)
    text, problem = _read(path)
    if problem is not None:
        return [problem]
    kind = file_kind(path, text)
    if kind == "tags":
        diagnostics = read_tags(text, path)[1]
    elif kind == "native":
        diagnostics = list(_lint_native(path, text)[1])
    else:
        diagnostics = _lint_dependent(path, text, native, kind)
    if not warnings:
        diagnostics = [d for d in diagnostics if d.severity == "error"]
    return diagnostics


def _lint_dependent(path: str, text: str, native, kind: str) -> list[Diagnostic]:
    """A derivatives or backend file, checked against its native file."""
    if native is None:
        native = default_native_path(path)
        if native is None:
            return [
                Diagnostic(
                    path,
                    1,
                    "no-native-file",
                    f"no native_functions.yaml to check this {kind} file against",
                    "lint both at once: `pyaten lint native_functions.yaml derivatives.yaml`",
                )
            ]
    if isinstance(native, (str, os.PathLike)):
        native_path = os.fspath(native)
        native_text, problem = _read(native_path)
        if problem is not None:
            return [problem]
        functions, native_diags = _lint_native(native_path, native_text)
        errors = [d for d in native_diags if d.severity == "error"]
        if errors:
            return [
                Diagnostic(
                    path,
                    1,
                    "bad-native-file",
                    f"the native file {native_path} has {len(errors)} error(s)",
                    f"run `pyaten lint {native_path}` first",
                )
            ]
        native = with_autogen(functions)
    if kind == "backend":
        return read_backend_yaml(text, path, native)[1]
    return read_derivatives(text, path, native)[1]


def lint_files(
    paths: Sequence[str | os.PathLike[str]],
    warnings: bool = False,
    *,
    native: str | os.PathLike[str] | None = None,
) -> list[Diagnostic]:
    """Lint several files; derivatives files use `native`, else a native file in `paths`."""
    texts = {os.fspath(p): None for p in paths}
    if native is None:
        for p in texts:
            text, _ = _read(p)
            if text is not None and file_kind(p, text) == "native":
                native = p
                break
    out: list[Diagnostic] = []
    for p in texts:
        out.extend(lint(p, warnings, native=native))
    return out
