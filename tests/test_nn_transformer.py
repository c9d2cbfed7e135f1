"""nn.MultiheadAttention and the transformer modules against torch.

Each module is built in both libraries, torch's weights are copied into ours, and the same
inputs go through both: outputs, attention weights, and the gradients of every parameter
and input must agree (float32 tolerance). Training-mode cases use dropout=0 so they stay
deterministic.
"""

from __future__ import annotations

import copy
import math
import pickle
import warnings

import pytest
import torch
from _helpers import assert_same, from_torch, same_error
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten

TOL = {"rtol": 1e-4, "atol": 1e-5}


def build_pair(build):
    """`build(m)` in both libraries, our weights replaced by torch's."""
    torch.manual_seed(0)
    theirs = build(torch)
    ours = build(pyaten)
    ours.load_state_dict({k: from_torch(v) for k, v in theirs.state_dict().items()})
    return ours, theirs


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def leaf_pair(t: torch.Tensor):
    """The same values as a leaf requiring grad in each library."""
    return from_torch(t).requires_grad_(), t.clone().requires_grad_()


def as_ours(x):
    return from_torch(x) if isinstance(x, torch.Tensor) else x


def compare_run(ours, theirs, inputs, call=None, **kwargs) -> None:
    """Run both modules on `inputs` (torch tensors; each becomes a leaf requiring grad) and
    `kwargs` (masks, flags), then compare outputs, the gradients of a weighted sum of the
    outputs with respect to each input and each parameter."""
    call = call or (lambda module, *args, **kw: module(*args, **kw))
    # one leaf per distinct tensor: `query is key is value` holds in both when it held here
    pairs = {id(x): leaf_pair(x) for x in inputs}
    ours_in = [pairs[id(x)][0] for x in inputs]
    theirs_in = [pairs[id(x)][1] for x in inputs]
    out_ours = call(ours, *ours_in, **{k: as_ours(v) for k, v in kwargs.items()})
    out_theirs = call(theirs, *theirs_in, **kwargs)
    out_ours = out_ours if isinstance(out_ours, tuple) else (out_ours,)
    out_theirs = out_theirs if isinstance(out_theirs, tuple) else (out_theirs,)
    assert len(out_ours) == len(out_theirs)
    loss_ours, loss_theirs = 0, 0
    for i, (a, b) in enumerate(zip(out_ours, out_theirs)):
        if b is None:
            assert a is None
            continue
        assert_same(a, b, **TOL)
        weight = randn(*b.shape, seed=100 + i)
        loss_ours = loss_ours + (a * from_torch(weight)).sum()
        loss_theirs = loss_theirs + (b * weight).sum()
    loss_ours.backward()
    loss_theirs.backward()
    for a, b in pairs.values():
        assert_same(a.grad, b.grad, **TOL)
    grads_ours = {n: p.grad for n, p in ours.named_parameters()}
    for name, p in theirs.named_parameters():
        if p.grad is None:
            assert grads_ours[name] is None, name
        else:
            assert_same(grads_ours[name], p.grad, **TOL)


def causal_mask(m, n: int):
    return m.triu(m.full((n, n), float("-inf")), diagonal=1)


# --- MultiheadAttention ------------------------------------------------------------------------

L, S, N, E = 5, 6, 3, 8  # target length, source length, batch, embed_dim
BOOL_MASK = randn(L, S) > 1.0
PADDING = torch.tensor([[False] * S, [False] * (S - 2) + [True] * 2, [True] + [False] * (S - 1)])

