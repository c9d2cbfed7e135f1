"""Random number generators on NumPy bit generators (PCG64).

Each device type with data has a default generator, created on first use with PyTorch's
default seed; `manual_seed` reseeds all of them. Kernels draw from `gen.numpy_generator`
(a `numpy.random.Generator`). The streams are deterministic per seed but differ from
PyTorch's (different bit generator), so only seeding behaviour matches, not the values.
"""

from __future__ import annotations

import json
import os

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


def _check_seed(value: object, what: str = "manual_seed") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if hasattr(value, "__index__") and not isinstance(value, bool):
            value = value.__index__()
        else:
            raise RuntimeError(f"{what} expected a long, but got {type(value).__name__}")
    if value < -(1 << 63) or value > _MASK64:
        raise ValueError("Overflow when unpacking long long")
    return value & _MASK64


class Generator:
    """A seeded random stream for one device (`pyaten.Generator(device="cpu")`)."""

    __slots__ = ("device", "_initial_seed", "numpy_generator", "__weakref__")

    def __init__(self, device: Device | str | None = "cpu") -> None:
        dev = as_device(device)
        if dev.type == "meta":
            raise RuntimeError("META device type not an accelerator.")
        self.device = dev
        self._initial_seed = _DEFAULT_SEED
        self.numpy_generator = np.random.Generator(np.random.PCG64(_DEFAULT_SEED))

    def manual_seed(self, seed: int) -> Generator:
        """Reseed deterministically; returns self."""
        value = _check_seed(seed)
        self._initial_seed = value
        self.numpy_generator = np.random.Generator(np.random.PCG64(value))
        return self

    def seed(self) -> int:
        """Reseed from OS entropy and return the new seed."""
        value = int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        return self._initial_seed

    def get_state(self) -> object:
        """The full state as a uint8 tensor (restore with `set_state`)."""
        from pyaten.core.creation import from_numpy

        payload = {"seed": self._initial_seed, "bit_generator": self._bit_state()}
        raw = np.frombuffer(json.dumps(payload).encode(), dtype=np.uint8).copy()
        return from_numpy(raw)

    def set_state(self, new_state: object) -> Generator:
        from pyaten.core.tensor import Tensor

        if not isinstance(new_state, Tensor) or new_state.dtype is not dt.uint8:
            raise TypeError("RNG state must be a pyaten.ByteTensor (uint8 tensor)")
        try:
            payload = json.loads(new_state._numpy().tobytes().decode())
            state = payload["bit_generator"]
            bit_gen = np.random.PCG64()
            bit_gen.state = {
                "bit_generator": state["bit_generator"],
                "state": {k: int(v) for k, v in state["state"].items()},
                "has_uint32": int(state["has_uint32"]),
                "uinteger": int(state["uinteger"]),
            }
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            raise RuntimeError("Generator.set_state(): invalid RNG state tensor") from None
        self._initial_seed = int(payload["seed"])
        self.numpy_generator = np.random.Generator(bit_gen)
        return self

    def clone_state(self) -> Generator:
        """A new generator of the same device in the same state (the streams then agree)."""
        twin = Generator(self.device)
        twin._initial_seed = self._initial_seed
        twin.numpy_generator.bit_generator.state = self.numpy_generator.bit_generator.state
        return twin

    def get_offset(self) -> int:
        raise RuntimeError(f"{self.device.type.upper()} Generator does not use offset")

    def set_offset(self, offset: int) -> Generator:
        raise RuntimeError(f"{self.device.type.upper()} Generator does not use offset")

    def _bit_state(self) -> dict:
        state = self.numpy_generator.bit_generator.state
        return {
            "bit_generator": state["bit_generator"],
            "state": {k: str(v) for k, v in state["state"].items()},
            "has_uint32": state["has_uint32"],
            "uinteger": state["uinteger"],
        }

    def __repr__(self) -> str:
        return f"<pyaten.Generator device={self.device} initial_seed={self._initial_seed}>"


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
