"""From Python signatures to the source of binding functions: `add(*args, **kwargs)`,
`Tensor_add(self, ...)` and the Python operators (`Operator___add__`).

Each binding tries its fast paths (which are safe: Note: fast-path safety, in
`pyaten.codegen.fast_path_rules`) and otherwise hands the call to the generic parser,
`bind_and_call(B_<name>, args, kwargs)`, which tries the signatures in PyTorch's order.
Fast paths exist for positional calls (`sum(t, 1)`, `view(4, 4)`), for
keyword calls (`sum(t, dim=1)`, one keyword unpacked at once, several read one by one), and
for the Python operators (`a + b`, `a > 0`). A default with no literal form, and the named
tuple of named returns, come from the binding table (`Binding.default`, `Binding.named`).
Pure functions: signatures in, text out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyaten.codegen import naming
from pyaten.codegen.fast_path_rules import (
    INT_LIST,
    TENSOR,
    TENSOR_LIST,
    Kind,
    is_tensor,
    keyword_conditions,
    param_kind,
    refusal_triggers,
    refuses_spread_ints,
    safe_kinds,
)
from pyaten.codegen.python_signature import PythonSignature
from pyaten.schema.model import NO_DEFAULT, BaseType, FunctionSchema, ListType, OptionalType

# Python operators and the method binding each one calls (commutative reflected forms reuse
# it; the others are composites in pyaten.native.tensor_api).
BINARY_DUNDERS: dict[str, str] = {
    "__add__": "add",
    "__radd__": "add",
    "__iadd__": "add_",
    "__sub__": "sub",
    "__isub__": "sub_",
    "__mul__": "mul",
    "__rmul__": "mul",
    "__imul__": "mul_",
    "__truediv__": "div",
    "__itruediv__": "div_",
    "__div__": "div",
    "__eq__": "eq",
    "__ne__": "ne",
    "__lt__": "lt",
    "__le__": "le",
    "__gt__": "gt",
    "__ge__": "ge",
    "__matmul__": "matmul",
    "__mod__": "remainder",
    "__imod__": "remainder_",
    "__pow__": "pow",
    "__ipow__": "pow_",
    "__and__": "__and__",
    "__rand__": "__and__",
    "__or__": "__or__",
    "__ror__": "__or__",
    "__xor__": "__xor__",
    "__rxor__": "__xor__",
    "__lshift__": "__lshift__",
    "__rshift__": "__rshift__",
}
UNARY_DUNDERS: dict[str, str] = {"__neg__": "neg", "__abs__": "abs", "__pos__": "positive"}


# --- bindings -----------------------------------------------------------------------------------


def _literal_default(arg_type: Any, value: object) -> str | None:
    """Python source for a default the kernel takes as is, or None when it needs converting."""
    if value is NO_DEFAULT:
        return None
    base = arg_type.elem if isinstance(arg_type, OptionalType) else arg_type
    if value is None:
        return "None"
    if isinstance(base, ListType):
        if isinstance(value, (list, tuple)) and all(type(v) in (int, float, bool) for v in value):
            return repr(tuple(value))
        if base.size is not None and type(value) in (int, float, bool):
            return repr((value,) * base.size)
        return None
    if isinstance(base, BaseType) and base.name in ("ScalarType", "MemoryFormat", "Layout",
                                                    "Device"):
        return None
    if value == "Mean" and isinstance(base, BaseType) and base.name in ("int", "SymInt"):
        return "1"  # at::Reduction::Mean (`int reduction=Mean`)
    if type(value) in (int, float, bool, str):
        text = repr(value)
        return text if "inf" not in text and "nan" not in text else None
    return None


def _invoke(sig: PythonSignature, index: int, table: str | None) -> str | None:
    """The call of signature `index`'s entry, `{}` for its arguments: results of named
    returns wrapped in the binding's named tuple type (`Binding.named`); None when the
    results need a wrapper and no binding table is at hand."""
    call = naming.entry_global(sig.functional.name) + ".call({})"
    if not _named_returns(sig.functional):
        return call
    return None if table is None else f"{table}.named({index})(*{call})"


def _named_returns(schema: FunctionSchema) -> bool:
    """Results the binding wraps in a named tuple (`values, indices`): no fast path for them."""
    return len(schema.returns) > 1 and all(r.name for r in schema.returns)


def _fast_call(sig: PythonSignature) -> tuple[int, str] | None:
    """For the commonest call (required tensors positionally, no kwargs): how many tensors, and
    the entry's argument list in schema order using `a0, a1, ...`; None when not applicable."""
    functional = sig.functional
    if functional is None or sig.has_requires_grad or _named_returns(functional):
        return None
    required = [p for p in sig.params if p.required]
    if any(p.keyword_only for p in required):
        return None
    if any(not (isinstance(p.type, BaseType) and p.type.name == "Tensor") for p in required):
        return None
    if [p for p in sig.params if not p.keyword_only][: len(required)] != required:
        return None
    values = _default_values(sig)
    if values is None:
        return None
    for i, p in enumerate(required):
        values[p.schema_name] = f"a{i}"
    return len(required), ", ".join(values[a.name] for a in functional.arguments)


