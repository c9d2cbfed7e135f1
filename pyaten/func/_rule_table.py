"""The batching rules, one small function per operator family (Note: how a rule sees its
arguments, in pyaten/func/_rules.py). Each works on physical values, batch in dimension 0,
and returns `NotImplemented` for the cases it leaves to the per-sample loop."""

from __future__ import annotations

from typing import Any

import pyaten
from pyaten.core.tensor import Tensor
from pyaten.func._batched import BatchedTensor
from pyaten.func._rules import BatchedCall, call_plain, rule
from pyaten.utils._pytree import tree_map

__all__: list[str] = []


def _wrap_dim(dim: int, rank: int) -> int:
    if rank == 0:
        rank = 1
    if not -rank <= dim < rank:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], "
            f"but got {dim})"
        )
    return dim + rank if dim < 0 else dim


def _pad_to(value: pyaten.Tensor, logical_rank: int, rank: int) -> pyaten.Tensor:
    """Insert size-1 dims after the batch so that the sample has `rank` dims."""
    for _ in range(rank - logical_rank):
        value = value.unsqueeze(1)
    return value


# --- pointwise: broadcasting with the batch dimension in front ---------------------------


# the binary operators PyTorch's vmap computes in the common dtype of the logical operands
# (a 0-dim sample promotes as a 0-dim tensor): arithmetic, comparisons, min/max, the others
# of its binary pointwise rule
_PROMOTED_BINARY = frozenset({
    "add", "sub", "rsub", "mul", "div", "floor_divide", "pow", "float_power", "atan2",
    "fmod", "remainder", "maximum", "minimum", "fmax", "fmin", "max", "min", "eq", "ne", "lt",
    "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
    "bitwise_right_shift", "__lshift__", "__rshift__", "logical_and", "logical_or",
    "logical_xor", "heaviside", "hypot", "nextafter", "copysign", "xlogy", "special_xlog1py",
    "special_zeta", "ldexp", "igamma", "igammac", "logaddexp", "logaddexp2", "gcd", "lcm",
})


@rule(
    "<pointwise>", "tanh_backward", "copy_", "fill_", "zero_", "ones_like", "zeros_like",
    "empty_like", "full_like", "_to_copy", "detach", "alias", "clone", "lift_fresh",
    "leaky_relu_backward", "hardtanh_backward", "elu_backward", "softplus_backward",
    "masked_fill", "masked_fill_", "where", "threshold_backward", "sigmoid_backward",
    "gelu_backward", "silu_backward", "clamp", "clamp_", "clamp_min", "clamp_max",
    "mse_loss_backward", "_conj", "_neg_view", "rsub", "hardswish_backward",
    "hardsigmoid_backward", "logit_backward", "hardswish", "hardswish_", "gelu_", "mish_",
    "threshold_", "heaviside_", "gcd_", "lcm_", "copysign_", "xlogy_", "floor_divide",
    "floor_divide_", "__lshift__", "__rshift__", "__ilshift__", "__irshift__", "fill", "zero",
    "log_sigmoid_forward", "lift_fresh_copy", "detach_", "alias_copy", "polar", "complex",
)
def pointwise(call: BatchedCall) -> Any:
    args, kwargs = call.args, call.kwargs
    tensors = [x for x in args if isinstance(x, Tensor)]
    if len(tensors) == 1 and tensors[0] is args[0] and call.name != "mse_loss_backward" and (
        not kwargs or not any(isinstance(v, (Tensor, list, tuple)) for v in kwargs.values())
    ) and not any(isinstance(v, (list, tuple)) for v in args):
        if len(args) == 1 and not kwargs:
            return call_plain(call.func, (args[0].value,))
        return call.func(args[0].value, *args[1:], **kwargs)  # one tensor, the batched one
    tensors += [x for x in kwargs.values() if isinstance(x, Tensor)]
    rank = max(len(t._sizes) for t in tensors)
    common = None
    if len({t._dtype for t in tensors}) > 1 and any(
        call.batched(t) and not t._sizes for t in tensors
    ):
        # a 0-dim sample would promote as a dimensioned tensor: as PyTorch's binary rule,
        # the operands are cast to the dtype of the logical ones first
        if call.name not in _PROMOTED_BINARY or len(tensors) != 2 or any(
            isinstance(v, Tensor) for v in kwargs.values()
        ):
            return NotImplemented
        common = pyaten.result_type(*tensors)

    def physical(x: Any) -> Any:
        if call.batched(x):
            x = _pad_to(x.value, len(x._sizes), rank)
        if common is not None and isinstance(x, Tensor) and x._dtype != common:
            return x.to(common)
        return x

    if call.name == "mse_loss_backward" and call.args[3] != 0:
        return NotImplemented
    kwargs = tree_map(physical, call.kwargs) if call.kwargs else call.kwargs
    return call.func(*[physical(x) for x in call.args], **kwargs)


# --- reductions, scans and operators with a `dim` argument --------------------------------

