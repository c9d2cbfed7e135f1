"""`pyaten codegen show add.Tensor`: what the code generator produced for one operator.

`show NAME` prints the generated source that belongs to the overload (or, for a bare name,
every overload of it): structured wrappers, autogen kernels, bindings and the registrations.
`missing` lists registrations skipped because a named kernel does not exist; `path` prints the
cached generated module.
"""

from __future__ import annotations

import argparse
import sys

HELP = "show the generated Python for an operator (bindings, wrappers, registrations)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["show", "missing", "path"], help="what to print")
    parser.add_argument("name", nargs="?", help="an operator: add.Tensor, add_.Tensor, exp")


def _show(name: str) -> int:
    from pyaten.codegen.gen_native import generate
    from pyaten.native.loader import NATIVE_YAML, generated_module_source

    _, records = generated_module_source(NATIVE_YAML)
    generated = generate(records, str(NATIVE_YAML))
    wanted = [name] if "." in name else sorted(
        k for k in generated.per_op if k == name or k.startswith(name + ".")
    )
    if not any(w in generated.per_op for w in wanted):
        known = ", ".join(sorted(generated.per_op)[:20])
        print(f"pyaten codegen: no operator '{name}' in {NATIVE_YAML} (known: {known}, ...)",
              file=sys.stderr)
        return 1
    seen: set[str] = set()
    for op in wanted:
        record = next((r for r in records if r.func.name.unqualified == op), None)
        print(f"# ===== {op} =====")
        if record is not None:
            print(f"# func: {record.func}")
            print(f"# declared at {record.loc.path}:{record.loc.line}")
        chunks = generated.per_op[op].chunks if op in generated.per_op else []
        for chunk in chunks:
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
        try:
            return _show(args.name)
        except BrokenPipeError:  # `pyaten codegen show add | head`
            sys.stderr.close()
            return 0
    from pyaten.native.loader import load

    loaded = load()
    if args.action == "path":
        print(loaded.source_path)
        return 0
    for line in loaded.missing:
        print(line)
    return 1 if loaded.missing else 0
