"""Symbolic shapes: SymInt arithmetic and guards, make_fx(tracing_mode="symbolic") against
PyTorch's graphs, and pyaten.compile(dynamic=...) capturing once for many batch sizes."""

from __future__ import annotations

import operator
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.fx.experimental.proxy_tensor import make_fx as torch_make_fx

import pyaten
from pyaten.fx.experimental.proxy_tensor import make_fx
from pyaten.fx.experimental.symbolic_shapes import ShapeEnv, fake_tensor

# --- SymInt arithmetic and guards ---------------------------------------------------------


def _symbols(*sizes: int) -> tuple[ShapeEnv, list]:
    env = ShapeEnv()
    fake = fake_tensor(pyaten.empty(*sizes), env, "L['x']")
    return env, list(fake.shape)


def test_zero_and_one_are_specialized_and_equal_sizes_share_a_symbol() -> None:
    env, (a, b, c, d) = _symbols(5, 1, 5, 0)
    assert isinstance(a, pyaten.SymInt) and a is c
    assert b == 1 and d == 0 and type(b) is int and type(d) is int
    assert env.var_to_val == {"s0": 5}


def test_arithmetic_builds_expressions_and_decisions_become_guards() -> None:
    env, (a, b) = _symbols(6, 4)
    assert str(a * b + 2) == "s0*s1 + 2"
    assert (a * b == b * a) is True  # the same polynomial: no guard
    assert str((a * b * 4) // (2 * a)) == "2*s1" and (a * b) % b == 0  # exact division
    assert str((a + 1) // a) == "(s0 + 1) // s0"
    assert (a >= 1) is True and (a == 0) is False  # symbols stand for sizes >= 2
    assert not env.guards
    assert bool(a > b)
    assert env.format_guards() == ["s0 - s1 > 0"]
    assert int(a // 4) == 1  # leaving the symbolic world specialises
    assert env.format_guards()[-1] == "s0 // 4 == 1"
    assert env.check([(a, 6), (b, 4)]) is None
    assert env.check([(a, 9), (b, 4)]) is not None  # s0 // 4 == 2
    assert env.check([(a, 5), (b, 5)]) is not None  # s0 > s1 fails


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 50), st.integers(2, 50), st.integers(-7, 7), st.integers(1, 5))
def test_expressions_evaluate_like_python_ints(x: int, y: int, k: int, m: int) -> None:
    env, (a, b) = _symbols(x, y) if x != y else _symbols(x, y + 1)
    y = b.node.hint
    values = {"s0": x, "s1": y}
    for expr, want in [(a * b - k, x * y - k), ((a + k) // m, (x + k) // m),
                       ((a * k) % m, (x * k) % m), (pyaten.sym_max(a, b) + k, max(x, y) + k),
                       (-a + 3 * b, -x + 3 * y)]:
        got = expr.node.expr.evaluate(values) if isinstance(expr, pyaten.SymInt) else expr
        assert got == want


def test_a_symbolic_size_is_unhashable_as_a_plain_int_but_usable_as_a_key() -> None:
    _, (a, _) = _symbols(6, 4)
    assert {a: 1}[a] == 1
    assert operator.index(a) == 6


# --- make_fx(tracing_mode="symbolic") against PyTorch -------------------------------------

def _cases(lib):  # noqa: ANN001, ANN202 - the same programs on pyaten and on torch
    F = lib.nn.functional
    return {
        "pointwise": (lambda x, y: (x + y).relu() * 2, [(4, 3), (1, 3)], [(7, 5), (1, 5)]),
        "view_of_size": (lambda x: x.view(x.shape[0], -1), [(4, 3, 2)], [(6, 3, 2)]),
        "reshape": (lambda x: x.reshape(-1, 6), [(4, 3, 2)], [(5, 3, 2)]),
        "sum_mean": (lambda x: x.sum(1) + x.mean(), [(4, 3)], [(9, 3)]),
        "linear": (lambda x, w, b: F.linear(x, w, b), [(4, 3), (5, 3), (5,)],
                   [(8, 3), (5, 3), (5,)]),
        "mm": (lambda x, w: x @ w, [(4, 3), (3, 5)], [(6, 3), (3, 7)]),
        "bmm": (lambda x, w: lib.bmm(x, w), [(2, 4, 3), (2, 3, 5)], [(3, 6, 3), (3, 3, 5)]),
        "softmax": (lambda x: lib.softmax(x, -1), [(4, 3)], [(2, 9)]),
        "layer_norm": (lambda x, w, b: F.layer_norm(x, (3,), w, b), [(4, 3), (3,), (3,)],
                       [(7, 3), (3,), (3,)]),
        "cat": (lambda x, y: lib.cat([x, y]), [(4, 3), (2, 3)], [(5, 3), (6, 3)]),
        "index": (lambda x: x[1:, 0], [(4, 3)], [(8, 2)]),
        "transpose": (lambda x: x.transpose(0, 1).permute(1, 0).t(), [(4, 3)], [(5, 2)]),
        "conv2d": (lambda x, w: F.conv2d(x, w), [(2, 3, 8, 8), (4, 3, 3, 3)],
                   [(5, 3, 10, 9), (4, 3, 3, 3)]),
        "new_zeros": (lambda x: x.new_zeros(x.shape[0], 2) + x.sum(), [(4, 3)], [(6, 3)]),
        "expand": (lambda x: x.unsqueeze(0).expand(3, *x.shape), [(4, 3)], [(2, 5)]),
        "size_arithmetic": (lambda x: x.view(x.shape[0] * 2, x.shape[1] // 2), [(4, 6)],
                            [(3, 10)]),
    }


_NAMES = list(_cases(pyaten))


def _targets(gm) -> list[str]:  # noqa: ANN001
    out = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        target = node.target
        out.append(str(target).replace("torch.ops.", "").replace("pyaten.ops.", "")
                   if hasattr(target, "overloadpacket") else f"{target.__module__}."
                   f"{target.__name__}".replace("_operator", "operator"))
    return out


def _sym_size_reads(gm) -> list[tuple[str, int, str]]:  # noqa: ANN001
    """Each sym_size.int node: the tensor it reads, the dim, and the node after it."""
    nodes = list(gm.graph.nodes)
    reads = []
    for i, node in enumerate(nodes):
        if node.op == "call_function" and "sym_size" in str(node.target):
            reads.append((node.args[0].name, node.args[1], nodes[i + 1].name))
    return reads


# Where pyaten's arguments differ from PyTorch's in every tracing mode (not a matter of
# symbols): `x[1:]` records no end (torch: 2**63 - 1), `new_zeros` no `pin_memory=False`.
_ARGUMENT_DEVIATIONS = {"index", "new_zeros"}


@pytest.mark.parametrize("name", _NAMES)
def test_make_fx_symbolic_graph_equals_torchs(name: str) -> None:
    fn, shapes, _ = _cases(pyaten)[name]
    torch_fn = _cases(torch)[name][0]
    ours = make_fx(fn, tracing_mode="symbolic")(*[pyaten.randn(*s) for s in shapes])
    theirs = torch_make_fx(torch_fn, tracing_mode="symbolic")(*[torch.randn(*s)
                                                                for s in shapes])
    assert _targets(ours) == _targets(theirs)
    assert _sym_size_reads(ours) == _sym_size_reads(theirs)
    if name not in _ARGUMENT_DEVIATIONS:
        assert ours.code == theirs.code.replace("torch.", "pyaten.")
    ours.graph.lint()


def _fx_programs():  # noqa: ANN202 - tests/test_fx.py's programs, traced symbolically here
    from tests.test_fx import PROGRAMS

    return PROGRAMS


@pytest.mark.parametrize("program", _fx_programs(), ids=lambda p: p.__name__.strip("_"))
def test_make_fx_symbolic_code_of_test_fx_programs_equals_torchs(program) -> None:  # noqa: ANN001
    ours_fn, ours_inputs = program(pyaten)
    theirs_fn, theirs_inputs = program(torch)
    ours = make_fx(ours_fn, tracing_mode="symbolic")(*ours_inputs)
    theirs = torch_make_fx(theirs_fn, tracing_mode="symbolic")(*theirs_inputs)
    assert ours.code == theirs.code.replace("torch.", "pyaten.")


@pytest.mark.parametrize("name", _NAMES)
def test_make_fx_symbolic_graph_reruns_on_new_sizes(name: str) -> None:
    fn, shapes, new_shapes = _cases(pyaten)[name]
    gm = make_fx(fn, tracing_mode="symbolic")(*[pyaten.randn(*s) for s in shapes])
    inputs = [pyaten.randn(*s) for s in new_shapes]
    want = fn(*inputs)
    got = gm(*inputs)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_make_fx_symbolic_meta_values_are_symbolic() -> None:
    gm = make_fx(lambda x, w: x @ w, tracing_mode="symbolic")(pyaten.randn(4, 3),
                                                              pyaten.randn(3, 5))
    out = [n for n in gm.graph.nodes if n.op == "call_function"][-1]
    assert [str(s) for s in out.meta["val"].shape] == ["s0", "s2"]
    assert out.meta["val"].device.type == "meta"
    assert gm.shape_env.var_to_val == {"s0": 4, "s1": 3, "s2": 5}


def test_make_fx_symbolic_records_a_branch_on_a_size_as_a_guard() -> None:
    def fn(x):  # noqa: ANN001, ANN202
        return x * 2 if x.shape[0] > 5 else x + 1

    gm = make_fx(fn, tracing_mode="symbolic")(pyaten.randn(8, 3))
    assert _targets(gm) == ["aten.mul.Tensor"]
    assert gm.shape_env.format_guards() == ["s0 - 5 > 0"]


def test_make_fx_rejects_an_unknown_tracing_mode() -> None:
    with pytest.raises(ValueError, match="Unexpected tracing type: bogus"):
        make_fx(lambda x: x, tracing_mode="bogus")


# --- pyaten.compile(dynamic=...) ----------------------------------------------------------

def _chain(x):  # noqa: ANN001, ANN202 - a pointwise chain with a reduction at the end
    y = ((x * 2 + 1).sin() * x).relu() - x.exp() * 0.5
    return y, y.sum(-1)


def _close(a, b) -> None:  # noqa: ANN001
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "pyaten"])
def test_compile_dynamic_pointwise_chain_captures_once_for_three_batch_sizes(
        backend: str) -> None:
    f = pyaten.compile(_chain, dynamic=True, backend=backend)
    for batch in (8, 16, 33):
        x = pyaten.randn(batch, 64)
        for got, want in zip(f(x), _chain(x)):
            assert got.shape == want.shape
            _close(got, want)
    assert f.report.captures == 1 and f.report.compiled_calls == 2
    assert "dynamic shapes" in f.last_entry.how
    if backend == "pyaten":
        run = f.last_entry.run
        assert len(run.compiled) == 3  # one per size, from one capture
        sources = {tuple(c.sources) for c in run.compiled.values()}
        assert len(sources) == 1  # the same loops (their sizes are arguments)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "pyaten"])
def test_compile_dynamic_mlp_training_step_captures_once(backend: str) -> None:
    nn = pyaten.nn
    pyaten.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 10))
    compiled = pyaten.compile(mlp, dynamic=True, backend=backend)
    for batch in (4, 9, 17):
        x = pyaten.randn(batch, 20)
        out = compiled(x)
        want = mlp(x)
        _close(out, want)
        out.sum().backward()
        got_grads = [p.grad.clone() for p in mlp.parameters()]
        mlp.zero_grad()
        want.sum().backward()
        for g, p in zip(got_grads, mlp.parameters()):
            _close(g, p.grad)
        mlp.zero_grad()
    assert compiled._compiled.report.captures == 1


