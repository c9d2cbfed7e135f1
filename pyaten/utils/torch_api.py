"""PyTorch's public names, and the AttributeError for those pyaten does not have yet.

`pyaten/_torch_api.json` lists the public names of `torch`, `torch.Tensor` and the other
namespaces docs/coverage.md covers; `tools/coverage.py` writes it from PyTorch, so pyaten
needs no torch to read it. A name in that list that pyaten lacks raises
"pyaten does not implement torch.X yet; see docs/coverage.md"; any other missing name keeps
Python's usual message.

Note: why Tensor gets placeholders and not `__getattr__`
    A class that defines `__getattr__` loses CPython 3.11's specialised attribute loads for
    *every* attribute of its instances, not just the missing ones: property reads measured
    about 30% slower and a small `t.add(t)` about 13% (`benchmarks/bench_torch_api.py`).
    So instead of hooking failed lookups, `install_placeholders` puts a small non-data
    descriptor on `Tensor` for each `torch.Tensor` name it lacks: reading one raises the
    AttributeError (so `hasattr` is False), an instance attribute of the same name still
    wins, and attaching a real method later simply replaces it. Modules have no such cost:
    `pyaten.__getattr__` runs only when a lookup fails.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "_torch_api.json"
SEE = "see docs/coverage.md"


@functools.cache
def public_names(namespace: str) -> frozenset[str]:
    """PyTorch's public names in `namespace` ("torch", "torch.Tensor", ...), of every kind;
    empty when the list or the namespace is absent."""
    try:
        kinds = json.loads(DATA.read_text())["namespaces"].get(namespace, {})
    except (OSError, ValueError, KeyError):
        return frozenset()
    return frozenset(name for names in kinds.values() for name in names)


def not_implemented(qualified_name: str) -> AttributeError:
    """The error for a PyTorch name pyaten lacks, e.g. `torch.linalg`."""
    return AttributeError(f"pyaten does not implement {qualified_name} yet; {SEE}")


def module_getattr(module_name: str, namespace: str, name: str) -> object:
    """The body of a pyaten module's `__getattr__` (reached only when a lookup fails).

    A PyTorch name that is a subpackage of the module is imported on first use; another
    PyTorch name raises `not_implemented`; anything else, Python's usual AttributeError."""
    module = sys.modules[module_name]
    if name in public_names(namespace):
        submodule = f"{module_name}.{name}"
        if name.isidentifier() and importlib.util.find_spec(submodule) is not None:
            return importlib.import_module(submodule)
        raise not_implemented(f"{namespace}.{name}")
    raise AttributeError(f"module {module_name!r} has no attribute {name!r}", name=name, obj=module)


class MissingAttribute:
    """Stands on a class for a PyTorch attribute it lacks: reading it raises (see the Note)."""

    __slots__ = ("qualified_name",)

    def __init__(self, qualified_name: str) -> None:
        self.qualified_name = qualified_name

    def __get__(self, instance: object, owner: type | None = None) -> object:
        raise not_implemented(self.qualified_name)

    def __repr__(self) -> str:
        return f"<not implemented: {self.qualified_name}>"


def install_placeholders(cls: type, namespace: str) -> list[str]:
    """Put a `MissingAttribute` on `cls` for each of `namespace`'s names it lacks; hide them
    from `dir()`. Returns the names, sorted."""
    missing = sorted(name for name in public_names(namespace) if not hasattr(cls, name))
    for name in missing:
        setattr(cls, name, MissingAttribute(f"{namespace}.{name}"))
    if missing and "__dir__" not in vars(cls):
        cls.__dir__ = _dir_without_placeholders
    return missing


def _dir_without_placeholders(self: object) -> list[str]:
    own = getattr(self, "__dict__", {})
    return [
        name for name in object.__dir__(self)
        if name in own or not isinstance(_class_attribute(type(self), name), MissingAttribute)
    ]


def _class_attribute(cls: type, name: str) -> object:
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return None
