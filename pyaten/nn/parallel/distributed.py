"""`DistributedDataParallel`: one model replica per rank, gradients averaged while backward runs.

Note: the reducer. Parameters that need a gradient are grouped, in reverse registration order
(roughly the order backward produces their gradients), into buckets of at most
`bucket_cap_mb` (the first one 1 MB, as PyTorch, so communication starts early), one dtype
per bucket, each with one flat buffer. A post-accumulate-grad hook on every parameter copies
its gradient into the bucket (or, with `gradient_as_bucket_view`, the gradient *is* a view of
the bucket) and counts it; a bucket whose parameters have all reported is handed to the
communication hook at once (asynchronous all-reduce by default, each rank's gradient divided
by the world size), so it travels while backward computes the rest. When the last bucket is
launched the reducer waits for all of them, in order, and writes the averages back to `.grad`.
`find_unused_parameters` walks the autograd graph from the forward's outputs and marks the
parameters it cannot reach ready at once; a parameter no rank used keeps its `.grad`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pyaten.distributed as dist
from pyaten.autograd.grad_mode import is_grad_enabled, no_grad
from pyaten.core.creation import tensor as _tensor
from pyaten.core.dtypes import int32
from pyaten.nn.modules._ops import ops
from pyaten.nn.modules.module import Module

__all__ = ["DistributedDataParallel", "GradBucket"]

_FIRST_BUCKET_BYTES = 1024 * 1024


class GradBucket:
    """What a communication hook receives: one bucket's flat gradient buffer and its params."""

    def __init__(self, index: int, buffer: Any, params: list[Any], offsets: list[int],
                 is_last: bool) -> None:  # fmt: skip
        self._index = index
        self._buffer = buffer
        self._params = params
        self._offsets = offsets
        self._is_last = is_last

    def index(self) -> int:
        return self._index

    def buffer(self) -> Any:
        return self._buffer

    def set_buffer(self, buffer: Any) -> None:
        self._buffer = buffer

    def is_last(self) -> bool:
        return self._is_last

    def parameters(self) -> list[Any]:
        return list(self._params)

    def gradients(self) -> list[Any]:
        return [self._buffer[o:o + p.numel()].view(p.shape)
                for p, o in zip(self._params, self._offsets)]  # fmt: skip


class _Bucket:
    def __init__(self, index: int, params: list[Any]) -> None:
        self.index = index
        self.params = params
        self.offsets = []
        total = 0
        for p in params:
            self.offsets.append(total)
            total += p.numel()
        self.buffer = ops.zeros(total, dtype=params[0].dtype, device=params[0].device)
        self.pending = len(params)
        self.future: Any = None

    def view(self, i: int) -> Any:
        p = self.params[i]
        return self.buffer[self.offsets[i]:self.offsets[i] + p.numel()].view(p.shape)


def _default_hook(process_group: Any, bucket: GradBucket) -> Any:
    from pyaten.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    return allreduce_hook(process_group, bucket)


