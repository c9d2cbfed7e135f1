"""`pyaten codegen show add.Tensor`: what the code generator produced for one operator.

`show NAME` prints the generated source that belongs to the overload (or, for a bare name,
every overload of it): structured wrappers, autogen kernels, bindings and the registrations.
`missing` lists registrations skipped because a named kernel does not exist; `path` prints the
cached generated module.
"""

from __future__ import annotations

import argparse
import sys
import textwrap

from pyaten.commands._names import close_names, overloads
from pyaten.dispatch.text_width import text_width

HELP = "show the generated Python for an operator (bindings, wrappers, registrations)"

ACTIONS = (
    ("show NAME", "the generated source of operator NAME: structured wrappers, autogen kernels, "
     "bindings and its registrations (key -> kernel). A bare name such as `add` shows every "
     "overload (add.Tensor, add.Scalar, add.out, ...)."),
    ("missing", "the registrations skipped because the kernel the YAML names is not defined by "
     "any @native function; exit status 1 when there is one."),
    ("path", "the file the generated module is cached in (under a hash of the YAML and the code "
     "generator, so an edit to either makes a new one)."),
)
EXAMPLES = ("pyaten codegen show add.Tensor", "pyaten codegen show add | less",
            "pyaten codegen missing")


def actions_help(width: int) -> str:
    """The epilog: each action's description wrapped to `width` under its name."""
    lines = ["actions:"]
    for term, text in ACTIONS:
        lines += textwrap.wrap(text, width=width, initial_indent=f"  {term:<11}",
                               subsequent_indent=" " * 13, break_on_hyphens=False)
    lines += ["", "examples:", *(f"  {example}" for example in EXAMPLES)]
    return "\n".join(lines) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = actions_help(text_width())
    parser.add_argument(
        "action",
        choices=["show", "missing", "path"],
        help="show NAME, missing or path (described below)",
    )
    parser.add_argument("name", nargs="?", help="for show: an operator, e.g. add.Tensor or add")


def _show(name: str) -> int:
    from pyaten.codegen.gen_native import generate
    from pyaten.dispatch.introspect import package_relative
    from pyaten.native.loader import NATIVE_YAML, generated_module_source

    _, records = generated_module_source(NATIVE_YAML)
    generated = generate(records, str(NATIVE_YAML))
    # An operator with nothing generated of its own (a plain kernel) still has registrations.
    known = set(generated.per_op) | {r.func.name.unqualified for r in records}
    wanted = overloads(name, known)
    if not wanted:
        close = close_names(name, known)
        hint = "did you mean: " + ", ".join(close) if close else "no operator has a similar name"
        print(f"pyaten codegen: no operator '{name}' in {NATIVE_YAML.name}", file=sys.stderr)
        print(textwrap.fill(hint, width=text_width(), subsequent_indent="  "), file=sys.stderr)
        return 1
    seen: set[str] = set()
    for op in wanted:
        record = next((r for r in records if r.func.name.unqualified == op), None)
        print(f"# ===== {op} =====")
        if record is not None:
            print(f"# func: {record.func}")
            print(f"# declared at {package_relative(record.loc.path)}:{record.loc.line}")
        for chunk in generated.per_op[op].chunks if op in generated.per_op else []:
            if chunk in seen:
                print(f"# (binding shown above: {chunk.splitlines()[0]})")
                continue
            seen.add(chunk)
            print(chunk)
        print("# registrations:")
        for reg in generated.registrations:
            if reg.operator.split("::", 1)[1] == op:
                print(f"#   {reg.operator} [{reg.key}] -> {reg.kernel} ({reg.kind})")
        print()
    return 0


def run(args: argparse.Namespace) -> int:
    if args.action == "show":
        if not args.name:
            print("pyaten codegen show: give an operator name, e.g. add.Tensor", file=sys.stderr)
            return 2
        return _show(args.name)
    if args.name:
        print(f"pyaten codegen {args.action}: takes no operator name", file=sys.stderr)
        return 2
    from pyaten.native.loader import load

    loaded = load()
    if args.action == "path":
        print(loaded.source_path)
        return 0
    for line in loaded.missing:
        print(line)
    return 1 if loaded.missing else 0
