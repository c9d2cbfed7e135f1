"""nn.RNN, nn.LSTM, nn.GRU, their cells and nn.utils.rnn's packing against torch.

Each module is built in torch, its weights copied into ours; both run the same inputs, and
outputs, final states and every gradient (parameters, input, initial states) must agree.
Errors compare by type and message.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from _helpers import assert_same, from_torch, run_both, same_error
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten

KINDS = {
    "rnn_tanh": ("RNN", {}),
    "rnn_relu": ("RNN", {"nonlinearity": "relu"}),
    "lstm": ("LSTM", {}),
    "gru": ("GRU", {}),
}
INPUT, HIDDEN, STEPS, BATCH = 3, 5, 4, 3


def twin(cls: str, *args, dtype=torch.float64, **kwargs):
    """The same module in both libraries: (ours, theirs) with torch's weights copied in."""
    theirs = getattr(torch.nn, cls)(*args, **kwargs).to(dtype)
    ours = getattr(pyaten.nn, cls)(*args, **kwargs).to(getattr(pyaten, str(dtype)[6:]))
    ours.load_state_dict({k: from_torch(v) for k, v in theirs.state_dict().items()})
    return ours, theirs


def leaf(t: torch.Tensor) -> tuple[pyaten.Tensor, torch.Tensor]:
    """A torch leaf and its pyaten copy, both requiring grad."""
    ours = from_torch(t).requires_grad_()
    return ours, t.detach().clone().requires_grad_()


def flat(result) -> list:
    """A module's (output, state) result as a flat list of tensors."""
    if isinstance(result, (tuple, list)):
        return [t for part in result for t in flat(part)]
    return [result]


def check_run(ours_mod, theirs_mod, x: torch.Tensor, hx=None, **tolerance) -> None:
    """Forward both modules, compare every result, then backward a random weighting of the
    results and compare the gradients of the parameters, the input and the initial state."""
    x_ours, x_theirs = leaf(x)
    leaves = [(x_ours, x_theirs)]
    hx_ours = hx_theirs = None
    if hx is not None:
        pairs = [leaf(h) for h in (hx if isinstance(hx, tuple) else (hx,))]
        leaves += pairs
        hx_ours = tuple(p[0] for p in pairs) if isinstance(hx, tuple) else pairs[0][0]
        hx_theirs = tuple(p[1] for p in pairs) if isinstance(hx, tuple) else pairs[0][1]
    out_ours, out_theirs = flat(ours_mod(x_ours, hx_ours)), flat(theirs_mod(x_theirs, hx_theirs))
    assert_same(out_ours, out_theirs, **tolerance)
    weights = [torch.randn_like(t) for t in out_theirs]
    sum(((t * w).sum() for t, w in zip(out_theirs, weights))).backward()
    sum(((t * from_torch(w)).sum() for t, w in zip(out_ours, weights))).backward()
    for (name, p_ours), (_, p_theirs) in zip(
        ours_mod.named_parameters(), theirs_mod.named_parameters()
    ):
        assert_same(p_ours.grad, p_theirs.grad, **tolerance), name
    for l_ours, l_theirs in leaves:
        assert_same(l_ours.grad, l_theirs.grad, **tolerance)


# --- the layers: values and gradients --------------------------------------------------------

GRID = [
    (kind, layers, bidirectional, batch_first)
    for kind in KINDS
    for layers in (1, 2)
    for bidirectional in (False, True)
    for batch_first in (False, True)
]


