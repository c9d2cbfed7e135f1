"""Random sampling and factories, pyaten beside PyTorch (one thread): the in-place samplers on
1M float32 elements, randperm/randint/multinomial, linspace/eye, and the call overhead of a
small sample (4x4). Both draw the same numbers (PyTorch's mt19937 stream and transforms,
pyaten/native/kernels/random_draws.py); the 1M float32 uniform and normal fills run the
compiled loops when Numba is installed (pyaten/native/kernels/random_compiled.py), the NumPy
path otherwise (`PYATEN_NO_NUMBA=1`). The goal: 1M float32 normals and uniforms within 1.5x of
PyTorch. Timings are the best of interleaved passes, so load hits both libraries alike.

Run: `python benchmarks/bench_random.py`
"""

from __future__ import annotations

import torch
from _common import best_times, per_call_cpu_us

import pyaten

N = 1_000_000


def cases(m):
    big = m.empty(N)
    small = m.empty(4, 4)
    probs = m.ones(1000)
    p_half = m.full((N,), 0.5)
    return {
        "uniform_ 1M": lambda: big.uniform_(),
        "normal_ 1M": lambda: big.normal_(),
        "rand 1M": lambda: m.rand(N),
        "randn 1M": lambda: m.randn(N),
        "bernoulli_(0.5) 1M": lambda: big.bernoulli_(0.5),
        "bernoulli(p) 1M": lambda: m.bernoulli(p_half),
        "exponential_ 1M": lambda: big.exponential_(),
        "random_(0, 10) 1M": lambda: big.random_(0, 10),
        "randint 1M": lambda: m.randint(0, 100, (N,)),
        "randperm 1M": lambda: m.randperm(N),
        "rand_like 1M": lambda: m.rand_like(big),
        "multinomial 1000 of 1000": lambda: m.multinomial(probs, 1000),
        "linspace 1M": lambda: m.linspace(0, 1, N),
        "eye 1000": lambda: m.eye(1000),
        "uniform_ 4x4": lambda: small.uniform_(),
        "normal_ 4x4": lambda: small.normal_(),
        "randint 4x4": lambda: m.randint(0, 10, (4, 4)),
        "scalar_tensor": lambda: m.scalar_tensor(2.0),
    }


def main() -> None:
    torch.set_num_threads(1)
    ours, theirs = cases(pyaten), cases(torch)
    for fn in ours.values():  # compile (or load) the compiled loops before timing
        fn()
    print(f"{'case':28} {'pyaten us':>11} {'torch us':>11} {'ratio':>7}")
    for name in ours:
        number = 1 if "1M" in name or "1000" in name else 200

        def many(fn, number=number):
            return lambda: [fn() for _ in range(number)]

        (t_ours, t_torch), _ = best_times(7, [many(ours[name]), many(theirs[name])])
        a, b = t_ours / number * 1e6, t_torch / number * 1e6
        print(f"{name:28} {a:11.1f} {b:11.1f} {a / b:7.2f}")
    # the goal, in CPU time (a shared machine's load inflates wall times unevenly)
    print(f"\n{'goal: 1M float32, CPU time':28} {'pyaten us':>11} {'torch us':>11} {'ratio':>7}")
    for name in ("uniform_ 1M", "normal_ 1M", "rand 1M", "randn 1M"):
        a = per_call_cpu_us(ours[name], 1, 25)
        b = per_call_cpu_us(theirs[name], 1, 25)
        verdict = "ok" if a <= 1.5 * b else "over 1.5x"
        print(f"{name:28} {a:11.1f} {b:11.1f} {a / b:7.2f}  {verdict}")


if __name__ == "__main__":
    main()
