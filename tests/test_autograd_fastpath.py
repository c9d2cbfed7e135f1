"""The autograd fast paths give what the general paths give, against PyTorch.

- A leaf's first gradient becomes `.grad` without a copy when nothing else can see it
  (engine.py, Note: stealing the gradient); otherwise it is copied. Either way `.grad` has
  PyTorch's values and strides, later accumulation never writes into a tensor someone else
  holds, and hooks, `retain_graph`, `create_graph`, `inputs=`, `autograd.grad` and anomaly
  mode see the same gradients.
- `mm`/`addmm` compute a gradient in the layout of the input it flows to (PyTorch's
  mm_mat1/mm_mat2_backward): same values for every layout, alpha, beta and dtype.
- An input the formulas read only the dtype of is kept as a shared per-dtype object
  (`add`, `sub`): same gradients, real and complex mixed, first and second order.
"""

from __future__ import annotations

import weakref

import numpy as np
import pytest
import torch
from _grad_helpers import check_grads
from _helpers import assert_same, same_error

import pyaten
from pyaten.autograd.graph import DTYPE_ONLY, DtypeOnly

_RNG = np.random.default_rng(0)
_A = _RNG.standard_normal((3, 4))
_B = _RNG.standard_normal((4, 5))
_W = _RNG.standard_normal((5, 4))
_BIAS = _RNG.standard_normal(5)


def _leaf(m, value, dtype="float64"):
    return m.tensor(value, dtype=getattr(m, dtype), requires_grad=True)


def _in_both(fn):
    """`fn(m)` for pyaten and for torch."""
    return fn(pyaten), fn(torch)


# --- stealing the gradient -----------------------------------------------------------------


class _Remember(pyaten.autograd.Function):
    """A copy whose backward returns a fresh tensor (twice the gradient) and remembers its
    storage weakly, so a test can tell whether `.grad` is that tensor or a copy of it."""

    seen: list = []

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        fresh = grad * 2
        _Remember.seen.append(weakref.ref(fresh.untyped_storage()))
        return fresh


def test_a_gradient_no_one_else_sees_becomes_grad_without_a_copy() -> None:
    w = _leaf(pyaten, _A)
    _Remember.seen.clear()
    _Remember.apply(w).sum().backward()
    assert w.grad.untyped_storage() is _Remember.seen[0]()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 4), 2.0))


def test_a_gradient_a_hook_keeps_is_copied_and_stays_unchanged() -> None:
    def run(m):
        w = _leaf(m, _A)
        kept = []
        w.register_hook(lambda g: kept.append(g))
        (w * 3).sum().backward()
        (w * 3).sum().backward()  # accumulates into .grad in place
        return w.grad, kept[0]

    (grad_o, kept_o), (grad_t, kept_t) = _in_both(run)
    assert_same(grad_o, grad_t)
    assert_same(kept_o, kept_t)  # still 3s: the accumulation wrote into a copy
    assert grad_o.untyped_storage() is not kept_o.untyped_storage()


def test_one_gradient_reaching_two_leaves_gives_each_its_own_grad() -> None:
    def run(m):
        a, b = _leaf(m, _A), _leaf(m, _A)
        for _ in range(2):
            (a + b).sum().backward()
        a.grad.add_(1)  # must not change b.grad
        return a.grad, b.grad

    ours, theirs = _in_both(run)
    assert_same(ours, theirs)
    assert ours[0].untyped_storage() is not ours[1].untyped_storage()


def test_a_leaf_used_twice_gets_the_sum() -> None:
    ours, theirs = _in_both(lambda m: _grad_of(m, lambda w: (w * 2 + w.exp()).sum()))
    assert_same(ours, theirs)


def _grad_of(m, loss_fn, value=_A, **backward):
    w = _leaf(m, value)
    loss_fn(w).backward(**backward)
    return w.grad


@pytest.mark.parametrize("transposed", [False, True])
def test_grad_keeps_the_leafs_layout(transposed: bool) -> None:
    def run(m):
        value = m.tensor(_A.T.copy() if transposed else _A)
        w = (value.t() if transposed else value).detach().requires_grad_(True)
        ((w * w).sum() + w.sum()).backward()
        return w.grad

    ours, theirs = _in_both(run)
    assert_same(ours, theirs, strides=True)


