"""pyaten.distributions beside torch.distributions (one thread): the three rejection samplers
(`_standard_gamma`, `_sample_dirichlet`, `binomial`, compiled with Numba when installed,
pyaten/native/kernels/_gamma_numba.py; `PYATEN_NO_NUMBA=1` times the pure-Python loops), and
whole-distribution calls (`sample`, `log_prob`, `rsample` + backward). Both libraries draw the
same numbers. Timings are the best of interleaved passes, so load hits both alike.

Run: `python benchmarks/bench_distributions.py`
"""

from __future__ import annotations

import torch
from _common import best_times

import pyaten
import pyaten.distributions


def cases(m, dists):
    alpha = m.full((10_000,), 2.5)
    conc = m.full((1000, 10), 0.7)
    count, prob = m.full((10_000,), 50.0), m.full((10_000,), 0.3)
    normal = dists.Normal(m.zeros(1000), m.ones(1000))
    gamma = dists.Gamma(m.full((1000,), 2.0), m.ones(1000))
    mvn = dists.MultivariateNormal(m.zeros(3), m.eye(3))
    x = m.zeros(1000)
    loc = m.zeros(100, requires_grad=True)

    def rsample_backward():
        dists.Normal(loc, 1.0).rsample((10,)).sum().backward()

    return {
        "_standard_gamma 10k": lambda: m._standard_gamma(alpha),
        "_sample_dirichlet 1000x10": lambda: m._sample_dirichlet(conc),
        "binomial 10k": lambda: m.binomial(count, prob),
        "Normal(1000).sample()": lambda: normal.sample(),
        "Normal(1000).log_prob": lambda: normal.log_prob(x),
        "Gamma(1000).sample()": lambda: gamma.sample(),
        "MVN(3).sample((100,))": lambda: mvn.sample((100,)),
        "Normal rsample+backward": rsample_backward,
    }


def main() -> None:
    torch.set_num_threads(1)
    ours = cases(pyaten, pyaten.distributions)
    theirs = cases(torch, torch.distributions)
    for fn in ours.values():  # compile (or load) the Numba loops before timing
        fn()
    print(f"{'case':28} {'pyaten us':>11} {'torch us':>11} {'ratio':>7}")
    for name in ours:
        (t_ours, t_torch), _ = best_times(7, [ours[name], theirs[name]])
        a, b = t_ours * 1e6, t_torch * 1e6
        print(f"{name:28} {a:11.1f} {b:11.1f} {a / b:7.2f}")


if __name__ == "__main__":
    main()