# (constructor kwargs, which inputs, forward kwargs)
MHA_CASES = {
    "self": ({}, "self", {}),
    "self_per_head_weights": ({}, "self", {"average_attn_weights": False}),
    "no_weights": ({}, "self_s", {"need_weights": False}),
    "cross": ({}, "cross", {}),
    "kv_shared": ({}, "kv", {}),
    "batch_first": ({"batch_first": True}, "cross", {}),
    "batch_first_self": ({"batch_first": True}, "self", {"need_weights": False}),
    "no_bias": ({"bias": False}, "cross", {}),
    "bias_kv": ({"add_bias_kv": True}, "cross", {"key_padding_mask": PADDING}),
    "zero_attn": ({"add_zero_attn": True}, "cross", {"attn_mask": BOOL_MASK}),
    "kdim_vdim": ({"kdim": 5, "vdim": 7}, "kdim", {}),
    "kdim_vdim_batch_first": ({"kdim": 5, "vdim": 7, "batch_first": True}, "kdim", {}),
    "bool_mask": ({}, "cross", {"attn_mask": BOOL_MASK}),
    "float_mask": ({}, "cross", {"attn_mask": randn(L, S, seed=3)}),
    "mask_3d": ({}, "cross", {"attn_mask": randn(N * 2, L, S, seed=4) > 1.2}),
    "padding_bool": ({}, "cross", {"key_padding_mask": PADDING}),
    "padding_float": ({}, "cross", {"key_padding_mask": PADDING.float() * -1e4}),
    "padding_and_mask": ({}, "cross", {"key_padding_mask": PADDING, "attn_mask": BOOL_MASK}),
    "padding_no_weights": ({}, "cross", {"key_padding_mask": PADDING, "need_weights": False}),
    "causal": ({}, "self_s", {"attn_mask": causal_mask(torch, S), "is_causal": True,
                              "need_weights": False}),
    "causal_with_weights": ({}, "self_s", {"attn_mask": causal_mask(torch, S),
                                           "is_causal": True}),
    "unbatched": ({}, "unbatched", {"attn_mask": BOOL_MASK}),
}


def mha_inputs(kind: str, batch_first: bool):
    def seq(length: int, features: int, seed: int) -> torch.Tensor:
        shape = (N, length, features) if batch_first else (length, N, features)
        return randn(*shape, seed=seed)

    if kind == "self":
        x = seq(L, E, 1)
        return [x, x, x]
    if kind == "self_s":
        x = seq(S, E, 1)
        return [x, x, x]
    if kind == "kv":
        kv = seq(S, E, 2)
        return [seq(L, E, 1), kv, kv]
    if kind == "kdim":
        return [seq(L, E, 1), seq(S, 5, 2), seq(S, 7, 3)]
    if kind == "unbatched":
        return [randn(L, E, seed=1), randn(S, E, seed=2), randn(S, E, seed=3)]
    return [seq(L, E, 1), seq(S, E, 2), seq(S, E, 3)]


@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("case", list(MHA_CASES))
def test_multihead_attention(case, training):
    options, kind, kwargs = MHA_CASES[case]
    ours, theirs = build_pair(lambda m: m.nn.MultiheadAttention(E, 2, **options))
    ours.train(training)
    theirs.train(training)
    inputs = mha_inputs(kind, options.get("batch_first", False))
    compare_run(ours, theirs, inputs, **kwargs)


@settings(max_examples=10, deadline=None)
@given(heads=st.sampled_from([1, 2, 4]), tgt=st.integers(1, 5), src=st.integers(1, 5),
       batch=st.integers(1, 3), batch_first=st.booleans(), need_weights=st.booleans(),
       average=st.booleans(), masked=st.booleans(), seed=st.integers(0, 2**16))
def test_multihead_attention_shapes(heads, tgt, src, batch, batch_first, need_weights,
                                    average, masked, seed):
    ours, theirs = build_pair(lambda m: m.nn.MultiheadAttention(E, heads,
                                                               batch_first=batch_first))
    shape = (lambda n: (batch, n, E)) if batch_first else (lambda n: (n, batch, E))
    inputs = [randn(*shape(tgt), seed=seed), randn(*shape(src), seed=seed + 1)]
    kwargs = {"need_weights": need_weights, "average_attn_weights": average}
    if masked:  # random hidden keys, the first key always visible (no all-hidden rows)
        mask = randn(tgt, src, seed=seed + 2) > 0
        mask[:, 0] = False
        kwargs["attn_mask"] = mask
    compare_run(ours, theirs, [inputs[0], inputs[1], inputs[1]], **kwargs)


def test_multihead_attention_eval_without_grad():
    """torch's eval, no-grad call takes its fused kernel; the values are the same."""
    ours, theirs = build_pair(lambda m: m.nn.MultiheadAttention(E, 2, batch_first=True).eval())
    x = randn(N, S, E)
    for kwargs in ({}, {"key_padding_mask": PADDING}, {"need_weights": False}):
        with torch.no_grad(), pyaten.no_grad():
            got = ours(from_torch(x), from_torch(x), from_torch(x),
                       **{k: as_ours(v) for k, v in kwargs.items()})
            expected = theirs(x, x, x, **kwargs)
        assert_same(got, expected, **TOL)


