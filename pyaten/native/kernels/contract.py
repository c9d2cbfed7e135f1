"""Contractions and products over named dims: einsum, linalg.multi_dot (chain_matmul's
engine), linalg.vecdot, linalg.matmul, linalg.diagonal, cross/linalg.cross and the pairwise
distances cdist/_cdist_forward/_euclidean_dist.

Note: how einsum contracts
    Every operand is first aligned to one global dim order: the output's dims (its labels and
    ellipsis block, in output order), then a summed ellipsis block, then the summed labels in
    PyTorch's label order (A-Z before a-z). A label repeated within one operand becomes a
    diagonal; a label an operand lacks becomes a size-1 dim. Then operands are combined left
    to right: a summed label used by no later operand is contracted at that step, by one
    `bmm` over (batch dims, left-only dims, summed dims) x (batch, summed, right-only) as
    PyTorch's `sumproduct_pair` does, or by `mul` when nothing is summed. A label only one
    operand has is summed away before that. Every step is an operator call, so autograd and
    Meta come from those operators, and a pure permutation or diagonal stays a view.
"""

from __future__ import annotations

import warnings

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor
from pyaten.core.views import empty_tensor
from pyaten.native.kernels.copy import CPP_DTYPE_NAMES, assign
from pyaten.native.kernels.shape import format_shape, wrap_dim
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import broadcast_shapes, quiet_call, resize_output

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ELLIPSIS = "..."


# --- einsum ---------------------------------------------------------------------------------


def _parse_operand(text: str, start: int, index: int) -> list[str]:
    """One operand's subscripts as a list of labels and at most one "..."."""
    labels: list[str] = []
    dots = 0
    for offset, ch in enumerate(text):
        if ch == " ":
            continue
        if ch == ".":
            if _ELLIPSIS in labels:
                raise RuntimeError(
                    f"einsum(): found '.' for operand {index} for which an ellipsis was already "
                    "found"
                )
            dots += 1
            if dots == 3:
                labels.append(_ELLIPSIS)
                dots = 0
            continue
        if dots:
            raise RuntimeError(
                f"einsum(): found '.' for operand {index} that is not part of any ellipsis"
            )
        if ch not in _LETTERS:
            raise RuntimeError(
                f"einsum(): invalid subscript given at index {start + offset} in the equation "
                "string, subscripts must be in [a-zA-Z]"
            )
        labels.append(ch)
    if dots:
        raise RuntimeError(
            f"einsum(): found '.' for operand {index} that is not part of any ellipsis"
        )
    return labels


def _parse_equation(equation: str, count: int) -> tuple[list[list[str]], list[str] | None]:
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    inputs, start = [], 0
    for index, part in enumerate(lhs.split(",")):
        inputs.append(_parse_operand(part, start, index))
        start += len(part) + 1
    if len(inputs) < count:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    if len(inputs) > count:
        raise RuntimeError(
            "einsum(): fewer operands were provided than specified in the equation"
        )
    if arrow < 0:
        return inputs, None
    return inputs, _parse_operand(equation[arrow + 2:], arrow + 2, len(inputs))


def _implicit_output(inputs: list[list[str]]) -> list[str]:
    counts: dict[str, int] = {}
    for labels in inputs:
        for label in labels:
            counts[label] = counts.get(label, 0) + 1
    output = [_ELLIPSIS] if _ELLIPSIS in counts else []
    return output + sorted((k for k, v in counts.items() if v == 1 and k != _ELLIPSIS),
                           key=_LETTERS.index)


def _check_output(inputs: list[list[str]], output: list[str]) -> None:
    seen = {label for labels in inputs for label in labels}
    for label in output:
        if label != _ELLIPSIS and label not in seen:
            raise RuntimeError(
                f"einsum(): output subscript {label} does not appear in the equation for any "
                "input operand"
            )
    for i, label in enumerate(output):
        if label in output[:i]:
            shown = "..." if label == _ELLIPSIS else label
            raise RuntimeError(f"einsum(): output subscript {shown} appears more than once in the "
                               "output")