def test_compile_dynamic_reads_sizes_at_run_time() -> None:
    def fn(x):  # noqa: ANN001, ANN202
        return x.view(x.shape[0], -1).softmax(-1) * x.shape[1]

    f = pyaten.compile(fn, dynamic=True, backend="pyaten")
    for shape in ((4, 3, 2), (7, 5, 2), (3, 3, 3)):
        x = pyaten.randn(*shape)
        _close(f(x), fn(x))
    assert f.report.captures == 1
    assert "sym_size" in f.last_entry.capture.graph.code


def test_compile_dynamic_conv_net_forward_over_batch_sizes() -> None:
    nn = pyaten.nn
    pyaten.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(4 * 4 * 4, 5))
    compiled = pyaten.compile(net, dynamic=True)
    with pyaten.no_grad():
        for batch in (2, 5, 3):
            x = pyaten.randn(batch, 3, 8, 8)
            _close(compiled(x), net(x))
    assert compiled._compiled.report.captures == 1


def test_compile_dynamic_recaptures_on_a_rank_change_and_a_failed_shape_guard() -> None:
    def fn(x):  # noqa: ANN001, ANN202
        return x * 2 if x.shape[0] > 10 else x + 1

    f = pyaten.compile(fn, dynamic=True, backend="eager")
    for shape in ((4, 3), (6, 5)):
        x = pyaten.randn(*shape)
        _close(f(x), fn(x))
    assert f.report.captures == 1
    x = pyaten.randn(20, 3)  # the branch guard `s0 > 10` fails
    _close(f(x), fn(x))
    assert f.report.captures == 2 and "shape guard failed" in f.report.guard_failures[-1]
    x = pyaten.randn(4, 3, 2)  # rank 3: the guard on the rank fails
    _close(f(x), fn(x))
    assert f.report.captures == 3 and "dim mismatch" in f.report.guard_failures[-1]
    x = pyaten.randn(30, 2)
    _close(f(x), fn(x))
    assert f.report.captures == 3  # the second graph (s0 > 10) serves it


