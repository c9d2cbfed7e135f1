"""What a compiled call ran, in words: its guards, its graph and its fused loops.

`pyaten._dynamo.explain(fn)(*args)` (PyTorch's `torch._dynamo.explain`) compiles `fn`, calls
it once and returns an `ExplainOutput`; inside `with pyaten.explain() as ex:` every compiled
call adds the same text to the explanation (`ex.compiled`, printed after the calls).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ExplainOutput", "describe_entry", "explain"]


def describe_entry(name: str, backend: str, entry: Any) -> str:
    """The text for one cache entry (see the module docstring)."""
    lines = [f"compiled call of {name} (backend={backend}): {entry.how}", "Guards:"]
    lines += [f"  {line}" for line in entry.guards.describe()]
    cap = entry.capture
    if cap.graph is None:
        lines.append(f"Graph break: {cap.break_op}: {cap.break_reason}")
        return "\n".join(lines)
    lines.append("Graph:")
    lines += [f"  {line}" for line in cap.graph.code.strip("\n").splitlines()]
    sources = _sources(entry.run)
    if sources:
        lines.append("Fused loops:")
        lines += [f"  {line}" for text in sources for line in text.splitlines()]
    return "\n".join(lines)


def _sources(run: Any) -> list[str]:
    found = []
    for part in (run, getattr(run, "forward_fn", None), getattr(run, "backward_fn", None)):
        sources = getattr(part, "sources", None)
        if sources:
            found += sources
    return found


@dataclass
class ExplainOutput:
    """PyTorch's fields: the graphs, their count, the breaks and their reasons; `text` is
    the full description (guards, graph, loops)."""

    graphs: list[Any] = field(default_factory=list)
    graph_count: int = 0
    graph_break_count: int = 0
    break_reasons: list[str] = field(default_factory=list)
    guards: list[str] = field(default_factory=list)
    text: str = ""

    def __str__(self) -> str:
        head = (f"Graph Count: {self.graph_count}\nGraph Break Count: "
                f"{self.graph_break_count}\nBreak Reasons:\n"
                + "".join(f"  {r}\n" for r in self.break_reasons))
        return head + self.text


def explain(fn: Callable[..., Any], backend: Any = None) -> Callable[..., ExplainOutput]:
    """`explain(fn)(*args, **kwargs)`: compile `fn` afresh (a compiled function keeps its
    backend), call it once, and describe what ran."""
    from .eval_frame import CompiledFunction, OptimizedModule

    if isinstance(fn, OptimizedModule):
        fn = fn._compiled
    if isinstance(fn, CompiledFunction):
        target, chosen, module = fn._fn, fn._backend, fn._module
    else:
        target, chosen, module = fn, "pyaten", None
    if backend is not None:
        chosen = backend

    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        compiled = CompiledFunction(target, chosen, False, module=module)
        compiled(*args, **kwargs)
        entry = compiled.last_entry
        out = ExplainOutput()
        report = compiled.report
        out.graph_break_count = len(report.graph_breaks)
        out.break_reasons = [str(b) for b in report.graph_breaks]
        if entry is not None:
            out.guards = entry.guards.describe()
            if entry.capture.graph is not None:
                out.graphs.append(entry.capture.graph)
                out.graph_count = 1
            out.text = describe_entry(report.name, report.backend, entry)
        return out

    return run