def _align(aten, t: Tensor, labels: list[str], index: int, order: list):
    """`t` permuted and unsqueezed to the global `order` of dims (labels; ("...", k) for the
    k-th dim of the ellipsis block, counted from the right)."""
    named = [x for x in labels if x != _ELLIPSIS]
    ndim = len(t._sizes)
    if _ELLIPSIS in labels:
        if len(named) > ndim:
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({len(named)}) is more than "
                f"the number of dimensions ({ndim}) for operand {index}"
            )
    elif len(named) != ndim:
        raise RuntimeError(
            f"einsum(): the number of subscripts in the equation ({len(named)}) does not match "
            f"the number of dimensions ({ndim}) for operand {index} and no ellipsis was given"
        )
    dim_names: list = []
    for label in labels:
        if label == _ELLIPSIS:
            count = ndim - len(named)
            dim_names += [(_ELLIPSIS, count - k) for k in range(count)]
        else:
            dim_names.append(label)
    # a repeated label: its diagonal (moved last by `diagonal`), once per repeat
    i = 0
    while i < len(dim_names):
        name = dim_names[i]
        j = dim_names.index(name, i + 1) if dim_names.count(name) > 1 else -1
        if j < 0:
            i += 1
            continue
        a, b = t._sizes[i], t._sizes[j]
        if a != b:
            raise RuntimeError(
                f"einsum(): subscript {name} is repeated for operand {index} but the sizes "
                f"don't match, {a} != {b}"
            )
        t = aten.diagonal.default(t, 0, i, j)
        dim_names = [n for k, n in enumerate(dim_names) if k not in (i, j)] + [name]
        i = 0
    perm = [dim_names.index(name) for name in order if name in dim_names]
    if perm != list(range(len(perm))):
        t = aten.permute.default(t, perm)
    present = iter(t._sizes)
    sizes = tuple(next(present) if name in dim_names else 1 for name in order)
    if sizes != tuple(t._sizes):
        t = aten.reshape.default(t, sizes)  # only size-1 dims added: always a view
    return t


def _sumproduct_pair(aten, a: Tensor, b: Tensor, summed: set[int]) -> Tensor:
    """a * b summed over the dims `summed` (kept as size 1), by one bmm."""
    ndim = len(a._sizes)
    for d in sorted(summed):
        if a._sizes[d] != 1 and b._sizes[d] == 1:
            a = aten.sum.dim_IntList(a, [d], True, None)
        elif b._sizes[d] != 1 and a._sizes[d] == 1:
            b = aten.sum.dim_IntList(b, [d], True, None)
    contracted = [d for d in sorted(summed) if a._sizes[d] != 1]
    if not contracted:
        return aten.mul.Tensor(a, b)
    batch, left, right = [], [], []
    for d in range(ndim):
        if d in summed:
            continue
        sa, sb = a._sizes[d], b._sizes[d]
        if sa != 1 and sb != 1:
            batch.append(d)
        elif sb == 1:
            left.append(d)
        else:
            right.append(d)

    def size(t: Tensor, dims: list) -> int:
        n = 1
        for d in dims:
            n *= t._sizes[d]
        return n

    nb, nl, nr, nk = size(a, batch), size(a, left), size(b, right), size(a, contracted)
    a3 = aten.reshape.default(aten.permute.default(a, batch + left + contracted + right +
                                                   [d for d in sorted(summed)
                                                    if d not in contracted]),
                              (nb, nl, nk))
    b3 = aten.reshape.default(aten.permute.default(b, batch + contracted + right + left +
                                                   [d for d in sorted(summed)
                                                    if d not in contracted]),
                              (nb, nk, nr))
    product = aten.bmm.default(a3, b3)
    order = batch + left + right
    sizes = [a._sizes[d] for d in batch + left] + [b._sizes[d] for d in right]
    product = aten.view.default(product, tuple(sizes) + (1,) * (ndim - len(order)))
    rest = [d for d in range(ndim) if d not in order]
    inverse = [0] * ndim
    for position, d in enumerate(order + rest):
        inverse[d] = position
    return aten.permute.default(product, inverse)


