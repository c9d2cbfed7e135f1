"""nn.Module, containers, Parameter, layers, losses, nn.init and nn.utils against torch.

Scenarios are functions of the library (`m` is pyaten or torch) returning what a user looks
at (keys, names, reprs, values); `same_scenario` runs both and compares, errors included.
Weights are copied from torch's modules into ours, so values compare directly.
"""

from __future__ import annotations

import copy
import math
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch
from _helpers import assert_same, from_torch, run_both, same_error
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import pyaten


def same_scenario(fn, **tolerance) -> None:
    pair = run_both(lambda: fn(pyaten), lambda: fn(torch))
    if pair is not None:
        ours, theirs = pair
        _compare(ours, theirs, **tolerance)


def _compare(ours, theirs, **tolerance) -> None:
    """assert_same that also walks dicts and compares strings (reprs, keys)."""
    if isinstance(theirs, dict):
        assert list(ours) == list(theirs)
        for key in theirs:
            _compare(ours[key], theirs[key], **tolerance)
    elif isinstance(theirs, (list, tuple)) and not isinstance(theirs, torch.Size):
        assert type(ours).__name__ == type(theirs).__name__ or isinstance(ours, (list, tuple))
        assert len(ours) == len(theirs), (ours, theirs)
        for a, b in zip(ours, theirs):
            _compare(a, b, **tolerance)
    elif isinstance(theirs, str):
        # Legacy type strings read 'torch.FloatTensor' in pyaten too (Tensor.type()).
        ours_text = ours.replace("torch.", "pyaten.")
        assert ours_text == theirs.replace("torch.", "pyaten."), (ours, theirs)
    else:
        assert_same(ours, theirs, **tolerance)


def copy_into(ours, theirs) -> None:
    """Give our module torch's parameter and buffer values."""
    ours.load_state_dict({k: from_torch(v) for k, v in theirs.state_dict().items()})


