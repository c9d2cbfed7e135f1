"""Dispatch keys and key sets: PyTorch's key space, bit layout, priority and table order.

Note: the key-set layout
    A key set is one 64-bit integer. Bits 0-15 are *backend* bits (CPU ... Meta, one each) and
    bits 16-61 are *functionality* bits (functionality value v owns bit 15 + v). Six
    functionalities (Dense, Quantized, Sparse, SparseCsr, NestedTensor, AutogradFunctionality)
    are *per-backend*: combined with a backend bit they name a runtime key such as SparseCUDA.
    So the set is a cross product: {Dense, Autograd, CPU-bit, CUDA-bit} contains CPU, CUDA,
    AutogradCPU and AutogradCUDA whichever tensors brought the bits. Difference only clears
    functionality bits, so excluding keys never removes a backend bit. A higher bit means a
    higher priority; the highest functionality bit picks the table row and, for a per-backend
    functionality, the highest backend bit picks the column.

Everything derived from the layout (names, bits, table offsets) is computed once at import.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import IntEnum

# The 16 backend components, bit position = index (the C++ enum value is index + 1).
BACKENDS: tuple[str, ...] = (
    "CPU", "CUDA", "HIP", "XLA", "MPS", "IPU", "XPU", "HPU",
    "VE", "Lazy", "MTIA", "MAIA", "PrivateUse1", "PrivateUse2", "PrivateUse3", "Meta",
)  # fmt: skip

# Functionality keys in priority order, value = index + 1 (value 0 is Undefined).
FUNCTIONALITIES: tuple[str, ...] = (
    "Dense", "FPGA", "Vulkan", "Metal", "Quantized", "CustomRNGKeyId", "MkldnnCPU", "Sparse",
    "SparseCsr", "NestedTensor", "BackendSelect", "Fake", "Python",
    "FuncTorchDynamicLayerBackMode", "Functionalize", "Conjugate", "Negative", "ZeroTensor",
    "ADInplaceOrView", "AutogradOther", "AutogradFunctionality", "AutogradNestedTensor",
    "Tracer", "AutocastCPU", "AutocastMTIA", "AutocastMAIA", "AutocastXPU", "AutocastIPU",
    "AutocastHPU", "AutocastXLA", "AutocastMPS", "AutocastCUDA", "AutocastPrivateUse1",
    "FuncTorchBatched", "BatchedNestedTensor", "FuncTorchVmapMode", "Batched", "VmapMode",
    "FuncTorchGradWrapper", "DeferredInit", "PythonTLSSnapshot",
    "FuncTorchDynamicLayerFrontMode", "TESTING_ONLY_GenericWrapper",
    "TESTING_ONLY_GenericMode", "PreDispatch", "PythonDispatcher",
)  # fmt: skip

NUM_BACKENDS = len(BACKENDS)
END_OF_FUNCTIONALITY_KEYS = len(FUNCTIONALITIES) + 1  # 47, has no bit

# Per-backend functionality -> (runtime key prefix, enum value of its placeholder).
PER_BACKEND: dict[str, tuple[str, int]] = {
    "Dense": ("", 48),
    "Quantized": ("Quantized", 65),
    "Sparse": ("Sparse", 82),
    "SparseCsr": ("SparseCsr", 99),
    "NestedTensor": ("NestedTensor", 116),
    "AutogradFunctionality": ("Autograd", 133),
}

ALIAS_KEYS: tuple[str, ...] = (
    "Autograd", "CompositeImplicitAutograd", "FuncTorchBatchedDecomposition",
    "CompositeImplicitAutogradNestedTensor", "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
)  # fmt: skip
_FIRST_ALIAS_VALUE = 150


def _enum_members() -> list[tuple[str, int]]:
    members: list[tuple[str, int]] = [("Undefined", 0)]
    members += [(name, value) for value, name in enumerate(FUNCTIONALITIES, start=1)]
    members.append(("EndOfFunctionalityKeys", END_OF_FUNCTIONALITY_KEYS))
    for functionality, (prefix, start) in PER_BACKEND.items():
        members.append((f"StartOf{functionality}Backends", start))
        members += [(prefix + b, start + 1 + i) for i, b in enumerate(BACKENDS)]
        # Defined after the real key so that value -> name gives the real key.
        members.append((f"EndOf{functionality}Backends", start + NUM_BACKENDS))
    members += [(name, _FIRST_ALIAS_VALUE + i) for i, name in enumerate(ALIAS_KEYS)]
    members += [
        ("CatchAll", 0),
        ("EndOfRuntimeBackendKeys", 149),
        ("StartOfAliasKeys", _FIRST_ALIAS_VALUE),
        ("EndOfAliasKeys", _FIRST_ALIAS_VALUE + len(ALIAS_KEYS) - 1),
    ]
    return members


class _DispatchKeyBase(IntEnum):
    """Methods shared by every dispatch key (the members are created below)."""

    def __str__(self) -> str:
        return self.name

    @property
    def is_alias(self) -> bool:
        return self.value >= _FIRST_ALIAS_VALUE

    @property
    def is_runtime(self) -> bool:
        """True for keys that own a dispatch-table slot (Undefined included)."""
        return self.value in _SLOT_OF_KEY


DispatchKey = _DispatchKeyBase("DispatchKey", _enum_members(), module=__name__)
DispatchKey.__doc__ = "PyTorch's dispatch keys with PyTorch's names and numeric values."

KEY_BY_NAME: dict[str, DispatchKey] = dict(DispatchKey.__members__)

# --- bits -------------------------------------------------------------------------------------

BACKEND_MASK = (1 << NUM_BACKENDS) - 1
FUNCTIONALITY_MASK = ((1 << len(FUNCTIONALITIES)) - 1) << NUM_BACKENDS
FULL_RAW = BACKEND_MASK | FUNCTIONALITY_MASK


def functionality_bit(name: str) -> int:
    """The bit of functionality key `name` (value v owns bit 15 + v)."""
    return 1 << (NUM_BACKENDS + FUNCTIONALITIES.index(name))


_PER_BACKEND_VALUES = frozenset(FUNCTIONALITIES.index(f) + 1 for f in PER_BACKEND)


def _raw_of_value(value: int) -> int:
    if value == 0 or value >= _FIRST_ALIAS_VALUE or value == END_OF_FUNCTIONALITY_KEYS:
        return 0
    if value < END_OF_FUNCTIONALITY_KEYS:
        return 1 << (NUM_BACKENDS + value - 1)
    for functionality, (_, start) in PER_BACKEND.items():
        if start < value <= start + NUM_BACKENDS:
            return functionality_bit(functionality) | (1 << (value - start - 1))
        if value == start:
            return functionality_bit(functionality)
    return 0


# raw bits of every enum value (index = enum value); alias keys and Undefined map to 0.
KEY_BITS: tuple[int, ...] = tuple(_raw_of_value(v) for v in range(_FIRST_ALIAS_VALUE + 6))

# --- table layout -----------------------------------------------------------------------------


def _table_layout() -> tuple[list[str], list[int]]:
    names = ["Undefined"]
    offsets = [0] * (END_OF_FUNCTIONALITY_KEYS + 1)  # offset of functionality value v
    for value, name in enumerate(FUNCTIONALITIES, start=1):
        offsets[value] = len(names)
        if name in PER_BACKEND:
            names += [PER_BACKEND[name][0] + b for b in BACKENDS]
        else:
            names.append(name)
    return names, offsets


_RUNTIME_NAMES, _OFFSETS = _table_layout()
TABLE_SIZE = len(_RUNTIME_NAMES)  # 137
RUNTIME_KEYS: tuple[DispatchKey, ...] = tuple(KEY_BY_NAME[n] for n in _RUNTIME_NAMES)
_SLOT_OF_KEY: dict[int, int] = {int(k): i for i, k in enumerate(RUNTIME_KEYS)}
# functionality value -> is it per-backend; indexable by int(raw >> 16).bit_length().
_IS_PER_BACKEND: tuple[bool, ...] = tuple(
    v in _PER_BACKEND_VALUES for v in range(END_OF_FUNCTIONALITY_KEYS + 1)
)


def runtime_keys() -> list[str]:
    """Names of the 137 runtime keys in dispatch-table order, starting with "Undefined"."""
    return list(_RUNTIME_NAMES)


def slot_of(key: DispatchKey | str) -> int:
    """The table slot of a runtime key; ValueError for alias keys and building blocks."""
    k = KEY_BY_NAME[key] if isinstance(key, str) else key
    try:
        return _SLOT_OF_KEY[int(k)]
    except KeyError:
        raise ValueError(f"{k.name} is not a runtime dispatch key and has no table slot") from None


def table_index(raw: int) -> int:
    """The dispatch-table slot selected by the raw key-set bits `raw`."""
    functionality = (raw >> NUM_BACKENDS).bit_length()
    if functionality == 0:
        return 0
    if _IS_PER_BACKEND[functionality]:
        backend = (raw & BACKEND_MASK).bit_length()
        return _OFFSETS[functionality] + (backend - 1 if backend else 0)
    return _OFFSETS[functionality]


# table slot -> the raw bits of that runtime key, and the slot's key.
SLOT_BITS: tuple[int, ...] = tuple(KEY_BITS[int(k)] for k in RUNTIME_KEYS)


def highest_priority_key(raw: int) -> DispatchKey:
    """The highest-priority key of raw bits (placeholder key for a bare per-backend bit)."""
    functionality = (raw >> NUM_BACKENDS).bit_length()
    if functionality == 0:
        return DispatchKey.Undefined
    if _IS_PER_BACKEND[functionality]:
        backend = (raw & BACKEND_MASK).bit_length()
        start = PER_BACKEND[FUNCTIONALITIES[functionality - 1]][1]
        return DispatchKey(start + backend)
    return DispatchKey(functionality)


# --- the key set ------------------------------------------------------------------------------


class DispatchKeySet:
    """An immutable set of dispatch keys stored as PyTorch's 64-bit pattern in `.raw`."""

    __slots__ = ("raw",)
    raw: int

    def __init__(self, keys: DispatchKey | str | Iterable[DispatchKey | str] | None = None):
        raw = 0
        if keys is not None:
            if isinstance(keys, (DispatchKey, str)):
                keys = (keys,)
            for key in keys:
                raw |= KEY_BITS[int(_as_key(key))]
        object.__setattr__(self, "raw", raw)

    @classmethod
    def from_raw(cls, raw: int) -> DispatchKeySet:
        ks = object.__new__(cls)
        object.__setattr__(ks, "raw", raw & FULL_RAW)
        return ks

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("DispatchKeySet is immutable")

    # set algebra --------------------------------------------------------------------------
    def __or__(self, other: DispatchKeySet) -> DispatchKeySet:
        return DispatchKeySet.from_raw(self.raw | other.raw)

    def __and__(self, other: DispatchKeySet) -> DispatchKeySet:
        return DispatchKeySet.from_raw(self.raw & other.raw)

    def __sub__(self, other: DispatchKeySet) -> DispatchKeySet:
        # Only functionality bits are removed; backend bits of self always survive.
        return DispatchKeySet.from_raw(self.raw & ~(other.raw & FUNCTIONALITY_MASK))

    def add(self, key: DispatchKey | str) -> DispatchKeySet:
        return DispatchKeySet.from_raw(self.raw | KEY_BITS[int(_as_key(key))])

    def remove(self, key: DispatchKey | str) -> DispatchKeySet:
        return self - DispatchKeySet(key)

    def has(self, key: DispatchKey | str) -> bool:
        bits = KEY_BITS[int(_as_key(key))]
        return self.raw & bits == bits

    def has_all(self, other: DispatchKeySet) -> bool:
        return self.raw & other.raw == other.raw

    def has_any(self, other: DispatchKeySet) -> bool:
        return bool(self.raw & other.raw)

    def empty(self) -> bool:
        return self.raw == 0

    def __contains__(self, key: DispatchKey | str) -> bool:
        return self.has(key)

    def __bool__(self) -> bool:
        return self.raw != 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DispatchKeySet) and other.raw == self.raw

    def __hash__(self) -> int:
        return hash(self.raw)

    # priority -----------------------------------------------------------------------------
    def highest_priority_type_id(self) -> DispatchKey:
        return highest_priority_key(self.raw)

    highestPriorityTypeId = highest_priority_type_id  # PyTorch's spelling

    def table_index(self) -> int:
        return table_index(self.raw)

    def raw_repr(self) -> int:
        return self.raw

    # iteration ----------------------------------------------------------------------------
    def __iter__(self) -> Iterator[DispatchKey]:
        return iter(_keys_of(self.raw))

    def __len__(self) -> int:
        return len(_keys_of(self.raw))

    def __repr__(self) -> str:
        return "DispatchKeySet(" + ", ".join(k.name for k in _keys_of(self.raw)) + ")"


