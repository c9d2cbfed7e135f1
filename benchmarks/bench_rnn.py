"""Recurrent layers, pyaten beside PyTorch (both on one thread).

Run: .venv/bin/python benchmarks/bench_rnn.py [--quick]

Forward, and forward + backward, of nn.LSTM / nn.GRU / nn.RNN with 2 layers, hidden size
128, input size 64, sequence length 50, batch 32 (float32). Both modules hold the same
weights. Times are CPU time of this process, best of the repeats.
"""

from __future__ import annotations

import argparse
import os
import sys

# One thread for NumPy's BLAS too, as torch.set_num_threads(1) gives torch (see main).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _common import per_call_cpu_us  # noqa: E402

INPUT, HIDDEN, LAYERS, STEPS, BATCH = 64, 128, 2, 50, 32


def _cases(lib, module, x):
    def forward():
        with lib.no_grad():
            return module(x)

    def forward_backward():
        module.zero_grad()
        output = module(x)[0]
        output.sum().backward()

    return forward, forward_backward


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    number, repeat = (1, 2) if args.quick else (3, 3)

    import torch

    torch.set_num_threads(1)
    import pyaten

    x_np = np.random.default_rng(0).standard_normal((STEPS, BATCH, INPUT)).astype(np.float32)
    print(f"{LAYERS} layers, hidden {HIDDEN}, input {INPUT}, seq {STEPS}, batch {BATCH}, float32")
    print(f"{'case':<28}{'pyaten ms':>12}{'torch ms':>12}{'ratio':>8}")
    for cls in ("LSTM", "GRU", "RNN"):
        theirs = getattr(torch.nn, cls)(INPUT, HIDDEN, LAYERS)
        ours = getattr(pyaten.nn, cls)(INPUT, HIDDEN, LAYERS)
        ours.load_state_dict(
            {k: pyaten.from_numpy(v.detach().numpy().copy())
             for k, v in theirs.state_dict().items()}
        )
        ours_cases = _cases(pyaten, ours, pyaten.from_numpy(x_np))
        theirs_cases = _cases(torch, theirs, torch.from_numpy(x_np))
        for label, mine, reference in zip(
            ("forward", "forward+backward"), ours_cases, theirs_cases
        ):
            ours_ms = per_call_cpu_us(mine, number, repeat) / 1000
            torch_ms = per_call_cpu_us(reference, number, repeat) / 1000
            name = f"{cls} {label}"
            print(f"{name:<28}{ours_ms:>12.2f}{torch_ms:>12.2f}{ours_ms / torch_ms:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
