"""Large-tensor time of pyaten.fft beside PyTorch (one thread) and beside the best single
NumPy/SciPy expression for each transform.

Run: .venv/bin/python benchmarks/bench_fft.py [--quick] [--only NAME,...]

1-d transforms run on 1M (2**20) float32 elements, 2-d ones on 1024x1024, complex64 where the
transform takes complex input. The goal: within 1.5x of PyTorch (oneMKL), or within 10% of
the SciPy/NumPy expression (pocketfft, which pyaten's kernels call); the last column says
which holds ("torch", "numpy") or "SLOW".
"""

from __future__ import annotations

import argparse
from functools import partial

import numpy as np
import scipy.fft as sfft
import torch
from _common import against_torch_and_numpy

import pyaten
import pyaten.fft

N = 1 << 20
SIDE = 1024


def _inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    real = rng.standard_normal(N).astype(np.float32)
    image = rng.standard_normal((SIDE, SIDE)).astype(np.float32)
    return {
        "real": real,
        "complex": (real + 1j * rng.standard_normal(N)).astype(np.complex64),
        "half": (real[: N // 2 + 1] + 1j * real[: N // 2 + 1]).astype(np.complex64),
        "image": image,
        "cimage": (image + 1j * image.T).astype(np.complex64),
    }


# (name, input, call(lib, x), NumPy/SciPy expressions; the fastest of them is the figure)
CASES = [
    ("fft (real in)", "real", lambda m, x: m.fft.fft(x), [sfft.fft, np.fft.fft]),
    ("fft (complex in)", "complex", lambda m, x: m.fft.fft(x), [sfft.fft, np.fft.fft]),
    ("ifft", "complex", lambda m, x: m.fft.ifft(x), [sfft.ifft, np.fft.ifft]),
    ("rfft", "real", lambda m, x: m.fft.rfft(x), [sfft.rfft, np.fft.rfft]),
    ("irfft", "half", lambda m, x: m.fft.irfft(x), [sfft.irfft, np.fft.irfft]),
    ("fft2 (real in)", "image", lambda m, x: m.fft.fft2(x), [sfft.fft2, np.fft.fft2]),
    ("fft2 (complex in)", "cimage", lambda m, x: m.fft.fft2(x), [sfft.fft2, np.fft.fft2]),
    ("rfft2", "image", lambda m, x: m.fft.rfft2(x), [sfft.rfft2, np.fft.rfft2]),
    ("fft (dim=0, 1024x1024)", "image", lambda m, x: m.fft.fft(x, dim=0),
     [partial(sfft.fft, axis=0), partial(np.fft.fft, axis=0)]),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--only", default="", help="comma-separated case names")
    args = parser.parse_args()
    torch.set_num_threads(1)
    repeat = 3 if args.quick else 7
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    arrays = _inputs()
    ours_inputs = {k: pyaten.from_numpy(v) for k, v in arrays.items()}
    torch_inputs = {k: torch.from_numpy(v) for k, v in arrays.items()}
    print(f"1-d: {N} elements, 2-d: {SIDE}x{SIDE}; one thread; times in ms (best of {repeat})")
    header = (f"{'op':26} {'pyaten':>8} {'torch':>8} {'numpy':>8} {'/torch':>7} {'/numpy':>7}"
              "  goal")
    print(header)
    print("-" * len(header))
    slow = 0
    for name, key, call, expressions in CASES:
        if only and name not in only:
            continue
        x_np = arrays[key]
        ours, theirs, numpy_time, goal = against_torch_and_numpy(
            repeat,
            partial(call, pyaten, ours_inputs[key]),
            partial(call, torch, torch_inputs[key]),
            [partial(e, x_np) for e in expressions],
            pause_gc=True,
        )
        slow += goal is None
        print(f"{name:26} {ours:8.2f} {theirs:8.2f} {numpy_time:8.2f} {ours / theirs:7.2f} "
              f"{ours / numpy_time:7.2f}  {goal or 'SLOW'}")
    print(f"\n{slow} operator(s) miss both goals")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
