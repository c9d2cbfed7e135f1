"""`MaskedTensor`: PyTorch's prototype masked tensor (torch.masked.MaskedTensor), a wrapper
subclass holding a data tensor and a bool mask of the same shape.

Its `__torch_dispatch__` answers the operators PyTorch's prototype answers, by family:
pointwise unary operators apply to the data and keep the mask; binary ones need equal masks
(or one plain operand); views and joins (`select`, `t`, `view`, `cat`, ...) apply to data and
mask alike; reductions run `pyaten.masked`'s functions on the data with the mask, and the
result is masked out where every reduced element was. Any other operator warns and raises
PyTorch's TypeError. Only strided tensors; no autograd through a MaskedTensor yet
(`requires_grad=True` raises NotImplementedError).

Imported on first use of `pyaten.masked.MaskedTensor` (`masked_tensor`, `as_masked_tensor`,
`is_masked_tensor`), so a program that never builds one pays nothing for it.
"""

from __future__ import annotations

import warnings
from typing import Any

import pyaten
from pyaten.core.tensor import Tensor
from pyaten.masked import _ops

__all__ = ["MaskedTensor", "as_masked_tensor", "is_masked_tensor", "masked_tensor"]

_DTYPES = ("float16", "float32", "float64", "bool", "int8", "int16", "int32", "int64")


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
        warnings.warn(
            "The PyTorch API of MaskedTensors is in prototype stage and will change in the near "
            "future. Please open a Github issue for features requests and see our documentation "
            "on the torch.masked module for further information about the project.",
            UserWarning, stacklevel=2)
        if requires_grad:
            # PyTorch routes a MaskedTensor's gradients through autograd Functions that keep
            # the input's mask; without them the masks of gradients would be wrong, so refuse
            raise NotImplementedError(
                "pyaten.masked.MaskedTensor does not support requires_grad=True yet")
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
        """The data, masked-out elements included (a tensor detached from this one)."""
        return self._masked_data.detach()

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
    return MaskedTensor(data, mask)


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
_DISPATCH.update({"detach": _on_data, "clone": _on_data, "ones_like": _on_data,
                  "_to_copy": _to_copy,
                  "_softmax": _softmax, "_local_scalar_dense": _local_scalar_dense})
