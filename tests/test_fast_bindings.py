"""The generated bindings' fast paths (positional and keyword) and the view/indexing shortcuts
give what the general path gives, and what PyTorch gives.

The general path is the parser (`bind_and_call`), which the bindings also take inside
`trace()`; basic indexing's general path is the index walk (`_apply_slicing`). Each call is
checked three ways: against PyTorch (values, shape, strides, dtype), against the general path
bit for bit, and (for the calls issue 23 measures) that no call reached the parser at all.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as torch_functional
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
import pyaten.nn.functional as pyaten_functional
from pyaten.dispatch import trace
from pyaten.native.gen_support import bind_and_call
from pyaten.native.kernels import index as index_kernels
from pyaten.native.loader import load, load_declarations
from pyaten.native.registry import native

MODULE = load().module
RNG = np.random.default_rng(23)
DATA = {
    "a": RNG.standard_normal((4, 4)).astype(np.float32),
    "b": RNG.standard_normal((4, 4)).astype(np.float32),
    "x": RNG.standard_normal(16).astype(np.float32),
    "w": RNG.standard_normal((3, 4)).astype(np.float32),
    "bias": RNG.standard_normal(3).astype(np.float32),
    "c": RNG.standard_normal((2, 3, 4)).astype(np.float32),
}


def _inputs(lib):
    return {k: lib.tensor(v.tolist(), dtype=lib.float32) for k, v in DATA.items()}


def _functional(lib):
    return pyaten_functional if lib is pyaten else torch_functional


# name -> fn(lib, F, tensors); the call shapes of issue 23 and their neighbours.
CALLS = {
    "sum(a, dim=1)": lambda L, F, t: L.sum(t["a"], dim=1),
    "sum(a, dim=(0, 1))": lambda L, F, t: L.sum(t["a"], dim=(0, 1)),
    "sum(a, dim=[-1], keepdim=True)": lambda L, F, t: L.sum(t["a"], dim=[-1], keepdim=True),
    "sum(a, 1, True)": lambda L, F, t: L.sum(t["a"], 1, True),
    "sum(a, dtype=float64)": lambda L, F, t: L.sum(t["a"], dtype=L.float64),
    "a.sum(dim=1)": lambda L, F, t: t["a"].sum(dim=1),
    "a.sum(1)": lambda L, F, t: t["a"].sum(1),
    "a.sum((0, 1))": lambda L, F, t: t["a"].sum((0, 1)),
    "a.sum(1, keepdim=True)": lambda L, F, t: t["a"].sum(1, keepdim=True),
    "a.sum(dim=-1, dtype=float64)": lambda L, F, t: t["a"].sum(dim=-1, dtype=L.float64),
    "a.mean(-1, keepdim=True)": lambda L, F, t: t["a"].mean(-1, keepdim=True),
    "softmax(a, dim=1)": lambda L, F, t: L.softmax(t["a"], dim=1),
    "softmax(a, 1)": lambda L, F, t: L.softmax(t["a"], 1),
    "a.softmax(-1)": lambda L, F, t: t["a"].softmax(-1),
    "a.softmax(dim=0)": lambda L, F, t: t["a"].softmax(dim=0),
    "F.softmax(a, dim=-1)": lambda L, F, t: F.softmax(t["a"], dim=-1),
    "log_softmax(a, dim=1, dtype=float64)":
        lambda L, F, t: L.log_softmax(t["a"], dim=1, dtype=L.float64),
    "cat([a, b])": lambda L, F, t: L.cat([t["a"], t["b"]]),
    "cat([a, b], 1)": lambda L, F, t: L.cat([t["a"], t["b"]], 1),
    "cat([a, b], dim=1)": lambda L, F, t: L.cat([t["a"], t["b"]], dim=1),
    "cat((a, b), dim=-1)": lambda L, F, t: L.cat((t["a"], t["b"]), dim=-1),
    "stack([a, b], dim=1)": lambda L, F, t: L.stack([t["a"], t["b"]], dim=1),
    "x.view(4, 4)": lambda L, F, t: t["x"].view(4, 4),
    "x.view(-1, 4)": lambda L, F, t: t["x"].view(-1, 4),
    "x.view((2, 8))": lambda L, F, t: t["x"].view((2, 8)),
    "x.view(size=(4, 4))": lambda L, F, t: t["x"].view(size=(4, 4)),
    "c.view(6, 4)": lambda L, F, t: t["c"].view(6, 4),
    "c.transpose(1, 2).view(2, 12)":
        lambda L, F, t: t["c"].transpose(1, 2).reshape(2, 12),
    "a.reshape(16)": lambda L, F, t: t["a"].reshape(16),
    "a.reshape(-1)": lambda L, F, t: t["a"].reshape(-1),
    "a.reshape((2, -1))": lambda L, F, t: t["a"].reshape((2, -1)),
    "a.t().reshape(16)": lambda L, F, t: t["a"].t().reshape(16),
    "a.flatten()": lambda L, F, t: t["a"].flatten(),
    "c.flatten(1)": lambda L, F, t: t["c"].flatten(1),
    "c.permute(2, 0, 1).flatten(0, 1)": lambda L, F, t: t["c"].permute(2, 0, 1).flatten(0, 1),
    "a.transpose(0, 1)": lambda L, F, t: t["a"].transpose(0, 1),
    "a.transpose(-1, 0)": lambda L, F, t: t["a"].transpose(-1, 0),
    "a.t()": lambda L, F, t: t["a"].t(),
    "a.permute(1, 0)": lambda L, F, t: t["a"].permute(1, 0),
    "c.permute((2, 0, 1))": lambda L, F, t: t["c"].permute((2, 0, 1)),
    "c.permute(-1, 0, 1)": lambda L, F, t: t["c"].permute(-1, 0, 1),
    "a.unsqueeze(0)": lambda L, F, t: t["a"].unsqueeze(0),
    "a[:1].expand(3, 4)": lambda L, F, t: t["a"][:1].expand(3, 4),
    "x.expand(2, -1)": lambda L, F, t: t["x"].expand(2, -1),
    "mul(a, 2.0)": lambda L, F, t: L.mul(t["a"], 2.0),
    "mul(a, 2)": lambda L, F, t: L.mul(t["a"], 2),
    "a * 2.0": lambda L, F, t: t["a"] * 2.0,
    "2.0 * a": lambda L, F, t: 2.0 * t["a"],
    "a + b": lambda L, F, t: t["a"] + t["b"],
    "a + 1": lambda L, F, t: t["a"] + 1,
    "add(a, b, alpha=2)": lambda L, F, t: L.add(t["a"], t["b"], alpha=2),
    "a.add(b, alpha=0.5)": lambda L, F, t: t["a"].add(t["b"], alpha=0.5),
    "a.clone().add_(b)": lambda L, F, t: t["a"].clone().add_(t["b"]),
    "sub(a, b, alpha=2)": lambda L, F, t: L.sub(t["a"], t["b"], alpha=2),
    "F.linear(a, w, bias)": lambda L, F, t: F.linear(t["a"], t["w"], t["bias"]),
    "F.linear(a, w)": lambda L, F, t: F.linear(t["a"], t["w"]),
    "F.linear(a, w, None)": lambda L, F, t: F.linear(t["a"], t["w"], None),
    "F.linear(a, w, bias=bias)": lambda L, F, t: F.linear(t["a"], t["w"], bias=t["bias"]),
    "a.exp()": lambda L, F, t: t["a"].exp(),
    "exp(a)": lambda L, F, t: L.exp(t["a"]),
    "a.max(dim=1)": lambda L, F, t: t["a"].max(dim=1),
    "a.max(1)": lambda L, F, t: t["a"].max(1),
    "a.min(dim=0, keepdim=True)": lambda L, F, t: t["a"].min(dim=0, keepdim=True),
    "max(a, 1).indices": lambda L, F, t: L.max(t["a"], 1).indices,
    "topk(a, 2)": lambda L, F, t: L.topk(t["a"], 2),
    "a.sort(dim=1)": lambda L, F, t: t["a"].sort(dim=1),
    "a.argmax(dim=1, keepdim=True)": lambda L, F, t: t["a"].argmax(dim=1, keepdim=True),
    "a.to(float64)": lambda L, F, t: t["a"].to(L.float64),
    "a.to(dtype=float64)": lambda L, F, t: t["a"].to(dtype=L.float64),
    "a.t().contiguous()": lambda L, F, t: t["a"].t().contiguous(),
    "a.contiguous()": lambda L, F, t: t["a"].contiguous(),
    "a > 0": lambda L, F, t: t["a"] > 0,
    "a ** 2": lambda L, F, t: t["a"] ** 2,
    "a.clamp(min=0.0)": lambda L, F, t: t["a"].clamp(min=0.0),
    "clamp(a, -1, 1)": lambda L, F, t: L.clamp(t["a"], -1, 1),
    "zeros(4, 4, dtype=float64)": lambda L, F, t: L.zeros(4, 4, dtype=L.float64),
    "zeros((4, 4), dtype=float64)": lambda L, F, t: L.zeros((4, 4), dtype=L.float64),
    "div(a, b, rounding_mode='floor')": lambda L, F, t: L.div(t["a"], t["b"],
                                                              rounding_mode="floor"),
    "F.gelu(a, approximate='tanh')": lambda L, F, t: F.gelu(t["a"], approximate="tanh"),
    "a[0]": lambda L, F, t: t["a"][0],
    "a[-1]": lambda L, F, t: t["a"][-1],
    "a[1:3]": lambda L, F, t: t["a"][1:3],
    "a[:, 0]": lambda L, F, t: t["a"][:, 0],
    "a[1:, ::2]": lambda L, F, t: t["a"][1:, ::2],
    "a[0, 1]": lambda L, F, t: t["a"][0, 1],
    "a[-9:99]": lambda L, F, t: t["a"][-9:99],
    "c[1, :, -2]": lambda L, F, t: t["c"][1, :, -2],
    "c[:, 1:2, 3]": lambda L, F, t: t["c"][:, 1:2, 3],
    "c[(0,)]": lambda L, F, t: t["c"][(0,)],
}

# Calls that must take a generated fast path (no call reaches the parser).
FAST = [
    "sum(a, dim=1)", "sum(a, dim=(0, 1))", "sum(a, dim=[-1], keepdim=True)", "sum(a, 1, True)",
    "a.sum(dim=1)", "a.sum(1)", "a.sum((0, 1))", "a.sum(1, keepdim=True)",
    "a.sum(dim=-1, dtype=float64)", "a.mean(-1, keepdim=True)", "softmax(a, dim=1)",
    "softmax(a, 1)", "a.softmax(-1)", "a.softmax(dim=0)", "cat([a, b])", "cat([a, b], 1)",
    "cat([a, b], dim=1)", "cat((a, b), dim=-1)", "x.view(4, 4)", "x.view(-1, 4)",
    "x.view((2, 8))", "x.view(size=(4, 4))", "a.reshape(16)", "a.flatten()",
    "a.transpose(0, 1)", "a.t()", "a.permute(1, 0)", "c.permute((2, 0, 1))", "a.unsqueeze(0)",
    "mul(a, 2.0)", "mul(a, 2)", "a * 2.0", "2.0 * a", "a + b", "a + 1", "add(a, b, alpha=2)",
    "a.add(b, alpha=0.5)", "a.clone().add_(b)", "F.linear(a, w, bias)", "F.linear(a, w)",
    "F.linear(a, w, None)", "F.linear(a, w, bias=bias)", "a.exp()", "exp(a)",
    "a.argmax(dim=1, keepdim=True)", "a.to(float64)", "a.max(dim=1)", "a.max(1)",
    "a.min(dim=0, keepdim=True)", "max(a, 1).indices", "topk(a, 2)", "a.sort(dim=1)",
    "a.t().contiguous()", "a.contiguous()", "a > 0", "a ** 2", "a.clamp(min=0.0)",
    "clamp(a, -1, 1)", "zeros(4, 4, dtype=float64)", "zeros((4, 4), dtype=float64)",
    "div(a, b, rounding_mode='floor')", "F.gelu(a, approximate='tanh')", "a[0]", "a[1:3]",
    "a[:, 0]", "a[1:, ::2]", "c[1, :, -2]",
]


def _as_tuple(result):
    return tuple(result) if isinstance(result, tuple) else (result,)


def _same_bits(fast, slow) -> None:
    assert type(fast) is type(slow)  # a named tuple for named returns (`values, indices`)
    for f, s in zip(_as_tuple(fast), _as_tuple(slow), strict=True):
        assert f.dtype == s.dtype
        assert tuple(f.shape) == tuple(s.shape)
        assert f.stride() == s.stride()
        assert f.storage_offset() == s.storage_offset()
        assert np.array_equal(f.numpy(), s.numpy(), equal_nan=True)


def _matches_torch(ours, theirs) -> None:
    assert type(ours).__name__ == type(theirs).__name__
    for o, t in zip(_as_tuple(ours), _as_tuple(theirs), strict=True):
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        assert tuple(o.shape) == tuple(t.shape)
        assert o.stride() == t.stride()
        assert o.storage_offset() == t.storage_offset()
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_fast_call_equals_torch_and_the_general_path(name) -> None:
    fn = CALLS[name]
    ours = _inputs(pyaten)
    fast = fn(pyaten, pyaten_functional, ours)
    _matches_torch(fast, fn(torch, torch_functional, _inputs(torch)))
    with trace():  # bindings take the parser while a trace is on
        slow = fn(pyaten, pyaten_functional, ours)
    _same_bits(fast, slow)


@pytest.fixture
def parser_calls(monkeypatch):
    """The names the generated module hands to its parser while the fixture is active."""
    seen: list[str] = []

    def spy(binding, args, kwargs, self_tensor=None, public=None):
        seen.append(binding.name)
        return bind_and_call(binding, args, kwargs, self_tensor, public)

    monkeypatch.setattr(MODULE, "bind_and_call", spy)
    return seen


@pytest.mark.parametrize("name", FAST)
def test_common_calls_never_reach_the_parser(name, parser_calls) -> None:
    tensors = _inputs(pyaten)
    parser_calls.clear()
    CALLS[name](pyaten, pyaten_functional, tensors)
    assert parser_calls == []


# Bad calls: the fast paths refuse them and the parser (or kernel) raises what it raised before
# (compared with the general path: same kind, same message) and what torch raises (same kind).
ERRORS = {
    "sum(a, dim=1.5)": lambda L, F, t: L.sum(t["a"], dim=1.5),
    "sum(a, dim=5)": lambda L, F, t: L.sum(t["a"], dim=5),
    "sum(a, dim=(0, 0))": lambda L, F, t: L.sum(t["a"], dim=(0, 0)),
    "a.sum(1, keepdim=1)": lambda L, F, t: t["a"].sum(1, keepdim=1),
    "sum(a, dim=1, bogus=True)": lambda L, F, t: L.sum(t["a"], dim=1, bogus=True),
    "sum(a, 1, dim=1)": lambda L, F, t: L.sum(t["a"], 1, dim=1),
    "a.sum(True)": lambda L, F, t: t["a"].sum(True),
    "softmax(a, dim='x')": lambda L, F, t: L.softmax(t["a"], dim="x"),
    "softmax(a, dim=3)": lambda L, F, t: L.softmax(t["a"], dim=3),
    "a.softmax()": lambda L, F, t: t["a"].softmax(),
    "cat([a, 1], dim=0)": lambda L, F, t: L.cat([t["a"], 1], dim=0),
    "cat([a, x], dim=0)": lambda L, F, t: L.cat([t["a"], t["x"]], dim=0),
    "cat([a, b], dim=2)": lambda L, F, t: L.cat([t["a"], t["b"]], dim=2),
    "cat([a, b], dim=None)": lambda L, F, t: L.cat([t["a"], t["b"]], dim=None),
    "a.view(5, 5)": lambda L, F, t: t["a"].view(5, 5),
    "a.view(-1, -1)": lambda L, F, t: t["a"].view(-1, -1),
    "a.view(-2, 8)": lambda L, F, t: t["a"].view(-2, 8),
    "a.t().view(16)": lambda L, F, t: t["a"].t().view(16),
    "a.view(4, 4.0)": lambda L, F, t: t["a"].view(4, 4.0),
    "a.reshape(3, 5)": lambda L, F, t: t["a"].reshape(3, 5),
    "a.transpose(0, 2)": lambda L, F, t: t["a"].transpose(0, 2),
    "a.permute(0, 0)": lambda L, F, t: t["a"].permute(0, 0),
    "a.permute(0, 1, 2)": lambda L, F, t: t["a"].permute(0, 1, 2),
    "a.expand(3)": lambda L, F, t: t["a"].expand(3),
    "a.expand(2, 5)": lambda L, F, t: t["a"].expand(2, 5),
    "F.linear(a, w, 3)": lambda L, F, t: F.linear(t["a"], t["w"], 3),
    "F.linear(a, w, bias=3)": lambda L, F, t: F.linear(t["a"], t["w"], bias=3),
    "mul(a, 'x')": lambda L, F, t: L.mul(t["a"], "x"),
    "add(a, b, alpha='x')": lambda L, F, t: L.add(t["a"], t["b"], alpha="x"),
    "a[4]": lambda L, F, t: t["a"][4],
    "a[-5]": lambda L, F, t: t["a"][-5],
    "a[0, 9]": lambda L, F, t: t["a"][0, 9],
    "c[:, 0, 7]": lambda L, F, t: t["c"][:, 0, 7],
    "a[::-1]": lambda L, F, t: t["a"][::-1],
    "a[::0]": lambda L, F, t: t["a"][::0],
    "a[0, 0, 0]": lambda L, F, t: t["a"][0, 0, 0],
    "a[0][0][0]": lambda L, F, t: t["a"][0][0][0],
    "a['x']": lambda L, F, t: t["a"]["x"],
}
# The kernels' errors, worded as PyTorch words them.
SAME_MESSAGE_AS_TORCH = [
    "sum(a, dim=5)", "softmax(a, dim=3)", "a.view(5, 5)", "a.view(-1, -1)", "a.reshape(3, 5)",
    "a.transpose(0, 2)", "a[4]", "a[-5]", "a[0, 9]", "c[:, 0, 7]", "a[::-1]", "a[::0]",
    "a[0, 0, 0]", "a.t().view(16)", "cat([a, b], dim=2)", "a.expand(2, 5)",
]


def _error(fn):
    try:
        fn()
    except Exception as error:  # noqa: BLE001 - compared by kind and message
        return type(error), str(error)
    pytest.fail("no error")


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_calls_raise_as_the_general_path_and_torch(name) -> None:
    fn = ERRORS[name]
    ours = _inputs(pyaten)
    fast = _error(lambda: fn(pyaten, pyaten_functional, ours))
    with trace():
        slow = _error(lambda: fn(pyaten, pyaten_functional, ours))
    assert fast == slow
    theirs = _error(lambda: fn(torch, torch_functional, _inputs(torch)))
    assert fast[0] is theirs[0] or issubclass(fast[0], theirs[0])
    if name in SAME_MESSAGE_AS_TORCH:
        assert fast[1] == theirs[1]


# --- every binding, keyword calls: fast paths choose what the parser chooses ------------------


def _pool():
    return {
        "t": lambda: pyaten.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]]),
        "it": lambda: pyaten.tensor([[1, 2, 3], [4, 5, 6]]),
        "z": lambda: pyaten.tensor(2.0),
        "i": lambda: 1,
        "n": lambda: -1,
        "f": lambda: 2.0,
        "b": lambda: True,
        "none": lambda: None,
        "d": lambda: pyaten.float64,
        "tup": lambda: (1, 0),
        "one": lambda: [1],
        "size": lambda: pyaten.Size([3, 2]),
        "lst": lambda: [pyaten.ones(2, 3), pyaten.ones(2, 3)],
        "s": lambda: "mean",
    }


def _outcome(fn):
    try:
        result = fn()
    except Exception as error:  # noqa: BLE001 - compared by kind and message
        return ("error", type(error), str(error))
    if isinstance(result, pyaten.Tensor):
        return ("tensor", tuple(result.shape), result.stride(), str(result.dtype),
                repr(result.tolist()))
    if isinstance(result, tuple):
        return ("tuple", len(result), [_outcome(lambda r=r: r) for r in result])
    return ("value", repr(result))


_UNREPEATABLE = ("rand", "empty", "normal", "uniform", "bernoulli", "poisson", "multinomial",
                 "cauchy", "exponential", "geometric", "dropout", "rrelu", "seed",
                 "_standard_gamma", "_sample_dirichlet", "binomial")


def _keyword_names(binding_name: str) -> list[str]:
    binding = getattr(MODULE, binding_name)
    names = {p.name for sig in binding.signatures for p in sig.params}
    return sorted(names | {"bogus"})


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_keyword_fast_paths_choose_what_the_parser_chooses(data) -> None:
    """Every generated binding, called with positional and keyword arguments drawn from a
    pool, gives the same outcome (result or error message) through its fast paths as through
    the parser (Note: fast-path safety)."""
    names = [("f", n) for n in MODULE.FUNCTIONS if not any(u in n for u in _UNREPEATABLE)]
    names += [("m", n) for n in MODULE.METHODS if not any(u in n for u in _UNREPEATABLE)]
    kind, name = data.draw(st.sampled_from(sorted(names)))
    table = f"B_{name}" if kind == "f" else f"B_Tensor_{name}"
    pool = _pool()
    codes = data.draw(st.lists(st.sampled_from(sorted(pool)), max_size=2))
    keys = data.draw(st.lists(st.sampled_from(_keyword_names(table)), min_size=1, max_size=2,
                              unique=True))
    values = [data.draw(st.sampled_from(sorted(pool))) for _ in keys]

    def args():
        return tuple(pool[c]() for c in codes)

    def kwargs():
        return {k: pool[v]() for k, v in zip(keys, values)}

    if kind == "f":
        fast = lambda: getattr(MODULE, name)(*args(), **kwargs())  # noqa: E731
        slow = lambda: bind_and_call(getattr(MODULE, table), args(), kwargs())  # noqa: E731
    else:
        fast = lambda: getattr(MODULE, f"Tensor_{name}")(pool["t"](), *args(), **kwargs())  # noqa: E731
        slow = lambda: bind_and_call(  # noqa: E731
            getattr(MODULE, table), args(), kwargs(), pool["t"]())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _outcome(fast) == _outcome(slow), (kind, name, codes, keys, values)


# --- a keyword block whose safety is decided at run time ------------------------------------

TWO_OVERLOADS_YAML = """
- func: fbkw(Tensor self, int dim=0) -> Tensor
  dispatch:
    CompositeExplicitAutograd: fbkw_int