def mlp(m):
    """A small model with a nested container, a buffer of each kind and a None parameter."""

    class Block(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = m.nn.Linear(3, 4)
            self.register_buffer("running", m.zeros(4))
            self.register_buffer("scratch", m.ones(2), persistent=False)
            self.register_parameter("unused", None)

        def forward(self, x):
            return m.tanh(self.fc(x)) + self.running

    class Net(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.layers = m.nn.Sequential(m.nn.Linear(4, 5), m.nn.Flatten(), m.nn.Linear(5, 2))
            self.scale = m.nn.Parameter(m.ones(1))

        def forward(self, x):
            return self.layers(self.block(x)) * self.scale

    return Net()


# --- Parameter and Buffer --------------------------------------------------------------------

def test_parameter_basics():
    def scenario(m):
        p = m.nn.Parameter(m.tensor([1.0, 2.0]))
        frozen = m.nn.Parameter(m.tensor([1, 2]), requires_grad=False)
        doubled = p * 2
        clone = copy.deepcopy(p)
        return (
            repr(p), repr(frozen), isinstance(p, m.Tensor), isinstance(p, m.nn.Parameter),
            p.requires_grad, frozen.requires_grad, type(doubled).__name__,
            isinstance(doubled, m.nn.Parameter), type(clone).__name__, clone.requires_grad,
            clone is p, repr(m.nn.Parameter()),
        )

    same_scenario(scenario)


def test_parameter_shares_storage_and_pickles():
    data = pyaten.zeros(3)
    p = pyaten.nn.Parameter(data)
    with pyaten.no_grad():
        p.add_(1)
    assert data.tolist() == [1.0, 1.0, 1.0]
    back = pickle.loads(pickle.dumps(p))
    assert type(back) is pyaten.nn.Parameter and back.requires_grad and back.tolist() == p.tolist()


def test_buffer_marks_and_persistence():
    def scenario(m):
        module = m.nn.Module()
        module.kept = m.nn.Buffer(m.ones(2))
        module.dropped = m.nn.Buffer(m.zeros(1), persistent=False)
        module.plain = m.ones(1)  # a plain tensor attribute is not registered
        return (
            isinstance(module.kept, m.nn.Buffer), isinstance(m.ones(1), m.nn.Buffer),
            list(module.state_dict()), [n for n, _ in module.named_buffers()],
            "plain" in module._buffers,
        )

    same_scenario(scenario)


# --- registration, iteration, state_dict --------------------------------------------------

def test_named_members_and_state_dict_order():
    def scenario(m):
        net = mlp(m)
        shared = m.nn.Linear(2, 2)
        holder = m.nn.Sequential(shared, shared)
        return (
            list(net.state_dict()),
            [n for n, _ in net.named_parameters()],
            [n for n, _ in net.named_parameters(prefix="model", recurse=True)],
            [n for n, _ in net.named_parameters(recurse=False)],
            [n for n, _ in net.named_buffers()],
            [n for n, _ in net.named_modules()],
            [n for n, _ in net.named_modules(prefix="root")],
            [n for n, _ in net.named_children()],
            len(list(net.parameters())), len(list(net.buffers())), len(list(net.modules())),
            [n for n, _ in holder.named_parameters()],
            [n for n, _ in holder.named_parameters(remove_duplicate=False)],
            [n for n, _ in holder.named_modules(remove_duplicate=False)],
            list(holder.state_dict()),
            sorted(net.state_dict()._metadata),
            net.state_dict()._metadata["block"],
            list(net.state_dict(prefix="p.")),
        )

    same_scenario(scenario)


def test_state_dict_detaches_unless_keep_vars():
    def scenario(m):
        net = m.nn.Linear(2, 2)
        plain, kept = net.state_dict(), net.state_dict(keep_vars=True)
        return (
            plain["weight"].requires_grad, type(plain["weight"]).__name__,
            kept["weight"] is net.weight, plain["weight"].data_ptr() == net.weight.data_ptr(),
        )

    same_scenario(scenario)


def test_attribute_assignment_moves_between_registries():
    def scenario(m):
        net = m.nn.Module()
        net.x = m.nn.Parameter(m.ones(1))
        net.register_buffer("b", m.ones(1))
        net.child = m.nn.Linear(1, 1)
        net.child = None
        net.x = None
        net.y = m.nn.Parameter(m.ones(1))
        del net.b
        net.b = m.nn.Linear(1, 1)  # a module under an old buffer name
        return (
            list(net._parameters), list(net._buffers), list(net._modules),
            "y" in dir(net), "b" in dir(net),
        )

    same_scenario(scenario)


@pytest.mark.parametrize("case", range(17))
def test_registration_errors(case):
    class Early(pyaten.nn.Module):
        def __init__(self, m):
            self.early = m.nn.Linear(1, 1)

    class EarlyTorch(torch.nn.Module):
        def __init__(self, m):
            self.early = m.nn.Linear(1, 1)

    def scenario(m):
        net = m.nn.Linear(2, 2)
        actions = [
            lambda: setattr(net, "weight", m.ones(2, 2)),
            lambda: (Early if m is pyaten else EarlyTorch)(m),
            lambda: net.register_buffer("a.b", m.ones(1)),
            lambda: net.register_buffer("", m.ones(1)),
            lambda: net.register_buffer("weight", m.ones(1)),
            lambda: net.register_buffer("x", [1.0]),
            lambda: net.register_parameter("p", m.ones(1)),
            lambda: net.register_parameter("q", m.nn.Parameter(m.ones(1)) * 2),
            lambda: net.add_module("sub", 3),
            lambda: net.add_module("a.b", m.nn.Linear(1, 1)),
            lambda: net.nothing,
            lambda: m.nn.Module()(1),
            lambda: net.train("yes"),
            lambda: net.register_buffer(1, m.ones(1)),
            lambda: m.nn.Module(foo=1),
            lambda: m.nn.Module.__new__(m.nn.Module).register_buffer("b", None),
            lambda: setattr(m.nn.Module.__new__(m.nn.Module), "p", m.nn.Parameter(m.ones(1))),
        ]
        return actions[case]()

    if case == 5:  # PyTorch's text says "torch Tensor"; ours names pyaten's
        same_error(lambda: scenario(pyaten), lambda: scenario(torch), message=False)
        with pytest.raises(TypeError, match=r"to buffer 'x' \(pyaten Tensor or None required"):
            scenario(pyaten)
        return
    same_error(lambda: scenario(pyaten), lambda: scenario(torch))


def test_get_submodule_parameter_buffer():
    def scenario(m):
        net = mlp(m)
        found = [
            net.get_submodule("layers.2") is net.layers[2],
            net.get_parameter("block.fc.bias") is net.block.fc.bias,
            net.get_buffer("block.running") is net.block.running,
            net.get_submodule("") is net,
        ]
        errors = []
        for call in (
            lambda: net.get_submodule("block.nope"),
            lambda: net.get_submodule("scale"),
            lambda: net.get_parameter("block.running"),
            lambda: net.get_buffer("block.fc"),
            lambda: net.get_parameter("layers.9.weight"),
        ):
            try:
                call()
            except AttributeError as error:
                errors.append(str(error))
        return found, errors

    same_scenario(scenario)


# --- load_state_dict -------------------------------------------------------------------------

def test_load_state_dict_round_trip():
    theirs = mlp(torch)
    ours = mlp(pyaten)
    with torch.no_grad():
        theirs.block.running.uniform_()
    result = ours.load_state_dict({k: from_torch(v) for k, v in theirs.state_dict().items()})
    assert repr(result) == "<All keys matched successfully>"
    for a, b in zip(ours.state_dict().values(), theirs.state_dict().values()):
        assert_same(a, b)
    x = torch.randn(6, 3)
    assert_same(ours(from_torch(x)).detach(), theirs(x).detach(), 1e-5)


@pytest.mark.parametrize(
    "case", ["missing", "unexpected", "both", "size", "child", "scalar", "not_tensor"]
)
def test_load_state_dict_errors_and_non_strict(case):
    def entries(m):
        net = mlp(m)
        state = dict(net.state_dict())
        if case in ("missing", "both"):
            del state["layers.0.bias"], state["scale"]
        if case in ("unexpected", "both"):
            state["extra"] = m.ones(1)
            state["layers.0.extra"] = m.ones(1)
        if case == "size":
            state["layers.0.weight"] = m.ones(3, 3)
        if case == "child":
            state["nochild.weight"] = m.ones(1)
        if case == "scalar":
            state["scale"] = m.ones(2, 1)
        if case == "not_tensor":
            state["block.running"] = 3
        return net, state

    def strict(m):
        net, state = entries(m)
        return repr(net.load_state_dict(state))

    def loose(m):
        net, state = entries(m)
        result = net.load_state_dict(state, strict=False)
        return repr(result), result.missing_keys, result.unexpected_keys

    same_scenario(strict)
    same_scenario(loose)


def test_load_state_dict_assign_and_type_error():
    def scenario(m):
        net = m.nn.Linear(2, 2)
        new_weight = m.full((2, 2), 3.0)
        old = net.weight
        net.load_state_dict({"weight": new_weight, "bias": m.zeros(2)}, assign=True)
        frozen = m.nn.Linear(2, 2).requires_grad_(False)
        frozen.load_state_dict({"weight": m.ones(2, 2), "bias": m.ones(2)}, assign=True)
        return (
            net.weight is old, type(net.weight).__name__, net.weight.requires_grad,
            net.weight.detach(), frozen.weight.requires_grad,
            net.weight.data_ptr() == new_weight.data_ptr(),
        )

    same_scenario(scenario)
    same_error(
        lambda: pyaten.nn.Linear(1, 1).load_state_dict([1]),
        lambda: torch.nn.Linear(1, 1).load_state_dict([1]),
    )


def test_extra_state_and_load_hooks():
    def scenario(m):
        class Counter(m.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = m.nn.Linear(1, 1)
                self.count = 0

            def get_extra_state(self):
                return {"count": self.count}

            def set_extra_state(self, state):
                self.count = state["count"]

        source, target = Counter(), Counter()
        source.count = 5
        seen = []
        target.register_load_state_dict_pre_hook(
            lambda module, state, prefix, *rest: seen.append(("pre", prefix, sorted(state)))
        )
        target.register_load_state_dict_post_hook(
            lambda module, keys: seen.append(("post", list(keys.missing_keys)))
        )
        state = source.state_dict()
        target.load_state_dict(state)
        del state["_extra_state"]
        loose = target.load_state_dict(state, strict=False)
        return list(source.state_dict()), target.count, seen, repr(loose)

    same_scenario(scenario)


def test_deepcopy_and_pickle_modules():
    net = mlp(pyaten)
    twin = copy.deepcopy(net)
    assert type(twin.block.fc.weight) is pyaten.nn.Parameter
    assert twin.block.fc.weight is not net.block.fc.weight
    assert twin.block.fc.weight.tolist() == net.block.fc.weight.tolist()
    with pyaten.no_grad():
        twin.block.fc.weight.zero_()
    assert net.block.fc.weight.abs().sum().item() > 0
    back = pickle.loads(pickle.dumps(pyaten.nn.Sequential(pyaten.nn.Linear(2, 3))))
    assert repr(back) == repr(torch.nn.Sequential(torch.nn.Linear(2, 3)))
    assert type(back[0].bias) is pyaten.nn.Parameter and back[0].bias.requires_grad


# --- modes, conversions, apply, zero_grad ----------------------------------------------------

def test_train_eval_requires_grad():
    def scenario(m):
        net = mlp(m)
        flags = [net.training]
        net.eval()
        flags += [mod.training for mod in net.modules()]
        net.layers.train()
        flags += [mod.training for mod in net.modules()]
        net.requires_grad_(False)
        flags += [p.requires_grad for p in net.parameters()]
        return flags, net.train() is net

    same_scenario(scenario)


def test_to_dtype_keeps_parameter_objects():
    def scenario(m):
        net = mlp(m)
        net.block.register_buffer("count", m.tensor([3]))
        weight = net.block.fc.weight
        net(m.ones(1, 3)).sum().backward()
        net.to(m.float64)
        same_object = net.block.fc.weight is weight
        dtypes = [str(t.dtype) for t in net.state_dict().values()]
        grad_dtype = str(weight.grad.dtype)
        net.float()
        after_float = [str(p.dtype) for p in net.parameters()]
        net.to(dtype=m.float64).to("cpu").half().double()
        last = [str(t.dtype) for t in net.state_dict().values()]
        net.type(m.float32)
        return same_object, dtypes, grad_dtype, after_float, last, str(net.block.count.dtype)

    same_scenario(scenario)
    same_error(lambda: pyaten.nn.Linear(1, 1).to(pyaten.int64),
               lambda: torch.nn.Linear(1, 1).to(torch.int64))


def test_apply_and_zero_grad():
    def scenario(m):
        net = mlp(m)
        visited = []

        def init(module):
            visited.append(type(module).__name__)
            if isinstance(module, m.nn.Linear):
                m.nn.init.constant_(module.weight, 0.5)
                m.nn.init.zeros_(module.bias)

        net.apply(init)
        out = net(m.ones(2, 3)).sum()
        out.backward()
        grads = [p.grad.clone() for p in net.parameters()]
        net.zero_grad(set_to_none=False)
        zeroed = [p.grad for p in net.parameters()]
        net.zero_grad()
        return visited, out.detach(), grads, zeroed, [p.grad is None for p in net.parameters()]

    same_scenario(scenario)


# --- reprs -----------------------------------------------------------------------------------

def test_reprs():
    def scenario(m):
        nn = m.nn
        models = [
            mlp(m),
            nn.Sequential(OrderedDict(first=nn.Linear(1, 2, bias=False), act=nn.Identity())),
            nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.Identity(), nn.Identity()]),
            nn.ModuleList(),
            nn.ModuleDict({"b": nn.Linear(1, 1), "a": nn.Flatten(0, 2)}),
            nn.ParameterList([nn.Parameter(m.ones(2, 3)), m.zeros(1, dtype=m.float64), 5]),
            nn.ParameterDict({"w": m.ones(2), "z": nn.Parameter(m.zeros(3, 1))}),
            nn.Bilinear(2, 3, 4), nn.Unflatten(1, (2, 3)), nn.Unflatten(0, [4]),
            nn.CrossEntropyLoss(), nn.TripletMarginWithDistanceLoss(), nn.PairwiseDistance(),
            nn.Sequential(nn.Sequential(nn.Linear(1, 1)), nn.ModuleList([nn.Identity()])),
        ]
        return [repr(model) for model in models] + [str(mlp(m))]

    same_scenario(scenario)


# --- hooks -----------------------------------------------------------------------------------

def test_forward_hooks_order_and_results():
    def scenario(m):
        net = m.nn.Linear(2, 2)
        m.nn.init.ones_(net.weight)
        m.nn.init.zeros_(net.bias)
        log = []

        def pre(module, args):
            log.append("pre")
            return (args[0] * 2,)

        def pre_kw(module, args, kwargs):
            log.append("pre_kw")
            return args, kwargs

        def post(module, args, output):
            log.append("post")
            return output + 1

        def first(module, args, output):
            log.append("first")

        handles = [
            net.register_forward_pre_hook(pre),
            net.register_forward_pre_hook(pre_kw, with_kwargs=True),
            net.register_forward_hook(post),
            net.register_forward_hook(first, prepend=True),
        ]
        out1 = net(m.ones(1, 2))
        handles[0].remove()
        out2 = net(m.ones(1, 2))
        for handle in handles:
            handle.remove()
        out3 = net(m.ones(1, 2))
        return log, out1.detach(), out2.detach(), out3.detach()

    same_scenario(scenario)


def test_forward_hooks_with_kwargs():
    def scenario(m):
        class Scale(m.nn.Module):
            def forward(self, x, factor=1.0):
                return x * factor

        net = Scale()
        net.register_forward_pre_hook(
            lambda mod, args, kwargs: (args, {**kwargs, "factor": kwargs.get("factor", 1) * 3}),
            with_kwargs=True,
        )
        net.register_forward_hook(
            lambda mod, args, kwargs, out: out + kwargs["factor"], with_kwargs=True
        )
        bad = Scale()
        bad.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
        try:
            bad(m.ones(1))
        except RuntimeError as error:
            message = str(error)
        return net(m.ones(2), factor=2.0), net(m.ones(1)), message

    same_scenario(scenario)


def test_always_call_hook_runs_when_forward_raises():
    def scenario(m):
        class Boom(m.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        seen = []
        net = Boom()
        net.register_forward_hook(lambda mod, args, out: seen.append("always"), always_call=True)
        net.register_forward_hook(lambda mod, args, out: seen.append("normal"))
        try:
            net(1)
        except ValueError as error:
            seen.append(str(error))
        return seen

    same_scenario(scenario)


@pytest.mark.parametrize("input_requires_grad", [True, False])
def test_full_backward_hooks(input_requires_grad):
    def scenario(m):
        net = m.nn.Linear(3, 2)
        with m.no_grad():
            net.weight.copy_(m.arange(6.0).reshape(2, 3) / 6)
            net.bias.fill_(0.1)
        seen = []

        def pre_hook(module, grad_output):
            seen.append(("pre", [g.clone() if g is not None else None for g in grad_output]))
            return (grad_output[0] * 2,)

        def hook(module, grad_input, grad_output):
            seen.append(("hook", list(grad_input), list(grad_output)))
            if grad_input[0] is not None:
                return (grad_input[0] * 10,)

        net.register_full_backward_pre_hook(pre_hook)
        net.register_full_backward_hook(hook)
        x = (m.arange(6.0).reshape(2, 3) - 2).requires_grad_(input_requires_grad)
        (net(x) ** 2).sum().backward()
        return seen, net.weight.grad, (x.grad if input_requires_grad else None)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_scenario(scenario)


# --- containers ------------------------------------------------------------------------------

def test_sequential_operations():
    def scenario(m):
        nn = m.nn
        layers = [nn.Linear(i + 1, i + 2) for i in range(5)]
        seq = nn.Sequential(*layers[:3])
        names = [type(seq[-1]).__name__, seq[1] is layers[1], len(seq), len(seq[1:]),
                 type(seq[::2]).__name__]
        seq.append(layers[3])
        seq.insert(0, nn.Identity())
        seq.extend([layers[4]])
        del seq[1]
        popped = seq.pop(0)
        seq[0] = nn.Flatten()
        combined = seq + nn.Sequential(nn.Identity())
        tripled = nn.Sequential(nn.Identity()) * 3
        del seq[1:3]
        errors = []
        for call in (lambda: seq[10], lambda: seq + [1], lambda: seq.insert(9, nn.Identity())):
            try:
                call()
            except (IndexError, ValueError) as error:
                errors.append(str(error).replace("torch.", "pyaten."))
        return (names, list(seq._modules), type(popped).__name__, len(combined),
                list(tripled._modules), repr(seq), errors)

    same_scenario(scenario)


def test_sequential_forward_matches():
    def build(m):
        return m.nn.Sequential(m.nn.Linear(4, 3), m.nn.Flatten(0), m.nn.Unflatten(0, (2, 3)))

    theirs, ours = build(torch), build(pyaten)
    copy_into(ours, theirs)
    x = torch.randn(2, 4)
    assert_same(ours(from_torch(x)).detach(), theirs(x).detach())


def test_module_list_dict_and_parameter_containers():
    def scenario(m):
        nn = m.nn
        mods = nn.ModuleList([nn.Identity(), nn.Linear(1, 1)])
        mods += [nn.Flatten()]
        mods.insert(1, nn.Linear(2, 2))
        mods.append(nn.Identity())
        del mods[0]
        mods[-1] = nn.Linear(3, 3)
        listed = [type(x).__name__ for x in mods] + [len(mods[1:]), type(mods.pop(0)).__name__]
        d = nn.ModuleDict([("x", nn.Identity()), ("a", nn.Linear(1, 1))])
        d["b"] = nn.Flatten()
        d.update({"c": nn.Identity()})
        dict_view = (list(d.keys()), "a" in d, len(d), type(d.pop("x")).__name__, list(d))
        plist = nn.ParameterList([m.ones(1), m.zeros(2)])
        plist.append(m.ones(3))
        plist.extend([nn.Parameter(m.ones(4))])
        pdict = nn.ParameterDict({"b": m.ones(1), "a": m.ones(2)})
        pdict["c"] = m.zeros(1)
        pdict.update([("d", m.ones(1))])
        return (
            listed, dict_view, [n for n, _ in mods.named_parameters()],
            [n for n, _ in plist.named_parameters()], len(plist), len(plist[1:]),
            [type(p).__name__ for p in plist], list(pdict.keys()),
            [n for n, _ in pdict.named_parameters()], pdict.popitem()[0],
            list((pdict | nn.ParameterDict({"z": m.ones(1)})).keys()),
            list(pdict.state_dict()), pdict.get("zz", 7), "a" in pdict,
        )

    same_scenario(scenario)
    same_error(lambda: pyaten.nn.ParameterList()(1), lambda: torch.nn.ParameterList()(1))
    same_error(lambda: pyaten.nn.ModuleList().extend(3), lambda: torch.nn.ModuleList().extend(3))
    same_error(lambda: pyaten.nn.ParameterDict()[1], lambda: torch.nn.ParameterDict()[1])


# --- a training parity check -----------------------------------------------------------------

def test_mlp_manual_sgd_matches_torch_for_20_steps():
    def build(m):
        return m.nn.Sequential(
            m.nn.Linear(8, 16), m.nn.Flatten(), m.nn.Linear(16, 16), m.nn.Identity(),
            m.nn.Linear(16, 3),
        )

    torch.manual_seed(0)
    theirs, ours = build(torch), build(pyaten)
    copy_into(ours, theirs)
    loss_t, loss_o = torch.nn.CrossEntropyLoss(), pyaten.nn.CrossEntropyLoss()
    for _ in range(20):
        x = torch.randn(12, 8)
        y = torch.randint(0, 3, (12,))
        xo, yo = from_torch(x), from_torch(y)
        hidden_t = torch.tanh(theirs[0](x))
        hidden_o = pyaten.tanh(ours[0](xo))
        out_t = theirs[4](torch.tanh(theirs[2](theirs[1](hidden_t))))
        out_o = ours[4](pyaten.tanh(ours[2](ours[1](hidden_o))))
        lt, lo = loss_t(out_t, y), loss_o(out_o, yo)
        assert_same(lo.detach(), lt.detach(), 1e-5, 1e-5)
        theirs.zero_grad()
        ours.zero_grad()
        lt.backward()
        lo.backward()
        with torch.no_grad(), pyaten.no_grad():
            for p in theirs.parameters():
                p -= 0.1 * p.grad
            for p in ours.parameters():
                p -= 0.1 * p.grad
    for a, b in zip(ours.parameters(), theirs.parameters()):
        assert_same(a.detach(), b.detach(), 1e-4, 1e-5)


# --- layers and losses -----------------------------------------------------------------------

def test_linear_bilinear_forward_backward_and_default_init():
    for make in (lambda m: m.nn.Linear(5, 3), lambda m: m.nn.Linear(5, 3, bias=False)):
        theirs, ours = make(torch), make(pyaten)
        bound = 1 / math.sqrt(5)
        assert float(ours.weight.abs().max()) <= bound
        copy_into(ours, theirs)
        x = torch.randn(4, 5)
        assert_same(ours(from_torch(x)).detach(), theirs(x).detach())
    theirs, ours = torch.nn.Bilinear(2, 3, 4), pyaten.nn.Bilinear(2, 3, 4)
    copy_into(ours, theirs)
    a, b = torch.randn(5, 2), torch.randn(5, 3)
    ot, oo = theirs(a, b), ours(from_torch(a), from_torch(b))
    assert_same(oo.detach(), ot.detach(), 1e-5)
    ot.sum().backward()
    oo.sum().backward()
    assert_same(ours.weight.grad, theirs.weight.grad, 1e-5)
    same_scenario(lambda m: [str(p.dtype) for p in m.nn.Linear(2, 2, dtype=m.float64).parameters()])


def _loss_cases():
    g = torch.Generator().manual_seed(0)

    def rand(*shape):
        return torch.randn(*shape, generator=g)

    probs = torch.rand(4, 3, generator=g) * 0.9 + 0.05
    labels = torch.randint(0, 3, (4,), generator=g)
    signs = torch.tensor([1.0, -1.0, 1.0, -1.0])
    ml_target = torch.tensor([[0, 2, -1], [1, -1, 0], [2, 1, 0], [-1, 0, 0]])
    return [
        ("L1Loss", {}, (rand(4, 3), rand(4, 3))),
        ("MSELoss", {"reduction": "sum"}, (rand(4, 3), rand(4, 3))),
        ("CrossEntropyLoss", {"label_smoothing": 0.1, "weight": torch.tensor([1.0, 2.0, 0.5])},
         (rand(4, 3), labels)),
        ("NLLLoss", {"ignore_index": 1}, (torch.log_softmax(rand(4, 3), 1), labels)),
        ("BCELoss", {}, (probs, (rand(4, 3) > 0).float())),
        ("BCEWithLogitsLoss", {"pos_weight": torch.tensor([1.0, 2.0, 3.0])},
         (rand(4, 3), (rand(4, 3) > 0).float())),
        ("KLDivLoss", {"reduction": "batchmean"}, (torch.log_softmax(rand(4, 3), 1),
                                                    torch.softmax(rand(4, 3), 1))),
        ("HuberLoss", {"delta": 0.5}, (rand(4, 3), rand(4, 3))),
        ("SmoothL1Loss", {"beta": 0.5, "reduction": "none"}, (rand(4, 3), rand(4, 3))),
        ("SoftMarginLoss", {}, (rand(4), signs)),
        ("MultiLabelSoftMarginLoss", {}, (rand(4, 3), (rand(4, 3) > 0).float())),
        ("MultiLabelMarginLoss", {}, (rand(4, 3), ml_target)),
        ("MultiMarginLoss", {"p": 2, "margin": 0.5}, (rand(4, 3), labels)),
        ("CosineEmbeddingLoss", {"margin": 0.2}, (rand(4, 3), rand(4, 3), signs)),
        ("MarginRankingLoss", {"margin": 0.1}, (rand(4), rand(4), signs)),
        ("HingeEmbeddingLoss", {}, (rand(4, 3), torch.ones(4, 3))),
        ("TripletMarginLoss", {"swap": True}, (rand(4, 3), rand(4, 3), rand(4, 3))),
        ("TripletMarginWithDistanceLoss", {}, (rand(4, 3), rand(4, 3), rand(4, 3))),
        ("PoissonNLLLoss", {}, (rand(4, 3), torch.rand(4, 3, generator=g) * 3)),
        ("GaussianNLLLoss", {}, (rand(4, 3), rand(4, 3), torch.rand(4, 3, generator=g) + 0.1)),
        ("CTCLoss", {}, (torch.log_softmax(rand(6, 2, 4), 2), torch.tensor([[1, 2], [3, 1]]),
                         torch.tensor([6, 5]), torch.tensor([2, 2]))),
    ]


@pytest.mark.parametrize("name, kwargs, inputs", _loss_cases(), ids=lambda c: str(c)[:30])
def test_loss_modules_match_torch(name, kwargs, inputs):
    theirs_module = getattr(torch.nn, name)(**kwargs)
    ours_module = getattr(pyaten.nn, name)(**{
        k: from_torch(v) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()
    })
    assert repr(ours_module) == repr(theirs_module)
    assert list(ours_module.state_dict()) == list(theirs_module.state_dict())
    theirs_in = [t.clone() for t in inputs]
    ours_in = [from_torch(t) for t in inputs]
    theirs_in[0].requires_grad_()
    ours_in[0].requires_grad_()
    theirs_out, ours_out = theirs_module(*theirs_in), ours_module(*ours_in)
    assert_same(ours_out.detach(), theirs_out.detach(), 1e-5)
    theirs_out.sum().backward()
    ours_out.sum().backward()
    assert_same(ours_in[0].grad, theirs_in[0].grad, 1e-4, 1e-5)


def test_legacy_loss_arguments():
    def scenario(m):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loss = m.nn.MSELoss(size_average=False)
        return loss.reduction, [str(w.message) for w in caught]

    same_scenario(scenario)
    same_error(lambda: pyaten.nn.MultiMarginLoss(p=3), lambda: torch.nn.MultiMarginLoss(p=3))
    same_error(lambda: pyaten.nn.HuberLoss(delta="x"), lambda: torch.nn.HuberLoss(delta="x"))
    same_error(lambda: pyaten.nn.Unflatten(1, (2.0,)), lambda: torch.nn.Unflatten(1, (2.0,)))


# --- nn.init ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(3, 4), (6, 2, 3), (2, 5, 3, 3), (4, 1, 2, 2, 2)])
def test_fans_and_gains(shape):
    ours = pyaten.nn.init._calculate_fan_in_and_fan_out(pyaten.empty(shape))
    assert ours == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    for name, param in [("linear", None), ("relu", None), ("tanh", None), ("selu", None),
                        ("leaky_relu", None), ("leaky_relu", 0.2), ("conv2d", None),
                        ("sigmoid", None), ("leaky_relu", 3)]:
        assert_same(pyaten.nn.init.calculate_gain(name, param),
                    torch.nn.init.calculate_gain(name, param))
    for call in (
        lambda m: m.nn.init.calculate_gain("swish"),
        lambda m: m.nn.init.calculate_gain("leaky_relu", True),
        lambda m: m.nn.init.xavier_uniform_(m.empty(3)),
        lambda m: m.nn.init.kaiming_normal_(m.empty(2, 2), mode="fan_avg"),
        lambda m: m.nn.init.eye_(m.empty(2, 2, 2)),
        lambda m: m.nn.init.dirac_(m.empty(3, 2, 2), groups=2),
        lambda m: m.nn.init.orthogonal_(m.empty(3)),
    ):
        same_error(lambda call=call: call(pyaten), lambda call=call: call(torch))


def test_deterministic_inits_equal_torch():
    def scenario(m):
        init = m.nn.init
        return (
            init.eye_(m.empty(3, 5)), init.dirac_(m.empty(4, 2, 3, 3), groups=2),
            init.dirac_(m.empty(2, 2, 3)), init.constant_(m.empty(2, 2), 0.25),
            init.ones_(m.empty(3)), init.zeros_(m.empty(1, 2)),
        )

    same_scenario(scenario)


def _ks(values, cdf) -> float:
    return stats.kstest(np.asarray(values.tolist()).ravel(), cdf).pvalue


def test_random_inits_follow_their_distributions():
    init = pyaten.nn.init
    g = pyaten.Generator().manual_seed(1234)
    w = pyaten.empty(400, 250)  # fan_in 250, fan_out 400
    checks = []
    init.uniform_(w, -0.5, 1.5, generator=g)
    checks.append(_ks(w, stats.uniform(-0.5, 2.0).cdf))
    init.normal_(w, 1.0, 2.0, generator=g)
    checks.append(_ks(w, stats.norm(1.0, 2.0).cdf))
    init.xavier_uniform_(w, gain=2.0, generator=g)
    bound = 2.0 * math.sqrt(6.0 / 650)
    checks.append(_ks(w, stats.uniform(-bound, 2 * bound).cdf))
    init.xavier_normal_(w, generator=g)
    checks.append(_ks(w, stats.norm(0, math.sqrt(2.0 / 650)).cdf))
    init.kaiming_uniform_(w, a=math.sqrt(5), generator=g)
    bound = 1 / math.sqrt(250)
    checks.append(_ks(w, stats.uniform(-bound, 2 * bound).cdf))
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu", generator=g)
    checks.append(_ks(w, stats.norm(0, math.sqrt(2.0 / 400)).cdf))
    init.trunc_normal_(w, mean=0.5, std=1.0, a=0.0, b=1.5, generator=g)
    checks.append(_ks(w, stats.truncnorm(-0.5, 1.0, loc=0.5, scale=1.0).cdf))
    assert min(checks) > 1e-3, checks
    assert 0.0 <= float(w.min()) and float(w.max()) <= 1.5


def test_generator_makes_inits_reproducible_and_orthogonal_is_orthogonal():
    init = pyaten.nn.init
    a = init.kaiming_normal_(pyaten.empty(5, 4), generator=pyaten.Generator().manual_seed(7))
    b = init.kaiming_normal_(pyaten.empty(5, 4), generator=pyaten.Generator().manual_seed(7))
    assert a.tolist() == b.tolist()
    for shape in [(3, 5), (6, 2), (4, 2, 3)]:
        q = init.orthogonal_(pyaten.empty(shape), gain=2.0).reshape(shape[0], -1)
        small = min(q.shape)
        gram = q @ q.t() if q.shape[0] == small else q.t() @ q
        np.testing.assert_allclose(gram.numpy(), 4.0 * np.eye(small), atol=1e-5)
    sparse = init.sparse_(pyaten.empty(10, 4), sparsity=0.3)
    assert [int((sparse[:, c] == 0).sum()) for c in range(4)] == [3] * 4
    param = pyaten.nn.Parameter(pyaten.empty(3, 3))
    init.xavier_uniform_(param)
    assert param.grad_fn is None and param.requires_grad


# --- nn.utils --------------------------------------------------------------------------------

@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 0.5])
def test_clip_grad_norm_matches_torch(norm_type):
    torch.manual_seed(1)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    ours = pyaten.nn.Sequential(pyaten.nn.Linear(4, 3), pyaten.nn.Linear(3, 2))
    copy_into(ours, theirs)
    x = torch.randn(5, 4)
    (theirs(x) ** 2).sum().backward()
    (ours(from_torch(x)) ** 2).sum().backward()
    total_t = torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.5, norm_type)
    total_o = pyaten.nn.utils.clip_grad_norm_(ours.parameters(), 0.5, norm_type)
    assert_same(total_o, total_t, 1e-5)
    for a, b in zip(ours.parameters(), theirs.parameters()):
        assert_same(a.grad, b.grad, 1e-5)


