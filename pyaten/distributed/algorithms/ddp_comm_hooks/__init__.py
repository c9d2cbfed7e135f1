"""DDP communication hooks: `default_hooks.allreduce_hook`, `fp16_compress_hook`,
`bf16_compress_hook` (pass one to `DistributedDataParallel.register_comm_hook`)."""

from pyaten.distributed.algorithms.ddp_comm_hooks import default_hooks

__all__ = ["default_hooks"]
