"""`pyaten.nn.parallel`: `DataParallel` (on the CPU it runs the module as is, as PyTorch does
without a GPU), `data_parallel`, and `DistributedDataParallel` (docs/distributed.md)."""

from pyaten.nn.parallel.data_parallel import DataParallel, data_parallel
from pyaten.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