def test_multihead_attention_dropout_trains_and_evaluates():
    ours, theirs = build_pair(lambda m: m.nn.MultiheadAttention(E, 2, dropout=0.5))
    x_torch = randn(L, N, E)
    x = from_torch(x_torch)
    _, weights = ours(x, x, x, average_attn_weights=False)
    sums = weights.sum(-1)
    assert not pyaten.allclose(sums, pyaten.ones_like(sums))  # dropped and rescaled
    ours.eval()
    theirs.eval()
    assert_same(ours(x, x, x), theirs(x_torch, x_torch, x_torch), **TOL)


def test_multihead_attention_structure():
    def describe(m, **options):
        mha = m.nn.MultiheadAttention(E, 4, **options)
        return (repr(mha), list(mha.state_dict()), [n for n, _ in mha.named_parameters()],
                mha.head_dim, mha.kdim, mha.vdim, mha._qkv_same_embed_dim,
                type(mha.out_proj).__name__, mha.bias_k is None, mha.in_proj_weight is None)

    for options in ({}, {"bias": False}, {"add_bias_kv": True}, {"kdim": 3, "vdim": 5},
                    {"batch_first": True, "add_zero_attn": True, "dropout": 0.25}):
        assert describe(pyaten, **options) == describe(torch, **options)


def test_multihead_attention_initialisation():
    mha = pyaten.nn.MultiheadAttention(12, 3, add_bias_kv=True)
    bound = math.sqrt(6 / (12 + 36))  # xavier_uniform_ over the packed (36, 12) weight
    assert float(mha.in_proj_weight.abs().max()) <= bound
    assert float(mha.in_proj_weight.std()) > bound / 3
    assert mha.in_proj_bias.tolist() == [0.0] * 36
    assert mha.out_proj.bias.tolist() == [0.0] * 12
    assert float(mha.bias_k.abs().sum()) > 0
    separate = pyaten.nn.MultiheadAttention(4, 2, kdim=6, vdim=2)
    assert float(separate.k_proj_weight.abs().max()) <= math.sqrt(6 / (4 + 6))


@pytest.mark.parametrize("build, call", [
    (lambda m: m.nn.MultiheadAttention(6, 4), None),
    (lambda m: m.nn.MultiheadAttention(0, 1), None),
    (lambda m: m.nn.MultiheadAttention(4, -1), None),
    (lambda m: m.nn.MultiheadAttention(4, 2),
     lambda m, mha: mha(m.ones(3, 2, 4), m.ones(3, 2, 4), m.ones(3, 2, 4), is_causal=True)),
    (lambda m: m.nn.MultiheadAttention(4, 2),
     lambda m, mha: mha(m.ones(3, 2, 4), m.ones(3, 2, 4), m.ones(3, 2, 4),
                        attn_mask=m.ones(3, 3, dtype=m.int64))),
    (lambda m: m.nn.MultiheadAttention(4, 2),
     lambda m, mha: mha(m.ones(3, 2, 4), m.ones(3, 2, 4), m.ones(3, 2, 4),
                        attn_mask=m.ones(2, 3, dtype=m.bool))),
    (lambda m: m.nn.MultiheadAttention(4, 2),
     lambda m, mha: mha(m.ones(3, 2, 4), m.ones(3, 2, 5), m.ones(3, 2, 4))),
])
def test_multihead_attention_errors(build, call):
    def run(m):
        module = build(m)
        return call(m, module) if call else module

    same_error(lambda: run(pyaten), lambda: run(torch))


# --- TransformerEncoderLayer and TransformerEncoder ------------------------------------------

D, H, FF = 8, 2, 16
ENC_PADDING = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])


def enc_masks(kind: str):
    if kind == "none":
        return {}
    if kind == "causal":
        return {"src_mask": causal_mask(torch, 5), "is_causal": True}
    if kind == "bool":
        return {"src_mask": BOOL_MASK[:, :5]}
    return {"src_key_padding_mask": ENC_PADDING}


