"""`MaskedTensor`: PyTorch's prototype masked tensor (torch.masked.MaskedTensor), a wrapper
subclass holding a data tensor and a bool mask of the same shape.

Its `__torch_dispatch__` answers the operators PyTorch's prototype answers, by family:
pointwise unary operators apply to the data and keep the mask; binary ones need equal masks
(or one plain operand); views and joins (`select`, `t`, `view`, `cat`, ...) apply to data and
mask alike; reductions run `pyaten.masked`'s functions on the data with the mask, and the
result is masked out where every reduced element was. Any other operator warns and raises
PyTorch's TypeError. Only strided tensors.

Gradients follow PyTorch's prototype: reductions are caught at `__torch_function__` (before
autograd) and computed as `as_masked_tensor(masked_fn(get_data(), mask=...), any(mask))`, where
`get_data` and `as_masked_tensor` are autograd Functions; `get_data`'s backward gives the
gradient its input's mask, so every gradient reaching a MaskedTensor carries that tensor's
mask. Every other function runs below with subclass handling off and its results unconverted.

Imported on first use of `pyaten.masked.MaskedTensor` (`masked_tensor`, `as_masked_tensor`,
`is_masked_tensor`), so a program that never builds one pays nothing for it.
"""

from __future__ import annotations

import warnings
from typing import Any

import pyaten
from pyaten._C import DisableTorchFunctionSubclass
from pyaten.core.tensor import Tensor
from pyaten.masked import _ops

__all__ = ["MaskedTensor", "as_masked_tensor", "is_masked_tensor", "masked_tensor"]

_DTYPES = ("float16", "float32", "float64", "bool", "int8", "int16", "int32", "int64")


def _prototype_warning() -> None:
    warnings.warn(
        "The PyTorch API of MaskedTensors is in prototype stage and will change in the near "
        "future. Please open a Github issue for features requests and see our documentation "
        "on the torch.masked module for further information about the project.",
        UserWarning, stacklevel=3)


def is_masked_tensor(obj: Any, /) -> bool:
    """True if `obj` is a MaskedTensor."""
    return isinstance(obj, MaskedTensor)


def _dtype_name(dtype: Any) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _format_rows(data: Tensor, mask: Tensor, formatter: str) -> str:
    """PyTorch's MaskedTensor layout: nested brackets, masked-out elements as `--`."""
    if data.dim() == 1:
        items = [formatter.format(v) if isinstance(v, float) else str(v) for v in data.tolist()]
        hidden = [not m for m in mask.tolist()]
        width = max((8 if h else len(e)) for e, h in zip(items, hidden)) if items else 0
        return "[" + ", ".join("--".rjust(width) if h else e for e, h in zip(items, hidden)) + "]"
    parts = [_format_rows(d, m, formatter) for d, m in zip(data, mask)]
    parts = ["\n".join("  " + line for line in p.split("\n")) for p in parts]
    return "[\n" + ",\n".join(parts) + "\n]"


