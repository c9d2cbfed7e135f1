"""Random number generators: PyTorch's CPU generator (mt19937), bit for bit.

Note: PyTorch's CPU stream.
    PyTorch's `CPUGeneratorImpl` is a 32-bit Mersenne Twister seeded with the low 32 bits of
    the seed (Knuth's initialisation, the twist deferred to the first draw), plus two cached
    normal samples (one double, one float) that Box-Muller leaves behind. A 64-bit draw is two
    32-bit words, the first one high. NumPy's `MT19937` bit generator runs the same recurrence,
    so a `Generator` keeps one and only translates the state: PyTorch's `left_` is
    `625 - pos`, its `next_` is `pos` (0 right after seeding, before the first twist).
    Kernels draw raw words in bulk (`random32`, `random64`) and apply PyTorch's transforms as
    array expressions (pyaten/native/kernels/random_draws.py), so seeded programs print
    PyTorch's numbers. `get_state` writes PyTorch's 5056-byte `CPUGeneratorImplState`, so
    states move between the two libraries.
"""

from __future__ import annotations

import ctypes
import os
import struct

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.device import as_device
from pyaten.core.device import device as Device

__all__ = [
    "Generator",
    "default_generator",
    "get_default_generator",
    "manual_seed",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
]

_DEFAULT_SEED = 67280421310721  # PyTorch's default_rng_seed_val
_MASK64 = (1 << 64) - 1
_STATE_WORDS = 624  # MERSENNE_STATE_N

# CPUGeneratorImplState: the legacy POD (seed, left, seeded, next, 624 64-bit words, three
# doubles and an int of the old normal cache, padded to 8 bytes), then the float cache.
_HEAD = struct.Struct("<QiiQ")
_STATE_AT = _HEAD.size
_NORMAL_AT = _STATE_AT + 8 * _STATE_WORDS
_NORMAL = struct.Struct("<dddi")
_FLOAT_AT = _NORMAL_AT + _NORMAL.size + 4
_FLOAT = struct.Struct("<f?")
STATE_SIZE = _FLOAT_AT + 8  # 5056, sizeof(CPUGeneratorImplState)


def _check_seed(value: object, what: str = "manual_seed") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if hasattr(value, "__index__") and not isinstance(value, bool):
            value = value.__index__()
        else:
            raise RuntimeError(f"{what} expected a long, but got {type(value).__name__}")
    if value < -(1 << 63) or value > _MASK64:
        raise ValueError("Overflow when unpacking long long")
    return value & _MASK64


def _seeded_key(seed32: int) -> np.ndarray:
    """mt19937's initial 624 words for a 32-bit seed (Knuth's multiplier 1812433253)."""
    key = np.empty(_STATE_WORDS, dtype=np.uint32)
    value = seed32
    for i in range(_STATE_WORDS):
        key[i] = value
        value = (1812433253 * (value ^ (value >> 30)) + i + 1) & 0xFFFFFFFF
    return key


def _words_view(bits: np.random.MT19937) -> np.ndarray | None:
    """The bit generator's own state memory as 625 int32 words (the 624-word key, then the
    position), through its public ctypes state address; None if the layout is not NumPy's
    `mt19937_state {uint32 key[624]; int pos;}` (checked against `.state`)."""
    raw = (ctypes.c_int32 * (_STATE_WORDS + 1)).from_address(bits.ctypes.state_address)
    view = np.ctypeslib.as_array(raw)
    state = bits.state["state"]
    if int(view[-1]) != int(state["pos"]) or not np.array_equal(
        view[:-1].view(np.uint32), state["key"]
    ):
        return None
    return view


_KEYS: dict[int, np.ndarray] = {}  # a few recent seeds' keys: reseeding is common in loops


def _bits_for(seed: int) -> np.random.MT19937:
    seed32 = seed & 0xFFFFFFFF
    key = _KEYS.get(seed32)
    if key is None:
        if len(_KEYS) > 64:
            _KEYS.clear()
        key = _KEYS[seed32] = _seeded_key(seed32)
    bits = np.random.MT19937(0)
    # pos 624: the first draw twists, as PyTorch's left_ == 1
    bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": _STATE_WORDS}}
    return bits


