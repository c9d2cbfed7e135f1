"""The recording calls of the generated autograd kernels (Note: the compiled recording calls,
pyaten/autograd/accel_graph.py): `make_node`, `run_recorded` and `run_recorded_view` of
`pyaten._accel_graph` against their Python references in pyaten/autograd/runtime.py, on the
same inputs; and whole graphs (views, lists, modes, subclasses, hooks) recorded both ways."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_accel import _can_build
from test_accel_graph import run_both_ways

import pyaten
from pyaten.autograd import graph, runtime
from pyaten.autograd.accel_graph import ACCEL_GRAPH, LOAD_ERROR
from pyaten.core.tensor import Tensor
from pyaten.dispatch import tls
from pyaten.dispatch.accel import DISABLED

needs_accel = pytest.mark.skipif(ACCEL_GRAPH is None, reason="pyaten._accel_graph not built")

REFERENCE = (runtime.make_node_reference, runtime.run_recorded_reference,
             runtime.run_recorded_view_reference)
IMPLS = [pytest.param(REFERENCE, id="reference")]
if ACCEL_GRAPH is not None:
    IMPLS.append(pytest.param((ACCEL_GRAPH.make_node, ACCEL_GRAPH.run_recorded,
                               ACCEL_GRAPH.run_recorded_view), id="compiled"))


class _Probe(graph.Node):
    __slots__ = ()


class _Param(Tensor):
    """A subclass with plain attributes (as nn.Parameter): the compiled path reads its slots."""


class _OwnGradFn(Tensor):
    """A subclass that redefines an attribute the calls read: the reference runs."""

    @property
    def grad_fn(self):
        return self.__dict__.get("fake_fn")

    @grad_fn.setter
    def grad_fn(self, value):
        self.__dict__["fake_fn"] = value


def _inputs() -> dict:
    leaf = pyaten.ones(2, 2, requires_grad=True)
    plain = pyaten.ones(2, 2)
    nonleaf = leaf.exp()
    second = pyaten.ones(4, requires_grad=True).split(2)[1]  # output 1 of its node
    param = pyaten.ones(3).as_subclass(_Param).requires_grad_(True)
    own = pyaten.ones(3).as_subclass(_OwnGradFn)
    own.grad_fn = nonleaf.grad_fn
    return {"leaf": leaf, "plain": plain, "nonleaf": nonleaf, "second": second,
            "param": param, "own": own, "none": None}


def test_the_compiled_calls_are_installed_when_built():
    if not DISABLED and _can_build():  # a silent build failure fails here
        assert ACCEL_GRAPH is not None, (
            f"pyaten._accel_graph did not load ({LOAD_ERROR}); rebuild it with "
            "`pip install -e . --no-deps --no-build-isolation`")
    if ACCEL_GRAPH is None:
        assert runtime.make_node is runtime.make_node_reference
        assert runtime.run_recorded is runtime.run_recorded_reference
    else:
        assert runtime.make_node is ACCEL_GRAPH.make_node
        assert runtime.run_recorded is ACCEL_GRAPH.run_recorded
        assert runtime.run_recorded_view is ACCEL_GRAPH.run_recorded_view


_KINDS = st.sampled_from(["leaf", "plain", "nonleaf", "second", "param", "own", "none"])
_INPUT = st.one_of(_KINDS, st.lists(_KINDS, max_size=3), st.lists(_KINDS, max_size=3).map(tuple))


@needs_accel
@settings(max_examples=60, deadline=None)
@given(st.lists(_INPUT, max_size=4))
def test_make_node_matches_the_reference(spec):
    values = _inputs()

    def build(spec_item):
        if isinstance(spec_item, str):
            return values[spec_item]
        return type(spec_item)(values[k] for k in spec_item)

    args = [build(item) for item in spec]
    ours = ACCEL_GRAPH.make_node(_Probe, *args)
    theirs = runtime.make_node_reference(_Probe, *args)
    assert type(ours) is _Probe
    # the same edges: the same nodes (a leaf's accumulator is shared while alive)
    assert ours.next_functions == theirs.next_functions
    assert all(type(edge) is tuple for edge in ours.next_functions)
    assert ours._counts == theirs._counts
    assert ours._sequence_nr < theirs._sequence_nr
    assert ours.input_meta == theirs.input_meta == []


@pytest.mark.parametrize("impl", IMPLS)
def test_make_node_edges(impl):
    make_node = impl[0]
    v = _inputs()
    node = make_node(_Probe, v["leaf"], v["plain"], v["nonleaf"], v["none"])
    acc = v["leaf"]._grad_acc()
    assert node.next_functions == ((acc, 0), (None, 0), (v["nonleaf"].grad_fn, 0), (None, 0))
    assert node._counts is None
    node = make_node(_Probe, [v["second"], v["param"]], v["own"], ())
    assert node.next_functions == ((v["second"].grad_fn, 1), (v["param"]._grad_acc(), 0),
                                   (v["nonleaf"].grad_fn, 0))
    assert node._counts == (2, 1, 0)
    assert make_node(_Probe).next_functions == ()
    with pytest.raises(TypeError):
        make_node()
    with pytest.raises(AttributeError):
        make_node(_Probe, 3)  # never reached from a kernel: the binding converts first


def _history(t: Tensor) -> tuple:
    return (t.grad_fn, t.output_nr, t._requires_grad)


@pytest.mark.parametrize("impl", IMPLS)
def test_run_recorded_sets_the_history_below_autograd(impl):
    _, run_recorded, _ = impl
    a = pyaten.ones(2, 3, requires_grad=True)
    seen = []

    def below(x, scale):
        seen.append((tls.STATE.excluded & tls.AUTOGRAD_BITS, scale))
        return x * scale

    node = _Probe()
    out = run_recorded(node, below, a, 2.0)
    assert seen == [(tls.AUTOGRAD_BITS, 2.0)]
    assert out.grad_fn is node and out.output_nr == 0 and out._requires_grad is True
    assert node.input_meta == [(out._sizes, out._dtype, out._device)]
    assert tls.STATE.excluded & tls.AUTOGRAD_BITS == 0


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case", ["integer", "an_input", "subclass", "own_attrs"])
def test_run_recorded_leaves_some_results_alone(impl, case):
    _, run_recorded, _ = impl
    a = pyaten.ones(2, requires_grad=True)
    b = pyaten.ones(2)
    results = {
        "integer": lambda x, y: pyaten.ones(2, dtype=pyaten.int64),
        "an_input": lambda x, y: y,
        "subclass": lambda x, y: (x + y).as_subclass(_Param),
        "own_attrs": lambda x, y: (x + y).as_subclass(_OwnGradFn),
    }
    node = _Probe()
    with pyaten.no_grad():
        out = run_recorded(node, results[case], a, b)
    if case in ("integer", "an_input"):
        assert _history(out) == (None, 0, case == "an_input" and False)
        assert node.input_meta == []
    else:
        assert out.grad_fn is node and out.output_nr == 0 and out.requires_grad
        assert node.input_meta == [(out._sizes, out._dtype, out._device)]


@pytest.mark.parametrize("impl", IMPLS)
def test_run_recorded_errors_propagate(impl):
    _, run_recorded, _ = impl
    node = _Probe()
    with pytest.raises(ZeroDivisionError):
        run_recorded(node, lambda x: 1 / 0, pyaten.ones(1))
    assert tls.STATE.excluded == tls.DEFAULT_EXCLUDED and not tls.NONDEFAULT
    with pytest.raises(AttributeError):
        run_recorded(node, lambda x: 3, pyaten.ones(1))  # a kernel returns a tensor
    with pytest.raises(TypeError):
        run_recorded(node)


@pytest.mark.parametrize("impl", IMPLS)
def test_run_recorded_view_remembers_views_of_bases_with_history(impl):
    _, _, run_recorded_view = impl
    leaf = pyaten.ones(4, requires_grad=True)
    base = leaf * 2
    node = _Probe()
    view = run_recorded_view(node, lambda t, n: t[:n], base, 2)
    assert view.grad_fn is node and view._base is base
    assert [ref() for ref in base.__dict__["_autograd_views"]] == [view]
    fresh = pyaten.ones(4)  # a base without history: nothing remembered
    view = run_recorded_view(_Probe(), lambda t: t[:2], fresh)
    assert view._base is fresh and "_autograd_views" not in fresh.__dict__


_SCRIPT = r"""
import json, pyaten
from pyaten.autograd.accel_graph import ACCEL_GRAPH, LOAD_ERROR
from pyaten.utils._python_dispatch import TorchDispatchMode
out = {"compiled": ACCEL_GRAPH is not None}

