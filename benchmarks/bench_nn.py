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


def conv_pool_cases(lib):
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((32, 3, 32, 32)).astype(np.float32), requires_grad=True)
    w = lib.tensor(rng.standard_normal((16, 3, 3, 3)).astype(np.float32), requires_grad=True)
    b = lib.tensor(rng.standard_normal(16).astype(np.float32), requires_grad=True)
    h = lib.tensor(rng.standard_normal((32, 16, 32, 32)).astype(np.float32), requires_grad=True)
    a = lib.tensor(rng.standard_normal((128, 512)).astype(np.float32), requires_grad=True)
    lw = lib.tensor(rng.standard_normal((256, 512)).astype(np.float32), requires_grad=True)
    F = lib.nn.functional

    def step(fn, *leaves):
        def run():
            for leaf in leaves:
                leaf.grad = None
            out = fn()
            out.sum().backward()
            return out
        return run

    return {
        "conv2d 32x3x32x32 16x3x3 fwd": lambda: F.conv2d(x, w, b, padding=1),
        "conv2d 32x3x32x32 16x3x3 f+b": step(lambda: F.conv2d(x, w, b, padding=1), x, w, b),
        "max_pool2d 32x16x32x32 k2 fwd": lambda: F.max_pool2d(h, 2),
        "max_pool2d 32x16x32x32 k2 f+b": step(lambda: F.max_pool2d(h, 2), h),
        "avg_pool2d 32x16x32x32 k2 f+b": step(lambda: F.avg_pool2d(h, 2), h),
        "adaptive_avg_pool2d 32x16x32x32 ->1 f+b": step(
            lambda: F.adaptive_avg_pool2d(h, 1), h),
        "linear 128x512 -> 256 f+b": step(lambda: F.linear(a, lw), a, lw),
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


def norm_attention_cases(lib):
    rng = np.random.default_rng(0)
    h = lib.tensor(rng.standard_normal((32, 16, 32, 32)).astype(np.float32), requires_grad=True)
    gamma = lib.tensor(rng.standard_normal(16).astype(np.float32), requires_grad=True)
    beta = lib.tensor(rng.standard_normal(16).astype(np.float32), requires_grad=True)
    rm, rv = lib.zeros(16), lib.ones(16)
    t = lib.tensor(rng.standard_normal((32, 128, 256)).astype(np.float32), requires_grad=True)
    lw = lib.tensor(rng.standard_normal(256).astype(np.float32), requires_grad=True)
    lb = lib.tensor(rng.standard_normal(256).astype(np.float32), requires_grad=True)
    q, k, v = (lib.tensor(rng.standard_normal((4, 8, 128, 64)).astype(np.float32),
                          requires_grad=True) for _ in range(3))
    F = lib.nn.functional

    def step(fn, *leaves):
        def run():
            for leaf in leaves:
                leaf.grad = None
            out = fn()
            out.sum().backward()
            return out
        return run

    def bn():
        return F.batch_norm(h, rm, rv, gamma, beta, training=True)

    def ln():
        return F.layer_norm(t, [256], lw, lb)

    def sdpa():
        return F.scaled_dot_product_attention(q, k, v)

    return {
        "batch_norm train 32x16x32x32 fwd": bn,
        "batch_norm train 32x16x32x32 f+b": step(bn, h, gamma, beta),
        "layer_norm 32x128x256 fwd": ln,
        "layer_norm 32x128x256 f+b": step(ln, t, lw, lb),
        "sdpa 4x8x128x64 fwd": sdpa,
        "sdpa 4x8x128x64 f+b": step(sdpa, q, k, v),
        "sdpa causal 4x8x128x64 f+b": step(
            lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v),
    }


FAMILIES = [loss_cases, conv_pool_cases, activation_cases, norm_attention_cases]


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
