"""The operators most used at large sizes (4M float32 elements; the row operators on 4096 x
1024), pyaten beside PyTorch (one thread each) and beside the best expression measured for
each: NumPy/SciPy calls, and pyaten's compiled loop where it has one (Numba installed).

Run: .venv/bin/python benchmarks/bench_large.py [--quick] [--ops exp,sigmoid,...]

Goal (issue 36): geometric mean of pyaten/PyTorch <= 1.1, none above 1.5, or within 10% of
the best expression measured for the operator. The last columns say which expression was
fastest and which goal holds. It imports whichever pyaten is first on the path, so
`PYTHONPATH=<another checkout> python benchmarks/bench_large.py` measures that tree.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy.special  # noqa: E402
from _common import geometric_mean, goal_met  # noqa: E402

N = 4 * 1024 * 1024
ROWS = (4096, 1024)


def _compiled_loops():
    """pyaten's compiled float32 loops (kernels/_vector_numba.py), or None."""
    try:
        from pyaten.native.kernels import _vector_numba
    except ImportError:
        return None
    return _vector_numba


def _softmax_np(x, log):
    shifted = x - x.max(axis=1, keepdims=True)
    if log:
        return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)


def _layer_norm_np(x, w, b):
    mean = x.mean(axis=1, keepdims=True)
    centred = x - mean
    var = np.square(centred).mean(axis=1, keepdims=True)
    return centred / np.sqrt(var + np.float32(1e-5)) * w + b


def cases(fast) -> dict[str, tuple[Callable, list[tuple[str, Callable]]]]:
    """name -> (call(lib, data), [(expression name, call(data))...]); data holds the NumPy
    inputs (x, y, m rows, t targets, w and b of the rows' width)."""
    def one(fn):
        return lambda lib, d: fn(lib, d["x"])

    def loop(name):
        def run(d):
            out = np.empty_like(d["x"])
            getattr(fast, name)(d["x"], out)
            return out

        return [("compiled loop", run)] if fast is not None else []

    def row_loop(log):
        def run(d):
            out = np.empty_like(d["m"])
            fast.softmax_rows_f32(d["m"], out, log)
            return out

        return [("compiled loop", run)] if fast is not None else []

    half, quarter = np.float32(0.5), np.float32(0.25)
    table = {
        "exp": (one(lambda lib, x: lib.exp(x)), [("np.exp", lambda d: np.exp(d["x"]))]
                + loop("exp_f32")),
        "log": (one(lambda lib, x: lib.log(x)), [("np.log", lambda d: np.log(d["p"]))]),
        "sqrt": (one(lambda lib, x: lib.sqrt(x)), [("np.sqrt", lambda d: np.sqrt(d["p"]))]),
        "rsqrt": (one(lambda lib, x: lib.rsqrt(x)),
                  [("1/np.sqrt", lambda d: np.reciprocal(np.sqrt(d["p"])))]),
        "abs": (one(lambda lib, x: lib.abs(x)), [("np.abs", lambda d: np.abs(d["x"]))]),
        "sigmoid": (one(lambda lib, x: lib.sigmoid(x)),
                    [("scipy expit", lambda d: scipy.special.expit(d["x"]))]
                    + loop("sigmoid_f32")),
        "tanh": (one(lambda lib, x: lib.tanh(x)), [("np.tanh", lambda d: np.tanh(d["x"]))]),
        "relu": (one(lambda lib, x: lib.relu(x)),
                 [("np.maximum", lambda d: np.maximum(d["x"], np.float32(0)))]
                 + loop("relu")),
        "gelu": (one(lambda lib, x: lib.nn.functional.gelu(x)),
                 [("x/2 (1+erf)", lambda d: d["x"] * half * (1 + scipy.special.erf(
                     d["x"] * np.float32(0.7071067811865476))))] + loop("gelu_f32")),
        "silu": (one(lambda lib, x: lib.nn.functional.silu(x)),
                 [("x*expit", lambda d: d["x"] * scipy.special.expit(d["x"]))]
                 + loop("silu_f32")),
        "erf": (one(lambda lib, x: lib.erf(x)),
                [("scipy erf", lambda d: scipy.special.erf(d["x"]))] + loop("erf_f32")),
        "clamp": (one(lambda lib, x: lib.clamp(x, -0.5, 0.5)),
                  [("np.clip", lambda d: np.clip(d["x"], -half, half))]),
        "pow 2": (one(lambda lib, x: lib.pow(x, 2)), [("np.square", lambda d: np.square(d["x"]))]),
        "pow 0.25": (lambda lib, d: lib.pow(d["p"], 0.25),
                     [("np.power", lambda d: np.power(d["p"], quarter))]),
        "add": (lambda lib, d: lib.add(d["x"], d["y"]), [("np.add", lambda d: d["x"] + d["y"])]),
        "mul": (lambda lib, d: lib.mul(d["x"], d["y"]),
                [("np.multiply", lambda d: d["x"] * d["y"])]),
        "div": (lambda lib, d: lib.div(d["x"], d["y"]), [("np.divide", lambda d: d["x"] / d["y"])]),
        "where": (lambda lib, d: lib.where(d["c"], d["x"], d["y"]),
                  [("np.where", lambda d: np.where(d["cn"], d["x"], d["y"]))]),
        "sum": (one(lambda lib, x: lib.sum(x)), [("np.sum", lambda d: d["x"].sum())]),
        "mean": (one(lambda lib, x: lib.mean(x)), [("np.mean", lambda d: d["x"].mean())]),
        "var": (one(lambda lib, x: lib.var(x)), [("np.var", lambda d: d["x"].var(ddof=1))]),
        "max": (one(lambda lib, x: lib.max(x)), [("np.max", lambda d: d["x"].max())]),
        "sum(dim=1)": (lambda lib, d: lib.sum(d["m"], 1),
                       [("np.sum(axis=1)", lambda d: d["mn"].sum(axis=1))]),
        "softmax": (lambda lib, d: lib.softmax(d["m"], 1),
                    [("NumPy 5 passes", lambda d: _softmax_np(d["mn"], False))]
                    + row_loop(False)),
        "log_softmax": (lambda lib, d: lib.log_softmax(d["m"], 1),
                        [("NumPy 5 passes", lambda d: _softmax_np(d["mn"], True))]
                        + row_loop(True)),
        "cross_entropy": (lambda lib, d: lib.nn.functional.cross_entropy(d["m"], d["t"]),
                          [("NumPy log_softmax + take", lambda d: -np.take_along_axis(
                              _softmax_np(d["mn"], True), d["tn"][:, None], 1).mean())]),
        "layer_norm": (lambda lib, d: lib.nn.functional.layer_norm(d["m"], (1024,), d["w"],
                                                                   d["b"]),
                       [("NumPy", lambda d: _layer_norm_np(d["mn"], d["wn"], d["bn"]))]),
    }
    return table


