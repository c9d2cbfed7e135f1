"""From dispatch trace nodes to explained calls: declaration, binding, dispatch, kernel, result.

The dispatcher records one `trace.Node` per lookup (a call or a redispatch) with the notes
other layers attach (`binding`, `structured.meta`, `structured.impl`, `stub`, `result`).
This module regroups them the way a reader follows a call: one `ExplainedCall` per operator
call, holding the `native_functions.yaml` declaration (or the `Library.define` site), how the
binding matched, the chain of table lookups until a kernel ran, what that kernel did (and the
operator calls it made, explained the same way) and what came back.

Everything is plain data (`as_dict()` is JSON-ready); rendering lives in `explain_text`.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from typing import Any

from pyaten.codegen.naming import default_kernel_name, meta_name
from pyaten.dispatch import errors as dispatch_errors
from pyaten.dispatch import trace
from pyaten.dispatch.introspect import RULE_TEXT
from pyaten.dispatch.registry import find_operator
from pyaten.native import registry as kernel_registry
from pyaten.utils.explain_values import first_site, key_names, short_path, short_paths

# Rules whose slot a composite (alias-key) kernel serves, and the usual alias key of each.
_COMPOSITE_RULES = {
    "math kernel": "CompositeImplicitAutograd",
    "default backend kernel": "CompositeExplicitAutograd",
}
_KNOWN_NOTES = ("binding", "structured.meta", "structured.impl", "stub", "result", "fallback")


@dataclass(frozen=True, slots=True)
class Hop:
    """One table lookup of a call: the key set, the key chosen, the rule and the kernel."""

    redispatch: bool
    arguments: tuple[tuple[str, tuple[str, ...]], ...]  # (argument, its key set)
    tls_included: tuple[str, ...]
    tls_excluded: tuple[str, ...]
    keyset: tuple[str, ...]
    key: str
    rule: str
    kernel: str
    registration: str  # the registration's debug text, paths shortened
    notes: tuple[dict[str, Any], ...] = ()  # notes of kinds this module does not interpret

    @property
    def registered_at(self) -> str:
        return first_site(self.registration)

    @property
    def fallthrough_dropped(self) -> list[str]:
        """Keys of (arguments | included) - excluded that the table's fallthroughs removed."""
        if self.redispatch:
            return []
        union: list[str] = []
        for _, keys in self.arguments:
            union += [k for k in keys if k not in union]
        union += [k for k in self.tls_included if k not in union]
        return [k for k in union if k not in self.tls_excluded and k not in self.keyset]

    def as_dict(self) -> dict[str, Any]:
        return {
            "redispatch": self.redispatch,
            "arguments": [{"name": n, "keys": list(k)} for n, k in self.arguments],
            "tls_included": list(self.tls_included),
            "tls_excluded": list(self.tls_excluded),
            "keyset": list(self.keyset),
            "fallthrough_dropped": self.fallthrough_dropped,
            "key": self.key,
            "rule": self.rule,
            "why": RULE_TEXT.get(self.rule, ""),
            "kernel": self.kernel,
            "registered_at": self.registered_at,
            "registration": self.registration,
            "notes": [dict(n) for n in self.notes],
        }


@dataclass(frozen=True, slots=True)
class KernelRun:
    """What the kernel that finally ran did."""

    key: str
    name: str
    kind: str  # structured, autogen, composite, native, python, fallback, missing
    registered_at: str
    composite: str | None = None  # the alias key of a composite kernel
    wrapper: str | None = None  # structured: functional / inplace / out
    meta: dict[str, Any] | None = None  # structured: function, site, decisions per output
    impl: dict[str, str] | None = None  # structured: impl function and its site
    stubs: tuple[dict[str, Any], ...] = ()
    returns: str | None = None  # what the schema says the result aliases
    missing: dict[str, Any] | None = None  # no kernel: keys that have one, the fix
    # a plug-in device's fallback: device, policy, reason (pyaten/backends/fallback.py)
    fallback: dict[str, Any] | None = None
    calls: tuple[ExplainedCall, ...] = ()
    hidden_calls: int = 0  # calls below the depth limit

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "name": self.name,
            "kind": self.kind,
            "registered_at": self.registered_at,
            "composite": self.composite,
            "wrapper": self.wrapper,
            "meta": self.meta,
            "impl": self.impl,
            "stubs": [dict(s) for s in self.stubs],
            "returns": self.returns,
            "missing": self.missing,
            "fallback": self.fallback,
            "calls": [c.as_dict() for c in self.calls],
            "hidden_calls": self.hidden_calls,
        }


