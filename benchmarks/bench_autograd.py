"""Autograd cost, pyaten beside PyTorch (both on one thread).

Run: .venv/bin/python benchmarks/bench_autograd.py [--quick]

1. `add` of 4x4 float32 tensors: neither requires grad (the autograd kernel only passes the
   call on), and one requires grad (a node is recorded); then a small graph run backward.
   Issue 23's goal: the recorded call within 1.5x of PyTorch's. The "recording cost" line is
   the difference of the first two rows: what autograd adds to a call.
2. The small-operator set of bench_ops.py with inputs requiring grad (a node recorded per
   call), timed three ways in alternation: pyaten as loaded, pyaten with the Python
   reference of the recording path swapped back in (Note: the accelerated recording path,
   pyaten/autograd/graph.py; the same as the first column without the accelerator), PyTorch.
3. Forward + backward of an MLP (batch 64, 784-256-10: mm, add, relu, log_softmax, a
   weighted sum) and of a chain of 100 small pointwise ops. (The whole training step, with
   the optimizer, is benchmarks/bench_training.py; the optimizer alone bench_optim.py.)
"""

from __future__ import annotations

import argparse
import os
import sys

# One thread for NumPy's BLAS too, as torch.set_num_threads(1) gives torch (see main).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _common import geometric_mean, per_call_cpu_us  # noqa: E402


def _add_cases(lib):
    a = lib.ones(4, 4)
    b = lib.ones(4, 4)
    w = lib.ones(4, 4, requires_grad=True)
    return {
        "add, no grad": lambda: lib.add(a, b),
        "add, records a node": lambda: lib.add(w, b),
        "w * b + a, sum, backward": lambda: (w * b + a).sum().backward(),
    }


class _ReferenceRecording:
    """Swap the Python reference of the recording path back in (while the block runs):
    the `__init__` of Node, AccumulateGrad, SavedTensor and TensorGeometry, and every module
    global bound to the compiled `call_below_autograd`/`grad_accumulator`/`make_node`/
    `run_recorded`/`run_recorded_view` (the generated autograd kernels import them)."""

    def __enter__(self):
        from pyaten.autograd import graph, runtime
        from pyaten.dispatch import tls

        inits = {graph.Node: graph.node_init_reference,
                 graph.AccumulateGrad: graph.accumulate_grad_init_reference,
                 graph.SavedTensor: graph.saved_tensor_init_reference,
                 graph.TensorGeometry: graph.tensor_geometry_init_reference}
        self.saved = [(cls, "__init__", cls.__dict__["__init__"]) for cls in inits]
        swaps = {id(tls.call_below_autograd): tls.call_below_autograd_reference,
                 id(graph.grad_accumulator): graph.grad_accumulator_reference,
                 id(runtime.make_node): runtime.make_node_reference,
                 id(runtime.run_recorded): runtime.run_recorded_reference,
                 id(runtime.run_recorded_view): runtime.run_recorded_view_reference}
        for module in list(sys.modules.values()):
            names = getattr(module, "__dict__", {})
            if module is None or not names.get("__name__", "").startswith("pyaten"):
                continue
            for name, value in list(names.items()):
                if id(value) in swaps and value is not swaps[id(value)]:
                    self.saved.append((module, name, value))
        for cls, init in inits.items():
            cls.__init__ = init
        for owner, name, value in self.saved[len(inits):]:
            setattr(owner, name, swaps[id(value)])
        return self

    def __exit__(self, *exc):
        for owner, name, value in self.saved:
            setattr(owner, name, value)