def _gate(method: bool) -> str:
    """The test every fast path starts with (Note: the torch-function gate, in
    pyaten/core/torch_function.py): no mode pushed and no trace recording, and for a method a
    `self` without `__torch_function__`. Anything else goes to `bind_and_call`, which hands
    the call to the handlers."""
    return "not TF.ACTIVE" + (f" and {is_tensor('self')}" if method else "")


def _plain(value: str) -> str:
    """The test that `value` is a plain CPU tensor for the direct call (Note: the direct call,
    in pyaten/native/gen_support.py): the exact class, a dense CPU key set, no grad needed."""
    return (f"{value}.__class__ is Tensor and {value}._keyset == PLAIN_CPU and not "
            f"{value}._requires_grad and {value}._fw_grad is None")


def _may_call_directly(schema: FunctionSchema) -> bool:
    """Whether the direct call can apply to an operator at all: not in-place, `out=` or a
    view (their autograd kernels do more than pass the call on), so the binding of one that
    cannot pays no test for it."""
    return not schema.is_view and not any(a.is_write for a in schema.arguments)


def _direct_call(schema: FunctionSchema, tensors: Sequence[str], call: str,
                 indent: str, optional: Sequence[str] = (),
                 lists: Sequence[str] = ()) -> list[str]:
    """Lines that call the operator's fast function straight from the binding when every
    tensor in `tensors` (each of `optional` that is not None, every item of each of `lists`)
    is plain and no thread has left the default key sets, and otherwise the dispatcher (Note:
    the direct call). Used where the binding has tested `TF.ACTIVE`."""
    if not _may_call_directly(schema):
        return []
    name = schema.name
    entry = naming.entry_global(name)
    direct = naming.direct_global(name)
    guard = " and ".join(["not NONDEFAULT", *(_plain(t) for t in tensors),
                          *(f"({t} is None or {_plain(t)})" for t in optional),
                          *(f"Direct.plain_list({t})" for t in lists)])
    return [
        f"{indent}if {guard}:",
        f"{indent}    fast = ({direct}.fast if {entry}._cache.get(PLAIN_KEY) is {direct}.checked"
        f" else {direct}.check({entry}))",
        f"{indent}    if fast is not None:",
        f"{indent}        result = fast({call})",
        f"{indent}        if result is not None:",
        f"{indent}            return result",
    ]


def _vmap_route(schema: FunctionSchema, first: str, call: str, indent: str) -> list[str]:
    """Lines that hand a call whose first tensor `first` is a BatchedTensor to vmap's route
    (Note: vmap's binding route, in pyaten/native/gen_support.py), placed just before the
    binding calls the dispatcher with `call`; nothing for an operator the direct call can
    never apply to (in-place, `out=`, views)."""
    if not _may_call_directly(schema):
        return []
    return [
        f"{indent}if {first}.__class__ is Direct.vmap_class:",
        f"{indent}    result = Direct.vmap_route({naming.entry_global(schema.name)}, ({call},))",
        f"{indent}    if result is not NotImplemented:",
        f"{indent}        return result",
    ]


