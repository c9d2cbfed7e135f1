"""What saying "pyaten does not implement torch.Tensor.xyz yet" costs a normal attribute read.

pyaten marks the `torch.Tensor` names it lacks with placeholders on the class (see the Note
in `pyaten/utils/torch_api.py`). The alternative, a `Tensor.__getattr__`, is measured beside
it: CPython 3.11 stops specialising attribute loads on a class that defines one, so every
read pays, not only the failed ones. Each mode runs in a fresh process, interleaved; the best
of the rounds is kept. PyTorch's figure for the same statements is printed for scale.

Run: .venv/bin/python benchmarks/bench_torch_api.py
"""

from __future__ import annotations

import subprocess
import sys

ROUNDS = 5
CASES = {
    "t.shape; t.dtype; t.ndim": "t.shape; t.dtype; t.ndim",
    "t.add(t)": "t.add(t)",
}

_CHILD = r"""
import sys, timeit
mode, stmt = sys.argv[1], sys.argv[2]
if mode == "torch":
    import torch as m
else:
    import pyaten as m
    if mode == "__getattr__":
        def __getattr__(self, name):
            raise AttributeError(name)
        m.Tensor.__getattr__ = __getattr__
t = m.ones(4, 4)
number = 20000
print(min(timeit.repeat(stmt, globals={"t": t}, number=number, repeat=7)) / number * 1e6)
"""

MODES = ("placeholders", "__getattr__", "torch")


def main() -> None:
    print(f"{'statement':<28}" + "".join(f"{mode:>16}" for mode in MODES) + "  (us per statement)")
    for label, stmt in CASES.items():
        best = dict.fromkeys(MODES, float("inf"))
        for _ in range(ROUNDS):
            for mode in MODES:
                run = [sys.executable, "-c", _CHILD, mode, stmt]
                out = subprocess.run(run, capture_output=True, text=True, check=True).stdout
                best[mode] = min(best[mode], float(out))
        print(f"{label:<28}" + "".join(f"{best[mode]:>16.3f}" for mode in MODES))


if __name__ == "__main__":
    main()
