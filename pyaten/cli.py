"""The `pyaten` command line: one sub-command per module in `pyaten.commands`.

Each command module defines `HELP` (one line), `add_arguments(parser)` and `run(args) -> int`.
Command modules are imported only when their command runs, so `pyaten --help` stays fast.
A reader that stops early (`pyaten lint -W FILE | head`) is handled here, once, for every
command: the rest of the output is dropped quietly. Output is wrapped to the terminal's width
(`COLUMNS`, else the terminal's, else 80 when stdout is not a terminal): `terminal_width()`,
which the explanation texts read through `pyaten.dispatch.text_width` while a command runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys

# command name -> module under pyaten.commands; add a line here when a command module lands.
COMMANDS: dict[str, str] = {
    "schema": "schema",
    "lint": "lint",
    "codegen": "codegen",
    "explain": "explain",
    "dispatch": "dispatch",
    "demo": "demo",
    "conformance": "conformance",
    "graph": "graph",
    "run": "run",
}


def _load(name: str):
    return importlib.import_module(f"pyaten.commands.{COMMANDS[name]}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyaten", description="PyTorch's operator system, rebuilt in Python."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = _load(name)
        command_parser = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command_parser)
    return parser


# The exit status of a command whose reader went away: what a shell reports for SIGPIPE.
CLOSED_PIPE_STATUS = 128 + 13


def main(argv: list[str] | None = None) -> int:
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here (also after --help), not at exit
    except BrokenPipeError:
        _drop_unwritten_output()
        return CLOSED_PIPE_STATUS


def terminal_width() -> int:
    """The columns output may use: COLUMNS, else the terminal's, else 80."""
    return shutil.get_terminal_size((80, 24)).columns


def _run(argv: list[str] | None) -> int:
    from pyaten.dispatch.text_width import use_width

    with use_width(terminal_width()):
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        return int(_load(args.command).run(args) or 0)


def _drop_unwritten_output() -> None:
    """Send what is still buffered for a closed pipe to the null device.

    Python flushes stdout and stderr again at exit; a flush into the closed pipe would print
    "Exception ignored ... BrokenPipeError" there.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):  # a closed or replaced stream: nothing left to flush
            pass


if __name__ == "__main__":
    sys.exit(main())
