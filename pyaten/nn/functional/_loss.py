"""pyaten.nn.functional: losses.

Each function has `torch.nn.functional`'s signature, checks and messages. Where PyTorch calls
a declared operator (`torch._C._nn.nll_loss_nd`, `torch.binary_cross_entropy_with_logits`,
...) these call ours (`pyaten.nn._C`, `pyaten.<op>`); where PyTorch composes in Python
(`gaussian_nll_loss`, `multilabel_soft_margin_loss`, the weighted forms) they compose pyaten
operators, so autograd comes from those. `reduction` strings map to PyTorch's enum (none 0,
mean 1, sum 2); the legacy `size_average`/`reduce` arguments map as PyTorch's
`_Reduction.legacy_get_string` does, with its deprecation warning.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

from pyaten.autograd.grad_mode import no_grad
from pyaten.core.broadcast import broadcast_shapes
from pyaten.core.tensor import Tensor
from pyaten.nn import _C
from pyaten.nn._bindings import ops as _ops

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cosine_embedding_loss",
    "cross_entropy",
    "ctc_loss",
    "gaussian_nll_loss",
    "hinge_embedding_loss",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "margin_ranking_loss",
    "mse_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "nll_loss",
    "poisson_nll_loss",
    "smooth_l1_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]




# --- reduction arguments (PyTorch's torch.nn._reduction) -----------------------------------


def _get_enum(reduction: str) -> int:
    if reduction == "none":
        return 0
    if reduction == "mean":
        return 1
    if reduction == "elementwise_mean":
        warnings.warn(
            "reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
            stacklevel=3,
        )
        return 1
    if reduction == "sum":
        return 2
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy_string(size_average: bool | None, reduce: bool | None) -> str:
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if size_average and reduce:
        result = "mean"
    elif reduce:
        result = "sum"
    else:
        result = "none"
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{result}' "
        "instead.",
        stacklevel=3,
    )
    return result


def _reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        return _legacy_string(size_average, reduce)
    return reduction


def _size_warning(input: Tensor, target: Tensor) -> None:
    if target.size() != input.size():
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
            stacklevel=3,
        )


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.mean()
    raise ValueError(
        f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'."
    )


def _apply(loss: Tensor, reduction_enum: int) -> Tensor:
    if reduction_enum == 1:
        return loss.mean()
    if reduction_enum == 2:
        return loss.sum()
    return loss


def _weighted(errors: Tensor, weight: Tensor, input: Tensor, reduction: str) -> Tensor:
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    loss = errors * weight
    if reduction == "mean":
        return _ops.sum(loss) / _ops.sum(weight)
    if reduction in ("none", "sum"):
        return _reduce(loss, reduction)
    raise ValueError(
        f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'."
    )


def _log_sigmoid(x: Tensor) -> Tensor:
    # log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), stable for both signs
    return _ops.clamp_max(x, 0) - _ops.log1p(_ops.exp(-_ops.abs(x)))


# --- regression losses ----------------------------------------------------------------------


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    _size_warning(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    x, t = _ops.broadcast_tensors([input, target])
    if weight is not None:
        return _weighted(_ops.pow(x - t, 2), weight, input, reduction)
    return _C.mse_loss(x, t, _get_enum(reduction))


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    _size_warning(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    x, t = _ops.broadcast_tensors([input, target])
    if weight is not None:
        return _weighted(_ops.abs(x - t), weight, input, reduction)
    return _C.l1_loss(x, t, _get_enum(reduction))


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                   reduce: bool | None = None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    _size_warning(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    x, t = _ops.broadcast_tensors([input, target])
    if beta == 0.0:
        return _C.l1_loss(x, t, _get_enum(reduction))
    return _C.smooth_l1_loss(x, t, _get_enum(reduction), beta)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    _size_warning(input, target)
    x, t = _ops.broadcast_tensors([input, target])
    if weight is None:
        return _C.huber_loss(x, t, _get_enum(reduction), delta)
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    return _reduce(_C.huber_loss(x, t, 0, delta) * weight, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    reduction = _reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    return _ops.poisson_nll_loss(input, target, log_input, full, eps, _get_enum(reduction))


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * _ops.ones_like(input)
    elif bool(_ops.any(var < 0)):
        raise ValueError("var has negative entry/entries")
    if var.size() != input.size():
        if input.size()[:-1] == var.size():
            var = _ops.unsqueeze(var, -1)
        elif input.dim() == var.dim() and sum(
            b for a, b in zip(input.size(), var.size()) if a != b
        ) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (_ops.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# --- classification losses ------------------------------------------------------------------


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    reduction = _reduction(size_average, reduce, reduction)
    return _C.nll_loss_nd(input, target, weight, _get_enum(reduction), ignore_index)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    reduction = _reduction(size_average, reduce, reduction)
    return _C.cross_entropy_loss(input, target, weight, _get_enum(reduction), ignore_index,
                                 label_smoothing)


def _enum(size_average: bool | None, reduce: bool | None, reduction: str) -> int:
    return _get_enum(_reduction(size_average, reduce, reduction))


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    reduction_enum = _enum(size_average, reduce, reduction)
    if target.size() != input.size():
        raise ValueError(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}) is deprecated. Please ensure they have the same size."
        )
    if weight is not None:
        weight = weight.expand(broadcast_shapes(target.size(), weight.size()))
    return _C.binary_cross_entropy(input, target, weight, reduction_enum)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    reduction_enum = _enum(size_average, reduce, reduction)
    if target.size() != input.size():
        raise ValueError(
            f"Target size ({target.size()}) must be the same as input size ({input.size()})"
        )
    return _ops.binary_cross_entropy_with_logits(input, target, weight, pos_weight,
                                                   reduction_enum)


def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,
           reduce: bool | None = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    if size_average is not None or reduce is not None:
        reduction_enum = _get_enum(_legacy_string(size_average, reduce))
    else:
        if reduction == "mean":
            warnings.warn(
                "reduction: 'mean' divides the total loss by both the batch size and the "
                "support size.'batchmean' divides only by the batch size, and aligns with the "
                "KL div math definition.'mean' will be changed to behave the same as "
                "'batchmean' in the next major release.",
                stacklevel=2,
            )
        reduction_enum = _get_enum("sum" if reduction == "batchmean" else reduction)
    reduced = _ops.kl_div(input, target, reduction_enum, log_target=log_target)
    if reduction == "batchmean" and input.dim() != 0:
        reduced = reduced / input.size()[0]
    return reduced


def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    return _C.soft_margin_loss(input, target, _enum(size_average, reduce, reduction))


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    reduction = _reduction(size_average, reduce, reduction)
    loss = -(target * _log_sigmoid(input) + (1 - target) * _log_sigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(dim=class_dim) / input.size(class_dim)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average: bool | None = None,
                      reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    reduction_enum = _enum(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    return _C.multi_margin_loss(input, target, p, margin, weight, reduction_enum)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                           reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    return _C.multilabel_margin_loss(input, target, _enum(size_average, reduce, reduction))


# --- embedding and ranking losses -----------------------------------------------------------


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    reduction_enum = _enum(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} "
        )
    return _ops.margin_ranking_loss(input1, input2, target, margin, reduction_enum)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    reduction_enum = _enum(size_average, reduce, reduction)
    return _ops.hinge_embedding_loss(input, target, margin, reduction_enum)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    reduction_enum = _enum(size_average, reduce, reduction)
    return _ops.cosine_embedding_loss(input1, input2, target, margin, reduction_enum)


def _pairwise_distance(x1: Tensor, x2: Tensor, p: float, eps: float) -> Tensor:
    dim = max(x1.dim(), x2.dim()) - 1
    return _ops.norm(x1 - x2 + eps, p, dim, False)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    reduction_enum = _enum(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return _ops.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction_enum)


def triplet_margin_with_distance_loss(
    anchor: Tensor, positive: Tensor, negative: Tensor, *,
    distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
    margin: float = 1.0, swap: bool = False, reduction: str = "mean",
) -> Tensor:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative "
            f"{n_dim}D inputs"
        )
    if distance_function is None:
        def distance_function(x1: Tensor, x2: Tensor) -> Tensor:
            return _pairwise_distance(x1, x2, 2.0, 1e-6)
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = _ops.minimum(dist_neg, distance_function(positive, negative))
    return _reduce(_ops.clamp_min(margin + dist_pos - dist_neg, 0), reduction)


# --- sequence losses ------------------------------------------------------------------------


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor,
             target_lengths: Tensor, blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    return _ops.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         _get_enum(reduction), zero_infinity)
