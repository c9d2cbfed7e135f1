"""pyaten.utils.data: datasets, samplers and the DataLoader (docs/data.md), as
torch.utils.data."""

from pyaten.utils.data._worker import WorkerInfo, get_worker_info
from pyaten.utils.data.collate import default_collate, default_convert
from pyaten.utils.data.dataloader import DataLoader
from pyaten.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from pyaten.utils.data.distributed import DistributedSampler
from pyaten.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
    "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
    "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "WorkerInfo",
    "default_collate", "default_convert", "get_worker_info", "random_split",
]
