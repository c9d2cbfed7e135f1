"""The registration-rule engine: which kernel serves each runtime key of an operator.

Note: computing a table entry
    Each operator keeps, per registration key (runtime key, alias key or a building block such
    as `Dense`), a stack of kernels; the newest is active. Every runtime key's entry is a pure
    function of those stacks and the global fallbacks, decided by the first matching rule:
    direct kernel > CompositeExplicitAutogradNonFunctional > CompositeExplicitAutograd >
    CompositeImplicitAutogradNestedTensor > CompositeImplicitAutograd (unless a backend kernel
    is present for that autograd key, or the AutogradOther ambiguity) > Autograd >
    FuncTorchBatchedDecomposition > global backend fallback > missing. This is what PyTorch's
    `_dispatch_dump_table` prints. PyTorch's *stored* table is refreshed incrementally and can
    lag behind in a few orders (spec section 2.9); pyaten recomputes every slot on every
    change, so its table always equals the dump.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pyaten.dispatch.keys import (
    BACKENDS,
    KEY_BITS,
    KEY_BY_NAME,
    PER_BACKEND,
    RUNTIME_KEYS,
    SLOT_BITS,
    TABLE_SIZE,
    DispatchKey,
)


@dataclass(frozen=True, eq=False, slots=True)
class Kernel:
    """One registered kernel: the function and where and how it was registered."""

    fn: Callable | None
    key: DispatchKey  # the registration key (may be an alias key or a building block)
    fallthrough: bool = False
    with_keyset: bool = False
    debug: str = "no debug info"  # "registered at file:line"
    boxed_fallback: bool = False  # a global fallback, called fn(op, keyset, *args, **kwargs)


@dataclass(frozen=True, slots=True)
class Resolution:
    """The entry of one table slot: the kernel (None = missing) and the rule that chose it."""

    kernel: Kernel | None
    rule: str  # PyTorch's tag: "kernel", "math kernel", "backend fallback", ... or "missing"

    @property
    def is_fallthrough(self) -> bool:
        return self.kernel is not None and self.kernel.fallthrough


# Rule tags, spelled as PyTorch's `_dispatch_dump_table` prints them.
DIRECT = "kernel"
DEFAULT_BACKEND = "default backend kernel"
NESTED = "nested kernel"
MATH = "math kernel"
AMBIGUOUS = "ambiguous autogradother"
AUTOGRAD = "autograd kernel"
BATCHED = "batched kernel"
FALLBACK = "backend fallback"
MISSING = "missing"

_K = KEY_BY_NAME
CIA = _K["CompositeImplicitAutograd"]
CEA = _K["CompositeExplicitAutograd"]
CEANF = _K["CompositeExplicitAutogradNonFunctional"]
CIANT = _K["CompositeImplicitAutogradNestedTensor"]
AUTOGRAD_ALIAS = _K["Autograd"]
FTBD = _K["FuncTorchBatchedDecomposition"]


def _slots(names: list[str]) -> frozenset[int]:
    return frozenset(RUNTIME_KEYS.index(_K[n]) for n in names)


def _per_backend(functionality: str) -> list[str]:
    return [PER_BACKEND[functionality][0] + b for b in BACKENDS]


_AO_NAMES = (
    ["FPGA", "Vulkan", "Metal", "CustomRNGKeyId", "MkldnnCPU"]
    + _per_backend("Quantized")
    + _per_backend("Sparse")
    + _per_backend("SparseCsr")
)
_CEA_NAMES = _AO_NAMES + _per_backend("Dense")
_AUTOGRAD_NAMES = ["AutogradOther", "AutogradNestedTensor"] + _per_backend("AutogradFunctionality")

AO_BACKENDS = _slots(_AO_NAMES)
# Runtime keys (as table slots) each alias key covers (spec section 2.2).
ALIAS_SLOTS: dict[DispatchKey, frozenset[int]] = {
    CEA: _slots(_CEA_NAMES),
    CEANF: _slots(
        [
            n
            for n in _CEA_NAMES
            if not n.startswith("Sparse") or n.startswith("SparseCsr")
            if not (n.endswith("XLA") or n.endswith("Lazy"))
        ]
    ),
    AUTOGRAD_ALIAS: _slots(_AUTOGRAD_NAMES),
    CIA: _slots(_CEA_NAMES + _AUTOGRAD_NAMES + _per_backend("NestedTensor")),
    CIANT: _slots(_per_backend("NestedTensor") + ["AutogradNestedTensor"]),
    FTBD: _slots(["FuncTorchBatched"]),
}


def _bits_of_slots(slots: frozenset[int]) -> int:
    bits = 0
    for slot in slots:
        bits |= SLOT_BITS[slot]
    return bits


_AO_PATTERN = _bits_of_slots(AO_BACKENDS)
_NO_BACKEND_MAPPING = {"HIP", "VE", "MTIA"}  # AutogradHIP/VE/MTIA: gap in torch 2.13


def _backend_patterns() -> dict[int, int]:
    """Autograd slot -> bit pattern of its backend keys (spec 2.3 BK), 0 when empty."""
    patterns: dict[int, int] = {}
    for b in BACKENDS:
        slot = RUNTIME_KEYS.index(_K["Autograd" + b])
        patterns[slot] = 0 if b in _NO_BACKEND_MAPPING else KEY_BITS[int(_K[b])]
    patterns[RUNTIME_KEYS.index(_K["AutogradNestedTensor"])] = _bits_of_slots(
        _slots(_per_backend("NestedTensor"))
    )
    patterns[RUNTIME_KEYS.index(_K["AutogradOther"])] = _AO_PATTERN
    return patterns


_BACKEND_PATTERN = _backend_patterns()
AUTOGRAD_OTHER_SLOT = RUNTIME_KEYS.index(_K["AutogradOther"])
FUNCTORCH_BATCHED_SLOT = RUNTIME_KEYS.index(_K["FuncTorchBatched"])


def alias_slots(key: DispatchKey) -> frozenset[int]:
    """Table slots a registration under `key` can fill (one slot, or an alias's set)."""
    if key in ALIAS_SLOTS:
        return ALIAS_SLOTS[key]
    slot = RUNTIME_KEYS.index(key) if key in RUNTIME_KEYS else None
    return frozenset() if slot is None or slot == 0 else frozenset([slot])


# Note: table plans
#     Which registration serves each slot depends only on which keys have a kernel (and on
#     the global fallbacks), not on the kernels themselves, and most operators share one of a
#     few key patterns (CPU+Meta+Autograd, CompositeImplicitAutograd alone...). So the
#     resolution runs once per (keys, fallbacks) pattern with placeholder kernels, and each
#     operator's table is that plan with its own kernels filled in: import computes ~2,600
#     tables, and this makes each a tuple comprehension.
_PLANS: dict[tuple, tuple] = {}
_PLAN_LIMIT = 512


def compute_table(
    active: Mapping[DispatchKey, Kernel],
    fallbacks: Sequence[Kernel | None],
) -> tuple[Resolution, ...]:
    """Resolve all 137 slots from the active kernel per registration key and the fallbacks."""
    return table_and_fallthroughs(active, fallbacks)[0]


def table_and_fallthroughs(
    active: Mapping[DispatchKey, Kernel],
    fallbacks: Sequence[Kernel | None],
) -> tuple[tuple[Resolution, ...], tuple[int, ...]]:
    """The table, and the slots it serves with a fallthrough (see Note: table plans)."""
    pattern = (
        tuple(sorted((int(k), kern.fallthrough) for k, kern in active.items())),
        tuple(fallbacks),
    )
    plan = _PLANS.get(pattern)
    if plan is None:
        plan = _PLANS[pattern] = _plan(active, fallbacks)
        if len(_PLANS) > _PLAN_LIMIT:
            _PLANS.clear()
            _PLANS[pattern] = plan
    pairs, slots, fallthroughs = plan
    made = [Resolution(active[key], rule) for key, rule in pairs]
    return tuple([made[x] if x.__class__ is int else x for x in slots]), fallthroughs


def _plan(active: Mapping[DispatchKey, Kernel], fallbacks: Sequence[Kernel | None]) -> tuple:
    placeholders = {
        k: Kernel(None, k, fallthrough=kern.fallthrough, debug=f"<plan {k.name}>")
        for k, kern in active.items()
    }
    by_kernel = {id(kern): k for k, kern in placeholders.items()}
    pairs: list[tuple[DispatchKey, str]] = []
    slots: list[Resolution | int] = []
    fallthroughs = []
    for slot, res in enumerate(_resolve(placeholders, fallbacks)):
        if res.is_fallthrough:
            fallthroughs.append(slot)
        key = by_kernel.get(id(res.kernel)) if res.kernel is not None else None
        if key is None:
            slots.append(res)  # a fallback, missing or ambiguous: the same for every operator
            continue
        pair = (key, res.rule)
        if pair not in pairs:
            pairs.append(pair)
        slots.append(pairs.index(pair))
    return tuple(pairs), tuple(slots), tuple(fallthroughs)


def _resolve(
    active: Mapping[DispatchKey, Kernel],
    fallbacks: Sequence[Kernel | None],
) -> tuple[Resolution, ...]:
    """The resolution itself (see Note: table plans)."""
    # Bit patterns of registered non-alias keys, for the "backend kernel present" tests.
    non_alias_bits = [KEY_BITS[int(k)] for k in active if not k.is_alias]
    cea = active.get(CEA)
    ceanf = active.get(CEANF)
    cia = active.get(CIA)
    ciant = active.get(CIANT)
    autograd = active.get(AUTOGRAD_ALIAS)
    ftbd = active.get(FTBD)
    ambiguous_other = any(bits & _AO_PATTERN == bits for bits in non_alias_bits)
    by_slot = {_SLOT_OF[int(k)]: kern for k, kern in active.items() if int(k) in _SLOT_OF}
    if cea is None and ceanf is None and cia is None and ciant is None and autograd is None:
        if ftbd is None:  # only direct kernels: fallbacks everywhere else (the common case)
            return tuple(
                Resolution(by_slot[slot], DIRECT)
                if slot in by_slot
                else (
                    _MISSING if fallbacks[slot] is None else Resolution(fallbacks[slot], FALLBACK)
                )
                for slot in range(TABLE_SIZE)
            )

    def has_backend_kernel(slot: int) -> bool:
        pattern = _BACKEND_PATTERN.get(slot, 0)
        if pattern and any(bits & pattern == bits for bits in non_alias_bits):
            return True
        return cea is not None

    table: list[Resolution] = []
    for slot in range(TABLE_SIZE):
        direct = by_slot.get(slot) if slot else None
        if direct is not None:
            table.append(Resolution(direct, DIRECT))
            continue
        undefined = slot == 0
        if ceanf is not None and (undefined or slot in ALIAS_SLOTS[CEANF]):
            table.append(Resolution(ceanf, DEFAULT_BACKEND))
            continue
        if cea is not None and (undefined or slot in ALIAS_SLOTS[CEA]):
            table.append(Resolution(cea, DEFAULT_BACKEND))
            continue
        if ciant is not None and slot in ALIAS_SLOTS[CIANT]:
            table.append(Resolution(ciant, NESTED))
            continue
        if cia is not None and (undefined or slot in ALIAS_SLOTS[CIA]):
            if slot == AUTOGRAD_OTHER_SLOT and ambiguous_other:
                table.append(Resolution(_AMBIGUOUS_KERNEL, AMBIGUOUS))
                continue
            if not has_backend_kernel(slot):
                table.append(Resolution(cia, MATH))
                continue
        if autograd is not None and slot in ALIAS_SLOTS[AUTOGRAD_ALIAS]:
            table.append(Resolution(autograd, AUTOGRAD))
            continue
        if ftbd is not None and slot == FUNCTORCH_BATCHED_SLOT:
            table.append(Resolution(ftbd, BATCHED))
            continue
        fallback = fallbacks[slot]
        if fallback is not None:
            table.append(Resolution(fallback, FALLBACK))
            continue
        table.append(_MISSING)
    return tuple(table)


_SLOT_OF = {int(k): slot for slot, k in enumerate(RUNTIME_KEYS) if slot}  # Undefined excluded
_MISSING = Resolution(None, MISSING)


def _ambiguous_placeholder(*args, **kwargs):  # replaced by the operator entry's own raiser
    raise RuntimeError("ambiguous autogradother kernel")


_AMBIGUOUS_KERNEL = Kernel(
    _ambiguous_placeholder, AUTOGRAD_ALIAS, debug="ambiguous_autogradother", with_keyset=False
)
