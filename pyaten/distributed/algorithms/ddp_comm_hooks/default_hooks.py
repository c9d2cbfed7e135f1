"""The built-in DDP communication hooks: `hook(process_group, bucket) -> Future[Tensor]`.

Each divides the bucket by the group size and all-reduces it asynchronously; the compressing
ones do so in float16 or bfloat16 (half the bytes on the wire) and write the result back into
the bucket's float32 buffer.
"""

from __future__ import annotations

from typing import Any

import pyaten.distributed as dist
from pyaten.core.dtypes import bfloat16, float16
from pyaten.distributed._types import Future

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"]


def _group(process_group: Any) -> Any:
    return process_group if process_group is not None else dist.group.WORLD


def _allreduce_fut(process_group: Any, tensor: Any) -> Future:
    group = _group(process_group)
    tensor.div_(group.size())
    work = dist.all_reduce(tensor, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group: Any, bucket: Any) -> Future:
    """Average the bucket across the group (what DDP does without a hook)."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype: Any, process_group: Any, bucket: Any) -> Future:
    group = _group(process_group)
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(group.size())
    work = dist.all_reduce(compressed, group=group, async_op=True)

    def decompress(fut: Future) -> Any:
        buffer.copy_(fut.value()[0])
        return buffer

    return work.get_future().then(decompress)


def fp16_compress_hook(process_group: Any, bucket: Any) -> Future:
    """Average the bucket in float16."""
    return _compress_hook(float16, process_group, bucket)


def bf16_compress_hook(process_group: Any, bucket: Any) -> Future:
    """Average the bucket in bfloat16."""
    return _compress_hook(bfloat16, process_group, bucket)
