"""The graph cache on disk (pyaten/_dynamo/graph_cache.py): a fresh process loads what an
earlier one captured, gives identical results forward and backward, and misses when the
code, a shape, a dtype or a module's structure changes; plus `Module.compile` as PyTorch's.

Each cross-process case runs fresh interpreters under a hard timeout, in a cache directory
of its own, with pyaten's file stamp pinned (`PYATEN_FX_GRAPH_CACHE_STAMP`); in-process
cases check the key directly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import torch

import pyaten
from pyaten._dynamo import graph_cache

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 240

# A program run by each process: `{body}` defines `run()`, returning a dict of float lists.
_SCRIPT = """
import json, sys, warnings
sys.path.insert(0, {root!r})
import numpy as np
import pyaten
from pyaten._dynamo import graph_cache
nn = pyaten.nn
rng = np.random.default_rng(0)
def data(*shape, dtype=np.float32):
    return pyaten.tensor(rng.standard_normal(shape).astype(dtype))
{body}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out = run()
out["counters"] = dict(graph_cache.counters)
out["warnings"] = [str(w.message) for w in caught if "graph cache" in str(w.message)]
print("RESULT", json.dumps(out))
"""


def _run(body: str, cache: Path, **env: str) -> dict:
    code = _SCRIPT.format(root=str(ROOT), body=textwrap.dedent(body))
    # the stamp pinned: others may edit pyaten's files between the two processes
    environ = dict(os.environ, PYATEN_CACHE_DIR=str(cache), PYATEN_FX_GRAPH_CACHE="1",
                   PYATEN_FX_GRAPH_CACHE_STAMP=f"test {cache}")
    environ.update(env)
    done = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True,
                          text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    line = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def _values(out: dict) -> dict:
    return {k: v for k, v in out.items() if k not in ("counters", "warnings")}


_MLP = """
def run():
    pyaten.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.LeakyReLU({slope}), nn.Linear(16, 3))
    step = pyaten.compile(model, dynamic=False)
    result = {{}}
    for i, shape in enumerate([(8, 12), (8, 12)] + {extra}):
        x = data(*shape)
        out = step(x)
        out.square().mean().backward()
        result[f"out{{i}}"] = out.detach().numpy().ravel().tolist()
        result[f"grad{{i}}"] = model[0].weight.grad.numpy().ravel().tolist()
        model.zero_grad()
    report = step._compiled.report
    result["report"] = [report.captures, report.cache_hits, report.cache_misses,
                        report.compiled_calls]
    eager = model(x)
    result["eager"] = eager.detach().numpy().ravel().tolist()
    return result
"""


def test_second_process_loads_the_training_graph_and_matches(tmp_path):
    body = _MLP.format(slope=0.1, extra="[]")
    first = _run(body, tmp_path)
    assert first["counters"] == {"hit": 0, "miss": 1, "bypass": 0}
    assert list((tmp_path / "graphs").glob("*.pkl"))
    second = _run(body, tmp_path)
    assert second["counters"] == {"hit": 1, "miss": 0, "bypass": 0}
    # one entry, loaded; both calls ran the compiled graph (no capture run)
    assert second["report"] == [1, 1, 0, 2]
    for key, values in _values(first).items():
        if key != "report":
            assert values == second[key], key  # identical forward and backward
    np.testing.assert_allclose(second["out1"], second["eager"], rtol=1e-5, atol=1e-6)
    # a new shape: the (8, 12) calls hit, the (5, 12) call misses
    shaped = _run(_MLP.format(slope=0.1, extra="[(5, 12)]"), tmp_path)
    assert shaped["counters"] == {"hit": 1, "miss": 1, "bypass": 0}
    # a module attribute the graph bakes in (LeakyReLU's slope): a miss, the new slope's values
    sloped = _run(_MLP.format(slope=0.3, extra="[]"), tmp_path)
    assert sloped["counters"] == {"hit": 0, "miss": 1, "bypass": 0}
    np.testing.assert_allclose(sloped["out1"], sloped["eager"], rtol=1e-5, atol=1e-6)
    # a damaged file: ignored with a warning, captured again, the same results
    for path in (tmp_path / "graphs").glob("*.pkl"):
        path.write_bytes(path.read_bytes()[:40] + b"garbage")
    damaged = _run(body, tmp_path)
    assert damaged["counters"] == {"hit": 0, "miss": 1, "bypass": 0}
    assert damaged["warnings"] and "unreadable graph cache file" in damaged["warnings"][0]
    assert damaged["out0"] == first["out0"] and damaged["grad1"] == first["grad1"]


_FUNCTION = """
scale = {scale}
weight = data(3, 3)
def helper(t):
    return t * scale + 1