def _keys_of(raw: int) -> list[DispatchKey]:
    """Keys in PyTorch's iteration order: functionality ascending, then backends ascending."""
    keys: list[DispatchKey] = []
    backends = [i for i in range(NUM_BACKENDS) if raw >> i & 1]
    for value, name in enumerate(FUNCTIONALITIES, start=1):
        if not raw >> (NUM_BACKENDS + value - 1) & 1:
            continue
        if name in PER_BACKEND:
            start = PER_BACKEND[name][1]
            keys += [DispatchKey(start + 1 + b) for b in backends]
        else:
            keys.append(DispatchKey(value))
    return keys


def _as_key(key: DispatchKey | str) -> DispatchKey:
    if isinstance(key, DispatchKey):
        return key
    if isinstance(key, str):
        found = KEY_BY_NAME.get(key)
        if found is None:
            raise ValueError(f"unknown dispatch key: {key}")
        return found
    raise TypeError(f"expected a DispatchKey or its name, got {type(key).__name__}")


def keyset(*keys: DispatchKey | str) -> DispatchKeySet:
    """`keyset("CPU", "AutogradCPU")` -> DispatchKeySet(CPU, AutogradCPU)."""
    return DispatchKeySet(keys)


FULL = DispatchKeySet.from_raw(FULL_RAW)
_PYTHON_DISPATCHER_BIT = functionality_bit("PythonDispatcher")


