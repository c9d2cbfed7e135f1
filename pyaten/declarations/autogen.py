"""Records for the variants an entry's `autogen:` asks for (`foo.out`, `foo_functional`...).

Note: how generated schemas are shaped. These follow PyTorch's conventions so that
generated variants group with the declared ones:
- out from a functional op: TensorOptions arguments dropped, one mutable keyword-only out
  argument per tensor return (`out`, or `out0, out1...`), alias letters the schema does not
  use yet; the returns alias them when every return is a plain Tensor;
- out from an in-place op: `self` loses its annotation and an `out` argument takes it over;
- out from a mutable op: the arguments stay, out arguments are added as for a functional op;
- functional from an in-place or mutable op: annotations dropped, every mutated argument
  that was not returned becomes an extra return named `{arg}_out`; a mutable op's
  functional variant is named `{name}_functional` so the two do not clash as overloads.
Like PyTorch, nothing is generated for functions that bypass the dispatcher
(`manual_cpp_binding`), for views, or for non-core CompositeImplicitAutograd functions.
A generated record carries the `generated` tag, its source in `generated_from`, the
source's location, and a CompositeExplicitAutograd kernel name that codegen provides
(`{name}_{overload}` for out variants, `{name}` for functional ones, `_symint` appended
when the source takes SymInts), as PyTorch does.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import replace
from types import MappingProxyType

from pyaten.declarations.cross_rules import autogen_targets
from pyaten.declarations.grouping import pre_group
from pyaten.declarations.model import NativeFunction
from pyaten.schema.model import (
    Annotation,
    Argument,
    BaseType,
    FunctionSchema,
    OperatorName,
    Return,
    SchemaKind,
)

__all__ = ["generate_autogen", "with_autogen"]

_TENSOR_OPTIONS = ("dtype", "layout", "device", "pin_memory")
_PLAIN_TENSOR = BaseType("Tensor")


def _drop_tensor_options(args: list[Argument]) -> list[Argument]:
    """Without the `dtype, layout, device, pin_memory` run, when all four are there."""
    names = [a.name for a in args]
    n = len(_TENSOR_OPTIONS)
    for i in range(len(names) - n + 1):
        if tuple(names[i : i + n]) == _TENSOR_OPTIONS and args[i].kwarg_only:
            return args[:i] + args[i + n :]
    return args


def _is_view(fn: NativeFunction) -> bool:
    func = fn.func
    if any(r.annotation is not None and not r.annotation.is_write for r in func.returns):
        return True
    if "inplace_view" in fn.tags and func.name.name not in ("resize_", "resize_as_"):
        return True
    return any(
        a.annotation is not None and "*" in a.annotation.alias_set_after for a in func.arguments
    )


def _pytorch_skips(variants: Sequence[NativeFunction]) -> bool:
    """PyTorch generates nothing for manual-binding, view, or non-core composite functions."""
    if all(f.manual_cpp_binding for f in variants):
        return True
    if any(_is_view(f) and f.func.name.name != "set_" for f in variants):
        return True
    is_core = any("core" in f.tags for f in variants)
    return all(f.has_composite_implicit_autograd_kernel for f in variants) and not is_core


def _strip(arg: Argument, **changes: object) -> Argument:
    return replace(arg, annotation=None, **changes)


def _free_letters(func: FunctionSchema) -> list[str]:
    used = {s for a in func.arguments if a.annotation for s in a.annotation.alias_set}
    return [c for c in string.ascii_lowercase if c not in used]


def _out_arguments(func: FunctionSchema) -> tuple[list[Argument], list[Return]]:
    letters = _free_letters(func)
    single = len(func.returns) == 1
    all_plain = all(r.type == _PLAIN_TENSOR for r in func.returns)
    outs: list[Argument] = []
    returns: list[Return] = []
    for i, r in enumerate(func.returns):
        if not r.type.is_tensor_like():
            returns.append(r)
            continue
        ann = Annotation((letters[i],), is_write=True)
        out = Argument("out" if single else f"out{i}", r.type, ann, kwarg_only=True, is_out=True)
        outs.append(out)
        if all_plain:
            returns.append(Return(None, r.type, ann))
    return outs, returns


def _out_schema(func: FunctionSchema, name: OperatorName) -> FunctionSchema:
    kind = func.kind
    if kind is SchemaKind.inplace:
        self_arg = func.self_arg
        args = [_strip(a) if a is self_arg else a for a in func.arguments]
        out = Argument("out", self_arg.type, self_arg.annotation, kwarg_only=True, is_out=True)
        return FunctionSchema(name, tuple(args) + (out,), func.returns)
    outs, returns = _out_arguments(func)
    args = list(func.arguments)
    if kind is SchemaKind.functional:
        args = _drop_tensor_options(args)
    return FunctionSchema(name, tuple(args + outs), tuple(returns))


def _functional_schema(func: FunctionSchema, name: OperatorName) -> FunctionSchema:
    returned = {r.annotation for r in func.returns if r.annotation is not None}
    extra = [
        Return(f"{a.name}_out", a.type)
        for a in func.arguments
        if a.is_write and a.annotation not in returned
    ]
    returns = [Return(r.name, r.type) for r in func.returns]
    args = tuple(_strip(a) for a in func.arguments)
    return FunctionSchema(name, args, tuple(returns + extra))


# When several variants ask for the same name, generate from the one PyTorch prefers.
_SOURCE_PREFERENCE = {SchemaKind.mutable: 0, SchemaKind.inplace: 1, SchemaKind.functional: 2}


def generate_autogen(functions: Sequence[NativeFunction]) -> list[NativeFunction]:
    """New records for every valid `autogen:` name of `functions` not declared already."""
    declared = {(f.func.name.name, f.func.name.overload) for f in functions}
    skipped = {
        id(f)
        for kinds in pre_group(functions).values()
        if _pytorch_skips(list(kinds.values()))
        for f in kinds.values()
    }
    requests: dict[tuple[str, str], tuple[NativeFunction, str, OperatorName]] = {}
    for fn in functions:
        if not fn.autogen or id(fn) in skipped:
            continue
        targets = autogen_targets(fn)
        for name in fn.autogen:
            key = (name.name, name.overload)
            kind = targets.get(key)
            if kind is None or key in declared:
                continue  # reported by cross_rules; nothing sensible to generate
            earlier = requests.get(key)
            rank = _SOURCE_PREFERENCE.get(fn.func.kind, 3)
            if earlier is None or rank < _SOURCE_PREFERENCE.get(earlier[0].func.kind, 3):
                requests[key] = (fn, kind, name)
    return [_generate(fn, kind, name) for fn, kind, name in requests.values()]


def _generate(fn: NativeFunction, kind: str, name: OperatorName) -> NativeFunction:
    op = OperatorName(fn.func.name.namespace, name.name, name.overload)
    func = _out_schema(fn.func, op) if kind == "out" else _functional_schema(fn.func, op)
    # PyTorch names the kernel `{name}_{overload}` for out variants, `{name}` otherwise
    kernel = f"{op.name}_{op.overload}" if kind == "out" and op.overload else op.name
    if any(a.type.is_symint_like() for a in fn.func.arguments):
        kernel += "_symint"
    return NativeFunction(
        func=func,
        loc=fn.loc,
        variants=frozenset({"function"}),
        dispatch=MappingProxyType({"CompositeExplicitAutograd": kernel}),
        dispatch_declared=True,
        tags=frozenset({"generated"}) | (fn.tags & {"nondeterministic_seeded", "view_copy"}),
        generated_from=fn.func.name,
        device_guard=False,
        device_check="NoCheck",
        use_const_ref_for_mutable_tensors=fn.use_const_ref_for_mutable_tensors,
    )


def with_autogen(functions: Sequence[NativeFunction]) -> list[NativeFunction]:
    """`functions` followed by the records their `autogen:` keys generate."""
    return list(functions) + generate_autogen(functions)
