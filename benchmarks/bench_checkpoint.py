"""Activation checkpointing's memory: what a model keeps for backward, plain and checkpointed,
in pyaten and in torch; and pyaten's peak traced memory over forward + backward.

Run: .venv/bin/python benchmarks/bench_checkpoint.py

The model is 8 blocks of Linear(256, 1024) -> GELU -> Linear(1024, 256) on a batch of 64.
"Saved" counts the bytes of the distinct storages the autograd graph holds after the
forward, the parameters' own left out (torch: through saved-tensor hooks; pyaten: the
graph's SavedTensors). "Peak" is
tracemalloc's peak over forward + backward, after a first backward made the parameters'
.grad buffers (NumPy's buffers are traced; torch's are not, so it is printed for pyaten
only).
"""

from __future__ import annotations

import tracemalloc

import torch
import torch.utils.checkpoint

import pyaten
import pyaten.utils.checkpoint
from pyaten.autograd.graph import SavedTensor

BLOCKS, WIDTH, HIDDEN, BATCH = 8, 256, 1024, 64


def build(m):
    m.manual_seed(0)
    return [m.nn.Sequential(m.nn.Linear(WIDTH, HIDDEN), m.nn.GELU(), m.nn.Linear(HIDDEN, WIDTH))
            for _ in range(BLOCKS)]


def forward(m, blocks, x, mode):
    for block in blocks:
        if mode == "plain":
            x = block(x)
        else:
            ck = pyaten.utils.checkpoint if m is pyaten else torch.utils.checkpoint
            x = ck.checkpoint(block, x, use_reentrant=(mode == "reentrant"))
    return x


def pyaten_saved(root, blocks) -> int:
    params = {id(p._storage) for b in blocks for p in b.parameters()}
    storages, seen, stack = {}, set(), [root]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        values = list(getattr(node, "__dict__", {}).values())
        for cls in type(node).__mro__:
            values += [getattr(node, s, None) for s in getattr(cls, "__slots__", ())]
        for value in values:
            for item in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(item, SavedTensor) and item._data is not None:
                    storages[id(item._data._storage)] = item._data._storage.nbytes
        stack += [child for child, _ in node.next_functions]
    return sum(n for key, n in storages.items() if key not in params)


def torch_saved(blocks, x, mode) -> int:
    storages = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = forward(torch, blocks, x, mode)
    del out
    params = {p.untyped_storage().data_ptr() for b in blocks for p in b.parameters()}
    return sum(n for key, n in storages.items() if key not in params)


def pyaten_peak(blocks, x, mode) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    out = forward(pyaten, blocks, x, mode)
    out.sum().backward()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> None:
    ours, theirs = build(pyaten), build(torch)
    x_o = pyaten.randn(BATCH, WIDTH, requires_grad=True)
    x_t = torch.randn(BATCH, WIDTH, requires_grad=True)
    forward(pyaten, ours, x_o, "plain").sum().backward()  # the .grad buffers exist from here on
    print(f"{'mode':<14}{'pyaten saved':>16}{'torch saved':>16}{'pyaten peak':>16}")
    for mode in ("plain", "reentrant", "non-reentrant"):
        saved_o = pyaten_saved(forward(pyaten, ours, x_o, mode).grad_fn, ours)
        saved_t = torch_saved(theirs, x_t, mode)
        peak = pyaten_peak(ours, x_o, mode)
        print(f"{mode:<14}{saved_o / 2**20:>13.2f} MB{saved_t / 2**20:>13.2f} MB"
              f"{peak / 2**20:>13.2f} MB")


if __name__ == "__main__":
    main()