def direct_globals(signatures: Sequence[PythonSignature]) -> list[str]:
    """Module lines defining the `Direct` of each overload a binding calls directly (a later
    binding of the same overload rebinds the global; every binding reads it when called)."""
    names: list[str] = []
    for sig in signatures:
        if sig.functional is not None and _may_call_directly(sig.functional):
            name = naming.direct_global(sig.functional.name)
            if name not in names:
                names.append(name)
    return [f"{name} = Direct()" for name in names]


def _fast_path(sig: PythonSignature) -> list[str]:
    """Lines of the binding's fast path (empty when the first signature has none)."""
    fast = _fast_call(sig)
    if fast is None:
        return []
    n, call = fast
    entry = naming.entry_global(sig.functional.name)
    lines = [f"    if not kwargs and len(args) == {n} and {_gate(sig.method)}:"]
    if n:
        lines.append(f"        {', '.join(f'a{i}' for i in range(n))}{',' if n == 1 else ''}"
                     " = args")
    tensors = (["self"] if sig.method else []) + [f"a{i}" for i in range(n)]
    lines += _direct_call(sig.functional, tensors, call, "        ")
    checks = " and ".join(is_tensor(f"a{i}") for i in range(n)) or "True"
    lines.append(f"        if {checks}:")
    if tensors:
        lines += _vmap_route(sig.functional, tensors[0], call, "            ")
    lines.append(f"            return {entry}.call({call})")
    if sig.allow_numbers_as_tensors and n >= 1:
        last = f"a{n - 1}"
        others = " and ".join(is_tensor(f"a{i}") for i in range(n - 1))
        cond = f"({last}.__class__ is float or {last}.__class__ is int)"
        if others:
            cond = f"{others} and {cond}"
        lines.append(f"        if {cond}:")
        lines.append(f"            {last} = wrapped_number({last})")
        lines += _direct_call(sig.functional, tensors[:-1], call, "            ")
        lines.append(f"            return {entry}.call({call})")
    return lines


# --- typed fast paths ---------------------------------------------------------------------------
# Positional calls of exact classes (Note: fast-path safety).


def _is_out_param(sig: PythonSignature, param: Any) -> bool:
    """The `out=` keyword the out variant adds (not a schema argument that is named `out`)."""
    return sig.out_variant is not None and not sig.method and param is sig.params[-1] and (
        param.name == "out"
    )


def _default_source(sig: PythonSignature, param: Any, table: str | None,
                    index: int) -> str | None:
    """Source of an optional parameter's default as the kernel takes it: a literal, or
    (`memory_format=contiguous_format`, `dtype=long`) the parsed default that the binding
    table holds (`Binding.default`); None when neither."""
    text = _literal_default(param.type, param.default)
    if text is None and table is not None and param in sig.params:
        text = f"{table}.default({index}, {sig.params.index(param)})"
    return text


def _default_values(sig: PythonSignature, given: Sequence[str] = (), table: str | None = None,
                    index: int = 0) -> dict[str, str] | None:
    """Source text of each optional argument's default (and `self` for methods), by schema
    name, except the parameters `given` (Python names); None when one has no literal form,
    so no fast path can fill it in."""
    values: dict[str, str] = {}
    for p in sig.params:
        if p.required or _is_out_param(sig, p) or p.name in given:
            continue
        text = _default_source(sig, p, table, index)
        if text is None:
            return None
        values[p.schema_name] = text
    if sig.method:
        values["self"] = "self"
    return values


