"""From native-function records to the source of one Python module: wrappers, registrations,
bindings.

The generated module (written to `pyaten/_generated/`, see `pyaten.native.loader`) holds:

1. structured wrappers: per structured group and backend key, the functional, in-place and
   out wrappers around one `meta` and one `impl` (see Note: structured wrappers);
   plus, per group, the CompositeExplicitAutogradNonFunctional functional/in-place kernels
   PyTorch generates (meta, then the out op) for keys with no kernel of their own;
2. autogen kernels: the variants listed under `autogen:`, out ones built from the functional
   op (factory options taken from `out`), functional ones from the in-place op; and the
   BackendSelect kernels of ops taking tensor options (backend from `device`, redispatch);
3. `REGISTRATIONS`: every (operator, dispatch key, kernel) to register, with the kernel names
   the registration needs so a missing kernel is reported, not crashed on;
4. bindings: one function per Python name (`add`, `Tensor_add`, `Operator___add__`), written by
   `pyaten.codegen.gen_bindings`, and `DECLARATIONS`, what the loader needs of each record.

Every function here is pure: records in, text out.

Note: structured wrappers
    PyTorch's structured kernels split an op into `meta` (shapes, dtypes, output allocation
    or checks) and `impl` (compute into the outputs meta chose). The wrapper kind decides what
    "set the output" means: functional allocates, in-place checks against `self`, out resizes
    `out` and, where `out` cannot be written directly, hands `impl` a proxy that is copied back.
    The decision lives in a `StructuredMeta` object (`pyaten.native.structured`) created by
    the wrapper and passed to both functions. A `Meta` registration runs `meta` only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyaten.codegen import naming
from pyaten.codegen.gen_bindings import (
    BINARY_DUNDERS,
    UNARY_DUNDERS,
    gen_binding,
    gen_dunder,
    gen_unary_dunder,
)
from pyaten.codegen.python_signature import PythonSignature, group_signatures
from pyaten.schema.model import (
    FunctionSchema,
    OperatorName,
    SchemaKind,
)


@dataclass
class Registration:
    """One kernel to register: `kernel` is a global of the generated module or a kernel name."""

    operator: str
    key: str
    kernel: str
    needs: tuple[str, ...]
    kind: str  # "structured", "native", "autogen"
    source: str  # where it was declared (file:line)


@dataclass
class GeneratedOp:
    """What was generated for one overload: for `pyaten codegen show`."""

    name: str
    chunks: list[str] = field(default_factory=list)


@dataclass
class Generated:
    source: str
    per_op: dict[str, GeneratedOp]
    registrations: list[Registration]


def _q(name: OperatorName, namespace: str) -> str:
    ns = name.namespace or namespace
    return f"{ns}::{name.name}.{name.overload}" if name.overload else f"{ns}::{name.name}"


def _short(name: OperatorName) -> str:
    return f"{name.name}.{name.overload}" if name.overload else name.name


def _params(schema: FunctionSchema) -> list[str]:
    return [naming.pyident(a.name) for a in schema.arguments]


def _loc(fn: Any) -> str:
    loc = getattr(fn, "loc", None)
    return f"{loc.path}:{loc.line}" if loc is not None else "<unknown>"


# --- structured wrappers ------------------------------------------------------------------------


def _meta_base(out_fn: Any) -> str:
    """The class of the wrapper's meta object: `structured_inherits: TensorIteratorBase` is
    TensorIteratorMeta; another name is a StructuredMeta subclass registered with @native."""
    inherits = getattr(out_fn, "structured_inherits", None)
    if inherits == "TensorIteratorBase":
        return "TensorIteratorMeta"
    return inherits if inherits else "StructuredMeta"


def _precomputed_call(out_fn: Any, out_schema: FunctionSchema) -> tuple[str, list[str]]:
    """The impl's argument list: out-schema order with precomputed replacements."""
    pre = getattr(out_fn, "precomputed", None)
    args: list[str] = []
    replaced = dict(pre.replace) if pre is not None else {}
    for arg in out_schema.arguments:
        if arg.is_out:
            continue
        if arg.name in replaced:
            for new in replaced[arg.name]:
                new_name = new.split()[-1]
                args.append(f"pre[{new_name!r}]")
        else:
            args.append(naming.pyident(arg.name))
    if pre is not None:
        for extra in pre.add:
            args.append(f"pre[{extra.split()[-1]!r}]")
    return ("pre = " if pre is not None else ""), args


