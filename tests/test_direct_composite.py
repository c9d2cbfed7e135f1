"""The direct call below a binding (Note: the direct call of a composite, in
pyaten/native/gen_support.py): a composite kernel's `aten_ops().<op>.<overload>(...)` calls
the operator's fast function itself when nothing is active. Each case is run with the direct
calls on and off (the dispatcher's path, the reference) and against PyTorch, with modes,
tracing, subclasses, grad, autocast and a kernel registered over the one the direct call
found.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as torch_functional

import pyaten
import pyaten.nn.functional as pyaten_functional
import pyaten.utils._python_dispatch as pd
from pyaten.native.gen_support import set_direct_calls
from pyaten.native.ops_handles import aten_entry, aten_ops

RNG = np.random.default_rng(36)
DATA = {
    "a": RNG.standard_normal((4, 4)).astype(np.float32),
    "w": RNG.standard_normal((3, 4)).astype(np.float32),
    "bias": RNG.standard_normal(3).astype(np.float32),
    "logits": RNG.standard_normal((6, 5)).astype(np.float32),
    "target": RNG.integers(0, 5, 6),
    "c": RNG.standard_normal((2, 3, 4)).astype(np.float32),
}


def _inputs(lib, requires_grad: bool = False) -> dict:
    out = {k: lib.tensor(v) for k, v in DATA.items()}
    if requires_grad:
        for k in ("a", "w", "bias", "logits", "c"):
            out[k].requires_grad_(True)
    return out


def _functional(lib):
    return pyaten_functional if lib is pyaten else torch_functional


# Calls whose kernels are composites that call other operators positionally.
CALLS = {
    "sum(a)": lambda L, F, t: L.sum(t["a"]),
    "sum(a, dtype=float64)": lambda L, F, t: L.sum(t["a"], dtype=L.float64),
    "a.sum()": lambda L, F, t: t["a"].sum(),
    "softmax(a, 1)": lambda L, F, t: L.softmax(t["a"], 1),
    "softmax(a, dim=0)": lambda L, F, t: L.softmax(t["a"], dim=0),
    "log_softmax(a, 1)": lambda L, F, t: L.log_softmax(t["a"], 1),
    "F.softmax(a, dim=-1)": lambda L, F, t: F.softmax(t["a"], dim=-1),
    "F.log_softmax(a, dim=1)": lambda L, F, t: F.log_softmax(t["a"], dim=1),
    "F.linear(a, w, bias)": lambda L, F, t: F.linear(t["a"], t["w"], t["bias"]),
    "F.linear(a, w)": lambda L, F, t: F.linear(t["a"], t["w"]),
    "F.linear(c, w, bias)": lambda L, F, t: F.linear(t["c"], t["w"], t["bias"]),
    "F.cross_entropy": lambda L, F, t: F.cross_entropy(t["logits"], t["target"]),
    "F.cross_entropy sum": lambda L, F, t: F.cross_entropy(t["logits"], t["target"],
                                                           reduction="sum"),
    "F.cross_entropy none": lambda L, F, t: F.cross_entropy(t["logits"], t["target"],
                                                            reduction="none"),
    "F.cross_entropy ignore": lambda L, F, t: F.cross_entropy(t["logits"], t["target"],
                                                              ignore_index=int(
                                                                  DATA["target"][0])),
    "F.nll_loss": lambda L, F, t: F.nll_loss(t["logits"], t["target"]),
    "cat([a, a])": lambda L, F, t: L.cat([t["a"], t["a"]]),
    "cat((a, a), 1)": lambda L, F, t: L.cat((t["a"], t["a"]), 1),
    "cat([a, a], dim=-1)": lambda L, F, t: L.cat([t["a"], t["a"]], dim=-1),
    "stack([a, a])": lambda L, F, t: L.stack([t["a"], t["a"]]),
    "stack([a, a], 1)": lambda L, F, t: L.stack([t["a"], t["a"]], 1),
    "stack([a, a], dim=2)": lambda L, F, t: L.stack([t["a"], t["a"]], dim=2),
}


def _run(name: str, lib, requires_grad: bool = False):
    t = _inputs(lib, requires_grad)
    return CALLS[name](lib, _functional(lib), t), t


def _same(x, y) -> None:
    """Bit for bit: the direct call and the dispatcher's path run the same NumPy code."""
    assert type(x) is type(y)
    assert x.dtype == y.dtype and tuple(x.shape) == tuple(y.shape)
    assert x.stride() == y.stride()
    np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())