@pytest.mark.parametrize(("kind", "layers", "bidirectional", "batch_first"), GRID)
def test_layer_matches_torch_float64(kind, layers, bidirectional, batch_first):
    torch.manual_seed(0)
    cls, extra = KINDS[kind]
    ours, theirs = twin(
        cls, INPUT, HIDDEN, layers, bidirectional=bidirectional, batch_first=batch_first, **extra
    )
    shape = (BATCH, STEPS, INPUT) if batch_first else (STEPS, BATCH, INPUT)
    x = torch.randn(shape, dtype=torch.float64)
    check_run(ours, theirs, x)
    # given initial states (h0, and c0 for LSTM)
    ours.zero_grad()
    theirs.zero_grad()
    h0 = torch.randn(layers * (2 if bidirectional else 1), BATCH, HIDDEN, dtype=torch.float64)
    hx = (h0, torch.randn_like(h0)) if cls == "LSTM" else h0
    check_run(ours, theirs, x, hx)


@pytest.mark.parametrize(("layers", "bidirectional", "batch_first"), [
    (layers, bidirectional, batch_first)
    for layers in (1, 2) for bidirectional in (False, True) for batch_first in (False, True)
])
def test_projected_lstm_matches_torch(layers, bidirectional, batch_first):
    torch.manual_seed(1)
    ours, theirs = twin(
        "LSTM", INPUT, HIDDEN, layers, bidirectional=bidirectional, batch_first=batch_first,
        proj_size=2,
    )
    shape = (BATCH, STEPS, INPUT) if batch_first else (STEPS, BATCH, INPUT)
    x = torch.randn(shape, dtype=torch.float64)
    directions = 2 if bidirectional else 1
    hx = (
        torch.randn(layers * directions, BATCH, 2, dtype=torch.float64),
        torch.randn(layers * directions, BATCH, HIDDEN, dtype=torch.float64),
    )
    check_run(ours, theirs, x, hx)


@pytest.mark.parametrize("kind", list(KINDS))
def test_layer_matches_torch_float32_without_bias(kind):
    torch.manual_seed(2)
    cls, extra = KINDS[kind]
    for bias in (True, False):
        ours, theirs = twin(
            cls, INPUT, HIDDEN, 2, bias=bias, bidirectional=True, dtype=torch.float32, **extra
        )
        check_run(ours, theirs, torch.randn(6, 2, INPUT))


@pytest.mark.parametrize("kind", list(KINDS))
def test_unbatched_input(kind):
    torch.manual_seed(3)
    cls, extra = KINDS[kind]
    for batch_first in (False, True):
        ours, theirs = twin(
            cls, INPUT, HIDDEN, 2, bidirectional=True, batch_first=batch_first, **extra
        )
        x = torch.randn(STEPS, INPUT, dtype=torch.float64)
        check_run(ours, theirs, x)
        h0 = torch.randn(4, HIDDEN, dtype=torch.float64)
        check_run(ours, theirs, x, (h0, torch.randn_like(h0)) if cls == "LSTM" else h0)


@pytest.mark.parametrize("kind", list(KINDS))
def test_dropout_between_layers(kind):
    torch.manual_seed(4)
    cls, extra = KINDS[kind]
    ours, theirs = twin(cls, INPUT, HIDDEN, 3, dropout=0.5, **extra)
    x = torch.randn(STEPS, BATCH, INPUT, dtype=torch.float64)
    ours.eval()
    theirs.eval()
    check_run(ours, theirs, x)  # no dropout in eval mode
    ours.train()
    pyaten.manual_seed(0)

    def output() -> np.ndarray:
        return flat(ours(from_torch(x)))[0].detach().numpy()

    trained = [output() for _ in range(2)]
    ours.eval()
    evaluated = output()
    assert trained[0].shape == evaluated.shape
    # dropout acts in training mode (each pass draws its own mask), never in eval mode
    assert not np.allclose(trained[0], evaluated)
    assert not np.allclose(trained[0], trained[1])
    assert np.allclose(output(), evaluated)