def run():
    bias = data(3)
    def f(x):
        return (helper(x) @ weight + bias).relu().sum(0)
    compiled = pyaten.compile(f, backend="{backend}")
    x = data(5, 3)
    return {{"y": compiled(x).numpy().tolist(), "eager": f(x).numpy().tolist()}}
"""


def test_globals_closures_and_code_changes(tmp_path):
    backend = "aot_eager"  # the default backend's path: the MLP case above
    first = _run(_FUNCTION.format(scale=2.0, backend=backend), tmp_path)
    assert first["counters"]["miss"] == 1
    second = _run(_FUNCTION.format(scale=2.0, backend=backend), tmp_path)
    assert second["counters"] == {"hit": 1, "miss": 0, "bypass": 0}
    assert second["y"] == first["y"]
    np.testing.assert_allclose(second["y"], second["eager"], rtol=1e-5)
    # a global the code reads through a helper: a miss
    changed = _run(_FUNCTION.format(scale=3.0, backend=backend), tmp_path)
    assert changed["counters"] == {"hit": 0, "miss": 1, "bypass": 0}
    np.testing.assert_allclose(changed["y"], changed["eager"], rtol=1e-5)
    # the function's own code: a miss
    edited = _run(_FUNCTION.format(scale=2.0, backend=backend).replace(".relu()", ".abs()"),
                  tmp_path)
    assert edited["counters"] == {"hit": 0, "miss": 1, "bypass": 0}


def test_dynamic_graph_breaks_and_switch_off(tmp_path):
    body = """
    def run():
        dyn = pyaten.compile(lambda x: x.cos() * 2, dynamic=True, backend="aot_eager")
        ys = [dyn(data(n, 2)).sum().item() for n in (3, 4)]
        def branchy(x):
            return x * 2 if x.sum() > 0 else x - 1
        broken = pyaten.compile(branchy, backend="eager")
        z = broken(pyaten.ones(3)).tolist()
        return {"ys": ys, "z": z, "breaks": [len(broken.report.graph_breaks)]}
    """
    first = _run(body, tmp_path)
    # the dynamic capture is not cached (its guards live in a ShapeEnv); the break is
    assert first["counters"] == {"hit": 0, "miss": 1, "bypass": 1}
    second = _run(body, tmp_path)
    assert second["counters"] == {"hit": 1, "miss": 0, "bypass": 1}
    assert second["ys"] == first["ys"] and second["z"] == first["z"] == [2.0] * 3
    assert second["breaks"] == [1]  # the loaded entry is the graph break's eager entry
    off = _run(body, tmp_path / "off", PYATEN_FX_GRAPH_CACHE="0")
    assert off["counters"] == {"hit": 0, "miss": 0, "bypass": 0}
    assert not (tmp_path / "off" / "graphs").exists()


# -- in one process: the key --------------------------------------------------------------------


def _key(fn, *args, module=None, backend="pyaten"):
    from pyaten.utils import _pytree

    flat, spec = _pytree.tree_flatten((args, {}))
    return graph_cache.cache_key(fn, module, spec, flat, (True, False, None), backend, False)


def test_key_reads_code_values_and_parameters_not_their_data():
    x = pyaten.ones(2, 3)
    assert _key(lambda t: t * 2, x)[0] == _key(lambda t: t * 2, x)[0]
    assert _key(lambda t: t * 2, x)[0] != _key(lambda t: t * 3, x)[0]
    assert _key(lambda t: t * 2, x)[0] != _key(lambda t: t * 2, pyaten.ones(3, 3))[0]
    assert _key(lambda t: t * 2, x)[0] != _key(lambda t: t * 2, x.double())[0]
    assert _key(lambda t: t * 2, x)[0] != _key(lambda t: t * 2, x, backend="eager")[0]
    pyaten.manual_seed(0)
    a, b = pyaten.nn.Linear(3, 2), pyaten.nn.Linear(3, 2)  # other values, same structure
    key_a, sources = _key(a, x, module=a)
    assert key_a == _key(b, x, module=b)[0]
    assert sources[id(a.weight)] == ("param", "weight")
    assert key_a != _key(pyaten.nn.Linear(3, 2, bias=False), x,
                         module=pyaten.nn.Linear(3, 2, bias=False))[0]
    a.weight.requires_grad_(False)
    assert _key(a, x, module=a)[0] != key_a
    # a module the code reaches through a global: its attributes are in the key too
    act = pyaten.nn.LeakyReLU(0.1)
    g = eval("lambda t: act(t)", {"act": act})
    key_g, sources = _key(g, x)
    act.negative_slope = 0.2
    assert _key(g, x)[0] != key_g and not sources
    method_key = _key(a.forward, x, module=a)[0]
    assert method_key != key_a and _key(b.forward, x, module=b)[0] != method_key  # b: grad


def test_uncacheable_calls_are_bypassed(tmp_path, monkeypatch):
    monkeypatch.setenv("PYATEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(pyaten._dynamo.config, "fx_graph_cache", True)
    pyaten._dynamo.reset()

    class Opaque:
        scale = 2.0

    opaque = Opaque()
    f = pyaten.compile(lambda t: t * opaque.scale, backend="eager")
    assert pyaten.equal(f(pyaten.ones(2)), pyaten.full((2,), 2.0))
    assert graph_cache.counters["bypass"] == 1 and "Opaque" in f.report.cache_bypasses[0]
    made = pyaten.ones(2)  # lifted, but reached through no name a new process could read
    g = pyaten.compile(lambda t, holder=[made]: t + holder[0], backend="eager")
    g(pyaten.ones(2))
    assert "neither an argument" in g.report.cache_bypasses[0]
    assert "graph cache: 0 hit(s), 0 miss(es), 1 bypass(es)" in str(g.report)
    pyaten._dynamo.reset()
    assert graph_cache.counters == {"hit": 0, "miss": 0, "bypass": 0}


def test_same_code_compiled_twice_in_one_process_hits(tmp_path, monkeypatch):
    monkeypatch.setenv("PYATEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(pyaten._dynamo.config, "fx_graph_cache", True)

    def make():
        return pyaten.compile(lambda t, w: (t @ w).tanh() * 3, backend="aot_eager")

    t = pyaten.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3) / 6)
    w = pyaten.tensor(np.ones((3, 4), np.float32), requires_grad=True)
    first, second = make(), make()
    want = first(t, w)
    want.sum().backward()
    grad, w.grad = w.grad.clone(), None
    got = second(t, w)
    got.sum().backward()
    assert second.report.cache_hits == 1 and second.last_entry.run is not None
    assert pyaten.equal(got, want) and pyaten.equal(w.grad, grad)
    tw = torch.tensor(w.detach().numpy(), requires_grad=True)
    expected = (torch.tensor(t.numpy()) @ tw).tanh() * 3
    expected.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-5)


# -- Module.compile ----------------------------------------------------------------------------


def test_module_compile_as_torch():
    pyaten.manual_seed(0)
    model = pyaten.nn.Sequential(pyaten.nn.Linear(4, 3), pyaten.nn.ReLU())
    twin = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    with torch.no_grad():
        twin[0].weight.copy_(torch.tensor(model[0].weight.detach().numpy()))
        twin[0].bias.copy_(torch.tensor(model[0].bias.detach().numpy()))
    for m in (model, twin):
        assert m._compiled_call_impl is None and "_compiled_call_impl" not in m.__dict__
    forward = model.forward
    calls = []
    model.register_forward_hook(lambda mod, args, out: calls.append(1))
    assert model.compile(backend="aot_eager") is None
    twin.compile(backend="eager")
    # the module's calls run compiled; `forward` stays the original bound method
    assert model.forward == forward and type(model.forward) is type(twin.forward)
    assert model._compiled_call_impl is not None and "_compiled_call_impl" in model.__dict__
    assert list(model.state_dict()) == list(twin.state_dict()) == ["0.weight", "0.bias"]
    data = np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4)
    x, tx = pyaten.tensor(data), torch.tensor(data)
    for _ in range(2):
        np.testing.assert_allclose(model(x).detach().numpy(), twin(tx).detach().numpy(),
                                   rtol=1e-6)
    report = model._compiled_call_impl.report
    assert report.captures == 1 and report.compiled_calls == 1
    assert calls == [1]  # the hook ran in the capture run; the compiled call runs no Python
    np.testing.assert_allclose(model.forward(x).detach().numpy(),
                               twin.forward(tx).detach().numpy(), rtol=1e-6)


def test_module_compile_hit_reads_this_modules_weights_and_buffers(tmp_path, monkeypatch):
    monkeypatch.setenv("PYATEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(pyaten._dynamo.config, "fx_graph_cache", True)
    nn = pyaten.nn

    def make(seed):
        pyaten.manual_seed(seed)
        return nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.ReLU())

    x = pyaten.tensor(np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6))
    first = make(0)
    first.compile(backend="aot_eager")
    first(x).sum().backward()
    # same structure, other weights: the graph is loaded, the weights are this module's
    second, twin = make(1), make(1)
    second.compile(backend="aot_eager")
    got, want = second(x), twin(x)
    assert second._compiled_call_impl.report.cache_hits == 1
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    got.square().sum().backward()
    want.square().sum().backward()
    for (name, p), q in zip(second.named_parameters(), twin.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=name)
    for b, c in zip(second.buffers(), twin.buffers()):  # running stats written in place
        np.testing.assert_allclose(b.numpy(), c.numpy(), rtol=1e-6)