def test_clip_grad_value_vectors_and_nonfinite():
    def scenario(m):
        p = m.nn.Parameter(m.tensor([1.0, -2.0, 3.0]))
        q = m.nn.Parameter(m.ones(2, 2))
        (p * m.tensor([1.0, -5.0, 0.1])).sum().backward()
        m.nn.utils.clip_grad_value_([p, q], 0.5)
        vec = m.nn.utils.parameters_to_vector([p, q])
        m.nn.utils.vector_to_parameters(m.arange(7.0), [p, q])
        empty_norm = m.nn.utils.clip_grad_norm_([q], 1.0)
        return p.grad, q.grad, vec.detach(), p.detach(), q.detach(), empty_norm

    same_scenario(scenario)

    def nonfinite(m):
        p = m.nn.Parameter(m.ones(2))
        p.grad = m.tensor([math.inf, 1.0])
        return m.nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)

    same_error(lambda: nonfinite(pyaten), lambda: nonfinite(torch))
    same_error(lambda: pyaten.nn.utils.vector_to_parameters([1.0], []),
               lambda: torch.nn.utils.vector_to_parameters([1.0], []))


@given(
    lengths=st.lists(st.integers(0, 5), min_size=1, max_size=4),
    trailing=st.sampled_from([(), (2,), (1, 3)]),
    batch_first=st.booleans(),
    side=st.sampled_from(["left", "right"]),
    value=st.sampled_from([0.0, -1.5]),
)
def test_pad_sequence_matches_torch(lengths, trailing, batch_first, side, value):
    seqs = [torch.randn(n, *trailing) for n in lengths]
    theirs = torch.nn.utils.rnn.pad_sequence(seqs, batch_first, value, side)
    ours = pyaten.nn.utils.rnn.pad_sequence([from_torch(s) for s in seqs], batch_first, value, side)
    assert_same(ours, theirs, strides=True)


