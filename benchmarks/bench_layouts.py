"""The layouts' costs, pyaten beside PyTorch (both on one thread): one section per layout.

Run: .venv/bin/python benchmarks/bench_layouts.py [--quick] [section ...]

Sections (each a `bench_<name>(quick)` function; add yours to SECTIONS):
- nested: scaled_dot_product_attention over 32 sequences of lengths 10-200 on nested
  tensors (jagged, strided) against the padded dense computation, in pyaten and PyTorch.
- sparse: `sparse.mm` of a 10k x 10k COO matrix at 0.1% density by a dense 10k x 64 (and the
  same with CSR), in pyaten and PyTorch. Goal: pyaten/torch <= 1.5.
- quantized: a dynamically quantized Linear 1024 x 1024 (batch 64), pyaten beside PyTorch.
Times are CPU time of this process (the machine is shared), best of several runs.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as TF  # noqa: E402
from _common import per_call_cpu_us  # noqa: E402

torch.set_num_threads(1)


def bench_nested(quick: bool) -> None:
    """Nested attention: 32 sequences of lengths 10-200 (4 heads of 32), one
    scaled_dot_product_attention on nested q/k/v (jagged and strided layouts) against the
    padded dense computation (B, H, 200, D) with a padding mask, in pyaten and in PyTorch."""
    import warnings

    import pyaten
    import pyaten.nn.functional as PF

    warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")
    rng = np.random.default_rng(0)
    lengths = rng.integers(10, 201, size=32)
    heads, dim = 4, 32
    arrays = [rng.standard_normal((int(n), heads, dim)).astype(np.float32) for n in lengths]
    longest = int(lengths.max())
    padded = np.zeros((32, longest, heads, dim), np.float32)
    mask = np.zeros((32, 1, 1, longest), bool)
    for i, a in enumerate(arrays):
        padded[i, : len(a)] = a
        mask[i, ..., : len(a)] = True
    number, repeat = (1, 2) if quick else (3, 5)

    def jagged(lib, nested):
        return nested.nested_tensor([lib.tensor(a) for a in arrays], layout=nested_layout(lib))

    def nested_layout(lib):
        return lib.jagged

    results = {}
    for name, lib, F, nested in (("pyaten", pyaten, PF, pyaten.nested),
                                 ("torch", torch, TF, torch.nested)):
        q = jagged(lib, nested).transpose(1, 2)
        strided = nested.nested_tensor([lib.tensor(a.transpose(1, 0, 2).copy())
                                        for a in arrays])
        dense = lib.tensor(padded).transpose(1, 2)
        dense_mask = lib.tensor(mask)
        sdpa = functools.partial
        results[name] = (
            per_call_cpu_us(sdpa(F.scaled_dot_product_attention, q, q, q), number, repeat),
            per_call_cpu_us(sdpa(F.scaled_dot_product_attention, strided, strided, strided),
                            number, repeat),
            per_call_cpu_us(sdpa(F.scaled_dot_product_attention, dense, dense, dense,
                                 attn_mask=dense_mask), number, repeat),
        )
    print(f"nested attention, 32 sequences of lengths 10-{longest}, {heads} heads x {dim}")
    print(f"{'':>10} {'jagged':>12} {'strided':>12} {'padded dense':>14}")
    for name, (j, s, d) in results.items():
        print(f"{name:>10} {j / 1000:>10.2f}ms {s / 1000:>10.2f}ms {d / 1000:>12.2f}ms")
    ours, theirs = results["pyaten"], results["torch"]
    print(f"{'ratio':>10} {ours[0] / theirs[0]:>11.2f}x {ours[1] / theirs[1]:>11.2f}x "
          f"{ours[2] / theirs[2]:>13.2f}x")


def bench_sparse(quick: bool) -> None:
    """`sparse.mm` of a 10k x 10k matrix at 0.1% density (100k entries, COO and CSR) by a
    dense 10k x 64, float32, in pyaten and in PyTorch."""
    import warnings

    import pyaten

    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
    warnings.filterwarnings("ignore", message="Sparse invariant checks")
    rng = np.random.default_rng(0)
    n, nnz = 10_000, 100_000
    indices = np.stack((rng.integers(0, n, nnz), rng.integers(0, n, nnz)))
    values = rng.standard_normal(nnz).astype(np.float32)
    dense = rng.standard_normal((n, 64)).astype(np.float32)
    number, repeat = (2, 2) if quick else (5, 5)
    results = {}
    for name, lib in (("pyaten", pyaten), ("torch", torch)):
        coo = lib.sparse_coo_tensor(lib.from_numpy(indices), lib.from_numpy(values),
                                    (n, n)).coalesce()
        csr = coo.to_sparse_csr()
        d = lib.from_numpy(dense)
        mm = lib.sparse.mm
        results[name] = tuple(
            per_call_cpu_us(lambda m=m, mm=mm, d=d: mm(m, d), number, repeat) for m in (coo, csr)
        )
    print(f"sparse.mm, {n}x{n} at {nnz / n / n:.1%} density by dense {n}x64 (float32)")
    print(f"{'':>10} {'COO':>12} {'CSR':>12}")
    for name, (coo_t, csr_t) in results.items():
        print(f"{name:>10} {coo_t / 1000:>10.2f}ms {csr_t / 1000:>10.2f}ms")
    ours, theirs = results["pyaten"], results["torch"]
    print(f"{'ratio':>10} {ours[0] / theirs[0]:>11.2f}x {ours[1] / theirs[1]:>11.2f}x"
          "  (goal <= 1.5x)")


def bench_quantized(quick: bool) -> None:
    """A dynamically quantized Linear 1024 x 1024 (qint8 weight, activations quantized per
    call with a reduced range, as `quantize_dynamic` makes it) on a batch of 64, in pyaten and
    in PyTorch (fbgemm), beside each library's float Linear."""
    import warnings

    import torch.ao.quantization as tq

    import pyaten
    import pyaten.ao.quantization as pq

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*quantized tensor creation functions")
    torch.manual_seed(0)
    tmodel = torch.nn.Sequential(torch.nn.Linear(1024, 1024)).eval()
    pmodel = pyaten.nn.Sequential(pyaten.nn.Linear(1024, 1024)).eval()
    pmodel.load_state_dict({k: pyaten.from_numpy(v.detach().numpy().copy())
                            for k, v in tmodel.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((64, 1024)).astype(np.float32)
    number, repeat = (3, 2) if quick else (10, 5)
    results = {}
    for name, lib, model, quantize in (("pyaten", pyaten, pmodel, pq.quantize_dynamic),
                                       ("torch", torch, tmodel, tq.quantize_dynamic)):
        qmodel = quantize(model)
        inp = lib.from_numpy(x.copy())
        with lib.no_grad():
            results[name] = (per_call_cpu_us(lambda m=qmodel, i=inp: m(i), number, repeat),
                             per_call_cpu_us(lambda m=model, i=inp: m(i), number, repeat))
    print("dynamically quantized Linear 1024x1024, batch 64 (float32 in and out)")
    print(f"{'':>10} {'quantized':>12} {'float':>12}")
    for name, (q, f) in results.items():
        print(f"{name:>10} {q / 1000:>10.2f}ms {f / 1000:>10.2f}ms")
    ours, theirs = results["pyaten"], results["torch"]
    print(f"{'ratio':>10} {ours[0] / theirs[0]:>11.2f}x {ours[1] / theirs[1]:>11.2f}x")


SECTIONS = {"nested": bench_nested, "sparse": bench_sparse, "quantized": bench_quantized}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("sections", nargs="*", choices=[[], *SECTIONS], default=[])
    args = parser.parse_args()
    for name in args.sections or SECTIONS:
        SECTIONS[name](args.quick)


if __name__ == "__main__":
    main()
