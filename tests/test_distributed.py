"""pyaten.distributed: real multi-rank programs (tests/distributed_checks.py) on 2 and 3 ranks
through the launcher and through mpirun, each under a hard timeout, plus the single-process
parts against PyTorch: errors before init, the c10d schemas, DistributedSampler's order.

The three multi-rank runs start together when the module's first test needs them (they spend
most of their time starting MPI and importing pyaten), then each test waits for its own.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")

import torch  # noqa: E402
import torch.distributed as tdist  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import pyaten  # noqa: E402
import pyaten.distributed as dist  # noqa: E402
from pyaten.distributed.run import MPI_ENV  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CHECKS = Path(__file__).resolve().parent / "distributed_checks.py"
HARD_TIMEOUT = 240  # seconds for one multi-rank run, however loaded the machine is
FAIL_TIMEOUT = 60  # the failing-rank run must end well within this

if shutil.which("mpirun", path=os.path.dirname(sys.executable)) is None and shutil.which(
    "mpirun"
) is None:
    pytest.skip("no mpirun (pip install 'pyaten[distributed]')", allow_module_level=True)

COLLECTIVE_CHECKS = {
    "all_reduce every op and dtype", "all_reduce of a non-contiguous view writes through",
    "reduce, every op, to the last rank", "broadcast every dtype from each rank",
    "all_gather, uneven sizes, every dtype", "all_gather_into_tensor",
    "reduce_scatter, uneven sizes", "reduce_scatter_tensor", "all_to_all, uneven sizes",
    "all_to_all_single, even and uneven splits", "gather and scatter",
    "send, recv, isend, irecv in a ring", "async collectives overlap and complete in any order",
    "object collectives", "mismatched shapes raise on every rank, then the group still works",
    "bad arguments raise PyTorch's errors", "new_group, ranks and barriers",
    "functional collectives return new tensors",
}  # fmt: skip
TRAINING_CHECKS = {
    "DDP MLP 20 steps equals one process on the whole batch",
    "DDP with gradient_as_bucket_view",
    "DDP demo CNN 20 steps equals one process on the whole batch",
    "DDP no_sync accumulates locally, then averages", "DDP find_unused_parameters",
    "DDP without find_unused_parameters reports the unfinished reduction",
    "DDP comm hooks: allreduce, fp16 and bf16 compression",
    "SyncBatchNorm equals BatchNorm on the whole batch",
}  # fmt: skip

# The example plug-in device (extensions/openreg), where installed: run on 2 ranks.
DEVICE = ",device" if importlib.util.find_spec("pyaten_openreg") else ""
DEVICE_CHECK = "collectives on a plug-in device, staged through host memory"


def _env() -> dict[str, str]:
    env = dict(os.environ, **MPI_ENV)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _launcher(n: int, *args: str) -> list[str]:
    return [sys.executable, "-m", "pyaten.distributed.run", "--nproc-per-node", str(n), *args]


def _mpirun(n: int, *args: str) -> list[str]:
    mpirun = shutil.which("mpirun", path=os.path.dirname(sys.executable)) or "mpirun"
    return [mpirun, "-n", str(n), "--oversubscribe", "--bind-to", "none", sys.executable, *args]


class Run:
    """One multi-rank program, started at once; a thread waits for it under a hard timeout
    and notes when it ended."""

    def __init__(self, command: list[str], out: Path, timeout: float) -> None:
        self.out = out
        self.timeout = timeout
        self.start = time.monotonic()
        self.process = subprocess.Popen(command, cwd=ROOT, env=_env(), stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True,
                                        start_new_session=True)  # fmt: skip
        self.output = ""
        self.seconds = 0.0
        self.timed_out = False
        self._waiter = threading.Thread(target=self._wait, daemon=True)
        self._waiter.start()

    def _wait(self) -> None:
        try:
            self.output, _ = self.process.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.timed_out = True
            os.killpg(self.process.pid, signal.SIGKILL)  # the run's own process group
            self.output, _ = self.process.communicate()
        self.seconds = time.monotonic() - self.start

    def result(self) -> tuple[int, str, float]:
        """(exit status, output, seconds from start to end)."""
        self._waiter.join()
        if self.timed_out:
            pytest.fail(f"the run did not end within {self.timeout} s:\n{self.output[-3000:]}")
        return self.process.returncode, self.output, self.seconds

    def ranks(self, world: int) -> list[dict[str, str]]:
        status, output, _ = self.result()
        assert status == 0, output[-4000:]
        return [json.loads(Path(f"{self.out}.{r}").read_text()) for r in range(world)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    tmp = tmp_path_factory.mktemp("distributed")
    example = tmp / "ddp_example.py"
    doc = (ROOT / "docs" / "distributed.md").read_text()
    example.write_text(re.search(r"```python\n(.*?)```", doc, re.S).group(1))
    started = {
        "doc": Run([sys.executable, "-m", "pyaten.cli", "run", "--nproc-per-node", "2",
                    str(example)], tmp / "doc", HARD_TIMEOUT),
        "2": Run(_launcher(2, str(CHECKS), str(tmp / "two"), "collectives,training" + DEVICE),
                 tmp / "two", HARD_TIMEOUT),
        "3": Run(_mpirun(3, str(CHECKS), str(tmp / "three"), "collectives,training"),
                 tmp / "three", HARD_TIMEOUT),
        "fail": Run(_launcher(2, str(CHECKS), str(tmp / "fail"), "fail"), tmp / "fail",
                    FAIL_TIMEOUT),
    }  # fmt: skip
    yield started
    for run in started.values():
        if run.process.poll() is None:
            os.killpg(run.process.pid, signal.SIGKILL)
        run._waiter.join()


# -- multi-rank -----------------------------------------------------------------------------


@pytest.mark.parametrize("world", [2, 3])
def test_every_check_passes_on_every_rank(runs: dict[str, Run], world: int) -> None:
    results = runs[str(world)].ranks(world)
    for rank, checks in enumerate(results):
        device = {DEVICE_CHECK} if DEVICE and world == 2 else set()
        assert set(checks) == COLLECTIVE_CHECKS | TRAINING_CHECKS | device
        failed = {name: error for name, error in checks.items() if error != "ok"}
        assert not failed, f"rank {rank} of {world}:\n" + "\n".join(
            f"--- {name}\n{error}" for name, error in failed.items()
        )


def test_a_rank_that_never_joins_makes_the_others_raise_and_the_job_end(runs) -> None:
    status, output, seconds = runs["fail"].result()
    assert status != 0, output[-3000:]
    assert "RAISED after" in output and "timed out after 3 s" in output, output[-3000:]
    assert "NOT RAISED" not in output
    assert "MONITORED: [Rank 0]: Rank 1 failed to pass monitoredBarrier in 1000 ms" in output
    assert seconds < FAIL_TIMEOUT


def test_the_docs_ddp_example_runs_on_two_ranks_through_pyaten_run(runs) -> None:
    status, output, _ = runs["doc"].result()
    assert status == 0, output[-3000:]
    assert "epoch 2: loss" in output and "on 2 ranks" in output, output[-3000:]


# -- one process, against PyTorch --------------------------------------------------------------


def _error(fn) -> tuple[str, str]:
    try:
        fn()
    except Exception as error:  # the class and message are what is compared
        return type(error).__name__, str(error)
    return "no error", ""


@pytest.mark.parametrize(
    "call",
    [
        lambda d, t: d.all_reduce(t.ones(2)),
        lambda d, t: d.broadcast(t.ones(2), 0),
        lambda d, t: d.all_gather([t.ones(2)], t.ones(2)),
        lambda d, t: d.barrier(),
        lambda d, t: d.get_rank(),
        lambda d, t: d.get_world_size(),
        lambda d, t: d.get_backend(),
        lambda d, t: d.new_group(),
        lambda d, t: d.send(t.ones(1), 1),
        lambda d, t: d.all_gather_object([None], 1),
        lambda d, t: d.broadcast_object_list([1], 0),
        lambda d, t: d.destroy_process_group(),
        lambda d, t: d.init_process_group("foo", "tcp://127.0.0.1:29511", rank=0, world_size=1),
        lambda d, t: d.init_process_group("nccl", "tcp://127.0.0.1:29511", rank=0, world_size=1),
    ],
)
def test_errors_before_init_as_pytorch(call) -> None:
    assert not dist.is_initialized() and not tdist.is_initialized()
    with warnings.catch_warnings():  # PyTorch warns about an unknown backend's devices
        warnings.simplefilter("ignore")
        ours = _error(lambda: call(dist, pyaten))
        theirs = _error(lambda: call(tdist, torch))
    assert ours == theirs


C10D_OPS = ["allreduce_", "broadcast_", "allgather_", "_allgather_base_", "reduce_scatter_",
            "_reduce_scatter_base_", "alltoall_", "alltoall_base_", "reduce_", "gather_",
            "scatter_", "barrier", "monitored_barrier_", "send", "recv_",
            "recv_any_source_"]  # fmt: skip


@pytest.mark.parametrize("name", C10D_OPS)
def test_c10d_operator_declared_as_pytorch_with_cpu_and_meta_kernels(name: str) -> None:
    ours = getattr(pyaten.ops.c10d, name).default._schema
    theirs = getattr(torch.ops.c10d, name).default._schema
    assert str(ours) == str(theirs)
    table = pyaten.dispatch.dump_table(f"c10d::{name}")
    assert table["CPU"] != "missing" and table["Meta"] != "missing"
    assert table["PrivateUse1"] != "missing"  # plug-in devices, staged through host memory


def test_c10d_meta_kernels_move_no_data() -> None:
    t = pyaten.empty(3, 4, device="meta")
    tensors, work = pyaten.ops.c10d.allreduce_.default([t], None, dist.ReduceOp.SUM, None)
    assert tensors[0].shape == (3, 4) and work.is_completed()
    outs = [[pyaten.empty(3, device="meta"), pyaten.empty(3, device="meta")]]
    result, work = pyaten.ops.c10d.allgather_.default(outs, [pyaten.empty(3, device="meta")],
                                                      None)  # fmt: skip
    assert len(result[0]) == 2 and work.wait()


def test_explain_follows_a_c10d_call() -> None:
    t = pyaten.empty(2, device="meta")
    with pyaten.explain() as ex:
        pyaten.ops.c10d.broadcast_.default([t], None, 0, 0)
    assert "c10d::broadcast_" in str(ex) and "broadcast__meta" in str(ex)


def test_dispatch_command_shows_c10d_operators() -> None:
    from pyaten.cli import main

    assert main(["dispatch", "c10d::allreduce_"]) == 0


def test_reduce_op_as_pytorch() -> None:
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"):
        ours, theirs = getattr(dist.ReduceOp, name), getattr(tdist.ReduceOp, name)
        assert (str(ours), repr(ours), int(ours)) == (str(theirs), repr(theirs), int(theirs))
    assert dist.Backend("GLOO") == tdist.Backend("GLOO") == "gloo"


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), replicas=st.integers(1, 5), shuffle=st.booleans(),
       seed=st.integers(0, 2**31), drop_last=st.booleans(), epoch=st.integers(0, 3))  # fmt: skip
def test_distributed_sampler_order_as_pytorch(n, replicas, shuffle, seed, drop_last, epoch):
    from torch.utils.data import DistributedSampler as Theirs

    from pyaten.utils.data import DistributedSampler as Ours

    for rank in range(replicas):
        ours = Ours(range(n), replicas, rank, shuffle, seed, drop_last)
        theirs = Theirs(range(n), replicas, rank, shuffle, seed, drop_last)
        ours.set_epoch(epoch)
        theirs.set_epoch(epoch)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_distributed_sampler_bad_rank_as_pytorch() -> None:
    from torch.utils.data import DistributedSampler as Theirs

    from pyaten.utils.data import DistributedSampler as Ours

    assert _error(lambda: Ours(range(4), 2, 2)) == _error(lambda: Theirs(range(4), 2, 2))


def test_launcher_command_line() -> None:
    import argparse

    from pyaten.distributed.run import add_arguments, mpirun_command

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--nproc_per_node", "3", "--master-port", "1234", "train.py",
                              "--lr", "0.1"])  # fmt: skip
    command = mpirun_command(args)
    assert command[1:5] == ["-n", "3", "--oversubscribe", "--bind-to"]
    assert command[-4:] == ["--worker", "train.py", "--lr", "0.1"]
    assert args.master_port == 1234
