"""pyaten.ao: quantization (PyTorch's torch.ao), see docs/quantization.md.

`pyaten.ao.quantization` holds observers, QConfigs and the eager flows (`quantize_dynamic`,
`prepare` / `convert`); `pyaten.ao.nn.quantized` the modules that run on quantized tensors.
"""

from pyaten.ao import nn, quantization

__all__ = ["nn", "quantization"]
