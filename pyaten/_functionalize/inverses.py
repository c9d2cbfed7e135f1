"""View inverses: how a write into a view becomes a new value of the view's base.

Each view operator `v = base.op(*args)` that functionalization tracks has a reverse rule
`reverse(base, mutated_view, meta, reapply_views) -> new base`: the base with the view's
elements replaced by `mutated_view`, computed without mutation. Views that pick a part of
their base scatter into it (`select_scatter`, `slice_scatter`, `diagonal_scatter`,
`as_strided_scatter`); views that only rearrange their base apply the opposite rearrangement
(`view` back to the base's shape, `transpose` again, the inverse `permute`). These are
PyTorch's rules (ATen's FunctionalInverses); with `reapply_views=False`
(`remove="mutations_and_views"`) the rearranging ones use their `*_copy` operators.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.native.ops_handles import aten

__all__ = ["REVERSE", "view_op", "reverse_view"]

Reverse = Callable[[Tensor, Tensor, Any, bool], Tensor]
REVERSE: dict[str, Reverse] = {}


def _reverse(*names: str) -> Callable[[Reverse], Reverse]:
    def register(fn: Reverse) -> Reverse:
        for name in names:
            REVERSE[name] = fn
        return fn

    return register


def view_op(packet: str, overload: str, reapply_views: bool) -> Any:
    """`aten.<packet>.<overload>`, or its `<packet>_copy` twin when views are removed."""
    name = packet if reapply_views else f"{packet}_copy"
    return getattr(getattr(aten, name), overload)


def reverse_view(meta: Any, base: Tensor, mutated: Tensor, reapply_views: bool) -> Tensor:
    rule = REVERSE.get(meta.name)
    if rule is None:
        raise NotImplementedError(
            f"functionalize: a write through a view made by aten.{meta.name} cannot be "
            "applied to its base (no view inverse for this operator)"
        )
    return rule(base, mutated, meta, reapply_views)


def _arg(meta: Any, i: int, name: str, default: Any) -> Any:
    """The view's i-th argument after `self` (positional or keyword), or its default."""
    if i < len(meta.args):
        return meta.args[i]
    return meta.kwargs.get(name, default)


@_reverse("view.default", "_unsafe_view.default", "_reshape_alias.default")
def _view(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    return view_op("view", "default", reapply)(mutated, list(base.shape))


@_reverse("view.dtype")
def _view_dtype(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    return view_op("view", "dtype", reapply)(mutated, base.dtype)


@_reverse("transpose.int")
def _transpose(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    return view_op("transpose", "int", reapply)(mutated, *meta.args[:2])


@_reverse("t.default")
def _t(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    return view_op("t", "default", reapply)(mutated)


@_reverse("permute.default")
def _permute(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    dims = [d % max(mutated.dim(), 1) for d in meta.args[0]]
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return view_op("permute", "default", reapply)(mutated, inverse)


@_reverse("select.int")
def _select(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    return aten.select_scatter.default(base, mutated, *meta.args[:2])


@_reverse("slice.Tensor")
def _slice(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    dim = _arg(meta, 0, "dim", 0)
    start = _arg(meta, 1, "start", None)
    end = _arg(meta, 2, "end", None)
    step = _arg(meta, 3, "step", 1)
    return aten.slice_scatter.default(base, mutated, dim, start, end, step)


@_reverse("diagonal.default")
def _diagonal(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    offset = _arg(meta, 0, "offset", 0)
    dim1 = _arg(meta, 1, "dim1", 0)
    dim2 = _arg(meta, 2, "dim2", 1)
    return aten.diagonal_scatter.default(base, mutated, offset, dim1, dim2)


@_reverse("as_strided.default")
def _as_strided(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    size = meta.args[0]
    stride = meta.args[1]
    offset = _arg(meta, 2, "storage_offset", None)
    return aten.as_strided_scatter.default(base, mutated, size, stride, offset)


@_reverse("unsqueeze.default")
def _unsqueeze(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    return view_op("squeeze", "dim", reapply)(mutated, meta.args[0])


@_reverse("squeeze.default", "squeeze.dim", "squeeze.dims")
def _squeeze(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    # unsqueeze back every size-1 dimension of the base that the squeeze removed
    ndim = base.dim()
    if meta.name == "squeeze.default":
        dims = range(ndim)
    else:
        given = meta.args[0]
        dims = given if isinstance(given, (list, tuple)) else [given]
    removed = sorted({d % max(ndim, 1) for d in dims if base.shape[d % max(ndim, 1)] == 1})
    out = mutated
    for d in removed:
        out = view_op("unsqueeze", "default", reapply)(out, d)
    return out


@_reverse("expand.default")
def _expand(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    # the base plus the change, summed back over the broadcast dimensions (ATen's sum_to)
    delta = aten.sub.Tensor(mutated, base)
    lead = delta.dim() - base.dim()
    dims = list(range(lead)) + [
        lead + i for i, n in enumerate(base.shape) if n == 1 and delta.shape[lead + i] != 1
    ]
    if dims:
        delta = aten.sum.dim_IntList(delta, dims, True)
        if lead:
            delta = view_op("view", "default", reapply)(delta, list(base.shape))
    elif not reapply:  # sum_to's non-view result when nothing is summed
        delta = aten.clone.default(delta)
    return aten.add.Tensor(base, delta)


@_reverse("split.Tensor")
def _split(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    size = meta.args[0]
    dim = _arg(meta, 1, "dim", 0)
    start = meta.out_index * size
    end = min(start + size, base.shape[dim])
    return aten.slice_scatter.default(base, mutated, dim, start, end)


@_reverse("split_with_sizes.default")
def _split_with_sizes(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    sizes = meta.args[0]
    dim = _arg(meta, 1, "dim", 0)
    start = sum(sizes[:meta.out_index])
    return aten.slice_scatter.default(base, mutated, dim, start, start + sizes[meta.out_index])


@_reverse("unbind.int")
def _unbind(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    return aten.select_scatter.default(base, mutated, _arg(meta, 0, "dim", 0), meta.out_index)


@_reverse("unfold.default")
def _unfold(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    # ATen's rule: correct when the windows do not overlap (step >= size)
    dim, size, step = meta.args[:3]
    return aten.unfold_backward.default(mutated, list(base.shape), dim, size, step)


@_reverse("alias.default")
def _alias(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    return view_op("alias", "default", reapply)(mutated)


@_reverse("detach.default")
def _detach(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    return mutated


@_reverse("view_as_real.default")
def _view_as_real(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    return view_op("view_as_complex", "default", reapply)(mutated)


@_reverse("view_as_complex.default")
def _view_as_complex(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    return view_op("view_as_real", "default", reapply)(mutated)


@_reverse("_conj.default")
def _conj(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    return view_op("_conj", "default", reapply)(mutated)


@_reverse("_neg_view.default")
def _neg_view(base: Tensor, mutated: Tensor, meta: Any, reapply: bool) -> Tensor:
    return view_op("_neg_view", "default", reapply)(mutated)
