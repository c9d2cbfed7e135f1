"""The random draws of samplers and `random_split`, in one place (tests inject PyTorch's
permutations here to compare orders: the two libraries' random bits differ)."""

from __future__ import annotations

from pyaten.core import Generator, Tensor, as_tensor, float64, int64
from pyaten.ops import aten


def randperm(n: int, generator: Generator | None) -> list[int]:
    """A random permutation of range(n)."""
    return aten.randperm.generator(n, generator=generator).tolist()


def randint(high: int, count: int, generator: Generator | None) -> list[int]:
    """`count` integers drawn uniformly from range(high)."""
    return aten.randint.low_generator(0, high, [count], generator=generator, dtype=int64).tolist()


def multinomial(weights: Tensor, count: int, replacement: bool,
                generator: Generator | None) -> list[int]:
    """`count` indices drawn with probabilities proportional to `weights`."""
    return aten.multinomial.default(weights, count, replacement, generator=generator).tolist()


def fresh_seed() -> int:
    """A seed drawn from the default generator (a sampler without its own generator)."""
    return int(aten.random_.default(aten.empty.memory_format([], dtype=int64)).item())


def as_weights(values: object) -> Tensor:
    """`values` as a float64 tensor (WeightedRandomSampler's weights)."""
    return as_tensor(values, dtype=float64)
