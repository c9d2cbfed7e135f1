"""pyaten.fx and make_fx against PyTorch 2.13's torch.fx / make_fx: the same graphs and code
for the same programs, re-run on new inputs, fake tracing's shapes, graph checks."""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx as torch_make_fx

import pyaten
from pyaten.fx import Graph
from pyaten.fx.experimental.proxy_tensor import make_fx
from tests._helpers import assert_same


def _mlp(P):
    def f(x, w1, w2):
        return (x @ w1).relu().matmul(w2).sum(dim=1)

    return f, [P.arange(6.0).reshape(2, 3) / 6, P.ones(3, 4) / 4, P.ones(4, 2) / 2]


def _pointwise(P):
    def f(x, y):
        return (x * 2 + y).sigmoid() - y.exp() / 3

    return f, [P.arange(4.0), P.ones(4)]


def _views(P):
    def f(x):
        return x.t().reshape(6).unsqueeze(0).expand(2, 6)[1, 2:5]

    return f, [P.arange(6.0).reshape(2, 3)]


def _reductions(P):
    def f(x):
        return x.sum(0), x.amax(1, keepdim=True), x.mean(), x.softmax(-1)

    return f, [P.arange(6.0).reshape(2, 3)]


def _linear_layer_norm(P):
    def f(x, w, b):
        h = P.nn.functional.linear(x, w, b)
        return P.nn.functional.layer_norm(h, (4,))

    return f, [P.ones(2, 3), P.arange(12.0).reshape(4, 3) / 12, P.ones(4)]


def _in_place(P):
    def f(x):
        y = x.clone()
        y.mul_(3).add_(1)
        return y

    return f, [P.arange(3.0)]


def _multiple_outputs(P):
    def f(x):
        values, indices = x.max(1)
        return values * 2, indices

    return f, [P.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])]


PROGRAMS = [_mlp, _pointwise, _views, _reductions, _linear_layer_norm, _in_place,
            _multiple_outputs]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__.strip("_") for p in PROGRAMS])
def test_make_fx_captures_pytorchs_graph(program) -> None:
    ours_fn, ours_inputs = program(pyaten)
    theirs_fn, theirs_inputs = program(torch)
    ours = make_fx(ours_fn)(*ours_inputs)
    theirs = torch_make_fx(theirs_fn)(*theirs_inputs)
    assert ours.code == theirs.code.replace("torch.", "pyaten.")
    assert str(ours.graph) == str(theirs.graph).replace("torch.", "pyaten.")
    # the module runs on new inputs as the function does
    fresh = [t * 1.5 + 0.25 if t.dtype.is_floating_point else t for t in ours_inputs]
    expected = ours_fn(*fresh)
    got = ours(*fresh)
    for a, b in zip(pyaten.utils._pytree.tree_leaves(got),
                    pyaten.utils._pytree.tree_leaves(expected)):
        assert a.equal(b)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__.strip("_") for p in PROGRAMS])
def test_fake_tracing_records_shapes_dtypes_and_strides(program) -> None:
    ours_fn, ours_inputs = program(pyaten)
    theirs_fn, theirs_inputs = program(torch)
    ours = make_fx(ours_fn, tracing_mode="fake")(*ours_inputs)
    theirs = torch_make_fx(theirs_fn, tracing_mode="fake")(*theirs_inputs)
    ours_vals = [n.meta.get("val") for n in ours.graph.nodes if n.op != "output"]
    theirs_vals = [n.meta.get("val") for n in theirs.graph.nodes if n.op != "output"]
    assert len(ours_vals) == len(theirs_vals)
    for a, b in zip(ours_vals, theirs_vals):
        if isinstance(b, torch.Tensor):
            assert a.device.type == "meta"
            assert tuple(a.shape) == tuple(b.shape) and a.stride() == b.stride()
            assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
    # and the captured module still runs on real inputs
    got = ours(*ours_inputs)
    expected = ours_fn(*ours_inputs)
    for a, b in zip(pyaten.utils._pytree.tree_leaves(got),
                    pyaten.utils._pytree.tree_leaves(expected)):
        assert a.equal(b)


