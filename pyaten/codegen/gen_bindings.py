"""From Python signatures to the source of binding functions: `add(*args, **kwargs)`,
`Tensor_add(self, ...)` and the Python operators (`Operator___add__`).

Each binding tries its fast paths (see Note: fast-path safety) and otherwise hands the call
to the generic parser, `bind_and_call(B_<name>, args, kwargs)`, which tries the signatures in
PyTorch's order. Pure functions: signatures in, text out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyaten.codegen import naming
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


def _fast_path(sig: PythonSignature) -> list[str]:
    """Lines of the binding's fast path (empty when the first signature has none)."""
    fast = _fast_call(sig)
    if fast is None:
        return []
    n, call = fast
    entry = naming.entry_global(sig.functional.name)
    lines = [f"    if not kwargs and len(args) == {n} and not TRACE.ACTIVE:"]
    if n:
        lines.append(f"        {', '.join(f'a{i}' for i in range(n))}{',' if n == 1 else ''}"
                     " = args")
    checks = " and ".join(f"a{i}.__class__ is Tensor" for i in range(n)) or "True"
    lines.append(f"        if {checks}:")
    lines.append(f"            return {entry}.call({call})")
    if sig.allow_numbers_as_tensors and n >= 1:
        last = f"a{n - 1}"
        others = " and ".join(f"a{i}.__class__ is Tensor" for i in range(n - 1))
        cond = f"({last}.__class__ is float or {last}.__class__ is int)"
        if others:
            cond = f"{others} and {cond}"
        lines.append(f"        if {cond}:")
        lines.append(f"            {last} = wrapped_number({last})")
        lines.append(f"            return {entry}.call({call})")
    return lines


# --- typed fast paths ---------------------------------------------------------------------------
# Note: fast-path safety
#     A fast path for signature k takes positional arguments of exact Python classes and skips
#     the parser. It is emitted only if every earlier signature j certainly refuses such a call
#     (by arity, a missing required argument, or a parameter whose converter refuses that
#     class), so the result is the one the full parser would give.

_FAST_KINDS = {"Tensor": "tensor", "int": "int", "SymInt": "int", "float": "float",
               "bool": "bool", "ScalarType": "dtype", "Scalar": "number"}
_KIND_CLASSES = {"tensor": ("Tensor",), "int": ("int",), "float": ("float",), "bool": ("bool",),
                 "dtype": ("dtype",), "number": ("int", "float"), "intlist": ("seq",),
                 "tensorlist": ("seq",)}
# The generated module defines `all`, `any`, `max`... as operators: no builtins in the checks.
_KIND_CHECK = {
    "tensor": "{v}.__class__ is Tensor",
    "int": "{v}.__class__ is int",
    "float": "{v}.__class__ is float",
    "bool": "{v}.__class__ is bool",
    "dtype": "{v}.__class__ is DType",
    "number": "({v}.__class__ is int or {v}.__class__ is float)",
    "intlist": "({v}.__class__ is tuple or {v}.__class__ is Size or {v}.__class__ is list) "
               "and {{i.__class__ for i in {v}}} <= {{int}}",
    "tensorlist": "({v}.__class__ is tuple or {v}.__class__ is list) and "
                  "{{t.__class__ for t in {v}}} <= {{Tensor}}",
}


def _param_kind(param: Any) -> str | None:
    t = param.type
    if isinstance(t, BaseType):
        return _FAST_KINDS.get(t.name)
    if isinstance(t, ListType) and t.size is None and str(t.elem) in ("int", "SymInt"):
        return "intlist"
    if isinstance(t, ListType) and t.size is None and str(t.elem) == "Tensor":
        return "tensorlist"
    return None


