"""`pyaten dispatch OP`: print an operator's dispatch table with the rule behind each entry."""

from __future__ import annotations

import argparse
import difflib
import json

HELP = "print an operator's dispatch table: what serves each key, which rule, registered where"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("op", help="qualified operator name, e.g. aten::add.Tensor (aten:: may "
                        "be omitted)")  # fmt: skip
    parser.add_argument("--all", action="store_true", help="also list keys with no kernel")
    parser.add_argument("--json", action="store_true", help="print the table as JSON")


def run(args: argparse.Namespace) -> int:
    import pyaten  # noqa: F401  (registers the built-in operators)
    from pyaten import dispatch

    name = args.op if "::" in args.op else f"aten::{args.op}"
    if dispatch.find_operator(name) is None:
        known = dispatch.list_operators()
        close = difflib.get_close_matches(name, known, n=5)
        print(f"pyaten dispatch: no operator named {name}")
        if close:
            print("did you mean: " + ", ".join(close))
        return 1
    explanation = dispatch.explain(name, show_missing=args.all)
    if args.json:
        print(json.dumps(explanation.as_dict(), indent=2))
    else:
        print(explanation)
    return 0