def best_times(repeat: int, fns: list[Callable[[], object]]) -> list[float]:
    """The best wall time of each function over `repeat` interleaved passes; each result is
    dropped before the next call, so that every library may reuse the memory it just freed
    (holding results made the timings depend on the allocator's page faults)."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            result = fn()
            best[i] = min(best[i], time.perf_counter() - start)
            del result
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--ops", default="", help="comma-separated subset")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7

    import torch

    import pyaten

    torch.set_num_threads(1)
    pyaten.set_num_threads(1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N).astype(np.float32)
    arrays = {
        "x": x, "y": rng.standard_normal(N).astype(np.float32) + np.float32(3.0),
        "p": np.abs(x) + np.float32(0.01), "c": x > 0,
        "m": rng.standard_normal(ROWS).astype(np.float32), "t": rng.integers(0, ROWS[1], ROWS[0]),
        "w": rng.standard_normal(ROWS[1]).astype(np.float32),
        "b": rng.standard_normal(ROWS[1]).astype(np.float32),
    }
    numpy_data = dict(arrays)
    numpy_data.update(cn=arrays["c"], mn=arrays["m"], tn=arrays["t"], wn=arrays["w"],
                      bn=arrays["b"])
    ours_data = {k: pyaten.from_numpy(v.copy()) for k, v in arrays.items()}
    torch_data = {k: torch.from_numpy(v.copy()) for k, v in arrays.items()}
    table = cases(_compiled_loops())
    wanted = [n for n in table if not args.ops or n in args.ops.split(",")]
    print(f"4M float32 (rows: 4096 x 1024), one thread; best of {repeat} (ms)")
    print(f"{'op':<15}{'pyaten':>8}{'torch':>8}{'best':>8}{'/torch':>8}{'/best':>7}  "
          f"{'best expression':<26}goal")
    ratios = []
    met = 0
    for name in wanted:
        call, expressions = table[name]
        fns = [lambda call=call: call(pyaten, ours_data),
               lambda call=call: call(torch, torch_data)]
        fns += [lambda fn=fn: fn(numpy_data) for _, fn in expressions]
        with np.errstate(all="ignore"):
            times = best_times(repeat, fns)
        ours, theirs = times[0] * 1e3, times[1] * 1e3
        best_index = int(np.argmin(times[2:]))
        best = times[2 + best_index] * 1e3
        verdict = goal_met(ours, theirs, best)
        met += verdict is not None
        ratios.append(ours / theirs)
        print(f"{name:<15}{ours:>8.2f}{theirs:>8.2f}{best:>8.2f}{ours / theirs:>8.2f}"
              f"{ours / best:>7.2f}  {expressions[best_index][0]:<26}{verdict or 'NO'}")
    print(f"geometric mean /torch {geometric_mean(ratios):.2f}, worst {max(ratios):.2f}; "
          f"{met}/{len(wanted)} within 1.5x of torch or 10% of the best expression")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