_DIM_ARGS = ("dim", "dims", "dim0", "dim1", "dim2", "start_dim", "end_dim", "source",
             "destination", "dimension")


# reductions for which an empty dim list means every dim (as PyTorch's sum(x, []))
_ALL_DIMS_WHEN_EMPTY = frozenset({
    "sum", "mean", "nansum", "nanmean", "amax", "amin", "var", "std", "var_mean", "std_mean",
    "linalg_vector_norm", "count_nonzero", "logsumexp", "all", "any", "norm",
})


# func -> (its positional arguments, those that are dims with their positions), once per op
_DIM_PLANS: dict[Any, tuple[list[Any], list[tuple[int, Any]]]] = {}


def _shift_dims(call: BatchedCall, rank: int, extra: int = 0) -> list[Any] | None:
    """The arguments with every dim argument moved past the batch; None if a dim argument
    is absent where the operator reduces over all dims."""
    plan = _DIM_PLANS.get(call.func)
    if plan is None:
        positional = [a for a in call.func._schema.arguments if not a.kwarg_only]
        plan = _DIM_PLANS[call.func] = (positional, [
            (i, a) for i, a in enumerate(positional) if a.name in _DIM_ARGS])
    positional, dim_arguments = plan
    args = list(call.args)
    for index, argument in dim_arguments:
        if index >= len(args):  # a trailing default the Python key left out
            if not argument.has_default:
                continue
            args += [a.default for a in positional[len(args) : index + 1]]
        value = args[index]
        if isinstance(value, int):
            args[index] = _wrap_dim(value, rank + extra) + 1
        elif isinstance(value, (list, tuple)):
            if not value and call.name in _ALL_DIMS_WHEN_EMPTY:
                args[index] = list(range(1, rank + 1))
            else:
                args[index] = [_wrap_dim(d, rank + extra) + 1 for d in value]
        elif value is None and argument.name in ("dim", "dims"):
            if "[" not in str(argument.type):
                return None  # an optional int dim: None flattens the sample (argmax)
            args[index] = list(range(1, rank + 1))  # an optional dim list: None is every dim
    return args


@rule(
    "sum.dim_IntList", "mean.dim", "amax", "amin", "prod.dim_int", "max.dim", "min.dim",
    "argmax", "argmin", "var.correction", "std.correction", "var_mean.correction",
    "std_mean.correction", "logsumexp", "all.dim", "any.dim", "all.dims", "any.dims",
    "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "_softmax", "_log_softmax",
    "_softmax_backward_data", "_log_softmax_backward_data", "sort", "topk", "kthvalue",
    "median.dim", "mode", "nansum", "count_nonzero", "linalg_vector_norm",
    "norm.ScalarOpt_dim", "flip", "transpose", "select.int", "slice.Tensor", "narrow",
    "squeeze.dim", "squeeze.dims", "split.Tensor", "split_with_sizes", "chunk", "unbind",
    "diagonal", "unfold", "movedim.int", "gather", "scatter", "scatter_add", "scatter_",
    "scatter_add_", "index_select", "cat", "stack", "diff", "glu", "glu_backward",
    "nanmean", "var.dim", "std.dim", "softmax.int", "log_softmax.int", "roll",
    "cumsum_", "cumprod_", "nanmedian.dim", "rot90",
)
def dim_op(call: BatchedCall) -> Any:
    first = call.args[0]
    if isinstance(first, (list, tuple)):
        rank = first[0].dim()
    else:
        rank = len(first._sizes)
    if call.name == "index_select":
        if call.batched(call.args[2]):
            return NotImplemented
        self = call.args[0]
        if self.dim() == 0:
            return NotImplemented
        return call.func(call.value(self), _wrap_dim(call.args[1], self.dim()) + 1,
                         call.args[2])
    if call.name in ("scatter_", "scatter_add_") and not call.batched(first):
        return NotImplemented
    if rank == 0:
        return NotImplemented  # a 0-dim sample: its dim argument means a dim of size 1
    if call.name == "roll" and (len(call.args) < 3 or not call.args[2]):
        return NotImplemented  # roll without dims rolls the flattened sample
    extra = 1 if call.name == "stack" else 0
    args = _shift_dims(call, rank, extra)
    if args is None:
        return NotImplemented
    inplace = call.name.endswith("_")
    physical_args = []
    for i, x in enumerate(args):
        if isinstance(x, (list, tuple)) and x and isinstance(x[0], pyaten.Tensor):
            physical_args.append([call.physical(t) for t in x])
        elif isinstance(x, pyaten.Tensor) and i == 0 and inplace:
            physical_args.append(x.value)
        else:
            physical_args.append(call.physical(x))
    kwargs = tree_map(call.physical, call.kwargs) if call.kwargs else call.kwargs
    return call.func(*physical_args, **kwargs)


