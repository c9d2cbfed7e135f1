"""pyaten._ops: operator handles at PyTorch's path (`torch._ops.OpOverload`), so that
`from torch._ops import OpOverload` ports as `from pyaten._ops import OpOverload`. The handles
live in pyaten/native/ops_handles.py (Note: where operator handles live)."""

from pyaten.native.ops_handles import OpNamespace, OpOverload, OpOverloadPacket, ops

__all__ = ["OpNamespace", "OpOverload", "OpOverloadPacket", "ops"]
