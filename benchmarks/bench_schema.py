"""Parse all of PyTorch 2.13's native_functions.yaml schemas with pyaten and with torchgen.

Run: .venv/bin/python benchmarks/bench_schema.py [--repeat N]

pyaten is timed cold (its type/default caches cleared before every pass, so each pass does
all the work torchgen does) and warm (caches kept, as in a long-running process). torch's
C++ parser (`torch._C.parse_schema`) is printed for reference. Best of N interleaved
passes, garbage collector paused.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

from _common import TORCH_NATIVE_YAML, best_times
from torchgen.model import FunctionSchema as TorchgenSchema

# Run from a checkout without installing: the repository root holds the package.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from pyaten.schema import clear_caches, parse  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    schemas = re.findall(r"^- func: (.*)$", TORCH_NATIVE_YAML.read_text(), re.MULTILINE)

    def pyaten_cold() -> None:
        clear_caches()
        for s in schemas:
            parse(s)

    def pyaten_warm() -> None:
        for s in schemas:
            parse(s)

    def torchgen_parse() -> None:
        for s in schemas:
            TorchgenSchema.parse(s)

    labels = [
        "pyaten.schema.parse (cold caches)",
        "pyaten.schema.parse (warm caches)",
        "torchgen FunctionSchema.parse",
    ]
    fns = [pyaten_cold, pyaten_warm, torchgen_parse]
    try:
        import torch

        def torch_cpp() -> None:
            for s in schemas:
                torch._C.parse_schema(s)

        labels.append("torch._C.parse_schema (C++)")
        fns.append(torch_cpp)
    except ImportError:
        pass
    rows = list(zip(labels, best_times(args.repeat, fns, pause_gc=True)[0]))

    n = len(schemas)
    print(f"{n} schemas, best of {args.repeat} passes")
    for label, seconds in rows:
        print(f"  {label:<36} {seconds * 1e3:8.1f} ms  {seconds / n * 1e6:6.1f} us/schema")
    torchgen_s = rows[2][1]
    print(f"  torchgen / pyaten (cold): {torchgen_s / rows[0][1]:.2f}x")
    print(f"  torchgen / pyaten (warm): {torchgen_s / rows[1][1]:.2f}x")


if __name__ == "__main__":
    main()
