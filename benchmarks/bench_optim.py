"""Optimizer steps, pyaten beside PyTorch (both on one thread).

Run: .venv/bin/python benchmarks/bench_optim.py [--quick]

`step()` of SGD (momentum 0.9) and Adam over the four parameters of a 784-256-10 MLP
(w1 784x256, b1 256, w2 256x10, b2 10; float32), with fixed gradients in `.grad`. PyTorch
runs its single-tensor path (`foreach=False`: what pyaten computes, and what PyTorch picks by
default for CPU tensors).

A second table times the operator calls one Adam update makes for one small parameter (256
float32 values), in the order `Adam._update` makes them: for the small parameters a step is
the sum of these per-call costs, so this is where the optimizer's remaining time goes.
"""

from __future__ import annotations

import argparse
import os
import sys

# One thread for NumPy's BLAS too, as torch.set_num_threads(1) gives torch (see main).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _common import per_call_cpu_us  # noqa: E402

SHAPES = ((784, 256), (256,), (256, 10), (10,))


def _mlp_params(lib):
    rng = np.random.default_rng(0)
    params = []
    for shape in SHAPES:
        p = lib.tensor(rng.standard_normal(shape).astype(np.float32) * 0.05, requires_grad=True)
        p.grad = lib.tensor(rng.standard_normal(shape).astype(np.float32) * 0.01)
        params.append(p)
    return params


def _cases(lib, **torch_only):
    sgd = lib.optim.SGD(_mlp_params(lib), lr=0.01, momentum=0.9, **torch_only)
    adam = lib.optim.Adam(_mlp_params(lib), lr=1e-3, **torch_only)
    adamw_ams = lib.optim.AdamW(_mlp_params(lib), lr=1e-3, amsgrad=True, **torch_only)
    return {
        "SGD(momentum=0.9).step": sgd.step,
        "Adam.step": adam.step,
        "AdamW(amsgrad=True).step": adamw_ams.step,
    }


# One Adam update of a parameter, call by call (Adam._update's order; amsgrad off).
ADAM_CALLS = (
    "step.add_(1)",
    "step.item()",
    "exp_avg.lerp_(grad, 0.1)",
    "exp_avg_sq.mul_(0.999)",
    "exp_avg_sq.addcmul_(grad, grad, value=0.001)",
    "exp_avg_sq.sqrt()",
    "denom.div_(0.99)",
    "denom.add_(1e-8)",
    "param.addcdiv_(exp_avg, denom, value=-0.001)",
)


def _adam_call_namespace(lib) -> dict:
    rng = np.random.default_rng(1)
    names = ("param", "grad", "exp_avg", "exp_avg_sq", "denom")
    space = {n: lib.tensor(np.abs(rng.standard_normal(256)).astype(np.float32)) for n in names}
    space["step"] = lib.tensor(3.0)
    return space


def _call_us(statement: str, space: dict, number: int, repeat: int) -> float:
    code = compile(statement, "<adam call>", "eval")
    return per_call_cpu_us(lambda: eval(code, space), number, repeat)  # noqa: S307


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    number, repeat = (20, 3) if args.quick else (100, 5)

    import torch

    torch.set_num_threads(1)
    import pyaten

    print("parameters of a 784-256-10 MLP (4 tensors, 203,530 float32 values)")
    print(f"{'case':<28}{'pyaten us':>12}{'torch us':>12}{'ratio':>8}")
    ours, theirs = _cases(pyaten), _cases(torch, foreach=False)
    for name in ours:
        p = per_call_cpu_us(ours[name], number, repeat)
        t = per_call_cpu_us(theirs[name], number, repeat)
        print(f"{name:<28}{p:>12.1f}{t:>12.1f}{p / t:>8.2f}")

    print("\nAdam's calls for one 256-value parameter")
    print(f"{'call':<46}{'pyaten us':>10}{'torch us':>10}{'ratio':>8}")
    spaces = _adam_call_namespace(pyaten), _adam_call_namespace(torch)
    total = [0.0, 0.0]
    for statement in ADAM_CALLS:
        p, t = (_call_us(statement, space, number * 20, repeat) for space in spaces)
        total = [total[0] + p, total[1] + t]
        print(f"{statement:<46}{p:>10.2f}{t:>10.2f}{p / t:>8.2f}")
    print(f"{'sum':<46}{total[0]:>10.2f}{total[1]:>10.2f}{total[0] / total[1]:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