class Generator:
    """A seeded random stream for one device (`pyaten.Generator(device="cpu")`), PyTorch's
    mt19937 CPU generator (see Note: PyTorch's CPU stream)."""

    __slots__ = (
        "device", "_initial_seed", "_bits", "_words", "_fresh", "next_double_normal",
        "next_float_normal", "__weakref__",
    )

    def __init__(self, device: Device | str | None = "cpu") -> None:
        dev = as_device(device)
        if dev.type == "meta":
            raise RuntimeError("META device type not an accelerator.")
        self.device = dev
        self._reseed(_DEFAULT_SEED)

    def _reseed(self, value: int) -> None:
        self._initial_seed = value
        self._bits = _bits_for(value)
        self._words = None  # the state memory's view, made on the first compiled draw
        self._fresh = True  # seeded, nothing drawn: PyTorch reports next_ = 0
        self.next_double_normal: float | None = None
        self.next_float_normal: float | None = None

    def manual_seed(self, seed: int) -> Generator:
        """Reseed deterministically; returns self."""
        self._reseed(_check_seed(seed))
        return self

    def seed(self) -> int:
        """Reseed from OS entropy and return the new seed."""
        value = int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        return self._initial_seed

    # --- raw draws ---------------------------------------------------------------------------

    def random32(self, count: int) -> np.ndarray:
        """`count` 32-bit words (PyTorch's `random()`), as uint64 values below 2**32."""
        self._fresh = False
        return self._bits.random_raw(count)

    def random64(self, count: int) -> np.ndarray:
        """`count` 64-bit words (PyTorch's `random64()`: two words, the first one high)."""
        self._fresh = False
        words = self._bits.random_raw(2 * count)
        high = words[0::2]
        high <<= np.uint64(32)
        high |= words[1::2]
        return high

    def draw_with(self, loop, *args) -> None:
        """Run a compiled loop `loop(key, pos, *args) -> new_pos` on the bit generator's 624
        state words and position (the loop runs the same twister): in place when NumPy's
        state memory can be viewed, else on a copy written back."""
        self._fresh = False
        words = self._words
        if words is None:
            words = self._words = _words_view(self._bits)
            if words is None:
                words = self._words = False
        if words is not False:
            words[-1] = loop(words[:-1].view(np.uint32), int(words[-1]), *args)
            return
        state = self._bits.state["state"]
        key = np.array(state["key"], dtype=np.uint32)
        pos = loop(key, int(state["pos"]), *args)
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}

    @property
    def numpy_generator(self) -> np.random.Generator:
        """A NumPy generator on this stream (draws advance it, with NumPy's transforms)."""
        self._fresh = False
        return np.random.Generator(self._bits)

    # --- state ---------------------------------------------------------------------------------

    def get_state(self) -> object:
        """PyTorch's 5056-byte CPUGeneratorImplState as a uint8 tensor."""
        from pyaten.core.creation import from_numpy

        return from_numpy(np.frombuffer(self._state_bytes(), dtype=np.uint8).copy())

    def _state_bytes(self) -> bytes:
        state = self._bits.state["state"]
        pos = int(state["pos"])
        nxt = 0 if self._fresh else pos
        raw = bytearray(STATE_SIZE)
        _HEAD.pack_into(raw, 0, self._initial_seed, _STATE_WORDS + 1 - pos, 1, nxt)
        words = np.asarray(state["key"], dtype=np.uint64)
        raw[_STATE_AT:_NORMAL_AT] = words.astype("<u8").tobytes()
        double = self.next_double_normal
        _NORMAL.pack_into(raw, _NORMAL_AT, 0.0, 0.0 if double is None else double, 0.0,
                          double is not None)
        single = self.next_float_normal
        _FLOAT.pack_into(raw, _FLOAT_AT, 0.0 if single is None else single, single is not None)
        return bytes(raw)

    def set_state(self, new_state: object) -> Generator:
        """Restore a state from `get_state` (pyaten's or PyTorch's bytes)."""
        from pyaten.core.tensor import Tensor

        if not isinstance(new_state, Tensor):
            raise TypeError(
                f"expected a torch.ByteTensor, but got {type(new_state).__name__}"
            )
        if new_state.dtype is not dt.uint8 or new_state.device.type != "cpu":
            raise TypeError("RNG state must be a torch.ByteTensor")
        if new_state.numel() != STATE_SIZE:
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {STATE_SIZE} but found the input "
                f"RNG state size to be {new_state.numel()}"
            )
        return self._load_state_bytes(
            np.ascontiguousarray(new_state._numpy()).reshape(-1).tobytes()
        )

    def _load_state_bytes(self, raw: bytes) -> Generator:
        seed, left, seeded, nxt = _HEAD.unpack_from(raw, 0)
        nxt &= 0xFFFFFFFF  # PyTorch keeps next_ as a uint32
        if not (seeded and 0 < left <= _STATE_WORDS and nxt <= _STATE_WORDS):
            raise RuntimeError("Invalid mt19937 state")
        words = np.frombuffer(raw, dtype="<u8", count=_STATE_WORDS, offset=_STATE_AT)
        bits = np.random.MT19937(0)
        bits.state = {
            "bit_generator": "MT19937",
            # the words before the next twist: left_ - 1 (PyTorch keeps next_ + left_ == 625)
            "state": {"key": words.astype(np.uint32), "pos": _STATE_WORDS + 1 - left},
        }
        _, normal_y, _, normal_valid = _NORMAL.unpack_from(raw, _NORMAL_AT)
        single, single_valid = _FLOAT.unpack_from(raw, _FLOAT_AT)
        self._initial_seed = seed
        self._bits = bits
        self._words = None
        self._fresh = left == 1 and nxt == 0
        self.next_double_normal = normal_y if normal_valid else None
        self.next_float_normal = single if single_valid else None
        return self

    def clone_state(self) -> Generator:
        """A new generator of the same device in the same state (the streams then agree)."""
        twin = Generator(self.device)
        twin._initial_seed = self._initial_seed
        twin._bits.state = self._bits.state
        twin._fresh = self._fresh
        twin.next_double_normal = self.next_double_normal
        twin.next_float_normal = self.next_float_normal
        return twin

    def __reduce__(self):
        # pickled and deep-copied through PyTorch's state bytes (the NumPy bit generator's
        # memory view must not travel)
        return (_from_state_bytes, (str(self.device), self._state_bytes()))

    def get_offset(self) -> int:
        raise RuntimeError(f"{self.device.type.upper()} Generator does not use offset")

    def set_offset(self, offset: int) -> Generator:
        raise RuntimeError(f"{self.device.type.upper()} Generator does not use offset")

    def __repr__(self) -> str:
        return f"<pyaten.Generator device={self.device} initial_seed={self._initial_seed}>"


