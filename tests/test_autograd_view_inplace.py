"""A view's history after an in-place write into its base (or a sibling view), against PyTorch.

PyTorch gives every other view of the written base a new grad_fn (`AsStridedBackward0` over
the base's new node), so gradients read the values the views hold now; views that cannot be
rebased (made in no_grad mode, outputs of split/unbind) refuse. Each program runs in both
libraries; the input gradients, the grad_fn names and the versions must agree.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten

torch.set_num_threads(1)


def _name(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def _next_names(t):
    return [None if fn is None else type(fn).__name__ for fn, _ in t.grad_fn.next_functions]


def _sibling_select(P, x):
    b = x * 1
    v1, v2 = b[0], b[1]
    v2.mul_(2)
    seen = [v1, v2, b]
    return (v1 * 3).sum() + (b * b).sum(), seen


def _base_write_view(P, x):
    b = x.clone()
    v = b.view(-1)
    b.add_(x * x)
    return (v * v).sum(), [v, b]


def _slice_sibling(P, x):
    b = x.clone()
    left, right = b[:, :2], b[:, 2:]
    right.add_(1)
    return (left.exp() * 2).sum() + right.sum(), [left, right, b]


def _transpose_after_row_write(P, x):
    b = x.clone()
    t = b.t()
    b[0].mul_(3)
    return (t * t).sum(), [t, b]


def _diagonal_after_base_mul(P, x):
    b = x.clone()
    d = b.diagonal()
    b.mul_(x)
    return (d ** 3).sum(), [d, b]


def _view_of_view(P, x):
    b = x.clone()
    flat = b.view(-1)
    window = flat[2:7]
    b[1].zero_()
    return (window * window).sum() + flat.sum(), [window, flat, b]


def _write_through_view_of_view(P, x):
    b = x.clone()
    window = b.view(-1)[3:6]
    row = b[2]
    window.mul_(5)
    return (row * row).sum() + window.sum(), [row, window, b]


def _permute_unsqueeze(P, x):
    b = x.clone()
    p = b.unsqueeze(0).permute(2, 0, 1)
    col = b[:, 1]
    col.sin_()
    return (p * p).sum(), [p, col, b]


def _two_writes(P, x):
    b = x.clone()
    v0, v1, v2 = b[0], b[1], b[2]
    v1.mul_(2)
    v2.add_(v0)  # the regenerated v0 is read by a write into a sibling
    return (v0 * v1).sum() + (v2 * v2).sum(), [v0, v1, v2, b]


def _view_taken_between_writes(P, x):
    b = x.clone()
    v = b[0]
    b.mul_(2)
    w = v[1:]
    b.add_(1)
    return (v * w.sum()).sum(), [v, w, b]


def _retain_grad_follows(P, x):
    b = x.clone()
    v = b[0]
    v.retain_grad()
    b.mul_(2)
    loss = (v * v).sum()
    return loss, [v, b]


def _retain_grad_on_the_written(P, x):
    b = x * 1
    b.retain_grad()
    v, w = b[0], b[1]
    v.retain_grad()
    w.retain_grad()
    v.mul_(2)
    b.add_(1)
    return (v * 3).sum() + (w * w).sum(), [v, w, b]


def _write_with_sibling_operand(P, x):
    b = x.clone()
    v1, v2 = b[0], b[1]
    v2.mul_(v1)
    return (v1 * v2).sum() + b.sum(), [v1, v2, b]


def _select_of_transpose_sibling(P, x):
    b = x.clone()
    t = b.transpose(0, 1)
    col = t[1]
    t[2].copy_(x[:, 0] * 4)
    return (col * col).sum() + (t * 1).sum(), [col, t, b]


PROGRAMS = [
    _sibling_select, _base_write_view, _slice_sibling, _transpose_after_row_write,
    _diagonal_after_base_mul, _view_of_view, _write_through_view_of_view, _permute_unsqueeze,
    _two_writes, _view_taken_between_writes, _retain_grad_follows, _retain_grad_on_the_written,
    _write_with_sibling_operand,
    _select_of_transpose_sibling,
]


def _run(P, program, array):
    try:
        return _record(P, program, array)
    except RuntimeError as e:  # both must refuse alike (a saved view written later)
        return {"error": str(e).replace("torch.", "pyaten.")}


def _record(P, program, array):
    x = P.tensor(array.copy(), requires_grad=True)
    loss, seen = program(P, x)
    record = {
        "names": [_name(t) for t in seen],
        "next": [_next_names(t) for t in seen],
        "versions": [t._version for t in seen],
        "requires_grad": [t.requires_grad for t in seen],
    }
    loss.backward()
    record["grad"] = x.grad.numpy()
    record["retained"] = [None if t.grad is None else t.grad.numpy()
                          for t in seen if t.retains_grad]
    return record


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__[1:] for p in PROGRAMS])
def test_view_history_after_a_write_matches_torch(program):
    array = np.arange(16, dtype=np.float32).reshape(4, 4) / 8 - 0.7
    ours, theirs = _run(pyaten, program, array), _run(torch, program, array)
    assert ours.get("error") == theirs.get("error")
    if "error" in ours:
        return
    for key in ("names", "next", "versions", "requires_grad"):
        assert ours[key] == theirs[key], key
    np.testing.assert_allclose(ours["grad"], theirs["grad"], rtol=1e-5, atol=1e-6)
    assert len(ours["retained"]) == len(theirs["retained"])
    for a, b in zip(ours["retained"], theirs["retained"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _hook_on_a_view(P):
    x = P.ones(3, 2, requires_grad=True)
    b = x * 1
    v = b[0]
    calls = []
    v.register_hook(lambda g: calls.append(tuple(g.shape)))
    b[1].add_(1)
    (v * 2).sum().backward()
    return calls, x.grad.numpy()


def test_a_hook_on_the_old_grad_fn_does_not_run_as_torch():
    ours, theirs = _hook_on_a_view(pyaten), _hook_on_a_view(torch)
    assert ours[0] == theirs[0] == []
    np.testing.assert_allclose(ours[1], theirs[1])


def _refused(P, kind):
    x = P.ones(4, 2, requires_grad=True)
    b = x * 1
    if kind == "no_grad":
        with P.no_grad():
            view = b[0]
    elif kind == "unbind":
        view = b.unbind(0)[1]
    else:
        view = b.split(2)[1]
    b.mul_(2)
    (view * 2).sum().backward()  # torch refuses on reading view.grad_fn, pyaten on backward


@pytest.mark.parametrize(("kind", "message"), [
    ("no_grad", "A view was created in no_grad mode and its base or another view of its base "
                "has been modified inplace with grad mode enabled"),
    ("unbind", "Output 1 of Unbind is a view and its base or another view of its base has been "
               "modified inplace"),
    ("split", "Output 1 of Split is a view and its base or another view of its base has been "
              "modified inplace"),
])
def test_views_that_cannot_be_rebased_refuse_as_torch(kind, message):
    with pytest.raises(RuntimeError, match=message):
        _refused(torch, kind)
    with pytest.raises(RuntimeError, match=message):
        _refused(pyaten, kind)


def _write_under_no_grad(P):
    x = P.arange(6.0).reshape(2, 3).requires_grad_()
    b = x * 1
    v = b[0]
    with P.no_grad():
        b.mul_(2)
    (v * v).sum().backward()
    return v._version, x.grad.numpy()


def test_a_write_under_no_grad_keeps_the_gradient_as_torch():
    # torch names the view's node AsStridedBackward0 over the base's unchanged node; pyaten
    # keeps SelectBackward0 there: the same gradient either way
    ours, theirs = _write_under_no_grad(pyaten), _write_under_no_grad(torch)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1])


def _row_program(P, array, read, write, scale):
    x = P.tensor(array.copy(), requires_grad=True)
    b = x * 1
    kept = b[read]
    b[write].mul_(scale)
    ((kept * kept).sum() + (b * x).sum()).backward()
    return x.grad.numpy(), _name(kept)


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(2, 4), cols=st.integers(1, 3), data=st.data())
def test_a_row_read_after_a_row_write_matches_torch(rows, cols, data):
    read = data.draw(st.integers(0, rows - 1))
    write = data.draw(st.integers(0, rows - 1))
    scale = data.draw(st.sampled_from([-2.0, 0.5, 3.0]))
    array = np.linspace(-1, 1, rows * cols, dtype=np.float32).reshape(rows, cols)
    ours = _row_program(pyaten, array, read, write, scale)
    theirs = _row_program(torch, array, read, write, scale)
    assert ours[1] == theirs[1]
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-6)
