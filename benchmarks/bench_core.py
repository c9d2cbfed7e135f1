"""Per-call cost of the tensor core next to PyTorch's, in one run.

Rows: creating a tensor object on existing storage (`Tensor._make` vs `torch.Tensor` alias
through `as_strided`), allocating (`empty_tensor` vs `torch.empty`), an elementwise add of two
small tensors through TensorIterator + NumPy (fast path, broadcasting, mixed dtypes, float16)
against `torch.add` on the same inputs, and `pyaten.tensor` vs `torch.tensor` on lists.
The add rows measure the row-major shortcut of `pyaten/core/broadcast.py` (same shape,
broadcast, scalar) and the general plan (promotion, float16, transposed).
Run: `.venv/bin/python benchmarks/bench_core.py` (CPU time of the process, as bench_ops).
"""

from __future__ import annotations

import time

import numpy as np
import torch
from _common import per_call_us

import pyaten
from pyaten.core.iterator import TensorIterator
from pyaten.core.views import as_strided_view, empty_tensor


def add(a, b):
    it = TensorIterator.binary_op(None, a, b)
    np.add(*it.np_inputs, out=it.np_outputs[0])
    return it.finish()


def main() -> None:
    cpu = pyaten.device("cpu")
    f32 = pyaten.float32
    p = pyaten.tensor(np.arange(16, dtype=np.float32).reshape(4, 4))
    t = torch.arange(16, dtype=torch.float32).reshape(4, 4)
    storage = p.untyped_storage()
    rows = [
        (
            "tensor object on existing storage",
            lambda: pyaten.Tensor._make(storage, (4, 4), (4, 1), 0, f32, cpu),
            lambda: t.as_strided((4, 4), (4, 1), 0),
        ),
        ("strided view (as_strided_view)", lambda: as_strided_view(p, (4, 4), (1, 4), 0),
         lambda: t.as_strided((4, 4), (1, 4), 0)),
        ("allocate empty (4, 4) float32", lambda: empty_tensor((4, 4), f32, cpu),
         lambda: torch.empty((4, 4))),
    ]
    pa, pb = p, pyaten.tensor(np.ones((4, 4), np.float32))
    ta, tb = t, torch.ones(4, 4)
    row = pyaten.tensor(np.ones(4, np.float32))
    half_a = pyaten.tensor(np.ones((4, 4)), dtype=pyaten.float16)
    ints = pyaten.tensor(np.ones((4, 4), np.int64))
    rows += [
        ("add 4x4 + 4x4 (TensorIterator fast path)", lambda: add(pa, pb),
         lambda: torch.add(ta, tb)),
        ("add 4x4 + (4,) broadcast", lambda: add(pa, row), lambda: torch.add(ta, tb[0])),
        ("add 4x4 + scalar 2.5", lambda: add(pa, 2.5), lambda: torch.add(ta, 2.5)),
        ("add 4x4 float32 + int64 (promotion)", lambda: add(pa, ints),
         lambda: torch.add(ta, tb.long())),
        ("add 4x4 float16 + 4x4 float16", lambda: add(half_a, half_a),
         lambda: torch.add(ta.half(), ta.half())),
        ("add transposed + scalar 2.5", lambda: add(as_strided_view(pa, (4, 4), (1, 4), 0), 2.5),
         lambda: torch.add(ta.t(), 2.5)),
    ]
    big_list = [float(i) * 0.5 for i in range(100_000)]
    small_list = [[1.0, 2.0], [3.0, 4.0]]
    rows += [
        ("tensor() from [[1., 2.], [3., 4.]]", lambda: pyaten.tensor(small_list),
         lambda: torch.tensor(small_list)),
        ("tensor() from a list of 100k floats", lambda: pyaten.tensor(big_list),
         lambda: torch.tensor(big_list), 5),
    ]
    print(f"{'operation':46s} {'pyaten us':>10s} {'torch us':>10s} {'ratio':>7s}")
    for label, ours, theirs, *number in rows:
        n = number[0] if number else 20000
        # CPU time of this process: the machine is shared, wall time would count other jobs.
        o = per_call_us(ours, n, timer=time.process_time)
        th = per_call_us(theirs, n, timer=time.process_time)
        print(f"{label:46s} {o:10.2f} {th:10.2f} {o / th:7.1f}x")


if __name__ == "__main__":
    main()