class MaskedTensor(Tensor):
    """A tensor whose elements are valid only where `mask` is True."""

    @staticmethod
    def __new__(cls, data: Tensor, mask: Tensor, requires_grad: bool = False) -> MaskedTensor:
        if is_masked_tensor(data) or not isinstance(data, Tensor):
            raise TypeError("data must be a Tensor")
        if is_masked_tensor(mask) or not isinstance(mask, Tensor):
            raise TypeError("mask must be a Tensor")
        _prototype_warning()
        if data.requires_grad:
            warnings.warn(
                "It is not recommended to create a MaskedTensor with a tensor that "
                "requires_grad. To avoid this, you can use data.detach().clone()",
                UserWarning, stacklevel=2)
        return Tensor._make_wrapper_subclass(cls, data.size(), dtype=data.dtype,
                                             device=data.device, layout=data.layout,
                                             requires_grad=requires_grad)

    def __init__(self, data: Tensor, mask: Tensor, requires_grad: bool = False) -> None:
        if data.layout != mask.layout:
            raise TypeError("data and mask must have the same layout.")
        self._masked_data = data.clone()
        self._masked_mask = mask.clone()
        self._validate_members()

    def _validate_members(self) -> None:
        data, mask = self._masked_data, self._masked_mask
        if data.layout != pyaten.strided:
            raise TypeError(f"data layout of {data.layout} is not supported.")
        if mask.dtype != pyaten.bool:
            raise TypeError("mask must have dtype bool.")
        if _dtype_name(data.dtype) not in _DTYPES:
            raise TypeError(f"{data.dtype} is not supported in MaskedTensor.")
        if data.dim() != mask.dim():
            raise ValueError("data.dim() must equal mask.dim()")
        if tuple(data.size()) != tuple(mask.size()):
            raise ValueError("data.size() must equal mask.size()")

    def _set_data_mask(self, data: Tensor, mask: Tensor) -> None:
        self._masked_data = data
        self._masked_mask = mask
        self._validate_members()

    def get_data(self) -> Tensor:
        """The data, masked-out elements included; a gradient flowing back into it returns to
        this tensor as a MaskedTensor with this tensor's mask."""
        return _GetData.apply(self)

    def get_mask(self) -> Tensor:
        return self._masked_mask

    def to_tensor(self, value: Any) -> Tensor:
        """The data with masked-out elements set to `value`."""
        return self.get_data().masked_fill(~self.get_mask(), value)

    def is_sparse_coo(self) -> bool:
        return False

    def is_sparse_csr(self) -> bool:
        return False

    def __repr__(self) -> str:  # noqa: D105
        formatter = "{0:8.4f}"
        if self.dim() == 0:
            value = self.get_data().item()
            text = formatter.format(value) if isinstance(value, float) else str(value)
            shown = bool(self.get_mask().item())
            return f"MaskedTensor({text if shown else '--'}, {shown})"
        body = _format_rows(self.get_data(), self.get_mask(), formatter)
        body = "\n".join("  " + line for line in body.split("\n"))
        return "MaskedTensor(\n" + body + "\n)"

    __str__ = __repr__

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206
        name = getattr(func, "__name__", None)
        if name in _REDUCE_NAMES and func in _reduction_functions():
            return _differentiable_reduction(name, *args, **(kwargs or {}))
        with DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206
        handler = _DISPATCH.get(func.overloadpacket.__name__)
        if handler is not None:
            return handler(func, args, kwargs or {})
        warnings.warn(
            f"{func.overloadpacket.__name__} is not implemented in __torch_dispatch__ for "
            "MaskedTensor.\nIf you would like this operator to be supported, please file an "
            "issue for a feature request at https://github.com/pytorch/maskedtensor/issues with "
            "a minimal reproducible code snippet.\nIn the case that the semantics for the "
            "operator are not trivial, it would be appreciated to also include a proposal for "
            "the semantics.", stacklevel=2)
        return NotImplemented


def masked_tensor(data: Tensor, mask: Tensor, requires_grad: bool = False) -> MaskedTensor:
    return MaskedTensor(data, mask, requires_grad)


def as_masked_tensor(data: Tensor, mask: Tensor) -> MaskedTensor:
    """A MaskedTensor that passes gradients back to `data` (PyTorch's differentiable
    constructor)."""
    _prototype_warning()
    return _Constructor.apply(data, mask)


class _GetData(pyaten.autograd.Function):
    @staticmethod
    def forward(ctx, self: MaskedTensor) -> Tensor:  # noqa: ANN001
        ctx.mask = self._masked_mask
        return self._masked_data.detach()

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:  # noqa: ANN001
        data = grad._masked_data if is_masked_tensor(grad) else grad
        return _quiet_wrap(data, ctx.mask)


class _Constructor(pyaten.autograd.Function):
    @staticmethod
    def forward(ctx, data: Tensor, mask: Tensor) -> MaskedTensor:  # noqa: ANN001
        return _quiet_wrap(data, mask)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:  # noqa: ANN001
        return grad, None


# --- the operator families ---------------------------------------------------------------------


def _map(value: Any, part) -> Any:
    """`value` with each MaskedTensor replaced by `part(it)`, through lists and tuples."""
    if is_masked_tensor(value):
        return part(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, part) for v in value)
    return value


def _data(t: MaskedTensor) -> Tensor:
    return t._masked_data


def _mask(t: MaskedTensor) -> Tensor:
    return t._masked_mask


def _wrap(data: Any, mask: Any) -> Any:
    if isinstance(data, (list, tuple)):
        return type(data)(_wrap(d, m) for d, m in zip(data, mask))
    return MaskedTensor(data, mask) if isinstance(data, Tensor) else data


