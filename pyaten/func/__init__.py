"""torch.func: composable function transforms (docs/func.md).

`vmap` maps a function over a batch (pyaten/func/_vmap.py, with BatchedTensor and the
batching rules in _batched.py, _rules.py and _rule_table.py, run from the FuncTorchBatched
key by _key.py); `grad`, `vjp`, `jvp`,
`jacrev`, `jacfwd`, `hessian` and `linearize` are compositions over autograd
(_transforms.py); `functional_call` and `stack_module_state` run a module with given
parameters (_functional_call.py).
"""

from pyaten._functionalize import functionalize as functionalize  # docs/functionalize.md

# registrations: rules, RNG, the key, autograd.Function under the transforms
from pyaten.func import _autograd_function, _key, _random, _rule_table  # noqa: F401
from pyaten.func._functional_call import functional_call, stack_module_state
from pyaten.func._rules import batching_coverage
from pyaten.func._transforms import (
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    vjp,
)
from pyaten.func._vmap import vmap

__all__ = [
    "vmap",
    "grad",
    "grad_and_value",
    "vjp",
    "jvp",
    "linearize",
    "jacrev",
    "jacfwd",
    "hessian",
    "functional_call",
    "stack_module_state",
    "batching_coverage",
]
