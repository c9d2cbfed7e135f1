"""Pointwise binary and ternary operators on 4M float32 elements: pyaten beside PyTorch (one
thread) and beside the best single NumPy/SciPy expression for each operator.

Run: .venv/bin/python benchmarks/bench_binary.py [--quick] [--ops add,fmod,...]

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


def _lerp(a, b, w):
    return a + w * (b - a)


def _cases():
    """name -> (pyaten/torch call as a function of (lib, x, y, z), NumPy expression of
    (x, y, z)); x, y in (0.5, 2), z in (0, 1)."""
    two = {
        "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
        "true_divide": np.true_divide, "floor_divide": np.floor_divide,
        "remainder": np.remainder, "fmod": np.fmod, "pow": np.power, "atan2": np.arctan2,
        "hypot": np.hypot, "copysign": np.copysign, "nextafter": np.nextafter,
        "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2, "maximum": np.maximum,
        "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin, "eq": np.equal,
        "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
        "logical_xor": np.logical_xor, "xlogy": scipy.special.xlogy,
        "heaviside": np.heaviside, "complex": lambda x, y: x + 1j * y,
        "polar": lambda x, y: x * np.exp(1j * y),
    }
    cases = {
        name: (lambda lib, x, y, z, name=name: getattr(lib, name)(x, y),
               lambda x, y, z, fn=fn: fn(x, y))
        for name, fn in two.items()
    }
    cases["float_power"] = (lambda lib, x, y, z: lib.float_power(x, y),
                            lambda x, y, z: np.power(x.astype(np.float64), y.astype(np.float64)))
    cases["ldexp"] = (lambda lib, x, y, z: lib.ldexp(x, y), lambda x, y, z: x * np.exp2(y))
    cases["div(floor)"] = (lambda lib, x, y, z: lib.div(x, y, rounding_mode="floor"),
                           lambda x, y, z: np.floor_divide(x, y))
    cases["div(trunc)"] = (lambda lib, x, y, z: lib.div(x, y, rounding_mode="trunc"),
                           lambda x, y, z: np.trunc(x / y))
    cases["lerp(0.3)"] = (lambda lib, x, y, z: lib.lerp(x, y, 0.3),
                          lambda x, y, z: _lerp(x, y, np.float32(0.3)))
    cases["lerp(z)"] = (lambda lib, x, y, z: lib.lerp(x, y, z), lambda x, y, z: _lerp(x, y, z))
    cases["addcmul"] = (lambda lib, x, y, z: lib.addcmul(x, y, z, value=0.5),
                        lambda x, y, z: x + np.float32(0.5) * y * z)
    cases["addcdiv"] = (lambda lib, x, y, z: lib.addcdiv(x, y, z, value=0.5),
                        lambda x, y, z: x + np.float32(0.5) * (y / z))
    cases["where"] = (lambda lib, x, y, z: lib.where(z > 0.5, x, y),
                      lambda x, y, z: np.where(z > 0.5, x, y))
    cases["isclose"] = (lambda lib, x, y, z: lib.isclose(x, y),
                        lambda x, y, z: np.isclose(x, y, rtol=1e-5, atol=1e-8))
    return cases


INTEGER_CASES = {
    "gcd": np.gcd, "lcm": np.lcm, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "bitwise_left_shift": np.left_shift,
    "bitwise_right_shift": np.right_shift,
}


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
    arrays = [rng.uniform(0.5, 2.0, N).astype(np.float32) for _ in range(2)]
    arrays.append(rng.uniform(0.0, 1.0, N).astype(np.float32))
    ints = [rng.integers(1, 30, N).astype(np.int32), rng.integers(0, 8, N).astype(np.int32)]

    def both(values):
        return ([torch.from_numpy(v.copy()) for v in values],
                [pyaten.from_numpy(v.copy()) for v in values])

    (ft, fp), (it, ip) = both(arrays), both(ints)
    cases = _cases()
    for name, fn in INTEGER_CASES.items():
        cases[name + " (int32)"] = (lambda lib, x, y, z, name=name: getattr(lib, name)(x, y),
                                    lambda x, y, z, fn=fn: fn(x, y))
    wanted = [name for name in cases if not args.ops or name.split("(")[0].strip() in
              args.ops.split(",")]
    print(f"4M elements (float32; int32 where marked), one thread; best of {repeat} (ms)")
    print(f"{'op':<28}{'pyaten':>9}{'torch':>9}{'numpy':>9}{'/torch':>8}{'/numpy':>8}  ok")
    failures = 0
    with np.errstate(all="ignore"):
        for name in wanted:
            call, numpy_expr = cases[name]
            t_args, p_args, n_args = (it, ip, ints) if "int32" in name else (ft, fp, arrays)
            t_args = (*t_args, ft[2]) if len(t_args) == 2 else t_args
            p_args = (*p_args, fp[2]) if len(p_args) == 2 else p_args
            n_args = (*n_args, arrays[2]) if len(n_args) == 2 else n_args
            ours, theirs, numpy_time, verdict = against_torch_and_numpy(
                repeat,
                partial(call, pyaten, *p_args),
                partial(call, torch, *t_args),
                [partial(numpy_expr, *n_args)],
            )
            failures += verdict is None
            print(f"{name:<28}{ours:>9.2f}{theirs:>9.2f}{numpy_time:>9.2f}"
                  f"{ours / theirs:>8.2f}{ours / numpy_time:>8.2f}  {verdict or 'NO'}")
    print(f"{len(wanted) - failures}/{len(wanted)} within 1.5x of torch or 10% of NumPy")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
