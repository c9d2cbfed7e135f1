"""`FakeTensorMode`: run programs on tensors that have shapes, dtypes and strides but no
data (PyTorch's `torch._subclasses.fake_tensor`).

A FakeTensor here is a Meta tensor: every operator on it runs its Meta kernel, which
computes the result's sizes, strides and dtype. Given a `ShapeEnv`
(pyaten/fx/experimental/symbolic_shapes.py), `from_tensor` gives the fake symbolic sizes, so
the results' sizes are expressions over the inputs' (`s0*s1`) and decisions on them are
guards. Unlike PyTorch's, a fake reports the device `meta` (PyTorch's reports the device of
the tensor it stands for, in `fake_device`); `is_fake` tells a fake from a real tensor.
Inside the mode, factories (`pyaten.zeros(...)`) make fakes, and a real tensor reaching an
operator is an error unless `allow_non_fake_inputs=True`, which converts it.
"""

from __future__ import annotations

from typing import Any

from pyaten.core.device import device as make_device
from pyaten.core.tensor import Tensor
from pyaten.core.views import empty_tensor
from pyaten.fx.experimental.symbolic_shapes import ShapeEnv, fake_tensor
from pyaten.utils import _pytree
from pyaten.utils._python_dispatch import TorchDispatchMode

__all__ = ["FakeTensorMode", "is_fake"]

_META = make_device("meta")


def is_fake(t: Any) -> bool:
    """Whether `t` is a FakeTensor (a tensor without data: the Meta device)."""
    return isinstance(t, Tensor) and t.device.type == "meta"


class FakeTensorMode(TorchDispatchMode):
    """`with FakeTensorMode() as mode: fake = mode.from_tensor(t); fake @ fake.t()`."""

    def __init__(self, *, allow_non_fake_inputs: bool = False,
                 shape_env: ShapeEnv | None = None, static_shapes: bool | None = None) -> None:
        super().__init__()
        self.allow_non_fake_inputs = allow_non_fake_inputs
        self.shape_env = shape_env
        self.static_shapes = shape_env is None if static_shapes is None else static_shapes
        self._converted: dict[int, tuple[Tensor, Tensor]] = {}

    def from_tensor(self, t: Tensor, *, static_shapes: bool | None = None,
                    source: str | None = None) -> Tensor:
        """The fake standing for `t` (the same one for the same `t`): symbolic sizes when
        the mode has a ShapeEnv and static shapes are not asked for."""
        if not isinstance(t, Tensor):
            raise TypeError(f"from_tensor(): expected a Tensor, got {type(t).__name__}")
        if is_fake(t):
            return t
        known = self._converted.get(id(t))
        if known is not None and known[0] is t:
            return known[1]
        static = self.static_shapes if static_shapes is None else static_shapes
        if static or self.shape_env is None:
            fake = empty_tensor(tuple(t.shape), t.dtype, _META, tuple(t.stride()))
        else:
            fake = fake_tensor(t.detach(), self.shape_env,
                               source or f"L['t{len(self._converted)}']")
        if t.requires_grad:
            fake.requires_grad_(True)
        self._converted[id(t)] = (t, fake)
        return fake

    def _fake_argument(self, func: Any, args: tuple, kwargs: dict) -> Any:
        def convert(value: Any) -> Any:
            if not isinstance(value, Tensor) or is_fake(value):
                return value
            if value._wrapped_number or self.allow_non_fake_inputs:
                return value if value._wrapped_number else self.from_tensor(value)
            raise AssertionError(
                "Please convert all Tensors to FakeTensors first or instantiate "
                f"FakeTensorMode with 'allow_non_fake_inputs'. Found in {func}")
        return convert

    def __torch_dispatch__(self, func: Any, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        convert = self._fake_argument(func, args, kwargs)
        args = _pytree.tree_map(convert, args)
        kwargs = _pytree.tree_map(convert, kwargs)
        if not any(isinstance(v, Tensor) for v in _pytree.tree_leaves((args, kwargs))):
            schema = getattr(func, "_schema", None)
            if schema is not None and any(a.name == "device" for a in schema.arguments):
                kwargs = {**kwargs, "device": _META}  # a factory: a fake
        return func(*args, **kwargs)