def test_compile_dynamic_specializes_a_size_of_one() -> None:
    f = pyaten.compile(lambda x: x * 3, dynamic=True, backend="eager")
    f(pyaten.randn(8, 4))
    f(pyaten.randn(5, 4))
    assert f.report.captures == 1
    _close(f(pyaten.ones(1, 4)), pyaten.ones(1, 4) * 3)
    assert f.report.captures == 2  # 0 and 1 are never a symbol's value, as PyTorch's


def test_compile_automatic_dynamic_and_static() -> None:
    auto = pyaten.compile(lambda x: x.relu() + 1, backend="eager")
    static = pyaten.compile(lambda x: x.relu() + 1, backend="eager", dynamic=False)
    for batch in (8, 16, 33):
        x = pyaten.randn(batch, 4)
        _close(auto(x), x.relu() + 1)
        _close(static(x), x.relu() + 1)
    # as torch.compile: a static capture, then one dynamic capture for the changed dim
    assert auto.report.captures == 2 and static.report.captures == 3
    assert "dynamic shapes" in auto.last_entry.how
    assert [str(s) for s in auto.last_entry.capture.graph.graph.nodes[0].meta["val"].shape] \
        == ["s0", "4"]


def test_compile_dynamic_guards_are_explained() -> None:
    f = pyaten.compile(lambda x, y: (x * 2 if x.shape[0] > 5 else x) @ y, dynamic=True,
                       backend="eager")
    f(pyaten.randn(6, 3), pyaten.randn(3, 5))
    lines = f.last_entry.guards.describe()
    assert "input 0: Tensor size=[s0, s1] stride=[s1, 1] dtype=pyaten.float32" in lines[1]
    assert "input 1: Tensor size=[s1, s2] stride=[s2, 1]" in lines[2]
    assert "shape: s0 - 5 > 0" in lines