@rule("aminmax")
def aminmax(call: BatchedCall) -> Any:
    # `dim` is keyword-only here: None reduces each whole sample
    self = call.args[0]
    rank = len(self._sizes)
    dim, keepdim = call.kwargs.get("dim"), call.kwargs.get("keepdim", False)
    if not call.batched(self) or call.args[1:]:
        return NotImplemented
    if dim is None:
        if keepdim:
            return NotImplemented
        return call.func(self.value.reshape(call.batch_size, -1), dim=1)
    if rank == 0:  # a 0-dim sample reduced over its one element: 0-dim results
        _wrap_dim(dim, rank)
        return call.func(self.value.unsqueeze(1), dim=1)
    return call.func(self.value, dim=_wrap_dim(dim, rank) + 1, keepdim=keepdim)


@rule("sum.default", "mean.default", "prod.default", "all.default", "any.default",
      "max.default", "min.default")
def full_reduction(call: BatchedCall) -> Any:
    value = call.value(call.args[0])
    flat = value.reshape(call.batch_size, -1)
    kwargs = dict(call.kwargs)
    name = call.name
    if name in ("max", "min"):
        return getattr(pyaten, "amax" if name == "max" else "amin")(flat, 1)
    if name in ("all", "any", "count_nonzero"):
        return getattr(pyaten, name)(flat, 1)
    return getattr(pyaten, name)(flat, 1, **kwargs)


# --- views and shape operators -----------------------------------------------------------


@rule("view", "_unsafe_view", "reshape", "view_copy")
def view(call: BatchedCall) -> Any:
    value = call.value(call.args[0])
    size = [call.batch_size, *call.args[1]]
    try:
        return call.func(value, size)
    except RuntimeError:
        if call.name == "view":  # torch's view refuses strides it cannot view, as here
            raise
        # A sample that is contiguous but whose batch is not in front of it (in_dims=-1):
        # its samples are views no single stride describes, so the batch is copied.
        return value.reshape(size)


@rule("expand", "expand_copy")
def expand(call: BatchedCall) -> Any:
    self = call.args[0]
    size = list(call.args[1])
    value = _pad_to(call.value(self), self.dim(), len(size))
    return call.func(value, [call.batch_size, *size], *call.args[2:])


@rule("permute")
def permute(call: BatchedCall) -> Any:
    self = call.args[0]
    dims = [_wrap_dim(d, self.dim()) + 1 for d in call.args[1]]
    return call.func(call.value(self), [0, *dims])


@rule("t")
def transpose_2d(call: BatchedCall) -> Any:
    self = call.args[0]
    if self.dim() < 2:
        return call.value(self).view(list(call.value(self).shape))
    return call.value(self).transpose(1, 2)


@rule("unsqueeze")
def unsqueeze(call: BatchedCall) -> Any:
    self = call.args[0]
    return call.value(self).unsqueeze(_wrap_dim(call.args[1], self.dim() + 1) + 1)


@rule("squeeze.default")
def squeeze_all(call: BatchedCall) -> Any:
    self = call.args[0]
    dims = [i + 1 for i, n in enumerate(self.shape) if n == 1]
    return call.value(self).squeeze(dims) if dims else call.value(self).view(
        call.value(self).shape
    )


@rule("new_zeros", "new_ones", "new_empty", "new_full")
def new_factory(call: BatchedCall) -> Any:
    value = call.value(call.args[0])
    size = [call.batch_size, *call.args[1]]
    return call.func(value, size, *call.args[2:], **call.kwargs)


@rule("repeat")
def repeat(call: BatchedCall) -> Any:
    self = call.args[0]
    repeats = list(call.args[1])
    value = _pad_to(call.value(self), self.dim(), len(repeats))
    return value.repeat([1, *repeats])


def _index_with_batched_indices(call: BatchedCall) -> Any:
    """self[i0, i1, ...] with tensors from dim 0 on, some batched: the batch becomes one more
    advanced index (an arange), so each sample reads its own rows."""
    self, indices = call.args
    if any(i is None or i.dtype in (pyaten.bool, pyaten.uint8) for i in indices):
        return NotImplemented
    rank = max(i.dim() for i in indices)
    batch = pyaten.arange(call.batch_size).view(call.batch_size, *([1] * rank))
    physical = [_pad_to(i.value, i.dim(), rank) if call.batched(i) else i for i in indices]
    return call.func(call.physical(self), [batch, *physical])


@rule("index.Tensor")
def index(call: BatchedCall) -> Any:
    self, indices = call.args
    if any(call.batched(i) for i in indices if i is not None):
        return _index_with_batched_indices(call)
    if not call.batched(self):
        return NotImplemented
    seen_none_after = False
    started = False
    for i in indices:
        if i is None and started:
            seen_none_after = True
        elif i is not None:
            if seen_none_after:
                return NotImplemented
            started = True
    if indices and indices[0] is None:
        return NotImplemented  # advanced indices after a slice keep their place only if
        # they start at dim 0 (the batch then stays in front)
    return call.func(self.value, [None, *indices])


# --- the matmul family -------------------------------------------------------------------


