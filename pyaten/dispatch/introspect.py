"""Looking at an operator's table: `dump_table`, `explain`, and PyTorch's dump format."""

from __future__ import annotations

import os
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from pyaten.dispatch.keys import RUNTIME_KEYS, display_name
from pyaten.dispatch.operator import OperatorEntry
from pyaten.dispatch.registry import find_operator
from pyaten.dispatch.rules import AMBIGUOUS, FALLBACK, Resolution
from pyaten.dispatch.text_width import text_width

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

    def groups(self) -> list[SlotGroup]:
        """The slots that share a rule and a registration, in the table order of their first key.

        A name that contains its key (`wrapper_CPU_add_Tensor`, `Python_fallback`) is compared
        with the key replaced by `<key>`, so the per-key kernels of one registration group too.
        """
        members: dict[tuple[str, ...], list[ExplainedSlot]] = {}
        for s in self.slots:
            fields = (s.serves, s.rule, s.why, s.kernel, s.registered_at)
            members.setdefault(tuple(f.replace(s.key, "<key>") for f in fields), []).append(s)
        groups = []
        for templated, slots in members.items():
            first = slots[0]
            same = all(
                (s.serves, s.kernel, s.registered_at)
                == (first.serves, first.kernel, first.registered_at)
                for s in slots
            )
            serves, rule, why, kernel, where = (
                (first.serves, first.rule, first.why, first.kernel, first.registered_at)
                if same
                else templated
            )
            keys = tuple(s.key for s in slots)
            groups.append(SlotGroup(keys, serves, rule, why, kernel, where))
        return groups

    def __str__(self) -> str:
        shown = sum(s.serves != "missing" for s in self.slots)
        groups = self.groups()
        lines = _wrap("operator: ", self.operator) + _wrap("schema:   ", self.schema)
        hidden = len(RUNTIME_KEYS) - len(self.slots)
        summary = f"{shown} of {len(RUNTIME_KEYS)} keys have a kernel"
        summary += f" ({hidden} keys without one not shown)" if hidden else ""
        lines += _wrap("", f"{summary}, in {len(groups)} groups by rule and registration.")
        if any("<key>" in g.serves + g.kernel + g.registered_at for g in groups):
            lines.append("In a group, <key> stands for each key's own name.")
        for group in groups:
            lines.append("")
            lines += group.lines()
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class SlotGroup:
    """Slots served alike; `<key>` in a field stands for each key's own name."""

    keys: tuple[str, ...]
    serves: str
    rule: str
    why: str
    kernel: str
    registered_at: str

    def lines(self) -> list[str]:
        count = f" ({len(self.keys)} keys)" if len(self.keys) > 3 else ""
        lines = _wrap("", ", ".join(self.keys) + count, indent=2)
        lines += _wrap("    rule    ", f"{self.rule}: {self.why}")
        if not self.kernel:
            return lines
        if self.serves == "fallthrough":
            kernel = f"{self.kernel} (the call falls through to the next key in its set)"
        elif self.serves == "fallback" or self.serves == self.kernel:
            kernel = self.kernel
        else:
            kernel = f"{self.kernel} (registered for {self.serves})"
        lines += _wrap("    kernel  ", kernel)
        if self.registered_at:
            # "structured kernel K at FILE:LINE": K is on the line above already.
            where = self.registered_at.replace(f" {self.kernel} at ", " at ", 1)
            lines += _wrap("    at      ", package_relative(where))
        return lines


_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent.parent) + os.sep
_ABSOLUTE_PATH = re.compile(r"(?<![\w.])/[^\s:()]+")


def _wrap(lead: str, text: str, indent: int | None = None) -> list[str]:
    """`lead + text` wrapped at `text_width()` (100, or the terminal's under the CLI),
    continuation lines under the text (or `indent`)."""
    pad = " " * (len(lead) if indent is None else indent)
    return textwrap.wrap(
        lead + text,
        width=text_width(),
        subsequent_indent=pad,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [lead.rstrip()]


def package_relative(text: str) -> str:
    """Absolute paths in `text` written relative to the directory holding the `pyaten`
    package (`pyaten/native/kernels/binary.py`), else to the working directory."""
    cwd = os.getcwd() + os.sep

    def relative(match: re.Match[str]) -> str:
        path = match.group(0)
        for base in (_PACKAGE_PARENT, cwd):
            if path.startswith(base):
                return path[len(base) :]
        return path

    return _ABSOLUTE_PATH.sub(relative, text)


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