_BRANCHY = pyaten.compile(lambda x, y: (x * 2 if x.shape[0] > 5 else x).view(-1, 2) + y,
                          dynamic=True, backend="eager")


def _branchy_guards():
    # captured on first use, and again after another test in this worker reset the caches
    # (pyaten._dynamo.reset())
    if not _BRANCHY._entries:
        _BRANCHY(pyaten.randn(6, 4), pyaten.randn(1, 2))
    return _BRANCHY._entries[0].guards


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 12), st.integers(0, 7), st.integers(1, 3), st.booleans())
def test_the_fast_guard_check_agrees_with_the_explained_one(a: int, b: int, y_rows: int,
                                                             transposed: bool) -> None:
    from pyaten.utils import _pytree

    x = pyaten.randn(b, a).t() if transposed else pyaten.randn(a, b)
    flat, spec = _pytree.tree_flatten(((x, pyaten.randn(y_rows, 2)), {}))
    guards = _branchy_guards()
    assert guards._fast_check(flat) == (guards._check(spec, flat, guards.state) is None)


class _Block(pyaten.nn.Module):
    """A small GPT block: attention with sizes read from the input, a scale computed from
    them (a SymFloat), LayerNorm (saved statistics), GELU MLP."""

    def __init__(self, d: int = 16, heads: int = 2) -> None:
        super().__init__()
        nn = pyaten.nn
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):  # noqa: ANN001, ANN201
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                   for t in self.qkv(self.ln1(x)).split(C, dim=2))
        att = ((q @ k.transpose(-2, -1)) * (1.0 / (C // self.heads) ** 0.5)).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))
        return x + self.fc2(pyaten.nn.functional.gelu(self.fc(self.ln2(x))))


@pytest.mark.parametrize("backend", ["aot_eager", "pyaten"])
def test_compile_dynamic_gpt_block_forward_backward_captures_once(backend: str) -> None:
    pyaten.manual_seed(0)
    block = _Block()
    compiled = pyaten.compile(block, dynamic=True, backend=backend)
    for batch, time_steps in ((2, 5), (3, 7), (4, 6)):
        x = pyaten.randn(batch, time_steps, 16, requires_grad=True)
        out, want = compiled(x), block(x)
        _close(out, want)
        params = [x, block.qkv.weight, block.ln1.weight]
        got = pyaten.autograd.grad((out * out).sum(), params)
        expected = pyaten.autograd.grad((want * want).sum(), params)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-4, atol=1e-5)
    assert compiled._compiled.report.captures == 1


def test_a_factory_given_symbolic_sizes_is_fake_and_keeps_its_device_in_the_graph() -> None:
    def fn(x):  # noqa: ANN001, ANN202
        return x + pyaten.zeros(x.shape[0], 1)

    gm = make_fx(fn, tracing_mode="symbolic")(pyaten.randn(6, 4))
    zeros = [n for n in gm.graph.nodes if "zeros" in str(n.target)][0]
    assert zeros.args[0][0].name == "sym_size_int"
    assert zeros.meta["val"].device.type == "meta"
    x = pyaten.randn(9, 3)
    assert gm(x).equal(fn(x))
    f = pyaten.compile(fn, dynamic=True, backend="pyaten")
    for rows in (6, 9, 4):
        x = pyaten.randn(rows, 4)
        _close(f(x), fn(x))
    assert f.report.captures == 1


def test_a_meta_kernel_that_refuses_symbols_falls_back_to_static_captures() -> None:
    from pyaten.library import Library

    lib = Library("symtest", "DEF")
    try:
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CPU")

        def meta(x):  # noqa: ANN001, ANN202 - a kernel written for plain ints only
            if not all(type(s) is int for s in x.shape):
                raise TypeError("twice: sizes must be ints")
            return pyaten.empty(x.shape, device="meta")

        lib.impl("twice", meta, "Meta")
        op = pyaten.ops.symtest.twice.default
        f = pyaten.compile(lambda x: op(x) + 1, backend="eager")
        for rows in (3, 5, 5, 7):
            x = pyaten.randn(rows, 2)
            _close(f(x), x * 2 + 1)
        assert f.report.dynamic_fallbacks and "sizes must be ints" in \
            f.report.dynamic_fallbacks[0]
        assert f.report.captures == 3  # static per shape from then on
        assert "dynamic shapes failed, static" in str(f.report)
    finally:
        lib.close()


# --- FakeTensorMode (pyaten._subclasses.fake_tensor) ----------------------------------------

_FAKE_PROGRAMS = {
    "matmul": lambda lib, a, b: a @ b.t(),
    "broadcast": lambda lib, a, b: (a.unsqueeze(1) * b).sum(-1),
    "transpose_contiguous": lambda lib, a, b: a.t().contiguous() + 1,
    "factory": lambda lib, a, b: lib.zeros(a.shape[0], 2, dtype=lib.float64) + a[:, :2],
    "softmax_int": lambda lib, a, b: (a > 0).to(lib.int32).sum(0) + b.softmax(0)[0],
}


@pytest.mark.parametrize("name", list(_FAKE_PROGRAMS))
def test_fake_tensor_mode_gives_torchs_shapes_strides_and_dtypes(name: str) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode as TorchFakeTensorMode

    from pyaten._subclasses.fake_tensor import FakeTensorMode, is_fake

    program = _FAKE_PROGRAMS[name]
    a, b = np.random.rand(5, 3).astype(np.float32), np.random.rand(4, 3).astype(np.float32)
    mode = FakeTensorMode()
    fa, fb = mode.from_tensor(pyaten.from_numpy(a)), mode.from_tensor(pyaten.from_numpy(b))
    with mode:
        ours = program(pyaten, fa, fb)
    torch_mode = TorchFakeTensorMode()
    ta, tb = torch_mode.from_tensor(torch.from_numpy(a)), torch_mode.from_tensor(
        torch.from_numpy(b))
    with torch_mode:
        theirs = program(torch, ta, tb)
    assert is_fake(ours) and not is_fake(pyaten.from_numpy(a))
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.stride() == theirs.stride()
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


def test_fake_tensor_mode_with_a_shape_env_is_symbolic_and_refuses_real_tensors() -> None:
    from pyaten._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode(shape_env=ShapeEnv())
    real = pyaten.randn(4, 3)
    x = mode.from_tensor(real)
    assert mode.from_tensor(x) is x and mode.from_tensor(real) is x
    with mode:
        y = x @ x.t()
    assert [str(s) for s in y.shape] == ["s0", "s0"]
    real = pyaten.randn(4, 3)
    with pytest.raises(AssertionError, match="allow_non_fake_inputs"):
        with mode:
            x + real
    with FakeTensorMode(allow_non_fake_inputs=True):
        assert (x + real).device.type == "meta"


def test_mark_dynamic_makes_the_first_capture_symbolic_in_the_marked_dim() -> None:
    f = pyaten.compile(lambda x: x.softmax(-1) * 2, backend="eager")
    x = pyaten.randn(6, 4)
    pyaten._dynamo.mark_dynamic(x, 0)
    _close(f(x), x.softmax(-1) * 2)
    assert [str(s) for s in f.last_entry.guards.fakes[0].shape] == ["s0", "4"]
    for rows in (3, 9):
        y = pyaten.randn(rows, 4)
        _close(f(y), y.softmax(-1) * 2)
    assert f.report.captures == 1
    f(pyaten.randn(3, 5))  # dim 1 was not marked: a new capture
    assert f.report.captures == 2
    with pytest.raises(TypeError, match="expected a Tensor"):
        pyaten._dynamo.mark_dynamic([1, 2], 0)


def test_a_graph_break_in_a_dynamic_capture_runs_eagerly_for_every_size() -> None:
    def fn(x):  # noqa: ANN001, ANN202
        return x * x.sum().item()

    f = pyaten.compile(fn, dynamic=True, backend="eager")
    for rows in (3, 5, 7):
        x = pyaten.randn(rows, 2)
        _close(f(x), fn(x))
    assert f.report.captures == 1 and f.report.eager_calls == 2
    assert "_local_scalar_dense" in f.report.graph_breaks[0].op
    strict = pyaten.compile(fn, dynamic=True, fullgraph=True)
    with pytest.raises(pyaten._dynamo.Unsupported, match="fullgraph=True"):
        strict(pyaten.randn(3, 2))


def test_print_readable_annotates_symbolic_sizes_as_torchs() -> None:
    gm = make_fx(lambda x: x.view(x.shape[0], -1).relu(), tracing_mode="symbolic")(
        pyaten.randn(4, 3, 2))
    text = gm.print_readable(print_output=False)
    assert 'x_1: "f32[s0, s1, s2]"' in text
    assert 'sym_size_int: "Sym(s0)" = pyaten.ops.aten.sym_size.int(x_1, 0)' in text
    assert 'view: "f32[s0, s1*s2]"' in text


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_sym_size_stride_numel_operators_as_torchs(device: str) -> None:
    x, t = pyaten.randn(4, 3, device=device), torch.randn(4, 3, device=device)
    ours, theirs = pyaten.ops.aten, torch.ops.aten
    assert ours.sym_size.int(x, -1) == theirs.sym_size.int(t, -1) == 3
    assert ours.sym_stride.int(x, 0) == theirs.sym_stride.int(t, 0) == 3
    assert ours.sym_numel.default(x) == theirs.sym_numel.default(t) == 12
    for call in (lambda a, v: a.sym_size.int(v, 5), lambda a, v: a.sym_stride.int(v, -3)):
        with pytest.raises(IndexError) as expected:
            call(theirs, t)
        with pytest.raises(IndexError, match=re.escape(str(expected.value))):
            call(ours, x)