@native
def einsum(equation: str, tensors, path=None) -> Tensor:
    aten = _aten()
    operands = list(tensors)
    inputs, output = _parse_equation(equation, len(operands))
    if output is None:
        output = _implicit_output(inputs)
    _check_output(inputs, output)
    # the ellipsis block covers the most dims any operand gives it
    ell_dims = 0
    for labels, t in zip(inputs, operands):
        if _ELLIPSIS in labels:
            ell_dims = max(ell_dims, len(t._sizes) - (len(labels) - 1))
    block = [(_ELLIPSIS, ell_dims - k) for k in range(ell_dims)]
    order: list = []
    for label in output:
        order += block if label == _ELLIPSIS else [label]
    if _ELLIPSIS not in output:
        order += block
    used = {label for labels in inputs for label in labels if label != _ELLIPSIS}
    order += sorted((x for x in used if x not in output), key=_LETTERS.index)
    n_out = len(order) - (len(used - set(output)) + (0 if _ELLIPSIS in output else ell_dims))
    _check_sizes(inputs, operands)
    aligned = [_align(aten, t, labels, i, order)
               for i, (labels, t) in enumerate(zip(inputs, operands))]
    _check_broadcast(operands, aligned)
    for t in aligned[1:]:
        if t._dtype is not aligned[0]._dtype:
            raise RuntimeError(
                f"expected scalar type {aligned[0]._dtype.scalar_name} but found "
                f"{t._dtype.scalar_name}"
            )
    # which operand last uses each summed dim (a size-1 dim is not a use)
    last_use = {}
    for i, t in enumerate(aligned):
        for d in range(n_out, len(order)):
            if t._sizes[d] != 1:
                last_use[d] = i
    result = None
    for i, t in enumerate(aligned):
        own = [d for d in range(n_out, len(order))
               if last_use.get(d) == i and t._sizes[d] != 1
               and (result is None or result._sizes[d] == 1)]
        if own and (i == 0 or result is None):
            t = aten.sum.dim_IntList(t, own, True, None)
        if result is None:
            result = t
            continue
        summed = {d for d in range(n_out, len(order)) if last_use.get(d, -1) <= i}
        result = _sumproduct_pair(aten, result, t, summed)
    if len(order) > n_out:
        leftover = [d for d in range(n_out, len(order)) if result._sizes[d] != 1]
        if leftover:
            result = aten.sum.dim_IntList(result, leftover, True, None)
        result = aten.view.default(result, tuple(result._sizes[:n_out])) \
            if result.is_contiguous() else aten.reshape.default(result, result._sizes[:n_out])
    return result


def _check_sizes(inputs: list[list[str]], operands: list[Tensor]) -> None:
    seen: dict = {}
    for index, (labels, t) in enumerate(zip(inputs, operands)):
        named = [x for x in labels if x != _ELLIPSIS]
        if _ELLIPSIS not in labels and len(named) != len(t._sizes):
            continue  # _align raises the count error
        if len(named) > len(t._sizes):
            continue
        position = 0
        for label in labels:
            if label == _ELLIPSIS:
                count = len(t._sizes) - len(named)
                for k in range(count):
                    size, key = t._sizes[position + k], (_ELLIPSIS, count - k)
                    previous = seen.get(key)
                    if previous is None or previous == 1:
                        seen[key] = size
                    elif size != 1 and size != previous:
                        raise RuntimeError(
                            f"einsum(): dimension {position + k} covered by ellipsis in operand "
                            f"{index}has size {size} which does not broadcast with previously "
                            f"seen ellipsis with size {previous} for the respective dimension"
                        )
                position += count
                continue
            size = t._sizes[position]
            position += 1
            first = labels.index(label)
            if first != labels.index(label, first) or labels.count(label) > 1:
                own = [t._sizes[k] for k, x in enumerate(_positions(labels, t)) if x == label]
                if own[0] != size:
                    raise RuntimeError(
                        f"einsum(): subscript {label} is repeated for operand {index} but the "
                        f"sizes don't match, {size} != {own[0]}"
                    )
            previous = seen.get(label)
            if previous is None or previous == 1:
                seen[label] = size
            elif size != 1 and size != previous:
                raise RuntimeError(
                    f"einsum(): subscript {label} has size {size} for operand {index} which "
                    f"does not broadcast with previously seen size {previous}"
                )


