"""`pyaten explain "EXPR"`: evaluate EXPR with `pyaten` imported and explain every call it makes.

EXPR is a Python expression, or statements whose last line is an expression (its value is
shown): `pyaten explain "x = pyaten.ones(3); x.add_(1)"`. `torch` names pyaten too, and `import
torch...` imports pyaten's module of that name, so code copied from a PyTorch program runs as
written: `pyaten explain "torch.ones(2) * 2"`.
A syntax error prints Python's own
message; an exception raised while evaluating prints the tree up to the failing call, the call
marked, then the error; the exit status is then 1 (2 for a syntax error).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import sys
import traceback
import warnings
from typing import Any

HELP = "evaluate a Python expression and explain each operator call, from YAML to kernel"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "expr", help='a Python expression, e.g. "pyaten.add(pyaten.ones(2, 3), 1.5, alpha=2)"'
    )
    parser.add_argument("--depth", type=int, default=None, metavar="N",
                        help="follow calls made by kernels N levels deep (1: EXPR's own calls)")
    parser.add_argument("--no-values", action="store_true",
                        help="leave tensor values out (shapes, dtypes and strides stay)")
    parser.add_argument("--format", choices=("text", "json"), default="text")


def compile_expression(text: str) -> tuple[Any, Any]:
    """(code of the statements before the last, code of the last expression or None).

    Raises SyntaxError, with Python's message, for text that is not valid Python.
    """
    tree = ast.parse(text, filename="<EXPR>", mode="exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    body = compile(tree, "<EXPR>", "exec")
    return body, (compile(last, "<EXPR>", "eval") if last is not None else None)


def evaluate(text: str, *, depth: int | None = None, values: bool = True) -> tuple[Any, Any]:
    """Evaluate `text` under `pyaten.explain()`: (the explanation, EXPR's value).

    SyntaxError propagates before anything runs; other exceptions are kept in
    `explanation.error` (the value is then None).
    """
    import pyaten

    body, last = compile_expression(text)
    # `torch.` expressions copied from PyTorch programs run on pyaten, imports included.
    namespace: dict[str, Any] = {"pyaten": pyaten, "torch": pyaten, "__name__": "__explain__",
                                 "__builtins__": _builtins_importing_torch_as_pyaten()}
    explanation = pyaten.explain(depth=depth, values=values)
    explanation.expression = text
    value = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with explanation:
                exec(body, namespace)
                if last is not None:
                    value = eval(last, namespace)
        except Exception:  # kept in explanation.error by its __exit__
            value = None
    explanation.warnings = [f"{w.category.__name__}: {w.message}" for w in caught]
    if explanation.error is None:
        from pyaten.utils.explain_values import describe

        explanation.value = describe(value) if last is not None else None
    return explanation, value


def _builtins_importing_torch_as_pyaten() -> dict[str, Any]:
    """Python's builtins with an `__import__` that answers `import torch` / `from torch.nn
    import functional` with pyaten's modules of the same names."""
    import builtins
    import importlib

    def import_(name: str, globals_: Any = None, locals_: Any = None, fromlist: Any = (),
                level: int = 0) -> Any:
        if level == 0 and (name == "torch" or name.startswith("torch.")):
            module = importlib.import_module("pyaten" + name[len("torch"):])
            return module if fromlist else importlib.import_module("pyaten")
        return builtins.__import__(name, globals_, locals_, fromlist, level)

    return {**vars(builtins), "__import__": import_}


def run(args: argparse.Namespace) -> int:
    if args.depth is not None and args.depth < 1:
        print("pyaten explain: --depth must be at least 1", file=sys.stderr)
        return 2
    printed = io.StringIO()
    # In JSON mode what EXPR prints is kept in "printed", so stdout stays one JSON document.
    json_mode = args.format == "json"
    capture = contextlib.redirect_stdout(printed) if json_mode else contextlib.nullcontext()
    try:
        with capture:
            explanation, _ = evaluate(args.expr, depth=args.depth, values=not args.no_values)
    except SyntaxError as exc:
        sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))
        return 2
    if args.format == "json":
        data = explanation.as_dict()
        data["printed"] = printed.getvalue()
        print(json.dumps(data, indent=2, default=str))
    else:
        print(explanation)
    return 1 if explanation.error is not None else 0
