"""What every declarations reader shares: collecting diagnostics and the top of a list file.

A reader never raises on a bad file; it calls `report(line, code, message, hint, severity)`
for each problem and returns what it could build. The `load_*` functions then raise one
`DeclarationError` listing the errors (`raise_on_errors`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator

from pyaten.declarations._yaml import YamlList, YamlMap, YamlSyntaxError, load_yaml
from pyaten.declarations.model import DeclarationError, Diagnostic

__all__ = [
    "Report",
    "collect_diagnostics",
    "raise_on_errors",
    "load_entry_list",
    "mappings",
    "report_duplicate_keys",
    "did_you_mean",
]

# report(line, code, message, hint="", severity="error")
Report = Callable[..., None]


def collect_diagnostics(path: str) -> tuple[list[Diagnostic], Report]:
    """An empty list, and the `report` callback that appends a `Diagnostic` for `path` to it."""
    diagnostics: list[Diagnostic] = []

    def report(line: int, code: str, message: str, hint: str = "", severity: str = "error"):
        diagnostics.append(Diagnostic(path, line, code, message, hint, severity))

    return diagnostics, report


def raise_on_errors(diagnostics: list[Diagnostic]) -> None:
    """Raise `DeclarationError` listing the errors among `diagnostics` (warnings pass)."""
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        raise DeclarationError(errors)


def load_entry_list(text: str, report: Report, file_name: str, first_key: str) -> YamlList | None:
    """The top-level list of a `- first_key: ...` file; None (reported unless empty) otherwise."""
    try:
        data = load_yaml(text)
    except YamlSyntaxError as exc:
        report(exc.line, "yaml-syntax", exc.message, f"column {exc.column}" if exc.column else "")
        return None
    if data is None or isinstance(data, list):
        return data
    report(
        getattr(data, "line", 1),
        "bad-file",
        f"{file_name} must be a list of entries",
        f"each entry starts with `- {first_key}: ...`",
    )
    return None


def mappings(data: YamlList, report: Report) -> Iterator[YamlMap]:
    """The entries of `data` that are mappings; each other entry is reported as it comes."""
    for index, entry in enumerate(data):
        if isinstance(entry, YamlMap):
            yield entry
        else:
            report(data.line_of(index), "bad-entry", f"entry is not a mapping: {entry!r}")


def report_duplicate_keys(entry: YamlMap, report: Report) -> None:
    """Report each key written twice in one entry (YAML silently keeps the last value)."""
    for key, line in entry.duplicates:
        report(
            line,
            "duplicate-key",
            f"key '{key}' appears twice in one entry",
            "YAML keeps only the last value; remove one",
        )


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`did you mean 'X'?` for the choice closest to a misspelt `word`; "" when none is close."""
    close = difflib.get_close_matches(word, sorted(choices), n=1)
    return f"did you mean '{close[0]}'?" if close else ""