@rule("mm", "bmm", "matmul")
def mm(call: BatchedCall) -> Any:
    a, b = call.args[:2]
    if call.batched(a) and not call.batched(b) and call.name == "mm":
        value = a.value
        n, k = a.shape
        out = pyaten.mm(value.reshape(call.batch_size * n, k), b)
        return out.view(call.batch_size, n, b.shape[1])
    return pyaten.matmul(call.value(a), call.value(b))


@rule("mv")
def mv(call: BatchedCall) -> Any:
    a, v = call.args
    return pyaten.matmul(call.value(a), call.value(v).unsqueeze(-1)).squeeze(-1)


@rule("dot", "vdot")
def dot(call: BatchedCall) -> Any:
    a, b = call.args
    if call.name == "vdot":
        return NotImplemented
    return (call.value(a) * call.value(b)).sum(-1)


@rule("addmm", "baddbmm", "addmv")
def addmm(call: BatchedCall) -> Any:
    bias, a, b = call.args[:3]
    beta = call.kwargs.get("beta", 1)
    alpha = call.kwargs.get("alpha", 1)
    if (call.name == "addmm" and call.batched(a) and not call.batched(b)
            and not call.batched(bias) and len(bias._sizes) <= 1):
        # the samples' rows are one matrix: a single addmm, the batch folded into the rows
        n, k = a._sizes
        out = call.func(bias, a.value.reshape(call.batch_size * n, k), b, **call.kwargs)
        return out.view(call.batch_size, n, out._sizes[1])
    if call.name == "addmv":
        product = pyaten.matmul(call.value(a), call.value(b).unsqueeze(-1)).squeeze(-1)
        out_rank = 1
    else:
        product = pyaten.matmul(call.value(a), call.value(b))
        out_rank = 2 if call.name == "addmm" else 3
    if alpha != 1:
        product = product * alpha
    bias_value = call.value(bias)
    if call.batched(bias):
        bias_value = _pad_to(bias_value, bias.dim(), out_rank)
    if beta == 0:
        return product
    if beta != 1:
        bias_value = bias_value * beta
    return product + bias_value


# --- nn operators ------------------------------------------------------------------------


def _fold_into_groups(call: BatchedCall, x: Any) -> Any:
    """(B, N, C, ...) -> (N, B*C, ...): the batch becomes groups of the channel dim."""
    value = call.physical(x)
    value = value.movedim(0, 1)
    return value.reshape(value.shape[0], -1, *value.shape[3:])


def _unfold_groups(call: BatchedCall, out: Any) -> Any:
    """(N, B*O, ...) -> (B, N, O, ...)."""
    out = out.view(out.shape[0], call.batch_size, -1, *out.shape[2:])
    return out.movedim(1, 0)


@rule("convolution")
def convolution(call: BatchedCall) -> Any:
    x, weight, bias, stride, padding, dilation, transposed, output_padding, groups = call.args
    if x.dim() != weight.dim():
        return NotImplemented
    if not call.batched(weight) and not call.batched(bias):
        value = x.value
        n = x.shape[0]
        folded = value.reshape(call.batch_size * n, *x.shape[1:])
        out = call.func(folded, weight, bias, *call.args[3:])
        return out.view(call.batch_size, n, *out.shape[1:])
    if transposed:
        return NotImplemented
    # a weight per sample (an ensemble): each sample's channels a group of their own
    w = call.physical(weight)
    w = w.reshape(-1, *w.shape[2:])
    b = None if bias is None else call.physical(bias).reshape(-1)
    out = call.func(_fold_into_groups(call, x), w, b, stride, padding, dilation, transposed,
                    output_padding, groups * call.batch_size)
    return _unfold_groups(call, out)


@rule("convolution_backward")
def convolution_backward(call: BatchedCall) -> Any:
    (grad_out, x, weight, bias_sizes, stride, padding, dilation, transposed, output_padding,
     groups, mask) = call.args
    if transposed or x.dim() != weight.dim():
        return NotImplemented
    b = call.batch_size
    w = call.physical(weight)
    w = w.reshape(-1, *w.shape[2:])
    sizes = None if bias_sizes is None else [b * bias_sizes[0]]
    gi, gw, gb = call.func(
        _fold_into_groups(call, grad_out), _fold_into_groups(call, x), w, sizes, stride,
        padding, dilation, transposed, output_padding, groups * b, mask,
    )
    # Each result is batched: a per-sample gradient even where the weight is shared, the sum
    # over samples being autograd's job above vmap.
    gi = None if gi is None else _unfold_groups(call, gi)
    gw = None if gw is None else gw.view(b, -1, *gw.shape[1:])
    gb = None if gb is None else gb.view(b, -1)
    return gi, gw, gb


