"""jacfwd: pyaten's one vmapped jvp over the basis against its per-vector loop and torch.func.

Run `python benchmarks/bench_jacfwd.py`. One thread everywhere, the three timed in turn
(best of N); ratios to torch are what to read on a loaded machine. The per-vector loop is
what pyaten's jacfwd runs when the Jacobian must stay differentiable (an input that
requires grad outside the transforms), which is how it is timed here.
"""

from __future__ import annotations

import numpy as np
import torch
from _common import best_times

import pyaten


def make(lib):
    ones = lib.ones

    def f(x):
        return (x.sin() * x).cumsum(0) @ ones(x.shape[0], 8, dtype=x.dtype)

    return f


def main() -> None:
    torch.set_num_threads(1)
    pyaten.set_num_threads(1)
    print(f"{'n':>4} {'torch ms':>9} {'vmap ms':>9} {'loop ms':>9} {'vmap/torch':>10} "
          f"{'loop/vmap':>9}")
    for n in (4, 16, 64):
        x = np.random.default_rng(0).standard_normal(n)
        tx, px = torch.tensor(x), pyaten.tensor(x)
        px_grad = pyaten.tensor(x).requires_grad_()
        theirs, ours = torch.func.jacfwd(make(torch)), pyaten.func.jacfwd(make(pyaten))
        (t, v, loop), results = best_times(5, [
            lambda f=theirs, a=tx: f(a),
            lambda f=ours, a=px: f(a),
            lambda f=ours, a=px_grad: f(a),
        ])
        assert np.allclose(results[1].numpy(), results[0].numpy())
        assert np.allclose(results[2].detach().numpy(), results[0].numpy())
        print(f"{n:>4} {t * 1e3:>9.3f} {v * 1e3:>9.3f} {loop * 1e3:>9.3f} {v / t:>10.2f} "
              f"{loop / v:>9.1f}")


if __name__ == "__main__":
    main()
