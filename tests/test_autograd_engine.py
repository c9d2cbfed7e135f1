"""The engine and the tensor-side autograd API, scenario by scenario against torch.

Each scenario is a function of the library (`m` is pyaten or torch) returning what a user
would look at (gradients, flags, names); `same_scenario` runs it in both and compares, errors
included (type and message).
"""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest
import torch
from _helpers import assert_same, run_both, same_error

import pyaten


def same_scenario(fn) -> None:
    pair = run_both(lambda: fn(pyaten), lambda: fn(torch))
    if pair is None:
        return
    ours, theirs = pair
    assert_same(ours, theirs)


def _leaf(m, values, dtype="float64"):
    return m.tensor(values, dtype=getattr(m, dtype), requires_grad=True)


# --- values of gradients through small graphs ---------------------------------------------

def test_backward_accumulates_into_leaves():
    def scenario(m):
        w = _leaf(m, [1.0, 2.0, 3.0])
        (w * w).sum().backward()
        (w * 3).sum().backward()
        return w.grad

    same_scenario(scenario)


def test_shared_subexpression_and_broadcasting():
    def scenario(m):
        a = _leaf(m, [[1.0, 2.0], [3.0, 4.0]])
        b = _leaf(m, [0.5, -1.0])
        c = a * b + a
        d = (c * c).sum(1) - c.sum()
        d.sum().backward()
        return a.grad, b.grad

    same_scenario(scenario)


def test_grad_returns_without_accumulating():
    def scenario(m):
        x = _leaf(m, [1.0, -2.0])
        y = (x.exp() * x).sum()
        (g,) = m.autograd.grad(y, x)
        return g, x.grad is None

    same_scenario(scenario)


def test_create_graph_gives_second_derivatives():
    def scenario(m):
        x = _leaf(m, [0.5, 1.5])
        y = (x * x * x).sum()
        (g,) = m.autograd.grad(y, x, create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), x)
        return g.detach(), gg

    same_scenario(scenario)


def test_backward_with_gradient_argument_and_inputs():
    def scenario(m):
        x = _leaf(m, [1.0, 2.0])
        y = _leaf(m, [3.0, 4.0])
        z = x * y
        z.backward(m.tensor([1.0, -1.0], dtype=m.float64), inputs=[x])
        return x.grad, y.grad is None

    same_scenario(scenario)


def test_allow_unused_and_materialize_grads():
    def scenario(m):
        x = _leaf(m, [1.0])
        y = _leaf(m, [2.0])
        out = (x * 2).sum()
        a = m.autograd.grad(out, [x, y], allow_unused=True, retain_graph=True)
        b = m.autograd.grad(out, [x, y], materialize_grads=True)
        return a[1] is None, b[1]

    same_scenario(scenario)


# --- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("scenario", [
    lambda m: (_leaf(m, [1.0]) * 2).sum().backward() or (_leaf(m, [1.0]).add_(1)),
    lambda m: _leaf(m, [1.0, 2.0])[0].add_(1),
    lambda m: (lambda y: (y.backward(), y.backward()))((_leaf(m, [1.0]) * _leaf(m, [2.0])).sum()),
    lambda m: (_leaf(m, [1.0, 2.0]) * 2).backward(),
    lambda m: m.ones(2).sum().backward(),
    lambda m: m.autograd.grad(_leaf(m, [1.0]).sum(), [_leaf(m, [2.0])]),
    lambda m: (_leaf(m, [1.0, 2.0]) * 2).sum().backward(m.ones(2, dtype=m.float64)),
    lambda m: m.add(_leaf(m, [1.0]), 1.0, out=m.empty(1, dtype=m.float64)),
    lambda m: m.mul(_leaf(m, [1.0]), _leaf(m, [1.0]), out=m.empty(1, dtype=m.float64)),
])
def test_errors_match_torch(scenario):
    same_error(lambda: scenario(pyaten), lambda: scenario(torch))


def test_saved_tensor_modified_in_place():
    def scenario(m):
        a = _leaf(m, [1.0, 2.0, 3.0], "float32")
        b = a * 1
        c = b * b
        b.add_(1)
        c.sum().backward()

    same_error(lambda: scenario(pyaten), lambda: scenario(torch))


def test_saved_output_modified_in_place():
    def scenario(m):
        x = _leaf(m, [1.0, 2.0, 3.0], "float32")
        y = x.exp()
        y.add_(1)
        y.sum().backward()

    same_error(lambda: scenario(pyaten), lambda: scenario(torch))