@dataclass(frozen=True, slots=True)
class ExplainedCall:
    """One operator call followed from its declaration to its result."""

    operator: str
    declaration: dict[str, Any]
    binding: dict[str, Any] | None
    dispatch: tuple[Hop, ...]
    kernel: KernelRun
    result: dict[str, Any] | None
    error: str | None = None
    raised_here: bool = False  # the error started in this call, not in one it made
    caller: str = "python"  # python (a binding or an operator handle) or kernel
    # The error started in a call this one made that --depth hides: that call's operator.
    raised_below: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "operator": self.operator,
            "caller": self.caller,
            "declaration": self.declaration,
            "binding": self.binding,
            "dispatch": [h.as_dict() for h in self.dispatch],
            "kernel": self.kernel.as_dict(),
            "result": self.result,
            "error": self.error,
            "raised_here": self.raised_here,
            "raised_below": self.raised_below,
        }


@dataclass(slots=True)
class _Gathered:
    """A call's nodes flattened along its redispatch chain."""

    hops: list[trace.Node] = field(default_factory=list)
    calls: list[trace.Node] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)


def _gather(node: trace.Node, into: _Gathered) -> _Gathered:
    into.hops.append(node)
    into.notes += node.notes
    for child in node.children:
        if child.redispatch:
            _gather(child, into)
        else:
            into.calls.append(child)
    return into


# -- declarations --------------------------------------------------------------------------


def _qualified(name: Any, namespace: str) -> str:
    return f"{name.namespace or namespace}::{name.unqualified}"


@functools.lru_cache(maxsize=1)
def _records() -> dict[str, Any]:
    # Read the YAML again (once, on the first explanation): the loader keeps only what it
    # needs of each entry, and explaining wants all of it (dispatch, structured, delegate).
    from pyaten.declarations import load_native_functions
    from pyaten.native.loader import NAMESPACE, NATIVE_YAML

    return {
        _qualified(fn.func.name, NAMESPACE): fn
        for fn in load_native_functions(str(NATIVE_YAML))
    }


def _dispatch_text(fn: Any) -> dict[str, str]:
    return {key: kernel for key, kernel in fn.dispatch.items()}


def declaration(operator: str) -> dict[str, Any]:
    """Where and how `operator` was declared: its YAML entry, or the `Library` that made it."""
    if operator in _records():
        return copy.deepcopy(_yaml_declaration(operator))  # callers may edit their copy
    return _library_declaration(operator)


@functools.cache
def _yaml_declaration(operator: str) -> dict[str, Any]:
    # YAML records never change after import: computed once per operator.
    fn = _records()[operator]
    info: dict[str, Any] = {
        "source": "native_functions.yaml",
        "func": str(fn.func),
        "loc": f"{short_path(fn.loc.path)}:{fn.loc.line}" if fn.loc else "",
        "variants": sorted(fn.variants),
        "dispatch": _dispatch_text(fn),
        "structured": fn.structured,
        "structured_delegate": None,
        "delegate_dispatch": None,
        "autogen_from": None,
        "implicit_composite": None,
    }
    if fn.structured_delegate is not None:
        delegate = _qualified(fn.structured_delegate, operator.split("::")[0])
        info["structured_delegate"] = delegate
        target = _records().get(delegate)
        info["delegate_dispatch"] = _dispatch_text(target) if target is not None else {}
    elif fn.generated_from is not None:
        info["autogen_from"] = _qualified(fn.generated_from, operator.split("::")[0])
    elif not fn.dispatch_declared and not fn.structured:
        # No `dispatch:` key: PyTorch's rule makes it a CompositeImplicitAutograd kernel.
        info["implicit_composite"] = default_kernel_name(fn.func.name)
    return info


def _library_declaration(operator: str) -> dict[str, Any]:
    entry = find_operator(operator)
    if entry is None or entry.schema is None:
        return {"source": "unknown", "func": operator}
    kernels = {
        key.name: f"{_fn_name(k.fn)} at {first_site(short_paths(k.debug))}"
        for key, k in entry.active_kernels().items()
    }
    return {
        "source": "Library",
        "func": str(entry.schema),
        "loc": first_site(short_paths(entry.schema_debug)),
        "kernels": kernels,
    }


