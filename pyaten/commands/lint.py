"""`pyaten lint FILE...`: check native_functions, derivatives, tags and backend YAML files.

Prints `path:line: code: message` and an indented hint for each problem on stdout, then one
summary line on stderr ("2 files, no problems"; "1 file: 1 error, 0 warnings"), and exits 1
when there is an error (0 when there are only warnings or nothing). Give the native file and
the derivatives file in one invocation, or `--native`, to check derivatives against that file.
"""

from __future__ import annotations

import argparse
import os
import sys

from pyaten.declarations import lint_files

HELP = "check native_functions / derivatives / tags / backend YAML files, report file:line"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="YAML files to check")
    parser.add_argument(
        "--native",
        metavar="PATH",
        help="native_functions.yaml to check derivatives and backend files against "
        "(default: a native file among FILE, else the one beside each such file)",
    )
    parser.add_argument(
        "-W", "--warnings", action="store_true", help="also report warnings (style problems)"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def summary(files: int, errors: int, warnings: int, hidden_warnings: int) -> str:
    """The last line `pyaten lint` prints: how many files and what was found in them.

    `warnings` were printed; `hidden_warnings` were found but not printed (no -W).
    """
    checked = _count(files, "file")
    if errors == warnings == hidden_warnings == 0:
        return f"{checked}, no problems"
    hidden = f" ({_count(hidden_warnings, 'warning')}; -W shows them)" if hidden_warnings else ""
    if hidden_warnings:
        return f"{checked}: {_count(errors, 'error') if errors else 'no errors'}{hidden}"
    return f"{checked}: {_count(errors, 'error')}, {_count(warnings, 'warning')}"


def run(args: argparse.Namespace) -> int:
    # Warnings are always collected, so the summary can say how many -W would show.
    found = lint_files(args.files, warnings=True, native=args.native)
    shown = [d for d in found if args.warnings or d.severity == "error"]
    out = sys.stdout
    for d in shown:
        label = d.code if d.severity == "error" else f"{d.code} (warning)"
        out.write(f"{d.path}:{d.line}: {label}: {d.message}\n")
        if d.hint:
            out.write("".join(f"    {line}\n" for line in d.hint.splitlines()))
    errors = sum(d.severity == "error" for d in found)
    warnings = len(found) - errors
    files = len({os.fspath(p) for p in args.files})
    out.flush()  # the diagnostics come before the summary when both go to one terminal
    shown_warnings = warnings if args.warnings else 0
    sys.stderr.write(summary(files, errors, shown_warnings, warnings - shown_warnings) + "\n")
    return 1 if errors else 0