def full_after(key: DispatchKey | str) -> DispatchKeySet:
    """Every key of lower priority than `key`'s functionality, plus PythonDispatcher."""
    k = _as_key(key)
    top = highest_priority_key(KEY_BITS[int(k)]) if k.value > END_OF_FUNCTIONALITY_KEYS else k
    functionality = (KEY_BITS[int(top)] >> NUM_BACKENDS).bit_length()
    below = (1 << (NUM_BACKENDS + functionality - 1)) - 1 if functionality else BACKEND_MASK
    return DispatchKeySet.from_raw((below & FULL_RAW) | BACKEND_MASK | _PYTHON_DISPATCHER_BIT)


# --- parsing key names ------------------------------------------------------------------------

# Names PyTorch 2.13's string parser refuses although the key exists.
_UNPARSEABLE: frozenset[str] = frozenset(
    ["CatchAll", "Math", "DefaultBackend"]
    + ["Quantized" + b for b in ("HIP", "XLA", "MPS", "IPU", "HPU", "VE", "Lazy", "MTIA",
                                 "MAIA", "PrivateUse2", "PrivateUse3", "Meta")]
    + [p + b for p in ("Sparse", "SparseCsr")
       for b in ("XLA", "IPU", "HPU", "Lazy", "MTIA", "MAIA", "PrivateUse2", "PrivateUse3")]
    + ["NestedTensor" + b for b in ("HIP", "XLA", "MPS", "IPU", "VE", "Lazy", "MTIA", "MAIA",
                                    "PrivateUse2", "PrivateUse3")]
    + ["Autograd" + b for b in ("HIP", "VE", "MTIA", "MAIA")]
)  # fmt: skip