def test_pad_sequence_errors_and_gradient():
    def scenario(m):
        a = m.ones(2, 3, requires_grad=True)
        b = m.ones(4, 3, dtype=m.float32)
        out = m.nn.utils.rnn.pad_sequence([a, b], batch_first=True, padding_side="left")
        (out * m.arange(24.0).reshape(2, 4, 3)).sum().backward()
        ints = m.nn.utils.rnn.pad_sequence([m.tensor([1, 2]), m.tensor([3])], padding_value=-1)
        return out.detach(), a.grad, ints

    same_scenario(scenario)
    for count, side in ((0, "right"), (1, "up"), (None, "right")):
        def call(m, count=count, side=side):
            sequences = 5 if count is None else [m.ones(2)] * count
            return m.nn.utils.rnn.pad_sequence(sequences, padding_side=side)

        same_error(lambda: call(pyaten), lambda: call(torch))


def test_import_pyaten_does_not_load_modules():
    import subprocess
    import sys

    code = (
        "import sys, pyaten; "
        "print('pyaten.nn.modules' in sys.modules, 'pyaten.nn.init' in sys.modules); "
        "from pyaten.nn import Linear; import pyaten.nn.modules.loss; "
        "print(pyaten.nn.modules.Linear is Linear, pyaten.nn.Module.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=600)
    assert out.stdout.split() == ["False", "False", "True", "pyaten.nn.modules.module"]
