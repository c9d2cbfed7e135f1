"""`pyaten graph SCRIPT.py:NAME`: capture a function (or trace a module) and write its graph.

NAME is a function taking tensors (given with `--input 2x3 --input 3x4`, random float32 of
those shapes; none by default), or an `nn.Module` class or instance (traced with
`symbolic_trace`, no inputs needed). The graph goes to stdout as Graphviz DOT, or to `-o
FILE`: `.dot` as text, `.svg`/`.png` through Graphviz's `dot` when it is installed. `--code`
prints the captured module's Python code instead.
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import shutil
import subprocess
import sys

HELP = "capture a function's ATen calls (make_fx) or trace a module and write the graph as DOT"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="SCRIPT.py:NAME",
                        help="a Python file and the function or module in it")
    parser.add_argument("--input", action="append", default=[], metavar="SHAPE",
                        help="an input tensor's shape, e.g. 2x3 (repeat for each input)")
    parser.add_argument("--fake", action="store_true",
                        help="capture with Meta tensors only (shapes and dtypes, no data)")
    parser.add_argument("--code", action="store_true", help="print the Python code instead")
    parser.add_argument("-o", "--output", help="write to FILE (.dot, .svg, .png)")


def _load(target: str):
    path, _, name = target.rpartition(":")
    if not path or not name:
        raise SystemExit(f"pyaten graph: expected SCRIPT.py:NAME, got {target!r}")
    file = pathlib.Path(path)
    if not file.is_file():
        raise SystemExit(f"pyaten graph: no such file: {path}")
    spec = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(file.resolve().parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    if not hasattr(module, name):
        raise SystemExit(f"pyaten graph: {path} defines no {name!r}")
    return getattr(module, name)


def _shape(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.lower().split("x") if part)
    except ValueError:
        raise SystemExit(f"pyaten graph: bad shape {text!r} (expected e.g. 2x3)") from None


def run(args: argparse.Namespace) -> int:
    import pyaten
    from pyaten.fx import symbolic_trace
    from pyaten.fx.experimental.proxy_tensor import make_fx

    obj = _load(args.target)
    if isinstance(obj, type) and issubclass(obj, pyaten.nn.Module):
        obj = obj()
    if isinstance(obj, pyaten.nn.Module):
        gm = symbolic_trace(obj)
    else:
        pyaten.manual_seed(0)
        inputs = [pyaten.randn(*_shape(s)) for s in args.input]
        gm = make_fx(obj, tracing_mode="fake" if args.fake else "real")(*inputs)
    text = gm.code.strip() + "\n" if args.code else gm.to_dot()
    if not args.output:
        sys.stdout.write(text)
        return 0
    out = pathlib.Path(args.output)
    if out.suffix in (".svg", ".png") and not args.code:
        dot = shutil.which("dot")
        if dot is None:
            print("pyaten graph: Graphviz's `dot` is not installed; write .dot instead",
                  file=sys.stderr)
            return 1
        subprocess.run([dot, f"-T{out.suffix[1:]}", "-o", str(out)], input=text.encode(),
                       check=True, timeout=120)
    else:
        out.write_text(text)
    print(f"wrote {out}")
    return 0
