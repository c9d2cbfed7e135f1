"""PyTorch's public names, and the AttributeError for those pyaten does not have yet.

`pyaten/_torch_api.json` lists the public names of `torch`, `torch.Tensor` and the other
namespaces docs/coverage.md covers; `tools/coverage.py` writes it from PyTorch, so pyaten
needs no torch to read it. A name in that list that pyaten lacks raises
"pyaten does not implement torch.X yet; see docs/coverage.md"; any other missing name keeps
Python's usual message. The same goes for submodules: `import pyaten.utils.tensorboard`,
when pyaten has none and PyTorch has `torch.utils.tensorboard`, raises ModuleNotFoundError
with that message (a finder placed last on `sys.meta_path`, so it is asked only about
modules no other finder found, and reads the list only then).

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
        if name.isidentifier() and _module_exists(submodule):
            return importlib.import_module(submodule)
        raise not_implemented(f"{namespace}.{name}")
    raise AttributeError(f"module {module_name!r} has no attribute {name!r}", name=name, obj=module)


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # the finder below: PyTorch has it, pyaten does not
        return False


@functools.cache
def torch_submodules() -> frozenset[str]:
    """PyTorch's public submodules (`torch.utils.tensorboard`, ...), from the list
    tools/coverage.py writes; empty when the list is absent."""
    try:
        names = json.loads(DATA.read_text()).get("submodules", [])
    except (OSError, ValueError):
        return frozenset()
    return frozenset(names)


class MissingTorchModules:
    """Last on `sys.meta_path`: `import pyaten.X`, where no other finder found `pyaten.X`
    and PyTorch has `torch.X`, raises ModuleNotFoundError with the coverage pointer."""

    @staticmethod
    def find_spec(fullname: str, path: object = None, target: object = None) -> None:
        if not fullname.startswith("pyaten."):
            return None
        torch_name = "torch" + fullname[len("pyaten"):]
        if torch_name in torch_submodules():
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: pyaten does not implement {torch_name} yet; "
                f"{SEE}",
                name=fullname,
            )
        return None

    @staticmethod
    def invalidate_caches() -> None:
        pass


def install_module_finder() -> None:
    """Put `MissingTorchModules` last on `sys.meta_path` (once)."""
    if not any(f is MissingTorchModules for f in sys.meta_path):
        sys.meta_path.append(MissingTorchModules)  # type: ignore[arg-type]


install_module_finder()


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