def test_closed_over_tensors_become_constants() -> None:
    w = pyaten.arange(3.0)
    g = make_fx(lambda x: x + w)(pyaten.ones(3))
    tw = torch.arange(3.0)
    tg = torch_make_fx(lambda x: x + tw)(torch.ones(3))
    assert g.code == tg.code.replace("torch.", "pyaten.")
    assert_same(g(pyaten.ones(3)), tg(torch.ones(3)))


def test_print_readable_annotates_shapes() -> None:
    f, inputs = _mlp(pyaten)
    text = make_fx(f)(*inputs).print_readable(print_output=False)
    assert 'x_1: "f32[2, 3]"' in text and 'mm: "f32[2, 4]"' in text
    assert 'sum_1: "f32[2]"' in text


def test_graph_editing_lint_and_recompile() -> None:
    f, inputs = _pointwise(pyaten)
    g = make_fx(f)(*inputs)
    g.graph.lint()
    for node in g.graph.nodes:
        if node.target is pyaten.ops.aten.sigmoid.default:
            node.target = pyaten.ops.aten.tanh.default
    g.recompile()
    x, y = inputs
    assert g(x, y).equal((x * 2 + y).tanh() - y.exp() / 3)
    graph = Graph()
    a = graph.placeholder("a")
    b = graph.call_function(pyaten.ops.aten.neg.default, (a,))
    graph.output(b)
    graph.lint()
    with pytest.raises(RuntimeError, match="still had 1 users"):
        graph.erase_node(b)
    other = Graph()
    stray = other.placeholder("stray")
    graph.call_function(pyaten.ops.aten.neg.default, (stray,))
    with pytest.raises(RuntimeError, match="does not belong to this Graph"):
        graph.lint()


def test_bad_tracing_mode() -> None:
    with pytest.raises(ValueError, match="Unexpected tracing type"):
        make_fx(lambda x: x, tracing_mode="bogus")


def _program_ids():
    from tests.test_python_dispatch import PROGRAMS as LOGGED

    return [p for p in LOGGED if p.__name__ not in ("_random_shapes_only",)]


@pytest.mark.parametrize("program", _program_ids(), ids=lambda p: p.__name__.strip("_"))
def test_make_fx_targets_equal_pytorchs(program) -> None:
    def targets(lib, capture):
        P = pyaten if lib == "pyaten" else torch
        gm = capture(lambda: program(P))()
        return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]

    assert targets("pyaten", make_fx) == targets("torch", torch_make_fx)


def _training_step(P):
    def step(x, w1, w2):
        loss = (x @ w1).tanh().matmul(w2).pow(2).mean()
        g1, g2 = P.autograd.grad(loss, [w1, w2])
        return loss, g1, g2

    return step


def test_joint_forward_backward_capture_of_a_training_step() -> None:
    step = _training_step(pyaten)
    w1 = (pyaten.arange(6.0).reshape(3, 2) / 6).requires_grad_()
    w2 = (pyaten.ones(2, 1) / 2).requires_grad_()
    gm = make_fx(step)(pyaten.ones(4, 3), w1, w2)
    ops = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert "aten.tanh_backward.default" in ops  # the backward is in the same graph
    theirs = torch_make_fx(_training_step(torch))(
        torch.ones(4, 3), (torch.arange(6.0).reshape(3, 2) / 6).requires_grad_(),
        (torch.ones(2, 1) / 2).requires_grad_())
    # The same operators, but for the overload of a tensor-and-number product in a formula:
    # PyTorch's C++ formulas reach `.Scalar`, pyaten's Python formulas `.Tensor`.
    def packets(names):
        return sorted(name.rsplit(".", 1)[0] for name in names)

    assert packets(ops) == packets(str(n.target) for n in theirs.graph.nodes
                                   if n.op == "call_function")
    x = pyaten.arange(12.0).reshape(4, 3) / 10
    new_w1, new_w2 = w1.detach() * 2, w2.detach() - 1
    captured = gm(x, new_w1, new_w2)
    eager = step(x, new_w1.requires_grad_(), new_w2.requires_grad_())
    for a, b in zip(captured, eager):
        assert pyaten.allclose(a, b.detach())


# -- symbolic_trace ------------------------------------------------------------------------

