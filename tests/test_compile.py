"""pyaten.compile: compiled functions and modules give eager's results forward and backward
(and PyTorch's where the program runs on both), guards decide reuse and re-capture, graph
breaks run eagerly and are reported, fullgraph raises, the default backend fuses pointwise
chains into cached Numba loops."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
import pyaten.nn as nn
import pyaten.nn.functional as F
from pyaten._dynamo import Unsupported
from pyaten.commands.demo import build_model

BACKENDS = ("pyaten", "eager", "aot_eager")


@pytest.fixture(autouse=True, scope="module")
def _cache_dir():
    # One kernel cache for every run of this file on a machine: Numba compiles each loop once.
    saved = os.environ.get("PYATEN_CACHE_DIR")
    os.environ["PYATEN_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), "pyaten-test-compile")
    yield
    if saved is None:
        os.environ.pop("PYATEN_CACHE_DIR", None)
    else:
        os.environ["PYATEN_CACHE_DIR"] = saved


def _data(shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _inputs(P, arrays, grad):
    return [P.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]


def _tensors(value):
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return [value] if hasattr(value, "shape") else []


def _close(a, b, tol=1e-4):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# -- programs: each `make(P)` returns a function of tensors written for pyaten and torch ------

def _chain(P):
    return lambda x: ((((x * 2 + 1).relu() * x - 0.5) * 3).clamp(max=2) / 1.5).maximum(x) + x


def _transcendental(P):
    return lambda x: P.tanh(P.exp(P.sin(x * 0.5) - 1.0)) + P.cos(x).abs().sqrt()


def _broadcast(P):
    return lambda x, b: F_(P).gelu(x + b) * b - (x - b) ** 2


def _softmax(P):
    return lambda x: x.softmax(-1) + x.log_softmax(0)


def _reductions(P):
    return lambda x: (x.sum(0), x.mean(1, keepdim=True), x.amax(-1), (x * x).sum())


def _linear(P):
    return lambda x, w, b: F_(P).linear(x, w, b).relu()


def _layer_norm(P):
    return lambda x, w, b: F_(P).layer_norm(x, (x.shape[-1],), w, b)


def _attention(P):
    def attend(q, k, v):
        scores = q @ k.transpose(-2, -1) / (q.shape[-1] ** 0.5)
        return scores.softmax(-1) @ v
    return attend


def _views(P):
    return lambda x: x.t().reshape(-1).unsqueeze(0).expand(2, -1)[:, 3:9] * 2


def _cat(P):
    return lambda x, y: P.cat([x * 2, y.sin()], 0).sum(1)


def _inplace(P):
    def f(x):
        y = x * 1.5
        y.add_(1)
        y.mul_(2.0)
        y.sub_(x)
        return y * y
    return f


def _where(P):
    return lambda x, y: P.where(x > y, x * y, x - y) + P.maximum(x, y)


def _losses(P):
    def f(x, y):
        return F_(P).mse_loss(x, y) + F_(P).smooth_l1_loss(x, y)
    return f


def _float64(P):
    return lambda x: (x.double() * 3 - 1).tanh().exp()


def _activations(P):
    return lambda x: F_(P).silu(x) + x.sigmoid() * F_(P).leaky_relu(x, 0.2) - F_(P).elu(x)


def _cross_entropy(P):
    return lambda x, w: F_(P).cross_entropy(x @ w, P.arange(x.shape[0]) % w.shape[1])


def _conv(P):
    return lambda x, w: F_(P).max_pool2d(F_(P).conv2d(x, w, padding=1).relu(), 2)


def _batch_norm(P):
    return lambda x, w, b: F_(P).batch_norm(x, None, None, w, b, training=True)


def _bmm(P):
    return lambda a, b: P.bmm(a, b).tanh() + P.matmul(a, b.transpose(1, 2).transpose(1, 2))


def _norms(P):
    return lambda x: (x.var(1), x.std(0), x.norm(dim=1), x.logsumexp(1))


def _scan_and_gather(P):
    return lambda x: x.cumsum(1) * x.gather(1, (P.arange(x.shape[0]) % x.shape[1])[:, None])


def _embedding(P):
    return lambda w: F_(P).embedding(P.arange(12).reshape(3, 4) % w.shape[0], w).sum(1)


def _pad_and_stack(P):
    return lambda x, y: P.stack([x.flip(1), y.roll(1, 0)]).mean(0) + x.repeat(1, 2)[:, 1:5]


def _pointwise_math(P):
    return lambda x: (x.abs() + 1).log() * x.clamp(-0.5, 0.5).pow(3) + x.rsqrt().nan_to_num(0.0)


def _normalize(P):
    return lambda x: F_(P).normalize(x, dim=-1) * F_(P).softplus(x)


def F_(P):
    return P.nn.functional


PROGRAMS = {
    "chain": (_chain, [(64, 32)]),
    "transcendental": (_transcendental, [(64, 32)]),
    "broadcast": (_broadcast, [(64, 32), (32,)]),
    "softmax": (_softmax, [(8, 16)]),
    "reductions": (_reductions, [(8, 16)]),
    "linear": (_linear, [(8, 16), (4, 16), (4,)]),
    "layer_norm": (_layer_norm, [(8, 16), (16,), (16,)]),
    "attention": (_attention, [(2, 5, 8), (2, 5, 8), (2, 5, 8)]),
    "views": (_views, [(4, 6)]),
    "cat": (_cat, [(3, 5), (2, 5)]),
    "inplace": (_inplace, [(8, 16)]),
    "where": (_where, [(8, 16), (8, 16)]),
    "losses": (_losses, [(8, 16), (8, 16)]),
    "float64": (_float64, [(8, 16)]),
    "activations": (_activations, [(8, 16)]),
    "cross_entropy": (_cross_entropy, [(6, 16), (16, 5)]),
    "conv": (_conv, [(2, 3, 8, 8), (4, 3, 3, 3)]),
    "batch_norm": (_batch_norm, [(4, 3, 5), (3,), (3,)]),
    "bmm": (_bmm, [(2, 3, 4), (2, 4, 5)]),
    "norms": (_norms, [(6, 8)]),
    "scan_and_gather": (_scan_and_gather, [(6, 8)]),
    "embedding": (_embedding, [(5, 8)]),
    "pad_and_stack": (_pad_and_stack, [(3, 4), (3, 4)]),
    "pointwise_math": (_pointwise_math, [(8, 16)]),
    "normalize": (_normalize, [(8, 16)]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_program_forward_and_backward_match_eager_and_torch(name, backend):
    make, shapes = PROGRAMS[name]
    arrays = [_data(s, seed=i) for i, s in enumerate(shapes)]
    fn = make(pyaten)
    compiled = pyaten.compile(fn, backend=backend)
    for grad in (False, True):
        for _ in range(2):  # the capture call, then the compiled call
            xs = _inputs(pyaten, arrays, grad)
            ys = _inputs(pyaten, arrays, grad)
            got, want = _tensors(compiled(*xs)), _tensors(fn(*ys))
            for a, b in zip(got, want):
                _close(a, b)
            if grad:
                loss = sum((t.float() * (i + 1)).sum() for i, t in enumerate(got))
                loss.backward()
                sum((t.float() * (i + 1)).sum() for i, t in enumerate(want)).backward()
                for a, b in zip(xs, ys):
                    _close(a.grad, b.grad)
    assert compiled.report.compiled_calls >= 2
    got = _tensors(compiled(*_inputs(pyaten, arrays, False)))
    for a, b in zip(got, _tensors(make(torch)(*_inputs(torch, arrays, False)))):
        _close(a, b)


# -- modules ------------------------------------------------------------------------------------

class Attention(nn.Module):
    def __init__(self, dim=16, heads=2, length=8):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("mask", pyaten.tril(pyaten.ones(length, length)).bool())

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5)
        att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, c))


class GPTBlock(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = Attention(dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


def _mlp():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10))


MODULES = {
    "mlp": (_mlp, (8, 16)),
    "cnn": (lambda: build_model(nn), (4, 1, 8, 8)),
    "layer_norm": (lambda: nn.LayerNorm(16), (8, 16)),
    "attention": (lambda: Attention(), (2, 8, 16)),
    "gpt_block": (lambda: GPTBlock(), (2, 8, 16)),
    "multihead": (lambda: _Multihead(), (2, 5, 16)),
}


class _Multihead(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


@pytest.mark.parametrize("name", sorted(MODULES))
@pytest.mark.parametrize("backend", BACKENDS)
def test_module_forward_and_gradients_match_eager(name, backend):
    make, shape = MODULES[name]
    pyaten.manual_seed(0)
    module = make()
    compiled = pyaten.compile(module, backend=backend)
    data = _data(shape, seed=3)
    for _ in range(2):
        x1 = pyaten.tensor(data, requires_grad=True)
        x2 = pyaten.tensor(data, requires_grad=True)
        got = compiled(x1)
        got_grads = pyaten.autograd.grad((got * got).sum(), [x1, *module.parameters()])
        want = module(x2)
        want_grads = pyaten.autograd.grad((want * want).sum(), [x2, *module.parameters()])
        _close(got, want)
        for a, b in zip(got_grads, want_grads):
            _close(a, b)
    with pyaten.no_grad():
        _close(compiled(pyaten.tensor(data)), module(pyaten.tensor(data)))
    assert compiled._compiled.report.graph_breaks == []


def test_mlp_matches_torch():
    pyaten.manual_seed(0)
    mlp = _mlp()
    ref = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    with torch.no_grad():
        for p, q in zip(ref.parameters(), mlp.parameters()):
            p.copy_(torch.from_numpy(q.detach().numpy()))
    data = _data((8, 16))
    compiled = pyaten.compile(mlp)
    for _ in range(2):
        x = pyaten.tensor(data, requires_grad=True)
        t = torch.tensor(data, requires_grad=True)
        out, ref_out = compiled(x), ref(t)
        out.sum().backward()
        ref_out.sum().backward()
        _close(out, ref_out)
        _close(x.grad, t.grad)


@pytest.mark.parametrize("backend", ("pyaten", "aot_eager"))
def test_training_with_an_optimizer_matches_eager(backend):
    pyaten.manual_seed(1)
    model, twin = build_model(nn), build_model(nn)
    twin.load_state_dict(model.state_dict())
    step = pyaten.compile(model, backend=backend)
    opt = pyaten.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt_twin = pyaten.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
    images = pyaten.tensor(_data((16, 1, 8, 8), seed=5))
    labels = pyaten.tensor(np.arange(16) % 10)
    for _ in range(3):
        for net, optimizer in ((step, opt), (twin, opt_twin)):
            optimizer.zero_grad()
            loss = F.cross_entropy(net(images), labels)
            loss.backward()
            optimizer.step()
    for p, q in zip(model.parameters(), twin.parameters()):
        _close(p, q)
    assert step._compiled.report.captures == 1


def test_module_compile_method_and_decorator():
    pyaten.manual_seed(0)
    mlp = _mlp()
    x = pyaten.tensor(_data((8, 16)))
    want = mlp(x)
    mlp.compile(backend="aot_eager")
    _close(mlp(x), want)
    _close(mlp(x), want)
    mlp.eval()  # guarded: the module's training flag
    _close(mlp(x), want)
    assert "training flag" in mlp._compiled_call_impl.report.guard_failures[-1]

    @pyaten.compile
    def double(t):
        return t * 2

    @pyaten.compile(backend="eager", fullgraph=True)
    def triple(t):
        return t * 3

    _close(double(x), want.new_tensor(x.numpy() * 2) if False else x * 2)
    _close(triple(x), x * 3)
    assert double.__name__ == "double"


# -- guards ---------------------------------------------------------------------------------------

def test_guards_recapture_on_shape_dtype_requires_grad_and_grad_mode_only():
    f = pyaten.compile(lambda x: x * 2 + 1, backend="eager")
    a = pyaten.ones(3, 4)
    f(a)
    f(pyaten.zeros(3, 4))  # new values, same guards: reused
    assert f.report.captures == 1 and f.report.compiled_calls == 1
    f(pyaten.ones(5, 4))
    f(pyaten.ones(3, 4, dtype=pyaten.float64))
    f(pyaten.ones(3, 4, requires_grad=True))
    f(pyaten.ones(4, 3).t())
    with pyaten.no_grad():
        f(pyaten.ones(3, 4, requires_grad=True))
    assert f.report.captures == 6
    reasons = "\n".join(f.report.guard_failures)
    assert "size mismatch, expected [3, 4], actual [5, 4]" in reasons
    assert "dtype mismatch" in reasons
    assert "requires_grad mismatch" in reasons
    assert "stride mismatch" in reasons
    assert "grad mode changed" in reasons
    for x in (pyaten.ones(5, 4), pyaten.ones(4, 3).t()):
        _close(f(x), x * 2 + 1)
    assert f.report.captures == 6


def test_guards_on_python_values_and_module_state():
    f = pyaten.compile(lambda x, n: x * n, backend="eager")
    x = pyaten.ones(2)
    _close(f(x, 2), x * 2)
    _close(f(x, 3), x * 3)
    assert f.report.captures == 2 and "expected 2, got 3" in f.report.guard_failures[0]
    drop = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    compiled = pyaten.compile(drop)
    drop.eval()
    y = pyaten.ones(2, 4)
    compiled(y)
    compiled(y)
    assert compiled._compiled.report.captures == 1
    drop.train()
    compiled(y)  # training flag changed: recapture (dropout's draws are graph nodes)
    report = compiled._compiled.report
    assert report.captures == 2 and "training flag" in report.guard_failures[-1]
    assert report.graph_breaks == []
    drop[0].weight = nn.Parameter(pyaten.zeros(4, 4))
    drop.eval()
    _close(compiled(y), drop(y))
    assert "parameters changed" in report.guard_failures[-1]


def test_cache_size_limit_runs_eagerly_past_it():
    f = pyaten.compile(lambda x: x + 1, backend="eager", dynamic=False)  # a capture per size
    for n in range(1, 11):
        _close(f(pyaten.ones(n)), pyaten.ones(n) + 1)
    assert f.report.captures == pyaten._dynamo.config.cache_size_limit
    assert f.report.eager_calls == 10 - pyaten._dynamo.config.cache_size_limit


# -- graph breaks -----------------------------------------------------------------------------

def _branchy(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def _item(x):
    return x * x.max().item()


def _mask(x):
    return x[x > 0].sum() + x.sum()


def _nonzero(x):
    return x.nonzero().float().sum()


BREAKS = {
    "bool": (_branchy, "_local_scalar_dense", "data-dependent"),
    "item": (_item, "_local_scalar_dense", "data-dependent"),
    "mask": (_mask, "index", "boolean mask"),
    "nonzero": (_nonzero, "nonzero", "data-dependent output shape"),
}


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_graph_breaks_run_eagerly_and_are_reported(name):
    fn, op, reason = BREAKS[name]
    compiled = pyaten.compile(fn)
    x = pyaten.tensor([-1.0, 2.0, 3.0])
    _close(compiled(x), fn(x))
    _close(compiled(-x), fn(-x))  # an eager entry: the other branch is taken
    report = compiled.report
    assert len(report.graph_breaks) == 1
    assert op in report.graph_breaks[0].op and reason in report.graph_breaks[0].reason
    assert report.compiled_calls == 0
    assert "graph break" in str(pyaten.compile_report())
    with pytest.raises(Unsupported, match="graph break"):
        pyaten.compile(fn, fullgraph=True)(x)


def test_input_mutation_is_written_back():
    def bump(x, y):
        x.add_(y)
        return x * 2

    compiled = pyaten.compile(bump)
    for _ in range(2):
        a, b = pyaten.ones(4), pyaten.ones(4)
        out = compiled(a, b)
        _close(a, pyaten.full((4,), 2.0))
        _close(out, pyaten.full((4,), 4.0))


def test_outputs_keep_their_structure():
    def f(x, *, scale):
        return {"y": x * scale, "pair": (x.shape[0], x + 1)}

    compiled = pyaten.compile(f)
    x = pyaten.ones(3)
    for _ in range(2):
        out = compiled(x, scale=2.0)
        assert set(out) == {"y", "pair"} and out["pair"][0] == 3
        _close(out["y"], x * 2)
        _close(out["pair"][1], x + 1)


@pytest.mark.parametrize("model,kwargs", [
    (lambda x: x, {"backend": "nope"}), (lambda x: x, {"mode": "fast"}),
    (lambda x: x, {"mode": "default", "options": {}}), (5, {}),
])
def test_invalid_arguments_raise_as_torch(model, kwargs):
    with pytest.raises(Exception) as ours:
        pyaten.compile(model, **kwargs)
    with pytest.raises(Exception) as theirs:
        torch.compile(model, **kwargs)
    assert type(ours.value).__name__ == type(theirs.value).__name__
    assert isinstance(ours.value, RuntimeError) == isinstance(theirs.value, RuntimeError)
    assert str(ours.value) == str(theirs.value).replace("torch.", "pyaten.")


def test_custom_backend_gets_the_graph():
    seen = []

    def backend(gm, example_inputs):
        seen.append([n.target for n in gm.graph.nodes if n.op == "call_function"])
        return gm

    f = pyaten.compile(lambda x: (x + 1).relu(), backend=backend)
    _close(f(pyaten.ones(2)), pyaten.full((2,), 2.0))
    assert [str(t) for t in seen[0]] == ["aten.add.Tensor", "aten.relu.default"]
    x = pyaten.ones(2, requires_grad=True)
    f(x)
    f(x).sum().backward()  # the forward graph replayed through autograd
    _close(x.grad, pyaten.ones(2))
    assert [str(t) for t in seen[1]] == ["aten.add.Tensor", "aten.relu.default"]


def test_reset_and_is_compiling():
    seen = []

    def f(x):
        seen.append(pyaten.compiler.is_compiling())
        return x + 1

    compiled = pyaten.compile(f, backend="eager")
    compiled(pyaten.ones(2))
    compiled(pyaten.ones(2))
    assert seen == [True]  # the body ran once: at capture
    pyaten.compiler.reset()
    compiled(pyaten.ones(2))
    assert seen == [True, True] and not pyaten.compiler.is_compiling()


# -- the default backend ----------------------------------------------------------------------

@pytest.fixture(params=["c", "numba"])
def loops(request, monkeypatch):
    """Which builds the fused loops: the C compiler (the default where one is found) or
    Numba (PYATEN_NO_CC=1)."""
    from pyaten._inductor import cloops

    if request.param == "c" and not cloops.available():
        pytest.skip("no C compiler on this machine")
    if request.param == "numba":
        monkeypatch.setenv("PYATEN_NO_CC", "1")
    return request.param


def test_pointwise_chain_is_one_fused_loop_cached_on_disk(loops):
    compiled = pyaten.compile(PROGRAMS["chain"][0](pyaten))
    x = pyaten.tensor(_data((64, 32)))
    compiled(x)
    _close(compiled(x), PROGRAMS["chain"][0](pyaten)(x))
    run = compiled.last_entry.run
    assert len(run.groups) == 1 and len(run.groups[0].members) >= 9 and run.loops == loops
    source = run.source()
    if loops == "numba":
        assert "@njit(cache=True" in source and "def kernel(n0, n1, in0, out0)" in source
        folder = pyaten._inductor.cache_dir() / "kernels"
        assert any(folder.glob("k_*.py"))
        assert any((folder / "__pycache__").glob("k_*.nbi"))
    else:
        assert "void k0(int64_t n0, int64_t n1, const float *restrict in0" in source
        assert any((pyaten._inductor.cache_dir() / "cloops").glob("g_*.so"))


_FRESH_PROCESS = """
import sys, numpy as np, pyaten
f = pyaten.compile(lambda x: ((x * 2 + 1).relu() * x - 0.5).abs() + x)
x = pyaten.tensor(np.linspace(-2, 2, 96, dtype=np.float32).reshape(8, 12))
out = f(x)
assert np.allclose(f(x).numpy(), out.numpy())
print(f.last_entry.run.loops, "numba" in sys.modules)
"""


def test_a_new_process_loads_the_loops_from_disk_without_numba():
    from pyaten._inductor import cloops

    if not cloops.available():
        pytest.skip("no C compiler on this machine")
    import subprocess
    import sys

    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PYATEN_CACHE_DIR=cache)
        outs = []
        for _ in range(2):
            done = subprocess.run([sys.executable, "-c", _FRESH_PROCESS], env=env, timeout=120,
                                  capture_output=True, text=True, check=True)
            outs.append(done.stdout.split())
            libraries = sorted(os.listdir(os.path.join(cache, "cloops")))
            stamps = [os.stat(os.path.join(cache, "cloops", n)).st_mtime_ns for n in libraries]
            if len(outs) == 1:
                first = (libraries, stamps)
        assert outs == [["c", "False"], ["c", "False"]]
        assert (libraries, stamps) == first  # the second process built nothing


def test_without_a_loop_compiler_the_graph_runs_its_kernels_directly(monkeypatch):
    monkeypatch.setenv("PYATEN_NO_NUMBA", "1")
    monkeypatch.setenv("PYATEN_NO_CC", "1")
    compiled = pyaten.compile(PROGRAMS["chain"][0](pyaten))
    x = pyaten.tensor(_data((64, 32)))
    compiled(x)
    _close(compiled(x), PROGRAMS["chain"][0](pyaten)(x))
    assert compiled.last_entry.run.groups == []


def test_buffers_are_reused_between_fused_groups():
    def f(x, w):
        a = (x * 2 + 1).relu()  # group 1
        b = a @ w  # a kernel between groups
        c = ((b - 1) * 3).clamp(min=0)  # group 2
        return ((c @ w.t() + 1) * 2).abs()  # group 3 reuses group 1's buffer

    compiled = pyaten.compile(f)
    x, w = pyaten.tensor(_data((8, 8))), pyaten.tensor(_data((8, 8), seed=1))
    compiled(x, w)
    for _ in range(3):
        _close(compiled(x, w), f(x, w))
    run = compiled.last_entry.run
    # three loop outputs a call; one fresh buffer each (the returned one), the rest pooled
    assert len(run.groups) == 3 and run.allocations == 3


def test_explain_shows_guards_graph_and_loops():
    compiled = pyaten.compile(PROGRAMS["chain"][0](pyaten))
    text = pyaten._dynamo.explain(compiled)(pyaten.tensor(_data((64, 32))))
    assert "Guards" in str(text) and "size=[64, 32]" in str(text)
    assert "aten.relu.default" in str(text) and "*/" in str(text)  # the loop's source
    assert text.graph_count == 1 and text.graph_break_count == 0
    broken = pyaten._dynamo.explain(_branchy)(pyaten.ones(2))
    assert broken.graph_break_count == 1 and "data-dependent" in str(broken)
    compiled(pyaten.tensor(_data((64, 32))))
    dot = compiled.last_entry.run.to_dot()
    assert "subgraph cluster_fused_0" in dot and "relu" in dot


def test_explain_block_shows_compiled_calls():
    compiled = pyaten.compile(lambda x: (x * 2).relu() + 1)
    x = pyaten.tensor(_data((64, 32)))
    compiled(x)
    with pyaten.explain() as ex:
        compiled(x)
    text = str(ex)
    assert "compiled call of" in text and "Guards:" in text and "Fused loops:" in text


def test_transcendentals_fused_when_asked(monkeypatch, loops):
    from pyaten._inductor import lowering

    monkeypatch.setattr(lowering, "FUSE_TRANSCENDENTALS", True)
    fn = PROGRAMS["transcendental"][0](pyaten)
    x = pyaten.tensor(_data((64, 32), scale=3.0))
    compiled = pyaten.compile(fn)
    compiled(x)
    _close(compiled(x), fn(x))
    source = compiled.last_entry.run.source()
    if loops == "numba":
        assert "_tanh(" in source and "math.exp(" in source
    else:
        assert "tanhf(" in source and "expf(" in source
    tiny = pyaten.tensor(_data((64, 32), scale=0.01))  # the series branch of _tanh
    _close(compiled(tiny), fn(tiny), tol=1e-5)


# -- property: random pointwise chains ------------------------------------------------------------

_STEPS = {
    "add": lambda t, x: t + x, "sub": lambda t, x: t - 0.25, "mul": lambda t, x: t * x,
    "div": lambda t, x: t / 1.5, "neg": lambda t, x: -t, "relu": lambda t, x: t.relu(),
    "abs": lambda t, x: t.abs(), "clamp": lambda t, x: t.clamp(-1.0, 1.0),
    "max": lambda t, x: t.maximum(x), "min": lambda t, x: t.minimum(x * 0.5),
    "square": lambda t, x: t ** 2, "bias": lambda t, x: t + x[0],
}


@settings(max_examples=8, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(sorted(_STEPS)), min_size=2, max_size=6),
       st.sampled_from(["float32", "float64"]))
def test_random_pointwise_chains_match_eager_and_torch(steps, dtype):
    # derandomized: the same chains every run, so their loops come from the disk cache
    def chain(x):
        t = x
        for step in steps:
            t = _STEPS[step](t, x)
        return t

    data = _data((16, 8), seed=len(steps)).astype(dtype)
    compiled = pyaten.compile(chain)
    x = pyaten.tensor(data)
    compiled(x)
    _close(compiled(x), chain(x))
    _close(compiled(x), chain(torch.tensor(data)))


def test_trailing_reductions_end_their_loops():
    def f(x):
        return ((x * 2).sum(-1), (x + 1).relu().mean(1, keepdim=True), (x * x).sum(),
                (x - 1).mean(), (x * 3).sum(0))

    compiled = pyaten.compile(f)
    data = _data((16, 8))
    x = pyaten.tensor(data)
    compiled(x)
    for a, b in zip(compiled(x), f(torch.tensor(data))):
        _close(a, b, tol=1e-5)
    groups = compiled.last_entry.run.groups
    reduced = sorted(str(g.reduction.target) for g in groups if g.reduction is not None)
    assert reduced == ["aten.mean.default", "aten.mean.dim", "aten.sum.default",
                       "aten.sum.dim_IntList", "aten.sum.dim_IntList"]  # sum over dim 0 too


def test_modes_subclasses_and_autocast():
    from pyaten.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    f = pyaten.compile(lambda x: (x * 2).relu())
    x = pyaten.ones(3)
    f(x)
    with Log():
        out = f(x)  # under a mode the function runs as written: the mode sees its calls
    assert seen == ["aten.mul.Tensor", "aten.relu.default"]
    _close(out, (x * 2).relu())
    g = pyaten.compile(lambda a, b: a @ b, backend="eager")
    a = pyaten.ones(4, 4)
    g(a, a)
    with pyaten.autocast("cpu"):
        assert g(a, a).dtype == pyaten.bfloat16
    assert g(a, a).dtype == pyaten.float32
    assert "autocast state changed" in g.report.guard_failures[0]


def test_a_parameter_switching_requires_grad_recaptures():
    lin = nn.Linear(4, 2)
    compiled = pyaten.compile(lin)
    x = pyaten.ones(3, 4)
    for p in lin.parameters():
        p.requires_grad_(False)
    assert compiled(x).grad_fn is None
    for p in lin.parameters():
        p.requires_grad_(True)
    out = compiled(x)
    out.sum().backward()
    _close(lin.weight.grad, pyaten.full((2, 4), 3.0))
    assert "requires_grad" in compiled._compiled.report.guard_failures[-1]


def test_an_unsupported_operator_breaks_the_graph():
    from pyaten.library import Library

    lib = Library("compiletest", "DEF")
    lib.define("bump_(Tensor(a!) x) -> Tensor(a!)")
    lib.impl("bump_", lambda x: x.add_(1), "CPU")

    def f(x):
        y = x * 2
        pyaten.ops.compiletest.bump_(y)
        return y

    compiled = pyaten.compile(f)
    x = pyaten.ones(2)
    for _ in range(2):
        _close(compiled(x), pyaten.full((2,), 3.0))
    _close(x, pyaten.ones(2))
    assert "no functional variant" in compiled.report.graph_breaks[0].reason
    assert compiled.report.eager_calls == 1
    with pytest.raises(Unsupported, match="unsupported operator"):
        pyaten.compile(f, fullgraph=True)(x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_norm_updates_running_stats_and_switches_to_eval(backend):
    pyaten.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    twin = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    twin.load_state_dict(model.state_dict())
    compiled = pyaten.compile(model, backend=backend)
    x = pyaten.tensor(_data((2, 3, 6, 6)))
    for _ in range(3):
        got, want = compiled(x), twin(x)
        got.sum().backward()
        want.sum().backward()
        _close(got, want)
    _close(model[1].running_mean, twin[1].running_mean)
    _close(model[1].running_var, twin[1].running_var)
    _close(model[0].weight.grad, twin[0].weight.grad)
    model.eval()
    twin.eval()
    for _ in range(2):
        _close(compiled(x), twin(x))
    assert compiled._compiled.report.captures == 2


def test_an_entry_keeps_no_tensor_of_the_capture_run_alive():
    import gc
    import weakref

    compiled = pyaten.compile(lambda x: (x * 2).relu() + 1)
    x = pyaten.ones(8, 8)
    y = compiled(x)
    refs = [weakref.ref(x), weakref.ref(y)]
    del x, y
    gc.collect()
    assert all(r() is None for r in refs)
    assert compiled.last_entry.capture.graph.print_readable(False).count('"f32[8, 8]"') == 4


def _torch_backend(P, backend):
    # pyaten's default backend splits forward and backward as AOTAutograd does
    return "aot_eager" if P is torch and backend == "pyaten" else backend


# -- OptimizedModule --------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ("pyaten", "eager"))
def test_optimized_module_is_a_module_as_torch(backend):
    pairs = []
    for P in (pyaten, torch):
        module = P.nn.Sequential(P.nn.Linear(3, 4), P.nn.ReLU(), P.nn.Linear(4, 2))
        pairs.append((P, module, P.compile(module, backend=_torch_backend(P, backend))))
    seen = []
    for P, module, compiled in pairs:
        facts = [type(compiled).__name__, isinstance(compiled, P.nn.Module),
                 compiled._orig_mod is module, list(compiled._modules),
                 [n for n, _ in compiled.named_parameters()], list(compiled.state_dict()),
                 len(list(compiled.modules())), len(compiled), compiled._orig_mod[0].in_features,
                 compiled.training, repr(compiled).replace("torch.", "")]
        compiled.eval()
        facts += [module.training, compiled.training, all(not m.training
                                                         for m in module.modules())]
        compiled.train()
        compiled.tag = 3  # written through to the original module
        facts += [module.training, getattr(module, "tag", None), "tag" in compiled.__dict__]
        del compiled.tag
        facts += [hasattr(module, "tag"), "_orig_mod" in dir(compiled), "append" in dir(compiled)]
        with pytest.raises(TypeError, match="not subscriptable"):
            compiled[0]  # noqa: B018
        with pytest.raises(AttributeError):
            compiled.no_such_attribute  # noqa: B018
        seen.append(facts)
    assert seen[0] == seen[1]


def test_optimized_module_state_dict_round_trip_and_train_eval_recapture():
    pyaten.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 3))
    compiled = pyaten.compile(model)
    other = pyaten.compile(nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 3)))
    other.load_state_dict(compiled.state_dict())
    x = pyaten.tensor(_data((4, 8)))
    compiled.eval()
    other.eval()
    _close(compiled(x), other(x))
    _close(compiled(x), model(x))
    compiled.train()  # the dropout's flag changed: a new capture, random again
    pyaten.manual_seed(5)
    got = compiled(x)
    pyaten.manual_seed(5)
    want = model(x)
    assert pyaten.equal(got, want) and not pyaten.equal(got, compiled(x))
    report = compiled._compiled.report
    assert report.captures == 2 and "training flag" in report.guard_failures[-1]
    assert compiled.forward is compiled._compiled


# -- random operators ---------------------------------------------------------------------------

def _rand_add(x):
    return x + pyaten.rand(x.shape)


def _dropout(x):
    return F.dropout(x * 2, 0.5, training=True).relu()


def _bernoulli(x):
    return x.detach().clone().bernoulli_(0.3) * x + pyaten.bernoulli(pyaten.full_like(x, 0.3))


def _unused_draw(x):
    pyaten.randn(3)  # read by nothing: the generator still moves
    return x * 2 + pyaten.randint(0, 5, x.shape).float()


def _in_place_draws(x):
    return x.detach().clone().uniform_() + x.detach().clone().normal_(2.0, 3.0) * x + \
        pyaten.randn_like(x)


def _generator_argument(x):
    return x * pyaten.rand(x.shape, generator=_GENERATOR) + pyaten.rand(x.shape)


_GENERATOR = pyaten.Generator()
RANDOM = {"rand": _rand_add, "dropout": _dropout, "bernoulli": _bernoulli,
          "unused_draw": _unused_draw, "in_place": _in_place_draws,
          "generator": _generator_argument}


@pytest.mark.parametrize("name", sorted(RANDOM))
@pytest.mark.parametrize("backend", BACKENDS)
def test_random_operators_replay_eager_draws(name, backend):
    fn = RANDOM[name]
    compiled = pyaten.compile(fn, backend=backend, fullgraph=True)
    for grad in (False, True):
        for seed in range(3):  # the capture call, then compiled calls
            results = []
            for run in (compiled, fn):
                pyaten.manual_seed(seed)
                _GENERATOR.manual_seed(seed + 10)
                x = pyaten.tensor(_data((4, 5), seed=seed), requires_grad=grad)
                out = run(x)
                if grad:
                    out.sum().backward()
                results.append((out.detach().numpy(), x.grad, pyaten.get_rng_state(),
                                _GENERATOR.get_state()))
            (a, ga, sa, qa), (b, gb, sb, qb) = results
            np.testing.assert_array_equal(a, b)
            assert pyaten.equal(sa, sb) and pyaten.equal(qa, qb)
            if grad:
                np.testing.assert_array_equal(ga.numpy(), gb.numpy())
    assert compiled.report.captures == 2 and compiled.report.compiled_calls == 4
    assert compiled.report.graph_breaks == []


def test_dropout_module_training_step_replays_eager():
    pyaten.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 10))
    twin = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 10))
    twin.load_state_dict(model.state_dict())
    compiled = pyaten.compile(model)
    x = pyaten.tensor(_data((8, 16)))
    labels = pyaten.tensor(np.arange(8) % 10)
    for net in (compiled, twin):
        pyaten.manual_seed(3)
        opt = pyaten.optim.SGD(net.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            F.cross_entropy(net(x), labels).backward()
            opt.step()
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


# -- double backward ----------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_double_backward_as_torch(backend):
    """torch.compile: aot_autograd backends give first gradients that require grad but refuse
    a second differentiation; the eager backend differentiates twice. Checked on a compiled
    call (the second; pyaten's capture call runs eagerly and so differentiates twice)."""
    outcomes = []
    for P in (pyaten, torch):
        if P is torch:
            torch._dynamo.reset()
        compiled = P.compile(lambda x: (x.sin() * x).sum(), backend=_torch_backend(P, backend))
        compiled(P.ones(4, requires_grad=True))
        x = P.tensor([0.5, -1.0, 2.0, 0.25], requires_grad=True)
        (g,) = P.autograd.grad(compiled(x), x, create_graph=True)
        outcome = [g.requires_grad, g.detach().numpy().round(5).tolist()]
        try:
            (gg,) = P.autograd.grad(g.sum(), x)
            outcome.append(gg.numpy().round(5).tolist())
        except RuntimeError as error:
            outcome.append(str(error))
        (g,) = P.autograd.grad(compiled(x), x)  # no create_graph: nothing to differentiate
        outcome.append(g.requires_grad)
        outcomes.append(outcome)
    assert outcomes[0] == outcomes[1]


# -- max pool kernels written in C ----------------------------------------------------------------

@pytest.mark.parametrize("window", [(2, None, 0), (3, 2, 1), ((2, 3), (1, 2), (1, 0))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool_kernel_gives_eager_values_indices_and_gradients(window, dtype):
    from pyaten._inductor import cloops

    if not cloops.available():
        pytest.skip("no C compiler on this machine")
    kernel, stride, padding = window
    data = np.random.default_rng(0).integers(-3, 3, (2, 3, 9, 8)).astype(np.float64)
    data[0, 0, 0, 0] = np.nan  # NaN wins its window; ties keep the first; -inf planes
    data[1, 1] = -np.inf

    def f(x):
        values, indices = F.max_pool2d(x, kernel, stride, padding, return_indices=True)
        return values * 2, indices

    compiled = pyaten.compile(f)
    for grad in (False, True, True):
        x1, x2 = (pyaten.tensor(data, dtype=getattr(pyaten, dtype), requires_grad=grad)
                  for _ in range(2))
        (a, ia), (b, ib) = compiled(x1), f(x2)
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        np.testing.assert_array_equal(ia.numpy(), ib.numpy())
        if grad:
            a.sum().backward()
            b.sum().backward()
            np.testing.assert_array_equal(x1.grad.numpy(), x2.grad.numpy())
    run = compiled.last_entry.run
    names = {getattr(v, "__name__", "") for part in (run.forward_fn, run.backward_fn)
             for v in part._run.__globals__.values()}
    assert {"pool", "pool_backward"} <= names


def test_a_failing_c_compiler_leaves_the_loops_to_numba_or_unfused(monkeypatch, tmp_path):
    from pyaten._inductor import cloops

    broken = tmp_path / "broken-cc"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("CC", str(broken))
    monkeypatch.setenv("PYATEN_CACHE_DIR", str(tmp_path / "cache"))
    assert cloops.available()

    def fn(t):  # constants no other test uses: no library of this process has its loop
        return ((t * 3.25 + 0.625).relu() - 0.1875) * t

    x = pyaten.tensor(_data((64, 32)))
    for numba, loops in (("1", "none"), ("", "numba")):
        monkeypatch.setenv("PYATEN_NO_NUMBA", numba)
        compiled = pyaten.compile(fn)
        compiled(x)
        _close(compiled(x), fn(x))
        assert compiled.last_entry.run.loops == loops
        assert bool(compiled.last_entry.run.groups) == (loops == "numba")
