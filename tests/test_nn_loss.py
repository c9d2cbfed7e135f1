"""pyaten.nn.functional's losses against torch.nn.functional: values and gradients (float32
and float64), every `reduction=` mode and the legacy `size_average`/`reduce` arguments,
OpInfo samples, non-contiguous inputs, PyTorch's errors, and Meta shapes of every declared
loss operator (`mse_loss`, `nll_loss_forward`, `binary_cross_entropy_backward`, ...).
"""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as TF
from _grad_helpers import check_grads, check_opinfo_grads, opinfo_grad_cases
from _helpers import (
    assert_same,
    compare_samples,
    from_torch,
    opinfo_samples,
    run_both,
    same_error,
    to_pyaten,
)

import pyaten
import pyaten.nn.functional as F
from pyaten.ops import aten

# OpInfo names whose gradients are compared here.
GRAD_SURFACE = frozenset("""
nn.functional.cross_entropy nn.functional.nll_loss nn.functional.mse_loss nn.functional.l1_loss
nn.functional.smooth_l1_loss nn.functional.huber_loss nn.functional.binary_cross_entropy
nn.functional.binary_cross_entropy_with_logits nn.functional.kl_div
nn.functional.soft_margin_loss nn.functional.margin_ranking_loss
nn.functional.hinge_embedding_loss nn.functional.multi_margin_loss
nn.functional.multilabel_margin_loss nn.functional.multilabel_soft_margin_loss
nn.functional.cosine_embedding_loss nn.functional.triplet_margin_loss
nn.functional.triplet_margin_with_distance_loss nn.functional.poisson_nll_loss
nn.functional.gaussian_nll_loss nn.functional.ctc_loss
""".split())

# Second order compared too (the declared backward operators have their own derivatives).
SECOND_ORDER = frozenset("""
nn.functional.mse_loss nn.functional.l1_loss nn.functional.smooth_l1_loss
nn.functional.huber_loss nn.functional.binary_cross_entropy nn.functional.soft_margin_loss
nn.functional.nll_loss nn.functional.cross_entropy nn.functional.kl_div
nn.functional.binary_cross_entropy_with_logits
""".split())

# OpInfo variants left out, with the reason (covered by hand-written cases below).
NOT_YET = {
    ("nn.functional.triplet_margin_with_distance_loss", ""): (
        "its samples pass torch.nn.PairwiseDistance modules as distance_function"
    ),
    ("nn.functional.ctc_loss", ""): (
        "PyTorch's ctc gradient is taken through log_softmax (exp(log_probs) - ...), not of "
        "raw log_probs, so gradcheck of the samples' unnormalised inputs refuses it; "
        "test_ctc_loss compares values and gradients with torch's"
    ),
}

MAX_SAMPLES = 5


def _ours(name):
    return getattr(F, name.rpartition(".")[2])


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE, NOT_YET))
def test_opinfo_gradients_match_torch(info) -> None:
    check_opinfo_grads(info, info.name in SECOND_ORDER, limit=MAX_SAMPLES)


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE, NOT_YET))
def test_opinfo_values_match_torch_float32(info) -> None:
    fn = _ours(info.name)
    compare_samples(fn, info.op, opinfo_samples(info, torch.float32)[:MAX_SAMPLES],
                    rtol=1e-5, atol=1e-5)


# --- hand-written differential cases ---------------------------------------------------------


def _rand(*shape, seed=0, low=-2.0, high=2.0, dtype=torch.float64, transposed=False):
    gen = torch.Generator().manual_seed(seed)
    if transposed:  # a non-contiguous view with these sizes
        x = torch.rand(*reversed(shape), generator=gen, dtype=dtype) * (high - low) + low
        return x.permute(*reversed(range(len(shape))))
    return torch.rand(*shape, generator=gen, dtype=dtype) * (high - low) + low