def _rejects(t: Any, cls: str, numbers_as_tensors: bool) -> bool:
    """True when the parser's converter for type `t` refuses every value of class `cls`."""
    if isinstance(t, OptionalType):
        t = t.elem
    if isinstance(t, ListType):
        if cls == "seq":
            return False
        return t.size is None  # a sized list takes a bare scalar
    if not isinstance(t, BaseType):
        return False
    name = t.name
    if name == "Tensor":
        return not (cls == "Tensor" or (numbers_as_tensors and cls in ("int", "float", "bool")))
    if name == "Scalar":
        return cls in ("dtype", "seq")
    if name in ("int", "SymInt"):
        return cls in ("float", "bool", "dtype", "seq")
    if name == "float":
        return cls in ("dtype", "seq")
    if name == "bool":
        return cls != "bool"
    if name == "ScalarType":
        return cls != "dtype"
    if name in ("str", "Dimname", "Layout", "MemoryFormat", "Generator"):
        return True
    if name == "Device":
        return cls in ("Tensor", "float", "bool", "dtype", "seq")
    return False


def _refuses(sig: PythonSignature, classes: list[tuple[str, ...]]) -> bool:
    """Signature `sig` certainly refuses positional arguments of these classes, no keywords."""
    n = len(classes)
    if sig.allow_varargs_intlist and n >= 1 and all(c == ("int",) for c in classes):
        return False
    positional = [p for p in sig.params if not p.keyword_only]
    if n > len(positional):
        return True
    if any(p.required for p in sig.params[n:]) or any(
        p.required and p.keyword_only for p in sig.params
    ):
        return True
    for param, options in zip(positional, classes):
        if all(_rejects(param.type, c, sig.allow_numbers_as_tensors) for c in options):
            return True
    return False


def _default_values(sig: PythonSignature) -> dict[str, str] | None:
    """Source text of each optional argument's default (and `self` for methods), by schema
    name; None when one has no literal form, so no fast path can fill it in."""
    values: dict[str, str] = {}
    for p in sig.params:
        if p.required or p.name == "out":
            continue
        text = _literal_default(p.type, p.default)
        if text is None:
            return None
        values[p.schema_name] = text
    if sig.method:
        values["self"] = "self"
    return values


def _typed_fast_path(sig: PythonSignature, earlier: Sequence[PythonSignature]) -> list[str]:
    """One `if` block: this signature's exact-class call, when it is safe (see the Note).
    A factory's `requires_grad=False` default needs nothing after the call."""
    functional = sig.functional
    if functional is None or _named_returns(functional):
        return []
    required = [p for p in sig.params if p.required]
    positional = [p for p in sig.params if not p.keyword_only]
    if any(p.keyword_only for p in required) or positional[: len(required)] != required:
        return []
    kinds = [_param_kind(p) for p in required]
    if any(k is None for k in kinds):
        return []
    values = _default_values(sig)
    if values is None:
        return []
    entry = naming.entry_global(functional.name)
    lines: list[str] = []
    varargs = sig.allow_varargs_intlist and kinds == ["intlist"]
    if varargs:
        # zeros(2, 3) and view(2, 3): every positional argument an int.
        if all(_refuses(j, [("int",)]) and _refuses(j, [("int",), ("int",)]) and not
               j.allow_varargs_intlist for j in earlier):
            values[required[0].schema_name] = "args"
            call = ", ".join(values[a.name] for a in functional.arguments)
            lines += ["        if n and {i.__class__ for i in args} <= {int}:",
                      f"            return {entry}.call({call})"]
    # The required arguments, then each optional positional one given positionally too
    # (`cat(ts)`, `cat(ts, 1)`), while those have fast kinds.
    params = list(required)
    for extra in [None] + positional[len(required):]:
        if extra is not None:
            kind = _param_kind(extra)
            if kind is None:
                break
            params.append(extra)
            kinds = kinds + [kind]
        classes = [_KIND_CLASSES[k] for k in kinds]
        if not all(_refuses(j, classes) for j in earlier):
            continue
        call_values = dict(values)
        for i, p in enumerate(params):
            call_values[p.schema_name] = (
                f"tuple(args[{i}])" if kinds[i] in ("intlist", "tensorlist") else f"args[{i}]"
            )
        call = ", ".join(call_values[a.name] for a in functional.arguments)
        checks = " and ".join(
            _KIND_CHECK[k].format(v=f"args[{i}]") for i, k in enumerate(kinds)
        ) or "True"
        lines += [f"        if n == {len(params)} and {checks}:",
                  f"            return {entry}.call({call})"]
    return lines


