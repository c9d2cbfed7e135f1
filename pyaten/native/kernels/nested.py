"""NestedTensorCPU kernels: operators on nested tensors, computed component by component.

Note: one rule per operator family, three users
    A nested operator is its dense operator applied to each component (PyTorch's nested
    kernels are that, fused). Each family below is written once as a *rule* over an abstract
    pair of functions, `parts(x)` (the components of a nested `x`) and `pack(like, parts)`
    (a nested tensor like `like` holding `parts`). Three users supply the pair:
    - the NestedTensorCPU kernels of this module (the strided layout: buffer views in, one
      packed copy out), declared in native_functions.yaml;
    - the jagged layout's `__torch_dispatch__` (pyaten/nested/_jagged.py: narrows of its
      values in, one concatenation out);
    - the AutogradNestedTensor kernels (pyaten/nested/_autograd.py): a differentiable unbind
      in and a differentiable nest out, so the dense operators' own derivatives give the
      gradients, and a nested leaf receives a nested gradient.
    Pointwise operators on a packed strided tensor skip the components and run once on the
    buffer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyaten.core.tensor import Tensor, _wrap_dim
from pyaten.native.kernels.nested_tensor import (
    NestedTensor,
    components,
    from_components,
    make_nested,
)
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native_at

__all__ = ["RULES", "Layout", "STRIDED", "is_nested"]


class Layout:
    """How a rule reads and builds the nested tensors of one layout (or of autograd)."""

    def __init__(self, parts: Callable[[Any], list], pack: Callable[[Any, list], Any]) -> None:
        self.parts = parts
        self.pack = pack


def _strided_pack(like: Any, parts: list) -> NestedTensor:
    if parts:
        return from_components(parts, parts[0]._dtype)
    return from_components(parts, None if like is None else like._dtype)


STRIDED = Layout(components, _strided_pack)


def is_nested(x: object) -> bool:
    return isinstance(x, Tensor) and x.is_nested


def _op_name(op: Callable) -> str:
    # `op` is an OpOverload's bound call: "add" of aten::add.Tensor
    return getattr(getattr(op, "__self__", None), "__name__", "op").split(".")[0]


def _same_structure(op: str, a: Any, b: Any, lo: Layout) -> tuple[list, list]:
    pa, pb = lo.parts(a), lo.parts(b)
    if len(pa) != len(pb) or any(x._sizes != y._sizes for x, y in zip(pa, pb)):
        raise RuntimeError(f"{op} does not support broadcasting when given a NestedTensor")
    return pa, pb


# --- the rules: (layout, the dense op, its arguments) -> result --------------------------------


def unary_rule(lo: Layout, op: Callable, self: Any, *args: Any, **kwargs: Any) -> Any:
    return lo.pack(self, [op(p, *args, **kwargs) for p in lo.parts(self)])


def binary_rule(lo: Layout, op: Callable, self: Any, other: Any, *args: Any,
                **kwargs: Any) -> Any:
    if is_nested(self) and is_nested(other):
        pa, pb = _same_structure(_op_name(op), self, other, lo)
        return lo.pack(self, [op(a, b, *args, **kwargs) for a, b in zip(pa, pb)])
    if is_nested(self):
        if isinstance(other, Tensor) and other.dim() > 0:
            raise RuntimeError(
                "Expected both self and other to be nested, but got a nested self and "
                "non-nested other")
        return lo.pack(self, [op(a, other, *args, **kwargs) for a in lo.parts(self)])
    if isinstance(self, Tensor) and self.dim() > 0:
        raise RuntimeError(
            "Expected both self and other to be nested, but got a non-nested self and "
            "nested other")
    return lo.pack(other, [op(self, b, *args, **kwargs) for b in lo.parts(other)])


def _component_dim(op: str, t: Any, dim: int) -> int:
    d = _wrap_dim(dim, t.dim())
    if d == 0:
        raise RuntimeError(f"{op}: cannot apply it across the nested dimension 0")
    return d - 1


def softmax_rule(lo: Layout, op: Callable, self: Any, dim: int, *args: Any) -> Any:
    d = _wrap_dim(dim, self.dim())
    if d == 0:
        raise RuntimeError("Cannot apply softmax across nested dimension 0")
    return lo.pack(self, [op(p, d - 1, *args) for p in lo.parts(self)])


def softmax_backward_rule(lo: Layout, op: Callable, grad: Any, output: Any, dim: int,
                          dtype: Any) -> Any:
    d = _component_dim("_softmax_backward_data", output, dim)
    pg, po = _same_structure("_softmax_backward_data", grad, output, lo)
    return lo.pack(output, [op(g, o, d, dtype) for g, o in zip(pg, po)])


def transpose_rule(lo: Layout, op: Callable, self: Any, dim0: int, dim1: int) -> Any:
    ndim = self.dim()
    d0, d1 = _wrap_dim(dim0, ndim), _wrap_dim(dim1, ndim)
    if d0 == 0 or d1 == 0:
        raise RuntimeError("Nested tensor dimension 0 cannot be transposed")
    return lo.pack(self, [op(p, d0 - 1, d1 - 1) for p in lo.parts(self)])


def bmm_rule(lo: Layout, op: Callable, self: Any, mat2: Any) -> Any:
    if self.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if not (is_nested(self) and is_nested(mat2)):
        raise RuntimeError("bmm: expected both arguments to be nested tensors")
    pa, pb = lo.parts(self), lo.parts(mat2)
    if len(pa) != len(pb):
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{len(pa)}, "
            f"{pa[0]._sizes[-1] if pa else 0}] but got: [{len(pb)}, "
            f"{pb[0]._sizes[-2] if pb else 0}].")
    for i, (a, b) in enumerate(zip(pa, pb)):
        if a._sizes[1] != b._sizes[0]:
            raise RuntimeError(
                f"{i}-th nested matrices in batch cannot be multiplied ({a._sizes[0]}x"
                f"{a._sizes[1]} and {b._sizes[0]}x{b._sizes[1]})")
    mm = _aten().mm.default
    return lo.pack(self, [mm(a, b) for a, b in zip(pa, pb)])


def matmul_rule(lo: Layout, op: Callable, self: Any, other: Any) -> Any:
    if is_nested(self) and is_nested(other):
        pa, pb = lo.parts(self), lo.parts(other)
        if len(pa) != len(pb):
            raise RuntimeError(
                "matmul: Expected size for first dim of self and other to match, got "
                f"{len(pa)} and {len(pb)}")
        return lo.pack(self, [op(a, b) for a, b in zip(pa, pb)])
    if is_nested(self):
        return lo.pack(self, [op(a, other) for a in lo.parts(self)])
    raise RuntimeError("matmul: a dense self times a nested other is not supported")


def linear_rule(lo: Layout, op: Callable, input: Any, weight: Any, bias: Any = None) -> Any:
    if is_nested(weight) or (bias is not None and is_nested(bias)):
        raise RuntimeError("Linear does not support nested weight or bias")
    if input.dim() != 3 or weight.dim() != 2:
        raise RuntimeError(
            "Linear requires nested_tensor.dim == 3 and dense_matrix.dim == 2. Nested tensor "
            f"dim: {input.dim()}. Dense tensor dim: {weight.dim()}")
    return lo.pack(input, [op(p, weight, bias) for p in lo.parts(input)])


def layer_norm_rule(lo: Layout, op: Callable, input: Any, normalized_shape: list,
                    weight: Any, bias: Any, eps: float) -> Any:
    if len(normalized_shape) >= input.dim():
        raise RuntimeError(
            "NestedTensor layer_norm: normalized_shape must not cover the nested dimension")
    outs = [op(p, normalized_shape, weight, bias, eps) for p in lo.parts(input)]
    return tuple(lo.pack(input, [o[i] for o in outs]) for i in range(3))


def sdpa_rule(lo: Layout, op: Callable, query: Any, key: Any, value: Any,
              attn_mask: Any = None, dropout_p: float = 0.0, is_causal: bool = False,
              scale: float | None = None, enable_gqa: bool = False) -> Any:
    strided = _is_strided(query)
    if attn_mask is not None:  # PyTorch's errors, per layout
        if strided:
            raise RuntimeError(
                "Scaled_dot_product_attention: Nested tensors for query / key are not "
                "supported when an explicit attn_mask is set")
        raise ValueError("Masks are not yet supported!")
    if is_causal:
        if strided:
            raise RuntimeError(
                "_scaled_dot_product_attention: Nested tensors for query / key are not "
                "supported when is_causal=True")
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found.")
    if not (is_nested(query) and is_nested(key) and is_nested(value)):
        raise RuntimeError(
            "scaled_dot_product_attention: expected query, key and value all nested")
    if _is_strided(query) and not (query.is_contiguous() and key.is_contiguous()
                                   and value.is_contiguous()):
        raise RuntimeError("scaled_dot_product_attention: If inputs are nested tensors they "
                           "must be contiguous")
    pq, pk, pv = lo.parts(query), lo.parts(key), lo.parts(value)
    if not len(pq) == len(pk) == len(pv):
        raise RuntimeError(
            "scaled_dot_product_attention: query, key and value hold different numbers of "
            "sequences")
    return lo.pack(query, [
        op(q, k, v, None, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
        for q, k, v in zip(pq, pk, pv)
    ])


def _is_strided(t: Any) -> bool:
    return type(t) is NestedTensor


def unsqueeze_rule(lo: Layout, op: Callable, self: Any, dim: int) -> Any:
    d = _wrap_dim(dim, self.dim() + 1)
    if d == 0:
        raise RuntimeError("unsqueeze(): cannot unsqueeze the nested dimension 0")
    return lo.pack(self, [op(p, d - 1) for p in lo.parts(self)])


def squeeze_rule(lo: Layout, op: Callable, self: Any, dim: int) -> Any:
    d = _wrap_dim(dim, self.dim())
    if d == 0:
        raise RuntimeError("squeeze(): For nested tensors, squeezing dimension 0 is not "
                           "supported at the moment")
    return lo.pack(self, [op(p, d - 1) for p in lo.parts(self)])


def select_rule(lo: Layout, op: Callable, self: Any, dim: int, index: int) -> Any:
    d = _wrap_dim(dim, self.dim())
    parts = lo.parts(self)
    if d == 0:
        n = len(parts)
        if not -n <= index < n:
            raise IndexError(
                f"index {index} is out of bounds for dimension 0 with size {n}")
        return parts[index]
    if getattr(self, "_ragged_idx", None) == d:
        raise RuntimeError("select(): not supported for NestedTensor on ragged dim")
    return lo.pack(self, [op(p, d - 1, index) for p in parts])


def two_output_rule(lo: Layout, op: Callable, self: Any, *args: Any, **kwargs: Any) -> Any:
    outs = [op(p, *args, **kwargs) for p in lo.parts(self)]
    return tuple(lo.pack(self, [o[i] for o in outs]) for i in range(2))


def reduce_rule(lo: Layout, op: Callable, self: Any, dim: Any, keepdim: bool = False,
                dtype: Any = None) -> Any:
    ndim = self.dim()
    dims = [ndim - 1] if dim is None else [_wrap_dim(d, ndim) for d in (
        [dim] if isinstance(dim, int) else dim)]
    if _is_strided(self):
        if dims != [ndim - 1]:
            raise RuntimeError(
                "NestedTensor can only be reduced across the last dimension for now got "
                f"dimension {dims[0]} instead.")
        if not keepdim:
            raise RuntimeError("NestedTensor always requires keepdim=True for now.")
    if 0 in dims:
        raise RuntimeError("reducing across the batch dimension 0 of a nested tensor is not "
                           "supported")
    parts = [op(p, [d - 1 for d in dims], keepdim, dtype=dtype) for p in lo.parts(self)]
    if getattr(self, "_ragged_idx", None) in dims:  # no ragged dim left: a dense result
        return _aten().stack.default(parts, 0)
    return lo.pack(self, parts)


def sum_all_rule(lo: Layout, op: Callable, self: Any, dtype: Any = None) -> Any:
    parts = [op(p, dtype=dtype) for p in lo.parts(self)]
    return _aten().sum.default(_aten().stack.default(parts, 0))


def inplace_rule(lo: Layout, op: Callable, self: Any, other: Any, *args: Any,
                 **kwargs: Any) -> Any:
    parts = lo.parts(self)  # views: writing them writes the nested tensor
    if is_nested(other):
        others = lo.parts(other)
        if [p._sizes for p in parts] != [p._sizes for p in others]:
            raise RuntimeError(
                "in-place op on nested tensors: expected the same nested structure")
    elif isinstance(other, Tensor) and other.dim() > 0:
        raise RuntimeError(
            "Expected both self and other to be nested, but got a nested self and non-nested "
            "other")
    else:
        others = [other] * len(parts)
    for a, b in zip(parts, others):
        op(a, b, *args, **kwargs)
    return self


def view_rule(lo: Layout, op: Callable, self: Any, size: list) -> Any:
    size = list(size)
    parts = lo.parts(self)
    if not size or size[0] not in (len(parts), -1):
        raise RuntimeError(
            f"view: For now nested view cannot change or infer the implicit batch dimension, "
            f"got shape {size} for a nested tensor of {len(parts)} components")
    results = []
    for p in parts:
        target = []
        for i, s in enumerate(size[1:]):
            if int(s) < 0 and i < p.dim():
                s = p._sizes[i]  # -1 (or a ragged size) keeps the component's size there
            target.append(s)
        results.append(op(p, target))
    return lo.pack(self, results)


def inplace_unary_rule(lo: Layout, op: Callable, self: Any, *args: Any) -> Any:
    for p in lo.parts(self):  # views: writing them writes the nested tensor
        op(p, *args)
    return self


def narrow_rule(lo: Layout, op: Callable, self: Any, dim: int, start: int, length: int) -> Any:
    d = _wrap_dim(dim, self.dim())
    parts = lo.parts(self)
    if d == 0:
        if not _is_strided(self):
            raise RuntimeError("narrow(): not supported for NestedTensor on dim=0")
        n = len(parts)
        begin = start + n if start < 0 else start
        if not (0 <= begin <= n and 0 <= length and begin + length <= n):
            raise IndexError(
                f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
        return lo.pack(self, parts[begin:begin + length])
    if _is_strided(self):
        raise RuntimeError(
            f"narrow(): only dim=0 supported for nested tensors, but got: {dim}")
    return lo.pack(self, [op(p, d - 1, start, length) for p in parts])


def embedding_rule(lo: Layout, op: Callable, weight: Any, indices: Any, *args: Any) -> Any:
    if is_nested(weight):
        raise RuntimeError("embedding(): the weight must not be a nested tensor")
    return lo.pack(indices, [op(weight, p, *args) for p in lo.parts(indices)])


def cat_rule(lo: Layout, op: Callable, tensors: list, dim: int = 0) -> Any:
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    first = tensors[0]
    if not all(is_nested(t) for t in tensors):
        raise RuntimeError("Cannot concatenate a nested tensor with a non-nested tensor")
    d = _wrap_dim(dim, first.dim())
    columns = [lo.parts(t) for t in tensors]
    if d == 0:
        if not _is_strided(first):
            raise RuntimeError("cat(): not supported for NestedTensor on dim=0")
        return lo.pack(first, [p for column in columns for p in column])
    if len({len(c) for c in columns}) != 1:
        raise RuntimeError("cat(): expected nested tensors of the same batch size")
    return lo.pack(first, [op(list(row), d - 1) for row in zip(*columns)])


def split_rule(lo: Layout, op: Callable, self: Any, how: Any, dim: int = 0) -> list:
    """chunk, split and split_with_sizes: the components split alike, one nested per piece."""
    name = _op_name(op)
    d = _wrap_dim(dim, self.dim())
    parts = lo.parts(self)
    if _is_strided(self) and d != self.dim() - 1:
        what = "Chunk" if name == "chunk" else name
        raise RuntimeError(
            f"{what} for nested tensors is currently only supported for the last dimension.")
    if d == getattr(self, "_ragged_idx", None):
        raise RuntimeError(f"{name}(): not supported for NestedTensor on ragged dim")
    if d == 0:  # the jagged layout splits its batch
        pieces = op(_aten().arange.default(len(parts)), how, 0)
        return [lo.pack(self, [parts[i] for i in piece.tolist()]) for piece in pieces]
    split = [op(p, how, d - 1) for p in parts]
    return [lo.pack(self, list(piece)) for piece in zip(*split)]


# operator overload -> (rule, the dense op's name). A row per operator of each family.
_UNARY = ("abs", "neg", "sin", "cos", "tanh", "sqrt", "relu", "gelu", "silu", "sgn",
          "logical_not", "isnan", "isinf", "isposinf", "isneginf", "sigmoid", "exp")
_BINARY = ("add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor", "mul.Scalar",
           "div.Scalar", "eq.Tensor", "eq.Scalar", "gt.Scalar", "ge.Scalar",
           "threshold_backward", "gelu_backward", "silu_backward")

# Rows PyTorch's strided layout has no kernel for: only the jagged layout serves them.
JAGGED_ONLY = frozenset({"exp", "sigmoid", "mean.dim", "sum", "split.Tensor"})

RULES: dict[str, Callable] = {}
for _name in _UNARY:
    RULES[_name] = unary_rule
for _name in _BINARY:
    RULES[_name] = binary_rule
RULES.update({
    "_softmax": softmax_rule,
    "_softmax_backward_data": softmax_backward_rule,
    "transpose.int": transpose_rule,
    "bmm": bmm_rule,
    "matmul": matmul_rule,
    "linear": linear_rule,
    "native_layer_norm": layer_norm_rule,
    "scaled_dot_product_attention": sdpa_rule,
    "clone": unary_rule,
    "_to_copy": unary_rule,
    "unsqueeze": unsqueeze_rule,
    "squeeze.dim": squeeze_rule,
    "select.int": select_rule,
    "masked_fill.Scalar": binary_rule,
    "native_dropout": two_output_rule,
    "sum.dim_IntList": reduce_rule,
    "mean.dim": reduce_rule,
    "sum": sum_all_rule,
    "add_.Tensor": inplace_rule,
    "mul_.Tensor": inplace_rule,
    "mul_.Scalar": inplace_rule,
    "view": view_rule,
    "fill_.Scalar": inplace_unary_rule,
    "zero_": inplace_unary_rule,
    "copy_": inplace_rule,
    "narrow": narrow_rule,
    "embedding": embedding_rule,
    "cat": cat_rule,
    "chunk": split_rule,
    "split_with_sizes": split_rule,
    "split.Tensor": split_rule,
    "ones_like": unary_rule,
    "zeros_like": unary_rule,
    "empty_like": unary_rule,
})


def dense_op(overload: str) -> Callable:
    """The op handle of `overload` ("add.Tensor", "sin" meaning its default overload)."""
    name, _, over = overload.partition(".")
    return getattr(getattr(_aten(), name), over or "default")


# --- the strided layout's kernels (NestedTensorCPU) --------------------------------------------


def _packed(t: NestedTensor) -> NestedTensor:
    return t if t.is_contiguous() else from_components(components(t), t._dtype)


def _on_buffer(t: NestedTensor, out: Tensor) -> NestedTensor:
    return make_nested(out, t._nt_sizes)


def _rows(t: Any, k: int) -> Tensor | None:
    """The packed buffer of `t` viewed as rows of its last `k` dims, when they are regular
    (one dense call then serves every component), else None."""
    if type(t) is not NestedTensor or t.dim() <= k or not t.is_contiguous():
        return None
    trailing = list(t._sizes[-k:])
    if any(s < 0 for s in trailing):
        return None
    return _aten().view.default(t._nt_buffer, [-1, *trailing])


def _with_trailing(t: NestedTensor, out: Tensor, k: int) -> NestedTensor:
    trailing = tuple(out._sizes[1:])
    flat = _aten().reshape.default(out, [-1])
    return make_nested(flat, tuple(s[: len(s) - k] + trailing for s in t._nt_sizes))


def _row_kernel(overload: str, args: tuple, kwargs: dict) -> Any:
    # The row-wise fast paths of the strided layout: linear, softmax and layer_norm over
    # regular trailing dims run once on the buffer (the rule gives the same values).
    if kwargs:
        return None
    if overload == "linear" and args[0].dim() == 3 and args[1].dim() == 2:
        rows = _rows(args[0], 1)
        if rows is not None and not is_nested(args[1]):
            out = _aten().linear.default(rows, args[1], *args[2:])
            return _with_trailing(args[0], out, 1)
    if overload == "_softmax":
        t, dim = args[0], args[1]
        if t.dim() > 1 and _wrap_dim(dim, t.dim()) == t.dim() - 1:
            rows = _rows(t, 1)
            if rows is not None:
                return _with_trailing(t, _aten()._softmax.default(rows, 1, args[2]), 1)
    if overload == "native_layer_norm":
        t, k = args[0], len(args[1])
        rows = _rows(t, k) if 0 < k < t.dim() and list(t._sizes[-k:]) == list(args[1]) else None
        if rows is not None:
            out, mean, rstd = _aten().native_layer_norm.default(rows, *args[1:])
            return (_with_trailing(t, out, k), _with_trailing(t, mean, k),
                    _with_trailing(t, rstd, k))
    return None


def _strided_kernel(overload: str, rule: Callable) -> Callable:
    rows_first = overload in ("linear", "_softmax", "native_layer_norm")

    def kernel(*args: Any, **kwargs: Any) -> Any:  # noqa: C901 - the fast paths, then the rule
        op = dense_op(overload)
        if rows_first:
            done = _row_kernel(overload, args, kwargs)
            if done is not None:
                return done
        if rule is unary_rule and type(args[0]) is NestedTensor:
            t = _packed(args[0])
            return _on_buffer(t, op(t._nt_buffer, *args[1:], **kwargs))
        if rule is binary_rule and len(args) >= 2:
            a, b = args[0], args[1]
            if type(a) is NestedTensor and type(b) is NestedTensor and a._nt_sizes == b._nt_sizes:
                a, b = _packed(a), _packed(b)
                return _on_buffer(a, op(a._nt_buffer, b._nt_buffer, *args[2:], **kwargs))
        return rule(STRIDED, op, *args, **kwargs)

    kernel.__name__ = kernel.__qualname__ = _kernel_name(overload)
    return kernel


def _kernel_name(overload: str) -> str:
    return "nested_" + overload.replace(".", "_")


for _overload, _rule in RULES.items():
    native_at(_kernel_name(_overload), _strided_kernel(_overload, _rule), __file__)


def _transpose_view(self: NestedTensor, dim0: int, dim1: int) -> NestedTensor:
    ndim = self.dim()
    d0, d1 = _wrap_dim(dim0, ndim), _wrap_dim(dim1, ndim)
    if d0 == 0 or d1 == 0:
        raise RuntimeError("Nested tensor dimension 0 cannot be transposed")
    a, b = d0 - 1, d1 - 1

    def swap(row: tuple) -> tuple:
        row = list(row)
        row[a], row[b] = row[b], row[a]
        return tuple(row)

    view = make_nested(self._nt_buffer, tuple(map(swap, self._nt_sizes)),
                       tuple(map(swap, self._nt_strides)), self._nt_offsets)
    view._base = self
    return view


native_at("nested_transpose_int_view", _transpose_view, __file__)


def _unbind(self: NestedTensor, dim: int = 0) -> list:
    if _wrap_dim(dim, self.dim()) != 0:
        raise RuntimeError(
            f"NestedTensor can only be unbound along dimension 0 got dimension {dim} instead.")
    return components(self)


native_at("nested_unbind_int", _unbind, __file__)


def _detach(self: NestedTensor) -> NestedTensor:
    return make_nested(self._nt_buffer, self._nt_sizes, self._nt_strides, self._nt_offsets)


native_at("nested_detach", _detach, __file__)


def _values(self: NestedTensor) -> Tensor:
    # PyTorch's NestedTensorCPU `values`: the whole 1-D buffer, a view sharing its memory
    buffer = self._nt_buffer
    return Tensor._make_view(buffer, tuple(buffer._sizes), tuple(buffer._strides),
                             buffer._offset)


native_at("values_nested", _values, __file__)


def _reshape(self: Any, shape: list) -> Any:
    # CompositeImplicitAutogradNestedTensor: a view of a packed copy where one is needed
    packed = self if self.is_contiguous() else _aten().clone.default(self)
    return _aten().view.default(packed, list(shape))


native_at("nested_reshape", _reshape, __file__)


def _dropout(input: Any, p: float, train: bool) -> Any:
    # CompositeImplicitAutogradNestedTensor, as PyTorch's: native_dropout's output (a copy
    # even when not training)
    return _aten().native_dropout.default(input, p, train)[0]


native_at("nested_dropout", _dropout, __file__)