def _from_state_bytes(device: str, raw: bytes) -> Generator:
    return Generator(device)._load_state_bytes(raw)


_DEFAULTS: dict[str, Generator] = {}


def get_default_generator(device: Device | str | None = None) -> Generator:
    """The default generator of a device type (created on first use)."""
    dev = as_device(device)
    gen = _DEFAULTS.get(dev.type)
    if gen is None:
        gen = _DEFAULTS[dev.type] = Generator(dev.type)
    return gen


default_generator = get_default_generator("cpu")


def resolve_generator(generator: Generator | None, device: Device | None) -> Generator:
    """`generator` if given (checking its device type), else the device's default."""
    if generator is None:
        return get_default_generator(device)
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a pyaten.Generator, got {type(generator).__name__}")
    if device is not None and generator.device.type != as_device(device).type:
        raise RuntimeError(
            f"Expected a '{as_device(device).type}' device type for generator but found "
            f"'{generator.device.type}'"
        )
    return generator


def manual_seed(seed: int) -> Generator:
    """Seed every default generator; returns the CPU one. Like `torch.manual_seed`, the seed
    goes through `int()` first (`1.5` seeds with 1), unlike `Generator.manual_seed`."""
    value = _check_seed(int(seed))
    for gen in _DEFAULTS.values():
        gen.manual_seed(value)
    return default_generator


def seed() -> int:
    """Seed the default generators from OS entropy; returns the seed."""
    value = default_generator.seed()
    for gen in _DEFAULTS.values():
        if gen is not default_generator:
            gen.manual_seed(value)
    return value


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> object:
    return default_generator.get_state()


def set_rng_state(new_state: object) -> None:
    default_generator.set_state(new_state)