def _positions(labels: list[str], t: Tensor) -> list[str]:
    """The label of each dim of `t` ("..." for the ellipsis dims)."""
    named = len([x for x in labels if x != _ELLIPSIS])
    out: list[str] = []
    for label in labels:
        out += [label] * (len(t._sizes) - named) if label == _ELLIPSIS else [label]
    return out


def _check_broadcast(operands: list[Tensor], aligned: list[Tensor]) -> None:
    ndim = len(aligned[0]._sizes)
    for d in range(ndim):
        sizes = {t._sizes[d] for t in aligned} - {1}
        if len(sizes) > 1:
            shapes = " ".join(f"{format_shape(o._sizes)}->{format_shape(a._sizes)}"
                              for o, a in zip(operands, aligned))
            raise RuntimeError(
                "einsum(): operands do not broadcast with remapped shapes "
                f"(original->remapped): {shapes}"
            )


# --- linalg.multi_dot, chain_matmul's engine --------------------------------------------------


def _multi_dot_plan(tensors) -> list[Tensor]:
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0], tensors[-1]
    if len(first._sizes) not in (1, 2):
        raise RuntimeError(
            f"multi_dot(): the first tensor must be 1D or 2D but got {len(first._sizes)}D"
        )
    if len(last._sizes) not in (1, 2):
        raise RuntimeError(
            f"multi_dot(): the last tensor must be 1D or 2D but got {len(last._sizes)}D"
        )
    for i in range(1, n - 1):
        if len(tensors[i]._sizes) != 2:
            raise RuntimeError(
                f"multi_dot(): tensor {i} must be 2D but got {len(tensors[i]._sizes)}D"
            )
    for i in range(1, n):
        if tensors[i]._dtype is not first._dtype:
            raise RuntimeError(
                "multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                f"{CPP_DTYPE_NAMES[first._dtype.scalar_name]} and tensor {i} "
                f"{CPP_DTYPE_NAMES[tensors[i]._dtype.scalar_name]}"
            )
    for i in range(n - 1):
        a, b = tensors[i], tensors[i + 1]
        if a._sizes[-1] != b._sizes[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {format_shape(a._sizes)} "
                f"and {format_shape(b._sizes)} cannot be multiplied"
            )
    aten = _aten()
    mats = list(tensors)
    if len(first._sizes) == 1:
        mats[0] = aten.unsqueeze.default(first, 0)
    if len(last._sizes) == 1:
        mats[-1] = aten.unsqueeze.default(last, 1)
    return mats