@pytest.mark.parametrize("masks", ["none", "causal", "bool", "padding"])
@pytest.mark.parametrize("activation", ["relu", "gelu", "callable"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer(norm_first, activation, masks):
    batch_first = activation != "relu"  # both layouts, across the table

    def build(m):
        act = (lambda x: m.tanh(x) * 2) if activation == "callable" else activation
        return m.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation=act,
                                            batch_first=batch_first, norm_first=norm_first)

    ours, theirs = build_pair(build)
    src = randn(3, 5, D) if batch_first else randn(5, 3, D)
    compare_run(ours, theirs, [src], **enc_masks(masks))
    ours.eval()
    theirs.eval()
    compare_run(ours, theirs, [src], **enc_masks(masks))


def test_encoder_layer_structure():
    def describe(m):
        layers = [m.nn.TransformerEncoderLayer(D, H), m.nn.TransformerEncoderLayer(
            D, H, 32, 0.3, "gelu", 1e-6, True, True, False)]
        return [(repr(x), list(x.state_dict()), x.activation_relu_or_gelu, x.norm_first,
                 x.activation.__name__) for x in layers]

    assert describe(pyaten) == describe(torch)
    same_error(lambda: pyaten.nn.TransformerEncoderLayer(D, H, activation="tanh"),
               lambda: torch.nn.TransformerEncoderLayer(D, H, activation="tanh"))


@pytest.mark.parametrize("activation", ["relu_module", "gelu_module"])
def test_encoder_layer_activation_modules(activation):
    def build(m):
        act = m.nn.ReLU() if activation == "relu_module" else m.nn.GELU(approximate="tanh")
        return m.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation=act)

    ours, theirs = build_pair(build)
    assert (repr(ours), ours.activation_relu_or_gelu) == (
        repr(theirs), theirs.activation_relu_or_gelu)
    compare_run(ours, theirs, [randn(5, 2, D)])


def test_encoder_layer_float64_and_unbatched():
    ours, theirs = build_pair(lambda m: m.nn.TransformerEncoderLayer(
        D, H, FF, dropout=0.0, dtype=m.float64))
    compare_run(ours, theirs, [randn(4, 2, D).double()], src_mask=BOOL_MASK[:4, :4])
    compare_run(ours, theirs, [randn(4, D).double()], src_key_padding_mask=ENC_PADDING[1, :4])


def test_encoder_layer_dropout_in_training():
    layer = pyaten.nn.TransformerEncoderLayer(D, H, FF, dropout=0.5)
    x = pyaten.randn(5, 2, D)
    assert not pyaten.allclose(layer(x), layer(x))  # fresh masks each call
    layer.eval()
    assert pyaten.equal(layer(x), layer(x))


def encoder(m, batch_first: bool, norm_first: bool = False, **kwargs):
    layer = m.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=batch_first,
                                         norm_first=norm_first)
    return m.nn.TransformerEncoder(layer, 2, norm=m.nn.LayerNorm(D), **kwargs)