# --- one-keyword fast paths --------------------------------------------------------------------
# `sum(t, dim=1)`, `t.amax(dim=(0, 1))`: the required tensors positionally and one optional
# argument by keyword. Emitted under the same rule as Note: fast-path safety: every earlier
# signature must certainly refuse the call (no parameter of that name, a required argument
# missing, or a converter refusing the classes).

# keyword kind -> [(value check, converted value)] for the `value` of the single keyword
_KW_FORMS = {
    "int": [("value.__class__ is int", "value")],
    "bool": [("value.__class__ is bool", "value")],
    "dtype": [("value.__class__ is DType", "value")],
    "intlist": [("(value.__class__ is tuple or value.__class__ is list) and "
                 "not [i for i in value if i.__class__ is not int]", "tuple(value)")],
}


def _keyword_kind(param: Any) -> str | None:
    t = param.type.elem if isinstance(param.type, OptionalType) else param.type
    if isinstance(t, BaseType) and t.name in ("int", "SymInt"):
        return "int"
    if isinstance(t, BaseType) and t.name in ("bool", "ScalarType"):
        return "bool" if t.name == "bool" else "dtype"
    if isinstance(t, ListType) and str(t.elem) in ("int", "SymInt"):
        return f"intlist{t.size}" if t.size is not None else "intlist"
    return None


def _refuses_keyword(sig: PythonSignature, classes: list[tuple[str, ...]], name: str,
                     kw_classes: tuple[str, ...]) -> bool:
    """`sig` certainly refuses positional arguments of `classes` plus keyword `name`."""
    by_name = {p.name: p for p in sig.params}
    if name not in by_name:
        return True  # "unexpected keyword argument"
    n = len(classes)
    positional = [p for p in sig.params if not p.keyword_only]
    if n > len(positional) or any(p.name == name for p in positional[:n]):
        return True
    if sig.allow_varargs_intlist and all(c == ("int",) for c in classes):
        return False
    given = {p.name for p in positional[:n]} | {name}
    if any(p.required and p.name not in given for p in sig.params):
        return True
    for param, options in zip(positional, classes):
        if all(_rejects(param.type, c, sig.allow_numbers_as_tensors) for c in options):
            return True
    return all(_rejects(by_name[name].type, c, sig.allow_numbers_as_tensors) for c in kw_classes)


def _keyword_fast_path(sig: PythonSignature, earlier: Sequence[PythonSignature]) -> list[str]:
    functional = sig.functional
    if functional is None or _named_returns(functional) or sig.has_requires_grad:
        return []
    tensors = []
    for p in sig.params:
        if p.keyword_only or not p.required or _param_kind(p) != "tensor":
            break
        tensors.append(p)
    others = [p for p in sig.params if p.required and p not in tensors]
    if len(others) > 1:
        return []
    required = tensors
    defaults = _default_values(sig)
    if defaults is None:
        return []
    entry = naming.entry_global(functional.name)
    n = len(required)
    tensor_checks = " and ".join(f"args[{i}].__class__ is Tensor" for i in range(n))
    lines: list[str] = []
    for p in others or sig.params:
        if p in tensors or p.name == "out" or (p.required and not others):
            continue
        kind = _keyword_kind(p)
        if kind is None:
            continue
        forms = list(_KW_FORMS["intlist" if kind.startswith("intlist") else kind])
        kw_classes: tuple[str, ...] = _KIND_CLASSES["intlist" if kind.startswith("intlist")
                                                    else kind]
        if kind.startswith("intlist") and kind != "intlist":  # `int[1]` takes a bare int
            size = int(kind.removeprefix("intlist"))
            forms.insert(0, ("value.__class__ is int", "(value,)" + " * " + str(size)))
            kw_classes = kw_classes + ("int",)
        classes = [_KIND_CLASSES["tensor"]] * n
        if not all(_refuses_keyword(j, classes, p.name, kw_classes) for j in earlier):
            continue
        head = f"key == {p.name!r} and n == {n}" + (f" and {tensor_checks}" if n else "")
        lines.append(f"        if {head}:")
        for check, converted in forms:
            values = dict(defaults)
            for i, r in enumerate(required):
                values[r.schema_name] = f"args[{i}]"
            values[p.schema_name] = converted
            call = ", ".join(values[a.name] for a in functional.arguments)
            lines += [f"            if {check}:", f"                return {entry}.call({call})"]
    return lines


