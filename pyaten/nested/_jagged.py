"""The jagged layout: a Python tensor subclass over `values` and `offsets` (PyTorch's NJT).

Note: the jagged nested tensor
    As PyTorch's torch/nested/_internal/nested_tensor.py, a jagged nested tensor is a wrapper
    subclass: its key set is the device's plus the Python keys (so every operator below
    autograd reaches `__torch_dispatch__`) plus NestedTensor and AutogradNestedTensor (so
    autograd runs the nested autograd kernels of pyaten/nested/_autograd.py). It holds
    `values` (the sequences concatenated along the ragged dim) and `offsets` (B + 1 starts);
    `_ragged_idx` is the ragged dim of the nested tensor (1 unless transposed), so component
    i is `values.narrow(_ragged_idx - 1, offsets[i], length i)`. Its shape prints the ragged
    dim as `j<n>`, one symbol per offsets tensor, as PyTorch's nested ints.
"""

from __future__ import annotations

import itertools
from typing import Any

from pyaten.autograd.function import Function
from pyaten.core.size import Size
from pyaten.core.tensor import Tensor, _wrap_dim
from pyaten.core.torch_function import _disabled_torch_function_impl
from pyaten.dispatch.keys import functionality_bit
from pyaten.native.kernels.nested import RULES, Layout, dense_op
from pyaten.native.ops_handles import aten_ops as _aten

__all__ = ["NestedTensor", "JAGGED", "jagged_from_parts"]

_NESTED_BITS = functionality_bit("NestedTensor") | functionality_bit("AutogradNestedTensor")
_COUNTER = itertools.count(1)


class RaggedSize(int):
    """The size of a ragged dim: prints as PyTorch's nested int `j<n>`; equal only to itself
    (two nested tensors share it when they share offsets)."""

    def __new__(cls, number: int) -> RaggedSize:
        self = int.__new__(cls, -1)
        self.number = number
        return self

    def __repr__(self) -> str:
        return f"j{self.number}"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return id(self)


