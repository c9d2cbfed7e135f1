"""Which of PyTorch's public functions pyaten has: writes docs/coverage.md and the name list.

    python tools/coverage.py          # regenerate docs/coverage.md, pyaten/_torch_api.json
                                      # and the README's headline count
    python tools/coverage.py --check  # exit 1, naming the stale files, if any is out of date

Needs torch (the `dev` extra). pyaten itself never imports torch: it reads the names this tool
writes to `pyaten/_torch_api.json` (see `pyaten/utils/torch_api.py`), which is how
`pyaten.linalg` can say "pyaten does not implement torch.linalg yet".

Note: what counts as a public function
    A namespace's public names are those of `dir(namespace)` that do not start with `_` and
    come from PyTorch: a function or class whose `__module__` starts with `torch`, a module
    whose name is under the namespace's (so `torch.linalg`, not the `os` that `torch`
    imports). They fall into kinds: *functions* (callable, not a class; for `torch.Tensor`
    its methods), *properties* (`torch.Tensor`'s non-callable attributes: `shape`, `T`),
    *classes*, *modules* and *values* (dtypes, layouts, constants). Only functions are
    counted in the headline; the other kinds are listed apart. Left out: dunder methods
    (the Python operators), names another namespace owns (`torch.special.Tensor`), and the
    dicts some modules keep for their docstrings (`torch.linalg.common_notes`). A function
    that is also `torch`'s (`torch.nn.functional.conv2d is torch.conv2d`) counts in both.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "coverage.md"
DATA = ROOT / "pyaten" / "_torch_api.json"
README = ROOT / "README.md"
COMMAND = "python tools/coverage.py"

# PyTorch's namespace -> the attribute path of pyaten's counterpart ("" is pyaten itself).
NAMESPACES: dict[str, str] = {
    "torch": "",
    "torch.Tensor": "Tensor",
    "torch.linalg": "linalg",
    "torch.special": "special",
    "torch.fft": "fft",
    "torch.nn.functional": "nn.functional",
    # the libraries built on the operators (docs/profiler.md, checkpointing.md,
    # parametrizations.md)
    "torch.profiler": "profiler",
    "torch.autograd.profiler": "autograd.profiler",
    "torch.utils.checkpoint": "utils.checkpoint",
    "torch.nn.utils.parametrize": "nn.utils.parametrize",
    "torch.nn.utils.parametrizations": "nn.utils.parametrizations",
    "torch.nn.utils.prune": "nn.utils.prune",
    "torch.optim.swa_utils": "optim.swa_utils",
}
KINDS = ("functions", "properties", "classes", "modules", "values")
SINGULAR = dict(zip(KINDS, ("function", "property", "class", "module", "value"), strict=True))
HEADLINE = re.compile(r"pyaten has \d+ of PyTorch's \d+ public functions")


# ------------------------------------------------------------------ PyTorch's names


def _torch_namespace(namespace: str) -> object:
    import torch

    if namespace == "torch.Tensor":
        return torch.Tensor
    return importlib.import_module(namespace)


def _kind(namespace: str, owner: object, name: str, value: object, torch_top: object) -> str | None:
    """The kind of `owner.name`, or None when it is not one of the namespace's public names."""
    if isinstance(value, types.ModuleType):
        return "modules" if value.__name__.startswith(namespace + ".") else None
    if isinstance(value, type):
        if owner is not torch_top and getattr(torch_top, name, None) is value:
            return None  # torch's class, re-exported (torch.special.Tensor)
        return "classes" if value.__module__.startswith("torch") else None
    if callable(value):
        module = getattr(value, "__module__", None) or "torch"
        return "functions" if module.startswith("torch") else None
    if namespace == "torch.Tensor":
        return "properties"
    return None if isinstance(value, dict) else "values"


def torch_api() -> tuple[str, dict[str, dict[str, list[str]]]]:
    """PyTorch's version and, per namespace, its public names by kind (each list sorted)."""
    import torch

    api: dict[str, dict[str, list[str]]] = {}
    for namespace in NAMESPACES:
        owner = _torch_namespace(namespace)
        kinds: dict[str, list[str]] = {kind: [] for kind in KINDS}
        for name in dir(owner):
            if name.startswith("_"):
                continue
            kind = _kind(namespace, owner, name, getattr(owner, name), torch)
            if kind is not None:
                kinds[kind].append(name)
        api[namespace] = {kind: sorted(names) for kind, names in kinds.items() if names}
    return torch.__version__.split("+")[0], api  # "2.13.0+cpu": the build does not matter


def torch_submodules() -> list[str]:
    """PyTorch's public submodules (no part starting with "_"), found from its files without
    importing them: `import pyaten.X` names the pointer for these (pyaten/utils/torch_api.py)."""
    import torch

    root = Path(torch.__file__).parent
    names = set()
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not parts or any(part.startswith("_") for part in parts):
            continue
        packages = (root.joinpath(*parts[:i]) / "__init__.py" for i in range(1, len(parts)))
        if all(package.exists() for package in packages):
            names.add("torch." + ".".join(parts))
    return sorted(names)


# ------------------------------------------------------------------ what pyaten has


def _pyaten_namespace(path: str) -> object | None:
    import pyaten

    owner: object = pyaten
    for part in path.split(".") if path else ():
        nested = getattr(owner, part, None)
        if nested is None and isinstance(owner, types.ModuleType):
            try:
                nested = importlib.import_module(f"{owner.__name__}.{part}")
            except ModuleNotFoundError:
                return None
        if nested is None:
            return None
        owner = nested
    return owner


