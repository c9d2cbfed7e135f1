"""`pyaten.backends.quantized`: the quantized engine, as `torch.backends.quantized`.

pyaten computes quantized operators with the x86 engine's numerics (fbgemm's rounding and
requantisation, docs/quantization.md), so `engine` is "x86" and may be set to "x86" or
"fbgemm" (the same numerics here); PyTorch's other engines (qnnpack, onednn) are not offered.
"""

from __future__ import annotations

import sys
import types

__all__: list[str] = []  # `engine` and `supported_engines` are properties of the module

_SUPPORTED = ("x86", "fbgemm")
_ENGINE = ["x86"]


class _QuantizedBackend(types.ModuleType):
    @property
    def engine(self) -> str:
        return _ENGINE[0]

    @engine.setter
    def engine(self, value: str) -> None:
        if value not in _SUPPORTED:
            raise RuntimeError(f"{value} is not a valid value for quantized engine")
        _ENGINE[0] = value

    @property
    def supported_engines(self) -> list[str]:
        return list(_SUPPORTED)


sys.modules[__name__].__class__ = _QuantizedBackend
