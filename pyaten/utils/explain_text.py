"""The text form of an explanation: one indented block per operator call, five parts each.

    call 1  aten::add.Tensor  (pyaten.add)
      declaration  add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
      binding      ...
      dispatch     ...
      kernel       ...
      result       ...

Calls a kernel makes are nested under its `kernel` part, numbered `1.1`, `1.2`, ...
Thread-local sets are printed where they differ from the enclosing call's (they rarely do).
"""

from __future__ import annotations

import textwrap
from typing import Any

from pyaten.dispatch.introspect import RULE_TEXT
from pyaten.dispatch.text_width import text_width
from pyaten.utils.explain_model import ExplainedCall, Hop, KernelRun
from pyaten.utils.explain_values import describe_text

_LABEL = 13  # width of the part names column
_ERROR_LINES = 14  # lines of an error message printed; the dispatch table dump follows them


def _keys(keys: tuple[str, ...] | list[str]) -> str:
    return ", ".join(keys) if keys else "(empty)"


class _Writer:
    def __init__(self, values: bool) -> None:
        self.lines: list[str] = []
        self.values = values

    def part(self, pad: str, label: str, first: str, rest: list[str] = ()) -> None:
        self.lines += _wrapped(f"{pad}{label:<{_LABEL}}", first)
        for line in rest:
            self.lines += _wrapped(f"{pad}{'':<{_LABEL}}", line)


def _wrapped(lead: str, text: str) -> list[str]:
    """`lead + text`, wrapped at `text_width()` with continuation lines indented under the text.

    Printed values are never wrapped (a tensor's print reads best on one line).
    """
    line = f"{lead}{text}".rstrip()
    width = text_width()
    if len(line) <= width or text.startswith("tensor("):
        return [line]
    indent = " " * (len(lead) + len(text) - len(text.lstrip()) + 4)
    return textwrap.wrap(
        line,
        width=max(width, len(indent) + 40),
        initial_indent="",
        subsequent_indent=indent,
        break_on_hyphens=False,
        break_long_words=False,
        drop_whitespace=True,
    ) or [line]


def render(
    calls: tuple[ExplainedCall, ...],
    *,
    values: bool = True,
    header: str | None = None,
    error: dict[str, Any] | None = None,
    value: dict[str, Any] | None = None,
    warnings: list[str] = (),
) -> str:
    """The whole explanation as text."""
    w = _Writer(values)
    if header:
        w.lines += [header, ""]
    if not calls:
        w.lines.append("(no operator calls)")
    for i, call in enumerate(calls, 1):
        if i > 1:
            w.lines.append("")
        _call(w, call, str(i), "", None)
    for text in warnings:
        w.lines += ["", f"warning: {text}"]
    if error is not None:
        message = error["message"].splitlines() or [""]
        w.lines += ["", f"error: {error['type']}: {message[0]}"]
        w.lines += message[1:_ERROR_LINES]
        if len(message) > _ERROR_LINES:
            w.lines.append(f"... ({len(message) - _ERROR_LINES} more lines in --format json)")
        w.lines += _error_origin(calls, error)
    elif value is not None:
        w.lines.append("")
        text = describe_text(value, values)
        w.lines.append(f"value: {text[0]}")
        w.lines += [f"       {t}" for t in text[1:]]
    return "\n".join(w.lines)


def _error_origin(calls: tuple[ExplainedCall, ...], error: dict[str, Any]) -> list[str]:
    """Where the error started, pointing at the call marked in the tree above."""
    if not error.get("operator"):
        return []
    found = _failing_call(calls, "")
    if found is None:
        return [f"  (raised in {error['operator']})"]
    number, call = found
    if call.raised_below:
        return _wrapped(
            "  ",
            f"(raised in {call.raised_below}, inside call {number} {call.operator}, marked "
            "<-- raised inside above; a larger --depth shows it)",
        )
    if call.raised_here:
        return [f"  (raised in {call.operator}, call {number}, marked <-- raised here above)"]
    return [f"  (raised in {error['operator']}, call {number})"]


def _failing_call(
    calls: tuple[ExplainedCall, ...], prefix: str
) -> tuple[str, ExplainedCall] | None:
    """(number, call) of the deepest shown call that raised, the last one at each level."""
    for i in range(len(calls), 0, -1):
        call = calls[i - 1]
        if call.error is not None:
            number = f"{prefix}{i}"
            return _failing_call(call.kernel.calls, number + ".") or (number, call)
    return None


