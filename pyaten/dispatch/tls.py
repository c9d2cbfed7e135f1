"""Thread-local included/excluded key sets and the guards that change them.

Each thread starts with PyTorch's defaults: included = {BackendSelect, ADInplaceOrView},
excluded = every Autocast key. A call's key set is `(args | included) - excluded`; exclusion
only ever clears functionality bits. The state lives on a `threading.local` subclass whose
class attributes are the defaults, so reading it on the call path is one attribute load.
"""

from __future__ import annotations

import threading
from types import TracebackType

from pyaten.dispatch.accel import ACCEL as _ACCEL
from pyaten.dispatch.keys import (
    FUNCTIONALITY_MASK,
    DispatchKey,
    DispatchKeySet,
    functionality_bit,
    keyset,
)

DEFAULT_INCLUDED = keyset("BackendSelect", "ADInplaceOrView").raw
DEFAULT_EXCLUDED = keyset(
    "AutocastCPU", "AutocastMTIA", "AutocastMAIA", "AutocastXPU", "AutocastIPU", "AutocastHPU",
    "AutocastXLA", "AutocastMPS", "AutocastCUDA", "AutocastPrivateUse1",
).raw  # fmt: skip

AUTOGRAD_BITS = (
    functionality_bit("AutogradOther")
    | functionality_bit("AutogradFunctionality")
    | functionality_bit("AutogradNestedTensor")
)
AD_INPLACE_OR_VIEW_BIT = functionality_bit("ADInplaceOrView")


class _State(threading.local):
    included: int = DEFAULT_INCLUDED
    excluded: int = DEFAULT_EXCLUDED
    keep: int = ~(DEFAULT_EXCLUDED & FUNCTIONALITY_MASK)  # `~excluded`, for the call path


STATE = _State()


# The length of NONDEFAULT counts threads whose sets differ from the defaults. While it is
# empty the call path uses the default sets as constants instead of reading the thread-local
# (a measurable share of a call); a thread that dies inside a guard only costs that speed,
# never correctness. A list's `append` and `pop` are atomic under the GIL, so entering and
# leaving need no lock (a lock cost ~0.2 us each way, paid by every recorded operator call).
NONDEFAULT: list[None] = []
DEFAULT_KEEP = ~(DEFAULT_EXCLUDED & FUNCTIONALITY_MASK)


def _set(included: int, excluded: int) -> None:
    was_default = STATE.included == DEFAULT_INCLUDED and STATE.excluded == DEFAULT_EXCLUDED
    now_default = included == DEFAULT_INCLUDED and excluded == DEFAULT_EXCLUDED
    if was_default and not now_default:
        NONDEFAULT.append(None)
    STATE.included = included
    STATE.excluded = excluded
    STATE.keep = ~(excluded & FUNCTIONALITY_MASK)  # exclusion never clears backend bits
    if now_default and not was_default:
        NONDEFAULT.pop()


def tls_local_include_set() -> DispatchKeySet:
    return DispatchKeySet.from_raw(STATE.included)


def tls_local_exclude_set() -> DispatchKeySet:
    return DispatchKeySet.from_raw(STATE.excluded)


def tls_is_dispatch_key_included(key: DispatchKey | str) -> bool:
    return DispatchKeySet.from_raw(STATE.included).has(key)


def tls_is_dispatch_key_excluded(key: DispatchKey | str) -> bool:
    return DispatchKeySet.from_raw(STATE.excluded).has(key)


def _bits(keys: DispatchKeySet | DispatchKey | str) -> int:
    return keys.raw if isinstance(keys, DispatchKeySet) else DispatchKeySet(keys).raw


class _Guard:
    """Base of the guards: saves the state on entry and restores it exactly on exit."""

    __slots__ = ("_saved",)

    def _apply(self, included: int, excluded: int) -> tuple[int, int]:
        raise NotImplementedError

    def __enter__(self) -> _Guard:
        self._saved = (STATE.included, STATE.excluded)
        _set(*self._apply(*self._saved))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _set(*self._saved)


class IncludeDispatchKeyGuard(_Guard):
    """Add keys to this thread's included set for the duration of a `with` block."""

    __slots__ = ("_bits",)

    def __init__(self, keys: DispatchKeySet | DispatchKey | str):
        self._bits = _bits(keys)

    def _apply(self, included: int, excluded: int) -> tuple[int, int]:
        return included | self._bits, excluded


class ExcludeDispatchKeyGuard(_Guard):
    """Add keys to this thread's excluded set for the duration of a `with` block."""

    __slots__ = ("_bits",)

    def __init__(self, keys: DispatchKeySet | DispatchKey | str):
        self._bits = _bits(keys)

    def _apply(self, included: int, excluded: int) -> tuple[int, int]:
        return included, excluded | self._bits


class AutoDispatchBelowAutograd(ExcludeDispatchKeyGuard):
    """Exclude every autograd key: calls inside go straight to the keys below autograd."""

    __slots__ = ()

    def __init__(self) -> None:
        self._bits = AUTOGRAD_BITS


class AutoDispatchBelowADInplaceOrView(ExcludeDispatchKeyGuard):
    """Exclude the autograd keys and ADInplaceOrView."""

    __slots__ = ()

    def __init__(self) -> None:
        self._bits = AUTOGRAD_BITS | AD_INPLACE_OR_VIEW_BIT


class ResetTLSGuard(_Guard):
    """Run a block with this thread's default include/exclude sets (used by tests and tools)."""

    __slots__ = ()

    def _apply(self, included: int, excluded: int) -> tuple[int, int]:
        return DEFAULT_INCLUDED, DEFAULT_EXCLUDED


_KEEP_BELOW_AUTOGRAD = ~((DEFAULT_EXCLUDED | AUTOGRAD_BITS) & FUNCTIONALITY_MASK)


def call_below_autograd_reference(fn, *args):  # noqa: ANN001, ANN002, ANN201 - hot path
    """`fn(*args)` with the autograd keys excluded on this thread (what an autograd kernel
    does around the call below it): `AutoDispatchBelowAutograd` without the guard object,
    since every recorded operator call pays for it. With the accelerator loaded,
    `call_below_autograd` is its C version, which takes the default sets itself and hands
    every other case to this one."""
    state = STATE
    excluded = state.excluded
    if excluded & AUTOGRAD_BITS == AUTOGRAD_BITS:
        return fn(*args)
    included = state.included
    if included == DEFAULT_INCLUDED and excluded == DEFAULT_EXCLUDED:
        NONDEFAULT.append(None)
        state.excluded = DEFAULT_EXCLUDED | AUTOGRAD_BITS
        state.keep = _KEEP_BELOW_AUTOGRAD
        try:
            return fn(*args)
        finally:
            state.excluded = DEFAULT_EXCLUDED
            state.keep = DEFAULT_KEEP
            NONDEFAULT.pop()
    _set(included, excluded | AUTOGRAD_BITS)
    try:
        return fn(*args)
    finally:
        _set(included, excluded)


call_below_autograd = call_below_autograd_reference
if _ACCEL is not None:
    _ACCEL.setup_tls(STATE, NONDEFAULT, DEFAULT_INCLUDED, DEFAULT_EXCLUDED,
                     DEFAULT_EXCLUDED | AUTOGRAD_BITS, _KEEP_BELOW_AUTOGRAD, DEFAULT_KEEP,
                     call_below_autograd_reference)
    call_below_autograd = _ACCEL.call_below_autograd