def _wrapper_parts(fn: Any, out_fn: Any, functional: Any) -> tuple:
    """What every wrapper of a structured group starts from: its schema, the out variant's
    schema, the meta function's name, the wrapper's parameters, meta's arguments, the number
    of outputs."""
    schema: FunctionSchema = fn.func
    out_schema: FunctionSchema = out_fn.func
    meta = naming.meta_name(functional.func.name if functional is not None else out_schema.name)
    meta_args = [naming.pyident(a.name) for a in schema.arguments if not a.is_out]
    return schema, out_schema, meta, _params(schema), meta_args, len(out_schema.out)


def gen_structured_wrapper(
    kind: str, key: str, fn: Any, out_fn: Any, functional: Any, impl_name: str | None
) -> str:
    """Source of one wrapper. `kind` is functional/inplace/out; `impl_name` None runs meta only."""
    schema, out_schema, meta, params, meta_args, n_out = _wrapper_parts(fn, out_fn, functional)
    wrapper = naming.wrapper_name(key, schema.name)
    if kind == "functional":
        preset = "(" + "None, " * n_out + ")"
    elif kind == "inplace":
        preset = "(self,)"
    else:
        preset = "(" + "".join(f"{naming.pyident(a.name)}, " for a in schema.out) + ")"
    base = _meta_base(out_fn)
    assign, impl_args = _precomputed_call(out_fn, out_schema)
    lines = [
        f"def {wrapper}({', '.join(params)}):",
        f'    """{_short(schema.name)}: {kind} wrapper of structured {_short(out_schema.name)}'
        f' ({key}; {"meta + " + impl_name if impl_name else "meta only"})."""',
        f"    op = {base}({kind!r}, {preset}, {_short(schema.name)!r}, {key!r})",
        f"    {assign}{meta}(op, {', '.join(meta_args)})",
    ]
    if impl_name is not None:
        outs = ", ".join(f"op.outputs[{i}]" for i in range(n_out))
        lines.append("    if TRACE.ACTIVE:")
        lines.append(f"        op.note_impl({impl_name!r})")
        lines.append(f"    {impl_name}(op, {', '.join(impl_args + [outs])})")
        lines.append("    op.finish()")
    if kind == "functional":
        result = "op.outputs[0]" if n_out == 1 else \
            "(" + ", ".join(f"op.outputs[{i}]" for i in range(n_out)) + ")"
    elif kind == "inplace":
        result = "self"
    else:
        result = naming.pyident(schema.out[0].name) if n_out == 1 else \
            "(" + ", ".join(naming.pyident(a.name) for a in schema.out) + ")"
    lines.append(f"    return {result}")
    return "\n".join(lines) + "\n"


DEFAULT_BACKEND = "CompositeExplicitAutogradNonFunctional"


def gen_default_backend_wrapper(kind: str, fn: Any, out_fn: Any, functional: Any) -> str:
    """Source of the functional/in-place kernel PyTorch generates for every structured group
    under CompositeExplicitAutogradNonFunctional: run `meta` to allocate (or check) the
    output, then call the out variant through the dispatcher. It serves the keys with no
    kernel of their own: Undefined (a call with no tensors, `cat([])`) and other backends."""
    schema, out_schema, meta, params, meta_args, n_out = _wrapper_parts(fn, out_fn, functional)
    wrapper = naming.wrapper_name(DEFAULT_BACKEND, schema.name)
    preset = "(" + "None, " * n_out + ")" if kind == "functional" else "(self,)"
    outs = [f"op.outputs[{i}]" for i in range(n_out)]
    call_args = [naming.pyident(a.name) for a in out_schema.arguments if not a.is_out] + outs
    lines = [
        f"def {wrapper}({', '.join(params)}):",
        f'    """{_short(schema.name)}: {kind} default-backend kernel of structured '
        f'{_short(out_schema.name)} (meta, then the out variant)."""',
        f"    op = {_meta_base(out_fn)}({kind!r}, {preset}, {_short(schema.name)!r}, "
        f"{DEFAULT_BACKEND!r})",
        f"    {meta}(op, {', '.join(meta_args)})",
        f"    {naming.entry_global(out_schema.name)}.call({', '.join(call_args)})",
    ]
    if kind == "inplace":
        lines.append("    return self")
    else:
        lines.append(f"    return {outs[0]}" if n_out == 1 else f"    return ({', '.join(outs)},)")
    return "\n".join(lines) + "\n"