def test_linear_layers_get_grads_in_their_own_layout() -> None:
    """The weight is used transposed (`x @ w.t()`): its gradient arrives in its layout."""
    def run(m):
        w, b = _leaf(m, _W), _leaf(m, _BIAS)
        x = m.tensor(np.arange(12.0).reshape(3, 4) / 7)
        for _ in range(2):
            m.nn.functional.linear(x, w, b).tanh().sum().backward()
        return w.grad, b.grad

    ours, theirs = _in_both(run)
    assert_same(ours, theirs, strides=True)
    assert [g._is_view() for g in ours] == [g._is_view() for g in theirs] == [False, False]


def test_create_graph_grad_keeps_its_history() -> None:
    def run(m):
        w = _leaf(m, _A)
        (w ** 3).sum().backward(create_graph=True)
        first = w.grad
        assert first.requires_grad
        (second,) = m.autograd.grad(first.sum(), w)
        return first.detach(), second

    ours, theirs = _in_both(run)
    assert_same(ours, theirs)


def test_retain_graph_backward_twice_accumulates() -> None:
    def run(m):
        w = _leaf(m, _A)
        y = (w.sin() * w).sum()
        y.backward(retain_graph=True)
        once = w.grad.clone()
        y.backward()
        return once, w.grad

    ours, theirs = _in_both(run)
    assert_same(ours, theirs)


def test_backward_inputs_and_autograd_grad_leave_other_grads_alone() -> None:
    def run(m):
        a, b = _leaf(m, _A), _leaf(m, _A)
        loss = (a * b).sum()
        loss.backward(inputs=[a], retain_graph=True)
        (gb,) = m.autograd.grad(loss, b)
        gb.add_(100)  # the returned gradient is the caller's: .grad must not see this
        return a.grad, b.grad, gb

    (a_o, b_o, gb_o), (a_t, b_t, gb_t) = _in_both(run)
    assert b_o is None and b_t is None
    assert_same([a_o, gb_o], [a_t, gb_t])


def test_anomaly_mode_and_post_accumulate_hooks_see_the_same_grads() -> None:
    def run(m):
        w = _leaf(m, _A)
        seen = []
        w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.clone()))
        with m.autograd.detect_anomaly():
            (w.exp() * 2).sum().backward()
        return w.grad, seen

    ours, theirs = _in_both(run)
    assert_same(ours, theirs)


def test_user_grad_tensor_is_never_taken() -> None:
    def run(m):
        w = _leaf(m, _A)
        seed = m.ones(3, 4, dtype=m.float64)
        w.clone().backward(seed)
        w.clone().backward(seed)  # accumulates: must not write into `seed`
        return w.grad, seed

    ours, theirs = _in_both(run)
    assert_same(ours, theirs)


# --- mm and addmm in the input's layout ----------------------------------------------------


def _maybe_t(value: np.ndarray, transposed: bool):
    return lambda m: (m.tensor(value.T.copy()).t() if transposed else m.tensor(value))