def _typed_direct(sig: PythonSignature, safe: Sequence[Any], call: str,
                  indent: str = "            ",
                  given: Sequence[tuple[str, Any]] = ()) -> list[str]:
    """The direct call (Note: the direct call, in pyaten/native/gen_support.py) of one typed
    or keyword fast path: `args[i]` of kind `safe[i]` and each (value, kind) `given`, its
    tensor, optional tensor and tensor list arguments plain; none with an optional list of
    tensors or results wrapped in a named tuple."""
    functional = sig.functional
    arguments = [(f"args[{i}]", k) for i, k in enumerate(safe)] + list(given)
    if _named_returns(functional) or any(k is not TENSOR_LIST and k.without_none() is TENSOR_LIST
                                         for _, k in arguments):
        return []
    tensors = ["self"] if sig.method else []
    optional: list[str] = []
    lists: list[str] = []
    for value, k in arguments:
        if k is TENSOR:
            tensors.append(value)
        elif k is TENSOR_LIST:
            lists.append(value)  # `cat([a, b])`: every item plain (Direct.plain_list)
        elif "Tensor" in k.classes:
            optional.append(value)
    if not tensors and not optional and not lists:
        return []
    return _direct_call(functional, tensors, call, indent, optional, lists)


def _typed_fast_path(sig: PythonSignature, earlier: Sequence[PythonSignature],
                     skip_required: bool = False, table: str | None = None,
                     direct: bool = True) -> list[str]:
    """`if` blocks for this signature's exact-class positional calls, when they are safe (see
    the Note): the required arguments, then each optional positional one in turn. With
    `skip_required`, not the call of the required tensors alone (`_fast_path` has it). With
    `direct`, each block tries the direct call first (Note: the direct call)."""
    functional = sig.functional
    if functional is None:
        return []
    invoke = _invoke(sig, len(earlier), table)
    required = [p for p in sig.params if p.required]
    positional = [p for p in sig.params if not p.keyword_only]
    if invoke is None or any(p.keyword_only for p in required) or (
        positional[: len(required)] != required
    ):
        return []
    kinds = [param_kind(p) for p in required]
    if any(k is None for k in kinds):
        return []
    lines: list[str] = []
    if sig.allow_varargs_intlist and kinds == [INT_LIST]:
        # zeros(2, 3) and view(2, 3): every positional argument an int.
        values = _default_values(sig, table=table, index=len(earlier))
        if values is not None and refuses_spread_ints(earlier):
            values[required[0].schema_name] = "args"
            call = ", ".join(values[a.name] for a in functional.arguments)
            lines += _spread_ints_block(invoke.format(call))
    params = list(required)
    for extra in [None] + positional[len(required):]:
        if extra is not None:
            kind = param_kind(extra)
            if kind is None:
                break
            params.append(extra)
            kinds = kinds + [kind]
        elif skip_required and all(k is TENSOR for k in kinds):
            continue
        safe = safe_kinds(earlier, kinds)
        if safe is None:
            continue
        values = _default_values(sig, [p.name for p in params], table, len(earlier))
        if values is None:
            continue
        for i, p in enumerate(params):
            values[p.schema_name] = safe[i].value(f"args[{i}]")
        call = ", ".join(values[a.name] for a in functional.arguments)
        checks = "".join(f" and {k.test(f'args[{i}]')}" for i, k in enumerate(safe))
        lines.append(f"        if n == {len(params)}{checks}:")
        if direct:
            lines += _typed_direct(sig, safe, call)
            if invoke.endswith(".call({})") and (sig.method or (safe and safe[0] is TENSOR)):
                lines += _vmap_route(functional, "self" if sig.method else "args[0]", call,
                                     "            ")
        lines.append(f"            return {invoke.format(call)}")
    return lines


def _spread_ints_block(invocation: str) -> list[str]:
    """`view(4, 4)`: up to four ints tested one by one (no set built), more by a set."""
    lines = []
    for count in range(1, 5):
        checks = " and ".join(f"args[{i}].__class__ is int" for i in range(count))
        lines += [f"        if n == {count} and {checks}:", f"            return {invocation}"]
    lines += ["        if n > 4 and {i.__class__ for i in args} <= {int}:",
              f"            return {invocation}"]
    return lines


