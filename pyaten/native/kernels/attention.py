"""Distances and attention, composed from other operators as PyTorch composes them in C++:
`cosine_similarity`, `pairwise_distance`, `scaled_dot_product_attention` and its math
backend `_scaled_dot_product_attention_math` (scaled `matmul`, additive mask, a softmax that
gives 0 for a fully masked row, dropout, `matmul`). Their gradients come from the pieces.
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.broadcast import new_row_major
from pyaten.core.promotion import promote_types
from pyaten.core.tensor import Tensor
from pyaten.native.kernels.copy import assign
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import quiet_call


def _is_meta(*tensors: Tensor | None) -> bool:
    return any(t is not None and t._device.type == "meta" for t in tensors)


def _clamped(norm: Tensor, eps: float) -> Tensor:
    """`norm` clamped below at `eps` with the gradient of the unclamped norm (PyTorch clamps a
    clone in place under NoGradGuard)."""
    a = _aten()
    plain = a.detach.default(norm)
    shift = a.sub.Tensor(a.clamp_min.default(plain, eps), plain, 1)
    return a.add.Tensor(norm, shift, 1)


@native
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    a = _aten()
    common = promote_types(x1._dtype, x2._dtype)
    if not common.is_floating_point:
        raise RuntimeError(
            "expected common dtype to be floating point, yet common dtype is "
            f"{common.scalar_name}")
    if not x1._dtype.is_floating_point and not x1._dtype.is_complex:
        x1 = a._to_copy.default(x1, dtype=common)
    if not x2._dtype.is_floating_point and not x2._dtype.is_complex:
        x2 = a._to_copy.default(x2, dtype=common)
    x1, x2 = a.broadcast_tensors.default([x1, x2])
    n1 = _clamped(a.linalg_vector_norm.default(x1, 2, [dim], True), eps)
    n2 = _clamped(a.linalg_vector_norm.default(x2, 2, [dim], True), eps)
    return a.sum.dim_IntList(a.mul.Tensor(a.div.Tensor(x1, n1), a.div.Tensor(x2, n2)), [dim])


@native
def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    a = _aten()
    innermost = max(x1.dim(), x2.dim()) - 1
    diff = a.add.Scalar(a.sub.Tensor(x1, x2, 1), eps, 1)
    return a.norm.ScalarOpt_dim(diff, p, [innermost], keepdim)


def _dtype_text(d: dt.dtype) -> str:
    return str(d).rpartition(".")[2]


_C10_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "bool": "bool", "int64": "long int",
              "int32": "int"}


def _c10(d: dt.dtype) -> str:
    name = _dtype_text(d)
    return _C10_NAMES.get(name, name)


def _validate(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None) -> None:
    if not (query._dtype is key._dtype and query._dtype is value._dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{_c10(query._dtype)} key.dtype: {_c10(key._dtype)} and value.dtype: "
            f"{_c10(value._dtype)} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got "
            f"query.dim: {query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} "
            "instead.")
    if attn_mask is not None and attn_mask._dtype not in (dt.bool, dt.float32, query._dtype):
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {_c10(attn_mask._dtype)} and  query.dtype: "
            f"{_c10(query._dtype)} instead.")


def _bool_mask_to_float(mask: Tensor, dtype: dt.dtype) -> Tensor:
    a = _aten()
    zeros = a.zeros.default([], dtype=dtype, device=mask._device)
    return a.masked_fill.Scalar(a.expand.default(zeros, list(mask._sizes)),
                                a.logical_not.default(mask), -math.inf)


@native
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    _validate(query, key, value, attn_mask)
    if attn_mask is not None and attn_mask._dtype is dt.bool:
        attn_mask = _bool_mask_to_float(attn_mask, query._dtype)
    return _aten()._scaled_dot_product_attention_math.default(
        query, key, value, attn_mask, dropout_p, is_causal, None, scale=scale,
        enable_gqa=enable_gqa)[0]


def _gqa(query: Tensor, key: Tensor, value: Tensor, enable_gqa: bool) -> tuple:
    if not enable_gqa:
        return key, value
    a = _aten()
    q_heads, k_heads, v_heads = query._sizes[-3], key._sizes[-3], value._sizes[-3]
    if q_heads % k_heads or q_heads % v_heads:
        raise RuntimeError(
            "Number of heads in key and value must divide the number of heads in query")
    if k_heads != q_heads:
        key = a.repeat_interleave.self_int(key, q_heads // k_heads, -3)
    if v_heads != q_heads:
        value = a.repeat_interleave.self_int(value, q_heads // v_heads, -3)
    return key, value


@native
def _safe_softmax(self: Tensor, dim: int, dtype=None) -> Tensor:
    """softmax, with the slices along `dim` where every entry is -inf giving 0, not NaN
    (a query that may attend to nothing: attention's masks)."""
    a = _aten()
    result = a.softmax.int(self, dim, dtype)
    dead = a.all.dim(a.eq.Scalar(self, -math.inf), dim, True)
    return a.where.ScalarSelf(dead, 0.0, result)


@native
def _scaled_dot_product_attention_math(query: Tensor, key: Tensor, value: Tensor,
                                       attn_mask: Tensor | None = None,
                                       dropout_p: float = 0.0, is_causal: bool = False,
                                       dropout_mask: Tensor | None = None,
                                       scale: float | None = None,
                                       enable_gqa: bool = False) -> tuple:
    a = _aten()
    negative = scale is not None and scale < 0
    base = abs(scale) if negative else scale
    if base is None:
        base = 1.0 / math.sqrt(query._sizes[-1])
    factor = math.sqrt(base)
    q = a.mul.Scalar(query, -factor if negative else factor)
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError(
                "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                "is_causal=True")
        size_l, size_s = query._sizes[-2], key._sizes[-2]
        ones = a.ones.default([size_l, size_s], dtype=dt.bool, device=query._device)
        attn_mask = _bool_mask_to_float(a.tril.default(ones), query._dtype)
    key, value = _gqa(query, key, value, enable_gqa)
    attn = a.matmul.default(q, a.mul.Scalar(a.transpose.int(key, -2, -1), factor))
    if attn_mask is not None:
        if attn_mask._dtype is dt.bool:
            attn_mask = _bool_mask_to_float(attn_mask, query._dtype)
        attn = a.add.Tensor(attn, attn_mask, 1)
    if attn_mask is None:
        weights = a._softmax.default(attn, -1, False)
    else:
        # a row masked everywhere attends to nothing (0, not NaN)
        weights = a._safe_softmax.default(attn, -1)
    if dropout_p > 0.0:
        if dropout_mask is not None:
            # a given mask (for testing): the scaling goes onto value, as PyTorch does
            weights = a.masked_fill.Scalar(weights, a.logical_not.default(dropout_mask), 0.0)
            scaled = a.mul.Scalar(value, 1.0 / (1.0 - dropout_p))
            return a.matmul.default(weights, scaled), weights
        weights = a.dropout.default(weights, dropout_p, True)
    return a.matmul.default(weights, value), weights


# --- pdist -----------------------------------------------------------------------------------


def _pairs(n: int):
    return np.triu_indices(n, 1)


def _pdist_values(diff: np.ndarray, p: float) -> np.ndarray:
    a = np.abs(diff)
    if p == 0:
        return (a != 0).sum(axis=1).astype(diff.dtype)
    if p == 1:
        return a.sum(axis=1)
    if p == 2:
        return np.sqrt(np.einsum("km,km->k", diff, diff))
    if math.isinf(p):
        return a.max(axis=1, initial=0)
    return quiet_call(lambda: (a ** p).sum(axis=1) ** (1.0 / p))


@native
def pdist(self: Tensor, p: float = 2) -> Tensor:
    if self.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {self.dim()}D")
    if not self._dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    a = _aten()
    return a._pdist_forward.default(a.contiguous.default(self), p)


@native
def _pdist_forward(self: Tensor, p: float = 2) -> Tensor:
    n = self._sizes[0] if self.dim() else 0
    sizes = (n * (n - 1) // 2,)
    out = new_row_major(sizes, self._dtype, self._device)
    if self._device.type == "meta" or not out.numel():
        return out
    x = self._numpy()
    i, j = _pairs(n)
    assign(out._numpy(), _pdist_values(x[i] - x[j], p))
    return out


@native
def _pdist_backward(grad: Tensor, self: Tensor, p: float, pdist: Tensor) -> Tensor:
    out = new_row_major(tuple(self._sizes), self._dtype, self._device)
    if _is_meta(grad, self, pdist) or not out.numel():
        return out
    x = self._numpy()
    n = x.shape[0]
    result = np.zeros(x.shape, x.dtype)
    if n > 1 and p != 0:
        i, j = _pairs(n)
        diff = x[i] - x[j]
        dist = pdist._numpy()[:, None]
        g = grad._numpy()[:, None]
        with np.errstate(all="ignore"):
            if p == 1:
                local = np.sign(diff)
            elif p == 2:
                local = np.where(dist == 0, 0, diff / dist)
            elif math.isinf(p):
                local = np.sign(diff) * (np.abs(diff) == dist)
            elif p < 1:
                local = np.where((dist == 0) | (diff == 0), 0,
                                 np.sign(diff) * np.abs(diff) ** (p - 1) / dist ** (p - 1))
            else:
                local = np.where(dist == 0, 0,
                                 np.sign(diff) * np.abs(diff) ** (p - 1) / dist ** (p - 1))
        contrib = g * local
        np.add.at(result, i, contrib)
        np.add.at(result, j, -contrib)
    assign(out._numpy(), result)
    return out
