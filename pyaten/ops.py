"""Operator handles, like `torch.ops`: `pyaten.ops.aten.add` and `pyaten.ops.aten.add.Tensor`.

- `pyaten.ops.<ns>` is a namespace; `pyaten.ops.<ns>.<name>` an `OpOverloadPacket` (callable:
  it picks the overload from the arguments; `.overloads()` lists them); `packet.<overload>`
  (`default` for the empty overload name) an `OpOverload` with `_schema`, `name()`,
  `redispatch(keyset, ...)`, callable with positional or keyword arguments by schema name.
- Handles are looked up in the dispatcher when first used, so an operator defined at run time
  with `Library.define` has its handle (and its argument parsing) at once; handles of an
  operator that was deregistered stop resolving.

The handles are `pyaten.native.ops_handles`'s, where kernels reach them too (Note: where
operator handles live); this module is their public name and sits above native.
"""

from __future__ import annotations

from pyaten.native.ops_handles import OpNamespace, OpOverload, OpOverloadPacket, aten, ops

__all__ = ["ops", "aten", "OpOverload", "OpOverloadPacket", "OpNamespace"]


def __getattr__(name: str) -> OpNamespace:
    # `pyaten.ops.myns` as a module attribute, like `torch.ops.myns`.
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(ops, name)

# The Python key's handler (`__torch_dispatch__`) needs these handles: installed with them.
import pyaten.native.python_dispatch  # noqa: E402,F401
