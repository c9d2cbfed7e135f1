"""`pyaten.distributed`: `torch.distributed` on MPI (docs/distributed.md).

    import pyaten.distributed as dist
    dist.init_process_group("gloo")          # or "mpi": ranks come from mpirun / pyaten run
    dist.all_reduce(t, op=dist.ReduceOp.SUM)

The collectives are `c10d` operators on the dispatcher (`pyaten/distributed/_c10d_ops.py`);
the data moves through mpi4py (`pyaten/distributed/_mpi.py`). mpi4py is needed only to run a
collective: importing this package and inspecting the operators works without it.
"""

from pyaten.distributed import _c10d_ops  # noqa: F401  (defines the c10d operators)
from pyaten.distributed._mpi import ProcessGroup
from pyaten.distributed._types import Future, GroupMember, ReduceOp, Work, group
from pyaten.distributed.distributed_c10d import *  # noqa: F403
from pyaten.distributed.distributed_c10d import __all__ as _c10d_all

ReduceOpType = ReduceOp.RedOpType

__all__ = ["ProcessGroup", "ReduceOp", "Work", "Future", "GroupMember", "group", *_c10d_all]

from pyaten.distributed import _functional_collectives  # noqa: E402,F401  (its operators)