def test_saved_leaf_modified_under_no_grad():
    def scenario(m):
        x = _leaf(m, [1.0, 2.0, 3.0])
        y = x * x
        with m.no_grad():
            x.add_(1)
        y.sum().backward()

    same_error(lambda: scenario(pyaten), lambda: scenario(torch))


def test_missing_derivative_raises_at_backward():
    from pyaten.autograd.runtime import record_not_implemented

    x = pyaten.tensor([1.0, 2.0], requires_grad=True)
    y = record_not_implemented("aten::foo", [x], x.detach() * 2)
    assert y.grad_fn.name() == "NotImplemented" and y.requires_grad
    with pytest.raises(RuntimeError, match="^derivative for aten::foo is not implemented$"):
        y.sum().backward()


# --- flags, names, graph structure ---------------------------------------------------------

def test_flags_and_grad_fn_names():
    def scenario(m):
        x = _leaf(m, [1.0, 2.0])
        y = x * 2
        z = y.sum()
        names = (type(y.grad_fn).__name__ if m is pyaten else y.grad_fn.name(),
                 z.grad_fn.name())
        nxt = y.grad_fn.next_functions
        return (x.is_leaf, y.is_leaf, y.requires_grad, x.grad_fn is None, names,
                nxt[0][1], nxt[1][0] is None, type(nxt[0][0]).__name__, repr(y))

    pair = run_both(lambda: scenario(pyaten), lambda: scenario(torch))
    ours, theirs = pair
    assert ours[:8] == theirs[:8]
    assert ours[8].replace("pyaten", "torch") == theirs[8]


def test_no_grad_enable_grad_and_set_grad_enabled():
    def scenario(m):
        x = _leaf(m, [1.0])
        with m.no_grad():
            a = x * 2
            with m.enable_grad():
                b = x * 2
        m.set_grad_enabled(False)
        c = x * 2
        m.set_grad_enabled(True)
        with m.set_grad_enabled(False):
            d = x * 2

        @m.no_grad()
        def f(t):
            return t * 2

        return (a.requires_grad, b.requires_grad, c.requires_grad, d.requires_grad,
                f(x).requires_grad, m.is_grad_enabled())

    same_scenario(scenario)


def test_grad_mode_is_per_thread():
    seen = []
    with pyaten.no_grad():
        t = threading.Thread(target=lambda: seen.append(pyaten.is_grad_enabled()))
        t.start()
        t.join(timeout=60)
        assert not pyaten.is_grad_enabled()
    assert seen == [True]


def test_inference_mode():
    def scenario(m):
        x = _leaf(m, [1.0, 2.0])
        with m.inference_mode():
            y = x * 2
            inside = m.is_inference_mode_enabled()
        return y.requires_grad, inside, m.is_inference_mode_enabled()

    same_scenario(scenario)


def test_detach_and_detach_():
    def scenario(m):
        x = _leaf(m, [1.0, 2.0])
        d = x.detach()
        y = x * 2
        y.detach_()
        d.add_(1)  # shares storage and version counter with x
        return d.requires_grad, d.is_leaf, y.requires_grad, y.grad_fn is None, x._version

    same_scenario(scenario)


def test_hooks_and_retain_grad():
    def scenario(m):
        x = _leaf(m, [1.0, 2.0])
        y = x * 3
        y.retain_grad()
        seen = []
        y.register_hook(lambda g: seen.append(g.sum().item()))
        h = x.register_hook(lambda g: g * 10)
        (y * y).sum().backward(retain_graph=True)
        h.remove()
        (y * y).sum().backward()
        return x.grad, y.grad, seen

    same_scenario(scenario)


def test_node_hooks():
    def scenario(m):
        x = _leaf(m, [1.0, 2.0])
        y = x * 2
        calls = []
        y.grad_fn.register_prehook(lambda go: calls.append("pre"))
        y.grad_fn.register_hook(lambda gi, go: calls.append(len(gi)))
        y.sum().backward()
        return calls, x.grad

    same_scenario(scenario)


# --- in-place and views (PyTorch's "Autograd mechanics") -----------------------------------

def test_inplace_on_nonleaf_records():
    def scenario(m):
        x = _leaf(m, [1.0, 2.0])
        y = x * 1
        y.mul_(x)
        y.add_(1)
        y.sum().backward()
        return x.grad, type(y.grad_fn).__name__ if m is pyaten else y.grad_fn.name()

    same_scenario(scenario)


