"""Argument parsing of the generated bindings, differential against PyTorch's parser:
overload choice, keywords, keyword-only arguments, defaults, int lists, Scalars from 0-dim
tensors, out=, dtype=/device=, and the TypeError messages."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from _helpers import dtype_name
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
from pyaten.codegen.python_signature import group_signatures, sort_signatures
from pyaten.dispatch import trace
from pyaten.native.loader import load_declarations
from pyaten.native.registry import native
from pyaten.schema import parse


def _both(fn):
    """fn(lib) in torch and pyaten: same result values, or the same error kind and message."""
    try:
        theirs = fn(torch)
    except Exception as error:  # noqa: BLE001 - mirrored below
        with pytest.raises(type(error)) as ours:
            fn(pyaten)
        return str(ours.value), str(error)
    ours = fn(pyaten)
    if isinstance(theirs, torch.Tensor):
        assert ours.tolist() == theirs.tolist()
        assert dtype_name(ours.dtype) == dtype_name(theirs.dtype)
    return None


SAME_MESSAGE = [
    lambda m: m.add(m.ones(2), "x"),
    lambda m: m.ones(2).add("x"),
    lambda m: m.exp(),
    lambda m: m.exp(m.ones(2), m.ones(2)),
    lambda m: m.add(m.ones(2), m.ones(2), 2),
    lambda m: m.add(m.ones(2), m.ones(2), foo=1),
    lambda m: m.add(m.ones(2), m.ones(2), input=m.ones(2)),
    lambda m: m.add(m.ones(2), m.ones(2), alpha="s"),
    lambda m: m.exp(1),
    lambda m: m.zeros(1, "a") if m is torch else m.zeros("a"),
    lambda m: m.div(m.ones(2), 2, rounding_mode=3),
]


@pytest.mark.parametrize("case", range(len(SAME_MESSAGE)))
def test_error_messages_like_torch(case):
    result = _both(SAME_MESSAGE[case])
    assert result is not None, "torch accepted the call"
    ours, theirs = result
    if case == 9:  # varargs message differs in wording; the kind must match
        return
    assert ours == theirs


def test_invalid_combination_lists_every_signature():
    with pytest.raises(TypeError) as info:
        pyaten.where(pyaten.ones(2) > 0, 1)
    text = str(info.value)
    assert text.startswith("where() received an invalid combination of arguments - got "
                           "(Tensor, int), but expected one of:")
    assert " * (Tensor condition)" in text
    assert " * (Tensor condition, Tensor input, Tensor other, *, Tensor out = None)" in text
    assert " * (Tensor condition, Number self, Number other)" in text


def test_keyword_arguments_and_defaults():
    for call in [
        lambda m: m.add(input=m.ones(2), other=m.ones(2), alpha=3),
        lambda m: m.add(m.ones(2), other=m.ones(2)),
        lambda m: m.ones(2).add(other=m.ones(2), alpha=2),
        lambda m: m.div(m.ones(2), m.full((2,), 3.0), rounding_mode="floor"),
        lambda m: m.div(m.ones(2), 3, rounding_mode=None),
        lambda m: m.sub(m.ones(2), 3, alpha=2),
    ]:
        assert _both(call) is None


def test_int_list_forms():
    for call in [
        lambda m: m.zeros(2, 3),
        lambda m: m.zeros((2, 3)),
        lambda m: m.zeros([2, 3]),
        lambda m: m.zeros(m.Size([2, 3])),
        lambda m: m.zeros(3),
        lambda m: m.ones(2, 3).view(3, 2),
        lambda m: m.ones(2, 3).view((3, 2)),
        lambda m: m.ones(2, 3).permute(1, 0),
        lambda m: m.ones(2, 3).sum((0, 1)),
    ]:
        assert _both(call) is None


def test_scalar_accepts_zero_dim_tensor_and_python_numbers():
    for call in [
        lambda m: m.add(m.ones(2), m.ones(2), alpha=m.tensor(3)),
        lambda m: m.full((2,), m.tensor(2.5)),
        lambda m: m.eq(m.tensor([1, 2]), 2),
        lambda m: m.ones(2).mul(True),
        lambda m: m.where(m.tensor([True, False]), 1.5, m.tensor([1.0, 2.0])),
    ]:
        assert _both(call) is None
    with pytest.raises(TypeError):
        pyaten.full((2,), pyaten.ones(2))  # a 1-element 1-d tensor is not a Scalar


def test_dtype_device_and_requires_grad_keywords():
    z = pyaten.zeros(2, dtype=pyaten.int32, device="meta")
    assert z.dtype is pyaten.int32 and z.device.type == "meta"
    assert pyaten.ones(2, dtype=float).dtype is pyaten.float64
    assert pyaten.ones(2, requires_grad=True).requires_grad
    with pytest.raises(TypeError, match="must be pyaten.dtype, not int"):
        pyaten.ones(2, dtype=3)


def test_out_keyword_and_tensor_optional_none():
    a = pyaten.tensor([1.0, 2.0])
    out = pyaten.empty(2)
    assert pyaten.mul(a, a, out=out) is out and out.tolist() == [1.0, 4.0]
    assert pyaten.mul(a, a, out=None).tolist() == [1.0, 4.0]
    with pytest.raises(TypeError):
        pyaten.mul(a, a, out="x")
    with pytest.raises(TypeError):
        pyaten.exp(a, out=3)  # exp takes no numbers as tensors
    # methods have no out=
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        a.mul(a, out=out)


def test_numbers_as_tensors_only_for_arithmetic_names():
    assert pyaten.add(2, pyaten.ones(2)).tolist() == torch.add(2, torch.ones(2)).tolist()
    assert pyaten.mul(2.5, pyaten.ones(2)).tolist() == [2.5, 2.5]
    with pytest.raises(TypeError):
        pyaten.exp(2.0)


def test_operators_return_not_implemented_for_wrong_operands():
    a = pyaten.ones(2)
    assert a.__add__("x") is NotImplemented
    with pytest.raises(TypeError, match="unsupported operand"):
        a + "x"  # noqa: B018
    assert (2 + a).tolist() == [3.0, 3.0]
    assert (2 - a).tolist() == [1.0, 1.0]
    assert (2 / a).tolist() == [2.0, 2.0]
    assert (3 * a).tolist() == [3.0, 3.0]


def test_overload_order_tensor_before_scalar():
    schemas = [
        parse("eq.Scalar(Tensor self, Scalar other) -> Tensor"),
        parse("eq.Tensor(Tensor self, Tensor other) -> Tensor"),
    ]
    order = [s.functional.name.overload for s in group_signatures("eq", schemas, False)]
    assert order == ["Tensor", "Scalar"]
    sums = [
        parse("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
              "ScalarType? dtype=None) -> Tensor"),
        parse("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor"),
    ]
    texts = [s.signature_text() for s in sort_signatures(
        group_signatures("sum", sums, False))]
    assert texts[0] == "(Tensor input, *, pyaten.dtype dtype = None)"


def test_binding_notes_when_tracing():
    a = pyaten.tensor([1, 2])
    with trace() as t:
        pyaten.eq(a, 2)
    node = t.as_dicts()[0]
    binding = node["notes"][0]
    assert binding["kind"] == "binding"
    assert binding["overload"] == "aten::eq.Scalar"
    assert binding["rejected"][0]["why"] == (
        "eq(): argument 'other' (position 2) must be Tensor, not int")
    assert node["operator"].startswith("aten::eq.Scalar")


@settings(max_examples=150, deadline=None)
@given(
    args=st.lists(st.sampled_from(["t", "i", "f", "s", "n", "b"]), max_size=4),
    kw=st.sampled_from([{}, {"alpha": 2}, {"alpha": "x"}, {"out": "t"}, {"bogus": 1}]),
    op=st.sampled_from(["add", "sub", "mul", "div", "eq", "lt", "where", "exp", "sum",
                        "transpose", "zeros", "ones", "full", "pow", "remainder", "select"]),
)
def test_parser_agrees_with_torch_on_random_calls(args, kw, op):
    def value(m, code):
        return {"t": lambda: m.ones(2), "i": lambda: 3, "f": lambda: 1.5, "s": lambda: "s",
                "n": lambda: None, "b": lambda: m.tensor([True, False])}[code]()

    def call(m):
        kwargs = {k: (m.empty(2) if v == "t" else v) for k, v in kw.items()}
        return getattr(m, op)(*[value(m, c) for c in args], **kwargs)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            theirs = call(torch)
            error = None
        except Exception as exc:  # noqa: BLE001 - classified below
            error = exc
    if any("deprecated" in str(w.message) for w in caught) or (
        op in ("add", "sub") and len(args) >= 3
    ):
        return  # torch's legacy add(input, alpha, other) is not pyaten's (it warns only once)
    if isinstance(error, TypeError):
        with pytest.raises(TypeError):
            call(pyaten)
        return
    if error is not None:  # a kernel error: the binding accepted the call
        try:
            call(pyaten)
        except TypeError as mine:
            pytest.fail(f"pyaten's parser refused a call torch accepted: {mine}")
        except Exception:  # noqa: BLE001, S110
            pass
        return
    ours = call(pyaten)
    if isinstance(theirs, torch.Tensor):
        np.testing.assert_allclose(np.array(ours.tolist()), np.array(theirs.tolist()), rtol=1e-6)


SIZED_YAML = """
- func: cgbind_pool(Tensor self, int[2] kernel_size, int[2] stride=1, *, bool flag=False) -> Tensor
  dispatch:
    CompositeExplicitAutograd: cgbind_pool