_POOL_RANK = {
    "max_pool2d_with_indices": 4, "avg_pool2d": 4, "_adaptive_avg_pool2d": 4,
    "adaptive_avg_pool2d": 4, "max_pool1d": 3, "avg_pool1d": 3, "max_pool3d_with_indices": 5,
    "avg_pool3d": 5, "_adaptive_avg_pool3d": 5, "adaptive_max_pool2d": 4,
    "upsample_nearest2d": 4, "upsample_bilinear2d": 4, "upsample_nearest1d": 3,
    "upsample_linear1d": 3, "upsample_bicubic2d": 4, "upsample_nearest3d": 5,
    "upsample_trilinear3d": 5, "reflection_pad1d": 3, "reflection_pad2d": 4,
    "reflection_pad3d": 5, "replication_pad1d": 3, "replication_pad2d": 4,
    "replication_pad3d": 5, "adaptive_max_pool1d": 3, "max_pool1d_with_indices": 3,
}


@rule(*_POOL_RANK)
def pooling(call: BatchedCall) -> Any:
    x = call.args[0]
    rank = _POOL_RANK[call.name]
    if x.dim() == rank - 1:
        return call.func(x.value, *call.args[1:], **call.kwargs)
    if x.dim() != rank:
        return NotImplemented
    n = x.shape[0]
    folded = x.value.reshape(call.batch_size * n, *x.shape[1:])
    out = call.func(folded, *call.args[1:], **call.kwargs)
    return tree_map(lambda t: t.view(call.batch_size, n, *t.shape[1:]), out)


@rule("native_layer_norm")
def layer_norm(call: BatchedCall) -> Any:
    x, shape, weight, bias, eps = call.args
    if call.batched(weight) or call.batched(bias):
        return NotImplemented
    return call.func(call.value(x), shape, weight, bias, eps)


@rule("embedding")
def embedding(call: BatchedCall) -> Any:
    weight, indices = call.args[:2]
    if call.batched(weight):
        return NotImplemented
    return call.func(weight, call.value(indices), *call.args[2:])


@rule("mse_loss")
def mse_loss(call: BatchedCall) -> Any:
    x, target = call.args[:2]
    reduction = call.args[2] if len(call.args) > 2 else 1
    rank = max(x.dim(), target.dim())
    left = _pad_to(call.value(x), x.dim(), rank) if call.batched(x) else x
    right = _pad_to(call.value(target), target.dim(), rank) if call.batched(target) else target
    diff = (left - right) ** 2
    if reduction == 0:
        return diff
    dims = list(range(1, diff.dim()))
    if not dims:
        return diff
    return diff.mean(dims) if reduction == 1 else diff.sum(dims)


# --- in-place metadata changes: the wrapper takes the new view's shape --------------------

_OUT_OF_PLACE = {"squeeze_": "squeeze", "unsqueeze_": "unsqueeze", "t_": "t",
                 "transpose_": "transpose", "swapdims_": "swapdims", "swapaxes_": "swapaxes"}


@rule(*_OUT_OF_PLACE)
def restride_(call: BatchedCall) -> Any:
    self = call.args[0]
    if not call.batched(self):
        return NotImplemented
    view = getattr(pyaten, _OUT_OF_PLACE[call.name])(self, *call.args[1:], **call.kwargs)
    self.value = view.value
    # The wrapper has no storage of its own: only its sizes and strides change.
    self._sizes = view._sizes
    self._strides = view._strides
    return self.value


# --- nll_loss (cross_entropy's core): the samples folded into one batch -------------------


def _nll_parts(call: BatchedCall, x: Any, target: Any, weight: Any, ignore_index: int):
    """The physical input as (B, N, C), target as (B, N), and each item's weight (0 where
    ignored)."""
    inputs = call.physical(x)
    targets = call.physical(target)
    classes = inputs.shape[-1]
    inputs = inputs.reshape(call.batch_size, -1, classes)
    targets = targets.reshape(call.batch_size, -1)
    kept = targets != ignore_index
    if weight is None:
        item_weight = kept.to(inputs.dtype)
    else:
        item_weight = weight[targets.clamp(0, classes - 1)] * kept
    return inputs, targets, item_weight


def _nll_flat(call: BatchedCall, x: Any, target: Any) -> tuple[Any, Any, int, int]:
    """The physical input as (B*N, C) and target as (B*N,), B and N."""
    inputs = call.physical(x)
    targets = call.physical(target)
    b = call.batch_size
    inputs = inputs.reshape(-1, inputs._sizes[-1])
    targets = targets.reshape(-1)
    return inputs, targets, b, targets._sizes[0] // b if b else 0


def _nll_forward_unweighted(call: BatchedCall, x: Any, target: Any, reduction: int,
                            ignore_index: int) -> Any:
    """Without class weights: one unreduced loss over all the items, then each sample's
    sum, and count of items not ignored."""
    inputs, targets, b, n = _nll_flat(call, x, target)
    losses, _ = call.func(inputs, targets, None, 0, ignore_index)
    kept = (targets != ignore_index).to(inputs._dtype)
    if n == 1:
        sums, counts = losses, kept
    else:
        sums, counts = losses.view(b, n).sum(1), kept.view(b, n).sum(1)
    if reduction == 0:
        return losses.view(b, *target.shape), counts
    if reduction == 2:
        return sums, counts
    return sums / counts, counts


