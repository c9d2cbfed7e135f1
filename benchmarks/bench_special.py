"""Large-tensor time of the special functions, complex parts and float predicates: pyaten
beside PyTorch (one thread) and beside the best single NumPy/SciPy expression for each.

Run: .venv/bin/python benchmarks/bench_special.py [--quick] [--only NAME,...]

Each operator runs on 4M float32 elements (complex64 for the complex ones). The goal (see
docs/performance.md): within 1.5x of PyTorch, or within 10% of the NumPy/SciPy expression;
the last column says which holds ("torch", "numpy") or "SLOW".
"""

from __future__ import annotations

import argparse
import math
from functools import partial

import numpy as np
import scipy.special as sc
import torch
from _common import against_torch_and_numpy

import pyaten
import pyaten.special

N = 4 * 1024 * 1024


def _inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    normal = (rng.standard_normal(N) * 3).astype(np.float32)
    normal[::97] = np.nan
    normal[::101] = np.inf
    return {
        "normal": normal,
        "positive": rng.uniform(0.1, 20.0, N).astype(np.float32),
        "unit": rng.uniform(-0.99, 0.99, N).astype(np.float32),
        "prob": rng.uniform(0.01, 0.99, N).astype(np.float32),
        "gamma": rng.uniform(2.0, 20.0, N).astype(np.float32),
        "complex": (rng.standard_normal(N) + 1j * rng.standard_normal(N)).astype(np.complex64),
    }


def _mvlgamma_numpy(x: np.ndarray, p: int) -> np.ndarray:
    offsets = -np.arange(p, dtype=x.dtype) / 2
    return sc.gammaln(x[:, None] + offsets).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


def _angle_real(x: np.ndarray) -> np.ndarray:
    # (np.where with scalar branches is ~10x slower than this)
    result = np.multiply(x < 0, np.float32(math.pi))
    np.copyto(result, x, where=np.isnan(x))
    return result


