"""Load and group PyTorch's native_functions.yaml (and its derivatives.yaml): pyaten beside
torchgen, in one run.

    .venv/bin/python benchmarks/bench_declarations.py [--repeat N]

Both sides do the same work: read the YAML with line numbers, parse every schema, build the
records (autogen variants included), then group functional/in-place/out variants. Each side
starts cold on every repeat (torchgen's module-level result caches and pyaten's schema parser
caches are cleared); the best of N repeats is printed, runs interleaved so that machine load
hits both alike.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torchgen.gen as tg  # noqa: E402
from _common import TORCH_DERIVATIVES_YAML as DERIVATIVES  # noqa: E402
from _common import TORCH_NATIVE_YAML as NATIVE  # noqa: E402
from _common import TORCH_TAGS_YAML as TAGS  # noqa: E402
from _common import best_times  # noqa: E402
from torchgen.packaged.autograd import load_derivatives as tg_derivatives  # noqa: E402

from pyaten.declarations import (  # noqa: E402
    group_native_functions,
    lint,
    load_derivatives,
    load_native_functions,
)
from pyaten.schema import clear_caches  # noqa: E402

# the module (the package re-exports its `lint` function under the same name)
lint_module = importlib.import_module("pyaten.declarations.lint")


def pyaten_native():
    clear_caches()
    functions = load_native_functions(NATIVE)
    return functions, group_native_functions(functions)


def torchgen_native():
    tg._GLOBAL_PARSE_NATIVE_YAML_CACHE.clear()
    parsed = tg.parse_native_yaml(str(NATIVE), str(TAGS))
    return parsed.native_functions, tg.get_grouped_native_functions(parsed.native_functions)


def torchgen_native_gc_paused():
    gc.disable()
    try:
        return torchgen_native()
    finally:
        gc.enable()


def pyaten_derivatives():
    clear_caches()
    return load_derivatives(DERIVATIVES, native_functions=NATIVE)


def torchgen_derivatives():
    tg._GLOBAL_PARSE_NATIVE_YAML_CACHE.clear()
    tg_derivatives._GLOBAL_LOAD_DERIVATIVE_CACHE.clear()
    return tg_derivatives.load_derivatives(str(DERIVATIVES), str(NATIVE), str(TAGS))


def pyaten_lint():
    clear_caches()
    lint_module._NATIVE_MEMO.clear()  # lint reuses a native file's result; start cold
    return lint(NATIVE) + lint(DERIVATIVES, native=NATIVE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    (ours, theirs, theirs_nogc), ((fns, (groups, singles)), (t_fns, t_grouped), _) = best_times(
        args.repeat, [pyaten_native, torchgen_native, torchgen_native_gc_paused]
    )
    t_groups = sum(isinstance(g, tg.NativeFunctionsGroup) for g in t_grouped)
    print(f"native_functions.yaml: load + group, best of {args.repeat}")
    print(f"  pyaten   {ours * 1e3:8.1f} ms  {len(fns)} functions, {len(groups)} groups")
    print(f"  torchgen {theirs * 1e3:8.1f} ms  {len(t_fns)} functions, {t_groups} groups")
    print(f"  pyaten is {theirs / ours:.2f}x torchgen's speed")
    print(
        f"  (torchgen with the GC paused too, as pyaten does: {theirs_nogc * 1e3:.1f} ms, "
        f"pyaten {theirs_nogc / ours:.2f}x)"
    )

    (ours, theirs), (entries, infos) = best_times(
        args.repeat, [pyaten_derivatives, torchgen_derivatives]
    )
    print("derivatives.yaml (native file included), best of", args.repeat)
    print(f"  pyaten   {ours * 1e3:8.1f} ms  {len(entries)} entries")
    print(f"  torchgen {theirs * 1e3:8.1f} ms  {len(infos[0])} infos (incl. generated view_copy)")
    print(f"  pyaten is {theirs / ours:.2f}x torchgen's speed")

    (ours,), (diagnostics,) = best_times(args.repeat, [pyaten_lint])
    print(
        f"lint of both files (torchgen has no linter): pyaten {ours * 1e3:.1f} ms, "
        f"{len(diagnostics)} diagnostics"
    )


if __name__ == "__main__":
    main()
