"""Autocast's kernels: the cast rules, the weight cast cache, and their registration.

Note: how autocast runs
    Every CPU tensor carries the AutocastCPU key, and every thread starts with it excluded
    (pyaten/dispatch/tls.py), so a call never sees it. Entering `autocast("cpu")` removes the
    key from the thread's excluded set, as PyTorch's `set_autocast_enabled` does; from then on
    each call on a CPU tensor reaches the AutocastCPU slot of its operator's table. The
    operators listed in autocast_policy.yaml have a kernel there; the rest fall through (the
    baseline fallback of pyaten/dispatch/fallbacks.py) to autograd and the backend, at the
    cost of the cached table lookup they already pay.

    An autocast kernel casts the arguments its policy names (only eligible tensors: defined,
    floating, on the device, not float64, not already the target dtype), then calls the
    operator again from the top with the device's Autocast key excluded (PyTorch's
    `ExcludeDispatchKeyGuard no_autocast`). The casts are ordinary `to` calls made *before*
    autograd: a lower-precision operator saves its lower-precision inputs for backward, and
    gradients flow back through the casts into float32 parameters.

    Casts of float32 leaf tensors that require grad (the model's weights) to the autocast
    dtype are cached, so a weight used by several operators is cast once per region. The
    cache is cleared when the outermost autocast region exits (autocast_mode.py).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyaten.core import dtypes
from pyaten.core.tensor import Tensor
from pyaten.dispatch import find_operator, register_kernel, trace
from pyaten.dispatch.keys import KEY_BY_NAME, functionality_bit
from pyaten.dispatch.registry import batch
from pyaten.dispatch.tls import STATE, _set

POLICY_FILE = os.path.join(os.path.dirname(__file__), "autocast_policy.yaml")
POLICIES = (
    "lower_precision_fp", "fp32", "fp32_set_opt_dtype", "fp32_append_dtype", "promote", "banned",
)  # fmt: skip

# device type -> its Autocast key (the devices PyTorch 2.13 can autocast on).
AUTOCAST_KEYS = {
    "cpu": "AutocastCPU", "cuda": "AutocastCUDA", "xpu": "AutocastXPU", "ipu": "AutocastIPU",
    "hpu": "AutocastHPU", "xla": "AutocastXLA", "mps": "AutocastMPS", "mtia": "AutocastMTIA",
    "maia": "AutocastMAIA", "privateuseone": "AutocastPrivateUse1",
}  # fmt: skip
AUTOCAST_BITS = {device: functionality_bit(key) for device, key in AUTOCAST_KEYS.items()}

# Each device's autocast dtype when a thread starts (PyTorch's `autocast_dtype` array).
DEFAULT_DTYPES = {
    "cpu": dtypes.bfloat16, "cuda": dtypes.float16, "xpu": dtypes.float16,
    "ipu": dtypes.float16, "hpu": dtypes.bfloat16, "xla": dtypes.bfloat16,
    "mps": dtypes.float16, "mtia": dtypes.float16, "maia": dtypes.bfloat16,
    "privateuseone": dtypes.float16, "hip": dtypes.float16,
}  # fmt: skip


class _Dtypes(dict):
    """A thread's autocast dtype per device; a device registered after the thread started
    reads its default."""

    def __missing__(self, device_type: str) -> Any:
        return DEFAULT_DTYPES[device_type]


class _AutocastState(threading.local):
    """Per thread, as in PyTorch: the dtypes, the nesting depth, whether casts are cached."""

    nesting: int = 0
    cache_enabled: bool = True

    def __init__(self) -> None:
        self.dtypes = _Dtypes(DEFAULT_DTYPES)


AUTOCAST = _AutocastState()

# id(source) -> (weak reference to the source, its cast). Process-wide, as PyTorch's.
_CACHE: dict[int, tuple[weakref.ref, Tensor]] = {}
_CACHE_LOCK = threading.Lock()


def clear_cache() -> None:
    with _CACHE_LOCK:
        _CACHE.clear()


# -- the cast rules ---------------------------------------------------------------------------


def is_eligible(t: Tensor, device_type: str) -> bool:
    """A tensor autocast may cast: floating, on the device, and not float64."""
    dtype = t._dtype
    return dtype.is_floating_point and dtype is not dtypes.float64 and t._device.type == device_type


def _to_copy(t: Tensor, dtype: Any) -> Tensor:
    # What `t.to(dtype)` calls once the dtype differs, without the binding of `to` (a third
    # of a small cast's cost).
    entry = _TO_COPY[0]
    if entry is None:
        entry = _TO_COPY[0] = find_operator("aten::_to_copy")
    return entry.call(t, dtype, None, None, None, False, None)


_TO_COPY: list[Any] = [None]


def cached_cast(to: Any, t: Tensor, device_type: str, name: str) -> Tensor:
    """`t` cast to `to` when eligible; float32 leaf weights cast to the autocast dtype are
    cached for the rest of the outermost region."""
    if t._dtype is to or not is_eligible(t, device_type):
        return t
    cacheable = (
        AUTOCAST.cache_enabled
        and to is AUTOCAST.dtypes[device_type]
        and t._dtype is dtypes.float32
        and t.requires_grad
        and t.is_leaf
        and t._base is None
    )
    cached = False
    if cacheable:
        with _CACHE_LOCK:
            hit = _CACHE.get(id(t))
            if hit is not None and hit[0]() is t:
                cast, cached = hit[1], True
            else:
                cast = _to_copy(t, to)
                _CACHE[id(t)] = (weakref.ref(t), cast)
    else:
        cast = _to_copy(t, to)
    if trace.ACTIVE:
        trace.note("autocast_cast", argument=name, src=str(t._dtype), dst=str(to), cached=cached)
    return cast


def _cast_args(to: Any, args: tuple, device_type: str, names: tuple[str, ...]) -> tuple:
    out = []
    for i, value in enumerate(args):
        name = names[i] if i < len(names) else str(i)
        if isinstance(value, Tensor):
            value = cached_cast(to, value, device_type, name)
        elif isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
            value = type(value)(
                cached_cast(to, v, device_type, name) if isinstance(v, Tensor) else v for v in value
            )
        out.append(value)
    return tuple(out)


def _tensors(args: tuple) -> list[Tensor]:
    found = []
    for value in args:
        if isinstance(value, Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found += [v for v in value if isinstance(v, Tensor)]
    return found


def promote_type(lower: Any, args: tuple, device_type: str) -> Any:
    """The widest floating dtype among the eligible tensors (PyTorch's `promote_type`)."""
    current = lower
    for t in _tensors(args):
        if not (t._dtype.is_floating_point and t._device.type == device_type):
            continue
        dtype = t._dtype
        if dtype is dtypes.float64:
            continue
        if current is dtypes.float32 or dtype is dtypes.float32:
            current = dtypes.float32
        elif current is lower and dtype is lower:
            current = lower
        else:
            raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return current


# -- the kernels ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PolicyRow:
    """One line of autocast_policy.yaml: an operator, its policy, where it is listed."""

    device_type: str
    operator: str  # "aten::name.overload"
    policy: str
    line: int
    target: str = ""  # fp32_append_dtype: the overload called with the dtype appended

    @property
    def site(self) -> str:
        return f"registered at {POLICY_FILE}:{self.line}"


def read_policy_table(path: str = POLICY_FILE) -> list[PolicyRow]:
    """The rows of the table (the file is YAML; this reads the two-level subset it uses, so
    each row keeps its line number)."""
    rows: list[PolicyRow] = []
    device = policy = None
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            text = raw.split("#", 1)[0].rstrip()
            if not text.strip():
                continue
            indent = len(text) - len(text.lstrip())
            body = text.strip()
            if indent == 0 and body.endswith(":"):
                device, policy = body[:-1], None
            elif indent == 2 and ":" in body:
                policy = body.split(":", 1)[0]
                if policy not in POLICIES:
                    raise ValueError(f"{path}:{number}: unknown autocast policy '{policy}'")
            elif body.startswith("- ") and device and policy:
                name, _, target = (part.strip() for part in body[2:].partition("->"))
                rows.append(PolicyRow(device, f"aten::{name}", policy, number, target))
            else:
                raise ValueError(f"{path}:{number}: cannot read '{body}'")
    return rows


def _arg_names(entry: Any) -> tuple[str, ...]:
    schema = entry.schema if entry is not None else None
    return tuple(a.name for a in schema.arguments) if schema is not None else ()


def _excluding(bit: int, entry: Any, args: tuple) -> Any:
    """`entry.call(*args)` with the Autocast key `bit` excluded on this thread."""
    included, excluded = STATE.included, STATE.excluded
    _set(included, excluded | bit)
    try:
        return entry.call(*args)
    finally:
        _set(included, excluded)


def make_kernel(row: PolicyRow, key_bit: int) -> Callable[..., Any]:
    """The autocast kernel of one table row."""
    device_type = row.device_type
    policy = row.policy
    resolved: list[Any] = []  # [entry, argument names], filled on the first call

    def operator() -> tuple[Any, tuple[str, ...]]:
        if not resolved:
            entry = find_operator(row.operator)
            resolved[:] = [entry, _arg_names(entry)]
        return resolved[0], resolved[1]

    def kernel(*args: Any) -> Any:
        entry, names = operator()
        if policy == "lower_precision_fp":
            to = AUTOCAST.dtypes[device_type]
        elif policy == "fp32":
            to = dtypes.float32
        elif policy == "promote":
            to = promote_type(AUTOCAST.dtypes[device_type], args, device_type)
        elif policy == "fp32_set_opt_dtype":
            to = None
            first = args[0] if args else None
            if isinstance(first, Tensor) and is_eligible(first, device_type):
                i = names.index("dtype")
                if args[i] is None:
                    args = args[:i] + (dtypes.float32,) + args[i + 1 :]
        elif policy == "fp32_append_dtype":
            first = args[0]
            out = dtypes.float32 if is_eligible(first, device_type) else first._dtype
            target = find_operator(f"aten::{row.target}")
            if trace.ACTIVE:
                trace.note("autocast", policy=policy, redispatch=row.target, dtype=str(out))
            return _excluding(key_bit, target, args + (out,))
        else:  # banned
            raise RuntimeError(f"{row.operator} is unsafe to autocast")
        if trace.ACTIVE:
            trace.note("autocast", policy=policy, dtype=str(to))
        if to is not None:
            args = _cast_args(to, args, device_type, names)
        return _excluding(key_bit, entry, args)

    short = row.operator.split("::", 1)[1].replace(".", "_")
    kernel.__name__ = kernel.__qualname__ = f"autocast_{policy}_{short}"
    return kernel


def register_policy(device_type: str, key: str, policy: str | None = None) -> list[Any]:
    """Register a kernel on `key` for each operator of `policy`'s lists (default:
    `device_type`'s), casting tensors of `device_type`: AutocastCPU at import, a plug-in
    device's AutocastPrivateUse1 when it opts in. Returns the registration handles."""
    source = policy or device_type
    rows = [r for r in read_policy_table() if r.device_type == source]
    if not rows:
        raise ValueError(f"autocast: {POLICY_FILE} has no policy '{source}'")
    bit = functionality_bit(key)
    handles = []
    with batch():
        for row in rows:
            device_row = PolicyRow(device_type, row.operator, row.policy, row.line, row.target)
            kernel = make_kernel(device_row, bit)
            handles.append(register_kernel(row.operator, KEY_BY_NAME[key], kernel, debug=row.site))
    return handles


def register_plugin_device(device_type: str, policy: str, default_dtype: Any) -> list[Any]:
    """A plug-in device (the PrivateUse1 slot) opts into autocast: `policy`'s kernels on
    AutocastPrivateUse1, a fallthrough for every other operator (PyTorch leaves that key to
    the plug-in), and `device_type` known to the state. Returns the registration handles."""
    from pyaten.dispatch import register_fallback

    key = KEY_BY_NAME["AutocastPrivateUse1"]
    site = f"registered at {__file__}:{register_plugin_device.__code__.co_firstlineno}"
    handles = [register_fallback(key, None, fallthrough=True, debug=site)]
    try:
        handles += register_policy(device_type, "AutocastPrivateUse1", policy)
    except BaseException:
        handles[0].remove()
        raise
    AUTOCAST_BITS[device_type] = functionality_bit("AutocastPrivateUse1")
    DEFAULT_DTYPES[device_type] = default_dtype
    return handles


def forget_plugin_device(device_type: str) -> None:
    AUTOCAST_BITS.pop(device_type, None)
    DEFAULT_DTYPES.pop(device_type, None)