class DistributedDataParallel(Module):
    """Wrap `module` so that `backward()` leaves every rank the same, averaged gradients."""

    def __init__(
        self,
        module: Module,
        device_ids: Any = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        process_group: Any = None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        delay_all_reduce_named_params: Any = None,
        param_to_hook_all_reduce: Any = None,
        mixed_precision: Any = None,
        device_mesh: Any = None,
        skip_all_reduce_unused_params: bool = False,
    ) -> None:
        super().__init__()
        if not any(p.requires_grad for p in module.parameters()):
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any parameter "
                "that requires a gradient."
            )
        self.module = module
        self.process_group = process_group if process_group is not None else \
            dist.distributed_c10d._default()  # fmt: skip
        self.dim = dim
        self.device_ids = device_ids
        self.output_device = output_device
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self._world = self.process_group.size()
        self._params = [p for p in module.parameters() if p.requires_grad]
        self._sync_module_states()
        self._buckets = self._build_buckets()
        self._where = {}  # id(param) -> (bucket, index in bucket)
        for bucket in self._buckets:
            for i, p in enumerate(bucket.params):
                self._where[id(p)] = (bucket, i)
        self._comm_state: Any = self.process_group
        self._comm_hook: Callable[[Any, GradBucket], Any] = _default_hook
        self._hook_registered = False
        self._used = [False] * len(self._params)
        self._index = {id(p): i for i, p in enumerate(self._params)}
        self._in_flight = False
        self._launched = 0
        self._hooks = [p.register_post_accumulate_grad_hook(self._on_grad_ready)
                       for p in self._params]  # fmt: skip

    # -- setup -----------------------------------------------------------------------------

    def _sync_module_states(self) -> None:
        """Every rank starts from rank 0's parameters and buffers."""
        if self._world == 1:
            return
        states = [p.detach() for p in self.module.parameters()]
        states += [b for b in self.module.buffers()]
        for t in states:
            dist.broadcast(t, group_src=0, group=self.process_group)

    def _build_buckets(self) -> list[_Bucket]:
        buckets: list[_Bucket] = []
        groups: dict[Any, list[Any]] = {}
        sizes: dict[Any, int] = {}
        for p in reversed(self._params):
            key = (p.dtype, str(p.device))
            cap = min(_FIRST_BUCKET_BYTES, self.bucket_bytes_cap) if not buckets else \
                self.bucket_bytes_cap
            listed = groups.setdefault(key, [])
            nbytes = p.numel() * p.element_size()
            if listed and sizes[key] + nbytes > cap:
                buckets.append(_Bucket(len(buckets), listed))
                listed = groups[key] = []
                sizes[key] = 0
            listed.append(p)
            sizes[key] = sizes.get(key, 0) + nbytes
        for listed in groups.values():
            if listed:
                buckets.append(_Bucket(len(buckets), listed))
        return buckets

    # -- forward -----------------------------------------------------------------------------

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self._in_flight:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. You can enable unused parameter detection by passing "
                "the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`."
            )
        if self.broadcast_buffers and self._world > 1 and self.require_forward_param_sync:
            for b in self.module.buffers():
                dist.broadcast(b, group_src=0, group=self.process_group)
        output = self.module(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self._prepare_for_backward(output)
        return output

    def _prepare_for_backward(self, output: Any) -> None:
        for bucket in self._buckets:
            bucket.pending = len(bucket.params)
            bucket.future = None
        self._launched = 0
        self._used = [False] * len(self._params)
        self._in_flight = False
        if self.find_unused_parameters:
            reached = _reachable_params(output)
            for p in self._params:
                if id(p) not in reached:
                    self._mark_ready(p, used=False)

    # -- backward: the reducer (Note: the reducer) -------------------------------------------

    def _on_grad_ready(self, param: Any) -> None:
        if not self.require_backward_grad_sync:
            return
        self._mark_ready(param, used=True)

    def _mark_ready(self, param: Any, used: bool) -> None:
        bucket, i = self._where[id(param)]
        self._in_flight = True
        self._used[self._index[id(param)]] = used
        view = bucket.view(i)
        grad = param.grad
        with no_grad():
            if not used or grad is None:
                view.zero_()
            elif self.gradient_as_bucket_view:
                if grad.data_ptr() != view.data_ptr():
                    view.copy_(grad)
                    param.grad = view
            else:
                view.copy_(grad)
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch(bucket)

    def _launch(self, bucket: _Bucket) -> None:
        grad_bucket = GradBucket(bucket.index, bucket.buffer, bucket.params, bucket.offsets,
                                 bucket.index == len(self._buckets) - 1)  # fmt: skip
        bucket.future = self._comm_hook(self._comm_state, grad_bucket)
        self._launched += 1
        if self._launched == len(self._buckets):
            self._finalize()

    def _finalize(self) -> None:
        used = self._globally_used() if self.find_unused_parameters else None
        with no_grad():
            for bucket in self._buckets:
                reduced = bucket.future.wait()
                if reduced is not bucket.buffer:
                    bucket.buffer.copy_(reduced)
                for i, p in enumerate(bucket.params):
                    if used is not None and not used[self._index[id(p)]]:
                        continue
                    view = bucket.view(i)
                    if self.gradient_as_bucket_view:
                        if p.grad is None or p.grad.data_ptr() != view.data_ptr():
                            p.grad = view
                    elif p.grad is None:
                        p.grad = view.clone()
                    else:
                        p.grad.copy_(view)
        self._in_flight = False

    def _globally_used(self) -> list[bool]:
        flags = _tensor([1 if u else 0 for u in self._used], dtype=int32)
        dist.all_reduce(flags, dist.ReduceOp.MAX, group=self.process_group)
        return [bool(v) for v in flags.tolist()]

    # -- the public knobs --------------------------------------------------------------------

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Accumulate gradients locally; the first backward after the block all-reduces."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def register_comm_hook(self, state: Any, hook: Callable[[Any, GradBucket], Any]) -> None:
        """Replace the all-reduce of each bucket by `hook(state, bucket) -> Future[Tensor]`."""
        if self._hook_registered:
            raise RuntimeError(
                "register_comm_hook or register_builtin_comm_hook can only be called once."
            )
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        self._hook_registered = True
        self._comm_state = state
        self._comm_hook = hook

    def _get_ddp_logging_data(self) -> dict[str, Any]:
        return {"bucket_sizes": [b.buffer.numel() * b.buffer.element_size()
                                 for b in self._buckets],  # fmt: skip
                "world_size": self._world, "find_unused_parameters": self.find_unused_parameters,
                "gradient_as_bucket_view": self.gradient_as_bucket_view}  # fmt: skip


def _reachable_params(output: Any) -> set[int]:
    """ids of the leaf tensors the autograd graph of `output` accumulates into."""
    roots = []
    stack = [output]
    while stack:  # outputs may be tensors nested in tuples, lists and dicts
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif getattr(item, "grad_fn", None) is not None:
            roots.append(item.grad_fn)
    seen: set[int] = set()
    reached: set[int] = set()
    while roots:
        node = roots.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            reached.add(id(variable))
        for child, _ in getattr(node, "next_functions", ()):
            if child is not None:
                roots.append(child)
    return reached