- func: fbkw.list(Tensor self, int[1] dim, bool keepdim=False) -> Tensor
  dispatch:
    CompositeExplicitAutograd: fbkw_list
- func: fbkw2(Tensor self, float alpha=1.0) -> Tensor
  dispatch:
    CompositeExplicitAutograd: fbkw_float
- func: fbkw2.int(Tensor self, int alpha, bool flag=False) -> Tensor
  dispatch:
    CompositeExplicitAutograd: fbkw_int_flag
"""
_FBKW_CALLS: list = []


@native
def fbkw_int(self, dim):
    _FBKW_CALLS.append(("int", dim))
    return self


@native
def fbkw_list(self, dim, keepdim):
    _FBKW_CALLS.append(("list", dim, keepdim))
    return self


@native
def fbkw_float(self, alpha):
    _FBKW_CALLS.append(("float", alpha))
    return self


@native
def fbkw_int_flag(self, alpha, flag):
    _FBKW_CALLS.append(("int flag", alpha, flag))
    return self


@pytest.mark.parametrize(
    ("call", "expected", "parser"),
    [
        # `fbkw(Tensor self, int dim=0)` comes first and takes an int dim by keyword
        (lambda f, t: f.fbkw(t, dim=1), ("int", 1), False),
        (lambda f, t: f.fbkw(t), ("int", 0), False),
        # ... and refuses a tuple, which only the parser can tell at run time here
        (lambda f, t: f.fbkw(t, dim=(0, 1)), ("list", (0, 1), False), True),
        # naming `keepdim` rules the first overload out: the keyword block is safe
        (lambda f, t: f.fbkw(t, dim=1, keepdim=True), ("list", (1,), True), False),
        (lambda f, t: f.fbkw(t, dim=[1, 0], keepdim=False), ("list", (1, 0), False), False),
        (lambda f, t: f.fbkw(t, keepdim=True, dim=0), ("list", (0,), True), False),
        (lambda f, t: f.fbkw(t, 1, True), ("list", (1,), True), False),
        (lambda f, t: f.fbkw(t, 1, keepdim=True), ("list", (1,), True), False),
        # `fbkw2(Tensor self, float alpha=1.0)` comes first and takes an int alpha too: the
        # int overload's blocks may run only when `flag` is named
        (lambda f, t: f.fbkw2(t, alpha=2), ("float", 2.0), True),
        (lambda f, t: f.fbkw2(t, 2), ("float", 2.0), True),
        (lambda f, t: f.fbkw2(t, alpha=2.5), ("float", 2.5), False),
        (lambda f, t: f.fbkw2(t, alpha=2, flag=True), ("int flag", 2, True), False),
        (lambda f, t: f.fbkw2(t, 2, flag=False), ("int flag", 2, False), False),
    ],
)
def test_keyword_block_decides_between_overloads_at_run_time(call, expected, parser,
                                                              monkeypatch) -> None:
    loaded = load_declarations(TWO_OVERLOADS_YAML, "fbkw")
    try:
        module = loaded.module
        seen: list = []

        def spy(binding, args, kwargs, self_tensor=None, public=None):
            seen.append(binding.name)
            return bind_and_call(binding, args, kwargs, self_tensor, public)

        monkeypatch.setattr(module, "bind_and_call", spy)
        t = pyaten.ones(2, 2)
        _FBKW_CALLS.clear()
        call(module, t)
        with trace():
            call(module, t)
        assert _FBKW_CALLS == [expected, expected]
        assert bool(seen[:-1]) is parser  # the traced call always takes the parser
    finally:
        for handle in reversed(loaded.handles):
            handle.remove()


# --- views and basic indexing --------------------------------------------------------------


def _ops(fn) -> list[tuple[str, list]]:
    with trace() as recorded:
        fn()
    return [(n.operator, n.arguments) for n in recorded.nodes]


@pytest.mark.parametrize(
    "index",
    [0, -1, 2, (1,), (0, 1), (1, -2, 3), slice(1, 2), slice(None, None, 2), slice(-9, 99),
     (slice(None), 1), (slice(0, 3, 2), slice(None), -1), (1, slice(None, None, 3)),
     (slice(1, None), slice(None, 2), slice(None))],
)
def test_basic_indexing_makes_the_calls_of_the_index_walk(index) -> None:
    c = pyaten.arange(60.0).view(3, 4, 5)
    fast = _ops(lambda: c[index])
    walk = _ops(lambda: index_kernels._apply_slicing(c, index))
    assert fast == walk
    got, expected = c[index], torch.arange(60.0).view(3, 4, 5)[index]
    assert tuple(got.shape) == tuple(expected.shape)
    assert got.stride() == expected.stride()
    assert got.storage_offset() == expected.storage_offset()
    assert got.tolist() == expected.tolist()


def test_basic_indexing_results_are_views_sharing_the_version_counter() -> None:
    a = pyaten.zeros(3, 4)
    row = a[1]
    block = a[1:, ::2]
    assert row._base is a and block._base is a
    row.fill_(2.0)
    assert a._version == row._version == block._version
    assert block.tolist() == [[2.0, 2.0], [0.0, 0.0]]


def test_view_plans_are_per_geometry() -> None:
    """A contiguous tensor and a transposed one of the same sizes get their own plans."""
    a = pyaten.arange(12.0).view(3, 4)
    assert a.view(4, 3).stride() == (3, 1)
    t = a.t().contiguous().t()  # sizes (3, 4), strides (1, 3)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.view(12)
    assert t.view(3, 4).stride() == (1, 3)
    assert t.reshape(12).tolist() == a.reshape(12).tolist()
    assert t.reshape(12)._base is not t  # a copy, not a view
    e = pyaten.ones(4).expand(3, 4)  # strides (0, 1)
    assert e.view(3, 2, 2).stride() == (0, 2, 1)
    assert torch.ones(4).expand(3, 4).view(3, 2, 2).stride() == (0, 2, 1)
    # a list of sizes, as kernels may pass one
    assert pyaten.ops.aten.view.default(a, [2, 6]).shape == (2, 6)
    assert pyaten.ops.aten.permute.default(a, [1, 0]).stride() == (1, 4)


@pytest.mark.parametrize(
    "index", [0, -1, (1, 2), slice(1, 3), (slice(None), 0), (slice(None, None, 2), 1),
              (0, slice(1, None)), (slice(None), slice(None))],
)
def test_basic_index_assignment_equals_torch_and_the_walk(index) -> None:
    ours, theirs = pyaten.arange(16.0).view(4, 4), torch.arange(16.0).view(4, 4)
    before = ours._version
    ours[index] = 7.0
    theirs[index] = 7.0
    assert ours.tolist() == theirs.tolist()
    assert ours._version > before
    ours[index] = ours[index] * 2
    theirs[index] = theirs[index] * 2
    assert ours.tolist() == theirs.tolist()
    walk = pyaten.arange(16.0).view(4, 4)
    fast = _ops(lambda: walk.__setitem__(index, 7.0))
    view, _ = index_kernels._apply_slicing(walk, index)
    expected = _ops(lambda: index_kernels._apply_slicing(walk, index))
    assert [op for op, _ in fast[: len(expected)]] == [op for op, _ in expected]
    assert set(view.reshape(-1).tolist()) == {7.0}


def _factorisations(n: int) -> list[tuple[int, ...]]:
    """Shapes of n elements with up to three dims (and one -1 variant of each)."""
    shapes: list[tuple[int, ...]] = [(n,)]
    for a in range(1, n + 1):
        if n % a == 0:
            shapes.append((a, n // a))
            for b in range(1, n // a + 1):
                if (n // a) % b == 0:
                    shapes.append((a, b, n // a // b))
    return shapes + [s[:-1] + (-1,) for s in shapes]


@settings(max_examples=150, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 4), min_size=1, max_size=3),
    order=st.permutations(range(3)),
    step=st.integers(1, 2),
    data=st.data(),
)
def test_view_and_reshape_plans_equal_torch(sizes, order, step, data) -> None:
    """view/reshape of contiguous, permuted, strided and empty tensors, each geometry asked
    twice (the second time from the plan cache): the same shape, strides and values as torch,
    or the same error."""
    ndim = len(sizes)
    perm = [d for d in order if d < ndim]
    base = int(np.prod(sizes)) * step
    ours = pyaten.arange(float(base)).reshape(-1)[::step].view(*sizes).permute(*perm)
    theirs = torch.arange(float(base)).reshape(-1)[::step].view(*sizes).permute(*perm)
    numel = int(np.prod(sizes))
    target = data.draw(st.sampled_from(_factorisations(max(numel, 1)) + [(numel + 1,)]))
    for _ in range(2):
        for method in ("view", "reshape"):
            try:
                expected = getattr(theirs, method)(*target)
            except RuntimeError as error:
                with pytest.raises(RuntimeError) as caught:
                    getattr(ours, method)(*target)
                assert str(caught.value) == str(error)
                continue
            got = getattr(ours, method)(*target)
            assert tuple(got.shape) == tuple(expected.shape)
            assert got.stride() == expected.stride()
            assert got.storage_offset() == expected.storage_offset()
            assert got.tolist() == expected.tolist()


def test_parameters_take_the_tensor_fast_paths(parser_calls) -> None:
    """An `nn.Parameter` is a Tensor to the parser, so to the fast paths too: a Linear layer's
    forward, `x @ W` and `W * 2.0` never reach the parser and equal the general path."""
    linear = pyaten.nn.Linear(4, 3)
    x = pyaten.tensor(DATA["a"].tolist())
    weight = linear.weight
    calls = [
        lambda: linear(x),
        lambda: pyaten_functional.linear(x, weight, linear.bias),
        lambda: x @ weight.t(),
        lambda: weight * 2.0,
        lambda: pyaten.add(weight, weight, alpha=2),
        lambda: weight.sum(dim=1),
    ]
    parser_calls.clear()
    fast = [call() for call in calls]
    assert parser_calls == []
    with trace():
        slow = [call() for call in calls]
    for f, s in zip(fast, slow, strict=True):
        _same_bits(f.detach(), s.detach())
        assert f.requires_grad and f.grad_fn is not None
        assert type(f.grad_fn) is type(s.grad_fn)
