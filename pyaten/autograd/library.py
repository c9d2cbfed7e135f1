"""`pyaten.library.register_autograd`: a backward for an operator defined through Library.

The backward and the optional `setup_context(ctx, inputs, output)` become a custom
`Function` whose forward runs the operator below autograd; that Function is registered as
the operator's kernel at the `Autograd` key, as PyTorch's `register_autograd` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyaten.autograd.function import Function
from pyaten.autograd.runtime import AFTER_AUTOGRAD, run_below
from pyaten.dispatch import registry
from pyaten.dispatch.keys import parse_dispatch_key

__all__ = ["register_autograd"]

_KEEP: list = []


def register_autograd(
    op: Any, backward: Callable, /, *, setup_context: Callable | None = None, lib: Any = None
) -> None:
    """Give the Library-defined operator `op` ("ns::name[.overload]" or a handle) a backward."""
    name = op if isinstance(op, str) else getattr(op, "_qualified", None) or str(op)
    if "::" not in name:
        raise ValueError(f"register_autograd(op): expected 'ns::name', got {name!r}")
    entry = registry.get_operator(name)
    if entry is None or entry.schema is None:
        raise RuntimeError(f"register_autograd(): operator {name} was not defined")
    op_name = entry.name.split("::", 1)[1].split(".")[0]

    def forward(below: Callable, *args: Any) -> Any:
        return run_below(below, *args)

    def setup(ctx: Any, inputs: tuple, output: Any) -> None:
        if setup_context is not None:
            setup_context(ctx, inputs[1:], output)

    def backward_all(ctx: Any, *grads: Any) -> Any:
        result = backward(ctx, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        return (None, *result)

    custom = type(
        f"{op_name}",
        (Function,),
        {
            "forward": staticmethod(forward),
            "setup_context": staticmethod(setup),
            "backward": staticmethod(backward_all),
        },
    )

    def kernel(below: Callable, *args: Any) -> Any:
        return custom.apply(below, *args)

    kernel.below_mask = AFTER_AUTOGRAD
    handle = registry.register_kernel(
        entry.name, parse_dispatch_key("Autograd"), kernel,
        debug=f"registered by register_autograd for {entry.name}",
    )
    (lib._handles if lib is not None and hasattr(lib, "_handles") else _KEEP).append(handle)
