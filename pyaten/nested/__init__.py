"""`pyaten.nested`: tensors of sequences of different lengths, at PyTorch's path.

Two layouts, as PyTorch's: `pyaten.strided` (a buffer and per-component sizes, on the
NestedTensorCPU dispatch key; pyaten/native/kernels/nested_tensor.py) and `pyaten.jagged`
(values and offsets in a Python subclass; pyaten/nested/_jagged.py). Operators run their
dense kernel per component (Note: one rule per operator family, three users, in
pyaten/native/kernels/nested.py); autograd goes by components too (pyaten/nested/_autograd.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyaten.autograd.function import Function
from pyaten.core.size import _Token, strided
from pyaten.core.tensor import Tensor
from pyaten.native.kernels.nested import STRIDED, is_nested
from pyaten.native.kernels.nested_tensor import NestedTensor as _StridedNested
from pyaten.native.kernels.nested_tensor import from_components
from pyaten.nested import _jagged
from pyaten.nested._autograd import layout_of, nest

__all__ = [
    "jagged",
    "nested_tensor",
    "as_nested_tensor",
    "nested_tensor_from_jagged",
    "to_padded_tensor",
]

jagged = _Token("jagged")


def _as_tensors(tensor_list: Any, dtype: Any, device: Any, fn: str) -> list[Tensor]:
    import pyaten

    if isinstance(tensor_list, Tensor):
        if is_nested(tensor_list):
            raise RuntimeError(f"{fn}(): a nested tensor is not a valid input")
        return list(tensor_list.unbind(0))
    if not isinstance(tensor_list, (list, tuple)):
        raise TypeError(
            f"{fn}(): expected a list of tensors or a tensor, got {type(tensor_list).__name__}")
    parts = []
    for t in tensor_list:
        if not isinstance(t, Tensor):
            t = pyaten.tensor(t, dtype=dtype)
        parts.append(t)
    for i, t in enumerate(parts):
        if t.dim() != parts[0].dim():
            raise RuntimeError(
                f"All Tensors given to nested_tensor must have the same dimension. Found "
                f"dimension {t.dim()} for Tensor at index {i} and dimension {parts[0].dim()} "
                "for Tensor at index 0.")
    converted = []
    for t in parts:
        if dtype is not None or device is not None:
            t = t.to(device=device, dtype=dtype)
        converted.append(t)
    return converted


def _check_layout(layout: Any, fn: str) -> Any:
    if layout is None:
        return strided
    if layout is not strided and layout is not jagged:
        raise RuntimeError(f"Specified layout is unsupported for nested tensors: {layout}")
    return layout


def _jagged_check(parts: list[Tensor]) -> None:
    if parts and parts[0].dim() == 0:
        raise RuntimeError("Cannot construct a nested tensor from a list of zero-dim tensors")
    for t in parts[1:]:
        if t._sizes[1:] != parts[0]._sizes[1:]:
            raise RuntimeError(
                "Cannot represent given tensor list as a nested tensor with the jagged layout. "
                "Note that the jagged layout only allows for a single ragged dimension. For "
                "example: (B, *, D_0, D_1, ..., D_N), with ragged * dim.")


def nested_tensor(tensor_list: Any, *, dtype: Any = None, layout: Any = None,
                  device: Any = None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:
    """A new nested tensor (a leaf, copying the data) of the tensors (or nested lists) given."""
    import pyaten

    layout = _check_layout(layout, "nested_tensor")
    with pyaten.no_grad():
        parts = [t.detach() for t in _as_tensors(tensor_list, dtype, device, "nested_tensor")]
        if layout is strided:
            result = from_components(parts, dtype)
        else:
            _jagged_check(parts)
            result = _jagged.jagged_from_parts([p.clone() for p in parts], 1) if parts else (
                _jagged.NestedTensor(pyaten.zeros(0), pyaten.zeros(1, dtype=pyaten.int64)))
    if requires_grad:
        if not (result.dtype.is_floating_point or result.dtype.is_complex):
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients")
        result.requires_grad_(True)
    return result


def as_nested_tensor(ts: Any, dtype: Any = None, device: Any = None,
                     layout: Any = None) -> Tensor:
    """A nested tensor of `ts` that keeps their autograd history (a nested `ts` of the same
    layout, dtype and device is returned as it is)."""
    layout = _check_layout(layout, "as_nested_tensor")
    if isinstance(ts, Tensor) and is_nested(ts):
        if (ts.layout is layout) and dtype in (None, ts.dtype):
            return ts
        ts = list(ts.unbind())
    parts = _as_tensors(ts, dtype, device, "as_nested_tensor")
    if layout is strided:
        return nest(None, STRIDED, parts)
    _jagged_check(parts)
    return nest(None, _jagged.JAGGED_NEW, parts)


def nested_tensor_from_jagged(values: Tensor, offsets: Tensor | None = None,
                              lengths: Tensor | None = None, jagged_dim: int | None = None,
                              min_seqlen: int | None = None,
                              max_seqlen: int | None = None) -> Tensor:
    """A jagged nested tensor that views `values` split at `offsets` (B + 1 starts)."""
    if offsets is None:
        if lengths is None:
            raise RuntimeError(
                "nested_tensor_from_jagged(): At least one of offsets or lengths is required.")
        import pyaten

        offsets = pyaten.cat([lengths.new_zeros(1), lengths.cumsum(0)])
    if lengths is not None:
        raise RuntimeError(
            "nested_tensor_from_jagged(): lengths with offsets (holes) are not supported")
    ragged_idx = 1 if jagged_dim is None else jagged_dim
    return _jagged.from_values(values, offsets, ragged_idx)


def to_padded_tensor(input: Tensor, padding: float,
                     output_size: Sequence[int] | None = None) -> Tensor:
    """A dense tensor of the components of `input`, each padded with `padding` to the largest
    size of each dim (or to `output_size`)."""
    import pyaten

    if not is_nested(input):
        raise RuntimeError("to_padded_tensor(): expected a nested tensor as input")
    if pyaten.is_grad_enabled() and input.requires_grad:
        return _ToPaddedTensor.apply(input, padding, output_size)
    return _padded(layout_of(input).parts(input), input, padding, output_size)


def _padded(parts: list, input: Tensor, padding: float,
            output_size: Sequence[int] | None) -> Tensor:
    import pyaten

    ndim = input.dim() - 1
    if not parts:
        return pyaten.zeros((0,) * (ndim + 1), dtype=input.dtype)
    if all(p.numel() == 0 for p in parts):
        raise RuntimeError(
            "to_padded_tensor: at least one constituent tensor should have non-zero numel")
    target = [max(p._sizes[d] for p in parts) for d in range(ndim)]
    batch = len(parts)
    if output_size is not None:
        output_size = list(output_size)
        if len(output_size) != ndim + 1:
            raise RuntimeError(
                "Length of output_size does not match NestedTensor dims. Broadcasting is not "
                "supported.")
        for d in range(ndim):
            if output_size[d + 1] < target[d]:
                raise RuntimeError(
                    "Value in output_size is less than NestedTensor padded size. Truncation "
                    "is not supported.")
        target, batch = output_size[1:], max(batch, output_size[0])
    out = pyaten.full([batch, *target], padding, dtype=input.dtype)
    for i, p in enumerate(parts):
        out[(i, *(slice(0, s) for s in p._sizes))] = p
    return out


class _ToPaddedTensor(Function):
    @staticmethod
    def forward(ctx: Any, input: Tensor, padding: float, output_size: Any) -> Tensor:
        lo = layout_of(input)
        parts = lo.parts(input)
        ctx.like, ctx.layout = input.detach(), lo
        ctx.shapes = [p._sizes for p in parts]
        return _padded(parts, input, padding, output_size)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        parts = [grad[(i, *(slice(0, s) for s in shape))] for i, shape in enumerate(ctx.shapes)]
        return ctx.layout.pack(ctx.like, parts), None, None


_ToPaddedTensor._backward_cls.__name__ = "ToPaddedTensorBackward0"


def _attach() -> None:
    Tensor.to_padded_tensor = lambda self, padding, output_size=None: to_padded_tensor(
        self, padding, output_size)


_attach()
_StridedNested.layout = property(lambda self: strided)