@pytest.mark.parametrize("masks", ["none", "causal", "padding"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder(batch_first, masks):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = build_pair(lambda m: encoder(m, batch_first, norm_first=True))
    kwargs = enc_masks(masks)
    if "src_mask" in kwargs:
        kwargs["mask"] = kwargs.pop("src_mask")
        kwargs["is_causal"] = None  # detected from the mask
    src = randn(3, 5, D) if batch_first else randn(5, 3, D)
    for training in (True, False):
        ours.train(training)
        theirs.train(training)
        compare_run(ours, theirs, [src], **kwargs)


def test_encoder_layers_are_copies():
    model = encoder(pyaten, True)
    first, second = model.layers
    assert first is not second and first.linear1.weight is not second.linear1.weight
    assert pyaten.equal(first.linear1.weight, second.linear1.weight)
    assert list(model.state_dict()) == list(encoder(torch, True).state_dict())
    assert repr(model) == repr(encoder(torch, True))


def test_encoder_nested_tensor_warning():
    def warned(m, **kwargs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = encoder(m, **kwargs)
        return [str(w.message) for w in caught], model.use_nested_tensor

    for kwargs in ({"batch_first": False}, {"batch_first": True},
                   {"batch_first": True, "norm_first": True},
                   {"batch_first": False, "enable_nested_tensor": False}):
        assert warned(pyaten, **kwargs) == warned(torch, **kwargs)


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_encoder_eval_without_grad_zeroes_padding():
    """torch packs the padded batch into a nested tensor: padded positions come out as 0
    (then go through the final norm); the real tokens are the same as the padded path's."""
    ours, theirs = build_pair(lambda m: encoder(m, True).eval())
    src = randn(3, 5, D)
    holes = torch.tensor([[True] + [False] * 4, [False] * 5, [False, True, False, True, False]])
    for padding in (ENC_PADDING, holes):  # left-aligned (packed), then not (kept padded)
        with torch.no_grad(), pyaten.no_grad():
            got = ours(from_torch(src), src_key_padding_mask=from_torch(padding))
            expected = theirs(src, src_key_padding_mask=padding)
        assert_same(got, expected, **TOL)


@settings(max_examples=8, deadline=None)
@given(seq=st.integers(1, 6), batch=st.integers(1, 3), causal=st.booleans(),
       seed=st.integers(0, 2**16))
def test_encoder_layer_shapes(seq, batch, causal, seed):
    ours, theirs = build_pair(lambda m: m.nn.TransformerEncoderLayer(
        D, H, FF, dropout=0.0, batch_first=True))
    kwargs = {"src_mask": causal_mask(torch, seq), "is_causal": True} if causal else {}
    compare_run(ours, theirs, [randn(batch, seq, D, seed=seed)], **kwargs)


# --- decoder and Transformer -------------------------------------------------------------------

@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_layer(batch_first, norm_first):
    ours, theirs = build_pair(lambda m: m.nn.TransformerDecoderLayer(
        D, H, FF, dropout=0.0, activation="gelu", batch_first=batch_first,
        norm_first=norm_first))
    tgt = randn(3, 4, D, seed=1) if batch_first else randn(4, 3, D, seed=1)
    memory = randn(3, 5, D, seed=2) if batch_first else randn(5, 3, D, seed=2)
    compare_run(ours, theirs, [tgt, memory], tgt_mask=causal_mask(torch, 4),
                tgt_is_causal=True, memory_key_padding_mask=ENC_PADDING)


def test_decoder():
    def build(m):
        layer = m.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0)
        return m.nn.TransformerDecoder(layer, 2, norm=m.nn.LayerNorm(D))

    ours, theirs = build_pair(build)
    compare_run(ours, theirs, [randn(4, 3, D, seed=1), randn(5, 3, D, seed=2)],
                tgt_mask=causal_mask(torch, 4), memory_mask=BOOL_MASK[:4, :5])


def transformer(m, **kwargs):
    return m.nn.Transformer(D, H, 1, 2, FF, dropout=0.0, **kwargs)


def test_transformer():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = build_pair(lambda m: transformer(m, batch_first=True))
    assert repr(ours) == repr(theirs)
    src, tgt = randn(3, 5, D, seed=1), randn(3, 4, D, seed=2)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    compare_run(ours, theirs, [src, tgt], tgt_mask=mask, src_key_padding_mask=ENC_PADDING,
                memory_key_padding_mask=ENC_PADDING)


def test_transformer_structure_and_errors():
    def describe(m):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = transformer(m, norm_first=True, activation="gelu")
        return list(model.state_dict()), model.d_model, model.nhead, model.batch_first

    assert describe(pyaten) == describe(torch)
    for size, dtype in ((3, None), (1, "float64"), (0, None)):
        assert_same(pyaten.nn.Transformer.generate_square_subsequent_mask(
                        size, dtype=dtype and getattr(pyaten, dtype)),
                    torch.nn.Transformer.generate_square_subsequent_mask(
                        size, dtype=dtype and getattr(torch, dtype)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = transformer(pyaten), transformer(torch)
    for shapes in (((5, 3, D), (4, 2, D)), ((5, 3, D), (4, 3, D + 1))):
        same_error(lambda s=shapes: models[0](pyaten.ones(s[0]), pyaten.ones(s[1])),
                   lambda s=shapes: models[1](torch.ones(s[0]), torch.ones(s[1])))


def test_transformer_initialisation_and_copy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformer(pyaten)
    for name, p in model.named_parameters():
        if p.dim() > 1:
            fan_out, fan_in = p.shape
            assert float(p.abs().max()) <= math.sqrt(6 / (fan_in + fan_out)), name
    x = pyaten.randn(5, 2, D)
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert clone.encoder.layers[0].activation is pyaten.nn.functional.relu
        assert pyaten.equal(clone.eval()(x, x), model.eval()(x, x))


def test_mismatched_mask_types_warn():
    def messages(m):
        layer = m.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0)
        model = m.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        src, hide = m.ones(5, 3, D), m.zeros(5, 5, dtype=m.bool)
        padding = m.zeros(3, 5)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            layer(src, src_mask=hide, src_key_padding_mask=padding)
            model(src, mask=hide, src_key_padding_mask=padding)
            layer.self_attn(src, src, src, attn_mask=hide, key_padding_mask=padding)
        return [str(w.message) for w in caught]

    assert messages(pyaten) == messages(torch)
    assert len(messages(torch)) == 3
