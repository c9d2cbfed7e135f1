"""`SyncBatchNorm`: batch normalisation whose training statistics span every rank's batch.

In training the mean and the (biased) variance come from all ranks: each rank sums its
samples per channel, the sums are all-reduced, then the squared deviations likewise. The
all-reduce is differentiable (its backward all-reduces the gradient), so backward gives each
rank the gradient of the sum of all ranks' losses, as PyTorch's SyncBatchNorm does. Running
statistics use the unbiased global variance. In eval, or without an initialised process
group, it is BatchNorm. Unlike PyTorch, which requires GPU tensors, it runs on the CPU.
"""

from __future__ import annotations

from typing import Any

from pyaten.autograd.function import Function
from pyaten.autograd.grad_mode import no_grad
from pyaten.core.tensor import Tensor
from pyaten.nn.modules.batchnorm import _BatchNorm

__all__ = ["SyncBatchNorm"]


class _AllReduceSum(Function):
    """`all_reduce(SUM)` of a copy; its backward all-reduces the incoming gradient."""

    @staticmethod
    def forward(ctx: Any, tensor: Tensor, group: Any) -> Tensor:
        import pyaten.distributed as dist

        ctx.group = group
        out = tensor.clone()
        dist.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        import pyaten.distributed as dist

        grad = grad.clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over the union of the batches of the ranks of `process_group`."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Any = None, device: Any = None,
                 dtype: Any = None) -> None:  # fmt: skip
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        import pyaten.distributed as dist

        synced = self.training and dist.is_initialized() and dist.get_world_size(
            self.process_group) > 1  # fmt: skip
        if not synced:
            return super().forward(input)
        factor = self._average_factor()
        dims = [0, *range(2, input.dim())]
        shape = [1, -1] + [1] * (input.dim() - 2)
        local_count = input.numel() // input.shape[1]
        count = _AllReduceSum.apply(input.new_tensor([float(local_count)]).detach(),
                                    self.process_group)  # fmt: skip
        n = float(count.item())
        if n <= 1:
            raise ValueError(
                "Expected more than 1 value per channel when training, got input size "
                f"{list(input.shape)}"
            )
        mean = _AllReduceSum.apply(input.sum(dims), self.process_group) / n
        centred = input - mean.view(shape)
        var = _AllReduceSum.apply((centred * centred).sum(dims), self.process_group) / n
        out = centred / (var.view(shape) + self.eps).sqrt()
        if self.weight is not None:
            out = out * self.weight.view(shape) + self.bias.view(shape)
        if self.track_running_stats and self.running_mean is not None:
            with no_grad():
                self.running_mean.mul_(1 - factor).add_(mean.detach(), alpha=factor)
                unbiased = var.detach() * (n / (n - 1))
                self.running_var.mul_(1 - factor).add_(unbiased, alpha=factor)
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module: Any, process_group: Any = None) -> Any:
        """`module` with every BatchNorm*d replaced by a SyncBatchNorm sharing its state."""
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            converted = SyncBatchNorm(module.num_features, module.eps, module.momentum,
                                      module.affine, module.track_running_stats,
                                      process_group)  # fmt: skip
            if module.affine:
                with no_grad():
                    converted.weight = module.weight
                    converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return converted
