"""`pyaten lint FILE...`: check native_functions, derivatives, tags and backend YAML files.

Prints `path:line: code: message` and an indented hint for each problem on stdout, then one
summary line on stderr ("2 files, no problems"; "1 file: 1 error, 0 warnings"), and exits 1
when there is an error (0 when there are only warnings or nothing). Give the native file and
the derivatives file in one invocation, or `--native`, to check derivatives against that file.

`pyaten lint --backend openreg.yaml --kernels pyaten_openreg.kernels` checks a plug-in
device's manifest against pyaten's operators and against its kernels module (a module name
or a .py file): unknown operator names, operators named but not implemented, required
kernels missing, kernels defined but not named (docs/backends.md).
"""

from __future__ import annotations

import argparse
import os
import sys

from pyaten.declarations import lint_files

HELP = "check native_functions / derivatives / tags / backend YAML files, report file:line"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="*", metavar="FILE", help="YAML files to check")
    parser.add_argument(
        "--backend",
        metavar="PATH",
        help="a plug-in device's manifest (backend YAML) to check against pyaten's operators",
    )
    parser.add_argument(
        "--kernels",
        metavar="MODULE",
        help="with --backend: the device's kernels module (a module name or a .py file)",
    )
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


def _backend_diagnostics(args: argparse.Namespace) -> list:
    from pyaten.backends.manifest import lint_manifest, operator_records
    from pyaten.declarations.backend import read_backend_yaml
    from pyaten.declarations.model import Diagnostic

    try:
        with open(args.backend, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        return [Diagnostic(args.backend, 0, "unreadable", f"cannot read file: {exc.strerror}")]
    if args.kernels is None:
        return read_backend_yaml(text, args.backend, operator_records())[1]
    try:
        kernels = _kernels_module(args.kernels)
    except Exception as exc:  # the module's own import error, reported like a lint problem
        message = f"cannot import the kernels module {args.kernels}: {type(exc).__name__}: {exc}"
        return [Diagnostic(args.backend, 0, "backend-bad-kernels", message)]
    return lint_manifest(args.backend, kernels)


def _kernels_module(spec: str):
    import importlib
    import importlib.util

    if spec.endswith(".py") or os.sep in spec:
        name = os.path.splitext(os.path.basename(spec))[0]
        loader = importlib.util.spec_from_file_location(name, spec)
        if loader is None or loader.loader is None:
            raise ImportError(f"no Python file at {spec}")
        module = importlib.util.module_from_spec(loader)
        sys.path.insert(0, os.path.dirname(os.path.abspath(spec)))
        loader.loader.exec_module(module)
        return module
    return importlib.import_module(spec)


def run(args: argparse.Namespace) -> int:
    if not args.files and args.backend is None:
        sys.stderr.write("pyaten lint: give FILE... or --backend PATH\n")
        return 2
    if args.kernels is not None and args.backend is None:
        sys.stderr.write("pyaten lint: --kernels goes with --backend PATH\n")
        return 2
    # Warnings are always collected, so the summary can say how many -W would show.
    found = lint_files(args.files, warnings=True, native=args.native) if args.files else []
    if args.backend is not None:
        found += _backend_diagnostics(args)
    shown = [d for d in found if args.warnings or d.severity == "error"]
    out = sys.stdout
    for d in shown:
        label = d.code if d.severity == "error" else f"{d.code} (warning)"
        out.write(f"{d.path}:{d.line}: {label}: {d.message}\n")
        if d.hint:
            out.write("".join(f"    {line}\n" for line in d.hint.splitlines()))
    errors = sum(d.severity == "error" for d in found)
    warnings = len(found) - errors
    files = len({os.fspath(p) for p in args.files} | ({args.backend} if args.backend else set()))
    out.flush()  # the diagnostics come before the summary when both go to one terminal
    shown_warnings = warnings if args.warnings else 0
    sys.stderr.write(summary(files, errors, shown_warnings, warnings - shown_warnings) + "\n")
    return 1 if errors else 0
