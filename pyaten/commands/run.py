"""`pyaten run --nproc-per-node N script.py args`: start N ranks of a script through mpirun,
with torchrun's flags and environment (pyaten/distributed/run.py, docs/distributed.md)."""

from __future__ import annotations

import argparse

HELP = "run a script on N ranks through mpirun (torchrun's flags; docs/distributed.md)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from pyaten.distributed.run import add_arguments as launcher_arguments

    launcher_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from pyaten.distributed.run import run as launch

    return launch(args)