class NestedTensor(Tensor):
    """A jagged-layout nested tensor (build with `pyaten.nested.nested_tensor(...,
    layout=pyaten.jagged)` or `nested_tensor_from_jagged`)."""

    @staticmethod
    def __new__(cls, values: Tensor, offsets: Tensor, ragged_idx: int = 1,
                ragged: RaggedSize | None = None) -> NestedTensor:
        lengths = offsets.diff().tolist() if offsets.numel() > 1 else []
        batch = offsets.numel() - 1
        dense = list(values._sizes)
        padded = dense[: ragged_idx - 1] + [max(lengths, default=0)] + dense[ragged_idx:]
        t = Tensor._make_wrapper_subclass(
            cls, [batch] + padded, dtype=values._dtype, device=values._device,
            requires_grad=False)
        t._keyset |= _NESTED_BITS
        if ragged is None:
            ragged = RaggedSize(next(_COUNTER))
        sizes = [batch] + padded
        sizes[ragged_idx] = ragged
        t._sizes = tuple(sizes)
        t._values = values
        t._offsets = offsets
        t._ragged_idx = ragged_idx
        t._ragged = ragged
        t._lengths = lengths
        return t

    __torch_function__ = _disabled_torch_function_impl

    # ------------------------------------------------------------------ metadata
    @property
    def is_nested(self) -> bool:
        return True

    @property
    def layout(self) -> Any:
        from pyaten.nested import jagged

        return jagged

    @property
    def shape(self) -> Size:
        return Size(self._sizes)

    def size(self, dim: int | None = None) -> Any:
        if dim is None:
            return Size(self._sizes)
        return self._sizes[_wrap_dim(int(dim), len(self._sizes))]

    def numel(self) -> int:
        return self._values.numel()

    def values(self) -> Tensor:
        return self._values

    def offsets(self) -> Tensor:
        return self._offsets

    def lengths(self) -> None:
        return None

    def is_contiguous(self, memory_format: object = None) -> bool:
        return self._values.is_contiguous()

    def __len__(self) -> int:
        return self._sizes[0]

    def __iter__(self):  # noqa: ANN204 - the components, as PyTorch's unbind(0)
        return iter(self.unbind(0))

    def _nested_tensor_size(self) -> Tensor:
        import pyaten

        return pyaten.tensor([list(p._sizes) for p in jagged_parts(self)], dtype=pyaten.int64)

    def __repr__(self) -> str:
        size = "(" + ", ".join(str(s) for s in self._sizes) + ")"
        grad = ""
        if self.grad_fn is not None:  # PyTorch's subclass prints the node object
            from pyaten.core.printing import _grad_fn_name

            node = self.grad_fn
            grad = f"grad_fn=<{_grad_fn_name(node)} object at {hex(id(node))}>, "
        elif self._requires_grad:
            grad = "requires_grad=True, "
        return (f"NestedTensor(size={size}, offsets={self._offsets!r}, {grad}"
                f"contiguous={self.is_contiguous()})")

    # ------------------------------------------------------------------ operators
    @classmethod
    def __torch_dispatch__(cls, func: Any, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        name = func.__name__
        key = name[: -len(".default")] if name.endswith(".default") else name
        special = _SPECIAL.get(key)
        if special is not None:
            return special(*args, **kwargs)
        if "pointwise" in func.tags:
            return _pointwise(func, args, kwargs)
        rule = RULES.get(key)
        if rule is None:
            raise NotImplementedError(
                f"NestedTensor {name}: dispatching not implemented for the jagged layout")
        return rule(JAGGED, dense_op(key), *args, **kwargs)


def jagged_parts(t: NestedTensor) -> list[Tensor]:
    dim = t._ragged_idx - 1
    values, starts = t._values, t._offsets.tolist()
    narrow = _aten().narrow.default
    return [narrow(values, dim, starts[i], starts[i + 1] - starts[i])
            for i in range(len(starts) - 1)]


def jagged_from_parts(parts: list, ragged_idx: int = 1, like: NestedTensor | None = None
                      ) -> NestedTensor:
    """A jagged nested tensor holding `parts` concatenated along dim `ragged_idx - 1`."""
    import pyaten

    dim = ragged_idx - 1
    lengths = [p._sizes[dim] for p in parts]
    if like is not None and like._lengths == lengths and like._ragged_idx == ragged_idx:
        offsets, ragged = like._offsets, like._ragged
    else:
        starts = [0] + list(itertools.accumulate(lengths))
        offsets, ragged = pyaten.tensor(starts, dtype=pyaten.int64), None
    values = _aten().cat.default(list(parts), dim)
    return NestedTensor(values, offsets, ragged_idx, ragged)


def _pack(like: NestedTensor | None, parts: list) -> NestedTensor:
    # the ragged dim is where the parts' sizes differ (an op may move it: transpose)
    ragged_idx = 1 if like is None else like._ragged_idx
    if parts:
        differ = [d for d in range(parts[0].dim())
                  if any(p._sizes[d] != parts[0]._sizes[d] for p in parts)]
        if len(differ) == 1:
            ragged_idx = differ[0] + 1
    return jagged_from_parts(parts, ragged_idx, like)


JAGGED = Layout(jagged_parts, _pack)
JAGGED_NEW = JAGGED


class _FromValues(Function):
    @staticmethod
    def forward(ctx: Any, values: Tensor, offsets: Tensor, ragged_idx: int) -> NestedTensor:
        return NestedTensor(values, offsets, ragged_idx)

    @staticmethod
    def backward(ctx: Any, grad: NestedTensor) -> tuple:
        return grad._values, None, None


def from_values(values: Tensor, offsets: Tensor, ragged_idx: int = 1) -> NestedTensor:
    """A jagged nested tensor viewing `values` (its gradient flows back to `values`)."""
    if offsets.dim() != 1 or offsets.numel() < 1:
        raise RuntimeError("nested_tensor_from_jagged(): offsets must be a 1-D tensor")
    if not 1 <= ragged_idx < values.dim() + 1:
        raise RuntimeError(
            f"nested_tensor_from_jagged(): jagged_dim {ragged_idx} is out of range for "
            f"values of {values.dim()} dims")
    return _FromValues.apply(values, offsets, ragged_idx)


def _pointwise(func: Any, args: tuple, kwargs: dict) -> Any:
    # Values-level: every nested argument shares one ragged structure; dense ones are 0-dim
    # (or broadcast over the dims after the ragged one, as PyTorch's jagged layout allows).
    nested = [a for a in args if isinstance(a, NestedTensor)]
    first = nested[0]
    for other in nested[1:]:
        if other._lengths != first._lengths or other._ragged_idx != first._ragged_idx:
            shapes = " and ".join(
                "(" + ", ".join(str(s) for s in t._sizes) + ")" for t in (first, other))
            raise RuntimeError(
                f"cannot call binary pointwise function {func.__name__} with inputs of shapes "
                f"{shapes}")
    unwrapped = []
    for a in args:
        if isinstance(a, NestedTensor):
            unwrapped.append(a._values)
        elif isinstance(a, Tensor) and a.dim() > 0:
            if a.dim() >= first.dim():
                raise RuntimeError(
                    f"{func.__name__}: a dense tensor broadcast against a jagged nested "
                    "tensor must have fewer dims than the nested tensor")
            unwrapped.append(a)
        else:
            unwrapped.append(a)
    out = func(*unwrapped, **kwargs)
    if func.__name__.split(".")[0].endswith("_"):
        return args[0]  # in place: the values were written
    return NestedTensor(out, first._offsets, first._ragged_idx, first._ragged)


def _values_map(fn: Any) -> Any:
    def special(self: NestedTensor, *args: Any, **kwargs: Any) -> NestedTensor:
        return NestedTensor(fn(self._values, *args, **kwargs), self._offsets,
                            self._ragged_idx, self._ragged)

    return special


def _unbind(self: NestedTensor, dim: int = 0) -> list:
    if _wrap_dim(dim, self.dim()) != 0:
        raise RuntimeError(
            f"unbind(): only supported for NestedTensor on dim=0 (got dim={dim})")
    return jagged_parts(self)


def _transpose(self: NestedTensor, dim0: int, dim1: int) -> NestedTensor:
    ndim = self.dim()
    d0, d1 = _wrap_dim(dim0, ndim), _wrap_dim(dim1, ndim)
    if d0 == 0 or d1 == 0:
        raise ValueError("transpose(): not supported on jagged layout nested tensor for "
                         "the batch dim 0")
    values = _aten().transpose.int(self._values, d0 - 1, d1 - 1)
    ragged = self._ragged_idx
    ragged = d1 if ragged == d0 else d0 if ragged == d1 else ragged
    return NestedTensor(values, self._offsets, ragged, self._ragged)


def _last_dim_op(key: str) -> Any:
    # An operator over trailing dense dims runs once on the values (dim shifted by one).
    def special(self: NestedTensor, *args: Any, **kwargs: Any) -> Any:
        rule = RULES[key]
        return rule(JAGGED, dense_op(key), self, *args, **kwargs)

    return special


def _reshape(self: NestedTensor, shape: list) -> NestedTensor:
    shape = list(shape)
    r = self._ragged_idx
    if len(shape) <= r or shape[0] != self._sizes[0] or shape[r] not in (-1, self._ragged):
        raise RuntimeError(
            f"view(): the jagged nested tensor's batch dim and ragged dim {r} must be kept "
            f"(with -1 for the ragged dim), got shape {shape}")
    values_shape = shape[1:]
    values_shape[r - 1] = self._values._sizes[r - 1]
    out = _aten().reshape.default(self._values, values_shape)
    return NestedTensor(out, self._offsets, r, self._ragged)


def _on_values(t: NestedTensor, out: Tensor) -> NestedTensor:
    return NestedTensor(out, t._offsets, t._ragged_idx, t._ragged)


def _linear(input: Any, weight: Tensor, bias: Tensor | None = None) -> Any:
    # over the last dim: once on the values when the ragged dim is not the last
    if isinstance(input, NestedTensor) and input._ragged_idx < input.dim() - 1:
        return _on_values(input, _aten().linear.default(input._values, weight, bias))
    return RULES["linear"](JAGGED, dense_op("linear"), input, weight, bias)


def _softmax(self: NestedTensor, dim: int, half_to_float: bool) -> Any:
    d = _wrap_dim(dim, self.dim())
    if d not in (0, self._ragged_idx):
        return _on_values(self, _aten()._softmax.default(self._values, d - 1, half_to_float))
    return RULES["_softmax"](JAGGED, dense_op("_softmax"), self, dim, half_to_float)


def _layer_norm(input: NestedTensor, normalized_shape: list, *args: Any) -> Any:
    if input._ragged_idx < input.dim() - len(normalized_shape):
        outs = _aten().native_layer_norm.default(input._values, normalized_shape, *args)
        return tuple(_on_values(input, o) for o in outs)
    return RULES["native_layer_norm"](JAGGED, dense_op("native_layer_norm"), input,
                                      normalized_shape, *args)


_SPECIAL: dict[str, Any] = {
    "linear": _linear,
    "_softmax": _softmax,
    "native_layer_norm": _layer_norm,
    "detach": _values_map(lambda v: _aten().detach.default(v)),
    "clone": _values_map(lambda v, **kw: _aten().clone.default(v, **kw)),
    "alias": _values_map(lambda v: _aten().alias.default(v)),
    "unbind.int": _unbind,
    "transpose.int": _transpose,
    "view": _reshape,
    "_unsafe_view": _reshape,
    "sum": lambda self, dtype=None: _aten().sum.default(self._values, dtype=dtype),
    "_to_copy": _values_map(lambda v, **kw: _aten()._to_copy.default(v, **kw)),
    "ones_like": _values_map(lambda v, **kw: _aten().ones_like.default(v, **kw)),
    "zeros_like": _values_map(lambda v, **kw: _aten().zeros_like.default(v, **kw)),
    "empty_like": _values_map(lambda v, **kw: _aten().empty_like.default(v, **kw)),
}
