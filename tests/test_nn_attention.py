"""pyaten.nn.functional's distances and attention against torch.nn.functional:
`cosine_similarity`, `pairwise_distance` and `scaled_dot_product_attention` (bool and float
masks, `is_causal`, `scale`, `enable_gqa`, dropout), values and first/second-order gradients in
float32 and float64, OpInfo samples, non-contiguous inputs, errors and Meta shapes.
"""

from __future__ import annotations

import math

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
from _helpers import assert_same, compare_samples, opinfo_samples, run_both, same_error, to_pyaten

import pyaten
import pyaten.nn.functional as F

GRAD_SURFACE = frozenset("""
nn.functional.cosine_similarity nn.functional.pairwise_distance nn.functional.pdist
nn.functional.scaled_dot_product_attention
""".split())
SECOND_ORDER = frozenset("nn.functional.cosine_similarity nn.functional.pairwise_distance"
                         .split())
MAX_SAMPLES = 4
DTYPES = (torch.float32, torch.float64)


def _deterministic(info):
    # samples with dropout_p > 0 draw a random mask: compared by test_sdpa_dropout instead
    return [s for s in opinfo_samples(info, torch.float32)
            if not s.kwargs.get("dropout_p", 0.0)]


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE))
def test_opinfo_gradients_match_torch(info) -> None:
    if info.name != "nn.functional.scaled_dot_product_attention":
        check_opinfo_grads(info, info.name in SECOND_ORDER, limit=MAX_SAMPLES)
        return
    samples = [s for s in grad_samples(info, 64) if not s.kwargs.get("dropout_p", 0.0)]
    assert samples
    for k, sample in enumerate(samples[:MAX_SAMPLES]):
        run_grad_sample(info, sample, True, gradcheck=k == 0)


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE))
def test_opinfo_values_match_torch_float32(info) -> None:
    fn = getattr(F, info.name.rpartition(".")[2])
    compare_samples(fn, info.op, _deterministic(info)[:MAX_SAMPLES], rtol=1e-4, atol=1e-5)


def _rand(*shape, seed=0, dtype=torch.float64, transposed=False):
    gen = torch.Generator().manual_seed(seed)
    if transposed:
        x = torch.randn(*reversed(shape), generator=gen, dtype=dtype)
        return x.permute(*reversed(range(len(shape))))
    return torch.randn(*shape, generator=gen, dtype=dtype)


