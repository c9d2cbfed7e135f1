"""Per-call latency of the common Python call shapes, pyaten beside PyTorch (one thread, 4x4
float32): keyword and positional forms of the generated bindings, methods, operators, views
and basic indexing. The third column is the share of the call the binding itself takes in
pyaten (the call minus the operator entry's call with the arguments already converted).

Run: .venv/bin/python benchmarks/bench_bindings.py [--quick]

See `pyaten/codegen/gen_bindings.py` (Note: fast-path safety), the view plans in
`pyaten/native/kernels/shape.py` and basic indexing in `pyaten/native/kernels/index.py`.
"""

from __future__ import annotations

import argparse
import sys

from _common import geometric_mean, per_call_cpu_us


def _cases(lib, functional):
    a, b = lib.ones(4, 4), lib.ones(4, 4)
    x, w, bias = lib.ones(16), lib.ones(3, 4), lib.ones(3)
    tensors = [a, b]
    return {
        "sum(a, dim=1)": lambda: lib.sum(a, dim=1),
        "a.sum(1)": lambda: a.sum(1),
        "a.sum(1, keepdim=True)": lambda: a.sum(1, keepdim=True),
        "softmax(a, dim=1)": lambda: lib.softmax(a, dim=1),
        "a.softmax(-1)": lambda: a.softmax(-1),
        "cat([a, b], dim=1)": lambda: lib.cat(tensors, dim=1),
        "F.linear(a, w, bias)": lambda: functional.linear(a, w, bias),
        "a.clamp(min=0.0)": lambda: a.clamp(min=0.0),
        "a > 0": lambda: a > 0,
        "a ** 2": lambda: a**2,
        "zeros(4, 4, dtype=f64)": lambda: lib.zeros(4, 4, dtype=lib.float64),
        "x.view(4, 4)": lambda: x.view(4, 4),
        "a.reshape(16)": lambda: a.reshape(16),
        "a.flatten()": lambda: a.flatten(),
        "a.transpose(0, 1)": lambda: a.transpose(0, 1),
        "a.permute(1, 0)": lambda: a.permute(1, 0),
        "a[0]": lambda: a[0],
        "a[1:3]": lambda: a[1:3],
        "a[:, 0]": lambda: a[:, 0],
    }


def _entry_calls(pyaten):
    """The same operators called at their entries with converted arguments (no binding)."""
    from pyaten.native.loader import load

    m = load().module
    a, b = pyaten.ones(4, 4), pyaten.ones(4, 4)
    x, w, bias = pyaten.ones(16), pyaten.ones(3, 4), pyaten.ones(3)
    return {
        "sum(a, dim=1)": lambda: m.E_sum_dim_IntList.call(a, (1,), False, None),
        "a.sum(1)": lambda: m.E_sum_dim_IntList.call(a, (1,), False, None),
        "a.sum(1, keepdim=True)": lambda: m.E_sum_dim_IntList.call(a, (1,), True, None),
        "softmax(a, dim=1)": lambda: m.E_softmax_int.call(a, 1, None),
        "a.softmax(-1)": lambda: m.E_softmax_int.call(a, -1, None),
        "cat([a, b], dim=1)": lambda: m.E_cat.call((a, b), 1),
        "F.linear(a, w, bias)": lambda: m.E_linear.call(a, w, bias),
        "a.clamp(min=0.0)": lambda: m.E_clamp.call(a, 0.0, None),
        "a > 0": lambda: m.E_gt_Scalar.call(a, 0),
        "a ** 2": lambda: m.E_pow_Tensor_Scalar.call(a, 2),
        "zeros(4, 4, dtype=f64)": lambda: m.E_zeros.call((4, 4), pyaten.float64, None, None,
                                                          None),
        "x.view(4, 4)": lambda: m.E_view.call(x, (4, 4)),
        "a.reshape(16)": lambda: m.E_reshape.call(a, (16,)),
        "a.flatten()": lambda: m.E_flatten_using_ints.call(a, 0, -1),
        "a.transpose(0, 1)": lambda: m.E_transpose_int.call(a, 0, 1),
        "a.permute(1, 0)": lambda: m.E_permute.call(a, (1, 0)),
        "a[0]": lambda: m.E_select_int.call(a, 0, 0),
        "a[1:3]": lambda: m.E_slice_Tensor.call(a, 0, 1, 3, 1),
        "a[:, 0]": lambda: m.E_select_int.call(a, 1, 0),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    number, repeat = (1000, 5) if args.quick else (5000, 7)

    import torch
    import torch.nn.functional as torch_functional

    torch.set_num_threads(1)
    import pyaten
    import pyaten.nn.functional as pyaten_functional

    ours = _cases(pyaten, pyaten_functional)
    theirs = _cases(torch, torch_functional)
    entries = _entry_calls(pyaten)
    print(f"{'call (4x4 float32)':<26}{'pyaten us':>10}{'binding':>9}{'torch us':>10}"
          f"{'ratio':>8}")
    ratios = []
    for name, fn in ours.items():
        p = per_call_cpu_us(fn, number, repeat)
        e = per_call_cpu_us(entries[name], number, repeat)
        t = per_call_cpu_us(theirs[name], number, repeat)
        ratios.append(p / t)
        print(f"{name:<26}{p:>10.2f}{max(p - e, 0.0):>9.2f}{t:>10.2f}{p / t:>8.2f}")
    print(f"geometric mean pyaten/torch: {geometric_mean(ratios):.2f}   "
          f"worst: {max(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