def test_inplace_through_a_view_rebases_the_base():
    def scenario(m):
        x = _leaf(m, [1.0, 2.0])
        base = m.zeros(4, dtype=m.float64)
        base[1:3].copy_(x * 2)
        (base * m.arange(4, dtype=m.float64)).sum().backward()
        name = base.grad_fn.name()
        return x.grad, name

    same_scenario(scenario)


def test_view_of_nonleaf_written_in_place():
    def scenario(m):
        x = _leaf(m, [1.0, 2.0, 3.0, 4.0])
        y = x.clone()
        v = y[:2]
        v.mul_(3)
        (y * y).sum().backward()
        return x.grad

    same_scenario(scenario)


# --- graph freeing ----------------------------------------------------------------------------

def test_graph_is_freed_without_cycles():
    x = pyaten.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).exp()
    node = weakref.ref(y.grad_fn)
    y.sum().backward()
    del y
    gc.disable()
    try:
        assert node() is None
    finally:
        gc.enable()


def test_saved_tensors_released_after_backward():
    x = pyaten.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    saved = weakref.ref(h)
    y = (h * h).sum()  # MulBackward saves h
    del h
    assert saved() is not None
    y.backward()
    assert saved() is None


def test_gradcheck_accepts_right_and_rejects_wrong():
    x = pyaten.tensor(np.array([0.3, -0.7]), requires_grad=True)
    assert pyaten.autograd.gradcheck(lambda t: (t * t).exp(), [x])
    assert pyaten.autograd.gradgradcheck(lambda t: (t * t * t).sum(), [x])

    class Wrong(pyaten.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    assert not pyaten.autograd.gradcheck(Wrong.apply, [x], raise_exception=False)


# --- forward mode ----------------------------------------------------------------------------

def test_forward_mode_dual_tensors():
    def scenario(m):
        fw = m.autograd.forward_ad
        x = m.tensor([0.5, 1.0], dtype=m.float64)
        v = m.tensor([1.0, 2.0], dtype=m.float64)
        with fw.dual_level():
            d = fw.make_dual(x, v)
            y = (d * d).exp().sum()
            z = x.clone()
            z.mul_(d)
            primal, tangent = fw.unpack_dual(y)
            out = (primal, tangent, fw.unpack_dual(z).tangent, fw.unpack_dual(x).tangent is None)
        return out + (fw.unpack_dual(d).tangent is None,)

    same_scenario(scenario)


def test_forward_mode_agrees_with_backward_mode():
    rng = np.random.default_rng(3)
    a = pyaten.tensor(rng.standard_normal((3, 4)))
    b = pyaten.tensor(rng.standard_normal((4, 2)))
    u = pyaten.tensor(rng.standard_normal((3, 4)))
    w = pyaten.tensor(rng.standard_normal((3, 2)))
    fw = pyaten.autograd.forward_ad

    def f(x):
        return (x.mm(b) * 2 - x.sum(1, keepdim=True)).exp()

    with fw.dual_level():
        jvp = fw.unpack_dual(f(fw.make_dual(a, u))).tangent
    x = a.clone().requires_grad_(True)
    (vjp,) = pyaten.autograd.grad(f(x), x, w)
    np.testing.assert_allclose((jvp * w).sum().item(), (vjp * u).sum().item(), rtol=1e-10)


# --- autograd.functional -------------------------------------------------------------------

@pytest.mark.parametrize("what", ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"])
def test_functional_matches_torch(what):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 3))
    b = rng.standard_normal((2, 3))

    def scenario(m):
        x = m.tensor(a)
        v = m.tensor(b)
        F = m.autograd.functional

        def f(t):
            return (t * t).exp() * 0.1 + t

        def scalar(t):
            return (t * t * t).sum()

        if what == "vjp":
            return F.vjp(f, x, v)
        if what == "jvp":
            return F.jvp(f, x, v)
        if what == "jacobian":
            return F.jacobian(f, x)
        if what == "hessian":
            return F.hessian(scalar, x)
        return getattr(F, what)(scalar, x, v)

    same_scenario(scenario)


def test_register_autograd_for_a_library_operator():
    from pyaten.library import Library

    def kernel(x):
        return pyaten.from_numpy(np.sin(x.detach().numpy()))

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()

    with Library("autograd_test", "DEF") as lib:
        lib.define("mysin(Tensor x) -> Tensor")
        lib.impl("mysin", kernel, "CPU")
        pyaten.library.register_autograd("autograd_test::mysin", backward,
                                         setup_context=setup, lib=lib)
        x = pyaten.tensor([0.5, 1.0], dtype=pyaten.float64, requires_grad=True)
        y = pyaten.ops.autograd_test.mysin(x)
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.cos([0.5, 1.0]))
        assert y.grad_fn.name() == "mysinBackward"