def _compare(name, inputs, kwargs=None, dtype=torch.float64, second_order=False):
    kwargs = kwargs or {}
    ours_fn, theirs_fn = getattr(F, name), getattr(TF, name)
    kw_o = {k: to_pyaten(v) for k, v in kwargs.items()}
    pair = run_both(lambda: ours_fn(*map(to_pyaten, inputs), **kw_o),
                    lambda: theirs_fn(*inputs, **kwargs))
    assert pair is not None
    tol = 3e-5 if dtype == torch.float32 else 1e-10
    assert_same(*pair, rtol=tol, atol=tol)
    floats = [t for t in inputs if isinstance(t, torch.Tensor) and t.is_floating_point()]
    n = len(floats)
    others = inputs[n:]
    check_grads(lambda *xs: ours_fn(*xs, *map(to_pyaten, others), **kw_o),
                lambda *xs: theirs_fn(*xs, *others, **kwargs), floats,
                second_order=second_order, rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cosine_similarity_and_pairwise_distance(dtype) -> None:
    a, b = _rand(4, 5, 3, dtype=dtype, transposed=True), _rand(4, 5, 3, seed=1, dtype=dtype)
    for dim in (1, -1, 0):
        _compare("cosine_similarity", [a, b], {"dim": dim}, dtype, second_order=True)
    _compare("cosine_similarity", [a, _rand(1, 5, 3, seed=2, dtype=dtype)], {}, dtype)
    zero = torch.zeros(2, 3, dtype=dtype)
    _compare("cosine_similarity", [zero + 1e-9, _rand(2, 3, dtype=dtype)], {"eps": 1e-6}, dtype)
    for p in (2.0, 1.0, 3.0, math.inf):
        _compare("pairwise_distance", [a, b], {"p": p}, dtype)
    _compare("pairwise_distance", [a, b], {"keepdim": True, "eps": 1e-3}, dtype,
             second_order=True)
    _compare("pairwise_distance", [_rand(6, dtype=dtype), _rand(3, 6, dtype=dtype)], {}, dtype)


def test_cosine_similarity_integer_inputs_and_errors() -> None:
    ints = torch.tensor([[1, 2], [3, 4]])
    assert_same(F.cosine_similarity(to_pyaten(ints).float(), to_pyaten(ints)),
                TF.cosine_similarity(ints.float(), ints))
    same_error(lambda: F.cosine_similarity(to_pyaten(ints), to_pyaten(ints)),
               lambda: TF.cosine_similarity(ints, ints))
    same_error(lambda: F.cosine_similarity(pyaten.ones(2, 3), pyaten.ones(2, 4)),
               lambda: TF.cosine_similarity(torch.ones(2, 3), torch.ones(2, 4)),
               message=False)


@pytest.mark.parametrize("dtype", DTYPES)
def test_pdist(dtype) -> None:
    x = _rand(6, 4, dtype=dtype, transposed=True)
    for p in (2.0, 1.0, 0.5, 3.0, 0.0, math.inf):
        _compare("pdist", [x], {"p": p}, dtype)
    _compare("pdist", [torch.cat([x[:2], x[:2]]).contiguous()], {}, dtype)  # zero distances
    for args in ((torch.randn(2, 3, 4),), (torch.ones(3, 2, dtype=torch.int64),),
                 (torch.randn(3, 2), -1.0)):
        same_error(lambda a=args: F.pdist(*map(to_pyaten, a)), lambda a=args: TF.pdist(*a))


def _qkv(b=2, h=4, lq=5, lk=7, e=8, ev=6, dtype=torch.float64, hk=None):
    hk = h if hk is None else hk
    return (_rand(b, h, lq, e, seed=1, dtype=dtype),
            _rand(b, hk, lk, e, seed=2, dtype=dtype, transposed=False).transpose(-1, -2)
            .contiguous().transpose(-1, -2),
            _rand(b, hk, lk, ev, seed=3, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_sdpa(dtype) -> None:
    q, k, v = _qkv(dtype=dtype)
    name = "scaled_dot_product_attention"
    _compare(name, [q, k, v], {}, dtype, second_order=dtype == torch.float64)
    _compare(name, [q, k, v], {"scale": 0.3}, dtype)
    _compare(name, [q, k, v], {"scale": -0.5}, dtype)
    q2, k2, v2 = _qkv(lq=6, lk=6, dtype=dtype)
    _compare(name, [q2, k2, v2], {"is_causal": True}, dtype)
    bool_mask = torch.rand(5, 7, generator=torch.Generator().manual_seed(4)) > 0.3
    bool_mask[:, 0] = True
    _compare(name, [q, k, v], {"attn_mask": bool_mask}, dtype)
    float_mask = _rand(2, 1, 5, 7, seed=5, dtype=dtype)
    _compare(name, [q, k, v], {"attn_mask": float_mask}, dtype)
    # grouped-query attention: 4 query heads share 2 key/value heads
    q3, k3, v3 = _qkv(hk=2, dtype=dtype)
    _compare(name, [q3, k3, v3], {"enable_gqa": True}, dtype)
    # 3-D (no head dim) inputs
    _compare(name, [q[0], k[0], v[0]], {}, dtype)


def test_sdpa_fully_masked_row_gives_zeros() -> None:
    q, k, v = _qkv()
    mask = torch.ones(5, 7, dtype=torch.bool)
    mask[2] = False
    _compare("scaled_dot_product_attention", [q, k, v], {"attn_mask": mask})


def test_sdpa_dropout() -> None:
    q, k, v = (to_pyaten(t) for t in _qkv())
    pyaten.manual_seed(0)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    pyaten.manual_seed(0)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert (a == b).all()
    assert not pyaten.allclose(a, F.scaled_dot_product_attention(q, k, v))
    # with a known dropout mask the math backend matches torch's
    qt, kt, vt = _qkv()
    mask = torch.rand(2, 4, 5, 7, generator=torch.Generator().manual_seed(1)) > 0.25
    ours = pyaten._scaled_dot_product_attention_math(q, k, v, None, 0.25, False,
                                                     to_pyaten(mask))
    theirs = torch.ops.aten._scaled_dot_product_attention_math(qt, kt, vt, None, 0.25, False,
                                                               mask)
    assert_same(ours, theirs, rtol=1e-10, atol=1e-10)


def test_sdpa_errors() -> None:
    q, k, v = _qkv(dtype=torch.float32)
    name = "scaled_dot_product_attention"
    cases = [
        ((q, k.double(), v), {}),
        ((q[0, 0, 0], k, v), {}),
        ((q, k, v), {"attn_mask": torch.ones(5, 7, dtype=torch.int64)}),
        ((q, k, v), {"attn_mask": torch.ones(5, 7, dtype=torch.bool), "is_causal": True}),
    ]
    for args, kwargs in cases:
        same_error(lambda a=args, kw=kwargs: getattr(F, name)(
            *map(to_pyaten, a), **{x: to_pyaten(y) for x, y in kw.items()}),
            lambda a=args, kw=kwargs: getattr(TF, name)(*a, **kw), message=False)
    same_error(lambda: F.scaled_dot_product_attention(*map(to_pyaten, (q, k, v[..., :3, :]))),
               lambda: TF.scaled_dot_product_attention(q, k, v[..., :3, :]), message=False)


def test_meta_shapes() -> None:
    q, k, v = (to_pyaten(t).to("meta") for t in _qkv(dtype=torch.float32))
    out = F.scaled_dot_product_attention(q, k, v)
    assert out.device.type == "meta" and tuple(out.shape) == (2, 4, 5, 6)
    out, weights = pyaten._scaled_dot_product_attention_math(q, k, v)
    assert tuple(weights.shape) == (2, 4, 5, 7)
    a = pyaten.empty(4, 5, 3, device="meta")
    assert tuple(F.cosine_similarity(a, a).shape) == (4, 3)
    assert tuple(F.pairwise_distance(a, a).shape) == (4, 5)
    m = pyaten.empty(6, 3, device="meta")
    ta = torch.ops.aten
    assert tuple(pyaten.ops.aten._pdist_forward.default(m, 2.0).shape) == tuple(
        ta._pdist_forward.default(torch.empty(6, 3, device="meta"), 2.0).shape)
    back = pyaten.ops.aten._pdist_backward.default(pyaten.empty(15, device="meta"), m, 2.0,
                                                   pyaten.empty(15, device="meta"))
    assert back.device.type == "meta" and tuple(back.shape) == (6, 3)


# --- multi_head_attention_forward -------------------------------------------------------------


def _mha_args(e=8, heads=2, lq=4, lk=5, bsz=3, batched=True, dtype=torch.float64):
    def r(*shape, seed):
        return _rand(*shape, seed=seed, dtype=dtype)
    q = r(lq, bsz, e, seed=1) if batched else r(lq, e, seed=1)
    k = r(lk, bsz, e, seed=2) if batched else r(lk, e, seed=2)
    v = r(lk, bsz, e, seed=3) if batched else r(lk, e, seed=3)
    return [q, k, v, r(3 * e, e, seed=4), r(3 * e, seed=5), r(e, e, seed=6), r(e, seed=7)]


def _mha(lib_f, heads, extra=None, bias_kv=None, zero_attn=False):
    extra = extra or {}

    def call(q, k, v, w_in, b_in, w_out, b_out, *bkv):
        bk, bv = bkv if bkv else (None, None)
        return lib_f.multi_head_attention_forward(
            q, k, v, q.shape[-1], heads, w_in, b_in, bk, bv, zero_attn, 0.3, w_out, b_out,
            training=False, **extra)
    return call


@pytest.mark.parametrize("dtype", DTYPES)
def test_multi_head_attention_forward(dtype) -> None:
    tol = 3e-5 if dtype == torch.float32 else 1e-9
    kpm = torch.zeros(3, 5, dtype=torch.bool)
    kpm[1, 3:] = True
    causal = torch.ones(4, 5, dtype=torch.bool).tril().logical_not()
    variants = [
        ({}, False, False, True),
        ({"need_weights": False}, False, False, True),
        ({"average_attn_weights": False}, False, False, True),
        ({"key_padding_mask": kpm}, False, False, True),
        ({"attn_mask": causal}, False, False, True),
        ({"attn_mask": _rand(4, 5, seed=9, dtype=dtype), "need_weights": False}, False, False,
         True),
        ({"attn_mask": causal, "is_causal": True, "need_weights": False}, False, False, True),
        ({}, True, True, True),
        ({}, False, False, False),
    ]
    for extra, bias_kv, zero_attn, batched in variants:
        inputs = _mha_args(batched=batched, dtype=dtype)
        if bias_kv:
            inputs += [_rand(1, 1, 8, seed=10, dtype=dtype), _rand(1, 1, 8, seed=11, dtype=dtype)]
        kw_o = {k: to_pyaten(v) for k, v in extra.items()}
        ours = _mha(F, 2, kw_o, bias_kv, zero_attn)
        theirs = _mha(TF, 2, extra, bias_kv, zero_attn)
        pair = run_both(lambda i=inputs, o=ours: o(*map(to_pyaten, i)),
                        lambda i=inputs, t=theirs: t(*i))
        assert pair is not None
        assert_same(*pair, rtol=tol, atol=tol)
        check_grads(ours, theirs, inputs, rtol=tol * 10, atol=tol * 10)


def test_multi_head_attention_separate_weights_and_errors() -> None:
    q, k, v, w_in, b_in, w_out, b_out = _mha_args()

    def call(lib_f, conv):
        wq, wk, wv = (conv(w) for w in w_in.chunk(3))
        return lib_f.multi_head_attention_forward(
            conv(q), conv(k), conv(v), 8, 2, None, conv(b_in), None, None, False, 0.0,
            conv(w_out), conv(b_out), use_separate_proj_weight=True, q_proj_weight=wq,
            k_proj_weight=wk, v_proj_weight=wv)
    assert_same(call(F, to_pyaten), call(TF, lambda t: t), rtol=1e-9, atol=1e-9)
    bad = [
        lambda m, c: m.multi_head_attention_forward(c(q), c(k), c(v), 6, 2, c(w_in), c(b_in),
                                                    None, None, False, 0.0, c(w_out),
                                                    c(b_out)),
        lambda m, c: m.multi_head_attention_forward(c(q), c(k), c(v), 8, 3, c(w_in), c(b_in),
                                                    None, None, False, 0.0, c(w_out),
                                                    c(b_out)),
        lambda m, c: m.multi_head_attention_forward(c(q[0]), c(k), c(v), 8, 2, c(w_in),
                                                    c(b_in), None, None, False, 0.0,
                                                    c(w_out), c(b_out)),
        lambda m, c: m.multi_head_attention_forward(c(q), c(k), c(v), 8, 2, c(w_in), c(b_in),
                                                    None, None, False, 0.0, c(w_out),
                                                    c(b_out), attn_mask=c(torch.ones(3, 3))),
    ]
    for fn in bad:
        same_error(lambda f=fn: f(F, to_pyaten), lambda f=fn: f(TF, lambda t: t),
                   message=False)


# --- _safe_softmax: softmax whose rows masked everywhere are 0 (attention's masks) ----------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dim", [-1, 0])
def test_safe_softmax_values_gradients_and_tangents_match_torch(dtype, dim):
    rows = [[1.0, 2.0, 3.0], [-math.inf] * 3, [0.0, -math.inf, 1.0], [-math.inf, 0.5, -math.inf]]
    ours = pyaten.tensor(rows, dtype=getattr(pyaten, dtype), requires_grad=True)
    theirs = torch.tensor(rows, dtype=getattr(torch, dtype), requires_grad=True)
    y = pyaten.ops.aten._safe_softmax.default(ours, dim)
    t = torch.ops.aten._safe_softmax.default(theirs, dim)
    assert y.grad_fn.name() == t.grad_fn.name()
    np.testing.assert_allclose(y.detach().numpy(), t.detach().numpy(), rtol=1e-6)
    weights = np.arange(12, dtype=dtype).reshape(4, 3)
    y.backward(pyaten.tensor(weights))
    t.backward(torch.tensor(weights))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-7)
    # forward AD (safe_logsumexp_jvp: 0 on the dead slices)
    import torch.autograd.forward_ad as tfwd

    import pyaten.autograd.forward_ad as pfwd
    tangent = np.linspace(-1, 1, 12).reshape(4, 3).astype(dtype)
    with pfwd.dual_level():
        out = pyaten.ops.aten._safe_softmax.default(
            pfwd.make_dual(ours.detach(), pyaten.tensor(tangent)), dim)
        ours_t = pfwd.unpack_dual(out).tangent
    with tfwd.dual_level():
        out = torch.ops.aten._safe_softmax.default(
            tfwd.make_dual(theirs.detach(), torch.tensor(tangent)), dim)
        theirs_t = tfwd.unpack_dual(out).tangent
    np.testing.assert_allclose(ours_t.numpy(), theirs_t.numpy(), rtol=1e-5, atol=1e-7,
                               equal_nan=True)


def test_safe_softmax_dtype_and_meta_match_torch():
    x = pyaten.randn(2, 3)
    t = torch.from_numpy(x.numpy())
    y = pyaten.ops.aten._safe_softmax.default(x, 1, pyaten.float64)
    assert y.dtype == pyaten.float64
    np.testing.assert_allclose(
        y.numpy(), torch.ops.aten._safe_softmax.default(t, 1, torch.float64).numpy())
    meta = pyaten.ops.aten._safe_softmax.default(pyaten.empty(2, 3, 4, device="meta"), 1)
    assert meta.device.type == "meta" and tuple(meta.shape) == (2, 3, 4)


def test_causal_attention_records_safe_softmax_as_torch():
    # the math path's softmax under a mask is _safe_softmax, in pyaten's graph as in torch's
    from torch.fx.experimental.proxy_tensor import make_fx as torch_make_fx

    from pyaten.fx.experimental.proxy_tensor import make_fx as ours_make_fx

    def targets(graph, module):
        return [str(n.target) for n in graph.graph.nodes if n.op == "call_function"
                and "softmax" in str(n.target)]

    q = pyaten.randn(1, 2, 4, 8)
    ours = ours_make_fx(lambda q: pyaten.ops.aten._scaled_dot_product_attention_math.default(
        q, q, q, is_causal=True)[0])(q)
    tq = torch.from_numpy(q.numpy())
    theirs = torch_make_fx(lambda q: torch.ops.aten._scaled_dot_product_attention_math.default(
        q, q, q, is_causal=True)[0])(tq)
    assert targets(ours, pyaten) == targets(theirs, torch) == ["aten._safe_softmax.default"]