def _call(w: _Writer, call: ExplainedCall, number: str, pad: str, outer_tls: Any) -> None:
    via = f"  ({call.binding['python_name']})" if call.binding else ""
    mark = "   <-- raised here" if call.raised_here else ""
    if call.raised_below:
        mark = f"   <-- raised inside (in {call.raised_below}, below --depth)"
    w.lines.append(f"{pad}call {number}  {call.operator}{via}{mark}")
    inner = pad + "  "
    _declaration(w, inner, call.declaration)
    _binding(w, inner, call.binding, call.caller)
    tls = _dispatch(w, inner, call.dispatch, outer_tls)
    _kernel(w, inner, call.kernel, number, tls)
    if call.error is not None:
        w.part(inner, "raised", call.error)
    else:
        text = describe_text(call.result, w.values)
        w.part(inner, "result", text[0], text[1:])


def _declaration(w: _Writer, pad: str, d: dict[str, Any]) -> None:
    source = d.get("source")
    if source == "native_functions.yaml":
        rest = [f"at {d['loc']}", f"variants: {', '.join(d['variants'])}"]
        if d.get("structured"):
            rest.append("structured: True (meta + impl, wrappers generated per key)")
        if d.get("dispatch"):
            rest.append("dispatch: " + ", ".join(f"{k}: {v}" for k, v in d["dispatch"].items()))
        if d.get("structured_delegate"):
            delegate = d["delegate_dispatch"] or {}
            extra = ", ".join(f"{k}: {v}" for k, v in delegate.items())
            rest.append(
                f"structured_delegate: {d['structured_delegate']}"
                + (f" (its dispatch: {extra})" if extra else "")
            )
        if d.get("autogen_from"):
            rest.append(f"autogen: out variant generated from {d['autogen_from']}")
        if d.get("implicit_composite"):
            rest.append(
                f"no dispatch: key, so CompositeImplicitAutograd: {d['implicit_composite']}"
            )
        w.part(pad, "declaration", d["func"], rest)
    elif source == "Library":
        kernels = d.get("kernels") or {}
        rest = [f"defined through Library at {d['loc']}"]
        rest += [f"kernel {k}: {v}" for k, v in kernels.items()] or ["(no kernels registered)"]
        w.part(pad, "declaration", d["func"], rest)
    else:
        w.part(pad, "declaration", f"{d.get('func')} (no declaration found)")


def _binding(w: _Writer, pad: str, b: dict[str, Any] | None, caller: str) -> None:
    if b is None:
        if caller == "kernel":
            how = "called from a kernel, arguments already in schema order"
        else:
            how = "called through an operator handle (pyaten.ops), bound by the schema"
        w.part(pad, "binding", f"none: {how}")
        return
    rest = [f"{b['python_name']}{b['signature']}"]
    rest += [f"  {name} = {value}" for name, value in b["arguments"].items()]
    for r in b["rejected"]:
        rest.append(f"rejected {r['signature']}: {r['why']}")
    w.part(pad, "binding", f"chose {b['overload']}", rest)


def _dispatch(w: _Writer, pad: str, hops: tuple[Hop, ...], outer_tls: Any) -> Any:
    first = hops[0]
    rest = [f"{name}: {_keys(keys)}" for name, keys in first.arguments]
    if not first.arguments:
        rest.append("(no tensor arguments)")
    tls = (first.tls_included, first.tls_excluded)
    if tls != outer_tls:
        rest.append(f"thread-local included: {_keys(first.tls_included)}")
        rest.append(f"thread-local excluded: {_keys(first.tls_excluded)}")
    for i, hop in enumerate(hops):
        arrow = "  " * i
        verb = "redispatch" if hop.redispatch else "key set"
        dropped = hop.fallthrough_dropped
        if dropped:
            rest.append(f"{arrow}(arguments | included - excluded, then fallthrough keys "
                        f"{', '.join(dropped)} dropped)")
        why = RULE_TEXT.get(hop.rule)
        rule = f"{hop.rule}: {why}" if why else hop.rule
        rest.append(f"{arrow}{verb} {{{', '.join(hop.keyset)}}} -> {hop.key} [{rule}]")
        site = f" registered at {hop.registered_at}" if hop.registered_at else ""
        rest.append(f"{arrow}  kernel {hop.kernel}{site}")
        for note in hop.notes:
            fields = ", ".join(f"{k}={v}" for k, v in note.items() if k != "kind")
            rest.append(f"{arrow}  note {note['kind']}: {fields}")
    w.part(pad, "dispatch", rest[0], rest[1:])
    return tls


