"""Names of generated things, kept apart from the code that emits them.

See docs/codegen.md for the rules; everything that names a kernel, a wrapper or a binding
goes through here so the rule lives in one place.
"""

from __future__ import annotations

import keyword

from pyaten.schema.model import OperatorName


def pyident(name: str) -> str:
    """An argument name usable as a Python parameter: `from` -> `from_`."""
    return name + "_" if keyword.iskeyword(name) else name


def ident(name: OperatorName) -> str:
    """`add_.Tensor` -> `add__Tensor`; `exp` -> `exp`: a Python identifier for one overload."""
    return f"{name.name}_{name.overload}" if name.overload else name.name


def default_kernel_name(name: OperatorName) -> str:
    """The kernel an entry without `dispatch:` uses (CompositeImplicitAutograd)."""
    return ident(name)


def meta_name(functional: OperatorName) -> str:
    """`meta_<functional name>[_<overload>]`: the meta function of a structured group."""
    return "meta_" + ident(functional)


def wrapper_name(key: str, name: OperatorName) -> str:
    """`wrapper_CPU_add_Tensor`: a structured wrapper registered for one dispatch key."""
    return f"wrapper_{key}_{ident(name)}"


def fast_name(wrapper: str) -> str:
    """`fast_wrapper_CPU_add_Tensor`: the optional fast path a CPU wrapper tries first."""
    return "fast_" + wrapper


def autogen_name(name: OperatorName) -> str:
    """`autogen_add_Scalar_out`: the generated out kernel of an `autogen` entry."""
    return "autogen_" + ident(name)


def entry_global(name: OperatorName) -> str:
    """`E_add_Tensor`: the module global holding the operator entry of one overload."""
    return "E_" + ident(name)


def direct_global(name: OperatorName) -> str:
    """`D_add_Tensor`: the module global holding one overload's direct call from its bindings
    (Note: the direct call, in pyaten/native/gen_support.py)."""
    return "D_" + ident(name)


def binding_name(python_name: str, method: bool) -> str:
    """`add` for `pyaten.add`, `Tensor_add` for the method `Tensor.add`."""
    return f"Tensor_{python_name}" if method else python_name


def binding_table(python_name: str, method: bool) -> str:
    """`B_add` / `B_Tensor_add`: the module global holding the parsed signatures of a name."""
    return "B_" + binding_name(python_name, method)
