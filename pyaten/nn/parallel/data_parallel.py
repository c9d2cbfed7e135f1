"""`nn.DataParallel` as a CPU build of PyTorch has it: with no accelerator it keeps the module
and runs it as is (`device_ids` is empty), so code written for GPUs runs unchanged and its
state dict keeps the `module.` prefix."""

from __future__ import annotations

from typing import Any

from pyaten.nn.modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Runs `module` on the inputs; splitting a batch across devices needs accelerators,
    which pyaten has none of, so (as PyTorch without a GPU) there is nothing to split."""

    def __init__(
        self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0
    ) -> None:
        super().__init__()
        self.module = module
        self.device_ids: list[int] = []

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)

    def replicate(self, module: Module, device_ids: Any) -> Any:
        raise RuntimeError("DataParallel.replicate needs accelerator devices; pyaten has none")


def data_parallel(
    module: Module, inputs: Any, device_ids: Any = None, output_device: Any = None,
    dim: int = 0, module_kwargs: Any = None,
) -> Any:
    """The functional form; with no accelerator PyTorch cannot choose a device and raises."""
    raise RuntimeError("device type could not be determined")
