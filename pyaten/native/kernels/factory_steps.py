"""The steps of a factory composite, called without the dispatcher when nothing watches.

Note: the direct steps of a factory
    `ones_like(x)` is a composite of three dispatched calls, as in ATen: `empty_like`, which
    calls `empty_strided`, then `fill_` on the new tensor (`new_ones` is `new_empty`, `empty`,
    `fill_`). For a 0-dim tensor each trip through the dispatcher (key set, autograd kernel,
    BackendSelect's redispatch) costs more than the work, and the in-place `fill_` and the
    tensor-less `empty_strided` are outside the direct call of a composite (Note: the direct
    call of a composite, in gen_support.py), which only takes functional operators with a
    tensor argument. So each step is a `Step`: when nothing watches (no trace, no
    torch-function mode, every thread in the default thread-local sets: Note: the direct
    call), the tensor arguments are plain CPU tensors (or, for a tensor-less factory, the
    device is the CPU) and the dispatcher would still call this package's own kernel for the
    plain CPU key set, the composite calls that kernel itself; otherwise it dispatches. The
    kernels are the same either way, so values, errors and version counters are too; traces,
    modes and overriding kernels see the dispatched calls (tests/test_factory_speed_paths.py).

    What the dispatcher would call is read from its own caches, as `Direct` does: for an
    operator with a tensor argument the kernel cached for the plain CPU key set (the kernel
    itself, or the generated autograd kernel around it, which passes a call that records no
    graph straight below); for a BackendSelect factory the BackendSelect wrapper cached for
    the default thread-local sets and the kernel cached for its CPU redispatch. A
    registration clears those caches, so a step whose cache holds another object checks
    again, and declines until the dispatcher has refilled it with this package's kernel.
    `set_direct_calls(False)` (PYATEN_NO_DIRECT_CALL=1) turns the steps off with the direct
    calls.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from pyaten.core import torch_function as TF  # noqa: N812 - a module read as a flag holder
from pyaten.core.device import CPU
from pyaten.core.tensor import Tensor
from pyaten.dispatch import trace as TRACE  # noqa: N812 - a module read as a flag holder
from pyaten.dispatch.tls import DEFAULT_INCLUDED, DEFAULT_KEEP, NONDEFAULT
from pyaten.native.gen_support import _DIRECT_ON as DIRECT_ON  # set_direct_calls' switch
from pyaten.native.gen_support import PLAIN_CPU, PLAIN_KEY, backend_select_keys
from pyaten.native.ops_handles import aten_entry

_NO_TENSOR_KEY = DEFAULT_INCLUDED & DEFAULT_KEEP  # a tensor-less call's cache key
_CPU_KEY = backend_select_keys(None)  # the key set BackendSelect redispatches a CPU call with
_UNSEEN = object()


def _own_below(kernel: Any, own: Any) -> bool:
    """Whether the cached `kernel` is `own`, or the generated autograd kernel around it."""
    if kernel is own:
        return True
    return (kernel.__class__ is partial and not kernel.keywords and len(kernel.args) == 1
            and kernel.args[0] is own and kernel.func.__name__.startswith("ag_")
            and kernel.func.__module__.startswith("pyaten._generated.autograd"))


class Step:
    """One step of a factory composite: `ok()` says whether the dispatcher would call `own`
    (this package's kernel of `operator`) for a plain CPU call now."""

    __slots__ = ("operator", "overload", "own", "tensorless", "entry", "seen", "seen_below")

    def __init__(self, operator: str, overload: str, own: Any, tensorless: bool = False) -> None:
        self.operator = operator
        self.overload = overload
        self.own = own
        self.tensorless = tensorless
        self.entry: Any = None
        self.seen: Any = _UNSEEN
        self.seen_below: Any = _UNSEEN

    def ready(self, t: Any) -> bool:
        """Whether the step may call its kernel directly with `t` (Note: the direct steps of
        a factory): nothing watches, `t` is a dense CPU tensor of the exact class (it may
        require grad: these steps record no graph) and the kernel is still this package's."""
        return (not NONDEFAULT and not TF.ACTIVE and not TRACE.ACTIVE
                and t.__class__ is Tensor and t._keyset == PLAIN_CPU and self.ok())

    def ready_on(self, device: Any) -> bool:
        """`ready` for a tensor-less factory: its `device` argument is the CPU (or None)."""
        return (not NONDEFAULT and not TF.ACTIVE and not TRACE.ACTIVE
                and (device is None or device is CPU) and self.ok())

    def ok(self) -> bool:
        """Whether the dispatcher would call `own` for a plain CPU call now."""
        entry = self.entry
        if not DIRECT_ON[0]:  # set_direct_calls(False), PYATEN_NO_DIRECT_CALL=1
            return False
        if entry is not None:
            if not self.tensorless:
                if entry._cache.get(PLAIN_KEY) is self.seen:
                    return True
            elif (entry._cache.get(_NO_TENSOR_KEY) is self.seen
                    and entry._redispatch_cache.get(_CPU_KEY) is self.seen_below):
                return True
        return self._check()

    def _check(self) -> bool:
        entry = self.entry
        if entry is None:
            entry = self.entry = aten_entry(self.operator, self.overload)
        self.seen = self.seen_below = _UNSEEN
        if not self.tensorless:
            kernel = entry._cache.get(PLAIN_KEY)
            if kernel is None or not _own_below(kernel, self.own):
                return False
            self.seen = kernel
            return True
        wrapper = entry._cache.get(_NO_TENSOR_KEY)
        below = entry._redispatch_cache.get(_CPU_KEY)
        expected = "wrapper_BackendSelect_" + entry.name.partition("::")[2].replace(".", "_")
        if (wrapper is None or below is not self.own
                or getattr(wrapper, "__name__", "") != expected
                or not wrapper.__module__.startswith("pyaten._generated")):
            return False
        self.seen, self.seen_below = wrapper, below
        return True