# pyaten's own submodules that share a name with a torch module but are not its counterpart
# (plug-in devices, the backend conformance kit); nor are they imported by `import pyaten`.
OWN_MODULES = frozenset({"backends", "testing"})


def pyaten_has(api: dict[str, dict[str, list[str]]]) -> dict[str, set[str]]:
    """Per namespace, the PyTorch names pyaten's counterpart has."""
    has: dict[str, set[str]] = {}
    for namespace, kinds in api.items():
        owner = _pyaten_namespace(NAMESPACES[namespace])
        names = {name for names in kinds.values() for name in names}
        if NAMESPACES[namespace] == "":
            names -= OWN_MODULES
        has[namespace] = set() if owner is None else {n for n in names if hasattr(owner, n)}
    return has


# ------------------------------------------------------------------ rendering


def _count(api: dict, has: dict[str, set[str]], namespace: str) -> tuple[int, int]:
    functions = api[namespace].get("functions", [])
    return sum(name in has[namespace] for name in functions), len(functions)


def headline(api: dict, has: dict[str, set[str]]) -> str:
    counts = [_count(api, has, namespace) for namespace in api]
    return (
        f"pyaten has {sum(c[0] for c in counts)} of PyTorch's {sum(c[1] for c in counts)} "
        "public functions"
    )


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def _table(namespace: str, names: list[str], has: set[str], column: str) -> list[str]:
    lines = [f"| {column} | pyaten |", "|---|---|"]
    lines += [f"| `{namespace}.{name}` | {'yes' if name in has else 'no'} |" for name in names]
    return lines


def render_page(version: str, api: dict, has: dict[str, set[str]]) -> str:
    lines = [
        "# What pyaten has of PyTorch's API",
        "",
        f"<!-- Generated by `{COMMAND}`; do not edit. tests/test_coverage.py fails when stale. -->",
        "",
        f"**{headline(api, has)}** (PyTorch {version}).",
        "",
        "A PyTorch name that pyaten lacks raises `AttributeError: pyaten does not implement",
        "torch.linalg yet; see docs/coverage.md`; a name PyTorch lacks too keeps Python's usual",
        "message.",
        "",
        "| namespace | pyaten has | of PyTorch's functions | share |",
        "|---|---|---|---|",
    ]
    total_has = total = 0
    for namespace in api:
        n_has, n = _count(api, has, namespace)
        total_has, total = total_has + n_has, total + n
        anchor = namespace.replace(".", "").lower()  # the heading's anchor, as GitHub makes it
        row = f"| [`{namespace}`](#{anchor}) | {n_has} | {n} | {_percent(n_has, n)} |"
        lines.append(row)
    lines += [f"| total | {total_has} | {total} | {_percent(total_has, total)} |", ""]
    lines += [
        "## What is counted",
        "",
        "A public function of a namespace is a name of `dir(namespace)` that does not start",
        "with `_`, is callable and not a class, and comes from PyTorch (its `__module__` starts",
        "with `torch`); for `torch.Tensor`, its methods. Dunder methods (the Python operators,",
        "see [operators.md](operators.md)) are not counted. Listed apart and not counted:",
        "`torch.Tensor`'s properties, and the classes, submodules and values (dtypes, layouts,",
        "constants) of each namespace. Names another namespace owns (`torch.special.Tensor`)",
        "and the dicts modules keep for their docstrings are left out.",
        "",
        f"Regenerate with `{COMMAND}` after adding operators; it also updates the count in",
        "the README. The list of PyTorch's names it writes to `pyaten/_torch_api.json` is what",
        "pyaten reads, without torch, to word those `AttributeError`s.",
    ]
    for namespace, kinds in api.items():
        functions = kinds.get("functions", [])
        n_has, n = _count(api, has, namespace)
        lines += ["", f"## `{namespace}`", "", f"pyaten has {n_has} of its {n} functions.", ""]
        lines += _table(namespace, functions, has[namespace], "function")
    lines += ["", "## Not counted: properties, classes, modules and values"]
    for namespace, kinds in api.items():
        for kind in KINDS[1:]:
            names = kinds.get(kind, [])
            if names:
                n_has = sum(name in has[namespace] for name in names)
                lines += ["", f"### `{namespace}` {kind}: pyaten has {n_has} of {len(names)}", ""]
                lines += _table(namespace, names, has[namespace], SINGULAR[kind])
    return "\n".join(lines) + "\n"


def render_data(version: str, api: dict, submodules: list[str] | None = None) -> str:
    data = {
        "generated_by": COMMAND,
        "torch_version": version,
        "namespaces": api,
        "submodules": submodules if submodules is not None else torch_submodules(),
    }
    return json.dumps(data, indent=1) + "\n"


def render_readme(readme: str, api: dict, has: dict[str, set[str]]) -> str:
    """The README with its headline count brought up to date (unchanged if it has none)."""
    return HEADLINE.sub(headline(api, has), readme)


def generate() -> dict[Path, str]:
    """Each generated file and the text it should have now."""
    sys.path.insert(0, str(ROOT))  # run from a checkout without an install too
    version, api = torch_api()
    has = pyaten_has(api)
    return {
        PAGE: render_page(version, api, has),
        DATA: render_data(version, api),
        README: render_readme(README.read_text(), api, has),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is stale")
    args = parser.parse_args(argv)
    files = generate()
    stale = [path for path, text in files.items() if not path.exists() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is stale: run `{COMMAND}`", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(files[path])
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
