"""Reading `tags.yaml`: the operator tags a native_functions.yaml entry may use.

A native file is checked against the `tags.yaml` beside it when there is one (as PyTorch's
own file is), else against the copy bundled with pyaten (same tag names as PyTorch 2.13).
"""

from __future__ import annotations

import os
from functools import lru_cache

from pyaten.declarations._yaml import YamlMap, YamlSyntaxError, load_yaml
from pyaten.declarations.model import Diagnostic
from pyaten.declarations.reporting import raise_on_errors

__all__ = ["BUNDLED_TAGS_PATH", "load_tags", "read_tags", "tags_path_for"]

BUNDLED_TAGS_PATH = os.path.join(os.path.dirname(__file__), "tags.yaml")


def read_tags(text: str, path: str = "<string>") -> tuple[frozenset[str], list[Diagnostic]]:
    """The tag names in a tags.yaml text, and any problems with its format."""
    diagnostics: list[Diagnostic] = []
    try:
        data = load_yaml(text)
    except YamlSyntaxError as exc:
        return frozenset(), [Diagnostic(path, exc.line, "yaml-syntax", exc.message)]
    if data is None:
        data = []
    if not isinstance(data, list):
        hint = "write a list of `- tag: NAME` / `desc: TEXT` entries"
        return frozenset(), [Diagnostic(path, 1, "bad-tags-file", "tags.yaml must be a list", hint)]
    names: set[str] = set()
    for entry in data:
        line = entry.line if isinstance(entry, YamlMap) else 1
        if not isinstance(entry, YamlMap) or not isinstance(entry.get("tag"), str):
            diagnostics.append(
                Diagnostic(path, line, "bad-tags-file", "each tags.yaml entry needs `tag: NAME`")
            )
            continue
        name = entry["tag"]
        if name in names:
            diagnostics.append(
                Diagnostic(path, entry.line_of("tag"), "duplicate-tag", f"tag '{name}' repeated")
            )
        names.add(name)
        unknown = set(entry) - {"tag", "desc"}
        for key in sorted(unknown, key=str):
            diagnostics.append(
                Diagnostic(
                    path,
                    entry.line_of(key),
                    "unknown-key",
                    f"unknown key '{key}' in a tags.yaml entry",
                    "the keys are `tag` and `desc`",
                )
            )
    return frozenset(names), diagnostics


@lru_cache(maxsize=16)
def _load_tags_cached(path: str, mtime: float) -> frozenset[str]:
    with open(path, encoding="utf-8") as f:
        names, diagnostics = read_tags(f.read(), path)
    raise_on_errors(diagnostics)
    return names


def load_tags(path: str | os.PathLike[str] = BUNDLED_TAGS_PATH) -> frozenset[str]:
    """The valid tag names from a tags.yaml file (cached per path and modification time)."""
    path = os.fspath(path)
    return _load_tags_cached(path, os.path.getmtime(path))


def tags_path_for(native_path: str | None) -> str:
    """The tags.yaml that applies to a native file: its neighbour, else the bundled one."""
    if native_path:
        neighbour = os.path.join(os.path.dirname(os.path.abspath(native_path)), "tags.yaml")
        if os.path.isfile(neighbour):
            return neighbour
    return BUNDLED_TAGS_PATH
