"""`pyaten.explain()`: follow every operator call made in a block from YAML to kernel.

    with pyaten.explain() as ex:
        y = pyaten.add(pyaten.ones(2, 3), 1.5, alpha=2)
    print(ex)            # the tree as text
    ex.as_dict()         # the same tree as data (`ex.to_json()` for tools)

For each operator call the explanation holds five parts (see docs/explain.md):
the declaration (`func:` line and file:line, variants, dispatch entries), the binding
(overload chosen, arguments as bound, rejected overloads and why), dispatch (each tensor
argument's keys, thread-local sets, the key set, key, rule and registration site of every
lookup, redispatches included), the kernel (structured wrapper kind, meta's decisions and the
impl; a composite's own calls nested the same way) and the result (shape, dtype, strides,
values). A call that raises is marked, and the block's exception is kept in `ex.error`; it
still propagates, as without explaining.

It is built on `pyaten.dispatch.trace()`: nothing is recorded, and the call path pays
nothing, while no explanation (or trace) is active.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pyaten.dispatch import trace

if TYPE_CHECKING:
    from pyaten.utils.explain_model import ExplainedCall

# The model and text modules are imported on first use: `import pyaten` stays as fast.
__all__ = ["Explanation", "explain"]

_LOCK = threading.Lock()
_ACTIVE_EXPLANATIONS = 0  # the result hook stays installed while any explanation is open
# Open explanations, innermost last: a compiled call (pyaten._dynamo) adds its guards, graph
# and fused loops to each one's `compiled` list, printed after the calls.
OPEN: list[Explanation] = []


def _install_hook() -> None:
    global _ACTIVE_EXPLANATIONS
    from pyaten.utils.explain_values import describe

    with _LOCK:
        _ACTIVE_EXPLANATIONS += 1
        trace.describe_result = describe


def _remove_hook() -> None:
    global _ACTIVE_EXPLANATIONS
    with _LOCK:
        _ACTIVE_EXPLANATIONS -= 1
        if _ACTIVE_EXPLANATIONS == 0:
            trace.describe_result = None


class Explanation:
    """The calls made inside a `with pyaten.explain()` block, explained (see module doc)."""

    def __init__(self, *, depth: int | None = None, values: bool = True) -> None:
        if depth is not None and (not isinstance(depth, int) or depth < 1):
            raise ValueError(f"explain(): depth must be a positive int or None, got {depth!r}")
        self.depth = depth
        self.values = values
        self.calls: tuple[ExplainedCall, ...] = ()
        self.error: dict[str, Any] | None = None
        self.expression: str | None = None
        self.value: dict[str, Any] | None = None  # set by `pyaten explain` for its EXPR
        self.warnings: list[str] = []
        self.internal_error: str | None = None  # a failure of explain itself (a pyaten bug)
        self.compiled: list[str] = []  # compiled calls made in the block (docs/compile.md)
        self._trace: trace.Trace | None = None

    def __enter__(self) -> Explanation:
        if self._trace is not None:
            raise RuntimeError("explain(): this explanation is already recording")
        _install_hook()
        self._trace = trace.Trace()
        self._trace.__enter__()
        OPEN.append(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        recorder = self._trace
        if recorder is None:
            raise RuntimeError("explain(): __exit__ without a matching __enter__")
        self._trace = None
        if self in OPEN:
            OPEN.remove(self)
        recorder.__exit__(exc_type, exc, tb)
        _remove_hook()
        from pyaten.utils.explain_model import explain_node

        self.error = None
        self.internal_error = None
        try:
            self.calls = tuple(explain_node(node, self.depth) for node in recorder.nodes)
        except Exception as failure:  # explaining must never change what the block raises
            self.calls = ()
            self.internal_error = f"{type(failure).__name__}: {failure}"
        if exc is not None:
            self.record_error(exc)

    def record_error(self, exc: BaseException) -> None:
        """Keep `exc` as the block's error, naming the call it started in."""
        failing = _failing(self.calls)
        self.error = {
            "type": type(exc).__name__,
            "message": str(exc),
            "operator": (failing.raised_below or failing.operator) if failing else None,
        }

    def failing_call(self) -> ExplainedCall | None:
        """The call where the block's error started (None when nothing raised in a call)."""
        return _failing(self.calls) if self.error is not None else None

    def as_dict(self) -> dict[str, Any]:
        data = {
            "expression": self.expression,
            "calls": [c.as_dict() for c in self.calls],
            "value": self.value,
            "error": self.error,
            "warnings": list(self.warnings),
            "internal_error": self.internal_error,
        }
        return data if self.values else _without_values(data)

    def to_json(self, indent: int | None = 2) -> str:
        import json  # only here: not part of `import pyaten`

        return json.dumps(self.as_dict(), indent=indent, default=str)

    def __str__(self) -> str:
        from pyaten.utils.explain_text import render

        if self.internal_error is not None:
            return f"pyaten explain failed to build the tree: {self.internal_error}"
        text = render(
            self.calls,
            values=self.values,
            header=self.expression,
            error=self.error,
            value=self.value,
            warnings=self.warnings,
        )
        return "\n\n".join([text, *self.compiled])

    def __repr__(self) -> str:
        return f"<Explanation of {len(self.calls)} call(s)>"


def _without_values(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _without_values(v) for k, v in data.items() if k != "values"}
    if isinstance(data, list):
        return [_without_values(v) for v in data]
    return data


def _failing(calls: tuple[ExplainedCall, ...]) -> ExplainedCall | None:
    for call in reversed(calls):
        if call.error is None:
            continue
        deeper = _failing(call.kernel.calls)
        return deeper if deeper is not None else call
    return None


def explain(*, depth: int | None = None, values: bool = True) -> Explanation:
    """Record and explain every operator call made in this thread inside the `with` block.

    `depth` limits how deep calls made by kernels are followed (1: only the block's own
    calls); `values=False` leaves tensor values out of the text.
    """
    return Explanation(depth=depth, values=values)