def _fn_name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


# -- the kernel that ran -------------------------------------------------------------------


def _structured_parts(operator: str, notes: list[dict[str, Any]]) -> dict[str, Any]:
    metas = [
        {k: v for k, v in n.items() if k != "kind"}
        for n in notes
        if n["kind"] == "structured.meta"
    ]
    impls = [n for n in notes if n["kind"] == "structured.impl"]
    # The wrapper kind follows the schema's kind (as codegen chose it), even if meta raised.
    wrapper = (metas or impls or [{}])[0].get("wrapper") or _schema_kind(operator)
    meta_fn = _meta_function(operator)
    meta = {
        "function": meta_fn,
        "at": short_path_site(kernel_registry.site(meta_fn)) if meta_fn else "",
        "outputs": metas,
    }
    impl = None
    if impls:
        name = impls[0]["impl"]
        impl = {"function": name, "at": short_path_site(kernel_registry.site(name))}
    return {"wrapper": wrapper, "meta": meta, "impl": impl}


def _schema_kind(operator: str) -> str | None:
    schema = getattr(find_operator(operator), "schema", None)
    kind = schema.kind.name if schema is not None else None
    return kind if kind in ("functional", "inplace", "out") else None


def short_path_site(site: str) -> str:
    return short_paths(site) if site != "<missing>" else ""


@functools.cache
def _meta_function(operator: str) -> str | None:
    """`meta_<functional>`: the meta function of the structured group `operator` is in."""
    fn = _records().get(operator)
    if fn is None:
        return None
    namespace = operator.split("::")[0]
    out_name = operator if fn.structured else (
        _qualified(fn.structured_delegate, namespace) if fn.structured_delegate else None
    )
    if out_name is None:
        return None
    for other in _records().values():
        if (
            other.structured_delegate is not None
            and _qualified(other.structured_delegate, namespace) == out_name
            and other.func.kind.name == "functional"
        ):
            return meta_name(other.func.name)
    out_fn = _records().get(out_name)
    return meta_name(out_fn.func.name) if out_fn is not None else None


def _returns_alias(operator: str) -> str | None:
    """From the schema's alias annotations: which argument the result is, or views."""
    entry = find_operator(operator)
    schema = getattr(entry, "schema", None)
    if schema is None or not schema.returns:
        return None
    ret = schema.returns[0].annotation
    if ret is None:
        first = schema.returns[0].type
        what = "a new tensor" if first.is_tensor_like() else f"a new {first}"
        more = f" (and {len(schema.returns) - 1} more)" if len(schema.returns) > 1 else ""
        return f"{what}{more} (no alias annotation)"
    for arg in schema.arguments:
        if arg.annotation is not None and arg.annotation.alias_set == ret.alias_set:
            if ret.is_write:
                return f"'{arg.name}' itself, written in place (alias annotation {ret})"
            return f"a view of '{arg.name}' (alias annotation {ret})"
    return f"alias annotation {ret}"


def _kernel_run(
    operator: str, gathered: _Gathered, calls: tuple[ExplainedCall, ...], hidden: int
) -> KernelRun:
    last = gathered.hops[-1]
    registration = short_paths(last.registered_at)
    base: dict[str, Any] = {
        "key": last.key,
        "name": last.kernel,
        "registered_at": first_site(registration),
        "calls": calls,
        "hidden_calls": hidden,
        "stubs": tuple(
            {k: short_paths(str(v)) for k, v in n.items() if k != "kind"}
            for n in gathered.notes
            if n["kind"] == "stub"
        ),
        "returns": _returns_alias(operator),
    }
    if last.rule == "missing" or last.kernel == "(none)":
        return KernelRun(kind="missing", missing=_missing(operator, last), **base)
    device_fallback = next(
        ({k: v for k, v in n.items() if k != "kind"}
         for n in gathered.notes if n["kind"] == "fallback"),
        None,
    )  # fmt: skip
    if device_fallback is not None:  # a plug-in device's fallback (pyaten/backends)
        return KernelRun(kind="fallback", fallback=device_fallback, **base)
    alias = None
    if last.rule in _COMPOSITE_RULES:
        alias = _registration_key(operator, last.kernel) or _COMPOSITE_RULES[last.rule]
    if registration.startswith("autogen kernel"):
        return KernelRun(kind="autogen", composite=alias, **base)
    if alias is not None:
        return KernelRun(kind="composite", composite=alias, **base)
    if registration.startswith("structured kernel"):
        return KernelRun(kind="structured", **_structured_parts(operator, gathered.notes), **base)
    if last.rule == "backend fallback":
        return KernelRun(kind="fallback", **base)
    kind = "native" if registration.startswith("native kernel") else "python"
    return KernelRun(kind=kind, **base)