def _compare(name, inputs, kwargs=None, second_order=False, dtype=torch.float64, leaves=None,
             grad_tol=None):
    """Values of F.<name>(*inputs, **kwargs), then the gradients of the floating inputs (or
    of those at the positions `leaves`)."""
    kwargs = kwargs or {}
    ours_fn, theirs_fn = getattr(F, name), getattr(TF, name)
    kw_o = {k: to_pyaten(v) for k, v in kwargs.items()}
    pair = run_both(lambda: ours_fn(*[from_torch(t) if isinstance(t, torch.Tensor) else t
                                      for t in inputs], **kw_o),
                    lambda: theirs_fn(*inputs, **kwargs))
    assert pair is not None
    tol = 1e-5 if dtype == torch.float32 else 1e-10
    assert_same(*pair, rtol=tol, atol=tol)
    positions = [i for i, t in enumerate(inputs)
                 if isinstance(t, torch.Tensor) and t.is_floating_point()
                 and (leaves is None or i in leaves)]
    grad_inputs = [inputs[i] for i in positions]
    tol = tol if grad_tol is None else grad_tol

    def call(fn, kw, lib_inputs):
        def run(*leaves):
            args = list(lib_inputs)
            for i, leaf in zip(positions, leaves):
                args[i] = leaf
            return fn(*args, **kw)
        return run

    others_o = [from_torch(t) if isinstance(t, torch.Tensor) else t for t in inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_grads(call(ours_fn, kw_o, others_o), call(theirs_fn, kwargs, list(inputs)),
                    grad_inputs, second_order=second_order, rtol=tol, atol=tol)


def _same_errors(cases) -> None:
    """Each (name, args, kwargs): F.<name> raises what torch.nn.functional.<name> raises."""
    for name, args, kwargs in cases:
        def ours(name=name, args=args, kwargs=kwargs):
            return getattr(F, name)(*map(to_pyaten, args),
                                    **{k: to_pyaten(v) for k, v in kwargs.items()})

        def theirs(name=name, args=args, kwargs=kwargs):
            return getattr(TF, name)(*args, **kwargs)

        same_error(ours, theirs)


REDUCTIONS = ("none", "mean", "sum")
DTYPES = (torch.float32, torch.float64)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,kwargs", [
    ("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}),
    ("smooth_l1_loss", {"beta": 0.0}), ("huber_loss", {"delta": 0.7}),
])
def test_regression_losses(name, kwargs, reduction, dtype) -> None:
    x = _rand(4, 5, dtype=dtype, transposed=True)
    y = _rand(4, 5, seed=1, dtype=dtype)
    _compare(name, [x, y], {"reduction": reduction, **kwargs},
             second_order=dtype == torch.float64, dtype=dtype)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_weighted_regression_losses(name) -> None:
    x, y, w = _rand(3, 4), _rand(3, 4, seed=1), _rand(3, 4, seed=2, low=0.1, high=1.0)
    for reduction in REDUCTIONS:
        _compare(name, [x, y], {"reduction": reduction, "weight": w})
    same_error(lambda: getattr(F, name)(from_torch(x), from_torch(y), weight=from_torch(w[0])),
               lambda: getattr(TF, name)(x, y, weight=w[0]))


def test_broadcast_target_warns_as_torch() -> None:
    x, y = _rand(3, 4), _rand(1, 4, seed=1)
    with pytest.warns(UserWarning, match="Using a target size"):
        ours = F.mse_loss(from_torch(x), from_torch(y))
    assert_same(ours, TF.mse_loss(x, y))


@pytest.mark.parametrize("size_average,reduce", [
    (None, False), (False, None), (True, True), (False, True), (True, False),
])
def test_legacy_reduction_arguments(size_average, reduce) -> None:
    x, y = _rand(3, 4), _rand(3, 4, seed=1)
    t = torch.tensor([0, 3, 1])
    for name, args in [("mse_loss", (x, y)), ("l1_loss", (x, y)), ("nll_loss", (x, t)),
                       ("cross_entropy", (x, t)), ("soft_margin_loss", (x, y.sign())),
                       ("kl_div", (x, y.abs()))]:
        with pytest.warns(UserWarning, match="size_average and reduce args"):
            ours = getattr(F, name)(*map(from_torch, args), size_average=size_average,
                                    reduce=reduce)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = getattr(TF, name)(*args, size_average=size_average, reduce=reduce)
        assert_same(ours, theirs)


def test_reduction_errors() -> None:
    x, y = _rand(3, 4), _rand(3, 4, seed=1)
    for name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss",
                 "poisson_nll_loss", "multilabel_soft_margin_loss"):
        same_error(lambda name=name: getattr(F, name)(from_torch(x), from_torch(y),
                                                      reduction="avg"),
                   lambda name=name: getattr(TF, name)(x, y, reduction="avg"))
    with pytest.warns(UserWarning, match="elementwise_mean"):
        ours = F.mse_loss(from_torch(x), from_torch(y), reduction="elementwise_mean")
    assert_same(ours, TF.mse_loss(x, y))


# --- nll_loss and cross_entropy --------------------------------------------------------------