PARSEABLE_KEYS: dict[str, DispatchKey] = {
    name: KEY_BY_NAME[name]
    for name in (list(_RUNTIME_NAMES) + list(PER_BACKEND) + list(ALIAS_KEYS))
    if name not in _UNPARSEABLE
}


def parse_dispatch_key(name: str) -> DispatchKey:
    """Parse a key name as `torch.library` does; RuntimeError for names it refuses."""
    key = PARSEABLE_KEYS.get(name)
    if key is None:
        key = _PRIVATEUSE_RENAMES.get(name)
    if key is None:
        raise RuntimeError(f"could not parse dispatch key: {name}")
    return key


# --- tensor key sets by device type -----------------------------------------------------------

_AUTOCAST_BACKENDS = frozenset(
    ["CPU", "CUDA", "XPU", "IPU", "HPU", "XLA", "MPS", "MTIA", "MAIA", "PrivateUse1"]
)
# Backends whose tensors use their own Autograd<B> key (HIP and VE use AutogradOther).
_OWN_AUTOGRAD = frozenset(BACKENDS) - {"HIP", "VE"}
_AD_INPLACE = functionality_bit("ADInplaceOrView")


def _dense_tensor_bits(backend: str) -> int:
    bits = KEY_BITS[int(KEY_BY_NAME[backend])] | _AD_INPLACE
    if backend in _OWN_AUTOGRAD:
        bits |= KEY_BITS[int(KEY_BY_NAME["Autograd" + backend])]
    else:
        bits |= functionality_bit("AutogradOther")
    if backend in _AUTOCAST_BACKENDS:
        bits |= functionality_bit("Autocast" + backend)
    return bits


# torch device type name -> raw key-set bits of a normal (dense, strided) tensor.
_DEVICE_BITS: dict[str, int] = {b.lower(): _dense_tensor_bits(b) for b in BACKENDS}
_DEVICE_BITS["privateuseone"] = _DEVICE_BITS.pop("privateuse1")
for _name in ("PrivateUse2", "PrivateUse3"):
    _DEVICE_BITS.pop(_name.lower())
for _name, _key in (
    ("fpga", "FPGA"),
    ("vulkan", "Vulkan"),
    ("metal", "Metal"),
    ("mkldnn", "MkldnnCPU"),
):
    _DEVICE_BITS[_name] = functionality_bit(_key) | _AD_INPLACE | functionality_bit("AutogradOther")