# (name, domain, pyaten call, torch call, NumPy/SciPy expression); each gets (lib, x) or x.
CASES = [
    ("erf", "normal", lambda m, x: m.erf(x), sc.erf),
    ("erfc", "normal", lambda m, x: m.erfc(x), sc.erfc),
    ("erfinv", "unit", lambda m, x: m.erfinv(x), sc.erfinv),
    ("lgamma", "positive", lambda m, x: m.lgamma(x), sc.gammaln),
    ("digamma", "positive", lambda m, x: m.digamma(x), sc.psi),
    ("polygamma(1)", "positive", lambda m, x: m.polygamma(1, x), lambda x: sc.polygamma(1, x)),
    ("polygamma(3)", "positive", lambda m, x: m.polygamma(3, x), lambda x: sc.polygamma(3, x)),
    ("mvlgamma(p=3)", "gamma", lambda m, x: m.mvlgamma(x, 3), lambda x: _mvlgamma_numpy(x, 3)),
    ("i0", "normal", lambda m, x: m.i0(x), sc.i0),
    ("sinc", "normal", lambda m, x: m.sinc(x), np.sinc),
    ("nan_to_num", "normal", lambda m, x: m.nan_to_num(x), np.nan_to_num),
    ("isnan", "normal", lambda m, x: m.isnan(x), np.isnan),
    ("isinf", "normal", lambda m, x: m.isinf(x), np.isinf),
    ("isfinite", "normal", lambda m, x: m.isfinite(x), np.isfinite),
    ("isposinf", "normal", lambda m, x: m.isposinf(x), np.isposinf),
    ("isneginf", "normal", lambda m, x: m.isneginf(x), np.isneginf),
    ("isreal (complex)", "complex", lambda m, x: m.isreal(x), np.isreal),
    ("angle", "normal", lambda m, x: m.angle(x), _angle_real),
    ("angle (complex)", "complex", lambda m, x: m.angle(x), np.angle),
    ("conj_physical (complex)", "complex", lambda m, x: m.conj_physical(x), np.conjugate),
    ("conj (complex)", "complex", lambda m, x: m.conj(x).resolve_conj(), np.conjugate),
    ("real (complex)", "complex", lambda m, x: m.real(x), np.real),
    ("special.entr", "positive", lambda m, x: m.special.entr(x), sc.entr),
    ("special.erfcx", "normal", lambda m, x: m.special.erfcx(x), sc.erfcx),
    ("special.i0e", "normal", lambda m, x: m.special.i0e(x), sc.i0e),
    ("special.i1", "normal", lambda m, x: m.special.i1(x), sc.i1),
    ("special.i1e", "normal", lambda m, x: m.special.i1e(x), sc.i1e),
    ("special.log_ndtr", "normal", lambda m, x: m.special.log_ndtr(x), sc.log_ndtr),
    ("special.ndtr", "normal", lambda m, x: m.special.ndtr(x), sc.ndtr),
    ("special.ndtri", "prob", lambda m, x: m.special.ndtri(x), sc.ndtri),
    ("special.xlog1py", "positive", lambda m, x: m.special.xlog1py(x, x),
     lambda x: sc.xlog1py(x, x)),
    ("special.zeta", "gamma", lambda m, x: m.special.zeta(x, x), lambda x: sc.zeta(x, x)),
    ("special.airy_ai", "normal", lambda m, x: m.special.airy_ai(x), lambda x: sc.airy(x)[0]),
    ("special.bessel_j0", "normal", lambda m, x: m.special.bessel_j0(x), sc.j0),
    ("special.bessel_y1", "positive", lambda m, x: m.special.bessel_y1(x), sc.y1),
    ("special.modified_bessel_k0", "positive", lambda m, x: m.special.modified_bessel_k0(x),
     sc.k0),
    ("special.scaled_modified_bessel_k1", "positive",
     lambda m, x: m.special.scaled_modified_bessel_k1(x), sc.k1e),
    ("special.spherical_bessel_j0", "normal", lambda m, x: m.special.spherical_bessel_j0(x),
     lambda x: np.sin(x) / x),
    ("igamma", "positive", lambda m, x: m.igamma(x, x), lambda x: sc.gammainc(x, x)),
    ("special.chebyshev_polynomial_t(n=5)", "unit",
     lambda m, x: m.special.chebyshev_polynomial_t(x, 5), lambda x: sc.eval_chebyt(5, x)),
    ("special.hermite_polynomial_h(n=5)", "normal",
     lambda m, x: m.special.hermite_polynomial_h(x, 5), lambda x: sc.eval_hermite(5, x)),
    ("special.legendre_polynomial_p(n=5)", "unit",
     lambda m, x: m.special.legendre_polynomial_p(x, 5), lambda x: sc.eval_legendre(5, x)),
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
    print(f"{N} elements, one thread; times in ms (best of {repeat})")
    header = (f"{'op':36} {'pyaten':>8} {'torch':>8} {'numpy':>8} {'/torch':>7} {'/numpy':>7}"
              "  goal")
    print(header)
    print("-" * len(header))
    slow = 0
    with np.errstate(all="ignore"):
        for name, domain, call, expression in CASES:
            if only and name not in only:
                continue
            x_ours, x_torch, x_np = ours_inputs[domain], torch_inputs[domain], arrays[domain]
            ours, theirs, numpy_time, goal = against_torch_and_numpy(
                repeat,
                partial(call, pyaten, x_ours),
                partial(call, torch, x_torch),
                [partial(expression, x_np)],
                pause_gc=True,
            )
            slow += goal is None
            print(f"{name:36} {ours:8.2f} {theirs:8.2f} {numpy_time:8.2f} {ours / theirs:7.2f} "
                  f"{ours / numpy_time:7.2f}  {goal or 'SLOW'}")
    print(f"\n{slow} operator(s) miss both goals")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
