"""The `pyaten` command line: one sub-command per module in `pyaten.commands`.

Each command module defines `HELP` (one line), `add_arguments(parser)` and `run(args) -> int`.
Command modules are imported only when their command runs, so `pyaten --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# command name -> module under pyaten.commands; add a line here when a command module lands.
COMMANDS: dict[str, str] = {
    "schema": "schema",
    "lint": "lint",
    "codegen": "codegen",
    "explain": "explain",
    "dispatch": "dispatch",
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return int(_load(args.command).run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
