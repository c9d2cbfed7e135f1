"""pyaten.save / pyaten.load beside torch.save / torch.load: time and peak resident memory.

Run: .venv/bin/python benchmarks/bench_serialization.py [--quick] [--mb 256]

Each measurement runs in a fresh subprocess, which resets its peak resident memory just
before the call (writing 5 to /proc/self/clear_refs), reads the peak (`VmHWM` in
/proc/self/status) after it and subtracts its resident memory before it, so the figure is
what the call itself added at its highest. Cases: saving a state dict of 16 float32
tensors totalling `--mb` megabytes; loading that checkpoint (written by PyTorch) with and
without `mmap=True`; loading a checkpoint of 200,000 tensor records over one small storage
(a file of references).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

_CHILD = r"""
import os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
lib_name, case, path, mb = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
import numpy as np
lib = __import__(lib_name)
save, load = lib.save, lib.load  # (pyaten imports its serialization package on first use)

def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024

def state():
    per = mb * 2**20 // 16 // 4
    return {f"layer{i}.weight": lib.from_numpy(np.full(per, i, np.float32)) for i in range(16)}

if case == "save":
    obj = state()
    open("/proc/self/clear_refs", "w").write("5")  # the peak starts here
    before = status("VmRSS")
    start = time.perf_counter()
    save(obj, path)
else:
    open("/proc/self/clear_refs", "w").write("5")  # the peak starts here
    before = status("VmRSS")
    start = time.perf_counter()
    loaded = load(path, mmap=(case == "load_mmap"), weights_only=True)
elapsed = time.perf_counter() - start
print(elapsed, status("VmHWM") - before)
"""


def measure(lib: str, case: str, path: str, mb: int) -> tuple[float, int]:
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, lib, case, path, str(mb)],
        capture_output=True, text=True, timeout=600, env=env, check=True,
    )
    seconds, added = done.stdout.split()
    return float(seconds), int(added)


def references_file(path: str, count: int) -> None:
    """A checkpoint of `count` tensor records over one small storage (written by PyTorch,
    whose C pickler writes it fastest)."""
    import torch

    base = torch.zeros(4)
    torch.save([base[i % 4 :] for i in range(count)], path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a 32 MB checkpoint, 20k records")
    parser.add_argument("--mb", type=int, default=256)
    args = parser.parse_args()
    mb = 32 if args.quick else args.mb
    count = 20_000 if args.quick else 200_000
    with tempfile.TemporaryDirectory() as folder:
        checkpoint = os.path.join(folder, "model.pt")
        rows = []
        for lib in ("torch", "pyaten"):
            seconds, added = measure(lib, "save", os.path.join(folder, f"{lib}.pt"), mb)
            rows.append((f"save {mb} MB state dict", lib, seconds, added))
        measure("torch", "save", checkpoint, mb)
        for case in ("load", "load_mmap"):
            label = f"load {mb} MB" + (" mmap=True" if case == "load_mmap" else "")
            for lib in ("torch", "pyaten"):
                seconds, added = measure(lib, case, checkpoint, mb)
                rows.append((label, lib, seconds, added))
        references = os.path.join(folder, "references.pt")
        references_file(references, count)
        size = os.path.getsize(references) / 2**20
        for lib in ("torch", "pyaten"):
            seconds, added = measure(lib, "load", references, mb)
            rows.append((f"load {count:,} references ({size:.0f} MB file)", lib, seconds, added))
    print(f"{'case':<44} {'library':<8} {'seconds':>8} {'added RSS (MB)':>15}")
    for label, lib, seconds, added in rows:
        print(f"{label:<44} {lib:<8} {seconds:>8.3f} {added / 2**20:>15.1f}")


if __name__ == "__main__":
    main()
