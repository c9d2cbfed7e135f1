"""Pointwise unary math on 4M float32 elements: pyaten beside PyTorch (one thread) and beside
the best single NumPy/SciPy expression for each operator.

Run: .venv/bin/python benchmarks/bench_unary.py [--quick] [--ops exp,sigmoid,...]

An operator passes when it is within 1.5x of PyTorch or within 10% of the NumPy/SciPy
expression (pyaten's floor: its kernels are NumPy calls). The last column says which held.
"""

from __future__ import annotations

import argparse
from functools import partial

import numpy as np
import scipy.special
from _common import against_torch_and_numpy

N = 4 * 1024 * 1024


def _cases():
    """name -> (pyaten call, torch call, NumPy expression), as functions of the inputs
    (x: values in (0.01, 0.99); y: 1 + x, for acosh)."""
    one_arg = {
        "abs": np.abs, "neg": np.negative, "sign": np.sign, "sgn": np.sign,
        "signbit": np.signbit, "ceil": np.ceil, "floor": np.floor, "round": np.rint,
        "trunc": np.trunc, "frac": lambda x: x - np.trunc(x), "exp": np.exp, "exp2": np.exp2,
        "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10,
        "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
        "square": np.square, "reciprocal": np.reciprocal, "sin": np.sin, "cos": np.cos,
        "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
        "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh,
        "atanh": np.arctanh, "sigmoid": scipy.special.expit, "logit": scipy.special.logit,
        "deg2rad": np.deg2rad, "rad2deg": np.rad2deg, "logical_not": np.logical_not,
        "relu": lambda x: np.maximum(x, 0),
    }
    cases = {
        name: (
            lambda lib, x, y, name=name: getattr(lib, name)(x),
            lambda x, y, fn=fn: fn(x),
        )
        for name, fn in one_arg.items()
    }
    cases["acosh"] = (lambda lib, x, y: lib.acosh(y), lambda x, y: np.arccosh(y))
    cases["round(decimals=2)"] = (
        lambda lib, x, y: lib.round(x, decimals=2), lambda x, y: np.round(x, 2)
    )
    cases["clamp(0.2, 0.8)"] = (
        lambda lib, x, y: lib.clamp(x, 0.2, 0.8), lambda x, y: np.clip(x, 0.2, 0.8)
    )
    cases["clamp_min(0.2)"] = (lambda lib, x, y: lib.clamp_min(x, 0.2),
                               lambda x, y: np.maximum(x, 0.2))
    cases["clamp_max(0.8)"] = (lambda lib, x, y: lib.clamp_max(x, 0.8),
                               lambda x, y: np.minimum(x, 0.8))
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--ops", default="", help="comma-separated subset")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7

    import torch

    torch.set_num_threads(1)
    import pyaten

    rng = np.random.default_rng(0)
    x_np = rng.uniform(0.01, 0.99, N).astype(np.float32)
    y_np = (x_np + 1).astype(np.float32)
    x_t, y_t = torch.from_numpy(x_np.copy()), torch.from_numpy(y_np.copy())
    x_p, y_p = pyaten.from_numpy(x_np.copy()), pyaten.from_numpy(y_np.copy())

    cases = _cases()
    wanted = [name for name in cases if not args.ops or name.split("(")[0] in args.ops.split(",")]
    print(f"4M float32, one thread; best of {repeat} (ms)")
    print(f"{'op':<18}{'pyaten':>9}{'torch':>9}{'numpy':>9}{'/torch':>8}{'/numpy':>8}  ok")
    failures = 0
    with np.errstate(all="ignore"):
        for name in wanted:
            call, numpy_expr = cases[name]
            ours, theirs, numpy_time, verdict = against_torch_and_numpy(
                repeat,
                partial(call, pyaten, x_p, y_p),
                partial(call, torch, x_t, y_t),
                [partial(numpy_expr, x_np, y_np)],
            )
            failures += verdict is None
            print(f"{name:<18}{ours:>9.2f}{theirs:>9.2f}{numpy_time:>9.2f}"
                  f"{ours / theirs:>8.2f}{ours / numpy_time:>8.2f}  {verdict or 'NO'}")
    print(f"{len(wanted) - failures}/{len(wanted)} within 1.5x of torch or 10% of NumPy")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
