"""`pyaten dispatch OP`: print an operator's dispatch table with the rule behind each entry.

Keys served alike (one rule, one registration) are printed as one group, paths relative to the
package, so the table of `add.Tensor` fits a terminal. A bare name (`add`) that is not itself an
operator stands for each of its overloads; an unknown name gets the closest known names.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from pyaten.commands._names import close_names, overloads
from pyaten.dispatch.text_width import text_width

HELP = "print an operator's dispatch table: what serves each key, which rule, registered where"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "op",
        help="an operator, e.g. aten::add.Tensor (aten:: may be omitted); a bare name such as "
        "add shows each overload",
    )
    parser.add_argument("--all", action="store_true", help="also list keys with no kernel")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the table as JSON (for a bare name, one table per overload)",
    )


def run(args: argparse.Namespace) -> int:
    import pyaten  # noqa: F401  (registers the built-in operators)
    import pyaten.distributed  # noqa: F401  (registers the c10d operators)
    from pyaten import dispatch

    name = args.op if "::" in args.op else f"aten::{args.op}"
    known = dispatch.list_operators()
    names = [name] if dispatch.find_operator(name) is not None else overloads(name, known)
    if not names:
        print(f"pyaten dispatch: no operator named {name}", file=sys.stderr)
        close = close_names(name, known)
        hint = "did you mean: " + ", ".join(close) if close else "no operator has a similar name"
        print(textwrap.fill(hint, width=text_width(), subsequent_indent="  "), file=sys.stderr)
        return 1
    explanations = [dispatch.explain(n, show_missing=args.all) for n in names]
    if args.json:
        data = (
            explanations[0].as_dict()
            if len(names) == 1
            else {e.operator: e.as_dict() for e in explanations}
        )
        print(json.dumps(data, indent=2))
        return 0
    if len(names) > 1:
        listed = f"{name} has {len(names)} overloads: {', '.join(names)}"
        print(textwrap.fill(listed, width=text_width(), subsequent_indent="  ") + "\n")
    print("\n\n".join(str(e) for e in explanations))
    return 0