@rule("nll_loss_forward")
def nll_loss_forward(call: BatchedCall) -> Any:
    x, target, weight, reduction, ignore_index = call.args
    if call.batched(weight) or x.dim() not in (1, 2):
        return NotImplemented
    if weight is None:
        return _nll_forward_unweighted(call, x, target, reduction, ignore_index)
    inputs, targets, item_weight = _nll_parts(call, x, target, weight, ignore_index)
    classes = inputs.shape[-1]
    losses, _ = call.func(inputs.reshape(-1, classes), targets.reshape(-1), weight, 0,
                          ignore_index)
    losses = losses.view(call.batch_size, -1)
    total_weight = item_weight.sum(1)
    if reduction == 0:
        return losses.view(call.batch_size, *target.shape), total_weight
    if reduction == 2:
        return losses.sum(1), total_weight
    return losses.sum(1) / total_weight, total_weight


@rule("nll_loss_backward")
def nll_loss_backward(call: BatchedCall) -> Any:
    grad_out, x, target, weight, reduction, ignore_index, total_weight = call.args
    if call.batched(weight) or x.dim() not in (1, 2):
        return NotImplemented
    if weight is None:
        # every item's gradient scale, then one unreduced backward over all the items
        inputs, targets, b, n = _nll_flat(call, x, target)
        scale = call.physical(grad_out)
        if reduction == 1:
            scale = scale / call.physical(total_weight)
        if reduction != 0 and n != 1:
            scale = scale.unsqueeze(1).expand(b, n)
        grad = call.func(scale.reshape(-1), inputs, targets, None, 0, ignore_index,
                         pyaten.ones((), dtype=inputs._dtype))
        return grad.view(b, *x.shape)
    inputs, targets, item_weight = _nll_parts(call, x, target, weight, ignore_index)
    classes = inputs.shape[-1]
    onehot = (pyaten.arange(classes) == targets.unsqueeze(-1)).to(inputs.dtype)
    scale = call.physical(grad_out).reshape(call.batch_size, -1)
    if reduction == 1:
        scale = scale / call.physical(total_weight).reshape(call.batch_size, 1)
    grad = onehot * (-(item_weight * scale)).unsqueeze(-1)
    return grad.view(call.batch_size, *x.shape)


# --- operators on the last dims that take any leading dims as a batch ---------------------


@rule(
    "tril", "triu", "tril_", "triu_", "constant_pad_nd", "pixel_shuffle", "pixel_unshuffle",
    "cholesky", "linalg_cholesky_ex", "linalg_inv_ex", "linalg_eig", "linalg_qr",
    "linalg_matrix_exp", "_linalg_det", "_linalg_slogdet", "_linalg_eigh", "_linalg_svd",
    "linalg_lu", "linalg_lu_factor_ex", "_linalg_eigvals", "linalg_householder_product",
    "diag_embed", "view_as_real", "view_as_complex",
)
def leading_batch(call: BatchedCall) -> Any:
    self = call.args[0]
    if call.name == "linalg_householder_product":  # tau's batch dims must be the input's
        return call.func(call.physical(self), call.physical(call.args[1]))
    rest = (*call.args[1:], *call.kwargs.values())
    if any(call.batched(x) for x in rest) or not call.batched(self):
        return NotImplemented
    if call.name in ("pixel_shuffle", "pixel_unshuffle") and self.dim() < 3:
        return NotImplemented
    if call.name == "diag_embed":  # its dims count from the front
        return NotImplemented if len(call.args) > 2 else call.func(self.value, *call.args[1:])
    if call.name == "constant_pad_nd" and len(call.args[1]) > 2 * self.dim():
        return NotImplemented
    if call.name == "view_as_real" and self.value.is_conj():
        # the wrapper does not carry its value's conjugate bit (torch's does), so composites
        # that check the bit (real, imag) call this on a conjugate-marked batch: the values
        # resolved (a copy where they would view)
        return call.func(self.value.resolve_conj())
    return call.func(self.value, *call.args[1:], **call.kwargs)


@rule("native_batch_norm")
def batch_norm(call: BatchedCall) -> Any:
    x, weight, bias, running_mean, running_var, training, momentum, eps = call.args
    if x.dim() < 2 or any(call.batched(t) for t in (weight, bias, running_mean, running_var)):
        return NotImplemented
    b = call.batch_size
    if not training:  # running statistics shared by every sample: fold into the batch
        n = x.shape[0]
        out, mean, invstd = call.func(x.value.reshape(b * n, *x.shape[1:]), *call.args[1:])
        return (out.view(b, n, *x.shape[1:]), mean.expand(b, *mean.shape),
                invstd.expand(b, *invstd.shape))
    if running_mean is not None or running_var is not None:
        return NotImplemented  # one running buffer cannot take every sample's statistics
    # statistics per sample: each sample's channels become channels of their own
    channels = x.shape[1]
    w = None if weight is None else weight.repeat(b)
    bb = None if bias is None else bias.repeat(b)
    out, mean, invstd = call.func(_fold_into_groups(call, x), w, bb, None, None, True,
                                  momentum, eps)
    return (_unfold_groups(call, out), mean.view(b, channels), invstd.view(b, channels))


