"""`pyaten conformance DEVICE`: run the conformance kit on a plug-in device, print coverage.

Imports the package that registers DEVICE (`pyaten_<name>` unless `--backend` names it),
runs `pyaten.testing.run_backend_conformance` (every sample, or those of `--ops`), prints the
per-operator table (native / fallback / failing) and the device's fallback counters, and
exits 1 when an operator fails (0 otherwise).
"""

from __future__ import annotations

import argparse
import importlib
import sys

HELP = "run pyaten's operator samples on a plug-in device against the CPU; print coverage"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("device", metavar="DEVICE", help="the device, e.g. openreg or openreg:1")
    parser.add_argument("--backend", metavar="MODULE", default=None,
                        help="the package that registers DEVICE (default: pyaten_<name>)")
    parser.add_argument("--ops", nargs="+", metavar="OP", default=None,
                        help="only these operators (add.Tensor, or a name such as add)")
    parser.add_argument("--failing", action="store_true",
                        help="list only the failing operators")


def run(args: argparse.Namespace) -> int:
    import pyaten
    from pyaten.testing.conformance import run_backend_conformance

    name = args.device.partition(":")[0]
    module = args.backend or (f"pyaten_{name}" if name not in ("cpu", "meta") else None)
    if module is not None:
        try:
            importlib.import_module(module)
        except ImportError as error:
            print(f"pyaten conformance: cannot import '{module}', the package that registers "
                  f"'{name}' ({error}); name it with --backend MODULE", file=sys.stderr)
            return 2
    try:
        pyaten.device(args.device)
        report = run_backend_conformance(args.device, args.ops)
    except (RuntimeError, ValueError) as error:
        print(f"pyaten conformance: {error}", file=sys.stderr)
        return 2
    if args.failing:
        for op in report.failing():
            print(f"{op}: {report.results[op].detail}")
    else:
        print(report)
    return 1 if report.failing() else 0