def _modules(P):
    nn, F = P.nn, P.nn.functional

    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 4)
            self.w = nn.Parameter(P.ones(4))
            self.seq = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))

        def forward(self, x, y=None):
            h = self.lin(x) * self.w + 1
            h = F.relu(h)
            z = P.cat([h, h], dim=0).view(-1, 4)
            return self.seq(z).softmax(-1), h.shape

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(4)
            self.fc1 = nn.Linear(4, 8)
            self.fc2 = nn.Linear(8, 4)

        def forward(self, x):
            return x + self.fc2(F.silu(self.fc1(self.norm(x)))) * 0.5

    class Conv(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 3, padding=1)
            self.pool = nn.MaxPool2d(2)

        def forward(self, x):
            h = self.pool(self.conv(x).relu())
            return h.flatten(1).mean(dim=1, keepdim=True) - h.amax()

    def free_function(a, b):
        return P.matmul(a, b.t()).tanh()[0] / 2, -a

    return {"mixed": (Mixed, (P.ones(2, 3),)), "block": (Block, (P.arange(8.0).reshape(2, 4),)),
            "conv": (Conv, (P.arange(16.0).reshape(1, 1, 4, 4),)),
            "function": (free_function, (P.ones(2, 3), P.arange(6.0).reshape(2, 3)))}


@pytest.mark.parametrize("name", ["mixed", "block", "conv", "function"])
def test_symbolic_trace_as_pytorchs(name) -> None:
    ours_cls, ours_inputs = _modules(pyaten)[name]
    theirs_cls, theirs_inputs = _modules(torch)[name]
    pyaten.manual_seed(0)
    torch.manual_seed(0)
    ours_root = ours_cls() if isinstance(ours_cls, type) else ours_cls
    theirs_root = theirs_cls() if isinstance(theirs_cls, type) else theirs_cls
    ours = pyaten.fx.symbolic_trace(ours_root)
    theirs = torch.fx.symbolic_trace(theirs_root)
    assert ours.code == theirs.code.replace("torch", "pyaten")
    assert str(ours.graph) == str(theirs.graph).replace("torch", "pyaten")
    got, expected = ours(*ours_inputs), ours_root(*ours_inputs)
    for a, b in zip(pyaten.utils._pytree.tree_leaves(got),
                    pyaten.utils._pytree.tree_leaves(expected)):
        assert a.equal(b) if isinstance(a, pyaten.Tensor) else a == b
    assert_same(got[0], theirs(*theirs_inputs)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("lib", ["torch", "pyaten"])
def test_symbolic_trace_refuses_control_flow_on_proxies(lib) -> None:
    P = pyaten if lib == "pyaten" else torch
    fx = P.fx

    def branchy(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(fx.proxy.TraceError, match="control flow"):
        fx.symbolic_trace(branchy)


# -- pictures --------------------------------------------------------------------------------

def test_to_dot_names_each_node_its_operator_and_shape() -> None:
    f, inputs = _mlp(pyaten)
    dot = make_fx(f)(*inputs).to_dot()
    assert dot.startswith('digraph "f" {') and dot.rstrip().endswith("}")
    assert '"mm" [label="mm\\naten.mm.default\\nfloat32[2, 4]"];' in dot
    assert '"x_1" -> "mm";' in dot and '"w1_1" -> "mm";' in dot


def test_graph_command_writes_dot_and_code(tmp_path, capsys) -> None:
    from pyaten.cli import main

    script = tmp_path / "model.py"
    script.write_text(
        "import pyaten\n\n"
        "def step(x, w):\n    return (x @ w).relu().sum()\n\n"
        "class Net(pyaten.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.lin = pyaten.nn.Linear(3, 2)\n\n"
        "    def forward(self, x):\n        return self.lin(x).tanh()\n"
    )
    out = tmp_path / "step.dot"
    assert main(["graph", f"{script}:step", "--input", "2x3", "--input", "3x4", "-o",
                 str(out)]) == 0
    assert '"relu" [label="relu\\naten.relu.default\\nfloat32[2, 4]"];' in out.read_text()
    assert main(["graph", f"{script}:Net", "--code"]) == 0
    assert "lin = self.lin(x);  x = None" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="defines no 'nope'"):
        main(["graph", f"{script}:nope"])
