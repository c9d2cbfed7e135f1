"""pyaten.utils.checkpoint against torch.utils.checkpoint: the same gradients as the plain
model (dropout included, through the saved random state), both modes, autograd.grad, the
warnings and errors, checkpoint_sequential, and fewer saved tensors."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.utils.checkpoint
from _helpers import assert_same, from_torch

import pyaten
import pyaten.utils.checkpoint
from pyaten.autograd.graph import SavedTensor


def _models():
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(
        torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Dropout(0.3), torch.nn.Linear(16, 16),
        torch.nn.GELU(), torch.nn.Linear(16, 3),
    )
    ours = pyaten.nn.Sequential(
        pyaten.nn.Linear(5, 16), pyaten.nn.Tanh(), pyaten.nn.Dropout(0.3),
        pyaten.nn.Linear(16, 16), pyaten.nn.GELU(), pyaten.nn.Linear(16, 3),
    )
    ours.load_state_dict({k: from_torch(v) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _grads(m, model, x, run):
    """Seeded forward through `run`, backward of a weighted sum; the parameters' and the
    input's gradients."""
    for p in model.parameters():
        p.grad = None
    x = x.detach().requires_grad_(True)
    m.manual_seed(7)
    out = run(x)
    (out * m.arange(3.0)).sum().backward()
    return [p.grad for p in model.parameters()] + [x.grad]


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_same_gradients_as_the_plain_model_and_as_torch(use_reentrant) -> None:
    ours, theirs = _models()
    x_t = torch.randn(4, 5)
    x_o = from_torch(x_t)
    ck_o, ck_t = pyaten.utils.checkpoint.checkpoint, torch.utils.checkpoint.checkpoint

    plain = _grads(pyaten, ours, x_o, lambda x: ours(x))
    checked = _grads(pyaten, ours, x_o, lambda x: ours[3:](
        ck_o(ours[:3], x, use_reentrant=use_reentrant)))
    for a, b in zip(plain, checked):
        assert pyaten.equal(a, b)  # the dropout mask is drawn again from the saved state
    theirs_checked = _grads(torch, theirs, x_t, lambda x: theirs[3:](
        ck_t(theirs[:3], x, use_reentrant=use_reentrant)))
    for a, b in zip(checked, theirs_checked):
        assert_same(a, b)


def test_rng_state_is_restored_after_recompute() -> None:
    model = pyaten.nn.Dropout(0.5)
    x = pyaten.ones(8, requires_grad=True)
    out = pyaten.utils.checkpoint.checkpoint(model, x, use_reentrant=False)
    pyaten.manual_seed(3)
    before = pyaten.get_rng_state()
    out.sum().backward()
    assert pyaten.equal(pyaten.get_rng_state(), before)


def test_non_reentrant_answers_autograd_grad_and_kwargs() -> None:
    ours, theirs = _models()
    ours.eval(), theirs.eval()
    x_t = torch.randn(2, 5)

    def run(m, model, ck, x):
        def fn(x, scale=1.0):
            return model(x) * scale

        out = ck(fn, x, use_reentrant=False, scale=2.0)
        return m.autograd.grad(out.sum(), list(model.parameters()))

    assert_same(run(pyaten, ours, pyaten.utils.checkpoint.checkpoint, from_torch(x_t)),
                run(torch, theirs, torch.utils.checkpoint.checkpoint, x_t))


def test_parameters_only_and_non_tensor_outputs() -> None:
    lin = pyaten.nn.Linear(3, 2)
    x = pyaten.ones(1, 3)  # no input requires grad: the parameters still get gradients
    out, tag = pyaten.utils.checkpoint.checkpoint(
        lambda t: (lin(t), "tag"), x, use_reentrant=False)
    assert tag == "tag"
    out.sum().backward()
    assert lin.weight.grad is not None and pyaten.equal(lin.weight.grad, pyaten.ones(2, 3))


def _warning(fn) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message).replace("torch.", "pyaten.") for w in caught]


def test_use_reentrant_warning_and_errors_match_torch() -> None:
    lin_o, lin_t = pyaten.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    x_o, x_t = pyaten.ones(1, 2, requires_grad=True), torch.ones(1, 2, requires_grad=True)
    assert _warning(lambda: pyaten.utils.checkpoint.checkpoint(lin_o, x_o)) == _warning(
        lambda: torch.utils.checkpoint.checkpoint(lin_t, x_t))
    seq_o = pyaten.nn.Sequential(lin_o, pyaten.nn.Linear(2, 2))
    seq_t = torch.nn.Sequential(lin_t, torch.nn.Linear(2, 2))
    assert _warning(lambda: pyaten.utils.checkpoint.checkpoint_sequential(seq_o, 2, x_o)) == (
        _warning(lambda: torch.utils.checkpoint.checkpoint_sequential(seq_t, 2, x_t)))
    assert _warning(lambda: pyaten.utils.checkpoint.checkpoint(
        lin_o, pyaten.ones(1, 2), use_reentrant=True)) == _warning(
        lambda: torch.utils.checkpoint.checkpoint(lin_t, torch.ones(1, 2), use_reentrant=True))
    for kwargs in ({"use_reentrant": True, "foo": 1},
                   {"use_reentrant": True, "context_fn": lambda: (None, None)},
                   {"use_reentrant": False, "determinism_check": "x"}):
        with pytest.raises(ValueError) as ours:
            pyaten.utils.checkpoint.checkpoint(lin_o, x_o, **kwargs)
        with pytest.raises(ValueError) as theirs:
            torch.utils.checkpoint.checkpoint(lin_t, x_t, **kwargs)
        assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("use_reentrant", [True, False])
