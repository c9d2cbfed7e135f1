"""`pyaten.onnx`: the module PyTorch programs import; pyaten cannot export ONNX.

`import pyaten.onnx` works and `is_in_onnx_export()` is False, so programs that only check
for an export run; `export` raises NotImplementedError saying so (PyTorch's exporter traces
the program into TorchScript or an FX graph, which pyaten does not have).
"""

from __future__ import annotations

from typing import Any

__all__ = ["dynamo_export", "export", "is_in_onnx_export"]


def _cannot_export(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"pyaten.onnx.{name}(): pyaten cannot export ONNX models; export the model with "
        "PyTorch (torch.onnx.export), e.g. after loading a checkpoint that pyaten.save wrote"
    )


def export(model: Any, args: Any = (), f: Any = None, *more: Any, **kwargs: Any) -> Any:
    """Export `model` to ONNX: not available in pyaten (raises NotImplementedError)."""
    raise _cannot_export("export")


def dynamo_export(model: Any, *args: Any, **kwargs: Any) -> Any:
    """Export `model` to ONNX through Dynamo: not available in pyaten."""
    raise _cannot_export("dynamo_export")


def is_in_onnx_export() -> bool:
    """False: pyaten never runs a model inside an ONNX export."""
    return False