def test_anomaly_mode_names_the_node_returning_nan():
    def scenario(m):
        x = m.tensor([0.0, 1.0], dtype=m.float64, requires_grad=True)
        with m.autograd.detect_anomaly():
            y = x.sqrt() * 0
            y.sum().backward()

    same_error(lambda: scenario(pyaten), lambda: scenario(torch))
    assert pyaten.is_anomaly_enabled() is False and pyaten.is_anomaly_check_nan_enabled()


def test_inplace_write_without_differentiable_inputs_cuts_the_history():
    def scenario(m):
        x = _leaf(m, [1.0, 2.0, 3.0])
        a = x * 2
        a.eq_(m.tensor([2.0, 0.0, 6.0], dtype=m.float64))
        (g,) = m.autograd.grad((a * x).sum(), x)
        return g, a.requires_grad

    same_scenario(scenario)


def test_grad_of_a_non_leaf_warns_as_torch():
    x = pyaten.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="The .grad attribute of a Tensor that is not a leaf"):
        assert (x * 2).grad is None
    y = x * 2
    y.retain_grad()
    y.sum().backward()
    assert y.grad.tolist() == [1.0, 1.0]


# --- creation of views: in-place view operations, no_grad views, multi-output views -------

@pytest.mark.parametrize("ops", [
    ("transpose_",), ("t_", "unsqueeze_", "squeeze_"), ("unsqueeze_",), ("squeeze_",),
])
def test_inplace_view_op_on_a_view_then_a_write(ops):
    def scenario(m):
        a = _leaf(m, np.arange(12.0).reshape(3, 4).tolist())
        b = a.clone()
        v = b[0:2] if ops != ("squeeze_",) else b[0:1]
        for op in ops:
            v = getattr(v, op)(*((0, 1) if op == "transpose_" else (0,) if op in (
                "unsqueeze_",) else ()))
        v.mul_(m.arange(1.0, 1.0 + v.numel(), dtype=m.float64).reshape(v.shape))
        (b * b).sum().backward()
        return (tuple(v.shape), type(b.grad_fn).__name__, type(v.grad_fn).__name__, a.grad)
    same_scenario(scenario)


def test_view_made_in_no_grad_mode_cannot_be_written_with_grad_enabled():
    def nonleaf_base(m):
        b = _leaf(m, [1.0, 2.0, 3.0]) * 1
        with m.no_grad():
            v = b[0:2]
        flags = (v.requires_grad, v.is_leaf, v.grad_fn is None)
        v.mul_(2)
        return flags

    def leaf_base(m):
        a = _leaf(m, [1.0, 2.0, 3.0])
        with m.no_grad():
            v = a[0:2]
        v.add_(1)

    def written_in_no_grad(m):
        b = _leaf(m, [1.0, 2.0, 3.0]) * 1
        with m.no_grad():
            v = b[0:2]
            v.mul_(2)
        return b.detach(), v.requires_grad

    def base_without_grad(m):
        b = m.tensor([1.0, 2.0, 3.0])
        with m.no_grad():
            v = b[0:2]
        v.mul_(2)
        return b, v.requires_grad

    for scenario in (nonleaf_base, leaf_base, written_in_no_grad, base_without_grad):
        same_scenario(scenario)


@pytest.mark.parametrize("split", ["unbind", "split", "chunk", "split_with_sizes"])
def test_outputs_of_a_multi_view_call_cannot_be_written_in_place(split):
    def scenario(m):
        b = _leaf(m, np.ones((4, 6)).tolist()).clone()
        pieces = {"unbind": lambda: b.unbind(), "split": lambda: b.split(2),
                  "chunk": lambda: b.chunk(2),
                  "split_with_sizes": lambda: b.split_with_sizes([1, 3])}[split]()
        pieces[1].mul_(2)
    same_scenario(scenario)


def test_rsub_with_a_number_records_the_scalar_overload():
    def scenario(m):
        a = _leaf(m, [1.0, 2.0])
        names = [type(x.grad_fn).__name__ for x in (m.rsub(a, 2), 2 - a, m.rsub(a, a))]
        (2 - a).sum().backward()
        return names, a.grad
    same_scenario(scenario)
