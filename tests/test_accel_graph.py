"""The accelerated recording path (Note: the accelerated recording path, in
pyaten/autograd/graph.py) against its pure-Python reference: `call_below_autograd`,
`Node.__init__`, `AccumulateGrad.__init__`, `grad_accumulator`, and whole recorded graphs run
with and without the accelerator (PYATEN_NO_ACCEL=1 in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import weakref

import pytest

import pyaten
from pyaten.autograd import graph
from pyaten.core import accel
from pyaten.core.tensor import Tensor
from pyaten.dispatch import tls

needs_accel = pytest.mark.skipif(accel.ACCEL is None, reason="pyaten._accel not built")
CALLS = [tls.call_below_autograd_reference]
if accel.ACCEL is not None:
    CALLS.append(accel.ACCEL.call_below_autograd)


def _snapshot() -> tuple:
    return (tls.STATE.included, tls.STATE.excluded, tls.STATE.keep, len(tls.NONDEFAULT))


@needs_accel
def test_the_accelerated_functions_are_installed():
    assert tls.call_below_autograd is accel.ACCEL.call_below_autograd
    assert graph.grad_accumulator is accel.ACCEL.grad_accumulator
    assert graph.Node.__init__ is not graph.node_init_reference
    assert graph.AccumulateGrad.__init__ is not graph.accumulate_grad_init_reference


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("guard", [None, tls.AutoDispatchBelowAutograd,
                                   lambda: tls.IncludeDispatchKeyGuard("Python"),
                                   lambda: tls.ExcludeDispatchKeyGuard("AutocastCPU")])
def test_call_below_autograd_sets_and_restores_the_state(call, guard):
    def inside(*args):
        return args, _snapshot()

    def run():
        before = _snapshot()
        args, seen = call(inside, 1, "two", None)
        assert args == (1, "two", None)
        assert _snapshot() == before
        with pytest.raises(ZeroDivisionError, match="division by zero"):
            call(lambda x: x / 0, 1)
        assert _snapshot() == before
        return before, seen

    if guard is None:
        got = run()
    else:
        with guard():
            got = run()
    expected = _reference_inside(guard)
    assert got == expected
    before, seen = got
    assert seen[1] & tls.AUTOGRAD_BITS == tls.AUTOGRAD_BITS
    assert seen[2] == ~(seen[1] & tls.FUNCTIONALITY_MASK)
    assert seen[0] == before[0]


def _reference_inside(guard) -> tuple:
    def inside():
        return _snapshot()

    def run():
        return _snapshot(), tls.call_below_autograd_reference(inside)

    if guard is None:
        return run()
    with guard():
        return run()


@pytest.mark.parametrize("call", CALLS)
def test_call_below_autograd_errors_and_nesting(call):
    with pytest.raises(TypeError):
        call()
    before = _snapshot()
    outer = call(lambda: (_snapshot(), call(_snapshot)))
    assert outer[0] == outer[1]  # already below autograd: called as it is
    assert _snapshot() == before


@pytest.mark.parametrize("call", CALLS)
def test_call_below_autograd_is_per_thread(call):
    seen = {}
    entered, leave = threading.Event(), threading.Event()

    def hold():
        def inside():
            entered.set()
            leave.wait(30)
            return _snapshot()

        seen["worker"] = call(inside)

    worker = threading.Thread(target=hold)
    worker.start()
    try:
        assert entered.wait(30)
        assert tls.STATE.excluded == tls.DEFAULT_EXCLUDED  # this thread is untouched
        assert len(tls.NONDEFAULT) == 1
    finally:
        leave.set()
        worker.join(30)
    assert seen["worker"][1] == tls.DEFAULT_EXCLUDED | tls.AUTOGRAD_BITS
    assert len(tls.NONDEFAULT) == 0


def _slots(node: graph.Node) -> dict:
    names = [n for cls in type(node).__mro__ for n in getattr(cls, "__slots__", ())
             if n != "__weakref__"]
    return {n: getattr(node, n, "<unset>") for n in names}


class _Sub(Tensor):
    pass


@needs_accel
def test_node_init_matches_the_reference():
    node_cls = type(pyaten.add(pyaten.ones(2, requires_grad=True), 1).grad_fn)
    ours, theirs = node_cls(), node_cls.__new__(node_cls)
    graph.node_init_reference(theirs)
    a, b = _slots(ours), _slots(theirs)
    assert b.pop("_sequence_nr") == a.pop("_sequence_nr") + 1  # one shared sequence
    assert a == b
    assert type(ours.input_meta) is list and ours.input_meta is not theirs.input_meta
    with pytest.raises(TypeError):
        node_cls(1)
    ours.__init__()  # again, as Python allows
    assert ours._sequence_nr > theirs._sequence_nr


@needs_accel
@pytest.mark.parametrize("variable", [pyaten.ones(2, 3, requires_grad=True),
                                      pyaten.zeros(4, dtype=pyaten.float64).as_subclass(_Sub)])
def test_accumulate_grad_matches_the_reference(variable):
    ours = graph.AccumulateGrad(variable)
    theirs = graph.AccumulateGrad.__new__(graph.AccumulateGrad)
    graph.accumulate_grad_init_reference(theirs, variable)
    a, b = _slots(ours), _slots(theirs)
    assert b.pop("_sequence_nr") == a.pop("_sequence_nr") + 1
    assert a == b
    assert ours.variable is variable
    assert ours.input_meta == [(variable._sizes, variable._dtype, variable._device)]


@needs_accel
def test_accumulate_grad_of_a_non_tensor_goes_to_the_reference():
    with pytest.raises(AttributeError, match="_sizes"):
        graph.AccumulateGrad(3)


@pytest.mark.parametrize("variant", ["accel", "reference"])
def test_grad_accumulator_is_shared_while_alive(variant):
    if variant == "accel" and accel.ACCEL is None:
        pytest.skip("pyaten._accel not built")
    fn = graph.grad_accumulator if variant == "accel" else graph.grad_accumulator_reference
    t = pyaten.ones(3, requires_grad=True)
    first = fn(t)
    assert isinstance(first, graph.AccumulateGrad) and first.variable is t
    assert fn(t) is first and graph.grad_accumulator_reference(t) is first
    assert type(t._grad_acc) is weakref.ReferenceType and t._grad_acc() is first
    number = first._sequence_nr
    del first
    second = fn(t)
    assert second._sequence_nr > number and t._grad_acc() is second
    sub = pyaten.ones(2).as_subclass(_Sub).requires_grad_(True)
    assert fn(sub).variable is sub
    with pytest.raises(AttributeError):
        fn(3)


_SCRIPT = r"""
import json, pyaten
from pyaten.core import accel
from pyaten.autograd import forward_ad as fwAD
out = {"accel": accel.ACCEL is not None}

