"""Random factories inside vmap: kernels on the FuncTorchVmapMode key.

A factory such as `pyaten.rand(3)` has no tensor argument, so no BatchedTensor sees it. As
in PyTorch (BatchRulesRandomness), vmap puts FuncTorchVmapMode in the thread's included set
while it runs, and the random factories have a kernel on that key that follows the
innermost vmap's `randomness`: "error" raises, "same" draws once for every sample,
"different" draws a batch and returns it as a BatchedTensor of that level.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyaten
from pyaten.dispatch.tls import ExcludeDispatchKeyGuard
from pyaten.func._batched import BatchedTensor, current_levels
from pyaten.func._rules import _RANDOM_ERROR
from pyaten.library import Library

__all__ = ["RANDOM_FACTORIES"]

VMAP_MODE_KEY = "FuncTorchVmapMode"
# overload -> index of its `size` argument
RANDOM_FACTORIES = {
    "rand": 0, "rand.generator": 0, "randn": 0, "randn.generator": 0, "randint": 1,
    "randint.generator": 1, "randint.low": 2, "randint.low_generator": 2,
    "normal.float_float": 2,
}


def _kernel(func: Any, size_index: int) -> Callable:
    arguments = func._schema.arguments
    positional = sum(1 for a in arguments if not a.kwarg_only)
    keywords = [a.name for a in arguments[positional:]]

    def kernel(*boxed: Any) -> Any:
        # a kernel receives every argument in schema order; the handle takes keywords
        args = boxed[:positional]
        kwargs = dict(zip(keywords, boxed[positional:], strict=False))
        levels = current_levels()
        with ExcludeDispatchKeyGuard(VMAP_MODE_KEY):
            if not levels:
                return func(*args, **kwargs)
            top = levels[-1]
            if top.randomness == "error":
                raise RuntimeError(_RANDOM_ERROR)
            if top.randomness == "same":
                return func(*args, **kwargs)
            args = list(args)
            args[size_index] = [top.batch_size, *args[size_index]]
            return BatchedTensor(func(*args, **kwargs), top.level)

    return kernel


_LIBRARY = Library("aten", "IMPL")
for _name, _index in RANDOM_FACTORIES.items():
    _packet, _, _overload = _name.partition(".")
    _func = getattr(getattr(pyaten.ops.aten, _packet), _overload or "default")
    _LIBRARY.impl(_name, _kernel(_func, _index), VMAP_MODE_KEY)
