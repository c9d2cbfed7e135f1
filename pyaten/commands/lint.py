"""`pyaten lint FILE...`: check native_functions, derivatives, tags and backend YAML files.

Prints `path:line: code: message` and an indented hint for each problem, and exits 1 when
there is an error (0 when there are only warnings or nothing). Give the native file and the
derivatives file in one invocation, or `--native`, to check derivatives against that file.
"""

from __future__ import annotations

import argparse
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


def run(args: argparse.Namespace) -> int:
    diagnostics = lint_files(args.files, warnings=args.warnings, native=args.native)
    out = sys.stdout
    for d in diagnostics:
        label = d.code if d.severity == "error" else f"{d.code} (warning)"
        out.write(f"{d.path}:{d.line}: {label}: {d.message}\n")
        if d.hint:
            out.write("".join(f"    {line}\n" for line in d.hint.splitlines()))
    errors = sum(d.severity == "error" for d in diagnostics)
    warnings = len(diagnostics) - errors
    if diagnostics:
        sys.stderr.write(f"{errors} error(s), {warnings} warning(s)\n")
    return 1 if errors else 0