def _quiet_wrap(data: Any, mask: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return _wrap(data, mask)


def _unary(func, args: tuple, kwargs: dict) -> Any:
    if kwargs:
        raise ValueError("MaskedTensor unary ops require that len(kwargs) == 0. If you need "
                         "support for this, please open an issue on Github.")
    if any(isinstance(a, Tensor) for a in args[1:]):
        raise TypeError("MaskedTensor unary ops do not support additional Tensor arguments")
    result = func(*_map(args, _data))
    if func.overloadpacket.__name__.endswith("_"):
        args[0]._set_data_mask(result, _mask(args[0]))
        return args[0]
    return _quiet_wrap(result, _mask(args[0]))


def _binary(func, args: tuple, kwargs: dict) -> Any:
    if kwargs:
        raise ValueError("len(kwargs) must equal 0")
    if any(isinstance(a, Tensor) for a in args[2:]):
        raise TypeError("MaskedTensor binary ops do not support Tensor arguments aside from "
                        "the lhs and rhs")
    left, right = args[0], args[1]
    if is_masked_tensor(left) and is_masked_tensor(right):
        a, b = _mask(left), _mask(right)
        if a.dim() != b.dim() or not bool(pyaten.eq(a, b).all()):
            raise ValueError("Input masks must match. If you need support for this, please "
                             "open an issue on Github.")
    result = func(*_map(args, _data))
    if func.overloadpacket.__name__.endswith("_"):
        left._set_data_mask(result, _mask(left))
        return left
    mask = _mask(left) if is_masked_tensor(left) else _mask(right)
    return _quiet_wrap(result, mask.expand_as(result))


def _passthrough(func, args: tuple, kwargs: dict) -> Any:
    data = func(*_map(args, _data), **_map(kwargs, _data))
    mask = func(*_map(args, _mask), **_map(kwargs, _mask))
    return _quiet_wrap(data, mask)


def _on_data(func, args: tuple, kwargs: dict) -> Any:
    return _quiet_wrap(func(_data(args[0]), *args[1:], **kwargs), _mask(args[0]))


def _to_copy(func, args: tuple, kwargs: dict) -> Any:
    data = func(_data(args[0]), *args[1:], **kwargs)
    mask = _mask(args[0]).to(device=data.device)
    return _quiet_wrap(data, mask)


def _softmax(func, args: tuple, kwargs: dict) -> Any:
    self, dim = args[0], args[1]
    result = _ops.softmax(_data(self), dim, mask=_mask(self))
    return _quiet_wrap(result, _mask(self))


def _softmax_backward(func, args: tuple, kwargs: dict) -> Any:
    """The gradient of a masked softmax: masked-out elements neither take part nor receive
    any (PyTorch's `_masked_softmax_backward`)."""
    grad, output, dim = args[0], args[1], args[2]
    if not (is_masked_tensor(grad) and is_masked_tensor(output)):
        return NotImplemented
    mask = _mask(grad)
    if not bool(pyaten.eq(mask, _mask(output)).all()):
        raise ValueError("__torch_dispatch__, _softmax_backward_data: expected the masks of "
                         "grad and output to match")
    g = _data(grad).masked_fill(~mask, 0)
    out = _data(output).masked_fill(~mask, 0)
    result = out * (g - (g * out).sum(dim, keepdim=True))
    return _quiet_wrap(result.masked_fill(~mask, 0), mask)


def _where(func, args: tuple, kwargs: dict) -> Any:
    """where(condition, x, y): a plain x or y counts as fully masked in."""
    condition, x, y = args[0], args[1], args[2]

    def full(t: Any) -> Any:
        if is_masked_tensor(t) or not isinstance(t, Tensor):
            return t
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return MaskedTensor(t, pyaten.ones_like(t, dtype=pyaten.bool))

    x, y = full(x), full(y)
    data = func(condition, _map(x, _data), _map(y, _data))
    mask = func(condition, _map(x, _mask), _map(y, _mask))
    return _quiet_wrap(data, mask)


def _local_scalar_dense(func, args: tuple, kwargs: dict) -> Any:
    return func(_data(args[0]))


def _any_over(mask: Tensor, dim: Any, keepdim: bool) -> Tensor:
    dims = [dim] if isinstance(dim, int) else list(dim)
    for d in sorted(dims, reverse=True):
        mask = pyaten.any(mask, dim=d, keepdim=keepdim)
    return mask


_REDUCE_NAMES = ("sum", "mean", "amin", "amax", "argmin", "argmax", "prod", "all", "norm",
                 "var", "std")


def _masked_all(data: Tensor, dim: Any = None, keepdim: bool = False,
                mask: Tensor | None = None) -> Tensor:
    filled = data if mask is None else data.masked_fill(~mask, True)
    return filled.all() if dim is None else pyaten.all(filled, dim=dim, keepdim=keepdim)


def _reduction(func, args: tuple, kwargs: dict) -> Any:
    name = func.overloadpacket.__name__
    self = args[0]
    data, mask = _data(self), _mask(self)
    rest = list(args[1:])
    if name in ("var", "std"):
        # aten.var.correction(self, dim=None, *, correction, keepdim)
        dim = rest[0] if rest else kwargs.get("dim")
        keepdim = bool(kwargs.get("keepdim", False))
        correction = kwargs.get("correction")
        fn = _ops.var if name == "var" else _ops.std
        result = fn(data, dim, correction=correction, keepdim=keepdim, mask=mask)
        whole = dim is None
    elif name == "norm":
        order = rest[0] if rest else kwargs.get("p", 2.0)
        dim = rest[1] if len(rest) > 1 else kwargs.get("dim")
        keepdim = bool(rest[2] if len(rest) > 2 else kwargs.get("keepdim", False))
        result = _ops.norm(data, 2.0 if order is None else order, dim, keepdim=keepdim,
                           mask=mask)
        whole = dim is None
    else:
        whole = not rest and "dim" not in kwargs
        dim = None if whole else (rest[0] if rest else kwargs["dim"])
        keepdim = bool(rest[1] if len(rest) > 1 else kwargs.get("keepdim", False))
        dtype = kwargs.get("dtype")
        if name == "all":
            result = _masked_all(data, None if whole else dim, keepdim, mask=mask)
        elif whole:
            result = getattr(_ops, name)(data, mask=mask)
        else:
            result = getattr(_ops, name)(data, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    out_mask = pyaten.any(mask) if whole or dim is None else _any_over(mask, dim, keepdim)
    return _quiet_wrap(result, out_mask)


_UNARY = ("abs absolute acos arccos acosh arccosh angle asin arcsin asinh arcsinh atan arctan "
          "atanh arctanh bitwise_not ceil clamp clip conj_physical cos cosh deg2rad digamma erf "
          "erfc erfinv exp exp2 expm1 fix floor frac lgamma log log10 log1p log2 logit i0 isnan "
          "nan_to_num neg negative positive pow rad2deg reciprocal round rsqrt sigmoid sign sgn "
          "signbit sin sinc sinh sqrt square tan tanh trunc").split()
_BINARY = ("add atan2 arctan2 bitwise_and bitwise_or bitwise_xor bitwise_left_shift "
           "bitwise_right_shift div divide floor_divide fmod logaddexp logaddexp2 mul multiply "
           "nextafter remainder sub subtract true_divide eq ne le ge greater greater_equal gt "
           "less_equal lt less maximum minimum fmax fmin not_equal").split()
_PASSTHROUGH = ("select transpose split t slice slice_backward select_backward index expand "
                "view _unsafe_view _reshape_alias cat unsqueeze unfold unfold_backward im2col "
                "col2im stack").split()

_FUNCTIONS: set = set()


def _reduction_functions() -> set:
    """pyaten.sum, Tensor.sum, ... for each reduction name (PyTorch's TORCH_/TENSOR_REDUCE)."""
    if not _FUNCTIONS:
        for name in _REDUCE_NAMES:
            for owner in (pyaten, Tensor):
                fn = getattr(owner, name, None)
                if fn is not None:
                    _FUNCTIONS.add(fn)
    return _FUNCTIONS


def _differentiable_reduction(name: str, self: Any, *args: Any, **kwargs: Any) -> Any:
    """A reduction of a MaskedTensor that autograd follows: the data (through `get_data`),
    `pyaten.masked`'s function with the mask, the result wrapped by `as_masked_tensor`."""
    if not is_masked_tensor(self):
        raise TypeError("Input to reduce_dim must be a MaskedTensor")
    data, mask = self.get_data(), self.get_mask()
    if not args and not kwargs:
        result = (_masked_all(data, mask=mask) if name == "all"
                  else getattr(_ops, name)(data, mask=mask))
        return _Constructor.apply(result, pyaten.any(mask))
    dim = args[0] if args else kwargs.get("dim")
    keepdim = bool(args[1] if len(args) > 1 else kwargs.get("keepdim", False))
    dtype = args[2] if len(args) > 2 else kwargs.get("dtype")
    if name == "all":
        result = _masked_all(data, dim, keepdim, mask=mask)
    else:
        result = getattr(_ops, name)(data, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return _Constructor.apply(result, _any_over(mask, dim, keepdim))


_DISPATCH: dict[str, Any] = {}
for _name in _UNARY:
    _DISPATCH[_name] = _unary
    if _name not in ("angle", "positive", "signbit", "isnan"):
        _DISPATCH[_name + "_"] = _unary
for _name in _BINARY:
    _DISPATCH[_name] = _binary
    if _name not in ("logaddexp", "logaddexp2", "fmin", "minimum", "maximum", "fmax"):
        _DISPATCH[_name + "_"] = _binary
for _name in _PASSTHROUGH:
    _DISPATCH[_name] = _passthrough
for _name in _REDUCE_NAMES:
    _DISPATCH[_name] = _reduction
_DISPATCH.update({
    "detach": _on_data, "clone": _on_data, "ones_like": _on_data, "zeros_like": _on_data,
    "_to_copy": _to_copy, "_softmax": _softmax, "_softmax_backward_data": _softmax_backward,
    "where": _where, "_local_scalar_dense": _local_scalar_dense,
})