@pytest.mark.parametrize("t1", [False, True])
@pytest.mark.parametrize("t2", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_mm_gradients_for_every_layout(t1: bool, t2: bool, dtype: str) -> None:
    a, b = _A, _B
    if dtype == "complex128":
        a, b = a + 0.5j * a[::-1], b - 0.25j * b

    def run(m):
        x = _maybe_t(a, t1)(m).to(getattr(m, dtype)).detach().requires_grad_(True)
        y = _maybe_t(b, t2)(m).to(getattr(m, dtype)).detach().requires_grad_(True)
        out = x.mm(y)
        out.backward(m.ones_like(out))
        return x.grad, y.grad

    ours, theirs = _in_both(run)
    assert_same(ours, theirs, strides=True)


@pytest.mark.parametrize("t2", [False, True])
@pytest.mark.parametrize("alpha, beta", [(1, 1), (0.5, 2.0), (-2, 0)])
def test_addmm_gradients(t2: bool, alpha: float, beta: float) -> None:
    def call(lib):
        def fn(bias, x, w):
            return lib.addmm(bias, x, w.t() if t2 else w, alpha=alpha, beta=beta)
        return fn

    w = torch.tensor(_B.T.copy() if t2 else _B)
    inputs = [torch.tensor(_BIAS), torch.tensor(_A), w]
    check_grads(call(pyaten), call(torch), inputs, second_order=True)


# --- inputs kept as their dtype only -------------------------------------------------------


def test_add_keeps_only_the_dtypes() -> None:
    a = _leaf(pyaten, _A)
    out = pyaten.add(a, a * 2, alpha=3)
    assert isinstance(out.grad_fn.s_self, DtypeOnly) and out.grad_fn.s_self is DTYPE_ONLY[
        pyaten.float64]


@pytest.mark.parametrize("op", ["add", "sub"])
@pytest.mark.parametrize("dtypes", [("float64", "float64"), ("float64", "complex128"),
                                    ("complex128", "float64")])
def test_dtype_only_formulas_match_torch(op: str, dtypes: tuple) -> None:
    def value(dtype, shift):
        v = _A + shift
        return torch.tensor(v + 0.5j * v if dtype == "complex128" else v)

    inputs = [value(dtypes[0], 0.0), value(dtypes[1], 1.0)]
    check_grads(lambda x, y: getattr(pyaten, op)(x, y, alpha=2),
                lambda x, y: getattr(torch, op)(x, y, alpha=2), inputs, second_order=True)


@pytest.mark.parametrize("formula, dtype_only", [
    ("handle_r_to_c(self.dtype, grad)", {"self"}),
    ("grad if self.is_complex() else grad.real", {"self"}),
    ("grad.expand(self.shape).to(self.dtype)", set()),
    ("grad * self.dtype.itemsize", {"self"}),  # reads the dtype only
    ("grad / self.numel() if self.dtype.is_complex else grad", set()),
])
def test_the_generator_keeps_a_dtype_only_where_the_formula_reads_nothing_else(
        formula: str, dtype_only: set) -> None:
    from pyaten.codegen.gen_autograd import _dtype_only

    assert _dtype_only(formula) - {"grad", "handle_r_to_c"} == dtype_only


# --- what is saved: only what a needed gradient reads (PyTorch's should_compute_output) -----


def test_an_input_whose_gradients_are_not_needed_is_not_saved() -> None:
    """`a * w` with only `w` requiring grad keeps `a` (for w's gradient) but not `w`; so
    changing `w` in place afterwards is no error, as in PyTorch."""
    def run(m):
        a = m.tensor(_A)
        w = _leaf(m, _A)
        y = a * w
        with m.no_grad():
            w.add_(1.0)  # w's version moves on: harmless, nothing needs it
        y.sum().backward()
        return w.grad

    ours, theirs = _in_both(run)
    assert_same(ours, theirs)
    y = pyaten.tensor(_A) * _leaf(pyaten, _A)
    assert y.grad_fn.s_other is None and y.grad_fn.s_self is not None


def test_a_needed_input_changed_in_place_is_still_an_error() -> None:
    def run(m):
        a = _leaf(m, _A)
        b = m.tensor(_A)
        y = (a * b).sum()  # a's gradient reads b: b is saved
        b.add_(1.0)
        y.backward()

    same_error(lambda: run(pyaten), lambda: run(torch), message=False)


def test_in_place_op_on_a_non_leaf_clones_only_when_needed() -> None:
    def run(m):
        w = _leaf(m, _A)
        y = w * 1.5
        y.mul_(2.0)  # the old value of y is not needed (the factor needs no gradient)
        z = w * 3.0
        z.mul_(w)  # here it is: w's gradient (as `other`) reads the old z
        (y.sum() + z.sum()).backward()
        return w.grad, y.grad_fn, z.grad_fn

    (grad_o, y_fn, z_fn), (grad_t, _, _) = _in_both(run)
    assert_same(grad_o, grad_t)
    assert y_fn.s_self is None and z_fn.s_self is not None
