"""Per-call cost of `__torch_function__`, pyaten beside PyTorch (one thread): a call on plain
tensors, the same call on a subclass that keeps the default handler, a property of each, and
the call inside a pass-through `TorchFunctionMode` (docs/torch-function.md).

Run: .venv/bin/python benchmarks/bench_torch_function.py [--quick]

The plain-tensor rows are the ones `__torch_function__` must leave alone; `benchmarks/
bench_ops.py` has the full small-op table. "a.shape" is measured after a subclass exists,
when the properties are routed.
"""

from __future__ import annotations

import argparse
import sys

from _common import per_call_cpu_us


def _cases(lib, overrides) -> dict:
    class Sub(lib.Tensor):
        pass

    class PassThrough(overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    a = lib.ones(4, 4)
    s = a.as_subclass(Sub)
    mode = PassThrough()

    def in_mode():
        with mode:
            return lib.add(a, a)

    return {
        "add(a, a)": lambda: lib.add(a, a),
        "a + a": lambda: a + a,
        "relu(a) (nn.functional)": lambda: lib.nn.functional.relu(a),
        "a.shape": lambda: a.shape,
        "add(s, s) subclass": lambda: lib.add(s, s),
        "s + s": lambda: s + s,
        "s[0]": lambda: s[0],
        "s.shape": lambda: s.shape,
        "add(a, a) in a mode": in_mode,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    number, repeat = (1000, 3) if parser.parse_args().quick else (5000, 5)

    import torch
    import torch.overrides

    torch.set_num_threads(1)
    import pyaten
    import pyaten.overrides

    ours = _cases(pyaten, pyaten.overrides)
    theirs = _cases(torch, torch.overrides)
    print(f"{'call':<26}{'pyaten us':>12}{'torch us':>12}{'ratio':>8}")
    for name, fn in ours.items():
        p = per_call_cpu_us(fn, number, repeat)
        t = per_call_cpu_us(theirs[name], number, repeat)
        print(f"{name:<26}{p:>12.2f}{t:>12.2f}{p / t:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
