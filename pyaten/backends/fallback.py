"""What a plug-in device does with an operator it has no kernel for: its fallback policy.

Each device registers one boxed fallback on its slot's backend key (as PyTorch's
`cpu_fallback` is registered for PrivateUse1). The policy is looked up per call, per
operator first (`set_fallback(dev, policy, op=...)`, or `fallback_overrides:` in a manifest),
then the device's default:

- "cpu": copy the tensor arguments (and tensor lists) to the CPU, run the operator there,
  copy the results to the device, and copy mutated inputs back (resizing `out=` arguments);
- "warn": the same, with a UserWarning the first time each operator falls back;
- "error": NotImplementedError naming the operator and the device.

View operators never fall back, whatever the policy: a CPU copy cannot alias the device
tensor, so the result would silently stop being a view. Every arrival is counted per
(device, operator) and visible through `fallback_report()`; while a trace or
`pyaten.explain()` is active the call's node gets a `fallback` note saying why.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

from pyaten.dispatch import trace

__all__ = ["POLICIES", "FallbackReport", "check_policy", "fallback_report", "make_fallback"]

POLICIES = ("error", "warn", "cpu")

_LOCK = threading.Lock()
# (device name, operator) -> [calls, policy of the last call]
_COUNTS: dict[tuple[str, str], list[Any]] = {}
_WARNED: set[tuple[str, str]] = set()


def check_policy(policy: object, where: str, arg: str) -> str:
    if policy not in POLICIES:
        raise ValueError(
            f"{where}(): {arg} must be one of {', '.join(repr(p) for p in POLICIES)}, "
            f"got {policy!r}"
        )
    return policy  # type: ignore[return-value]


def _count(device: str, op: str, policy: str) -> None:
    with _LOCK:
        row = _COUNTS.get((device, op))
        if row is None:
            _COUNTS[(device, op)] = [1, policy]
        else:
            row[0] += 1
            row[1] = policy


def forget_device(device: str) -> None:
    with _LOCK:
        for key in [k for k in _COUNTS if k[0] == device]:
            del _COUNTS[key]
        _WARNED.difference_update({k for k in _WARNED if k[0] == device})


class FallbackReport:
    """Fallback counters per (device, operator): `rows`, `calls(op)`, a table as `str()`."""

    def __init__(self, device: str | None) -> None:
        self.device = device
        with _LOCK:
            self.rows: list[tuple[str, str, str, int]] = sorted(
                (dev, op, policy, calls)
                for (dev, op), (calls, policy) in _COUNTS.items()
                if device is None or dev == device
            )

    def calls(self, op: str, device: str | None = None) -> int:
        """How many calls of `op` (`"aten::add.Tensor"` or `"add.Tensor"`) reached the
        fallback (on `device`, or on this report's device, or on any)."""
        qualified = op if "::" in op else "aten::" + op
        device = device or self.device
        return sum(
            calls
            for dev, name, _, calls in self.rows
            if name == qualified and (device is None or dev == device)
        )

    @property
    def total(self) -> int:
        return sum(row[3] for row in self.rows)

    def as_dict(self) -> dict[str, dict[str, Any]]:
        """`{"openreg": {"aten::topk": {"calls": 3, "policy": "cpu"}}}`."""
        out: dict[str, dict[str, Any]] = {}
        for dev, op, policy, calls in self.rows:
            out.setdefault(dev, {})[op] = {"calls": calls, "policy": policy}
        return out

    def reset(self) -> None:
        """Zero the counters this report covers (its device, or every device)."""
        with _LOCK:
            for key in [k for k in _COUNTS if self.device is None or k[0] == self.device]:
                del _COUNTS[key]
        self.rows = []

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        if not self.rows:
            where = f" on '{self.device}'" if self.device else ""
            return f"no operator fell back{where}"
        header = ("device", "operator", "policy", "calls")
        body = [(d, o, p, str(c)) for d, o, p, c in self.rows]
        widths = [max(len(r[i]) for r in [header, *body]) for i in range(4)]
        lines = []
        for row in [header, *body]:
            cells = [row[i].ljust(widths[i]) for i in range(3)] + [row[3].rjust(widths[3])]
            lines.append("  ".join(cells))
        lines.insert(1, "  ".join("-" * w for w in widths))
        lines.append(f"{self.total} fallback call(s) in {len(self.rows)} operator(s)")
        return "\n".join(lines)

    __repr__ = __str__


def fallback_report(device: str | None = None) -> FallbackReport:
    """The fallback counters of `device` (a registered name) or of every plug-in device."""
    if device is not None:
        from pyaten.backends.registry import get_device

        get_device(device)  # ValueError naming the registered devices
    return FallbackReport(device)


# --- the boxed fallback ---------------------------------------------------------------------


def _is_view(schema: Any) -> bool:
    return any(r.annotation is not None and not r.annotation.is_write for r in schema.returns)


def make_fallback(dev: Any) -> Callable:
    """The boxed fallback `fn(op, keyset, *args)` of device `dev` (a registry.Device)."""
    name = dev.name

    def fallback(op: Any, keyset: Any, *args: Any) -> Any:
        qualified = op.name
        schema = op.schema
        if _is_view(schema):
            _count(name, qualified, "error")
            if trace.ACTIVE:
                trace.note("fallback", device=name, policy="error",
                           reason="a view operator never falls back")  # fmt: skip
            raise NotImplementedError(
                f"The view operator '{qualified}' has no kernel for the '{name}' device, and "
                "view operators never fall back to the CPU (a CPU copy is not a view). "
                f"Register its kernel: pyaten.backends.get_device('{name}').register_kernel("
                f"'{qualified.split('::', 1)[1]}', fn)"
            )
        policy = dev.policy_for(qualified)
        _count(name, qualified, policy)
        if trace.ACTIVE:
            if qualified.split("::", 1)[1] in dev.forced:
                trace.note("fallback", device=name, policy=policy, forced=True,
                           reason=f"{qualified} is routed to the fallback instead of its "
                           "composite kernel (force_fallback, or a policy set for it)")
            else:
                trace.note("fallback", device=name, policy=policy,
                           reason=f"no {name} kernel for {qualified}")  # fmt: skip
        if policy == "error":
            raise NotImplementedError(
                f"The operator '{qualified}' is not implemented for the '{name}' device, and "
                f"its fallback policy is 'error'. Register a kernel for it, or allow the CPU "
                f"fallback: pyaten.backends.set_fallback('{name}', 'cpu', "
                f"op='{qualified}')"
            )
        if policy == "warn":
            with _LOCK:
                first = (name, qualified) not in _WARNED
                _WARNED.add((name, qualified))
            if first:
                warnings.warn(
                    f"The operator '{qualified}' is not implemented for the '{name}' device "
                    "and falls back to the CPU (copies in and out on every call); this "
                    "warning is shown once per operator",
                    UserWarning,
                    stacklevel=3,
                )
        from pyaten.backends.cpu_fallback import run_on_cpu

        return run_on_cpu(op, args, name)

    fallback.__qualname__ = f"{name}_fallback"
    return fallback
