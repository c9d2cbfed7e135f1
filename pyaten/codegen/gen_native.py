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
   `pyaten.codegen.gen_bindings`, with `BINDINGS` (each name's schemas) and `DEFINITIONS`,
   the schemas to define (text, tags, where declared), as torchgen's `m.def(...)` lines.

Every function here is pure: typed records (`NativeFunction`, `NativeFunctionsGroup`) in,
text out. `generate` assembles the module from one part per kind of entry (`emit_*`), each
returning what it adds (`Emitted`).

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
from pathlib import PurePath

from pyaten.codegen import naming
from pyaten.codegen.gen_bindings import (
    BINARY_DUNDERS,
    UNARY_DUNDERS,
    gen_binding,
    gen_dunder,
    gen_unary_dunder,
)
from pyaten.codegen.python_signature import PythonSignature, group_signatures
from pyaten.declarations.model import NativeFunction, NativeFunctionsGroup
from pyaten.schema.model import FunctionSchema, OperatorName, SchemaKind


@dataclass(frozen=True)
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


@dataclass
class Emitted:
    """What one part of the generator adds to the module: function definitions (each with
    the operators it belongs to, for `pyaten codegen show`), registrations, the `@native`
    kernels the module looks up, and the operator entries its functions call."""

    defs: list[tuple[tuple[OperatorName, ...], str]] = field(default_factory=list)
    registrations: list[Registration] = field(default_factory=list)
    kernels: set[str] = field(default_factory=set)
    entries: set[OperatorName] = field(default_factory=set)

    def define(self, text: str, *owners: OperatorName) -> None:
        self.defs.append((owners, text))

    def extend(self, other: Emitted) -> None:
        self.defs += other.defs
        self.registrations += other.registrations
        self.kernels |= other.kernels
        self.entries |= other.entries


def _q(name: OperatorName, namespace: str) -> str:
    ns = name.namespace or namespace
    return f"{ns}::{name.name}.{name.overload}" if name.overload else f"{ns}::{name.name}"


def _short(name: OperatorName) -> str:
    return f"{name.name}.{name.overload}" if name.overload else name.name


def _params(schema: FunctionSchema) -> list[str]:
    return [naming.pyident(a.name) for a in schema.arguments]


def _loc(fn: NativeFunction, source_root: str | None) -> str:
    """Where `fn` was declared, `path:line`, the path relative to `source_root` when under it
    (the generated module is cached and shared: no absolute paths in it)."""
    path = PurePath(fn.loc.path)
    if source_root is not None and path.is_absolute() and path.is_relative_to(source_root):
        path = path.relative_to(source_root)
    return f"{path.as_posix()}:{fn.loc.line}"


# --- structured wrappers ------------------------------------------------------------------------


def _meta_base(out_fn: NativeFunction) -> str:
    """The class of the wrapper's meta object: `structured_inherits: TensorIteratorBase` is
    TensorIteratorMeta; another name is a StructuredMeta subclass registered with @native."""
    inherits = out_fn.structured_inherits
    if inherits == "TensorIteratorBase":
        return "TensorIteratorMeta"
    return inherits if inherits else "StructuredMeta"


def _meta_class_kernel(out_fn: NativeFunction) -> tuple[str, ...]:
    """The `@native` meta class a wrapper needs besides core's two (none for those)."""
    base = _meta_base(out_fn)
    return () if base in ("TensorIteratorMeta", "StructuredMeta") else (base,)


def _precomputed_call(
    out_fn: NativeFunction, out_schema: FunctionSchema
) -> tuple[str, list[str]]:
    """The impl's argument list: out-schema order with precomputed replacements."""
    pre = out_fn.precomputed
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


def _wrapper_parts(
    fn: NativeFunction, out_fn: NativeFunction, functional: NativeFunction | None
) -> tuple[FunctionSchema, FunctionSchema, str, list[str], list[str], int]:
    """What every wrapper of a structured group starts from: its schema, the out variant's
    schema, the meta function's name, the wrapper's parameters, meta's arguments, the number
    of outputs."""
    schema: FunctionSchema = fn.func
    out_schema: FunctionSchema = out_fn.func
    meta = naming.meta_name(functional.func.name if functional is not None else out_schema.name)
    meta_args = [naming.pyident(a.name) for a in schema.arguments if not a.is_out]
    return schema, out_schema, meta, _params(schema), meta_args, len(out_schema.out)


def gen_structured_wrapper(
    kind: str,
    key: str,
    fn: NativeFunction,
    out_fn: NativeFunction,
    functional: NativeFunction | None,
    impl_name: str | None,
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
    ]
    if has_fast_path(kind, key, impl_name):
        fast = naming.fast_name(wrapper)
        lines += [
            f"    if {fast} is not None and not TRACE.ACTIVE:",
            f"        result = {fast}({', '.join(params)})",
            "        if result is not None:",
            "            return result",
        ]
    lines += [
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


def has_fast_path(kind: str, key: str, impl_name: str | None) -> bool:
    """Whether a wrapper first tries its kernel module's `fast_<wrapper>` (Note: the
    structured fast path, in pyaten.native.fastpath): CPU functional and in-place wrappers."""
    return key == "CPU" and kind in ("functional", "inplace") and impl_name is not None


DEFAULT_BACKEND = "CompositeExplicitAutogradNonFunctional"


def gen_default_backend_wrapper(
    kind: str, fn: NativeFunction, out_fn: NativeFunction, functional: NativeFunction | None
) -> str:
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


def needs_backend_select(fn: NativeFunction) -> bool:
    """PyTorch's rule: an op taking tensor options (`dtype, layout, device, pin_memory`), other
    than the `*_like` and `new_*` families, gets a BackendSelect kernel."""
    schema: FunctionSchema = fn.func
    name = schema.name.name
    if name.endswith("_like") or name.startswith("new_") or schema.kind is SchemaKind.out:
        return False
    names = {a.name for a in schema.arguments}
    return all(option in names for option in _TENSOR_OPTIONS)


def gen_backend_select(fn: NativeFunction) -> str:
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


def gen_autogen_kernel(fn: NativeFunction, source_fn: NativeFunction) -> str:
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


def gen_autogen_functional(fn: NativeFunction, source_fn: NativeFunction) -> str:
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


# --- one part per kind of entry ---------------------------------------------------------------

_NO_BACKEND_KERNEL = ("TensorIteratorMeta", "StructuredMeta")


def structured_groups(
    functions: Iterable[NativeFunction],
) -> dict[tuple[str, str], NativeFunctionsGroup]:
    """Each `structured: True` out entry with the functional and in-place entries whose
    `structured_delegate` names it, keyed by the out entry's (name, overload)."""
    delegates: dict[tuple[str, str], dict[SchemaKind, NativeFunction]] = {}
    outs: list[NativeFunction] = []
    for fn in functions:
        target = fn.structured_delegate
        if target is not None:
            # The first delegate of a kind joins the group, as the YAML order gives it.
            delegates.setdefault((target.name, target.overload), {}).setdefault(fn.func.kind, fn)
        if fn.structured:
            outs.append(fn)
    groups = {}
    for out in outs:
        key = (out.func.name.name, out.func.name.overload)
        members = delegates.get(key, {})
        groups[key] = NativeFunctionsGroup(
            functional=members.get(SchemaKind.functional),
            inplace=members.get(SchemaKind.inplace),
            out=out,
        )
    return groups


def emit_backend_select(fn: NativeFunction, namespace: str, source: str) -> Emitted:
    """The BackendSelect kernel of an op taking tensor options, and its registration."""
    emitted = Emitted()
    name = fn.func.name
    emitted.define(gen_backend_select(fn), name)
    emitted.entries.add(name)
    emitted.registrations.append(Registration(
        _q(name, namespace), "BackendSelect", naming.wrapper_name("BackendSelect", name), (),
        "backend_select", source))
    return emitted


def emit_structured(
    group: NativeFunctionsGroup, namespace: str, source_root: str | None
) -> Emitted:
    """A structured group's wrappers, per dispatch key of its out entry (and Meta, meta only,
    unless the YAML names a Meta kernel), and its CompositeExplicitAutogradNonFunctional
    kernels unless the YAML names that key."""
    out = group.out
    assert out is not None and out.structured, group
    functional = group.functional
    meta = naming.meta_name(functional.func.name if functional else out.func.name)
    meta_class = _meta_class_kernel(out)
    emitted = Emitted()
    emitted.kernels.update((meta, *meta_class))
    keys = dict(out.dispatch)
    emitted.kernels.update(keys.values())
    targets: list[tuple[str, str | None]] = list(keys.items())
    if "Meta" not in keys:
        targets.append(("Meta", None))
    members = [("out", out)]
    members += [(kind, m) for kind, m in (("functional", functional), ("inplace", group.inplace))
                if m is not None]
    for key, impl in targets:
        for kind, member in members:
            name = member.func.name
            emitted.define(gen_structured_wrapper(kind, key, member, out, functional, impl), name)
            if has_fast_path(kind, key, impl):
                emitted.kernels.add(naming.fast_name(naming.wrapper_name(key, name)))
            needs = meta_class + (meta,) + ((impl,) if impl else ())
            emitted.registrations.append(Registration(
                _q(name, namespace), key, naming.wrapper_name(key, name), needs, "structured",
                _loc(member, source_root)))
    if DEFAULT_BACKEND in keys:
        return emitted
    for kind, member in members[1:]:
        name = member.func.name
        emitted.define(gen_default_backend_wrapper(kind, member, out, functional), name)
        emitted.entries.add(out.func.name)
        emitted.registrations.append(Registration(
            _q(name, namespace), DEFAULT_BACKEND, naming.wrapper_name(DEFAULT_BACKEND, name),
            meta_class + (meta,), "structured", _loc(member, source_root)))
    return emitted


def emit_autogen(
    fn: NativeFunction, source_fn: NativeFunction, namespace: str, source: str
) -> Emitted:
    """An `autogen` entry's kernel: an out variant computed by `source_fn`, or a functional
    variant made from an in-place `source_fn`; registered as CompositeExplicitAutograd."""
    emitted = Emitted()
    name = fn.func.name
    if fn.func.kind is SchemaKind.out:
        text = gen_autogen_kernel(fn, source_fn)
    else:
        text = gen_autogen_functional(fn, source_fn)
    emitted.define(text, name)
    emitted.entries.add(source_fn.func.name)
    emitted.registrations.append(Registration(
        _q(name, namespace), "CompositeExplicitAutograd", naming.autogen_name(name), (),
        "autogen", source))
    return emitted


def emit_native(fn: NativeFunction, namespace: str, source: str) -> Emitted:
    """Registrations of the `@native` kernels an entry's `dispatch:` names (a delegate of a
    structured group: the keys besides the group's; no `dispatch:` at all:
    CompositeImplicitAutograd under the entry's own name)."""
    emitted = Emitted()
    name = fn.func.name
    dispatch = dict(fn.dispatch)
    if not dispatch and fn.structured_delegate is None:
        dispatch = {"CompositeImplicitAutograd": naming.default_kernel_name(name)}
    for key, kernel in dispatch.items():
        emitted.kernels.add(kernel)
        emitted.registrations.append(Registration(
            _q(name, namespace), key, kernel, (kernel,), "native", source))
    return emitted


def autogen_source(
    fn: NativeFunction, by_name: dict[tuple[str, str], NativeFunction]
) -> NativeFunction | None:
    """The entry an autogen variant is computed from: for an out variant, the functional
    sibling if declared, else the entry that listed it; for a functional one, the in-place
    entry that listed it. None when there is none (the entry gets no kernel of its own)."""
    origin = fn.generated_from
    assert origin is not None, fn
    listed = by_name.get((origin.name, origin.overload))
    if fn.func.kind is SchemaKind.out:
        target = fn.func.functional_signature()
        for other in by_name.values():
            if other.func.kind is SchemaKind.functional and (
                other.func.functional_signature() == target
            ):
                return other
        return listed
    if fn.func.kind is SchemaKind.functional and listed is not None and (
        listed.func.kind is SchemaKind.inplace
    ):
        return listed
    return None


def emit_entry(
    fn: NativeFunction,
    groups: dict[tuple[str, str], NativeFunctionsGroup],
    by_name: dict[tuple[str, str], NativeFunction],
    namespace: str,
    source_root: str | None,
) -> Emitted:
    """Everything one entry of the YAML adds, by what kind of entry it is."""
    source = _loc(fn, source_root)
    emitted = Emitted()
    if needs_backend_select(fn):
        emitted.extend(emit_backend_select(fn, namespace, source))
    if fn.structured:
        name = fn.func.name
        emitted.extend(emit_structured(groups[(name.name, name.overload)], namespace,
                                       source_root))
        return emitted
    if fn.generated_from is not None and fn.structured_delegate is None:
        origin = autogen_source(fn, by_name)
        if origin is not None:
            emitted.extend(emit_autogen(fn, origin, namespace, source))
            return emitted
        if fn.func.kind is SchemaKind.out:
            return emitted  # an out variant with nothing to compute it from: no kernel
    emitted.extend(emit_native(fn, namespace, source))
    return emitted


# --- Python names and bindings ---------------------------------------------------------------


def python_names(
    functions: Iterable[NativeFunction],
) -> tuple[dict[str, list[FunctionSchema]], dict[str, list[FunctionSchema]]]:
    """Schemas per Python function name and per Tensor method name."""
    funcs: dict[str, list[FunctionSchema]] = {}
    methods: dict[str, list[FunctionSchema]] = {}
    for fn in functions:
        schema = fn.func
        name = schema.name.name
        variants = fn.variants
        is_out = schema.kind is SchemaKind.out
        if fn.generated_from is not None:
            continue  # autogen variants are not exposed to Python, as in PyTorch
        if "function" in variants or is_out:
            funcs.setdefault(name, []).append(schema)
        if "method" in variants and schema.self_arg is not None:
            methods.setdefault(name, []).append(schema)
    # An out variant with no visible functional sibling keeps its own name only if declared so.
    return funcs, methods


def python_modules(functions: Iterable[NativeFunction]) -> dict[str, str]:
    """The Python submodule of each function name whose entries say `python_module:`
    (`special_entr` -> `special`: exposed as `pyaten.special.entr`, as torch.special.entr)."""
    return {
        fn.func.name.name: fn.python_module
        for fn in functions
        if fn.python_module is not None
    }


@dataclass
class Bindings:
    """The Python face of the module: binding functions and the tables the loader fills.

    `tables` holds (table global, Python name, is a method, the name's schemas as YAML text);
    `methods` the Tensor method names; `dunders` the Python operators defined."""

    emitted: Emitted
    tables: list[tuple[str, str, bool, tuple[str, ...]]]
    functions: list[str]
    methods: list[str]
    dunders: list[str]


def emit_bindings(functions: Sequence[NativeFunction]) -> Bindings:
    """One binding per Python function and Tensor method name, and the Python operators."""
    funcs, methods = python_names(functions)
    emitted = Emitted()
    tables: list[tuple[str, str, bool, tuple[str, ...]]] = []
    method_sigs: dict[str, list[PythonSignature]] = {}
    for method, table in ((False, funcs), (True, methods)):
        for name, schemas in sorted(table.items()):
            sigs = group_signatures(name, schemas, method=method)
            if not sigs:
                continue
            if method:
                method_sigs[name] = sigs
            owners = [s.functional for s in sigs] + ([] if method else
                                                     [s.out_variant for s in sigs])
            names = tuple(dict.fromkeys(o.name for o in owners if o is not None))
            emitted.define(gen_binding(name, sigs, method=method), *names)
            emitted.entries.update(names)
            texts = tuple(schema.yaml_text() for schema in schemas)
            tables.append((naming.binding_table(name, method), name, method, texts))
    dunders: list[str] = []
    for dunder, target in BINARY_DUNDERS.items():
        if target in method_sigs:
            emitted.define(gen_dunder(dunder, target, method_sigs[target]))
            dunders.append(dunder)
    for dunder, target in UNARY_DUNDERS.items():
        if target in method_sigs:
            emitted.define(gen_unary_dunder(dunder, target, method_sigs[target]))
            dunders.append(dunder)
    return Bindings(emitted, tables, sorted(funcs), sorted(method_sigs), dunders)


# --- the module ------------------------------------------------------------------------------

HEADER = '''"""Generated by pyaten.codegen from {path}. Do not edit: edit the YAML or the generator.

`pyaten codegen show NAME` prints the part of this module that belongs to one operator.
"""
# ruff: noqa
from pyaten.native.gen_support import (
    TRACE, Tensor, TensorIteratorMeta, StructuredMeta, ArgumentParseError, bind_and_call,
    copy_to_out, wrapped_number, CLONE, K, DType, Size, backend_select_keys, TF,
    TorchFunctionNotImplemented, Direct, NONDEFAULT, PLAIN_CPU, PLAIN_KEY,
)
'''


def module_source(
    path: str,
    functions: Sequence[NativeFunction],
    kernels: Emitted,
    bindings: Bindings,
    namespace: str,
    source_root: str | None,
) -> str:
    """The module's text: header, kernel and entry globals, the functions, then the tables
    the loader reads (ENTRIES, BINDINGS, FUNCTIONS, PYTHON_MODULES, METHODS, DUNDERS,
    DEFINITIONS, REGISTRATIONS)."""
    entries = sorted(kernels.entries | bindings.emitted.entries, key=_short)
    lines = [HEADER.format(path=path)]
    lines.append("# Kernels named in the YAML, from the @native registry (None when missing).")
    # A kernel named like a Python binding (`linear`) gets no global: the binding's def, later
    # in the module, replaces it, and the dead store would keep that def from being lazy
    # (Note: a generated module's units are defined on first use, native/lazy_code.py).
    bound = set(bindings.functions)
    lines += [f"{name} = K.get({name!r})" for name in sorted(kernels.kernels) if name not in bound]
    lines.append("")
    lines.append("# Operator entries, filled by setup() once the operators are defined.")
    lines += [f"{naming.entry_global(name)} = None" for name in entries]
    lines.append("")
    lines.append("# Parsed signatures per Python name, filled by setup().")
    lines += [f"{table} = None" for table, *_ in bindings.tables]
    lines.append("")
    lines += [text for _, text in kernels.defs + bindings.emitted.defs]
    lines.append("ENTRIES = {")
    lines += [f"    {naming.entry_global(n)!r}: {_q(n, namespace)!r}," for n in entries]
    lines.append("}")
    lines.append("# (table, Python name, is a method, its schemas as the YAML spells them)")
    lines.append("BINDINGS = [")
    lines += [f"    {row!r}," for row in bindings.tables]
    lines.append("]")
    lines.append(f"FUNCTIONS = {bindings.functions!r}")
    # `python_module: special` functions live in `pyaten.special`, not at the top level.
    lines.append(f"PYTHON_MODULES = {python_modules(functions)!r}")
    lines.append(f"METHODS = {bindings.methods!r}")
    lines.append(f"DUNDERS = {bindings.dunders!r}")
    lines.append("# (schema as the YAML spells it, tags, where declared): the schemas to define.")
    lines.append("DEFINITIONS = [")
    lines += [f"    ({fn.func.yaml_text()!r}, {sorted(fn.tags)!r}, {_loc(fn, source_root)!r}),"
              for fn in functions]
    lines.append("]")
    lines.append("REGISTRATIONS = [")
    lines += [f"    ({r.operator!r}, {r.key!r}, {r.kernel!r}, {r.needs!r}, {r.kind!r}, "
              f"{r.source!r})," for r in kernels.registrations]
    lines.append("]")
    return "\n".join(lines) + "\n"


def generate(
    functions: Sequence[NativeFunction],
    path: str,
    namespace: str = "aten",
    source_root: str | None = None,
) -> Generated:
    """Generate the module for `functions` (records with autogen entries already expanded).

    `path` names the YAML in the module's docstring; declaration sites under `source_root`
    are written relative to it."""
    groups = structured_groups(functions)
    by_name = {(fn.func.name.name, fn.func.name.overload): fn for fn in functions}
    kernels = Emitted()
    for fn in functions:
        kernels.extend(emit_entry(fn, groups, by_name, namespace, source_root))
    bindings = emit_bindings(functions)
    per_op: dict[str, GeneratedOp] = {}
    for owners, text in kernels.defs + bindings.emitted.defs:
        for owner in owners:
            per_op.setdefault(_short(owner), GeneratedOp(_short(owner))).chunks.append(text)
    source = module_source(path, functions, kernels, bindings, namespace, source_root)
    return Generated(source, per_op, kernels.registrations)