# --- keyword fast paths ------------------------------------------------------------------------
# `sum(t, dim=1)`, `t.sum(1, keepdim=True)`, `cat(ts, dim=1)`, `softmax(t, dim=-1)`: the
# leading arguments positionally and the others by keyword, each of a fast kind. One block per
# (signature, number of positional arguments); it reads every parameter it may take by
# keyword with `kwargs.get(name, kwargs)`: `kwargs` itself, a fresh dict no caller can pass,
# marks a keyword not given, and a call that names any other keyword has more keywords than
# the block found, so it falls through.


def _keyword_block(sig: PythonSignature, earlier: Sequence[PythonSignature], n: int,
                   invoke: str, table: str | None,
                   spread: bool = False) -> tuple[list[str], list[str]]:
    """The lines for calls of `sig` with its first `n` parameters positional and keywords:
    one `if` for each single keyword it takes (`key`, `value` unpacked), and a block for any
    set of them; with `spread`, its int list given as ints (`zeros(2, 3, dtype=...)`), which
    every earlier signature must refuse outright."""
    direct = not spread  # (Note: the direct call) a spread of ints has no tensors
    functional = sig.functional
    positional = [p for p in sig.params if not p.keyword_only]
    head = positional[:n]
    head_kinds = [param_kind(p) for p in head]
    if spread:
        head_kinds = [Kind(("int",), "{i.__class__ for i in args} <= {int}", "args")]
    if any(k is None for k in head_kinds):
        return [], []
    rest = [p for p in sig.params if p not in head and not _is_out_param(sig, p)
            and not (sig.has_requires_grad and p.name == "requires_grad")]
    keyword: list[tuple[Any, Kind, str | None]] = []  # (param, kind, default source)
    values: dict[str, str] = {"self": "self"} if sig.method else {}
    for p in rest:
        kind = param_kind(p)
        default = None if p.required else _default_source(sig, p, table, len(earlier))
        if kind is None:
            if default is None:
                return [], []  # neither given on this path nor filled in
            values[p.schema_name] = default
            continue
        keyword.append((p, kind, default))
    if not keyword:
        return [], []
    always = {p.name for p, _, default in keyword if default is None}
    if spread:
        # any number of ints: every earlier signature must refuse each count outright
        keyword_classes = {p.name: kind.classes for p, kind, _ in keyword}
        for j in earlier:
            most = len([p for p in j.params if not p.keyword_only])
            if any(refusal_triggers(j, [("int",)] * count, keyword_classes, always) is not True
                   for count in range(1, most + 2)):
                return [], []
    for i, (p, k) in enumerate(zip(head, head_kinds)):
        values[p.schema_name] = k.value(f"args[{i}]")
    for p, _, default in keyword:
        if default is not None:
            values[p.schema_name] = default
    head_guard = ["n" if spread else f"n == {n}"]
    head_guard += [k.test(f"args[{i}]") for i, k in enumerate(head_kinds)]

    single: list[str] = []
    for p, kind, _ in keyword:
        if always - {p.name}:
            continue  # another keyword is required
        for kinds, p_kind in ((head_kinds, kind),
                              ([k.without_none() for k in head_kinds], kind.without_none())):
            block = [(q, p_kind if q is p else k, d) for q, k, d in keyword]
            if spread or keyword_conditions(earlier, kinds, block, always, p.name) is not None:
                guard = [f"key == {p.name!r}"] + head_guard[:1] + [
                    k.test(f"args[{i}]") for i, k in enumerate(kinds)
                ] + [p_kind.test("value")]
                call = ", ".join(
                    p_kind.value("value") if a.name == p.schema_name else values[a.name]
                    for a in functional.arguments
                )
                single.append(f"            if {' and '.join(guard)}:")
                if direct:
                    single += _typed_direct(sig, kinds, call, "                ",
                                            [("value", p_kind)])
                single.append(f"                return {invoke.format(call)}")
                break
    if len(keyword) == 1:
        return single, []  # the single keyword's `if` is the whole block

    conditions = [] if spread else keyword_conditions(earlier, head_kinds, keyword, always)
    if conditions is None:
        # again without None for the optional parameters: `clamp(t, min=0, max=1)`
        head_kinds = [k.without_none() for k in head_kinds]
        keyword = [(p, k.without_none(), d) for p, k, d in keyword]
        conditions = keyword_conditions(earlier, head_kinds, keyword, always)
        if conditions is None:
            return single, []
        for i, (p, k) in enumerate(zip(head, head_kinds)):
            values[p.schema_name] = k.value(f"args[{i}]")
        head_guard = head_guard[:1] + [k.test(f"args[{i}]") for i, k in enumerate(head_kinds)]
    guard = head_guard + [f"{p.name!r} in kwargs" for p, _, d in keyword if d is None]
    guard += conditions
    lines = [f"        if {' and '.join(guard)}:"]
    tests = []
    optional = []
    for i, (p, kind, default) in enumerate(keyword):
        var = f"k{i}"
        lines.append(f"            {var} = kwargs.get({p.name!r}, kwargs)")
        if default is None:
            tests.append(kind.test(var))
            values[p.schema_name] = kind.value(var)
        else:
            optional.append(var)
            tests.append(f"({var} is kwargs or {kind.test(var)})")
            values[p.schema_name] = f"({default} if {var} is kwargs else {kind.value(var)})"
    # no keyword but these: as many found as given
    found = [str(len(keyword) - len(optional))] if len(optional) < len(keyword) else []
    found += [f"({var} is not kwargs)" for var in optional]
    tests.insert(0, f"len(kwargs) == {' + '.join(found)}")
    call = ", ".join(values[a.name] for a in functional.arguments)
    lines += [f"            if {' and '.join(tests)}:",
              f"                return {invoke.format(call)}"]
    return single, lines