def _targets(shape, classes, seed=0, ignore=None):
    gen = torch.Generator().manual_seed(seed)
    t = torch.randint(0, classes, shape, generator=gen)
    if ignore is not None:
        t.view(-1)[::3] = ignore
    return t


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(5,), (4, 5), (2, 5, 3), (2, 5, 3, 4), (2, 5, 2, 3, 2)])
def test_nll_loss_k_dims(shape, reduction) -> None:
    x = _rand(*shape)
    target_shape = () if len(shape) == 1 else (shape[0], *shape[2:])
    t = _targets(target_shape, shape[0] if len(shape) == 1 else shape[1], ignore=None)
    w = _rand(shape[0] if len(shape) == 1 else shape[1], low=0.2, high=1.0, seed=3)
    _compare("nll_loss", [x, t], {"reduction": reduction}, second_order=True)
    _compare("nll_loss", [x, t], {"reduction": reduction, "weight": w})
    if t.dim():
        ti = _targets(target_shape, shape[1], ignore=2)
        _compare("nll_loss", [x, ti], {"reduction": reduction, "weight": w, "ignore_index": 2})


def test_channels_last_inputs() -> None:
    x = _rand(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    t = _targets((2, 4, 5), 3, ignore=1)
    for reduction in REDUCTIONS:
        # torch's nll_loss2d_backward refuses a channels-last input ("grad_input must be
        # contiguous"): compare with torch's gradient of the contiguous input instead
        kwargs = {"reduction": reduction, "ignore_index": 1}
        assert_same(F.nll_loss(from_torch(x), from_torch(t), **kwargs),
                    TF.nll_loss(x, t, **kwargs), rtol=1e-10, atol=1e-10)
        check_grads(lambda a, k=kwargs: F.nll_loss(a, from_torch(t), **k),
                    lambda a, k=kwargs: TF.nll_loss(a.contiguous(), t, **k), [x])
        _compare("cross_entropy", [x, t], {"reduction": reduction, "label_smoothing": 0.2})
        _compare("mse_loss", [x, _rand(2, 3, 4, 5, seed=1)], {"reduction": reduction})


def test_nll_loss_everything_ignored_is_nan() -> None:
    x, t = _rand(3, 4), torch.full((3,), -100)
    for reduction in REDUCTIONS:
        _compare("nll_loss", [x, t], {"reduction": reduction})


def test_nll_loss_uint8_targets_and_noncontiguous() -> None:
    x = _rand(4, 5, transposed=True)
    _compare("nll_loss", [x, torch.tensor([0, 4, 2, 1], dtype=torch.uint8)])
    _compare("nll_loss", [x, torch.tensor([0, 4, 2, 1, 3, 3, 1, 0])[::2]])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy(reduction, dtype) -> None:
    x = _rand(4, 5, dtype=dtype, transposed=True)
    t = torch.tensor([0, 4, 2, 1])
    w = _rand(5, low=0.2, high=1.0, seed=3, dtype=dtype)
    _compare("cross_entropy", [x, t], {"reduction": reduction}, dtype=dtype,
             second_order=dtype == torch.float64)
    _compare("cross_entropy", [x, t], {"reduction": reduction, "weight": w}, dtype=dtype)
    ti = torch.tensor([0, -100, 2, 1])
    _compare("cross_entropy", [x, ti], {"reduction": reduction, "label_smoothing": 0.2},
             dtype=dtype)
    _compare("cross_entropy", [x, ti], {"reduction": reduction, "label_smoothing": 0.2,
                                        "weight": w}, dtype=dtype)
    probs = _rand(4, 5, seed=4, dtype=dtype).softmax(1)
    _compare("cross_entropy", [x, probs], {"reduction": reduction}, dtype=dtype)
    _compare("cross_entropy", [x, probs], {"reduction": reduction, "weight": w,
                                           "label_smoothing": 0.3}, dtype=dtype)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_k_dims(reduction) -> None:
    x = _rand(2, 3, 4, 5)
    _compare("cross_entropy", [x, _targets((2, 4, 5), 3)], {"reduction": reduction})
    x3 = _rand(2, 3, 4)
    _compare("cross_entropy", [x3, _targets((2, 4), 3, ignore=1)],
             {"reduction": reduction, "ignore_index": 1, "label_smoothing": 0.1})
    _compare("cross_entropy", [x3, _rand(2, 3, 4, seed=5).softmax(1)], {"reduction": reduction})
    _compare("cross_entropy", [_rand(5), torch.tensor(3)], {"reduction": reduction})


def test_cross_entropy_negative_label_smoothing_passes_as_torch() -> None:
    x = _rand(3, 4)
    _compare("cross_entropy", [x, torch.tensor([0, 1, 2])], {"label_smoothing": -0.5})
    _compare("cross_entropy", [x, x.softmax(1)], {"label_smoothing": -0.5})


def test_nll_and_cross_entropy_errors() -> None:
    x = _rand(3, 4)
    cases = [
        ("nll_loss", (x, torch.tensor([0, 1, 5])), {}),
        ("nll_loss", (x, torch.tensor([0, 1, -1])), {}),
        ("nll_loss", (x, torch.tensor([0, 1, 2], dtype=torch.int32)), {}),
        ("nll_loss", (x, torch.tensor([0.0, 1.0, 2.0])), {}),
        ("nll_loss", (x, torch.tensor([0, 1])), {}),
        ("nll_loss", (x, torch.tensor([0, 1, 2])), {"weight": torch.ones(3, dtype=x.dtype)}),
        ("nll_loss", (torch.tensor(1.0), torch.tensor(1)), {}),
        ("nll_loss", (_rand(2, 3, 4, 5, 6), torch.zeros(2, 4, 5, 7, dtype=torch.long)), {}),
        ("nll_loss", (_rand(2, 3, 4), torch.zeros(3, 4, dtype=torch.long)), {}),
        ("nll_loss", (_rand(2, 3, 4, 5), torch.full((2, 4, 5), 7)), {}),
        ("cross_entropy", (x, torch.zeros(3, 4, dtype=torch.int32)), {}),
        ("cross_entropy", (x, x), {"label_smoothing": 1.5}),
        ("cross_entropy", (x, torch.tensor([0, 1, 2])), {"label_smoothing": 1.5}),
        ("cross_entropy", (x, x.softmax(1)), {"ignore_index": 1}),
        ("cross_entropy", (x, x.softmax(1)), {"weight": torch.ones(3, dtype=x.dtype)}),
    ]
    _same_errors(cases)


def test_nll_operators_directly() -> None:
    x, t = _rand(3, 4), torch.tensor([0, 1, 2])
    for reduction in (0, 1, 2):
        ours = aten.nll_loss_forward.default(from_torch(x), from_torch(t), None, reduction, -100)
        assert_same(ours, torch.ops.aten.nll_loss_forward(x, t, None, reduction, -100))
    x4, t3 = _rand(2, 3, 2, 2), _targets((2, 2, 2), 3)
    for reduction in (0, 1, 2):
        ours = aten.nll_loss2d_forward.default(from_torch(x4), from_torch(t3), None, reduction,
                                               -100)
        assert_same(ours, torch.ops.aten.nll_loss2d_forward(x4, t3, None, reduction, -100))
    errors = [
        lambda m: m.ops.aten.nll_loss_forward(m.zeros(2, 3, 4), m.zeros(2, dtype=m.long), None,
                                              1, -100),
        lambda m: m.ops.aten.nll_loss_forward(m.zeros(2, 3), m.zeros(1, 2, dtype=m.long), None,
                                              1, -100),
        lambda m: m.ops.aten.nll_loss2d_forward(m.zeros(2, 3, 4), m.zeros(2, 4, 5, dtype=m.long),
                                                None, 1, -100),
        lambda m: m.ops.aten.nll_loss2d_forward(m.zeros(2, 3, 4, 5), m.zeros(2, 4, dtype=m.long),
                                                None, 1, -100),
        lambda m: m.ops.aten.nll_loss2d_forward(m.zeros(2, 3, 4, 5),
                                                m.zeros(2, 4, 4, dtype=m.long), None, 1, -100),
        lambda m: m.ops.aten.nll_loss2d_forward(m.zeros(2, 3, 4, 5),
                                                m.zeros(2, 4, 5, dtype=m.long), m.ones(2), 1,
                                                -100),
        lambda m: m.ops.aten.nll_loss_forward(m.zeros(2, 3, dtype=m.long),
                                              m.zeros(2, dtype=m.long), None, 1, -100),
    ]
    for case in errors:
        same_error(lambda case=case: case(pyaten), lambda case=case: case(torch))


# --- binary cross entropy --------------------------------------------------------------------


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_cross_entropy(reduction, dtype) -> None:
    x = _rand(4, 5, low=0.05, high=0.95, dtype=dtype, transposed=True)
    y = _rand(4, 5, seed=1, low=0.0, high=1.0, dtype=dtype)
    w = _rand(5, seed=2, low=0.2, high=1.0, dtype=dtype)
    second = dtype == torch.float64
    _compare("binary_cross_entropy", [x, y], {"reduction": reduction}, second_order=second,
             dtype=dtype)
    _compare("binary_cross_entropy", [x, y], {"reduction": reduction, "weight": w},
             second_order=second, dtype=dtype)
    logits = _rand(4, 5, low=-4, high=4, dtype=dtype, transposed=True)
    _compare("binary_cross_entropy_with_logits", [logits, y], {"reduction": reduction},
             second_order=second, dtype=dtype)
    _compare("binary_cross_entropy_with_logits", [logits, y],
             {"reduction": reduction, "weight": w, "pos_weight": w + 0.5}, dtype=dtype)


def test_binary_cross_entropy_edges_and_errors() -> None:
    x = torch.tensor([0.0, 1.0, 0.5], dtype=torch.float64)
    y = torch.tensor([1.0, 0.0, 0.5], dtype=torch.float64)
    # log clamped at -100; the gradient at 0 and 1 is about 1e11 (divided by a clamped 1e-12)
    _compare("binary_cross_entropy", [x, y], {"reduction": "none"}, grad_tol=1e-7)
    p = _rand(3, 4, low=0.1, high=0.9)
    cases = [
        ("binary_cross_entropy", (p, p[:2]), {}),
        ("binary_cross_entropy", (p * 4 - 2, p), {}),
        ("binary_cross_entropy", (p, p.float()), {}),
        ("binary_cross_entropy", (p, p), {"weight": torch.ones(2, dtype=p.dtype)}),
        ("binary_cross_entropy_with_logits", (p, p[:2]), {}),
    ]
    _same_errors(cases)


# --- the other losses ------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_other_losses(reduction) -> None:
    x, y = _rand(4, 5, transposed=True), _rand(4, 5, seed=1)
    sign = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    r = {"reduction": reduction}
    _compare("kl_div", [x.log_softmax(1), y.softmax(1)], r, second_order=True)
    _compare("kl_div", [x, y], {**r, "log_target": True})
    _compare("soft_margin_loss", [x, y.sign()], r, second_order=True, leaves=(0,))
    _compare("multilabel_soft_margin_loss", [x, (y > 0).double()], r)
    _compare("multilabel_soft_margin_loss", [x, (y > 0).double()],
             {**r, "weight": _rand(5, seed=3, low=0.1, high=1.0)})
    _compare("margin_ranking_loss", [x[:, 0], y[:, 0], sign], {**r, "margin": 0.3})
    _compare("hinge_embedding_loss", [x, y.sign()], {**r, "margin": 0.5})
    _compare("cosine_embedding_loss", [x, y, sign], {**r, "margin": 0.1})
    _compare("triplet_margin_loss", [x, y, _rand(4, 5, seed=5)], {**r, "swap": True, "p": 1.5})
    _compare("triplet_margin_with_distance_loss", [x, y, _rand(4, 5, seed=5)],
             {"reduction": reduction, "swap": True})
    _compare("poisson_nll_loss", [x, y.abs() * 3], {**r, "full": True})
    _compare("poisson_nll_loss", [x.abs() + 0.1, y.abs() * 3], {**r, "log_input": False})
    _compare("gaussian_nll_loss", [x, y, y.abs() + 0.1], {**r, "full": True})
    _compare("gaussian_nll_loss", [x, y, y[:, 0].abs() + 0.1], r)
    t = torch.tensor([0, 4, 2, 1])
    _compare("multi_margin_loss", [x, t], r)
    _compare("multi_margin_loss", [x, t], {**r, "p": 2, "margin": 0.7,
                                           "weight": _rand(5, seed=6, low=0.1, high=1.0)})
    _compare("multi_margin_loss", [x[0], t[0]], r)
    labels = torch.tensor([[1, -1, 0, 2, 3], [4, 3, 2, 1, 0], [0, 2, -1, 4, 4], [-1, 0, 1, 2, 3]])
    _compare("multilabel_margin_loss", [x, labels], r)
    _compare("multilabel_margin_loss", [x[0], labels[0]], r)


def test_kl_div_batchmean() -> None:
    x, y = _rand(4, 5), _rand(4, 5, seed=1)
    _compare("kl_div", [x.log_softmax(1), y.softmax(1)], {"reduction": "batchmean"})
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(from_torch(x), from_torch(y))


def test_other_loss_errors() -> None:
    x, y = _rand(3, 4), _rand(3, 4, seed=1)
    t = torch.tensor([0, 1, 2])
    cases = [
        ("smooth_l1_loss", (x, y), {"beta": -1.0}),
        ("huber_loss", (x, y), {"delta": 0.0}),
        ("multi_margin_loss", (x, t), {"p": 3}),
        ("multi_margin_loss", (x, t[:2]), {}),
        ("multi_margin_loss", (x, t + 5), {}),
        ("multi_margin_loss", (x, t), {"weight": torch.ones(3, dtype=x.dtype)}),
        ("multi_margin_loss", (x, t), {"weight": torch.ones(1, 4, dtype=x.dtype)}),
        ("multi_margin_loss", (_rand(2, 3, 4), t), {}),
        ("multilabel_margin_loss", (x, t), {}),
        ("multilabel_margin_loss", (x, torch.full((3, 4), 10)), {}),
        ("margin_ranking_loss", (x, y[0], t.double()), {}),
        ("cosine_embedding_loss", (x, y, torch.ones(3, 1)), {}),
        ("cosine_embedding_loss", (x[0], y[0], torch.ones(3)), {}),
        ("cosine_embedding_loss", (x, y, torch.tensor(1.0)), {}),
        ("triplet_margin_loss", (x, y, y), {"margin": 0.0}),
        ("triplet_margin_loss", (x, y, y[0]), {}),
        ("triplet_margin_with_distance_loss", (x, y, y), {"reduction": "avg"}),
        ("gaussian_nll_loss", (x, y, -y.abs()), {}),
        ("gaussian_nll_loss", (x, y, torch.ones(2, dtype=x.dtype)), {}),
        ("gaussian_nll_loss", (x, y, -1.0), {}),
    ]
    _same_errors(cases)


def test_dtype_errors() -> None:
    a = torch.ones(3, dtype=torch.long)
    for op in ("mse_loss", "smooth_l1_loss", "huber_loss"):
        same_error(lambda op=op: getattr(aten, op).default(from_torch(a), from_torch(a)),
                   lambda op=op: getattr(torch.ops.aten, op)(a, a))
    same_error(lambda: aten.binary_cross_entropy.default(from_torch(a), from_torch(a)),
               lambda: torch.ops.aten.binary_cross_entropy(a, a))


# --- declared operators: out=, Meta shapes, double backward of the helpers -------------------


def test_out_variants() -> None:
    x, y = _rand(3, 4, low=0.1, high=0.9), _rand(3, 4, seed=1, low=0.1, high=0.9)
    g = _rand(3, 4, seed=2)
    calls = [
        ("mse_loss", (x, y, 0)), ("smooth_l1_loss", (x, y, 2, 0.5)), ("huber_loss", (x, y, 1, 0.3)),
        ("binary_cross_entropy", (x, y, None, 0)), ("soft_margin_loss", (x, y, 1)),
        ("multi_margin_loss", (x, torch.tensor([0, 3, 1]), 1, 1.0, None, 0)),
        ("multilabel_margin_loss", (x, torch.tensor([[0, 3, -1, 1]] * 3), 1)),
        ("mse_loss_backward", (g, x, y, 0)),
    ]
    for name, args in calls:
        # torch's binary_cross_entropy.out writes through a squeezed view of `out`, so an
        # empty `out` comes back unresized: give it the right size.
        size = (3, 4) if name == "binary_cross_entropy" else (0,)
        out_o = pyaten.empty(size, dtype=pyaten.float64)
        out_t = torch.empty(size, dtype=torch.float64)
        overload = next(o for o in getattr(torch.ops.aten, name).overloads() if o != "default")
        key = "grad_input" if name.endswith("backward") else "out"
        ours = getattr(getattr(aten, name), overload)(*map(to_pyaten, args), **{key: out_o})
        theirs = getattr(getattr(torch.ops.aten, name), overload)(*args, **{key: out_t})
        assert ours is out_o
        assert_same(ours, theirs)


META_CALLS = [
    ("mse_loss", lambda m, x, y, g, t: (x, y, 0)),
    ("mse_loss", lambda m, x, y, g, t: (x, y, 1)),
    ("mse_loss_backward", lambda m, x, y, g, t: (g, x, y, 0)),
    ("smooth_l1_loss", lambda m, x, y, g, t: (x, y, 2, 0.5)),
    ("smooth_l1_loss_backward", lambda m, x, y, g, t: (g, x, y, 0, 0.5)),
    ("huber_loss", lambda m, x, y, g, t: (x, y, 0, 1.0)),
    ("huber_loss", lambda m, x, y, g, t: (x, y, 1, 1.0)),
    ("huber_loss_backward", lambda m, x, y, g, t: (g, x, y, 0, 1.0)),
    ("binary_cross_entropy", lambda m, x, y, g, t: (x, y, None, 0)),
    ("binary_cross_entropy", lambda m, x, y, g, t: (x, y, None, 1)),
    ("binary_cross_entropy_backward", lambda m, x, y, g, t: (g, x, y, None, 1)),
    ("binary_cross_entropy_with_logits", lambda m, x, y, g, t: (x, y, None, None, 0)),
    ("soft_margin_loss", lambda m, x, y, g, t: (x, y, 1)),
    ("soft_margin_loss_backward", lambda m, x, y, g, t: (g, x, y, 0)),
    ("nll_loss_forward", lambda m, x, y, g, t: (x, t, None, 0, -100)),
    ("nll_loss_forward", lambda m, x, y, g, t: (x, t, None, 1, -100)),
    ("nll_loss_backward", lambda m, x, y, g, t: (g.sum(), x, t, None, 1, -100, g.sum())),
    ("nll_loss2d_forward", lambda m, x, y, g, t: (x.reshape(1, 3, 2, 2),
                                                  t.reshape(1, 3, 1)[:, :2].expand(1, 2, 2),
                                                  None, 0, -100)),
    ("nll_loss2d_backward", lambda m, x, y, g, t: (g.sum(), x.reshape(1, 3, 2, 2),
                                                   t.reshape(1, 3, 1)[:, :2].expand(1, 2, 2),
                                                   None, 1, -100, g.sum())),
    ("multi_margin_loss", lambda m, x, y, g, t: (x, t, 1, 1.0, None, 0)),
    ("multilabel_margin_loss_forward", lambda m, x, y, g, t: (x, m.zeros(3, 4, dtype=m.long,
                                                                             device=x.device), 0)),
    ("cross_entropy_loss", lambda m, x, y, g, t: (x, t, None, 1, -100, 0.0)),
    ("nll_loss_nd", lambda m, x, y, g, t: (x, t, None, 0, -100)),
    ("l1_loss", lambda m, x, y, g, t: (x, y, 0)),
    ("kl_div", lambda m, x, y, g, t: (x, y, 2)),
    ("margin_ranking_loss", lambda m, x, y, g, t: (x, y, g, 0.5, 0)),
    ("hinge_embedding_loss", lambda m, x, y, g, t: (x, y, 1.0, 1)),
    ("cosine_embedding_loss", lambda m, x, y, g, t: (x, y, g[:, 0], 0.0, 0)),
    ("triplet_margin_loss", lambda m, x, y, g, t: (x, y, g, 1.0, 2.0, 1e-6, True, 0)),
    ("poisson_nll_loss", lambda m, x, y, g, t: (x, y, True, True, 1e-8, 0)),
    ("_ctc_loss", lambda m, x, y, g, t: (x.reshape(3, 2, 2), m.zeros(2, 1, dtype=m.long,
                                                                       device=x.device),
                                         [3, 2], [1, 1], 0, False)),
    ("ctc_loss.IntList", lambda m, x, y, g, t: (x.reshape(3, 2, 2), m.zeros(2, 1, dtype=m.long,
                                                                      device=x.device),
                                        [3, 2], [1, 1], 0, 1, False)),
]


@pytest.mark.parametrize("name,args", META_CALLS, ids=[c[0] for c in META_CALLS])
def test_meta_shapes(name, args) -> None:
    results = []
    for m in (pyaten, torch):
        x = m.empty(3, 4, device="meta")
        y = m.empty(3, 4, device="meta")
        g = m.empty(3, 4, device="meta")
        t = m.empty(3, dtype=m.long, device="meta")
        op, _, overload = name.partition(".")
        result = getattr(getattr(m.ops.aten, op), overload or "default")(*args(m, x, y, g, t))
        results.append(result if isinstance(result, tuple) else (result,))
    for o, t in zip(*results):
        assert o.device.type == "meta"
        assert tuple(o.shape) == tuple(t.shape) and str(o.dtype)[7:] == str(t.dtype)[6:], name


@pytest.mark.parametrize("name", ["smooth_l1_loss", "huber_loss", "mse_loss", "soft_margin_loss"])
def test_backward_helpers_second_order(name) -> None:
    x, y = _rand(3, 4), _rand(3, 4, seed=1)
    extra = {"smooth_l1_loss": (0.5,), "huber_loss": (0.5,)}.get(name, ())
    ours_op = getattr(aten, f"{name}_backward").default
    theirs_op = getattr(torch.ops.aten, f"{name}_backward")
    for reduction in (0, 1, 2):
        g = _rand(3, 4, seed=2) if reduction == 0 else _rand(1, seed=2)[0]
        if name == "soft_margin_loss":  # target is not differentiable, as in PyTorch
            check_grads(lambda a, b, r=reduction: ours_op(a, b, from_torch(y), r),
                        lambda a, b, r=reduction: theirs_op(a, b, y, r), [g, x])
            continue
        check_grads(lambda a, b, c, r=reduction: ours_op(a, b, c, r, *extra),
                    lambda a, b, c, r=reduction: theirs_op(a, b, c, r, *extra), [g, x, y])


# --- ctc_loss --------------------------------------------------------------------------------


def _ctc_inputs(dtype=torch.float64):
    log_probs = _rand(7, 3, 5, dtype=dtype).log_softmax(2)
    targets = torch.tensor([[1, 2, 3], [2, 2, 4], [4, 1, 1]])
    return log_probs, targets, torch.tensor([7, 5, 6]), torch.tensor([3, 2, 0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_ctc_loss(reduction, dtype) -> None:
    log_probs, targets, inputs, lengths = _ctc_inputs(dtype)
    for zero_infinity in (False, True):
        _compare("ctc_loss", [log_probs, targets, inputs, lengths],
                 {"reduction": reduction, "zero_infinity": zero_infinity}, dtype=dtype)
    concatenated = torch.tensor([1, 2, 3, 2, 2], dtype=torch.int32)
    _compare("ctc_loss", [log_probs, concatenated, torch.tensor([7, 1, 6]), lengths],
             {"reduction": reduction, "zero_infinity": True, "blank": 0}, dtype=dtype)
    _compare("ctc_loss", [log_probs[:, 0], targets[0], torch.tensor(7), torch.tensor(3)],
             {"reduction": reduction}, dtype=dtype)


def test_ctc_loss_errors() -> None:
    lp = _rand(5, 2, 4).log_softmax(2)
    t = torch.tensor([[1, 2], [1, 1]])
    cases = [
        (lp, t.float(), [5, 4], [2, 1], 0), (lp[0], t, [5, 4], [2, 1], 0),
        (lp, t, [5, 4], [2, 1], 7), (lp, t, [5], [2, 1], 0), (lp, t, [5, 4], [2], 0),
        (lp, t, [6, 4], [2, 1], 0), (lp, t, [-1, 4], [2, 1], 0), (lp, t, [5, 4], [3, 1], 0),
        (lp, t, [5, 4], [-1, 1], 0), (lp, torch.tensor([1, 2, 1]), [5, 4], [2, 2], 0),
        (lp, t[None], [5, 4], [2, 2], 0), (lp.float().half(), t, [5, 4], [2, 1], 0),
    ]
    for log_probs, targets, inputs, lengths, blank in cases:
        same_error(
            lambda a=log_probs, b=targets, c=inputs, d=lengths, e=blank:
                aten._ctc_loss.default(from_torch(a), from_torch(b), c, d, e),
            lambda a=log_probs, b=targets, c=inputs, d=lengths, e=blank:
                torch.ops.aten._ctc_loss(a, b, c, d, e))
    for inputs, lengths in ((torch.tensor([5.0, 4.0]), torch.tensor([2, 1])),
                            (torch.tensor([5, 4]), torch.tensor([2.0, 1.0]))):
        same_error(lambda i=inputs, n=lengths: F.ctc_loss(from_torch(lp), from_torch(t),
                                                          from_torch(i), from_torch(n)),
                   lambda i=inputs, n=lengths: TF.ctc_loss(lp, t, i, n))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision(dtype) -> None:
    x, y = _rand(4, 5, low=0.05, high=0.95), _rand(4, 5, seed=1, low=0.05, high=0.95)
    t = torch.tensor([0, 1, 4, 2])
    cases = [
        ("mse_loss", (x, y)), ("l1_loss", (x, y)), ("smooth_l1_loss", (x, y)),
        ("huber_loss", (x, y)), ("nll_loss", (x, t)), ("cross_entropy", (x, t)),
        ("binary_cross_entropy", (x, y)), ("binary_cross_entropy_with_logits", (x, y)),
        ("kl_div", (x, y)), ("soft_margin_loss", (x, y)), ("multi_margin_loss", (x, t)),
        ("multilabel_margin_loss", (x, torch.tensor([[1, -1, 0, 0, 0]] * 4))),
        ("nll_loss", (_rand(2, 3, 2, 2), torch.zeros(2, 2, 2, dtype=torch.long))),
    ]
    for name, args in cases:
        args = [a.to(dtype) if a.is_floating_point() else a for a in args]
        pair = run_both(lambda n=name, a=args: getattr(F, n)(*map(from_torch, a)),
                        lambda n=name, a=args: getattr(TF, n)(*a))
        if pair is not None:
            assert_same(*pair, rtol=2e-2, atol=2e-2)
