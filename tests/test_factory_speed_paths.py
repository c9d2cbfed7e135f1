"""The factories' direct steps (pyaten/native/kernels/factory_steps.py, Note: the direct steps
of a factory): `*_like`, `new_*`, `zeros`/`ones`/`full` and `fill_` agree with torch (values,
dtype, strides, requires_grad, version) on plain and unusual inputs, list torch's calls in a
trace, and give what the dispatched steps give under modes, overriding kernels and with the
direct calls off."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_direct_composite import _Log, _TorchLog  # dispatch modes that list what they see

import pyaten
from pyaten.dispatch import trace
from pyaten.native.gen_support import set_direct_calls

# name -> call(lib, x), the same code for torch and pyaten
CALLS = {
    "empty_like": lambda L, x: L.empty_like(x),
    "zeros_like": lambda L, x: L.zeros_like(x),
    "ones_like": lambda L, x: L.ones_like(x),
    "full_like": lambda L, x: L.full_like(x, 2.5),
    "full_like int": lambda L, x: L.full_like(x, 3),
    "ones_like dtype": lambda L, x: L.ones_like(x, dtype=L.float64),
    "zeros_like contiguous": lambda L, x: L.zeros_like(x, memory_format=L.contiguous_format),
    "ones_like requires_grad": lambda L, x: L.ones_like(x, requires_grad=True),
    "new_zeros": lambda L, x: x.new_zeros((3, 2)),
    "new_ones": lambda L, x: x.new_ones((2,)),
    "new_full": lambda L, x: x.new_full((2, 2), 7),
    "new_empty": lambda L, x: x.new_empty((4,)),
    "new_ones dtype": lambda L, x: x.new_ones((2, 3), dtype=L.int32),
    "zeros": lambda L, x: L.zeros(2, 3),
    "ones": lambda L, x: L.ones(3, dtype=L.int64),
    "full": lambda L, x: L.full((2,), 1.5),
    "fill_ int": lambda L, x: x.clone().fill_(1),
    "fill_ float": lambda L, x: x.clone().fill_(-2.25),
    "zero_": lambda L, x: x.clone().zero_(),
}


def _input(lib, kind: str):
    base = np.arange(24, dtype="float32").reshape(2, 3, 2, 2) / 7
    if kind == "0-dim":
        return lib.tensor(1.5)
    if kind == "64x10":
        return lib.tensor(np.ones((64, 10), dtype="float32"))
    if kind == "transposed":
        return lib.tensor(base.reshape(6, 4)).t()
    if kind == "sliced":
        return lib.tensor(base.reshape(6, 4))[:, ::2]
    if kind == "channels_last":
        return lib.tensor(base).contiguous(memory_format=lib.channels_last)
    if kind == "complex64":
        return lib.tensor(base.reshape(6, 4)).to(lib.complex64)
    if kind == "bfloat16":
        return lib.tensor(base.reshape(6, 4)).to(lib.bfloat16)
    if kind == "int32":
        return lib.tensor(np.arange(6, dtype="int32"))
    if kind == "requires_grad":
        return lib.tensor(base.reshape(6, 4), requires_grad=True)
    raise AssertionError(kind)


KINDS = ["0-dim", "64x10", "transposed", "sliced", "channels_last", "complex64", "bfloat16",
         "int32", "requires_grad"]


def _check_same(ours, theirs, name: str) -> None:
    assert str(ours.dtype).removeprefix("pyaten.") == str(theirs.dtype).removeprefix("torch.")
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert tuple(ours.stride()) == tuple(theirs.stride()), name
    assert ours.requires_grad == theirs.requires_grad
    assert ours._version == theirs._version
    if not name.startswith(("empty", "new_empty")):
        if ours.dtype == pyaten.bfloat16:
            ours, theirs = ours.float(), theirs.float()
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(CALLS))
def test_factories_match_torch(name, kind):
    if name.startswith("fill_") and kind == "requires_grad":
        pytest.skip("fill_ of a leaf that requires grad raises in both (tested below)")
    call = CALLS[name]
    try:
        theirs = call(torch, _input(torch, kind))
    except RuntimeError as e:
        for _ in range(2):
            with pytest.raises(RuntimeError) as ours:
                call(pyaten, _input(pyaten, kind))
            assert str(ours.value) == str(e)
        return
    for _ in range(2):  # the first call fills the dispatcher's caches, the second goes direct
        ours = call(pyaten, _input(pyaten, kind))
    _check_same(ours, theirs, name)


def test_fill_of_a_leaf_that_requires_grad_raises_as_torch():
    with pytest.raises(RuntimeError) as theirs:
        _input(torch, "requires_grad").fill_(1)
    with pytest.raises(RuntimeError) as ours:
        _input(pyaten, "requires_grad").fill_(1)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("value", [1, -3, 2**53, 2**53 + 1, 2**62, 1.5, 1e39, -1e39, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "int8", "uint8"])
def test_fill_values_and_errors_match_torch(dtype, value):
    results = []
    for lib in (torch, pyaten):
        t = lib.zeros(3, dtype=getattr(lib, dtype))
        try:
            t.fill_(value)
            results.append(t.tolist())
        except Exception as e:  # noqa: BLE001 - compared below
            results.append(type(e).__name__)
    assert results[0] == results[1]


def _our_calls(call, x) -> list[str]:
    with trace() as log:
        call(pyaten, x)
    return [line.split()[1].removeprefix("aten::").split(".")[0]
            for line in str(log).splitlines() if line.lstrip().startswith("call ")]


def _torch_calls(call, x) -> list[str]:
    from torch.profiler import profile

    with profile() as prof:
        call(torch, x)
    return [e.name.removeprefix("aten::") for e in prof.events()]


@pytest.mark.parametrize("kind", ["0-dim", "transposed"])
@pytest.mark.parametrize("name", [n for n in CALLS if not n.startswith(("fill_", "zero_"))])
def test_trace_lists_torchs_calls(name, kind):
    call = CALLS[name]
    call(pyaten, _input(pyaten, kind))  # caches filled: the trace must still see every step
    assert _our_calls(call, _input(pyaten, kind)) == _torch_calls(call, _input(torch, kind))


@pytest.mark.parametrize("name", ["ones_like", "zeros_like", "full_like", "new_zeros",
                                  "new_ones", "zeros", "ones"])
def test_dispatch_mode_sees_what_torch_sees(name):
    call = CALLS[name]
    call(pyaten, _input(pyaten, "0-dim"))
    with _Log() as ours:
        got = call(pyaten, _input(pyaten, "0-dim"))
    with _TorchLog() as theirs:
        want = call(torch, _input(torch, "0-dim"))
    assert ours.seen == theirs.seen
    _check_same(got, want, name)


def _decisions(log) -> list[str]:
    """A trace's dispatch decisions (operator, key, kernel), without the results' values."""
    return [line for line in str(log).splitlines()
            if line.lstrip().startswith(("call ", "redispatch ", "keyset"))]


@pytest.mark.parametrize("name", list(CALLS))
def test_direct_steps_equal_the_dispatched_ones(name):
    call = CALLS[name]
    for kind in ("0-dim", "channels_last", "requires_grad"):
        if name.startswith("fill_") and kind == "requires_grad":
            continue
        direct = call(pyaten, _input(pyaten, kind))
        direct = call(pyaten, _input(pyaten, kind))
        with trace() as on:
            call(pyaten, _input(pyaten, kind))
        previous = set_direct_calls(False)
        try:
            dispatched = call(pyaten, _input(pyaten, kind))
            with trace() as off:
                call(pyaten, _input(pyaten, kind))
        finally:
            set_direct_calls(previous)
        assert _decisions(on) == _decisions(off) and _decisions(on)
        assert direct.dtype == dispatched.dtype and direct.stride() == dispatched.stride()
        assert direct._version == dispatched._version == 0 or name.startswith(("fill", "zero"))
        if not name.startswith(("empty", "new_empty")):
            assert direct.tolist() == dispatched.tolist()


def test_torch_function_mode_and_subclass_see_the_call():
    seen = []

    class Log(pyaten.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    x = _input(pyaten, "0-dim")
    pyaten.ones_like(x)
    with Log():
        pyaten.ones_like(x)
        x.new_zeros((2,))
    assert seen == ["ones_like", "new_zeros"]

    class Sub(pyaten.Tensor):
        pass

    class TorchSub(torch.Tensor):
        pass

    sub = x.as_subclass(Sub)
    theirs = torch.ones_like(torch.tensor(1.5).as_subclass(TorchSub))
    for _ in range(2):
        ours = pyaten.ones_like(sub)
        assert (type(ours) is Sub) == (type(theirs) is TorchSub)
        assert ours.item() == theirs.item()


def test_meta_autocast_and_vmap_take_their_paths():
    meta = pyaten.empty(2, 3, device="meta")
    assert pyaten.ones_like(meta).device.type == "meta"
    assert meta.new_zeros((4,)).device.type == "meta"
    x = _input(pyaten, "64x10")
    with pyaten.autocast("cpu", dtype=pyaten.bfloat16):
        assert pyaten.ones_like(x).dtype == pyaten.float32
    from pyaten.func import vmap

    got = vmap(lambda r: pyaten.ones_like(r) + r.new_zeros(()))(x)
    assert got.shape == (64, 10) and got.tolist() == [[1.0] * 10] * 64


@pytest.mark.filterwarnings("ignore:Warning only once")
def test_a_kernel_registered_over_a_step_is_called():
    from pyaten.library import Library

    x = _input(pyaten, "0-dim")
    pyaten.ones_like(x)
    x.new_zeros((2,))
    calls = []

    def my_fill(self, value):
        calls.append(value)
        self.numpy()[...] = 42
        return self

    with Library("aten", "IMPL") as lib:
        lib.impl("fill_.Scalar", my_fill, "CPU")
        pyaten.ones_like(x)
        assert pyaten.ones_like(x).item() == 42
        assert pyaten.full_like(x, 5).item() == 42
    assert calls == [1, 1, 5]
    assert pyaten.ones_like(x).item() == 1.0

    def my_empty_strided(size, stride, dtype, layout, device, pin_memory):
        calls.append("empty_strided")
        return pyaten.full(tuple(size), -1.0, dtype=dtype)

    with Library("aten", "IMPL") as lib:
        lib.impl("empty_strided", my_empty_strided, "CPU")
        assert pyaten.empty_like(x).item() == -1.0
        assert pyaten.empty_like(x).item() == -1.0
    assert calls[-2:] == ["empty_strided", "empty_strided"]
    assert pyaten.zeros_like(x).item() == 0.0


def test_the_backward_seed_is_ones():
    x = pyaten.tensor(2.0, requires_grad=True)
    (x * x).backward()
    (x * x).backward()
    assert x.grad.item() == 8.0