"""
_POOL_CALLS: list = []


@native
def cgbind_pool(self, kernel_size, stride, flag):
    _POOL_CALLS.append((kernel_size, stride, flag))
    return self


def test_bare_int_for_sized_int_list_and_keyword_only_in_generated_binding():
    loaded = load_declarations(SIZED_YAML, "cgbind")
    try:
        pool = loaded.functions["cgbind_pool"]
        x = pyaten.ones(2)
        pool(x, 3)
        pool(x, (2, 4), 2, flag=True)
        pool(x, kernel_size=[5, 6], stride=(1, 2))
        assert _POOL_CALLS == [((3, 3), (1, 1), False), ((2, 4), (2, 2), True),
                               ((5, 6), (1, 2), False)]
        with pytest.raises(TypeError, match="takes from 2 to 3 positional arguments"):
            pool(x, 3, 1, True)  # flag is keyword-only
        # torch's parser takes a bare int for int[2] too
        assert torch.max_pool2d(torch.ones(1, 4, 4), 2).shape == (1, 2, 2)
    finally:
        for handle in reversed(loaded.handles):
            handle.remove()


def _fast_vs_parser_pool():
    return {
        "t": lambda: pyaten.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]]),
        "it": lambda: pyaten.tensor([[1, 2, 3], [4, 5, 6]]),
        "z": lambda: pyaten.tensor(2.0),
        "bt": lambda: pyaten.tensor([[True, False, True], [False, True, True]]),
        "i": lambda: 1,
        "f": lambda: 2.0,
        "b": lambda: True,
        "d": lambda: pyaten.float64,
        "tup": lambda: (3, 2),
        "lst": lambda: [pyaten.ones(2, 3), pyaten.ones(2, 3)],
    }


def _outcome(fn):
    try:
        result = fn()
    except Exception as error:  # noqa: BLE001 - compared by kind
        return ("error", type(error))
    if isinstance(result, pyaten.Tensor):
        return ("tensor", tuple(result.shape), str(result.dtype), repr(result.tolist()))
    if isinstance(result, tuple):
        return ("tuple", len(result))
    return ("value", repr(result))


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_fast_paths_choose_what_the_parser_chooses(data):
    """Every generated binding gives the same outcome through its fast paths as through the
    generic parser (Note: fast-path safety)."""
    from pyaten.native.gen_support import bind_and_call
    from pyaten.native.loader import load

    module = load().module
    # samplers and uninitialised memory give different values on each call
    unrepeatable = ("rand", "empty", "normal", "uniform", "bernoulli", "poisson", "multinomial",
                    "cauchy", "exponential", "geometric", "_standard_gamma", "_sample_dirichlet",
                    "binomial")
    names = [("f", n) for n in module.FUNCTIONS if not any(u in n for u in unrepeatable)]
    names += [("m", n) for n in module.METHODS if not any(u in n for u in unrepeatable)]
    kind, name = data.draw(st.sampled_from(sorted(names)))
    pool = _fast_vs_parser_pool()
    codes = data.draw(st.lists(st.sampled_from(sorted(pool)), max_size=3))

    def args():
        return tuple(pool[c]() for c in codes)

    if kind == "f":
        fast = lambda: getattr(module, name)(*args())  # noqa: E731
        slow = lambda: bind_and_call(getattr(module, f"B_{name}"), args(), {})  # noqa: E731
    else:
        fast = lambda: getattr(module, f"Tensor_{name}")(pool["t"](), *args())  # noqa: E731
        slow = lambda: bind_and_call(  # noqa: E731
            getattr(module, f"B_Tensor_{name}"), args(), {}, pool["t"]())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _outcome(fast) == _outcome(slow), (kind, name, codes)