# Built-in device types this build has no backend for, which a plug-in may take over (a
# plug-in registered as "cuda" serves "cuda" devices), and the bits they had before.
SHADOWABLE_DEVICE_TYPES = frozenset({"cuda"})
_SHADOWED: dict[str, int] = {}

# Renamed PrivateUse backends: device name -> slot name, and key renames for printing.
_BACKEND_RENAMES: dict[str, str] = {}
_PRIVATEUSE_RENAMES: dict[str, DispatchKey] = {}


def backend_keyset_bits(device_type: str) -> int:
    """Raw key-set bits of a normal tensor on `device_type` ("cpu", "meta", "cuda", ...)."""
    bits = _DEVICE_BITS.get(device_type)
    if bits is None:
        raise RuntimeError(
            f"Expected one of {', '.join(sorted(_DEVICE_BITS))} device type at start of "
            f"device string: {device_type}"
        )
    return bits


def register_backend_name(name: str, key_suffix: str = "PrivateUse1") -> None:
    """Give a plug-in device name (e.g. "npu") to a PrivateUse backend slot.

    Afterwards `backend_keyset_bits(name)` is the slot's tensor key set, key names such as
    "AutogradNPU"/"NPU" (and "Autogradnpu"/"npu") parse to the slot's keys, and
    `display_name` prints them renamed as c10's toString does ("Autogradnpu", "Sparsenpu").
    """
    if key_suffix not in ("PrivateUse1", "PrivateUse2", "PrivateUse3"):
        raise ValueError(
            f"register_backend_name: key_suffix must name a PrivateUse slot, got {key_suffix!r}"
        )
    if not name.isidentifier() or name != name.lower():
        raise ValueError(
            f"register_backend_name: invalid device name {name!r} "
            "(use a lower-case identifier such as 'npu')"
        )
    previous = _BACKEND_RENAMES.get(key_suffix)
    if previous is not None and previous != name:
        raise RuntimeError(
            f"torch.register_privateuse1_backend() has already been set! Current backend: "
            f"{previous}"
        )
    if name in _DEVICE_BITS and previous != name:
        if name not in SHADOWABLE_DEVICE_TYPES or name in _SHADOWED:
            raise RuntimeError(f"register_backend_name: {name!r} is already a device type")
        _SHADOWED[name] = _DEVICE_BITS[name]  # given back by unregister_backend_name
    _BACKEND_RENAMES[key_suffix] = name
    _DEVICE_BITS[name] = _dense_tensor_bits(key_suffix)
    upper = name.upper()
    for key_name in _RUNTIME_NAMES:
        if key_name.endswith(key_suffix):
            for spelling in (upper, name):  # 'SparseNPU' and 'Sparsenpu' (how it prints)
                _PRIVATEUSE_RENAMES[key_name[: -len(key_suffix)] + spelling] = KEY_BY_NAME[key_name]


def unregister_backend_name(name: str) -> None:
    """Undo `register_backend_name(name, ...)`: the slot is free again and `name` is no longer
    a device type (a plug-in being unloaded; unknown names are ignored)."""
    slots = [slot for slot, device in _BACKEND_RENAMES.items() if device == name]
    if not slots:
        return
    for slot in slots:
        del _BACKEND_RENAMES[slot]
    _DEVICE_BITS.pop(name, None)
    if name in _SHADOWED:
        _DEVICE_BITS[name] = _SHADOWED.pop(name)
    upper = name.upper()
    for key_name in [k for k in _PRIVATEUSE_RENAMES if k.endswith((upper, name))]:
        del _PRIVATEUSE_RENAMES[key_name]


def display_name(key: DispatchKey | str) -> str:
    """A key's name for messages, with renamed PrivateUse backends spelled by their new name."""
    name = key if isinstance(key, str) else key.name
    for suffix, device in _BACKEND_RENAMES.items():
        if name.endswith(suffix):  # as c10's toString: 'Sparseopenreg', 'openreg'
            return name[: -len(suffix)] + device
    return name


def backend_names() -> dict[str, str]:
    """Registered plug-in names: PrivateUse slot -> device name."""
    return dict(_BACKEND_RENAMES)


# Ready-made redispatch masks (PyTorch's after_autograd_keyset etc.).
AFTER_AUTOGRAD = full_after("AutogradOther")
AFTER_AD_INPLACE_OR_VIEW = full_after("ADInplaceOrView")
AFTER_FUNCTIONALIZE = full_after("Functionalize") - DispatchKeySet("ADInplaceOrView")
