"""`pyaten.random`, as `torch.random`: seeding and state of the default generator, and
`fork_rng` to run code without disturbing the global stream (pyaten/core/generator.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from pyaten.core.generator import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = [
    "Generator",
    "default_generator",
    "fork_rng",
    "get_rng_state",
    "initial_seed",
    "manual_seed",
    "seed",
    "set_rng_state",
]


@contextlib.contextmanager
def fork_rng(
    devices: object = None,
    enabled: bool = True,
    _caller: str = "fork_rng",
    _devices_kw: str = "devices",
    device_type: str | None = None,
) -> Iterator[None]:
    """Restore the CPU default generator's state (seed included) on exit. pyaten has no
    accelerator generators, so `devices` and `device_type` select nothing more."""
    if not enabled:
        yield
        return
    state = default_generator.get_state()
    try:
        yield
    finally:
        default_generator.set_state(state)