def _like_torch(ours, theirs) -> None:
    assert str(ours.dtype) == str(theirs.dtype).replace("torch", "pyaten")
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.stride() == theirs.stride()
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_direct_equals_dispatcher_path_and_torch(name):
    on, _ = _run(name, pyaten)
    on, _ = _run(name, pyaten)  # the second call: the operators' caches are filled
    previous = set_direct_calls(False)
    try:
        off, _ = _run(name, pyaten)
    finally:
        set_direct_calls(previous)
    _same(on, off)
    theirs, _ = _run(name, torch)
    _like_torch(on, theirs)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_with_grad_same_graph_as_torch(name):
    ours, t = _run(name, pyaten, requires_grad=True)
    theirs, u = _run(name, torch, requires_grad=True)
    _like_torch(ours, theirs)
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    below = [type(f).__name__ for f, _ in ours.grad_fn.next_functions if f is not None]
    expected = [type(f).__name__ for f, _ in theirs.grad_fn.next_functions if f is not None]
    assert below == expected
    ours.sum().backward()
    theirs.sum().backward()
    for k in t:
        if u[k].grad is not None or t[k].grad is not None:
            np.testing.assert_allclose(t[k].grad.numpy(), u[k].grad.numpy(), rtol=1e-5,
                                       atol=1e-6)


def _logging_mode(base: type) -> type:
    """A dispatch mode of `base` (pyaten's or torch's) that lists the operators it sees."""

    class Log(base):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append(str(func))
            return func(*args, **(kwargs or {}))

    return Log


_Log = _logging_mode(pd.TorchDispatchMode)
_TorchLog = _logging_mode(torch.utils._python_dispatch.TorchDispatchMode)


@pytest.mark.parametrize("name", ["sum(a)", "softmax(a, 1)", "F.linear(a, w, bias)",
                                  "F.cross_entropy", "cat([a, a])", "stack([a, a])"])
def test_dispatch_mode_sees_what_torch_sees(name):
    _run(name, pyaten)  # the direct call's caches filled: the mode must still see every call
    t, u = _inputs(pyaten), _inputs(torch)
    with _Log() as ours:
        CALLS[name](pyaten, pyaten_functional, t)
    with _TorchLog() as theirs:
        CALLS[name](torch, torch_functional, u)
    assert ours.seen == theirs.seen