def _chain_order(dims: list[int]) -> list[list[int]]:
    """The cheapest parenthesization (matrix-chain DP): split[i][j] for chain i..j."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _multi_dot(mats: list[Tensor]) -> Tensor:
    aten = _aten()
    if len(mats) == 2:
        return aten.mm.default(mats[0], mats[1])
    dims = [mats[0]._sizes[0]] + [m._sizes[1] for m in mats]
    split = _chain_order(dims)

    def product(i: int, j: int) -> Tensor:
        if i == j:
            return mats[i]
        k = split[i][j]
        return aten.mm.default(product(i, k), product(k + 1, j))

    return product(0, len(mats) - 1)


def _multi_dot_shape(tensors, result: Tensor) -> Tensor:
    aten = _aten()
    if len(tensors[0]._sizes) == 1 and len(tensors[-1]._sizes) == 1:
        return aten.view.default(result, ())
    if len(tensors[0]._sizes) == 1:
        return aten.squeeze.dim(result, 0)
    if len(tensors[-1]._sizes) == 1:
        return aten.squeeze.dim(result, -1)
    return result


@native
def linalg_multi_dot(tensors) -> Tensor:
    return _multi_dot_shape(tensors, _multi_dot(_multi_dot_plan(tensors)))


@native
def linalg_multi_dot_out(tensors, out: Tensor) -> Tensor:
    result = linalg_multi_dot(tensors)
    if out._dtype is not result._dtype:
        raise RuntimeError(
            "multi_dot(): expected out tensor to have dtype "
            f"{CPP_DTYPE_NAMES[result._dtype.scalar_name]} but got "
            f"{CPP_DTYPE_NAMES[out._dtype.scalar_name]}"
        )
    resize_output(out, result._sizes, "multi_dot")
    return _aten().copy_.default(out, result, False)


# --- linalg.vecdot, linalg.matmul, linalg.diagonal ---------------------------------------------


def _vecdot_product(x: Tensor, y: Tensor) -> Tensor:
    if x._dtype is not y._dtype:
        raise RuntimeError(
            "linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
            f"{x._dtype.scalar_name} and y of type {y._dtype.scalar_name} instead"
        )
    aten = _aten()
    if x._dtype.is_complex:
        x = aten.conj.default(x)
    return aten.mul.Tensor(x, y)


@native
def linalg_vecdot(x: Tensor, y: Tensor, dim: int = -1) -> Tensor:
    return _aten().sum.dim_IntList(_vecdot_product(x, y), [dim], False, None)


@native
def linalg_vecdot_out(x: Tensor, y: Tensor, dim: int, out: Tensor) -> Tensor:
    if x._dtype is y._dtype and out._dtype is not x._dtype:
        raise RuntimeError(
            f"linalg.vecdot: Expected out of dtype{x._dtype.scalar_name} but found "
            f"{out._dtype.scalar_name}"
        )
    return _aten().sum.IntList_out(_vecdot_product(x, y), [dim], False, None, out=out)


@native
def linalg_matmul(self: Tensor, other: Tensor) -> Tensor:
    return _aten().matmul.default(self, other)


@native
def linalg_matmul_out(self: Tensor, other: Tensor, out: Tensor) -> Tensor:
    return _aten().matmul.out(self, other, out=out)


@native
def linalg_diagonal(A: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:  # noqa: N803
    return _aten().diagonal.default(A, offset, dim1, dim2)


# --- cross, linalg.cross --------------------------------------------------------------------


def _cross_meta(self: Tensor, other: Tensor, dim: int) -> tuple[tuple, int]:
    if len(self._sizes) != len(other._sizes):
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = wrap_dim(dim, len(self._sizes))
    if self._sizes[d] != 3 or other._sizes[d] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got "
            f"{self._sizes[d]} and {other._sizes[d]}"
        )
    sizes = broadcast_shapes("linalg.cross", tuple(self._sizes), tuple(other._sizes))
    return sizes, d


@native
def meta_linalg_cross(op, self: Tensor, other: Tensor, dim: int = -1) -> None:
    sizes, _ = _cross_meta(self, other, dim)
    if self._dtype is not other._dtype:
        raise RuntimeError(
            f"expected scalar type {self._dtype.scalar_name} but found {other._dtype.scalar_name}"
        )
    op.set_output(0, sizes, self._dtype, self._device)


@native
def linalg_cross_out(op, self: Tensor, other: Tensor, dim: int, out: Tensor) -> None:
    dtype = out._dtype
    if dtype is dt.bool or dtype is dt.complex32:
        raise NotImplementedError(f'"cross" not implemented for \'{dtype.scalar_name}\'')
    if out.numel() == 0:
        return
    d = wrap_dim(dim, len(self._sizes))
    acc = np.dtype(np.float32) if dtype in (dt.float16, dt.bfloat16) else dtype.numpy
    a = self._numpy().astype(acc, copy=False)
    b = other._numpy().astype(acc, copy=False)
    a, b = np.broadcast_arrays(a, b)
    a, b = np.moveaxis(a, d, -1), np.moveaxis(b, d, -1)
    value = np.empty(a.shape, acc)
    with np.errstate(over="ignore"):
        value[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
        value[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
        value[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    assign(out._numpy(), np.moveaxis(value, -1, d))


def _default_cross_dim(self: Tensor, other: Tensor, dim) -> int:
    if dim is not None:
        return dim
    warnings.warn(
        "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass "
        "the dim explicitly or simply use torch.linalg.cross.\nThe default value of dim will "
        "change to agree with that of linalg.cross in a future release.",
        UserWarning,
        stacklevel=4,
    )
    sizes = broadcast_shapes("cross", tuple(self._sizes), tuple(other._sizes)) \
        if len(self._sizes) == len(other._sizes) else self._sizes
    for i, s in enumerate(sizes):
        if s == 3:
            return i
    raise RuntimeError("no dimension of size 3 in input")


@native
def cross(self: Tensor, other: Tensor, dim=None) -> Tensor:
    return _aten().linalg_cross.default(self, other, _default_cross_dim(self, other, dim))


@native
def cross_out(self: Tensor, other: Tensor, dim, out: Tensor) -> Tensor:
    d = _default_cross_dim(self, other, dim)
    return _aten().linalg_cross.out(self, other, d, out=out)


# --- cdist, _cdist_forward, _euclidean_dist -----------------------------------------------------

_MM_IF_NECESSARY, _MM_ALWAYS, _MM_NEVER = 0, 1, 2


def _cdist_checks(x1: Tensor, x2: Tensor, p: float) -> None:
    for name, x in (("X1", x1), ("X2", x2)):
        if len(x._sizes) < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{len(x._sizes)}D")
    for name, x in (("X1", x1), ("X2", x2)):
        if not x._dtype.is_floating_point:
            raise RuntimeError(
                f"cdist only supports floating-point dtypes, {name} got: {x._dtype.scalar_name}"
            )
    if x1._sizes[-1] != x2._sizes[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1._sizes[-1]} X2: "
            f"{x2._sizes[-1]}"
        )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if x1._dtype is not x2._dtype:
        raise RuntimeError(
            f"expected scalar type {x1._dtype.scalar_name} but found {x2._dtype.scalar_name}"
        )


def _cdist_shape(x1: Tensor, x2: Tensor) -> tuple:
    batch = broadcast_shapes("cdist", tuple(x1._sizes[:-2]), tuple(x2._sizes[:-2]))
    return batch + (x1._sizes[-2], x2._sizes[-2])


def _uses_mm(p: float, mode, r1: int, r2: int) -> bool:
    mode = _MM_IF_NECESSARY if mode is None else mode
    return p == 2 and (mode == _MM_ALWAYS or (mode == _MM_IF_NECESSARY and (r1 > 25 or r2 > 25)))


def _distances(a: np.ndarray, b: np.ndarray, p: float, use_mm: bool) -> np.ndarray:
    if use_mm:  # |a|^2 + |b|^2 - 2 a.b, clamped at 0 (PyTorch's _euclidean_dist)
        sq_a = np.sum(a * a, axis=-1)[..., :, None]
        sq_b = np.sum(b * b, axis=-1)[..., None, :]
        d2 = sq_a + sq_b - 2 * np.matmul(a, np.swapaxes(b, -1, -2))
        return np.sqrt(np.maximum(d2, 0))
    diff = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return np.sum(diff != 0, axis=-1).astype(a.dtype)
    if p == 1:
        return np.sum(diff, axis=-1)
    if p == 2:
        return np.sqrt(np.sum(diff * diff, axis=-1))
    if np.isinf(p):
        return np.max(diff, axis=-1, initial=0)
    return np.sum(diff ** p, axis=-1) ** (1.0 / p)


def _cdist_compute(x1: Tensor, x2: Tensor, p: float, use_mm: bool) -> Tensor:
    sizes = _cdist_shape(x1, x2)
    result = empty_tensor(sizes, x1._dtype, x1._device)
    if x1._device.type == "meta" or result.numel() == 0:
        return result
    acc = np.float32 if x1._dtype in (dt.float16, dt.bfloat16) else x1._dtype.numpy
    a = x1._numpy().astype(acc, copy=False)
    b = x2._numpy().astype(acc, copy=False)
    batch = sizes[:-2]
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    if a.shape[-1] == 0:
        assign(result._numpy(), np.zeros(sizes, acc))
        return result
    assign(result._numpy(), quiet_call(_distances, a, b, p, use_mm))
    return result


@native
def _cdist_forward(x1: Tensor, x2: Tensor, p: float, compute_mode) -> Tensor:
    _cdist_checks(x1, x2, p)
    use_mm = _uses_mm(p, compute_mode, x1._sizes[-2], x2._sizes[-2])
    return _cdist_compute(x1, x2, p, use_mm)


@native
def _euclidean_dist(x1: Tensor, x2: Tensor) -> Tensor:
    return _cdist_compute(x1, x2, 2.0, True)


@native
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode=None) -> Tensor:
    _cdist_checks(x1, x2, p)
    if _uses_mm(p, compute_mode, x1._sizes[-2], x2._sizes[-2]):
        _cdist_shape(x1, x2)  # the batch dims' broadcasting error
        return _aten()._euclidean_dist.default(x1, x2)
    return _aten()._cdist_forward.default(x1, x2, p, compute_mode)


def _cdist_backward_np(g: np.ndarray, a: np.ndarray, b: np.ndarray, p: float,
                       dist: np.ndarray) -> np.ndarray:
    """PyTorch's cdist_backward: sum_j g_ij d D_ij / d a_i, zero where D_ij is 0."""
    diff = a[..., :, None, :] - b[..., None, :, :]
    g = g[..., None]
    d = dist[..., None]
    zero = d == 0
    safe = np.where(zero, 1, d)
    if p == 1:
        term = g * np.sign(diff)
    elif p < 2:
        term = np.sign(diff) * np.abs(diff) ** (p - 1) * g / safe ** (p - 1)
        term = np.where(zero | ((diff == 0) & (p < 1)), 0, term)
    elif p == 2:
        term = np.where(zero, 0, g * diff / safe)
    elif np.isinf(p):
        term = g * np.sign(diff) * (np.abs(diff) == d)
    else:
        term = np.where(zero, 0, diff * np.abs(diff) ** (p - 2) * g / safe ** (p - 1))
    return term.sum(axis=-2)