@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential(use_reentrant, segments) -> None:
    ours, theirs = _models()
    ours.eval(), theirs.eval()
    x_t = torch.randn(3, 5, requires_grad=True)
    x_o = from_torch(x_t.detach()).requires_grad_(True)
    out_o = pyaten.utils.checkpoint.checkpoint_sequential(
        ours, segments, x_o, use_reentrant=use_reentrant)
    out_t = torch.utils.checkpoint.checkpoint_sequential(
        theirs, segments, x_t, use_reentrant=use_reentrant)
    assert_same(out_o, out_t.detach())
    out_o.sum().backward(), out_t.sum().backward()
    assert_same(x_o.grad, x_t.grad)
    assert_same(ours[0].weight.grad, theirs[0].weight.grad)


def _saved_bytes(root) -> int:
    """The bytes of the distinct storages the graph below `root` keeps for backward."""
    storages, seen, stack = {}, set(), [root]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        values = list(getattr(node, "__dict__", {}).values())
        for cls in type(node).__mro__:
            values += [getattr(node, s, None) for s in getattr(cls, "__slots__", ())]
        for value in values:
            for item in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(item, SavedTensor) and item._data is not None:
                    storages[id(item._data._storage)] = item._data._storage.nbytes
        stack += [child for child, _ in node.next_functions]
    return sum(storages.values())


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpointing_keeps_less_for_backward(use_reentrant) -> None:
    blocks = [
        pyaten.nn.Sequential(pyaten.nn.Linear(64, 256), pyaten.nn.Tanh(),
                             pyaten.nn.Linear(256, 64))
        for _ in range(6)
    ]
    x = pyaten.randn(32, 64, requires_grad=True)
    plain = x
    for block in blocks:
        plain = block(plain)
    checked = x
    for block in blocks:
        checked = pyaten.utils.checkpoint.checkpoint(
            block, checked, use_reentrant=use_reentrant)
    plain_bytes, checked_bytes = _saved_bytes(plain.grad_fn), _saved_bytes(checked.grad_fn)
    inputs, hidden = 6 * 32 * 64 * 4, 6 * 32 * 256 * 4
    weights = 6 * 2 * 64 * 256 * 4
    params = sum(p.numel() for b in blocks for p in b.parameters()) * 4
    # plain: each block keeps its input, its weights and its hidden activation
    assert plain_bytes == inputs + hidden + weights
    # checkpointed: the blocks' inputs only (the non-reentrant node also holds the
    # parameters it differentiates, which the model holds anyway)
    assert checked_bytes == (inputs if use_reentrant else inputs + params)
    assert pyaten.allclose(plain, checked)


def test_non_reentrant_nested_outputs_match_torch() -> None:
    ours, theirs = _models()
    ours.eval(), theirs.eval()
    x_t = torch.randn(2, 5)

    def run(m, model, ck, x):
        x = x.requires_grad_(True)

        def fn(t):
            h = model(t)
            return {"out": h, "pair": [h * 2, "tag"], "index": m.arange(3)}

        result = ck(fn, x, use_reentrant=False)
        assert result["pair"][1] == "tag" and result["index"].dtype == m.int64
        (result["out"].sum() + result["pair"][0].pow(2).sum()).backward()
        return x.grad, model[0].weight.grad

    assert_same(run(pyaten, ours, pyaten.utils.checkpoint.checkpoint, from_torch(x_t)),
                run(torch, theirs, torch.utils.checkpoint.checkpoint, x_t.clone()))


def test_recomputation_that_differs_raises_checkpoint_error() -> None:
    calls = []

    def fn(t):
        calls.append(1)
        return t[: len(calls)] * 2  # a different shape the second time

    y = pyaten.utils.checkpoint.checkpoint(fn, pyaten.ones(3, requires_grad=True),
                                           use_reentrant=False)
    with pytest.raises(pyaten.utils.checkpoint.CheckpointError,
                       match="Recomputed values for the following tensors have different "
                             "metadata than during the forward pass"):
        y.sum().backward()
    assert issubclass(pyaten.utils.checkpoint.CheckpointError, RuntimeError)