# --- pooling by planes: every tensor argument laid out as the input, (N, C, ...) or (C, ...)
# (indices, gradients); the batch folds into N, or is N for an input without one -----------

_PLANES_RANK = {
    "adaptive_max_pool3d": 5, "max_unpool2d": 4, "max_unpool3d": 5,
    "fractional_max_pool2d": 4, "fractional_max_pool3d": 5,
    "fractional_max_pool2d_backward": 4, "fractional_max_pool3d_backward": 5,
    "max_pool2d_with_indices_backward": 4, "max_pool3d_with_indices_backward": 5,
    "avg_pool2d_backward": 4, "avg_pool3d_backward": 5, "adaptive_max_pool2d_backward": 4,
    "adaptive_max_pool3d_backward": 5, "_adaptive_avg_pool2d_backward": 4,
    "_adaptive_avg_pool3d_backward": 5,
}
_SAMPLES = ("fractional_max_pool2d", "fractional_max_pool3d")  # random_samples: (N, C, d)


@rule(*_PLANES_RANK)
def planes(call: BatchedCall) -> Any:
    rank = _PLANES_RANK[call.name]
    args = list(call.args)
    sample_rank = len(args[0]._sizes)
    if sample_rank not in (rank - 1, rank):
        return NotImplemented
    if call.name in _SAMPLES and len(args[3]._sizes) != 3:
        return NotImplemented
    b = call.batch_size
    n = args[0]._sizes[0] if sample_rank == rank else 1
    for i, x in enumerate(args):
        if not isinstance(x, Tensor):
            continue
        value = call.physical(x)
        if i == 3 and call.name in _SAMPLES:  # (B, n, C, d) -> (B*n, C, d)
            args[i] = value.reshape(b * n, *value.shape[2:])
        elif sample_rank == rank:
            args[i] = value.reshape(b * n, *value.shape[2:])
        else:
            args[i] = value
    out = call.func(*args, **call.kwargs)
    if sample_rank == rank:
        return tree_map(lambda t: t.view(b, n, *t.shape[1:]), out)
    return out


@rule("_linalg_check_errors")
def linalg_check_errors(call: BatchedCall) -> Any:
    """The check of a batch of LAPACK codes: the batch's codes at once, as codes of a batch
    of matrices ("(Batch element i): ", as PyTorch's rule)."""
    info, api_name = call.args[:2]
    call.func(call.physical(info), api_name, is_matrix=False)


@rule("masked_select")
def masked_select(call: BatchedCall) -> Any:
    """An unbatched mask (a batched one is refused before): each sample broadcast with the
    mask selects the same count, so the batch selects at once, one row per sample."""
    self, mask = call.args
    shape = pyaten.broadcast_shapes(tuple(self.shape), tuple(mask.shape))
    value = _pad_to(call.physical(self), self.dim(), len(shape))
    value = value.expand(call.batch_size, *shape)
    selected = value.masked_select(mask.expand(*shape).expand(call.batch_size, *shape))
    return selected.view(call.batch_size, -1)


def _reach(sizes: Any, strides: Any, offset: int) -> int | None:
    """The last storage element a view reaches (None when it has no element)."""
    if any(s == 0 for s in sizes):
        return None
    return offset + sum((s - 1) * st for s, st in zip(sizes, strides, strict=True))


@rule("as_strided", "as_strided_copy")
def as_strided(call: BatchedCall) -> Any:
    """Sample i's view starts at `storage_offset + i * (the batch's stride)`: as if each
    sample's storage began where the batch's does (PyTorch's rule; a loop over the samples
    would give every sample the same absolute offset). The view must stay within the
    memory the sample itself can reach."""
    self, size, stride = call.args[:3]
    offset = call.args[3] if len(call.args) > 3 else call.kwargs.get("storage_offset")
    if not call.batched(self) or call.kwargs.keys() - {"storage_offset"}:
        return NotImplemented
    size, stride = list(size), list(stride)
    if len(size) != len(stride):
        raise RuntimeError(
            "Tensor.as_strided(size, stride, ...): size and stride must have the same length! "
            f"Got size {size} and stride {stride}")
    value = self.value
    physical = value
    while isinstance(physical, BatchedTensor):  # a lower level's wrapper: its batch's offset
        physical = physical.value
    base = physical.storage_offset()
    offset = base if offset is None else offset
    reach = _reach(size, stride, offset)
    sample_reach = _reach(value.shape[1:], value.stride()[1:], base)
    if reach is not None and sample_reach is not None and (offset < base
                                                           or reach > sample_reach):
        raise RuntimeError(
            f"result = tensor.as_strided({size}, {stride}, {offset}) can access memory "
            f"outside of `tensor`. `result` can access some memory in range [{offset}, "
            f"{reach + 1}], but `tensor` can only access some memory in range [{base}, "
            f"{sample_reach + 1}]. This is not supported inside of vmap, please try to "
            "rewrite the `as_strided` call as a sequence of PyTorch view operations")
    return call.func(value, [call.batch_size, *size], [value.stride(0), *stride], offset)