# --- BackendSelect kernels ----------------------------------------------------------------------

_TENSOR_OPTIONS = ("dtype", "layout", "device", "pin_memory")


def needs_backend_select(fn: Any) -> bool:
    """PyTorch's rule: an op taking tensor options (`dtype, layout, device, pin_memory`), other
    than the `*_like` and `new_*` families, gets a BackendSelect kernel."""
    schema: FunctionSchema = fn.func
    name = schema.name.name
    if name.endswith("_like") or name.startswith("new_") or schema.kind is SchemaKind.out:
        return False
    names = {a.name for a in schema.arguments}
    return all(option in names for option in _TENSOR_OPTIONS)


def gen_backend_select(fn: Any) -> str:
    """Source of a BackendSelect kernel: the backend comes from the `device` argument (a
    factory has no tensor to take it from), then the call is redispatched below
    BackendSelect, like torchgen's RegisterBackendSelect kernels."""
    schema: FunctionSchema = fn.func
    params = _params(schema)
    tensors = [naming.pyident(a.name) for a in schema.arguments
               if str(a.type) in ("Tensor", "Tensor?") and not a.is_out]
    tensor_tuple = f", ({', '.join(tensors)},)" if tensors else ""
    lines = [
        f"def {naming.wrapper_name('BackendSelect', schema.name)}({', '.join(params)}):",
        f'    """{_short(schema.name)}: BackendSelect kernel (backend from `device`)."""',
        f"    keys = backend_select_keys(device{tensor_tuple})",
        f"    return {naming.entry_global(schema.name)}.redispatch(keys, {', '.join(params)})",
    ]
    return "\n".join(lines) + "\n"


# --- autogen out kernels ----------------------------------------------------------------------


def gen_autogen_kernel(fn: Any, source_fn: Any, namespace: str) -> str:
    """Out kernel of an `autogen` entry: run the functional op, resize `out`, copy into it."""
    schema: FunctionSchema = fn.func
    src: FunctionSchema = source_fn.func
    name = naming.autogen_name(schema.name)
    params = _params(schema)
    outs = [naming.pyident(a.name) for a in schema.out]
    have = {a.name for a in schema.arguments}
    # An out schema drops a factory's options: they come from `out`, as in torchgen.
    from_out = {"dtype": f"{outs[0]}.dtype", "layout": f"{outs[0]}.layout",
                "device": f"{outs[0]}.device", "pin_memory": "None"}
    call_args = [naming.pyident(a.name) if a.name in have else from_out[a.name]
                 for a in src.arguments if not a.is_out]
    if src.kind is SchemaKind.inplace:
        # Built from an in-place op: run it on a copy of self.
        call = ("CLONE(self)", ", ".join(["tmp"] + call_args[1:]))
        body = [
            f"    tmp = {call[0]}",
            f"    result = {naming.entry_global(src.name)}.call({call[1]})",
        ]
    else:
        body = [f"    result = {naming.entry_global(src.name)}.call({', '.join(call_args)})"]
    lines = [
        f"def {name}({', '.join(params)}):",
        f'    """{_short(schema.name)}: autogen out variant of {_short(src.name)} '
        f'(compute, resize out, copy)."""',
        *body,
    ]
    if len(outs) == 1:
        lines.append(f"    return copy_to_out(result, {outs[0]}, {_short(schema.name)!r})")
    else:
        lines.append(
            "    return tuple(copy_to_out(r, o, "
            f"{_short(schema.name)!r}) for r, o in zip(result, ({', '.join(outs)},)))"
        )
    return "\n".join(lines) + "\n"