def _keyword_fast_path(sig: PythonSignature, earlier: Sequence[PythonSignature],
                       table: str | None = None) -> tuple[list[str], list[str]]:
    """Keyword lines of one signature (single-keyword `if`s, blocks): its leading tensors (or
    tensor lists) positional, and then each further required parameter positional in turn."""
    functional = sig.functional
    invoke = None if functional is None else _invoke(sig, len(earlier), table)
    if invoke is None:
        return [], []
    positional = [p for p in sig.params if not p.keyword_only]
    inputs = 0
    while inputs < len(positional) and positional[inputs].required and param_kind(
        positional[inputs]
    ) in (TENSOR, TENSOR_LIST):
        inputs += 1
    required = 0
    while required < len(positional) and positional[required].required:
        required += 1
    single: list[str] = []
    blocks: list[str] = []
    for n in range(inputs, required + 1):
        one, block = _keyword_block(sig, earlier, n, invoke, table)
        single += one
        blocks += block
    if sig.allow_varargs_intlist and required == 1 and refuses_spread_ints(earlier):
        one, block = _keyword_block(sig, earlier, 1, invoke, table, spread=True)
        single += one
        blocks += block
    return single, blocks


def gen_binding(python_name: str, signatures: Sequence[PythonSignature], method: bool) -> str:
    """Source of one binding function (`add` or `Tensor_add`)."""
    fname = naming.binding_name(python_name, method)
    table = naming.binding_table(python_name, method)
    doc = "\n".join(f"    {python_name}{s.signature_text()}" for s in signatures)
    head = f"def {fname}(self, *args, **kwargs):" if method else f"def {fname}(*args, **kwargs):"
    lines = [*direct_globals(signatures), "", head, f'    """\n{doc}\n    """']
    first = _fast_path(signatures[0]) if signatures else []
    lines.extend(first)
    typed: list[str] = []
    for k, sig in enumerate(signatures):
        typed += _typed_fast_path(sig, signatures[:k], skip_required=k == 0 and bool(first),
                                  table=table)
    if typed:
        lines.append(f"    if not kwargs and {_gate(method)}:")
        lines.append("        n = len(args)")
        lines.extend(typed)
    single: list[str] = []
    blocks: list[str] = []
    for k, sig in enumerate(signatures):
        one, block = _keyword_fast_path(sig, signatures[:k], table)
        single += one
        blocks += block
    if single or blocks:
        lines.append(f"    if kwargs and {_gate(method)}:")
        lines.append("        n = len(args)")
    if single:
        lines.append("        if len(kwargs) == 1:")
        lines.append("            ((key, value),) = kwargs.items()")
        lines.extend(single)
    lines.extend(blocks)
    self_arg = "self" if method else "None"
    lines.append(f"    return bind_and_call({table}, args, kwargs, {self_arg}, {fname})")
    return "\n".join(lines) + "\n"