@rule("linalg_lstsq")
def linalg_lstsq(call: BatchedCall) -> Any:
    """The batch solved at once, as PyTorch's rule: a batched argument of fewer dims gets
    size-1 dims after the batch (so a batched vector `b` is a one-row matrix, which torch
    refuses too; an unbatched one stays a vector). An output the batched call leaves empty
    (residuals not computed, rank and singular values for `gels`) is empty per sample."""
    a, b = call.args[:2]
    if call.batched(a) and a.dim() < 2:
        raise RuntimeError("pyaten.linalg.lstsq: input must have at least 2 dimensions.")
    if call.batched(b) and b.dim() < 1:
        raise RuntimeError("pyaten.linalg.lstsq: other must have at least 1 dimension.")
    rank = max(a.dim(), b.dim())
    a_, b_ = ((_pad_to(x.value, x.dim(), rank) if call.batched(x) else call.physical(x))
              for x in (a, b))
    out = call.func(a_, b_, *call.args[2:], **call.kwargs)
    batch = call.batch_size
    return tuple(t.new_empty((batch, *t.shape)) if t.dim() == 1 and t.shape[0] == 0 else t
                 for t in out)


@rule("_ctc_loss")
def ctc_loss(call: BatchedCall) -> Any:
    """Padded targets and shared lengths (lists or tensors): the samples' sequences fold into
    the loss's own batch, (T, B*N, C) log-probabilities against (B*N, S) targets."""
    log_probs, targets, input_lengths, target_lengths = call.args[:4]
    if log_probs.dim() != 3 or targets.dim() != 2 or call.batched(input_lengths) or (
            call.batched(target_lengths)):
        return NotImplemented  # per-sample lengths: the loop's (log_alpha's size differs)
    batch, n = call.batch_size, log_probs.shape[1]
    lp = call.physical(log_probs).movedim(0, 1).reshape(log_probs.shape[0], batch * n, -1)
    tg = call.physical(targets).reshape(batch * n, targets.shape[1])

    def lengths(given: Any) -> Any:  # the shared lengths once per sample
        if isinstance(given, Tensor):
            return given.repeat(batch)
        return list(given) * batch

    nll, log_alpha = call.func(lp, tg, lengths(input_lengths), lengths(target_lengths),
                               *call.args[4:], **call.kwargs)
    return nll.view(batch, n), log_alpha.view(batch, n, *log_alpha.shape[1:])


# a Python number as a tensor of its own kind (ATen's wrapped scalar)
_SCALAR_DTYPES = {bool: pyaten.bool, int: pyaten.int64, float: pyaten.float64,
                  complex: pyaten.complex128}


@rule("linspace.Tensor_Tensor", "linspace.Tensor_Scalar", "linspace.Scalar_Tensor",
      "logspace.Tensor_Tensor", "logspace.Tensor_Scalar", "logspace.Scalar_Tensor")
def spaced(call: BatchedCall) -> Any:
    """Each sample's points from its own start and end, as PyTorch's rule computes them:
    start + k * (end - start) / (steps - 1) for k in 0..steps-1 (then base ** that)."""
    start, end, steps = call.args[:3]
    base = call.args[3] if call.name == "logspace" and len(call.args) > 3 else (
        10.0 if call.name == "logspace" else None)
    dtype = call.kwargs.get("dtype")
    batch = call.batch_size
    # a 0-dim start or end per sample: (batch, 1), so the points run along dimension 1
    start_ = call.physical(start).reshape(batch, 1) if isinstance(start, Tensor) else start
    end_ = call.physical(end).reshape(batch, 1) if isinstance(end, Tensor) else end
    if steps == 0:  # (an int fill: int64 unless `dtype` says otherwise, as torch's)
        out = pyaten.full((batch, 0), 0, dtype=dtype)
    elif steps == 1:  # the start, in its own dtype unless `dtype` says otherwise
        first = start_ if isinstance(start_, Tensor) else pyaten.tensor(
            start, dtype=_SCALAR_DTYPES[type(start)]).expand(batch, 1)
        out = first.new_empty((batch, 1), dtype=dtype).copy_(first)
    else:
        out = start_ + pyaten.arange(0, steps, dtype=dtype) * (end_ - start_) / (steps - 1)
    if base is not None:
        out = pyaten.pow(base, out)
    if dtype is not None and out.dtype != dtype:
        out = out.to(dtype)
    return out
