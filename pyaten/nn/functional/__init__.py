"""pyaten.nn.functional: PyTorch's `torch.nn.functional`, with its argument names, defaults,
reductions, errors and results (docs/nn-functional.md).

One module per family; this package re-exports their public names, each behind PyTorch's
`__torch_function__` check (`_torch_function.overridable`, docs/torch-function.md). A name's
checked form is built on its first lookup (the module `__getattr__` below) and kept: building
all of them at `import pyaten` cost about 50 ms (issue 36).
"""

from typing import Any

from pyaten.nn.functional import _activation, _conv, _loss, _norm, _sampling
from pyaten.nn.functional._torch_function import install as _install_torch_function

__all__ = (
    _activation.__all__ + _conv.__all__ + _loss.__all__ + _norm.__all__ + _sampling.__all__
)

# Where each public name lives; its checked form joins this module's globals when first read.
_FAMILY_OF = {
    name: family
    for family in (_activation, _conv, _loss, _norm, _sampling)
    for name in family.__all__
}


def __getattr__(name: str) -> Any:
    family = _FAMILY_OF.get(name)
    if family is None:
        raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
    namespace = {name: getattr(family, name)}
    _install_torch_function(namespace, [name])
    # setdefault: two threads asking at once both get the one that was kept
    return globals().setdefault(name, namespace[name])


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