def gen_binding(python_name: str, signatures: Sequence[PythonSignature], method: bool) -> str:
    """Source of one binding function (`add` or `Tensor_add`)."""
    fname = naming.binding_name(python_name, method)
    table = naming.binding_table(python_name, method)
    doc = "\n".join(f"    {python_name}{s.signature_text()}" for s in signatures)
    head = f"def {fname}(self, *args, **kwargs):" if method else f"def {fname}(*args, **kwargs):"
    lines = [head, f'    """\n{doc}\n    """']
    first = _fast_path(signatures[0]) if signatures else []
    lines.extend(first)
    typed: list[str] = []
    for k, sig in enumerate(signatures):
        if k == 0 and first:
            continue
        typed += _typed_fast_path(sig, signatures[:k])
    if typed:
        lines.append("    if not kwargs and not TRACE.ACTIVE:")
        lines.append("        n = len(args)")
        lines.extend(typed)
    keyword: list[str] = []
    for k, sig in enumerate(signatures):
        keyword += _keyword_fast_path(sig, signatures[:k])
    if keyword:
        lines.append("    if len(kwargs) == 1 and not TRACE.ACTIVE:")
        lines.append("        n = len(args)")
        lines.append("        ((key, value),) = kwargs.items()")
        lines.extend(keyword)
    self_arg = ", self" if method else ""
    lines.append(f"    return bind_and_call({table}, args, kwargs{self_arg})")
    return "\n".join(lines) + "\n"


def gen_dunder(dunder: str, python_name: str, signatures: Sequence[PythonSignature]) -> str:
    """A Python operator method: the method binding, NotImplemented when the operand is wrong."""
    table = naming.binding_table(python_name, True)
    lines = [f"def Operator_{dunder}(self, other):",
             f'    """Tensor.{dunder}: Tensor.{python_name}(other)."""']
    fast = _fast_call(signatures[0]) if signatures else None
    if fast is not None and fast[0] == 1:
        call = fast[1].replace("a0", "other")
        entry = naming.entry_global(signatures[0].functional.name)
        lines.append("    if not TRACE.ACTIVE:")
        lines.append("        if other.__class__ is Tensor:")
        lines.append(f"            return {entry}.call({call})")
        if signatures[0].allow_numbers_as_tensors:
            lines.append("        if other.__class__ is float or other.__class__ is int:")
            lines.append("            other = wrapped_number(other)")
            lines.append(f"            return {entry}.call({call})")
    lines.append("    try:")
    lines.append(f"        return bind_and_call({table}, (other,), {{}}, self)")
    lines.append("    except ArgumentParseError:")
    lines.append("        return NotImplemented")
    return "\n".join(lines) + "\n"


def gen_unary_dunder(dunder: str, python_name: str) -> str:
    table = naming.binding_table(python_name, True)
    return (
        f"def Operator_{dunder}(self):\n"
        f'    """Tensor.{dunder}: Tensor.{python_name}()."""\n'
        f"    return bind_and_call({table}, (), {{}}, self)\n"
    )