def edges(fn, depth=3):
    if fn is None or depth == 0:
        return None
    return [fn.name(), [[edges(n, depth - 1), nr] for n, nr in fn.next_functions]]

a = pyaten.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
b = pyaten.tensor([[0.5, 1.5], [-1.0, 2.0]])
c = pyaten.tensor([2.0, 3.0], requires_grad=True)
seen = []
a.register_hook(lambda g: seen.append(g.tolist()))
h = pyaten.mm(a, b) + c
h.retain_grad()
y = (pyaten.sigmoid(h) * a).sum(1).exp().sum()
out["graph"] = edges(y.grad_fn, 6)
y.backward()
out["grads"] = [a.grad.tolist(), c.grad.tolist(), h.grad.tolist(), seen]
out["seq"] = y.grad_fn._sequence_number() > h.grad_fn._sequence_number()

x = pyaten.ones(3, requires_grad=True)
s = x.sigmoid()
w = s * 2
s.mul_(3)
try:
    w.sum().backward()
    out["version"] = "no error"
except RuntimeError as error:
    out["version"] = "modified by an inplace" in str(error)
try:
    z = pyaten.exp(x)
    z.exp_()
    z.sum().backward()
except RuntimeError as error:
    out["version2"] = str(error)

with pyaten.autograd.detect_anomaly(check_nan=True):
    p = pyaten.tensor([0.0], requires_grad=True)
    try:
        (p / p).sum().backward()
        out["anomaly"] = "no error"
    except RuntimeError as error:
        out["anomaly"] = str(error).split("\n")[0]
with pyaten.no_grad():
    out["no_grad"] = pyaten.add(a, a).requires_grad
with pyaten.inference_mode():
    out["inference"] = pyaten.add(a, a).requires_grad
with fwAD.dual_level():
    d = fwAD.make_dual(pyaten.tensor([1.0, 2.0]), pyaten.tensor([1.0, 0.5]))
    r = pyaten.sigmoid(d) * a[0]
    out["fw"] = [fwAD.unpack_dual(r).tangent.tolist(), r.grad_fn.name()]