def _registration_key(operator: str, kernel_name: str) -> str | None:
    """The key a kernel was registered under (CompositeExplicitAutogradNonFunctional, ...)."""
    entry = find_operator(operator)
    if entry is None:
        return None
    for key, kernel in entry.active_kernels().items():
        if _fn_name(kernel.fn) == kernel_name:
            return key.name
    return None


def _missing(operator: str, last: trace.Node) -> dict[str, Any]:
    entry = find_operator(operator)
    available = dispatch_errors.available_keys(entry) if entry is not None else []
    # The operator's own registrations, apart from the global fallbacks PyTorch also lists.
    own = sorted(key.name for key in entry.active_kernels()) if entry is not None else []
    name = operator.split("::", 1)[-1]
    namespace = operator.split("::", 1)[0]
    key = last.key
    if key == "Undefined":
        fix = (
            f"Library({namespace!r}, 'IMPL').impl({name!r}, fn, 'CompositeExplicitAutograd') "
            "(no tensor arguments: only a composite or fallback kernel can serve it)"
        )
    else:
        fix = f"Library({namespace!r}, 'IMPL').impl({name!r}, fn, {key!r})"
    return {"key": key, "available": available, "registered": own, "fix": fix}


# -- building ------------------------------------------------------------------------------


def _hop(node: trace.Node) -> Hop:
    extra = tuple(dict(n) for n in node.notes if n["kind"] not in _KNOWN_NOTES)
    return Hop(
        redispatch=node.redispatch,
        arguments=tuple((a["name"], tuple(key_names(a["keys"]))) for a in node.arguments),
        tls_included=tuple(key_names(node.tls_included)),
        tls_excluded=tuple(key_names(node.tls_excluded)),
        keyset=tuple(key_names(node.keyset)),
        key=node.key,
        rule=node.rule,
        kernel=node.kernel,
        registration=short_paths(node.registered_at),
        notes=extra,
    )


def _binding(notes: list[dict[str, Any]]) -> dict[str, Any] | None:
    for n in notes:
        if n["kind"] == "binding":
            info = {k: v for k, v in n.items() if k != "kind"}
            info["arguments"] = {
                name: "None" if text == "NoneType None" else text
                for name, text in info["arguments"].items()
            }
            return info
    return None


def _result(node: trace.Node) -> dict[str, Any] | None:
    for n in reversed(node.notes):
        if n["kind"] == "result":
            return {k: v for k, v in n.items() if k != "kind"}
    if node.result is not None:
        return {"type": "repr", "value": node.result}
    return None


def explain_node(node: trace.Node, depth: int | None, level: int = 1) -> ExplainedCall:
    """The explained call of a top-level (non-redispatch) trace node; `depth` limits nesting."""
    gathered = _gather(node, _Gathered())
    if depth is not None and level >= depth:
        calls: tuple[ExplainedCall, ...] = ()
        hidden = len(gathered.calls)
    else:
        calls = tuple(explain_node(c, depth, level + 1) for c in gathered.calls)
        hidden = 0
    child_failed = any(c.error is not None for c in gathered.calls)
    return ExplainedCall(
        operator=node.operator,
        declaration=declaration(node.operator),
        binding=_binding(node.notes),
        dispatch=tuple(_hop(h) for h in gathered.hops),
        kernel=_kernel_run(node.operator, gathered, calls, hidden),
        result=_result(node) if node.error is None else None,
        error=node.error,
        raised_here=node.error is not None and not child_failed,
        caller="python" if level == 1 else "kernel",
        raised_below=_failing_operator(gathered.calls) if hidden and node.error else None,
    )


def _failing_operator(nodes: list[trace.Node]) -> str | None:
    """The operator of the deepest call among `nodes` (and the calls they made) that raised."""
    for node in reversed(nodes):
        if node.error is not None:
            return _failing_operator(_gather(node, _Gathered()).calls) or node.operator
    return None