def test_torch_function_mode_and_trace_see_every_call():
    seen = []

    class Log(pyaten.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    _run("F.linear(a, w, bias)", pyaten)
    with Log():
        _run("F.linear(a, w, bias)", pyaten)
        _run("F.cross_entropy", pyaten)
    assert seen == ["linear", "cross_entropy"]
    for name in ("sum(a)", "F.linear(a, w, bias)", "F.cross_entropy", "cat([a, a])"):
        with pyaten.explain() as on:
            _run(name, pyaten)
        previous = set_direct_calls(False)
        try:
            with pyaten.explain() as off:
                _run(name, pyaten)
        finally:
            set_direct_calls(previous)
        assert str(on) == str(off)
        assert "aten::" in str(on)


def test_subclass_autocast_and_no_grad_take_the_general_path():
    class Sub(pyaten.Tensor):
        pass

    t = _inputs(pyaten)
    sub = t["a"].as_subclass(Sub)
    assert type(pyaten.softmax(sub, 1)) is Sub
    assert type(pyaten.sum(sub)) is Sub
    assert type(pyaten.cat([sub, t["a"]])) is Sub
    with pyaten.autocast("cpu", dtype=pyaten.bfloat16):
        out = pyaten_functional.linear(t["a"], t["w"], t["bias"])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        u = _inputs(torch)
        expected = torch_functional.linear(u["a"], u["w"], u["bias"])
    assert out.dtype == pyaten.bfloat16 and expected.dtype == torch.bfloat16
    g = _inputs(pyaten, requires_grad=True)
    with pyaten.no_grad():
        assert pyaten.softmax(g["a"], 1).grad_fn is None
        assert pyaten_functional.cross_entropy(g["logits"], g["target"]).grad_fn is None


@pytest.mark.filterwarnings("ignore:Warning only once")
def test_a_kernel_registered_over_a_composites_part_is_called():
    from pyaten.library import Library

    t = _inputs(pyaten)
    pyaten.softmax(t["a"], 1)
    pyaten.sum(t["a"])
    calls = []

    def mine(x, dim, half_to_float):
        calls.append(dim)
        return pyaten.zeros(4, 4) + 3

    with Library("aten", "IMPL") as lib:
        lib.impl("_softmax", mine, "CPU")
        assert pyaten.softmax(t["a"], 1).tolist() == [[3.0] * 4] * 4
        assert calls == [1]
    assert pyaten.softmax(t["a"], 1).numpy() == pytest.approx(
        torch.softmax(torch.tensor(DATA["a"]), 1).numpy(), rel=1e-5)
    with Library("aten", "IMPL") as lib:
        lib.impl("sum.dim_IntList", lambda x, dim, keepdim, dtype: pyaten.tensor(-1.0), "CPU")
        assert pyaten.sum(t["a"]).item() == -1.0


def test_handles_keep_their_operator():
    # `aten_entry` and nested kernels read the handle behind a kernel's call
    handle = aten_ops().sum.dim_IntList
    assert handle.__self__.__name__ == "sum.dim_IntList"
    assert aten_entry("sum", "dim_IntList").name == "aten::sum.dim_IntList"
    assert aten_ops().t.default.__name__ == "call_positional"  # a view: no direct call


def test_errors_as_torch():
    t = _inputs(pyaten)
    u = _inputs(torch)
    cases = [
        lambda L, F, t: F.linear(t["a"], t["logits"]),
        lambda L, F, t: F.cross_entropy(t["logits"], t["target"][:3]),
        lambda L, F, t: F.cross_entropy(t["logits"], t["target"] + 10),
        lambda L, F, t: L.cat([t["a"], t["w"]], 1),
        lambda L, F, t: L.stack([t["a"], t["w"]]),
        lambda L, F, t: L.softmax(t["a"], 3),
    ]
    for case in cases:
        with pytest.raises(Exception) as theirs:
            case(torch, torch_functional, u)
        with pytest.raises(Exception) as ours:
            case(pyaten, pyaten_functional, t)
        assert type(ours.value) is type(theirs.value), (ours.value, theirs.value)


def test_tensor_list_bindings_call_directly():
    import sys

    module = sys.modules[pyaten.cat.__globals__["__name__"]]
    t = _inputs(pyaten)
    for _ in range(2):
        pyaten.cat([t["a"], t["a"]], 1)
    assert module.D_cat.fast is not None  # found behind the dispatcher's cached kernel
    assert "D_cat" in pyaten.cat.__code__.co_names
    g = _inputs(pyaten, requires_grad=True)
    out = pyaten.cat([t["a"], g["a"]])  # one item requires grad: the dispatcher's path
    assert type(out.grad_fn).__name__ == "CatBackward0"


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("case", ["plain", "ignored", "ignored, no such class", "weight",
                                  "transposed", "out of range", "negative"])
def test_nll_loss_fast_equals_general_and_torch(dtype, reduction, case):
    from pyaten.dispatch import trace

    rng = np.random.default_rng(7)
    x = rng.standard_normal((7, 5)).astype(dtype)
    target = rng.integers(0, 5, 7)
    weight = None
    ignore = -100
    if case == "ignored":
        ignore = int(target[2])
    elif case == "weight":
        weight = rng.random(5).astype(dtype)
    elif case == "transposed":
        x = np.ascontiguousarray(x.T).T
    elif case == "ignored, no such class":
        ignore = 7
    elif case == "out of range":
        target[3] = 5
    elif case == "negative":
        target[1] = -1

    def inputs(lib):
        values = lib.tensor(x)
        if case == "transposed":
            values = lib.tensor(np.ascontiguousarray(x.T)).t()
        return values, lib.tensor(target), None if weight is None else lib.tensor(weight)

    def forward(lib):
        ops = (pyaten if lib is pyaten else torch).ops.aten
        values, t, w = inputs(lib)
        return ops.nll_loss_forward.default(values, t, w, reduction, ignore)

    def backward(lib):
        ops = (pyaten if lib is pyaten else torch).ops.aten
        values, t, w = inputs(lib)
        grad = lib.full((7,) if reduction == 0 else (), 1.5, dtype=values.dtype)
        total = lib.tensor(6.0, dtype=values.dtype)
        return (ops.nll_loss_backward.default(grad, values, t, w, reduction, ignore, total),)

    def outcome(fn, lib):
        try:
            return fn(lib), None
        except Exception as error:  # noqa: BLE001 - compared below
            return None, error

    for run in (forward, backward):
        fast = outcome(run, pyaten)
        with trace():
            general = outcome(run, pyaten)
        theirs = outcome(run, torch)
        if theirs[1] is not None or general[1] is not None:
            assert type(fast[1]) is type(general[1])
            assert str(fast[1]) == str(general[1])
            # (torch's backward with reduction none skips an out-of-range target where the
            # general path raises: a difference of the general path, not of the fast one)
            assert theirs[1] is None or type(fast[1]) is type(theirs[1])
            continue
        for ours, ref, their in zip(fast[0], general[0], theirs[0]):
            _same(ours, ref)
            if dtype != "float16":
                _like_torch(ours, their)


def test_functional_linear_is_the_binding_as_torchs():
    from pyaten.nn import _C

    assert torch_functional.linear is torch._C._nn.linear
    assert pyaten_functional.linear is _C.linear
    seen = []

    class Traced(pyaten.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            return super().__torch_function__(func, types, args, kwargs)

    t = _inputs(pyaten)
    out = pyaten_functional.linear(t["a"].as_subclass(Traced), t["w"][:, :4].t().t(),
                                   t["bias"])
    assert seen[0] is pyaten_functional.linear
    assert type(out) is Traced
    with pytest.raises(TypeError, match=r"linear\(\): argument 'weight' \(position 2\)"):
        pyaten_functional.linear(t["a"], 3)


# the calls a kernel makes inside itself in torch (allocation, its own views): not operators
# of the composite's decomposition
_KERNEL_INTERNALS = {"empty", "as_strided", "fill_", "resize_", "zero_", "zeros", "empty_like",
                     "empty_strided"}


@pytest.mark.parametrize("shape", [(6, 5), (5,), (2, 5, 3, 3), (2, 5, 3)])
def test_cross_entropy_trace_lists_torchs_calls(shape):
    # torch's profiler records every operator call through the dispatcher; pyaten's trace
    # shows the same decomposition (log_softmax, to, _log_softmax, nll_loss_nd, nll_loss...)
    from torch.profiler import profile

    from pyaten.dispatch import trace

    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype("float32")
    target = rng.integers(0, 5, () if len(shape) == 1 else (shape[0], *shape[2:]))
    tx, tt = torch.tensor(x, requires_grad=True), torch.tensor(target)
    with profile() as prof:
        torch.nn.functional.cross_entropy(tx, tt)
    theirs = [e.name.removeprefix("aten::") for e in prof.events()]
    px, pt = pyaten.tensor(x).requires_grad_(True), pyaten.tensor(target)
    with trace() as log:
        pyaten.nn.functional.cross_entropy(px, pt)
    ours = [line.split()[1].removeprefix("aten::").split(".")[0]
            for line in str(log).splitlines() if line.lstrip().startswith("call ")]
    assert [n for n in ours if n not in _KERNEL_INTERNALS] == \
        [n for n in theirs if n not in _KERNEL_INTERNALS]