@native
def _cdist_backward(grad: Tensor, x1: Tensor, x2: Tensor, p: float, cdist: Tensor) -> Tensor:
    """The gradient of `_cdist_forward` for x1, of x1's batch-expanded shape (the engine sums
    it back to x1's own shape, as PyTorch's does)."""
    batch = broadcast_shapes("cdist", tuple(x1._sizes[:-2]), tuple(x2._sizes[:-2]))
    sizes = batch + tuple(x1._sizes[-2:])
    result = empty_tensor(sizes, x1._dtype, x1._device)
    if x1._device.type == "meta" or result.numel() == 0:
        return result
    acc = np.float32 if x1._dtype in (dt.float16, dt.bfloat16) else x1._dtype.numpy
    if p == 0 or x1._sizes[-2] == 0 or x2._sizes[-2] == 0:
        assign(result._numpy(), np.zeros(sizes, acc))
        return result
    a = np.broadcast_to(x1._numpy().astype(acc, copy=False), sizes)
    b = np.broadcast_to(x2._numpy().astype(acc, copy=False), batch + tuple(x2._sizes[-2:]))
    g = grad._numpy().astype(acc, copy=False)
    dist = cdist._numpy().astype(acc, copy=False)
    assign(result._numpy(), quiet_call(_cdist_backward_np, g, a, b, p, dist))
    return result
