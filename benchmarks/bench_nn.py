"""pyaten.nn.functional beside PyTorch (both on one thread).

Run: .venv/bin/python benchmarks/bench_nn.py [--quick]

Each family adds a `<family>_cases(lib)` function returning {case name: callable} (the callable
runs one step: forward, or forward and backward) and lists it in FAMILIES. Issue goal: within
2x of PyTorch for conv2d, max_pool2d, batch_norm, layer_norm, softmax+cross_entropy on
64x1000 and scaled_dot_product_attention.
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


def loss_cases(lib):
    rng = np.random.default_rng(0)
    logits = lib.tensor(rng.standard_normal((64, 1000)).astype(np.float32), requires_grad=True)
    labels = lib.tensor(rng.integers(0, 1000, 64))
    x = lib.tensor(rng.standard_normal((64, 1000)).astype(np.float32), requires_grad=True)
    y = lib.tensor(rng.standard_normal((64, 1000)).astype(np.float32))
    probs = lib.tensor(rng.random((64, 1000)).astype(np.float32))
    F = lib.nn.functional

    def step(loss_fn, *leaves):
        def run():
            for leaf in leaves:
                leaf.grad = None
            loss = loss_fn()
            loss.backward()
            return loss
        return run

    return {
        "softmax+cross_entropy 64x1000 fwd": lambda: F.cross_entropy(logits, labels),
        "softmax+cross_entropy 64x1000 f+b": step(lambda: F.cross_entropy(logits, labels),
                                                  logits),
        "cross_entropy smoothing 0.1 f+b": step(
            lambda: F.cross_entropy(logits, labels, label_smoothing=0.1), logits),
        "mse_loss 64x1000 f+b": step(lambda: F.mse_loss(x, y), x),
        "bce_with_logits 64x1000 f+b": step(
            lambda: F.binary_cross_entropy_with_logits(x, probs), x),
    }


def activation_cases(lib):
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((64, 128, 256)).astype(np.float32), requires_grad=True)
    F = lib.nn.functional

    def step(fn):
        def run():
            x.grad = None
            fn(x).sum().backward()
        return run

    return {
        "relu 64x128x256 f+b": step(F.relu),
        "gelu 64x128x256 fwd": lambda: F.gelu(x),
        "gelu 64x128x256 f+b": step(F.gelu),
        "gelu tanh 64x128x256 f+b": step(lambda t: F.gelu(t, approximate="tanh")),
        "silu 64x128x256 f+b": step(F.silu),
        "leaky_relu 64x128x256 f+b": step(F.leaky_relu),
    }


FAMILIES = [loss_cases, activation_cases]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    number, repeat = (20, 3) if args.quick else (100, 5)

    import torch

    torch.set_num_threads(1)
    import pyaten

    print(f"{'case':<40}{'pyaten us':>12}{'torch us':>12}{'ratio':>8}")
    for family in FAMILIES:
        ours, theirs = family(pyaten), family(torch)
        for name in ours:
            p = per_call_cpu_us(ours[name], number, repeat)
            t = per_call_cpu_us(theirs[name], number, repeat)
            print(f"{name:<40}{p:>12.1f}{t:>12.1f}{p / t:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