def _kernel(w: _Writer, pad: str, k: KernelRun, number: str, tls: Any) -> None:
    rest: list[str] = []
    if k.kind == "structured":
        first = f"structured, {k.wrapper} wrapper for {k.key}: {k.name}"
        meta = k.meta or {}
        if meta.get("function"):
            rest.append(f"meta {meta['function']}" + (f" at {meta['at']}" if meta["at"] else ""))
        for out in meta.get("outputs", []):
            rest.append("  " + _meta_text(out))
        if not meta.get("outputs") and k.impl is None:
            rest.append("  (raised before setting an output; impl did not run)")
        if k.impl is not None:
            rest.append(f"impl {k.impl['function']}" + (f" at {k.impl['at']}" if k.impl["at"]
                                                         else ""))
    elif k.kind == "composite":
        how = "one kernel for every backend" if k.composite == "CompositeExplicitAutograd" \
            else "decomposes into other operators"
        first = f"{k.composite} kernel {k.name} for {k.key}: {how}"
    elif k.kind == "missing":
        m = k.missing or {}
        first = f"none for {m.get('key')}: no kernel serves this key"
        own = m.get("registered") or []
        rest.append(f"the operator has kernels for: {', '.join(own) or '(no key)'}")
        others = [k for k in m.get("available") or [] if k not in own]
        if others:
            rest.append(f"backend fallbacks serve {len(others)} more keys: "
                        f"{', '.join(others[:6])}{', ...' if len(others) > 6 else ''}")
        rest.append(f"to fix, register one: {m.get('fix')}")
    elif k.kind == "autogen":
        via = f" ({k.composite})" if k.composite else ""
        first = f"autogen out kernel {k.name}{via}: runs the op, resizes out, copies into it"
    elif k.kind == "fallback":
        first = f"backend fallback {k.name} for {k.key}"
        if k.fallback is not None and k.fallback.get("forced"):
            first = f"fallback {k.name} for {k.key} (forced for this operator)"
        if k.fallback is not None:
            policy = k.fallback.get("policy")
            first += f": the '{k.fallback.get('device')}' device's {policy} policy"
            rest.append(f"why: {k.fallback.get('reason')}")
            if policy in ("cpu", "warn"):
                rest.append("ran on the CPU: tensor inputs copied from the device, results "
                            "(and mutated inputs) copied back")
            else:
                rest.append("raised NotImplementedError (no CPU fallback)")
    else:
        first = f"{k.kind} kernel {k.name} for {k.key}"
    for stub in k.stubs:
        rest.append(f"stub {stub.get('stub')} for {stub.get('device')} -> {stub.get('kernel')}")
    if k.returns and k.kind != "missing":
        rest.append(f"returns {k.returns}")
    if k.calls:
        rest.append("calls:")
    w.part(pad, "kernel", first, rest)
    for i, call in enumerate(k.calls, 1):
        _call(w, call, f"{number}.{i}", pad + "  ", tls)
    if k.hidden_calls:
        w.lines.append(f"{pad}  ({k.hidden_calls} nested call(s) below --depth not shown)")


def _meta_text(out: dict[str, Any]) -> str:
    parts = []
    if "broadcast_shape" in out:
        parts.append(f"broadcast shape {out['broadcast_shape']}")
    if "common_dtype" in out:
        parts.append(f"common dtype {str(out['common_dtype']).removeprefix('pyaten.')}")
    dtype = str(out.get("dtype", "")).removeprefix("pyaten.")
    parts.append(f"output {out.get('output', 0)} {out.get('sizes')} {dtype} {out.get('action')}")
    if out.get("proxy"):
        parts.append("through a proxy copied back after impl")
    extra = {
        k: v
        for k, v in out.items()
        if k not in ("wrapper", "output", "sizes", "dtype", "action", "proxy",
                     "broadcast_shape", "common_dtype")
    }
    parts += [f"{k} {v}" for k, v in extra.items()]
    return "; ".join(parts)
