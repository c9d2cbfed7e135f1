"""FunctionalTensor: a tensor whose value is replaced, never written, and the storage it
shares with its views.

Note: functional storage and lazy view regeneration
    PyTorch's FunctionalTensorWrapper, in Python. Each FunctionalTensor holds `elem`, its
    current value (a plain tensor nobody writes), and a `FunctionalStorage` shared by a base
    and every view taken from it. A view keeps the chain of `ViewMeta`s (the view operators
    and their arguments) that leads from the storage's base to it.

    A write into a tensor (an in-place or out= operator, run as its functional variant)
    replaces that tensor's `elem` and records an update on the storage: the new value and the
    tensor's view chain (`commit_update`). Nothing else changes at once. When any tensor of
    the storage is next read, `sync` applies pending updates to the base (replaying the chain
    forward from the base to each intermediate view, then applying each view's inverse from
    the last to the first, pyaten/_functionalize/inverses.py), and regenerates the tensor
    from the new base by replaying its own chain (`_functionalize_sync`). A counter
    (`generation`) on the storage and on each tensor says whether a tensor is up to date.

    As in ATen, taking a view does not sync its input (the view is computed from the input's
    value as it is), a new view starts at generation 0 (so it is regenerated when first read
    after any write into its storage), and a write does not mark the written tensor up to
    date, so it is regenerated from the new base on the next read. This is why
    `make_fx(functionalize(f))` shows some view calls whose results are not used: PyTorch's
    graphs show the same calls, which dead-code elimination removes.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.native.ops_handles import aten
from pyaten.utils._python_dispatch import _get_current_dispatch_mode, _pop_mode_temporarily

from .inverses import reverse_view, view_op

__all__ = [
    "FunctionalValue",
    "FunctionalTensor",
    "FunctionalStorage",
    "ViewMeta",
    "_to_functional_tensor",
    "_from_functional_tensor",
    "_is_functional_tensor",
    "_functionalize_sync",
]


@dataclass(frozen=True)
class ViewMeta:
    """One step from a base to a view: `aten.<name>(base, *args, **kwargs)`, picking output
    `out_index` of a multi-output view (`split`, `unbind`); -1 for a single output."""

    name: str  # "transpose.int"
    args: tuple
    kwargs: dict = field(default_factory=dict)
    out_index: int = -1

    def forward(self, base: Tensor, reapply_views: bool) -> Tensor:
        packet, _, overload = self.name.partition(".")
        out = view_op(packet, overload, reapply_views)(base, *self.args, **self.kwargs)
        return out[self.out_index] if self.out_index >= 0 else out


class FunctionalStorage:
    """The base value shared by a tensor and its views, and the writes not yet applied."""

    __slots__ = ("base", "updates", "generation", "reapply_views")

    def __init__(self, base: Tensor, reapply_views: bool) -> None:
        self.base = base
        self.updates: list[tuple[Tensor, tuple[ViewMeta, ...]]] = []
        self.generation = 0
        self.reapply_views = reapply_views

    def add_update(self, value: Tensor, view_metas: tuple[ViewMeta, ...]) -> None:
        self.updates.append((value, view_metas))
        self.generation += 1

    def apply_updates(self) -> None:
        for value, metas in self.updates:
            self.base = self._apply_update(value, metas)
        self.updates.clear()

    def _apply_update(self, value: Tensor, metas: tuple[ViewMeta, ...]) -> Tensor:
        if not metas:
            return value
        reapply = self.reapply_views
        chain = [self.base]  # the base and each intermediate view, as they are now
        for meta in metas[:-1]:
            chain.append(meta.forward(chain[-1], reapply))
        for i in range(len(metas) - 1, -1, -1):
            value = reverse_view(metas[i], chain[i], value, reapply)
        return value


class FunctionalValue:
    """The state changes shared by both functional wrappers (PyTorch's
    FunctionalTensorWrapper methods): `FunctionalTensor` (the mode's, on the Python key) and
    `FunctionalTensorWrapper` (the Functionalize key's, tensor_wrapper.py). A subclass holds
    `elem` (its current value), `functional_storage`, `view_metas` and `generation`."""

    __slots__ = ()
    elem: Tensor
    functional_storage: FunctionalStorage
    view_metas: tuple[ViewMeta, ...]
    generation: int
    has_metadata_mutation = False  # set by in-place views and resize_

    def replace_(self, value: Tensor) -> None:
        """Make `value` this tensor's value; a value of another dtype is converted to ours
        (`_to_copy`), as ATen's replace_ does."""
        if value.dtype != self.dtype:
            value = aten._to_copy.default(value, dtype=self.dtype)
        self.elem = value
        self._mirror(value)

    def commit_update(self) -> None:
        """Record this tensor's new value on its storage (Note: functional storage)."""
        self.functional_storage.add_update(self.elem, self.view_metas)

    def sync(self) -> None:
        """Bring this tensor up to date with every write into its storage."""
        storage = self.functional_storage
        if self.generation == storage.generation:
            return
        storage.apply_updates()
        value = storage.base
        for meta in self.view_metas:
            value = meta.forward(value, storage.reapply_views)
        self.elem = value
        self._mirror(value)
        self.generation = storage.generation

    def mutate_view_meta(self, meta: ViewMeta, value: Tensor) -> None:
        """An in-place view operator (`t_`, `transpose_`...): this tensor becomes a view."""
        self.has_metadata_mutation = True
        self.view_metas = (*self.view_metas, meta)
        self.elem = value
        self._mirror(value)

    def _mirror(self, value: Tensor) -> None:
        # the wrapper shows its value's geometry (out= resizes, in-place views)
        self._sizes = tuple(value.shape)
        self._strides = tuple(value.stride())
        self._offset = value.storage_offset()


class FunctionalTensor(FunctionalValue, Tensor):
    """A wrapper subclass (docs/python-dispatch.md) whose operators run functionally under
    a `FunctionalTensorMode`; `elem` is its current value."""

    @staticmethod
    def __new__(cls, elem: Tensor, storage: FunctionalStorage,
                view_metas: tuple[ViewMeta, ...] = (), generation: int = 0) -> FunctionalTensor:
        return Tensor._make_wrapper_subclass(
            cls, elem.shape, elem.stride(), elem.storage_offset(), dtype=elem.dtype,
            device=elem.device, requires_grad=False,
        )

    def __init__(self, elem: Tensor, storage: FunctionalStorage,
                 view_metas: tuple[ViewMeta, ...] = (), generation: int = 0) -> None:
        self.elem = elem
        self.functional_storage = storage
        self.view_metas = view_metas
        self.generation = generation

    def __repr__(self) -> str:
        return f"FunctionalTensor({self.elem!r})"

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        raise RuntimeError(
            f"{func}: a FunctionalTensor was used outside functionalize() "
            "(no FunctionalTensorMode is active)"
        )


def _to_functional_tensor(t: Tensor, reapply_views: bool = True) -> FunctionalTensor:
    """Wrap `t` as the base of a new functional storage (PyTorch's torch._to_functional_tensor)."""
    return FunctionalTensor(t, FunctionalStorage(t, reapply_views))


def _outside_functional_mode() -> Any:
    """Called from a program that functionalize() runs, the helpers below make their calls
    with the FunctionalTensorMode lifted, so that those calls are not functionalized again."""
    if getattr(_get_current_dispatch_mode(), "functionalizes", False):
        return _pop_mode_temporarily()
    return contextlib.nullcontext()


def _from_functional_tensor(t: Tensor) -> Tensor:
    """The current value of a FunctionalTensor (synced first); other values as they are."""
    if isinstance(t, FunctionalTensor):
        with _outside_functional_mode():
            t.sync()
        return t.elem
    return t


def _is_functional_tensor(t: Any) -> bool:
    return isinstance(t, FunctionalTensor)


def _functionalize_sync(t: Any) -> None:
    """Apply pending writes to `t` (PyTorch's torch._functionalize_sync)."""
    if isinstance(t, FunctionalTensor):
        with _outside_functional_mode():
            t.sync()
