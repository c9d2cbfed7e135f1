"""A compiled function's saved values are version-checked as eager's: an in-place write to a
value the backward needs, between forward and backward, raises eager's error (torch's
aot_autograd saves them through save_for_backward too)."""

from __future__ import annotations

import pytest
import torch

import pyaten


def _program(lib):
    def f(x, w):
        return (x * w).sigmoid().sum()
    return f


@pytest.mark.parametrize("backend", ["aot_eager", "pyaten"])
def test_writing_a_saved_input_before_backward_raises_as_eager(backend):
    def outcome(lib, compile_):
        x = lib.randn(4, requires_grad=True)
        w = lib.randn(4)
        fn = compile_(_program(lib))
        out = fn(x, w)
        w.add_(1)
        with pytest.raises(RuntimeError) as info:
            out.backward()
        return str(info.value)

    ours = outcome(pyaten, lambda f: pyaten.compile(f, backend=backend))
    eager = outcome(pyaten, lambda f: f)
    theirs = outcome(torch, lambda f: torch.compile(f, backend="aot_eager"))
    assert ours == eager
    assert ours.replace("pyaten", "torch") == theirs


@pytest.mark.parametrize("backend", ["aot_eager", "pyaten"])
def test_unchanged_saved_values_still_give_eager_gradients(backend):
    fn = pyaten.compile(_program(pyaten), backend=backend)
    x = pyaten.randn(4, requires_grad=True)
    w = pyaten.randn(4)
    fn(x, w).backward()
    compiled_grad = x.grad.clone()
    x.grad = None
    _program(pyaten)(x, w).backward()
    assert pyaten.allclose(compiled_grad, x.grad, rtol=1e-6, atol=1e-7)