def _graph_table(number: int, repeat: int) -> None:
    import torch
    from bench_ops import _cases

    import pyaten

    ours = _cases(pyaten, lambda s: pyaten.ones(*s), True)
    theirs = _cases(torch, lambda s: torch.ones(*s), True)
    print("\n4x4 float32, inputs requiring grad (goal <= 1.5x); 'py rec': the Python "
          "recording path")
    print(f"{'op':<20}{'pyaten us':>11}{'py rec us':>11}{'torch us':>10}{'ratio':>7}"
          f"{'py rec':>8}")
    ratios, plain_ratios = [], []
    for name, fn in ours.items():
        if fn is None:
            continue
        best = [float("inf")] * 3
        for _ in range(repeat):
            best[0] = min(best[0], per_call_cpu_us(fn, number, 1))
            with _ReferenceRecording():
                best[1] = min(best[1], per_call_cpu_us(fn, number, 1))
            best[2] = min(best[2], per_call_cpu_us(theirs[name], number, 1))
        ratios.append(best[0] / best[2])
        plain_ratios.append(best[1] / best[2])
        print(f"{name:<20}{best[0]:>11.2f}{best[1]:>11.2f}{best[2]:>10.2f}"
              f"{ratios[-1]:>7.2f}{plain_ratios[-1]:>8.2f}")
    print(f"geometric mean pyaten/torch: {geometric_mean(ratios):.2f} (Python recording path "
          f"{geometric_mean(plain_ratios):.2f})   worst: {max(ratios):.2f}\n")


def _mlp(lib, rng):
    x = lib.tensor(rng.standard_normal((64, 784)).astype(np.float32))
    target = lib.tensor(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 64)])
    w1 = lib.tensor((rng.standard_normal((784, 256)) * 0.03).astype(np.float32))
    b1 = lib.tensor(np.zeros(256, dtype=np.float32))
    w2 = lib.tensor((rng.standard_normal((256, 10)) * 0.06).astype(np.float32))
    b2 = lib.tensor(np.zeros(10, dtype=np.float32))
    params = [w1, b1, w2, b2]
    for p in params:
        p.requires_grad_(True)

    def step():
        for p in params:
            p.grad = None
        h = (x.mm(w1) + b1).relu()
        logits = h.mm(w2) + b2
        loss = -(logits.log_softmax(1) * target).sum() / 64
        loss.backward()
        return loss

    return step


def _chain(lib, rng):
    x = lib.tensor(rng.standard_normal(1000).astype(np.float32), requires_grad=True)

    def run():
        x.grad = None
        y = x
        for i in range(25):
            y = (y * 0.9 + 0.1).sin().exp() if i % 2 else (y * 1.1 - 0.1).tanh().neg()
        y.sum().backward()
        return y

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    number, repeat = (1000, 3) if args.quick else (5000, 5)

    import torch

    torch.set_num_threads(1)
    import pyaten

    # NumPy's BLAS pool too (mm, linear), before anything runs: set after the pools were
    # used, it leaves torch's softmax spending ~100 us of CPU per call (seen with torch 2.13)
    pyaten.set_num_threads(1)
    print(f"{'case':<34}{'pyaten us':>12}{'torch us':>12}{'ratio':>8}")
    ours, theirs = _add_cases(pyaten), _add_cases(torch)
    times = {}
    for name in ours:
        p = per_call_cpu_us(ours[name], number, repeat)
        t = per_call_cpu_us(theirs[name], number, repeat)
        times[name] = (p, t)
        print(f"{name:<34}{p:>12.2f}{t:>12.2f}{p / t:>8.2f}")
    (p0, t0), (p1, t1) = times["add, no grad"], times["add, records a node"]
    print(f"{'recording cost (row 2 - row 1)':<34}{p1 - p0:>12.2f}{t1 - t0:>12.2f}")
    for name, build, n in (("MLP 784-256-10 fwd+bwd (b=64)", _mlp, 20),
                           ("chain of 100 pointwise fwd+bwd", _chain, 20)):
        p = per_call_cpu_us(build(pyaten, np.random.default_rng(0)), n, repeat)
        t = per_call_cpu_us(build(torch, np.random.default_rng(0)), n, repeat)
        print(f"{name:<34}{p:>12.1f}{t:>12.1f}{p / t:>8.2f}")
    _graph_table(number // 2, repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
