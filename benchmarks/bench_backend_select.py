"""What a factory's BackendSelect hop costs: `pyaten.empty`/`zeros` (binding, BackendSelect
kernel, redispatch, kernel) beside PyTorch's, and the `empty` kernel reached directly.

Run: `.venv/bin/python benchmarks/bench_backend_select.py`.
"""

from __future__ import annotations

import torch
from _common import per_call_us

import pyaten
from pyaten.dispatch import keys

_EMPTY = pyaten.ops.aten.empty.memory_format
_CPU = keys.keyset("CPU").raw


def main() -> None:
    cases = [
        ("empty(2)", lambda: pyaten.empty(2), lambda: torch.empty(2)),
        ("zeros(2, 3)", lambda: pyaten.zeros(2, 3), lambda: torch.zeros(2, 3)),
        ("empty(2, device='meta')", lambda: pyaten.empty(2, device="meta"),
         lambda: torch.empty(2, device="meta")),
        ("aten::empty.memory_format handle (with BackendSelect)",
         lambda: _EMPTY((2,)), lambda: torch.ops.aten.empty.memory_format((2,))),
        ("aten::empty.memory_format redispatched to CPU (without)",
         lambda: _EMPTY.redispatch(_CPU, (2,), None, None, None, None, None), None),
    ]
    for name, ours, theirs in cases:
        torch_us = f"{per_call_us(theirs, 2000):7.2f} us" if theirs else "      -"
        print(f"{name:58s} pyaten {per_call_us(ours, 2000):7.2f} us   torch {torch_us}")


if __name__ == "__main__":
    main()