def gen_autogen_functional(fn: Any, source_fn: Any) -> str:
    """Functional kernel of an `autogen` entry made from an in-place op (`zero` from `zero_`):
    run the in-place op on a copy of self and return the copy."""
    schema: FunctionSchema = fn.func
    src: FunctionSchema = source_fn.func
    params = _params(schema)
    call_args = ["tmp"] + [naming.pyident(a.name) for a in src.arguments[1:]]
    lines = [
        f"def {naming.autogen_name(schema.name)}({', '.join(params)}):",
        f'    """{_short(schema.name)}: autogen functional variant of {_short(src.name)} '
        f'(copy self, mutate the copy)."""',
        "    tmp = CLONE(self)",
        f"    {naming.entry_global(src.name)}.call({', '.join(call_args)})",
        "    return tmp",
    ]
    return "\n".join(lines) + "\n"


# --- the module ---------------------------------------------------------------------------------


def python_names(functions: Iterable[Any]) -> tuple[dict[str, list[FunctionSchema]],
                                                    dict[str, list[FunctionSchema]]]:
    """Schemas per Python function name and per Tensor method name."""
    funcs: dict[str, list[FunctionSchema]] = {}
    methods: dict[str, list[FunctionSchema]] = {}
    for fn in functions:
        schema = fn.func
        name = schema.name.name
        variants = fn.variants
        is_out = schema.kind is SchemaKind.out
        if getattr(fn, "generated_from", None) is not None:
            continue  # autogen variants are not exposed to Python, as in PyTorch
        if "function" in variants or is_out:
            funcs.setdefault(name, []).append(schema)
        if "method" in variants and schema.self_arg is not None:
            methods.setdefault(name, []).append(schema)
    # An out variant with no visible functional sibling keeps its own name only if declared so.
    return funcs, methods


HEADER = '''"""Generated by pyaten.codegen from {path}. Do not edit: edit the YAML or the generator.

`pyaten codegen show NAME` prints the part of this module that belongs to one operator.
"""
# ruff: noqa
from pyaten.native.gen_support import (
    TRACE, Tensor, TensorIteratorMeta, StructuredMeta, ArgumentParseError, bind_and_call,
    copy_to_out, wrapped_number, CLONE, K, DType, Size, backend_select_keys,
)
'''


