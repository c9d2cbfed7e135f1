"""Python int arguments under `dynamic=True`/`None`/`False` (Note: a dynamic capture,
pyaten/_dynamo/symbolic_capture.py) against torch.compile: the same number of captures
(torch's `CompileCounter` backend counts its graphs), and eager's results. An int used in
arithmetic or as a size is a symbol under `dynamic=True`, and becomes one under the default
`dynamic=None` once it changes; used as a dim it is specialised."""

from __future__ import annotations

import pytest
import torch
from torch._dynamo.testing import CompileCounter

import pyaten

_CASES = {
    "arithmetic": (lambda x, n: x * n + n, (3,), (2, 3, 4, 5)),
    "size": (lambda x, n: x.reshape(n, -1) * 2, (12,), (2, 3, 4, 6)),
    "dim": (lambda x, n: x.sum(n), (3, 4), (0, 1, 0, 1)),
}


def _torch_captures(fn, shape, values, dynamic):
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(fn, backend=counter, dynamic=dynamic)
    x = torch.ones(shape)
    for n in values:
        compiled(x, n)
    torch._dynamo.reset()
    return counter.frame_count


@pytest.mark.parametrize("dynamic", [True, None, False])
@pytest.mark.parametrize("case", sorted(_CASES))
@pytest.mark.parametrize("backend", ["pyaten", "aot_eager"])
def test_int_arguments_capture_as_often_as_torch(case, dynamic, backend):
    fn, shape, values = _CASES[case]
    compiled = pyaten.compile(fn, dynamic=dynamic, backend=backend)
    x = pyaten.ones(shape)
    for n in values:
        out = compiled(x, n)
        expected = fn(x, n)
        assert out.shape == expected.shape and pyaten.equal(out, expected)
    assert not compiled.report.dynamic_fallbacks
    assert compiled.report.captures == _torch_captures(fn, shape, values, dynamic)


def test_a_symbolic_int_trains_and_its_guard_reads_it():
    w = pyaten.ones(3, requires_grad=True)
    compiled = pyaten.compile(lambda x, n: (x * w * n).sum(), dynamic=True)
    for n in (2, 5):
        w.grad = None
        compiled(pyaten.ones(3), n).backward()
        assert pyaten.equal(w.grad, pyaten.full((3,), float(n)))
    assert compiled.report.captures == 1
    assert "input 1: int == s" in "\n".join(compiled.last_entry.guards.describe())
    assert compiled(pyaten.ones(3), True).item() == 3.0  # a bool is not an int here
    assert compiled.report.captures == 2


_EAGER_TYPED = {  # an int that eager types as an int where a symbol would not be
    "full": lambda x, n: x + pyaten.full((x.shape[0],), n),
    "arange": lambda x, n: x + pyaten.arange(n).sum(),
    "power": lambda x, n: n ** x,
    "where": lambda x, n: pyaten.where(x > 2, x, n),
    "arithmetic": lambda x, n: (x * n - n) // 2 + x / n,
    "slice": lambda x, n: x[:n] * n,
}


@pytest.mark.parametrize("dtype", ["int64", "float32", "bool"])
@pytest.mark.parametrize("case", sorted(_EAGER_TYPED))
def test_a_symbolic_int_gives_eager_dtypes_and_values(case, dtype):
    fn = _EAGER_TYPED[case]
    compiled = pyaten.compile(fn, dynamic=True)
    for size, n in ((5, 2), (6, 3), (7, 4)):
        x = pyaten.arange(size).to(getattr(pyaten, dtype))
        try:
            expected = fn(x, n)
        except RuntimeError:
            continue
        out = compiled(x, n)
        assert out.dtype == expected.dtype and pyaten.equal(out, expected)
