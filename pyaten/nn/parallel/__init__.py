"""`pyaten.nn.parallel`: `DataParallel` (on the CPU it runs the module as is, as PyTorch does
without a GPU) and `data_parallel`."""

from pyaten.nn.parallel.data_parallel import DataParallel, data_parallel

__all__ = ["DataParallel", "data_parallel"]