def generate(functions: Sequence[Any], path: str, namespace: str = "aten") -> Generated:
    """Generate the module for `functions` (records with autogen entries already expanded)."""
    by_name: dict[tuple[str, str], Any] = {
        (fn.func.name.name, fn.func.name.overload): fn for fn in functions
    }
    per_op: dict[str, GeneratedOp] = {}
    registrations: list[Registration] = []
    kernel_names: set[str] = set()
    chunks: list[str] = [HEADER.format(path=path)]
    defs: list[str] = []

    def record(name: OperatorName, text: str) -> None:
        per_op.setdefault(_short(name), GeneratedOp(_short(name))).chunks.append(text)

    # Structured groups: out entries with `structured: True` and their delegates.
    delegates: dict[tuple[str, str], list[Any]] = {}
    for fn in functions:
        d = fn.structured_delegate
        if d is not None:
            delegates.setdefault((d.name, d.overload), []).append(fn)
    entry_globals: set[OperatorName] = set()
    for fn in functions:
        schema = fn.func
        loc = _loc(fn)
        if needs_backend_select(fn):
            text = gen_backend_select(fn)
            defs.append(text)
            record(schema.name, text)
            entry_globals.add(schema.name)
            registrations.append(Registration(
                _q(schema.name, namespace), "BackendSelect",
                naming.wrapper_name("BackendSelect", schema.name), (), "backend_select", loc))
        if fn.structured:
            members = delegates.get((schema.name.name, schema.name.overload), [])
            functional = next((m for m in members if m.func.kind is SchemaKind.functional), None)
            meta = naming.meta_name(functional.func.name if functional else schema.name)
            kernel_names.add(meta)
            if _meta_base(fn) not in ("TensorIteratorMeta", "StructuredMeta"):
                kernel_names.add(_meta_base(fn))
            keys = dict(fn.dispatch)
            kernel_names.update(keys.values())
            # Meta gets meta-only wrappers unless the YAML names a Meta kernel itself.
            targets = [(k, v) for k, v in keys.items()]
            if "Meta" not in keys:
                targets.append(("Meta", None))
            for key, impl in targets:
                variants = [("out", fn)] + [
                    ("functional" if m.func.kind is SchemaKind.functional else "inplace", m)
                    for m in members
                    if m.func.kind in (SchemaKind.functional, SchemaKind.inplace)
                ]
                for kind, member in variants:
                    text = gen_structured_wrapper(kind, key, member, fn, functional, impl)
                    defs.append(text)
                    record(member.func.name, text)
                    needs = (meta,) + ((impl,) if impl else ())
                    inherits = _meta_base(fn)
                    if inherits not in ("TensorIteratorMeta", "StructuredMeta"):
                        needs = (inherits,) + needs
                    registrations.append(Registration(
                        _q(member.func.name, namespace), key,
                        naming.wrapper_name(key, member.func.name), needs, "structured",
                        _loc(member)))
            if DEFAULT_BACKEND not in keys:
                for member in members:
                    kind = {SchemaKind.functional: "functional",
                            SchemaKind.inplace: "inplace"}.get(member.func.kind)
                    if kind is None:
                        continue
                    text = gen_default_backend_wrapper(kind, member, fn, functional)
                    defs.append(text)
                    record(member.func.name, text)
                    entry_globals.add(schema.name)
                    registrations.append(Registration(
                        _q(member.func.name, namespace), DEFAULT_BACKEND,
                        naming.wrapper_name(DEFAULT_BACKEND, member.func.name),
                        tuple(n for n in (_meta_base(fn), meta)
                              if n not in ("TensorIteratorMeta", "StructuredMeta")),
                        "structured", _loc(member)))
            continue
        if fn.structured_delegate is not None:
            # Its CPU/Meta kernels come from the group; other keys may still be listed.
            for key, kernel in fn.dispatch.items():
                kernel_names.add(kernel)
                registrations.append(Registration(
                    _q(schema.name, namespace), key, kernel, (kernel,), "native", loc))
            continue
        generated_from = getattr(fn, "generated_from", None)
        if generated_from is not None and schema.kind is SchemaKind.out:
            source = _autogen_source(fn, by_name)
            if source is not None:
                text = gen_autogen_kernel(fn, source, namespace)
                defs.append(text)
                record(schema.name, text)
                entry_globals.add(source.func.name)
                registrations.append(Registration(
                    _q(schema.name, namespace), "CompositeExplicitAutograd",
                    naming.autogen_name(schema.name), (), "autogen", loc))
            continue
        if generated_from is not None and schema.kind is SchemaKind.functional:
            source = by_name.get((generated_from.name, generated_from.overload))
            if source is not None and source.func.kind is SchemaKind.inplace:
                text = gen_autogen_functional(fn, source)
                defs.append(text)
                record(schema.name, text)
                entry_globals.add(source.func.name)
                registrations.append(Registration(
                    _q(schema.name, namespace), "CompositeExplicitAutograd",
                    naming.autogen_name(schema.name), (), "autogen", loc))
                continue
        dispatch = dict(fn.dispatch)
        if not dispatch:
            dispatch = {"CompositeImplicitAutograd": naming.default_kernel_name(schema.name)}
        for key, kernel in dispatch.items():
            kernel_names.add(kernel)
            registrations.append(Registration(
                _q(schema.name, namespace), key, kernel, (kernel,), "native", loc))

    # Kernel globals, resolved from the @native registry when the module is imported.
    chunks.append("# Kernels named in the YAML, from the @native registry (None when missing).")
    for name in sorted(kernel_names):
        chunks.append(f"{name} = K.get({name!r})")
    chunks.append("")

    # Bindings.
    funcs, methods = python_names(functions)
    binding_defs: list[str] = []
    binding_tables: list[tuple[str, str, bool]] = []
    for name, schemas in sorted(funcs.items()):
        sigs = group_signatures(name, schemas, method=False)
        if not sigs:
            continue
        text = gen_binding(name, sigs, method=False)
        binding_defs.append(text)
        binding_tables.append((naming.binding_table(name, False), name, False))
        for s in sigs:
            for sch in (s.functional, s.out_variant):
                if sch is not None:
                    entry_globals.add(sch.name)
                    record(sch.name, text)
    method_sigs: dict[str, list[PythonSignature]] = {}
    for name, schemas in sorted(methods.items()):
        sigs = group_signatures(name, schemas, method=True)
        if not sigs:
            continue
        method_sigs[name] = sigs
        text = gen_binding(name, sigs, method=True)
        binding_defs.append(text)
        binding_tables.append((naming.binding_table(name, True), name, True))
        for s in sigs:
            if s.functional is not None:
                entry_globals.add(s.functional.name)
                record(s.functional.name, text)
    dunders: list[str] = []
    for dunder, target in BINARY_DUNDERS.items():
        if target in method_sigs:
            text = gen_dunder(dunder, target, method_sigs[target])
            binding_defs.append(text)
            dunders.append(dunder)
    for dunder, target in UNARY_DUNDERS.items():
        if target in method_sigs:
            binding_defs.append(gen_unary_dunder(dunder, target))
            dunders.append(dunder)

    chunks.append("# Operator entries, filled by setup() once the operators are defined.")
    for name in sorted(entry_globals, key=_short):
        chunks.append(f"{naming.entry_global(name)} = None")
    chunks.append("")
    chunks.append("# Parsed signatures per Python name, filled by setup().")
    for table, _, _ in binding_tables:
        chunks.append(f"{table} = None")
    chunks.append("")
    chunks.extend(defs)
    chunks.extend(binding_defs)

    chunks.append("ENTRIES = {")
    for name in sorted(entry_globals, key=_short):
        chunks.append(f"    {naming.entry_global(name)!r}: {_q(name, namespace)!r},")
    chunks.append("}")
    chunks.append("BINDINGS = [")
    for table, name, method in binding_tables:
        chunks.append(f"    ({table!r}, {name!r}, {method!r}),")
    chunks.append("]")
    chunks.append("FUNCTIONS = [" + ", ".join(repr(n) for n, _ in sorted(funcs.items())) + "]")
    chunks.append("METHODS = [" + ", ".join(repr(n) for n in sorted(method_sigs)) + "]")
    chunks.append("DUNDERS = [" + ", ".join(repr(d) for d in dunders) + "]")
    chunks.append("# (schema, variants, tags, file, line, generated from): the loader's records.")
    chunks.append("DECLARATIONS = [")
    for fn in functions:
        loc = getattr(fn, "loc", None)
        origin = getattr(fn, "generated_from", None)
        chunks.append(
            f"    ({str(fn.func)!r}, {sorted(fn.variants)!r}, {sorted(fn.tags)!r}, "
            f"{loc.path if loc else '<unknown>'!r}, {loc.line if loc else 0!r}, "
            f"{str(origin) if origin is not None else None!r}),"
        )
    chunks.append("]")
    chunks.append("REGISTRATIONS = [")
    for r in registrations:
        chunks.append(f"    ({r.operator!r}, {r.key!r}, {r.kernel!r}, {r.needs!r}, {r.kind!r}, "
                      f"{r.source!r}),")
    chunks.append("]")
    return Generated("\n".join(chunks) + "\n", per_op, registrations)


def _autogen_source(fn: Any, by_name: dict[tuple[str, str], Any]) -> Any:
    """The entry an autogen out variant is computed from: the functional sibling if declared,
    else the entry that listed it."""
    target = fn.func.functional_signature()
    for other in by_name.values():
        if other is fn or other.func.kind is SchemaKind.out:
            continue
        if other.func.kind is SchemaKind.functional and other.func.functional_signature() == target:
            return other
    origin = fn.generated_from
    return by_name.get((origin.name, origin.overload))