g = pyaten.autograd.grad(pyaten.mm(a, a).sum(), a, create_graph=True)[0]
out["double"] = [g.tolist(), g.grad_fn.name()]
print(json.dumps(out))
"""


def run_both_ways(script: str) -> list[dict]:
    """The JSON `script` prints last, run with the accelerators and with PYATEN_NO_ACCEL=1."""
    runs = []
    for disabled in ("", "1"):
        env = dict(os.environ, PYATEN_NO_ACCEL=disabled)
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return runs


@needs_accel
def test_recorded_graphs_match_the_pure_python_path():
    ours, theirs = run_both_ways(_SCRIPT)
    assert ours.pop("accel") is True and theirs.pop("accel") is False
    assert ours == theirs
    assert ours["version"] is True and ours["no_grad"] is False and ours["inference"] is False
    assert ours["graph"][0] == "SumBackward0"


def _saved_slots(saved: graph.SavedTensor, t: Tensor) -> dict:
    out = {n: getattr(saved, n, "<unset>") for n in ("_version", "_is_output", "_output_nr")}
    data = saved._data
    out["data"] = None if data is None else (
        type(data), data.__dict__ if type(data) is not Tensor else {},
        *[getattr(data, n, "<unset>") for n in Tensor.__slots__
          if n not in ("__weakref__", "__dict__")])
    out["same_object"] = data is t
    return out


def _both_saved(t, *args, **kwargs) -> tuple[dict, dict]:
    ours = graph.SavedTensor(t, *args, **kwargs)
    theirs = graph.SavedTensor.__new__(graph.SavedTensor)
    graph.saved_tensor_init_reference(theirs, t, *args, **kwargs)
    return _saved_slots(ours, t), _saved_slots(theirs, t)


@needs_accel
@pytest.mark.parametrize("case", ["input", "output", "leaf_output", "zero_flag", "keyword",
                                  "subclass", "view", "fresh_counter"])
def test_saved_tensor_init_matches_the_reference(case):
    a = pyaten.ones(2, 3, requires_grad=True)
    out = a.sigmoid()
    args, kwargs, t = (), {}, out
    if case == "input":
        t = a
    elif case == "output":
        args = (True,)
    elif case == "leaf_output":
        t, args = a, (True,)
    elif case == "zero_flag":
        args = (0,)
    elif case == "keyword":
        kwargs = {"is_output": True}
    elif case == "subclass":
        t = out.as_subclass(_Sub)
        t.note = "kept"
        args = (True,)
    elif case == "view":
        t, args = out[1], (True,)
    elif case == "fresh_counter":
        t = pyaten.ones(3).exp()
        assert t._vc is None
    ours, theirs = _both_saved(t, *args, **kwargs)
    assert ours == theirs
    if args == (True,) and t.grad_fn is not None:
        assert ours["data"][2 + Tensor.__slots__.index("grad_fn")] is None
        assert not ours["same_object"]


@needs_accel
def test_saved_tensor_under_python_dispatch_goes_through_detach():
    from pyaten.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    out = pyaten.ones(2, requires_grad=True).exp()
    with Log():
        ours, theirs = _both_saved(out, True)
    assert [s for s in seen if "detach" in s] and len(seen) % 2 == 0
    assert ours == theirs


@needs_accel
def test_tensor_geometry_matches_the_reference():
    t = pyaten.ones(4, 6, dtype=pyaten.float64)[1:, ::2]
    ours = graph.TensorGeometry(t)
    theirs = graph.TensorGeometry.__new__(graph.TensorGeometry)
    graph.tensor_geometry_init_reference(theirs, t)
    for name in graph.TensorGeometry.__slots__:
        assert getattr(ours, name) == getattr(theirs, name)
    assert ours.shape == (3, 3) and ours.stride() == (6, 2) and ours.storage_offset() == 6
    with pytest.raises(AttributeError):
        graph.TensorGeometry(3)


def test_no_accel_keeps_the_python_recording_path():
    code = (
        "import pyaten\n"
        "from pyaten.autograd import graph\n"
        "from pyaten.dispatch import tls\n"
        "assert tls.call_below_autograd is tls.call_below_autograd_reference\n"
        "assert graph.grad_accumulator is graph.grad_accumulator_reference\n"
        "for cls, ref in ((graph.Node, graph.node_init_reference),\n"
        "                 (graph.AccumulateGrad, graph.accumulate_grad_init_reference),\n"
        "                 (graph.SavedTensor, graph.saved_tensor_init_reference),\n"
        "                 (graph.TensorGeometry, graph.tensor_geometry_init_reference)):\n"
        "    assert cls.__dict__['__init__'] is ref, cls\n"
    )
    env = dict(os.environ, PYATEN_NO_ACCEL="1")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
