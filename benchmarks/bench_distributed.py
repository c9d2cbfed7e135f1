"""pyaten.distributed's cost: all-reduce bandwidth against raw mpi4py, and DDP's step time.

Run: .venv/bin/python benchmarks/bench_distributed.py [--quick]
(it starts itself on 2 ranks, and on 1 for the DDP baseline, through pyaten's launcher)

1. All-reduce (SUM) of 1, 4, 16 and 64 MB of float32 on 2 ranks: `dist.all_reduce(t)`
   (argument checks, the shape check, the c10d operator through the dispatcher, a
   non-blocking MPI_Iallreduce waited for) against mpi4py's blocking `Allreduce(IN_PLACE)` on
   the same NumPy buffer. Best wall time of calls interleaved with mpi4py's (each after a
   barrier: the least disturbed by other load); bandwidth = bytes / time. Goal: within 10%.
2. DDP: one training step (zero_grad, forward, backward, SGD step) of an MLP 1024-1024-1024-
   1024-10 (3.2 M parameters, 12.6 MB of gradients, batch 32 per rank, buckets of 4 MB) on 2
   ranks against the same model unwrapped on 1 rank; and the share of the gradient all-reduce
   hidden under backward: 1 - (DDP step - step under no_sync) / (all-reduce of the buckets).
Both ranks share this machine's cores: on a loaded 2-core machine the figures are noisy.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES_MB = (1, 4, 16, 64)
# Smaller than the 25 MB default, so that the 4 MB layers' buckets leave during backward.
BUCKET_MB = 4


def _median_time(fn, repeats: int, barrier) -> float:
    times = []
    for _ in range(repeats):
        barrier()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_allreduce(quick: bool) -> None:
    import numpy as np
    from mpi4py import MPI

    import pyaten
    import pyaten.distributed as dist

    comm = MPI.COMM_WORLD
    rank = dist.get_rank()
    repeats = 5 if quick else 15
    rows = []
    for mb in SIZES_MB[:2] if quick else SIZES_MB:
        n = mb * 1024 * 1024 // 4
        array = np.ones(n, dtype=np.float32)
        tensor = pyaten.from_numpy(array)  # the same buffer for both
        for _ in range(2):  # warm up both paths
            comm.Allreduce(MPI.IN_PLACE, array)
            dist.all_reduce(tensor)
        raw, ours = [], []
        for _ in range(repeats):  # interleaved, so both see the same machine load
            raw.append(_median_time(lambda a=array: comm.Allreduce(MPI.IN_PLACE, a), 1,
                                    comm.Barrier))  # fmt: skip
            ours.append(_median_time(lambda t=tensor: dist.all_reduce(t), 1, comm.Barrier))
        rows.append((mb, min(raw), min(ours)))
    if rank == 0:
        print("all_reduce SUM float32, 2 ranks (best of interleaved calls; bandwidth = "
              "bytes / time)")  # fmt: skip
        print(f"{'size':>6} {'mpi4py ms':>10} {'pyaten ms':>10} {'mpi4py GB/s':>12} "
              f"{'pyaten GB/s':>12} {'pyaten/mpi4py':>14}")  # fmt: skip
        for mb, raw, ours in rows:
            gb = mb / 1024
            print(f"{mb:>4}MB {raw * 1e3:>10.2f} {ours * 1e3:>10.2f} {gb / raw:>12.2f} "
                  f"{gb / ours:>12.2f} {ours / raw:>14.2f}")  # fmt: skip


def _mlp(nn):
    return nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                         nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))  # fmt: skip


def bench_ddp(quick: bool) -> dict[str, float]:
    import pyaten
    import pyaten.distributed as dist
    from pyaten import nn
    from pyaten.nn.parallel import DistributedDataParallel as DDP

    world = dist.get_world_size()
    pyaten.manual_seed(0)
    model = _mlp(nn)
    if world > 1:
        model = DDP(model, bucket_cap_mb=BUCKET_MB)
    opt = pyaten.optim.SGD(model.parameters(), lr=0.01)
    x, y = pyaten.randn(32, 1024), pyaten.randint(0, 10, (32,))
    repeats = 3 if quick else 8

    def step() -> None:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    step()
    barrier = dist.barrier
    result = {"step": _median_time(step, repeats, barrier)}
    if world > 1:
        def local_step() -> None:
            with model.no_sync():
                step()

        result["no_sync"] = _median_time(local_step, repeats, barrier)
        buckets = [b.buffer for b in model._buckets]

        def reduce_all() -> None:
            works = [dist.all_reduce(b, async_op=True) for b in buckets]
            for w in works:
                w.wait()

        result["allreduce"] = _median_time(reduce_all, repeats, barrier)
        result["buckets"] = len(buckets)
    return result


def rank_main(quick: bool, what: str, out: str) -> None:
    import json

    import pyaten.distributed as dist

    dist.init_process_group("gloo")
    if what == "allreduce":
        bench_allreduce(quick)
    else:
        result = bench_ddp(quick)
        if dist.get_rank() == 0:
            Path(out).write_text(json.dumps(result))
    dist.destroy_process_group()


def _launch(n: int, args: list[str]) -> None:
    command = [sys.executable, "-m", "pyaten.distributed.run", "--nproc-per-node", str(n),
               __file__, "--rank-main", *args]  # fmt: skip
    subprocess.run(command, check=True, cwd=ROOT, timeout=900)


def main() -> None:
    import json
    import tempfile

    argv = sys.argv[1:]
    quick = "--quick" in argv
    if "--rank-main" in argv:
        what, out = argv[argv.index("--rank-main") + 1: argv.index("--rank-main") + 3]
        rank_main(quick, what, out)
        return
    flags = ["--quick"] if quick else []
    _launch(2, ["allreduce", "-", *flags])
    with tempfile.TemporaryDirectory() as tmp:
        one, two = Path(tmp, "one.json"), Path(tmp, "two.json")
        _launch(1, ["ddp", str(one), *flags])
        _launch(2, ["ddp", str(two), *flags])
        r1, r2 = json.loads(one.read_text()), json.loads(two.read_text())
    comm = r2["step"] - r2["no_sync"]
    hidden = 1 - comm / r2["allreduce"] if r2["allreduce"] > 0 else 0.0
    print("\nDDP step, MLP 1024x3 + 10 (12.6 MB of gradients), batch 32 per rank")
    print(f"  1 rank (no DDP)        {r1['step'] * 1e3:8.1f} ms")
    print(f"  2 ranks, DDP           {r2['step'] * 1e3:8.1f} ms  ({r2['buckets']} buckets of "
          f"<= {BUCKET_MB} MB)")  # fmt: skip
    print(f"  2 ranks, under no_sync {r2['no_sync'] * 1e3:8.1f} ms")
    print(f"  all-reduce of the buckets alone {r2['allreduce'] * 1e3:8.1f} ms")
    print(f"  share of the all-reduce hidden under backward: {max(0.0, min(1.0, hidden)):.0%}")


if __name__ == "__main__":
    main()
