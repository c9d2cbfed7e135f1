"""pyaten.nn.functional's normalisation, dropout and embedding against torch.nn.functional:
values and gradients (float32 and float64), OpInfo samples, non-contiguous and channels-last
inputs, running statistics updated in place, dropout statistics and `manual_seed`
reproducibility, PyTorch's errors, and Meta shapes of every declared operator
(`native_layer_norm`, `native_batch_norm`, `native_group_norm`, `native_dropout`,
`embedding_dense_backward`, ...).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from _grad_helpers import (
    check_grads,
    check_opinfo_grads,
    grad_samples,
    opinfo_grad_cases,
    run_grad_sample,
)
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

# OpInfo names whose gradients are compared here (the random ones are tested below instead;
# nn.functional.embedding's OpInfo calls its op with (weight, indices) swapped, so it is
# compared by test_embedding).
GRAD_SURFACE = frozenset("""
native_layer_norm native_batch_norm _native_batch_norm_legit native_group_norm
native_dropout_backward nn.functional.layer_norm nn.functional.batch_norm
nn.functional.group_norm nn.functional.instance_norm nn.functional.rms_norm
nn.functional.local_response_norm nn.functional.normalize
""".split())

# Second order compared too (composites, and embedding whose backward has its own entry).
SECOND_ORDER = frozenset("""
nn.functional.rms_norm nn.functional.local_response_norm nn.functional.normalize
native_dropout_backward
""".split())

# Values of these are compared on float32 OpInfo samples.
VALUE_SURFACE = GRAD_SURFACE | {"nn.functional.one_hot"}

MAX_SAMPLES = 3
DTYPES = (torch.float32, torch.float64)


def _ours(info):
    from _grad_helpers import _pyaten_callable
    return _pyaten_callable(info)


# Their mean/invstd outputs are not differentiable (PyTorch's formulas read only `grad`), so
# gradcheck, which differentiates every output, is run on the normalised output alone.
OUTPUT0_ONLY = frozenset({"native_layer_norm", "native_batch_norm", "_native_batch_norm_legit",
                          "native_group_norm"})


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE))
def test_opinfo_gradients_match_torch(info) -> None:
    if info.name not in OUTPUT0_ONLY:
        check_opinfo_grads(info, info.name in SECOND_ORDER, limit=MAX_SAMPLES)
        return
    samples = grad_samples(info, MAX_SAMPLES)
    assert samples
    for sample in samples:
        run_grad_sample(info, sample, False, gradcheck=False)
    first = samples[0]
    fn = _ours(info)
    args = [to_pyaten(a) for a in first.args]
    kwargs = {k: to_pyaten(v) for k, v in first.kwargs.items()}
    x = to_pyaten(first.input.detach()).requires_grad_(True)
    assert pyaten.autograd.gradcheck(lambda t: fn(t, *args, **kwargs)[0], [x], fast_mode=True)


def _value_cases():
    from _grad_helpers import _op_db
    return [pytest.param(i, id=i.name + (f".{i.variant_test_name}" if i.variant_test_name
                                          else ""))
            for i in _op_db() if i.name in VALUE_SURFACE]


@pytest.mark.parametrize("info", _value_cases())
def test_opinfo_values_match_torch_float32(info) -> None:
    fn = _ours(info)
    dtype = torch.int64 if info.name == "nn.functional.one_hot" else torch.float32
    compare_samples(fn, info.op, opinfo_samples(info, dtype)[:MAX_SAMPLES], rtol=1e-4, atol=1e-5)


# --- hand-written differential cases ---------------------------------------------------------


def _rand(*shape, seed=0, dtype=torch.float64, transposed=False, channels_last=False):
    gen = torch.Generator().manual_seed(seed)
    if transposed:
        x = torch.randn(*reversed(shape), generator=gen, dtype=dtype)
        return x.permute(*reversed(range(len(shape))))
    x = torch.randn(*shape, generator=gen, dtype=dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    return x


def _compare(ours_fn, theirs_fn, inputs, kwargs=None, dtype=torch.float64, second_order=False,
             grads=True, strides=False):
    kwargs = kwargs or {}
    kw_o = {k: to_pyaten(v) for k, v in kwargs.items()}
    pair = run_both(lambda: ours_fn(*[to_pyaten(t) for t in inputs], **kw_o),
                    lambda: theirs_fn(*inputs, **kwargs))
    assert pair is not None
    tol = 2e-5 if dtype == torch.float32 else 1e-10
    assert_same(*pair, rtol=tol, atol=tol, strides=strides)
    if not grads:
        return
    positions = [i for i, t in enumerate(inputs)
                 if isinstance(t, torch.Tensor) and t.is_floating_point()]

    def call(fn, kw, lib_inputs):
        def run(*leaves):
            args = list(lib_inputs)
            for i, leaf in zip(positions, leaves):
                args[i] = leaf
            return fn(*args, **kw)
        return run

    check_grads(call(ours_fn, kw_o, [to_pyaten(t) for t in inputs]),
                call(theirs_fn, kwargs, list(inputs)),
                [inputs[i] for i in positions], second_order=second_order,
                rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("transposed", [False, True])
def test_layer_norm(dtype, transposed) -> None:
    x = _rand(4, 3, 6, dtype=dtype, transposed=transposed)
    w, b = _rand(3, 6, seed=1, dtype=dtype), _rand(3, 6, seed=2, dtype=dtype)
    _compare(F.layer_norm, TF.layer_norm, [x, [3, 6], w, b], dtype=dtype)
    _compare(F.layer_norm, TF.layer_norm, [x, [6]], {"eps": 1e-3}, dtype=dtype)
    _compare(pyaten.native_layer_norm, torch.native_layer_norm, [x, [6], None, None, 1e-5],
             dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "channels_last"])
def test_batch_norm_training_updates_running_stats(dtype, layout) -> None:
    x = _rand(5, 3, 4, 2, dtype=dtype, transposed=layout == "transposed",
              channels_last=layout == "channels_last")
    w, b = _rand(3, seed=1, dtype=dtype), _rand(3, seed=2, dtype=dtype)
    rm_t, rv_t = torch.rand(3, dtype=dtype), torch.rand(3, dtype=dtype) + 0.5
    rm_o, rv_o = from_torch(rm_t), from_torch(rv_t)
    ours = F.batch_norm(to_pyaten(x), rm_o, rv_o, to_pyaten(w), to_pyaten(b), training=True,
                        momentum=0.3)
    theirs = TF.batch_norm(x, rm_t, rv_t, w, b, training=True, momentum=0.3)
    tol = 2e-5 if dtype == torch.float32 else 1e-10
    assert_same(ours, theirs, rtol=tol, atol=tol, strides=layout == "channels_last")
    assert_same(rm_o, rm_t, rtol=tol, atol=tol)
    assert_same(rv_o, rv_t, rtol=tol, atol=tol)
    _compare(lambda x_, w_, b_: F.batch_norm(x_, None, None, w_, b_, training=True),
             lambda x_, w_, b_: TF.batch_norm(x_, None, None, w_, b_, training=True),
             [x, w, b], dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_norm_eval(dtype) -> None:
    x = _rand(4, 3, 5, dtype=dtype)
    rm, rv = torch.rand(3, dtype=dtype), torch.rand(3, dtype=dtype) + 0.5
    w, b = _rand(3, seed=1, dtype=dtype), _rand(3, seed=2, dtype=dtype)
    _compare(lambda x_, w_, b_: F.batch_norm(x_, to_pyaten(rm), to_pyaten(rv), w_, b_),
             lambda x_, w_, b_: TF.batch_norm(x_, rm, rv, w_, b_), [x, w, b], dtype=dtype)
    _compare(F.batch_norm, TF.batch_norm, [_rand(6, 3, dtype=dtype), rm, rv],
             {"training": False, "eps": 1e-3}, dtype=dtype, grads=False)


@pytest.mark.parametrize("dtype", DTYPES)
def test_group_and_instance_norm(dtype) -> None:
    x = _rand(3, 6, 4, 2, dtype=dtype, transposed=True)
    w, b = _rand(6, seed=1, dtype=dtype), _rand(6, seed=2, dtype=dtype)
    _compare(F.group_norm, TF.group_norm, [x, 3, w, b], dtype=dtype)
    _compare(F.group_norm, TF.group_norm, [x, 2], {"eps": 1e-2}, dtype=dtype)
    _compare(F.instance_norm, TF.instance_norm, [x], {"weight": w, "bias": b}, dtype=dtype)
    rm, rv = torch.zeros(6, dtype=dtype), torch.ones(6, dtype=dtype)
    rm_o, rv_o = from_torch(rm), from_torch(rv)
    ours = F.instance_norm(to_pyaten(x), rm_o, rv_o, momentum=0.2)
    theirs = TF.instance_norm(x, rm, rv, momentum=0.2)
    assert_same(ours, theirs, rtol=1e-5, atol=1e-5)
    assert_same(rm_o, rm, rtol=1e-5, atol=1e-5)
    assert_same(rv_o, rv, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_lrn_normalize(dtype) -> None:
    x = _rand(3, 5, 4, dtype=dtype, transposed=True)
    _compare(F.rms_norm, TF.rms_norm, [x, [4], _rand(4, seed=3, dtype=dtype)], dtype=dtype,
             second_order=True)
    _compare(F.rms_norm, TF.rms_norm, [x, [5, 4]], {"eps": 1e-3}, dtype=dtype)
    _compare(F.local_response_norm, TF.local_response_norm, [x, 3], dtype=dtype)
    _compare(F.local_response_norm, TF.local_response_norm, [_rand(2, 6, 3, 3, dtype=dtype), 4],
             {"alpha": 1e-2, "beta": 0.5, "k": 2.0}, dtype=dtype)
    for p, dim in ((2.0, 1), (1.0, -1), (3.0, 0)):
        _compare(F.normalize, TF.normalize, [x], {"p": p, "dim": dim}, dtype=dtype,
                 second_order=True)


def test_normalize_out() -> None:
    x = _rand(3, 4)
    out_o, out_t = pyaten.empty(0, dtype=pyaten.float64), torch.empty(0, dtype=torch.float64)
    F.normalize(to_pyaten(x), out=out_o)
    TF.normalize(x, out=out_t)
    assert_same(out_o, out_t)


# --- dropout ---------------------------------------------------------------------------------


DROPOUTS = ("dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d",
            "dropout3d")
_SHAPES = {"dropout1d": (4, 6, 16)}


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_off_and_p0_return_input(name) -> None:
    x = pyaten.randn(*_SHAPES.get(name, (2, 3, 4, 5)))
    fn = getattr(F, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert (fn(x, 0.5, training=False) == x).all()
        assert (fn(x, 0.0, training=True) == x).all()
        assert (fn(x, 1.0, training=True) == (0 if "alpha" not in name else
                                              fn(x, 1.0, training=True))).all()


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_manual_seed_reproduces_and_inplace(name) -> None:
    fn = getattr(F, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shape = _SHAPES.get(name, (4, 6, 8, 2))
        pyaten.manual_seed(3)
        a = fn(pyaten.ones(*shape), 0.4, training=True)
        pyaten.manual_seed(3)
        b = fn(pyaten.ones(*shape), 0.4, training=True)
        assert (a == b).all()
        pyaten.manual_seed(3)
        x = pyaten.ones(*shape)
        c = fn(x, 0.4, training=True, inplace=True)
        assert (c == a).all() and (x == a).all()


def test_dropout_statistics_and_gradient() -> None:
    pyaten.manual_seed(0)
    x = pyaten.ones(200, 200, requires_grad=True)
    y = F.dropout(x, 0.3)
    kept = (y != 0).float().mean().item()
    assert abs(kept - 0.7) < 0.01
    values = np.unique(y.detach().numpy())
    assert len(values) == 2 and values[0] == 0 and np.isclose(values[1], 1 / 0.7)
    (g,) = pyaten.autograd.grad(y.sum(), [x])
    assert (g == y.detach()).all()   # d(x * mask / 0.7)/dx = mask / 0.7
    # channel-wise: whole channels are zeroed together
    z = F.dropout2d(pyaten.ones(8, 16, 3, 3), 0.5)
    per_channel = z.reshape(8, 16, 9)
    assert ((per_channel == 0).all(-1) | (per_channel != 0).all(-1)).all()


def test_native_dropout() -> None:
    pyaten.manual_seed(1)
    x = pyaten.randn(50, 40, dtype=pyaten.float64, requires_grad=True)
    out, mask = pyaten.native_dropout(x, 0.25, True)
    assert mask.dtype == pyaten.bool
    ref = x.detach() * mask / 0.75
    assert pyaten.allclose(out, ref)
    (g,) = pyaten.autograd.grad(out.sum(), [x])
    assert pyaten.allclose(g, mask.double() / 0.75)
    out, mask = pyaten.native_dropout(x, 0.25, False)
    assert (out == x).all() and mask.all()


def test_dropout_errors() -> None:
    x = torch.randn(2, 3)
    for name in ("dropout", "alpha_dropout", "dropout1d", "feature_alpha_dropout"):
        same_error(lambda n=name: getattr(F, n)(to_pyaten(x), 1.5),
                   lambda n=name: getattr(TF, n)(x, 1.5))
    same_error(lambda: F.dropout1d(pyaten.ones(2, 3, 4, 5)), lambda: TF.dropout1d(
        torch.ones(2, 3, 4, 5)))
    same_error(lambda: F.feature_alpha_dropout(pyaten.ones(3), 0.5, True),
               lambda: TF.feature_alpha_dropout(torch.ones(3), 0.5, True))


# --- embedding -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding(dtype) -> None:
    w = _rand(10, 4, dtype=dtype)
    idx = torch.tensor([[1, 2, 4, 1], [4, 3, 2, 9]])
    for kwargs in ({}, {"padding_idx": 1}, {"padding_idx": -1}, {"scale_grad_by_freq": True},
                   {"padding_idx": 2, "scale_grad_by_freq": True}):
        _compare(lambda w_, **k: F.embedding(to_pyaten(idx), w_, **k),
                 lambda w_, **k: TF.embedding(idx, w_, **k), [w], kwargs, dtype=dtype,
                 second_order=True)
    _compare(lambda w_: F.embedding(to_pyaten(idx[0]).int(), w_),
             lambda w_: TF.embedding(idx[0].int(), w_), [w], dtype=dtype)


def test_embedding_max_norm_renormalises_in_place() -> None:
    w_t = _rand(10, 4) * 3
    w_o = from_torch(w_t)
    idx = torch.tensor([[1, 2, 4, 1], [4, 3, 2, 9]])
    for norm_type in (2.0, 1.0):
        ours = F.embedding(to_pyaten(idx), w_o, max_norm=1.5, norm_type=norm_type)
        theirs = TF.embedding(idx, w_t, max_norm=1.5, norm_type=norm_type)
        assert_same(ours, theirs)
        assert_same(w_o, w_t)


def test_embedding_errors() -> None:
    w = torch.randn(3, 2)
    cases = [
        (lambda: F.embedding(pyaten.tensor([5]), to_pyaten(w)),
         lambda: TF.embedding(torch.tensor([5]), w)),
        (lambda: F.embedding(pyaten.tensor([1.0]), to_pyaten(w)),
         lambda: TF.embedding(torch.tensor([1.0]), w)),
        (lambda: F.embedding(pyaten.tensor([1]), to_pyaten(w), padding_idx=5),
         lambda: TF.embedding(torch.tensor([1]), w, padding_idx=5)),
        (lambda: F.embedding(pyaten.tensor([1]), to_pyaten(w), padding_idx=-4),
         lambda: TF.embedding(torch.tensor([1]), w, padding_idx=-4)),
    ]
    for ours, theirs in cases:
        same_error(ours, theirs)


def test_one_hot() -> None:
    t = torch.tensor([[0, 3], [1, 2]])
    assert_same(F.one_hot(to_pyaten(t)), TF.one_hot(t))
    assert_same(F.one_hot(to_pyaten(t), 6), TF.one_hot(t, 6))
    assert_same(F.one_hot(to_pyaten(t.t())), TF.one_hot(t.t()))
    assert_same(F.one_hot(pyaten.zeros(0, dtype=pyaten.int64), 3),
                TF.one_hot(torch.zeros(0, dtype=torch.int64), 3))
    for args in ((torch.tensor([3]), 2), (torch.tensor([-1]),), (torch.tensor([1.0]),),
                 (torch.zeros(0, dtype=torch.int64),)):
        same_error(lambda a=args: F.one_hot(*map(to_pyaten, a)), lambda a=args: TF.one_hot(*a))


# --- errors ----------------------------------------------------------------------------------


def test_normalisation_errors() -> None:
    x = torch.randn(4, 3, 5)
    cases = [
        ("layer_norm", (x, []), {}),
        ("layer_norm", (x, [5], torch.ones(4)), {}),
        ("layer_norm", (x, [5], None, torch.ones(4)), {}),
        ("layer_norm", (x, [6]), {}),
        ("batch_norm", (x, torch.zeros(4), torch.ones(3)), {}),
        ("batch_norm", (x, None, None), {"training": True, "weight": torch.ones(4)}),
        ("batch_norm", (x, None, None), {"training": True, "eps": 0.0}),
        ("group_norm", (x, 2), {}),
        ("group_norm", (x, 3, torch.ones(2)), {}),
        ("group_norm", (x, 3, None, torch.ones(2)), {}),
        ("group_norm", (torch.randn(3), 1), {}),
        ("local_response_norm", (torch.randn(3, 4), 2), {}),
    ]
    for name, args, kwargs in cases:
        same_error(lambda n=name, a=args, k=kwargs: getattr(F, n)(
            *map(to_pyaten, a), **{key: to_pyaten(v) for key, v in k.items()}),
            lambda n=name, a=args, k=kwargs: getattr(TF, n)(*a, **k))


def test_batch_size_one_refused_in_training() -> None:
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when "
                                         "training"):
        F.batch_norm(pyaten.randn(1, 3), None, None, training=True)
    with pytest.raises(ValueError, match="Expected more than 1 spatial element"):
        F.instance_norm(pyaten.randn(2, 3, 1))


# --- Meta ------------------------------------------------------------------------------------


def _meta_pair(op_ours, op_theirs, *args):
    conv_o = [a.to("meta") if isinstance(a, pyaten.Tensor) else a for a in args]
    conv_t = [torch.from_numpy(a.numpy()).to("meta") if isinstance(a, pyaten.Tensor) else a
              for a in args]
    ours, theirs = op_ours(*conv_o), op_theirs(*conv_t)
    ours = ours if isinstance(ours, (tuple, list)) else (ours,)
    theirs = theirs if isinstance(theirs, (tuple, list)) else (theirs,)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        if t is None:
            assert o is None
            continue
        assert o.device.type == "meta"
        assert tuple(o.shape) == tuple(t.shape), (op_ours, o.shape, t.shape)
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]


def test_meta_shapes_of_declared_operators() -> None:
    x = pyaten.randn(4, 3, 5)
    c = pyaten.randn(3)
    ta = torch.ops.aten
    _meta_pair(aten.native_layer_norm.default, ta.native_layer_norm.default, x, [5], None,
               None, 1e-5)
    mean, rstd = pyaten.randn(4, 3, 1), pyaten.randn(4, 3, 1)
    _meta_pair(aten.native_layer_norm_backward.default, ta.native_layer_norm_backward.default,
               x, x, [5], mean, rstd, pyaten.randn(5), pyaten.randn(5), [True, True, True])
    for training in (True, False):
        _meta_pair(aten.native_batch_norm.default, ta.native_batch_norm.default, x, c, c,
                   pyaten.zeros(3), pyaten.ones(3), training, 0.1, 1e-5)
        _meta_pair(aten._native_batch_norm_legit.default, ta._native_batch_norm_legit.default,
                   x, c, c, pyaten.zeros(3), pyaten.ones(3), training, 0.1, 1e-5)
    _meta_pair(aten._native_batch_norm_legit.no_stats,
               ta._native_batch_norm_legit.no_stats, x, c, c, True, 0.1, 1e-5)
    _meta_pair(aten.native_batch_norm_backward.default, ta.native_batch_norm_backward.default,
               x, x, c, pyaten.zeros(3), pyaten.ones(3), c, c, True, 1e-5, [True, True, True])
    _meta_pair(aten.native_group_norm.default, ta.native_group_norm.default, x, c, c, 4, 3, 5,
               1, 1e-5)
    _meta_pair(aten.native_group_norm_backward.default, ta.native_group_norm_backward.default,
               x, x, pyaten.randn(4, 1), pyaten.randn(4, 1), c, 4, 3, 5, 1, [True, True, True])
    _meta_pair(aten.native_dropout.default, ta.native_dropout.default, x, 0.5, True)
    _meta_pair(aten.native_dropout_backward.default, ta.native_dropout_backward.default, x,
               pyaten.ones(4, 3, 5, dtype=pyaten.bool), 2.0)
    idx = pyaten.tensor([[0, 2], [1, 1]])
    _meta_pair(aten.embedding.default, ta.embedding.default, pyaten.randn(3, 5), idx)
    _meta_pair(aten.embedding_dense_backward.default, ta.embedding_dense_backward.default,
               pyaten.randn(2, 2, 5), idx, 3, -1, False)
    _meta_pair(aten.embedding_renorm_.default, ta.embedding_renorm_.default,
               pyaten.randn(3, 5), idx, 1.0, 2.0)
    for name in ("layer_norm", "group_norm", "rms_norm"):
        args = {"layer_norm": ([5],), "group_norm": (3,), "rms_norm": ([5],)}[name]
        _meta_pair(getattr(pyaten, name), getattr(torch, name), x, *args)
    _meta_pair(pyaten.batch_norm, torch.batch_norm, x, c, c, pyaten.zeros(3), pyaten.ones(3),
               True, 0.1, 1e-5, False)
    _meta_pair(pyaten.instance_norm, torch.instance_norm, x, c, c, None, None, True, 0.1,
               1e-5, False)
    _meta_pair(pyaten.dropout, torch.dropout, x, 0.5, True)
    _meta_pair(pyaten.embedding, torch.embedding, pyaten.randn(3, 5), idx)


# --- embedding_bag ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(dtype, mode) -> None:
    w = _rand(10, 3, dtype=dtype)
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    off = torch.tensor([0, 4, 4, 6])
    cases = [{}, {"padding_idx": 2}, {"include_last_offset": True}, {"max_norm": 1.0}]
    if mode == "sum":
        cases.append({"per_sample_weights": _rand(8, seed=4, dtype=dtype)})
    for kwargs in cases:
        extra = [kwargs.pop("per_sample_weights")] if "per_sample_weights" in kwargs else []

        # include_last_offset: the last offset closes the last bag (PyTorch reads
        # uninitialised memory for indices past it)
        offs = torch.cat([off, torch.tensor([8])]) if "include_last_offset" in kwargs else off

        def ours(w_, *psw, kw=kwargs, offs=offs):
            kw = dict(kw, **({"per_sample_weights": psw[0]} if psw else {}))
            return F.embedding_bag(to_pyaten(idx), w_, to_pyaten(offs), mode=mode, **kw)

        def theirs(w_, *psw, kw=kwargs, offs=offs):
            kw = dict(kw, **({"per_sample_weights": psw[0]} if psw else {}))
            return TF.embedding_bag(idx, w_, offs, mode=mode, **kw)

        w_in = w.clone() if "max_norm" in kwargs else w
        _compare(ours, theirs, [w_in, *extra], dtype=dtype)
    # 2-D input: fixed-length bags
    idx2 = idx.reshape(2, 4)
    _compare(lambda w_: F.embedding_bag(to_pyaten(idx2), w_, mode=mode),
             lambda w_: TF.embedding_bag(idx2, w_, mode=mode), [w], dtype=dtype)


def test_embedding_bag_errors() -> None:
    w, idx, off = torch.randn(10, 3), torch.tensor([1, 2, 4]), torch.tensor([0, 2])
    cases = [
        ((idx, w, off), {"mode": "median"}),
        ((idx, w, off), {"mode": "max", "scale_grad_by_freq": True}),
        ((idx, w), {}),
        ((idx.reshape(1, 3), w, off), {}),
        ((idx, w, off), {"mode": "mean", "per_sample_weights": torch.ones(3)}),
        ((idx, w, off), {"per_sample_weights": torch.ones(2)}),
        ((idx, w[0], off), {}),
        ((idx, w, off), {"padding_idx": 10}),
    ]
    for args, kwargs in cases:
        same_error(lambda a=args, k=kwargs: F.embedding_bag(
            *map(to_pyaten, a), **{x: to_pyaten(y) for x, y in k.items()}),
            lambda a=args, k=kwargs: TF.embedding_bag(*a, **k), message=False)


def test_embedding_bag_meta() -> None:
    idx, off = pyaten.tensor([1, 2, 4, 5]), pyaten.tensor([0, 2])
    ta = torch.ops.aten
    for mode in (0, 2):
        _meta_pair(aten._embedding_bag.default, ta._embedding_bag.default, pyaten.randn(10, 3),
                   idx, off, False, mode)
    out = aten._embedding_bag_dense_backward.default(
        pyaten.empty(2, 3, device="meta"), idx.to("meta"), idx.to("meta"),
        pyaten.empty(2, dtype=pyaten.int64, device="meta"),
        pyaten.empty(2, dtype=pyaten.int64, device="meta"), 10, False, 1, None)
    assert out.device.type == "meta" and tuple(out.shape) == (10, 3)
