"""pyaten.func's cost, beside PyTorch (issue 30's speed report), on one thread:

1. vmap of an MLP forward (32 -> 64 -> 10, and a wider 256 -> 512 -> 10) over 64 samples,
   against the same forward written batched by hand (the goal: vmap within 1.3x of the
   hand-batched code);
2. per-sample gradients of the small MLP (vmap(grad(loss))) over 64 samples, against
   torch.func (the goal: within 2x of torch.func's time);
3. the per-sample fallback loop: an operator without a batching rule, per sample.

Each figure is CPU time per call, the best of several passes, pyaten's and torch's (and the
hand-batched and vmapped) passes interleaved. Run: .venv/bin/python benchmarks/bench_func.py
[--quick]
"""

from __future__ import annotations

import os

# One BLAS thread, as torch below: the times are CPU times, which would count idle spinning.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import pyaten  # noqa: E402
import pyaten.func as pf  # noqa: E402


def _params(lib, rng):
    return {
        "w1": lib.tensor(rng.standard_normal((64, 32)).astype(np.float32)),
        "b1": lib.tensor(rng.standard_normal(64).astype(np.float32)),
        "w2": lib.tensor(rng.standard_normal((10, 64)).astype(np.float32)),
        "b2": lib.tensor(rng.standard_normal(10).astype(np.float32)),
    }


def _mlp(lib):
    F = lib.nn.functional

    def forward(params, x):
        return F.linear(F.relu(F.linear(x, params["w1"], params["b1"])), params["w2"],
                        params["b2"])

    def loss(params, x, y):
        return F.cross_entropy(forward(params, x.unsqueeze(0)), y.unsqueeze(0))

    return forward, loss


def _interleaved_cpu_us(fns: list, number: int, repeat: int) -> list[float]:
    """CPU microseconds per call of each function: the best of `repeat` passes of `number`
    calls, the passes interleaved so that the machine's load hits every function alike."""
    for fn in fns:
        fn()  # warm-up: dispatch tables, plans, parsed signatures
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.process_time()
            for _ in range(number):
                fn()
            best[i] = min(best[i], (time.process_time() - start) / number * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    number, repeat = (3, 2) if parser.parse_args().quick else (20, 7)
    import torch
    import torch.func as tf

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((64, 32)).astype(np.float32)
    y_np = rng.integers(0, 10, 64)
    fns: dict[str, list] = {"hand": [], "mapped": [], "grads": []}
    for lib, func in ((pyaten, pf), (torch, tf)):
        params = _params(lib, np.random.default_rng(1))
        x, y = lib.tensor(x_np), lib.tensor(y_np)
        forward, loss = _mlp(lib)
        vmapped = func.vmap(forward, in_dims=(None, 0))
        per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))
        fns["hand"].append(lambda f=forward, p=params, x=x: f(p, x))
        fns["mapped"].append(lambda v=vmapped, p=params, x=x: v(p, x))
        fns["grads"].append(lambda g=per_sample, p=params, x=x, y=y: g(p, x, y))
    from pyaten.func._key import binding_route_off

    def dispatched(v=fns["mapped"][0]):  # the bindings call the dispatcher for BatchedTensors
        with binding_route_off():
            return v()

    hand, t_hand, mapped, t_mapped, no_route = _interleaved_cpu_us(
        fns["hand"] + fns["mapped"] + [dispatched], number, repeat)
    grads, t_grads = _interleaved_cpu_us(fns["grads"], max(1, number // 4), repeat)
    print("case                                   pyaten us   torch us   pyaten/torch")
    print(f"MLP forward, batched by hand (64)   {hand:12.0f} {t_hand:10.0f} {hand / t_hand:10.1f}x")
    print(f"MLP forward, vmap over 64           {mapped:12.0f} {t_mapped:10.0f} "
          f"{mapped / t_mapped:10.1f}x")
    print(f"  vmap / hand-batched: pyaten {mapped / hand:.2f}x (goal <= 1.3x), "
          f"torch {t_mapped / t_hand:.2f}x")
    print(f"  the binding route declining (Note: the binding route; the dispatcher's path): "
          f"{no_route:.0f} us, {no_route / hand:.2f}x the hand-batched code")
    print(f"per-sample grads, vmap(grad) (64)   {grads:12.0f} {t_grads:10.0f} "
          f"{grads / t_grads:10.1f}x (goal <= 2x)")

    # a wider MLP (256 -> 512 -> 10): the arithmetic outweighs the wrapper's dispatch
    wide = {"w1": rng.standard_normal((512, 256)), "b1": rng.standard_normal(512),
            "w2": rng.standard_normal((10, 512)), "b2": rng.standard_normal(10)}
    xw = rng.standard_normal((64, 256)).astype(np.float32)
    wide_fns = []
    for lib, func in ((pyaten, pf), (torch, tf)):
        params = {k: lib.tensor(v.astype(np.float32)) for k, v in wide.items()}
        x = lib.tensor(xw)
        forward, _ = _mlp(lib)
        vmapped = func.vmap(forward, in_dims=(None, 0))
        wide_fns += [lambda f=forward, p=params, x=x: f(p, x),
                     lambda v=vmapped, p=params, x=x: v(p, x)]
    hand, mapped, t_hand, t_mapped = _interleaved_cpu_us(wide_fns, number, repeat)
    print(f"wide MLP forward, by hand (64)      {hand:12.0f} {t_hand:10.0f} {hand / t_hand:10.1f}x")
    print(f"wide MLP forward, vmap over 64      {mapped:12.0f} {t_mapped:10.0f} "
          f"{mapped / t_mapped:10.1f}x")
    print(f"  vmap / hand-batched: pyaten {mapped / hand:.2f}x (goal <= 1.3x), "
          f"torch {t_mapped / t_hand:.2f}x")

    # the fallback loop: diag decomposes into diag_embed, which has no batching rule in pyaten
    warnings.simplefilter("ignore")
    for batch in (8, 64):
        v = pyaten.tensor(rng.standard_normal((batch, 16)).astype(np.float32))
        tv = torch.tensor(v.numpy())
        loop, one, t_loop = _interleaved_cpu_us(
            [lambda v=v: pf.vmap(pyaten.diag)(v), lambda v=v: pyaten.diag(v[0]),
             lambda tv=tv: tf.vmap(torch.diag)(tv)], number, repeat)
        print(f"fallback loop, vmap(diag) over {batch:3d}: pyaten {loop / batch:8.1f} us per "
              f"sample (diag alone {one:.1f} us), torch {t_loop / batch:6.1f} us per sample")
    coverage = pf.batching_coverage()
    print(f"batching coverage: {len(coverage['rule'])} aten overloads with a rule, "
          f"{len(coverage['decomposed'])} decomposed before vmap sees them, "
          f"{len(coverage['fallback'])} through the fallback loop")


if __name__ == "__main__":
    main()