def test_single_layer_dropout_warns_and_does_nothing():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        pyaten.nn.GRU(2, 3, dropout=0.3)
    torch.manual_seed(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = twin("GRU", 2, 3, dropout=0.3)
    check_run(ours, theirs, torch.randn(3, 2, 2, dtype=torch.float64))  # training mode


# --- the cells -------------------------------------------------------------------------------

CELLS = [
    ("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("RNNCell", {"bias": False}),
    ("LSTMCell", {}), ("LSTMCell", {"bias": False}), ("GRUCell", {}), ("GRUCell", {"bias": False}),
]


@pytest.mark.parametrize(("cls", "kwargs"), CELLS)
def test_cell_matches_torch(cls, kwargs):
    torch.manual_seed(6)
    ours, theirs = twin(cls, INPUT, HIDDEN, **kwargs)
    for batch in ((BATCH,), ()):
        x = torch.randn(*batch, INPUT, dtype=torch.float64)
        ours.zero_grad()
        theirs.zero_grad()
        check_run(ours, theirs, x)
        h = torch.randn(*batch, HIDDEN, dtype=torch.float64)
        ours.zero_grad()
        theirs.zero_grad()
        check_run(ours, theirs, x, (h, torch.randn_like(h)) if cls == "LSTMCell" else h)


def test_cell_float32():
    torch.manual_seed(7)
    for cls in ("RNNCell", "LSTMCell", "GRUCell"):
        ours, theirs = twin(cls, 4, 6, dtype=torch.float32)
        check_run(ours, theirs, torch.randn(5, 4))


# --- structure: parameters, state dicts, reprs, init -----------------------------------------

MODULES = [
    ("RNN", (3, 4), {}),
    ("RNN", (3, 4, 2), {"nonlinearity": "relu", "bias": False, "bidirectional": True}),
    ("LSTM", (3, 5), {"proj_size": 2, "num_layers": 2, "bidirectional": True}),
    ("LSTM", (3, 5), {"bias": False, "proj_size": 2, "batch_first": True}),
    ("GRU", (3, 4, 3), {"dropout": 0.25, "batch_first": True}),
    ("RNNCell", (3, 4), {"nonlinearity": "relu", "bias": False}),
    ("LSTMCell", (3, 4), {}),
    ("GRUCell", (3, 4), {"bias": False}),
]


@pytest.mark.parametrize(("cls", "args", "kwargs"), MODULES)
def test_structure_matches_torch(cls, args, kwargs):
    ours = getattr(pyaten.nn, cls)(*args, **kwargs)
    theirs = getattr(torch.nn, cls)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert tuple(p.shape) == tuple(q.shape), name
        assert p.requires_grad and isinstance(p, pyaten.nn.Parameter)
    if hasattr(theirs, "all_weights"):
        assert [[tuple(w.shape) for w in ws] for ws in ours.all_weights] == [
            [tuple(w.shape) for w in ws] for ws in theirs.all_weights
        ]
        assert ours._flat_weights_names == theirs._flat_weights_names
        assert ours.flatten_parameters() is None


def test_default_init_is_uniform_in_one_over_sqrt_hidden():
    module = pyaten.nn.LSTM(8, 64, num_layers=2, bidirectional=True)
    bound = 1 / math.sqrt(64)
    values = np.concatenate([p.detach().numpy().ravel() for p in module.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    # spread over the whole interval: a uniform sample's quartiles sit near -b/2 and b/2
    assert np.allclose(np.quantile(values, [0.25, 0.75]), [-bound / 2, bound / 2], atol=0.01)
    assert abs(values.mean()) < 0.005


def test_float_conversion_and_reuse_after_to():
    torch.manual_seed(8)
    ours, theirs = twin("LSTM", 3, 4, dtype=torch.float32)
    ours.double()
    theirs.double()
    check_run(ours, theirs, torch.randn(2, 2, 3, dtype=torch.float64))


def test_deepcopy_and_list_state():
    import copy

    torch.manual_seed(11)
    ours, theirs = twin("LSTM", 3, 4, 2)
    ours, theirs = copy.deepcopy(ours), copy.deepcopy(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = torch.randn(3, 2, 3, dtype=torch.float64)
    state = [torch.randn(2, 2, 4, dtype=torch.float64) for _ in range(2)]
    assert_same(
        flat(ours(from_torch(x), [from_torch(t) for t in state])), flat(theirs(x, state))
    )


# --- errors, with PyTorch's messages ---------------------------------------------------------

def _call(m, cls, args, kwargs, x_shape, hx_shape=None, dtype="float32"):
    module = getattr(m.nn, cls)(*args, **kwargs)
    x = m.zeros(x_shape, dtype=getattr(m, dtype))
    if hx_shape is None:
        return module(x)
    if cls.startswith("LSTM"):
        hx = tuple(m.zeros(s) for s in hx_shape)
    else:
        hx = m.zeros(hx_shape)
    return module(x, hx)


FORWARD_ERRORS = [
    ("RNN", (3, 4), {}, (5,), None, "float32"),
    ("RNN", (3, 4), {}, (2, 2, 2, 3), None, "float32"),
    ("RNN", (3, 4), {}, (5, 2, 3), None, "float64"),
    ("RNN", (3, 4), {}, (5, 2, 4), None, "float32"),
    ("RNN", (3, 4), {}, (5, 2, 3), (1, 3, 4), "float32"),
    ("RNN", (3, 4), {}, (5, 2, 3), (1, 2, 5), "float32"),
    ("RNN", (3, 4), {}, (5, 2, 3), (1, 4), "float32"),
    ("RNN", (3, 4), {}, (5, 3), (1, 2, 4), "float32"),
    ("RNN", (3, 4, 2), {"bidirectional": True}, (5, 2, 3), (2, 2, 4), "float32"),
    ("GRU", (3, 4), {}, (5,), None, "float32"),
    ("GRU", (3, 4), {"batch_first": True}, (2, 5, 3), (1, 5, 4), "float32"),
    ("LSTM", (3, 4), {}, (5,), None, "float32"),
    ("LSTM", (3, 4), {}, (5, 2, 7), None, "float32"),
    ("LSTM", (3, 4), {}, (5, 2, 3), ((1, 2, 4), (1, 2, 5)), "float32"),
    ("LSTM", (3, 4), {}, (5, 2, 3), ((1, 3, 4), (1, 2, 4)), "float32"),
    ("LSTM", (3, 4), {"proj_size": 2}, (5, 2, 3), ((1, 2, 4), (1, 2, 4)), "float32"),
    ("LSTM", (3, 4), {}, (5, 2, 3), ((2, 4), (1, 2, 4)), "float32"),
    ("LSTM", (3, 4), {}, (5, 3), ((1, 1, 4), (1, 4)), "float32"),
    ("RNNCell", (3, 4), {}, (2, 2, 3), None, "float32"),
    ("RNNCell", (3, 4), {}, (2, 5), None, "float32"),
    ("RNNCell", (3, 4), {}, (2, 3), (3, 4), "float32"),
    ("RNNCell", (3, 4), {}, (2, 3), (2, 5), "float32"),
    ("RNNCell", (3, 4), {}, (2, 3), (1, 2, 4), "float32"),
    ("GRUCell", (3, 4), {}, (3,), (2, 4), "float32"),
    ("GRUCell", (3, 4), {}, (5,), None, "float32"),
    ("LSTMCell", (3, 4), {}, (2, 3), ((2, 4), (2, 5)), "float32"),
    ("LSTMCell", (3, 4), {}, (2, 3), ((3, 4), (2, 4)), "float32"),
    ("LSTMCell", (3, 4), {}, (2, 3), ((2, 4), (1, 2, 4)), "float32"),
    ("LSTMCell", (3, 4), {}, (1, 1, 3), None, "float32"),
]


@pytest.mark.parametrize(("cls", "args", "kwargs", "x", "hx", "dtype"), FORWARD_ERRORS)
def test_forward_errors(cls, args, kwargs, x, hx, dtype):
    same_error(
        lambda: _call(pyaten, cls, args, kwargs, x, hx, dtype),
        lambda: _call(torch, cls, args, kwargs, x, hx, dtype),
    )


def test_cell_with_unknown_nonlinearity_fails_before_size_checks():
    def scenario(m):
        cell = m.nn.RNNCell(3, 4)
        cell.nonlinearity = "gelu"
        return cell(m.zeros(2, 5))

    same_error(lambda: scenario(pyaten), lambda: scenario(torch))


CONSTRUCTOR_ERRORS = [
    ("RNN", (3, 4), {"nonlinearity": "gelu"}),
    ("RNN", (3, 4), {"proj_size": 2}),
    ("GRU", (3, 4), {"proj_size": 2}),
    ("LSTM", (3, 4), {"proj_size": 4}),
    ("LSTM", (3, 4), {"proj_size": -1}),
    ("LSTM", (0, 4), {}),
    ("LSTM", (3, 0), {}),
    ("LSTM", (3.0, 4), {}),
    ("LSTM", (3, 4), {"num_layers": 0}),
    ("GRU", (3, 4), {"dropout": 1.5}),
    ("GRU", (3, 4), {"dropout": True}),
    ("GRU", (3, 4), {"bias": 1}),
    ("GRU", (3, 4), {"batch_first": None}),
]


@pytest.mark.parametrize(("cls", "args", "kwargs"), CONSTRUCTOR_ERRORS)
def test_constructor_errors(cls, args, kwargs):
    same_error(
        lambda: getattr(pyaten.nn, cls)(*args, **kwargs),
        lambda: getattr(torch.nn, cls)(*args, **kwargs),
    )


# --- nn.utils.rnn: packing, and the layers on packed input -----------------------------------

def _packing(m, lengths, batch_first, enforce_sorted, total_length):
    rnn = m.nn.utils.rnn
    torch.manual_seed(9)
    padded = torch.randn(max(lengths), len(lengths), 2, dtype=torch.float64)
    if batch_first:
        padded = padded.transpose(0, 1).contiguous()
    x = padded if m is torch else from_torch(padded)
    packed = rnn.pack_padded_sequence(x, lengths, batch_first, enforce_sorted)
    unpacked, lens = rnn.pad_packed_sequence(
        packed, batch_first, padding_value=-1.0, total_length=total_length
    )
    return [
        packed.data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices,
        unpacked, lens, rnn.unpack_sequence(packed),
    ]


def _same(ours, theirs) -> None:
    for a, b in zip(ours, theirs, strict=True):
        if b is None:
            assert a is None
        else:
            assert_same(a, b)


@settings(max_examples=25, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    batch_first=st.booleans(),
    extra=st.integers(0, 2),
)
def test_pack_and_pad_match_torch(lengths, batch_first, extra):
    total = max(lengths) + extra
    pair = run_both(
        lambda: _packing(pyaten, lengths, batch_first, False, total),
        lambda: _packing(torch, lengths, batch_first, False, total),
    )
    _same(*pair)
    sorted_lengths = sorted(lengths, reverse=True)
    pair = run_both(
        lambda: _packing(pyaten, sorted_lengths, batch_first, True, None),
        lambda: _packing(torch, sorted_lengths, batch_first, True, None),
    )
    _same(*pair)


def test_pack_sequence_and_repr():
    def scenario(m):
        rnn = m.nn.utils.rnn
        packed = rnn.pack_sequence([m.tensor([1, 2, 3]), m.tensor([4, 5]), m.tensor([6])])
        unsorted = rnn.pack_sequence([m.tensor([4, 5]), m.tensor([1, 2, 3])], False)
        return repr(packed), [*unsorted], rnn.unpack_sequence(unsorted)

    pair = run_both(lambda: scenario(pyaten), lambda: scenario(torch))
    (r_ours, *rest_ours), (r_theirs, *rest_theirs) = pair
    assert r_ours == r_theirs
    _same(rest_ours[0], rest_theirs[0])
    _same(rest_ours[1], rest_theirs[1])


@pytest.mark.parametrize("lengths", [[3, 1, 2], [2, 4, 4]])
def test_packing_errors(lengths):
    x = torch.zeros(3, 3, 1)
    same_error(
        lambda: pyaten.nn.utils.rnn.pack_padded_sequence(from_torch(x), lengths),
        lambda: torch.nn.utils.rnn.pack_padded_sequence(x, lengths),
    )
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, [3, 2, 1])
    ours = pyaten.nn.utils.rnn.pack_padded_sequence(from_torch(x), [3, 2, 1])
    same_error(
        lambda: pyaten.nn.utils.rnn.pad_packed_sequence(ours, total_length=2),
        lambda: torch.nn.utils.rnn.pad_packed_sequence(packed, total_length=2),
    )
    same_error(
        lambda: pyaten.nn.utils.rnn.pack_padded_sequence(from_torch(x), [3, 0, 0]),
        lambda: torch.nn.utils.rnn.pack_padded_sequence(x, [3, 0, 0]),
    )


@pytest.mark.parametrize("kind", list(KINDS))
def test_layer_on_packed_input(kind):
    torch.manual_seed(10)
    cls, extra = KINDS[kind]
    ours, theirs = twin(cls, INPUT, HIDDEN, 2, bidirectional=True, **extra)
    lengths = [2, 4, 1, 3]
    padded = torch.randn(4, len(lengths), INPUT, dtype=torch.float64)
    x_ours, x_theirs = leaf(padded)
    packed_ours = pyaten.nn.utils.rnn.pack_padded_sequence(x_ours, lengths, enforce_sorted=False)
    packed_theirs = torch.nn.utils.rnn.pack_padded_sequence(
        x_theirs, lengths, enforce_sorted=False
    )
    h0 = torch.randn(4, len(lengths), HIDDEN, dtype=torch.float64)
    hx = (h0, torch.randn_like(h0)) if cls == "LSTM" else h0
    hx_pairs = [leaf(h) for h in (hx if cls == "LSTM" else (hx,))]
    hx_ours = tuple(p[0] for p in hx_pairs) if cls == "LSTM" else hx_pairs[0][0]
    hx_theirs = tuple(p[1] for p in hx_pairs) if cls == "LSTM" else hx_pairs[0][1]
    out_ours, state_ours = ours(packed_ours, hx_ours)
    out_theirs, state_theirs = theirs(packed_theirs, hx_theirs)
    assert type(out_ours).__name__ == "PackedSequence"
    _same(list(out_ours), list(out_theirs))
    assert_same(flat(state_ours), flat(state_theirs))
    padded_ours, _ = pyaten.nn.utils.rnn.pad_packed_sequence(out_ours)
    padded_theirs, _ = torch.nn.utils.rnn.pad_packed_sequence(out_theirs)
    weight = torch.randn_like(padded_theirs)
    results_theirs = [padded_theirs, *flat(state_theirs)]
    results_ours = [padded_ours, *flat(state_ours)]
    weights = [weight, *(torch.randn_like(t) for t in results_theirs[1:])]
    sum(((t * w).sum() for t, w in zip(results_theirs, weights))).backward()
    sum(((t * from_torch(w)).sum() for t, w in zip(results_ours, weights))).backward()
    assert_same(x_ours.grad, x_theirs.grad)
    for h_ours, h_theirs in hx_pairs:
        assert_same(h_ours.grad, h_theirs.grad)
    for p_ours, p_theirs in zip(ours.parameters(), theirs.parameters()):
        assert_same(p_ours.grad, p_theirs.grad)
    # without an initial state, too
    _same(list(ours(packed_ours)[0]), list(theirs(packed_theirs)[0]))


def test_import_does_not_load_the_recurrent_layers():
    import subprocess
    import sys

    code = "import sys, pyaten; print('pyaten.nn.modules.rnn' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.stdout.strip() == "False", done.stderr