def edges(fn, depth):
    if fn is None or depth == 0:
        return None
    return [fn.name(), [[edges(n, depth - 1), nr] for n, nr in fn.next_functions]]

a = pyaten.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
p = pyaten.nn.Parameter(pyaten.tensor([0.5, 1.5]))
calls = []
n = pyaten.sigmoid(a)
n.grad_fn.register_prehook(lambda g: calls.append(["pre", g[0].tolist()]))
n.grad_fn.register_hook(lambda gi, go: calls.append(["post", gi[0].tolist()]))
n.register_hook(lambda g: calls.append(["tensor", g.tolist()]))
v = n.view(4)
t = n.t()
r = pyaten.cat([v, p, v[:1]])
r.retain_grad()
y = (r * 2).sum() + t[0].sum()
out["graph"] = edges(y.grad_fn, 7)
y.backward(retain_graph=True)
out["grads"] = [a.grad.tolist(), p.grad.tolist(), r.grad.tolist(), calls]

b = a * 1.0
w = b[0]
b.mul_(2)   # the view's node is regenerated over b's new history
out["regenerated"] = [w.grad_fn.name(), edges(w.grad_fn, 3)]
w.sum().backward()
out["after_write"] = a.grad.tolist()

s = a.exp()
k = s.view(4)
s.add_(1)
try:
    k.sum().backward()
    out["version"] = "no error"
except RuntimeError as error:
    out["version"] = str(error)[:120]

class Log(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        seen.append(str(func))
        return func(*args, **(kwargs or {}))

seen = []
with Log():
    z = (a.exp() * a).sum()
z.backward()
out["mode"] = [seen, z.grad_fn.name(), a.grad.tolist()]
g = pyaten.autograd.grad((a.view(4).exp() * 3).sum(), a, create_graph=True)[0]
gg = pyaten.autograd.grad(g.sum(), a)[0]
out["double"] = [g.tolist(), g.grad_fn.name(), gg.tolist()]
with pyaten.no_grad():
    out["no_grad"] = [a.view(4).requires_grad, a.exp().grad_fn is None]
with pyaten.inference_mode():
    out["inference"] = a.exp().requires_grad
print(json.dumps(out))
"""


def test_recorded_graphs_match_with_and_without_the_compiled_calls():
    ours, theirs = run_both_ways(_SCRIPT)
    assert theirs.pop("compiled") is False
    built = importlib.util.find_spec("pyaten._accel_graph") is not None
    assert ours.pop("compiled") is built
    assert ours == theirs
    assert ours["graph"][0] == "AddBackward0"
    assert ours["regenerated"][0] == "AsStridedBackward0"
    assert "modified by an inplace operation" in ours["version"]
    # as torch: a view made in no_grad mode still says requires_grad, with no grad_fn
    assert ours["no_grad"] == [True, True] and ours["inference"] is False
