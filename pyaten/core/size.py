"""Small value types of the tensor model: `Size`, layout and memory-format tokens
(`pyaten.strided`, `pyaten.contiguous_format`, ...), and the shared `VersionCounter`."""

from __future__ import annotations

__all__ = [
    "Size",
    "VersionCounter",
    "strided",
    "contiguous_format",
    "channels_last",
    "channels_last_3d",
    "preserve_format",
]


class Size(tuple):
    """A tensor's shape: a tuple of ints that prints as `pyaten.Size([2, 3])`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"pyaten.Size({list(self)!r})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):  # type: ignore[override]
        got = tuple.__getitem__(self, item)
        return Size(got) if isinstance(item, slice) else got

    def __add__(self, other: tuple) -> Size:  # type: ignore[override]
        return Size(tuple.__add__(self, tuple(other)))


class _Token:
    """A named singleton such as `pyaten.strided` or `pyaten.contiguous_format`."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return "pyaten." + self.name


strided = _Token("strided")
contiguous_format = _Token("contiguous_format")
channels_last = _Token("channels_last")
channels_last_3d = _Token("channels_last_3d")
preserve_format = _Token("preserve_format")


class VersionCounter:
    """Counts in-place writes; shared by a tensor and all its views (autograd checks it)."""

    __slots__ = ("value",)

    def __init__(self, value: int = 0) -> None:
        self.value = value