def _dunder_public(dunder: str, python_name: str) -> str:
    """What `__torch_function__` handlers of an operator see as `func`, as in PyTorch: the
    method it calls (`a + b`: `Tensor.add`), or the operator itself where `Tensor` has no
    plainly named method (`a == b`: `Tensor.__eq__`, `a & b`: `Tensor.__and__`)."""
    if dunder in ("__eq__", "__ne__") or python_name.startswith("__"):
        return f"Operator_{dunder}"
    return naming.binding_name(python_name, True)


def gen_dunder(dunder: str, python_name: str, signatures: Sequence[PythonSignature]) -> str:
    """A Python operator method: the method binding, NotImplemented when the operand is wrong.
    Its fast paths are the binding's for one positional operand (`a + b`, `a * 2.0`,
    `a > 0`, `a ** 2`)."""
    table = naming.binding_table(python_name, True)
    lines = [*direct_globals(signatures), "", f"def Operator_{dunder}(self, other):",
             f'    """Tensor.{dunder}: Tensor.{python_name}(other)."""']
    fast = _fast_call(signatures[0]) if signatures else None
    body: list[str] = []
    if fast is not None and fast[0] == 1:
        call = fast[1].replace("a0", "other")
        entry = naming.entry_global(signatures[0].functional.name)
        schema = signatures[0].functional
        body += _direct_call(schema, ["self", "other"], call, "        ")
        body.append(f"        if {is_tensor('other')}:")
        body.append(f"            return {entry}.call({call})")
        if signatures[0].allow_numbers_as_tensors:
            body.append("        if other.__class__ is float or other.__class__ is int:")
            body.append("            other = wrapped_number(other)")
            body += _direct_call(schema, ["self"], call, "            ")
            body.append(f"            return {entry}.call({call})")
    for k, sig in enumerate(signatures):
        typed = _typed_fast_path(sig, signatures[:k], skip_required=k == 0 and bool(body),
                                 direct=False)
        for test, ret in zip(typed[::2], typed[1::2]):
            # the blocks of one operand, with `other` for `args[0]`
            if test.startswith("        if n == 1 and ") and "args[1]" not in test + ret:
                test = test.replace("n == 1 and ", "", 1)
                body += [test.replace("args[0]", "other"), ret.replace("args[0]", "other")]
    if body:
        lines.append(f"    if {_gate(True)}:")
        lines += body
    lines.append("    try:")
    lines.append(f"        return bind_and_call({table}, (other,), {{}}, self, "
                 f"{_dunder_public(dunder, python_name)})")
    lines.append("    except (ArgumentParseError, TorchFunctionNotImplemented):")
    lines.append("        return NotImplemented")
    return "\n".join(lines) + "\n"


def gen_unary_dunder(dunder: str, python_name: str,
                     signatures: Sequence[PythonSignature] = ()) -> str:
    """`-t`, `abs(t)`: the method binding; given its signatures, with the no-argument call's
    fast path."""
    table = naming.binding_table(python_name, True)
    lines = [f"def Operator_{dunder}(self):",
             f'    """Tensor.{dunder}: Tensor.{python_name}()."""']
    fast = _fast_call(signatures[0]) if signatures else None
    if fast is not None and fast[0] == 0:
        entry = naming.entry_global(signatures[0].functional.name)
        lines += [f"    if {_gate(True)}:", f"        return {entry}.call({fast[1]})"]
    lines.append(f"    return bind_and_call({table}, (), {{}}, self, "
                 f"{naming.binding_name(python_name, True)})")
    return "\n".join(lines) + "\n"
