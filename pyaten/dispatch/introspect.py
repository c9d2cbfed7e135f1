"""Looking at an operator's table: `dump_table`, `explain`, and PyTorch's dump format."""

from __future__ import annotations

from dataclasses import dataclass

from pyaten.dispatch.keys import RUNTIME_KEYS, display_name
from pyaten.dispatch.operator import OperatorEntry
from pyaten.dispatch.registry import find_operator
from pyaten.dispatch.rules import AMBIGUOUS, FALLBACK, Resolution

# What each rule tag means, for `explain`.
RULE_TEXT = {
    "kernel": "a kernel registered directly for this key",
    "default backend kernel": "CompositeExplicitAutograd(NonFunctional) covers this key",
    "nested kernel": "CompositeImplicitAutogradNestedTensor covers this key",
    "math kernel": "CompositeImplicitAutograd covers this key and no backend kernel blocks it",
    "ambiguous autogradother": "CompositeImplicitAutograd and an AutogradOther backend "
    "both have kernels: calling raises",
    "autograd kernel": "the Autograd alias covers this key",
    "batched kernel": "FuncTorchBatchedDecomposition covers this key",
    "backend fallback": "no kernel of the operator applies; the global fallback serves it",
    "missing": "no kernel and no fallback: a call here raises",
}


def _lookup(qualified_name: str) -> OperatorEntry:
    entry = find_operator(qualified_name)
    if entry is None:
        raise RuntimeError(f"Could not find schema for {qualified_name}.")
    return entry


def serves(res: Resolution) -> str:
    """The `dump_table` value of one slot."""
    if res.kernel is None:
        return "missing"
    if res.rule == AMBIGUOUS:
        return "ambiguous_autogradother"
    if res.kernel.fallthrough:
        return "fallthrough"
    if res.rule == FALLBACK:
        return "fallback"
    return res.kernel.key.name


def dump_table(qualified_name: str) -> dict[str, str]:
    """For every runtime key (Undefined first, table order): what serves it.

    Values: the registration key of the winning kernel ("CPU", "AutogradCPU", or an alias key
    such as "CompositeImplicitAutograd"), "fallthrough", "fallback", "ambiguous_autogradother"
    or "missing".
    """
    entry = _lookup(qualified_name)
    return {key.name: serves(res) for key, res in zip(RUNTIME_KEYS, entry.table)}


@dataclass(frozen=True, slots=True)
class ExplainedSlot:
    key: str
    serves: str
    rule: str
    why: str
    kernel: str
    registered_at: str


@dataclass(frozen=True, slots=True)
class Explanation:
    """`explain(name)`: every slot with its rule and the winning kernel's registration site."""

    operator: str
    schema: str
    slots: tuple[ExplainedSlot, ...]

    def as_dict(self) -> dict[str, dict[str, str]]:
        return {
            s.key: {
                "serves": s.serves,
                "rule": s.rule,
                "why": s.why,
                "kernel": s.kernel,
                "registered_at": s.registered_at,
            }
            for s in self.slots
        }

    def __str__(self) -> str:
        lines = [f"operator: {self.operator}", f"schema: {self.schema}"]
        width = max(len(s.key) for s in self.slots)
        for s in self.slots:
            where = f"  ({s.registered_at})" if s.registered_at else ""
            lines.append(f"{s.key:<{width}}  {s.serves:<26} [{s.rule}] {s.kernel}{where}")
        return "\n".join(lines)


def _kernel_text(res: Resolution) -> tuple[str, str]:
    kernel = res.kernel
    if kernel is None:
        return "", ""
    if res.rule == AMBIGUOUS:
        return "ambiguous_autogradother", ""
    name = "fallthrough_kernel" if kernel.fallthrough else getattr(kernel.fn, "__qualname__", "?")
    debug = kernel.debug
    site = debug[len("registered at ") :] if debug.startswith("registered at ") else debug
    return name, site


def explain(qualified_name: str, *, show_missing: bool = False) -> Explanation:
    """The table of `qualified_name` with the rule deciding each slot and where kernels live.

    Missing slots are left out unless `show_missing` (there are 137 slots).
    """
    entry = _lookup(qualified_name)
    rows = []
    for key, res in zip(RUNTIME_KEYS, entry.table):
        if res.kernel is None and not show_missing:
            continue
        kernel, site = _kernel_text(res)
        rows.append(
            ExplainedSlot(
                display_name(key), serves(res), res.rule, RULE_TEXT[res.rule], kernel, site
            )
        )
    schema = str(entry.schema) if entry.schema is not None else "(not defined)"
    return Explanation(entry.name, schema, tuple(rows))


def format_dump(entry: OperatorEntry) -> str:
    """The table in `torch._C._dispatch_dump_table`'s format (valid slots only)."""
    lines = []
    for key, res in zip(RUNTIME_KEYS, entry.table):
        kernel = res.kernel
        if kernel is None:
            continue
        if res.rule == AMBIGUOUS:
            text = "ambiguous_autogradother"
        else:
            text = ("fallthrough " if kernel.fallthrough else "") + kernel.debug
        lines.append(f"{display_name(key)}: {text} [{res.rule}]")
    return "\n".join(lines) + "\n"


def dump(qualified_name: str) -> str:
    """Every registered kernel, inactive (overridden) ones too, in `torch._C._dispatch_dump`'s
    format: keys in enum order, alias keys marked `[alias]`, the newest kernel first."""
    entry = _lookup(qualified_name)
    lines = [f"name: {entry.name}"]
    if entry.schema is not None:
        lines += [
            f"schema: {entry.schema}",
            f"debug: {entry.schema_debug}",
            "alias analysis kind: FROM_SCHEMA",
        ]
    else:
        lines.append("schema: (none)")
    for key in sorted(entry.kernels, key=int):
        label = display_name(key) + ("[alias]" if key.is_alias else "")
        for i, kernel in enumerate(reversed(entry.kernels[key])):
            flags = "fallthrough boxed" if kernel.fallthrough else "boxed"
            inactive = " (inactive)" if i else ""
            lines.append(f"{label}{inactive}: {kernel.debug} :: (none) [ {flags} ]")
    return "\n".join(lines) + "\n"
