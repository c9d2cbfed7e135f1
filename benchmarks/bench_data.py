"""pyaten.utils.data and pyaten.save/load beside PyTorch (both on one thread).

Run: .venv/bin/python benchmarks/bench_data.py [--quick]

Cases: one epoch of a DataLoader over a TensorDataset of 10,000 x 784 float32 (batch 64,
sequential and shuffled); save + load of a 784-256-10 MLP state dict (in memory). pyaten
saves safetensors, PyTorch its zip of pickles.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections import OrderedDict

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _common import best_times  # noqa: E402


def cases(lib) -> dict:
    rng = np.random.default_rng(0)
    images = lib.from_numpy(rng.standard_normal((10_000, 784)).astype(np.float32))
    labels = lib.from_numpy(rng.integers(0, 10, 10_000))
    data = lib.utils.data.TensorDataset(images, labels)
    state = OrderedDict(
        (name, lib.from_numpy(rng.standard_normal(shape).astype(np.float32)))
        for name, shape in (("0.weight", (256, 784)), ("0.bias", (256,)),
                            ("2.weight", (10, 256)), ("2.bias", (10,)))
    )

    def epoch(shuffle: bool):
        def run():
            count = 0
            for x, _ in lib.utils.data.DataLoader(data, batch_size=64, shuffle=shuffle):
                count += x.shape[0]
            return count
        return run

    def save_load():
        buffer = io.BytesIO()
        lib.save(state, buffer)
        buffer.seek(0)
        return lib.load(buffer)

    return {"DataLoader epoch, batch 64": epoch(False),
            "DataLoader epoch, shuffled": epoch(True),
            "save+load MLP state dict": save_load}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    repeat = 2 if args.quick else 5

    import torch
    import torch.utils.data  # noqa: F401

    torch.set_num_threads(1)
    import pyaten
    import pyaten.utils.data  # noqa: F401

    ours, theirs = cases(pyaten), cases(torch)
    print(f"{'case':<32}{'pyaten ms':>12}{'torch ms':>12}{'ratio':>8}")
    for name in ours:
        (p, t), _ = best_times(repeat, [ours[name], theirs[name]], pause_gc=True)
        print(f"{name:<32}{p * 1e3:>12.2f}{t * 1e3:>12.2f}{p / t:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
