"""`__torch_function__` (pyaten.overrides, pyaten._C): the same programs run on torch and on
pyaten, comparing the calls the handlers see, result classes, values and errors."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torch.utils._python_dispatch
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
import pyaten._C
import pyaten.overrides
import pyaten.utils._python_dispatch

LIBS = {"torch": torch, "pyaten": pyaten}


def _classes(lib):
    """The documented logging subclass, and a plain subclass, for one library."""
    overrides = lib.overrides

    class LoggingTensor(lib.Tensor):
        log: list[str] = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            LoggingTensor.log.append(func.__name__)
            if kwargs is None:
                kwargs = {}
            return super().__torch_function__(func, types, args, kwargs)

    class Plain(lib.Tensor):
        pass

    class Recorder(overrides.TorchFunctionMode):
        def __init__(self, tag, seen):
            super().__init__()
            self.tag, self.seen = tag, seen

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.seen.append((self.tag, func.__name__))
            return func(*args, **(kwargs or {}))

    return LoggingTensor, Plain, Recorder


def _values(x):
    if isinstance(x, (torch.Tensor, pyaten.Tensor)):
        return np.asarray(x.detach().tolist())
    return x


def _run_both(program):
    """`program(lib, classes)` on each library: its results (class names and values)."""
    out = {}
    for name, lib in LIBS.items():
        out[name] = program(lib, _classes(lib))
    return out["torch"], out["pyaten"]


def _kind(x):
    if isinstance(x, (torch.Tensor, pyaten.Tensor)):
        name = type(x).__name__
        return "Tensor" if name == "Tensor" else name
    return type(x).__name__


# --- the logging subclass: what the handler sees, and what comes back -------------------------

PROGRAMS = {
    "function": lambda lib, a, b: lib.add(a, b),
    "method": lambda lib, a, b: a.add(b, alpha=2),
    "dunder": lambda lib, a, b: a * 2,
    "reflected": lambda lib, a, b: 2 + a,
    "rsub": lambda lib, a, b: 1 - a,
    "unary": lambda lib, a, b: -a,
    "abs": lambda lib, a, b: abs(a),
    "compare": lambda lib, a, b: a > 0,
    "eq": lambda lib, a, b: a == b,
    "matmul": lambda lib, a, b: a @ b,
    "index": lambda lib, a, b: a[0],
    "index plain by subclass": lambda lib, a, b: b[lib.tensor([0, 1]).as_subclass(type(a))],
    "shape": lambda lib, a, b: tuple(a.shape),
    "dtype": lambda lib, a, b: str(a.dtype).split(".")[-1],
    "T": lambda lib, a, b: a.T,
    "requires_grad": lambda lib, a, b: a.requires_grad,
    "sum dim": lambda lib, a, b: a.sum(dim=0),
    "cat": lambda lib, a, b: lib.cat([b, a]),
    "relu": lambda lib, a, b: lib.nn.functional.relu(a),
    "softmax": lambda lib, a, b: lib.nn.functional.softmax(a, dim=1),
    "mean": lambda lib, a, b: lib.mean(a),
    "len": lambda lib, a, b: len(a),
    "floordiv": lambda lib, a, b: a // 2,
    "iterate": lambda lib, a, b: list(a)[1],
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_logging_subclass(name):
    def program(lib, classes):
        logging, _, _ = classes
        a = lib.tensor([[1.0, -2.0], [3.0, 4.0]]).as_subclass(logging)
        b = lib.tensor([[0.5, 1.0], [1.0, -1.0]])
        logging.log.clear()
        result = PROGRAMS[name](lib, a, b)
        return list(logging.log), _kind(result), _values(result)

    (t_log, t_kind, t_val), (p_log, p_kind, p_val) = _run_both(program)
    assert p_log == t_log
    assert p_kind == t_kind
    np.testing.assert_array_equal(np.asarray(p_val), np.asarray(t_val))


def test_setitem_and_setter_are_seen():
    def program(lib, classes):
        logging, _, _ = classes
        a = lib.zeros(2, 2).as_subclass(logging)
        logging.log.clear()
        a[0] = 1.0
        a.requires_grad = True
        return list(logging.log), _values(a)

    (t_log, t_val), (p_log, p_val) = _run_both(program)
    assert p_log == t_log == ["__setitem__", "__set__"]
    np.testing.assert_array_equal(p_val, t_val)


def test_setitem_of_a_subclass_value_is_seen():
    def program(lib, classes):
        logging, _, _ = classes
        a = lib.zeros(2, 2)
        logging.log.clear()
        a[0] = lib.ones(2).as_subclass(logging)
        return list(logging.log), _values(a)

    (t_log, t_val), (p_log, p_val) = _run_both(program)
    assert p_log == t_log == ["__setitem__"]
    np.testing.assert_array_equal(p_val, t_val)


def test_plain_subclass_keeps_its_class():
    def program(lib, classes):
        _, plain, _ = classes
        a = plain([1.0, 2.0, 3.0])
        results = [a + 1, lib.exp(a), a.view(3, 1), a[1:], a.unsqueeze(0).t(), a.to(lib.float64),
                   a.clone(), lib.stack([a, a]), a.max(dim=0).values, a.detach()]
        return [_kind(r) for r in results], [_values(r).tolist() for r in results]

    (t_kinds, t_vals), (p_kinds, p_vals) = _run_both(program)
    assert p_kinds == t_kinds
    assert all(k == "Plain" for k in p_kinds)
    np.testing.assert_allclose(np.concatenate([np.ravel(v) for v in p_vals]),
                               np.concatenate([np.ravel(v) for v in t_vals]))


def test_as_subclass_stays_on_the_graph():
    def program(lib, classes):
        _, plain, _ = classes
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.as_subclass(plain)
        (y * y).sum().backward()
        return _kind(y), y.requires_grad, y.is_leaf, _values(x.grad)

    t, p = _run_both(program)
    assert p[:3] == t[:3]
    np.testing.assert_array_equal(p[3], t[3])


def test_as_subclass_refuses_a_non_tensor_class():
    for lib in LIBS.values():
        with pytest.raises(TypeError, match="does not inherit from Tensor"):
            lib.ones(2).as_subclass(int)


def test_parameters_unchanged():
    for lib in LIBS.values():
        p = lib.nn.Parameter(lib.ones(2))
        assert type(p + 1) is lib.Tensor
        assert type(p.add(1)) is lib.Tensor
        assert type(p) is lib.nn.Parameter
        assert not lib.overrides.has_torch_function((p,))
    assert pyaten.nn.Parameter.__torch_function__ is pyaten._C._disabled_torch_function_impl


# --- ScalarTensor and a DiagonalTensor-like class: not Tensors ------------------------------


def _scalar_tensor(lib):
    handled = {}

    class ScalarTensor:
        def __init__(self, n, value):
            self._n, self._value = n, value

        def tensor(self):
            return self._value * lib.eye(self._n)

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if kwargs is None:
                kwargs = {}
            if func not in handled or not all(
                issubclass(t, (lib.Tensor, ScalarTensor)) for t in types
            ):
                return NotImplemented
            return handled[func](*args, **kwargs)

    handled[lib.mean] = lambda s: float(s._value) / s._n
    handled[lib.add] = lambda s, other: ScalarTensor(s._n, s._value + other._value) if isinstance(
        other, ScalarTensor) else s.tensor() + other
    return ScalarTensor


def test_scalar_tensor_documented_example():
    for lib in LIBS.values():
        st = _scalar_tensor(lib)
        d = st(5, 2)
        assert lib.mean(d) == 0.4
        summed = lib.add(d, st(5, 3))
        assert isinstance(summed, st) and summed._value == 5
        dense = lib.add(d, lib.ones(5, 5))
        assert type(dense) is lib.Tensor and float(dense[0][0]) == 3.0
        assert lib.overrides.is_tensor_like(d) and not lib.overrides.is_tensor_like(6)


def _normalise(message: str) -> str:
    message = message.replace("torch", "pyaten").replace("pyaten._tensor", "pyaten.Tensor")
    return re.sub(r" at 0x[0-9a-f]+", "", message)


ERROR_CALLS = {
    "function": lambda lib, s: lib.add(s, s),
    "method": lambda lib, s: lib.Tensor.add(s, 1) if isinstance(s, lib.Tensor) else lib.mean(s),
    "property": lambda lib, s: s.shape if isinstance(s, lib.Tensor) else lib.sum(s),
    "index": lambda lib, s: s[0] if isinstance(s, lib.Tensor) else lib.exp(s),
    "nn.functional": lambda lib, s: lib.nn.functional.relu(s),
}


@pytest.mark.parametrize("subclass", [True, False])
@pytest.mark.parametrize("call", list(ERROR_CALLS))
def test_notimplemented_from_every_handler(call, subclass):
    messages = {}
    for name, lib in LIBS.items():
        base = lib.Tensor if subclass else object

        class Refuses(base):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return NotImplemented

        obj = lib.ones(2).as_subclass(Refuses) if subclass else Refuses()
        with pytest.raises(TypeError) as info:
            ERROR_CALLS[call](lib, obj)
        messages[name] = _normalise(str(info.value))
    assert messages["pyaten"] == messages["torch"]


def test_operator_with_refusing_handler_is_unsupported():
    for lib in LIBS.values():
        class Refuses(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return NotImplemented

        a = lib.ones(2).as_subclass(Refuses)
        with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'Refuses'"):
            a + 1
        with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for -: 'int'"):
            1 - a


# --- ordering ------------------------------------------------------------------------------


def _ordered(lib, seen):
    def make(name, base, answer=NotImplemented):
        def handler(cls, func, types, args=(), kwargs=None):
            seen.append((name, tuple(t.__name__ for t in types)))
            return answer

        return type(name, (base,), {"__torch_function__": classmethod(handler)})

    a_cls = make("A", lib.Tensor)
    b_cls = make("B", a_cls)  # a subclass of A: asked before A
    c_cls = make("C", lib.Tensor, "from C")  # unrelated: argument order
    return a_cls, b_cls, c_cls


def test_subclasses_before_parents_then_argument_order():
    results = {}
    for name, lib in LIBS.items():
        seen = []
        a_cls, b_cls, c_cls = _ordered(lib, seen)
        a, b, c = (lib.ones(1).as_subclass(k) for k in (a_cls, b_cls, c_cls))
        seen.clear()
        got = lib.cat([a, c, b, a])
        results[name] = (list(seen), got)
    assert results["pyaten"] == results["torch"]
    assert results["pyaten"][0][0][0] == "B"


# --- modes ---------------------------------------------------------------------------------


def test_modes_nest_and_see_nn_functional():
    def program(lib, classes):
        _, _, recorder = classes
        seen = []
        x = lib.ones(2, 3)
        w = lib.ones(4, 3)
        with recorder("outer", seen):
            with recorder("inner", seen):
                lib.nn.functional.linear(x, w)
                lib.nn.functional.relu(x)
                x.shape  # noqa: B018
                lib.zeros(2)
                x + 1
        return seen

    t, p = _run_both(program)
    # pyaten's F.linear is a Python function over the linear operator: its name is the same
    assert p == t


def test_mode_runs_before_subclass_and_without_itself():
    def program(lib, classes):
        logging, _, recorder = classes
        seen = []
        a = lib.ones(2).as_subclass(logging)
        logging.log.clear()
        with recorder("m", seen) as mode:
            r = a.mul(2)
            stack = lib.overrides._get_current_function_mode() is mode
        return seen, list(logging.log), _kind(r), stack

    assert _run_both(program)[1] == _run_both(program)[0]


def test_disable_torch_function_subclass_and_all():
    for lib in LIBS.values():
        logging, plain, recorder = _classes(lib)
        a = lib.ones(2).as_subclass(plain)
        with lib._C.DisableTorchFunctionSubclass():
            assert not lib._C._is_torch_function_enabled()
            assert type(a + 1) is lib.Tensor
        assert lib._C._is_torch_function_enabled()
        seen = []
        with recorder("m", seen):
            with lib._C.DisableTorchFunctionSubclass():
                lib.ones(1) + 1
            with lib._C.DisableTorchFunction():
                lib.ones(1) + 1
                assert type(a + 1) is lib.Tensor
        assert seen == [("m", "ones"), ("m", "add")]


def test_handle_torch_function_on_a_python_function():
    for lib in LIBS.values():
        def double(x, overrides=lib.overrides):
            if overrides.has_torch_function_unary(x):
                return overrides.handle_torch_function(double, (x,), x)
            return x * 2

        _, plain, _ = _classes(lib)
        assert type(double(lib.ones(1).as_subclass(plain))) is plain
        assert type(double(lib.ones(1))) is lib.Tensor


def test_overridable_functions_cover_the_public_api():
    ours = pyaten.overrides.get_overridable_functions()
    assert pyaten.add in ours[pyaten]
    assert pyaten.Tensor.add in ours[pyaten.Tensor]
    assert pyaten.nn.functional.relu in ours[pyaten.nn.functional]
    assert pyaten.Tensor.shape.__get__ in ours[pyaten.Tensor.shape]
    ignored = pyaten.overrides.get_ignored_functions()
    assert pyaten.ones in ignored and pyaten.add not in ignored
    theirs = torch.overrides.get_overridable_functions()
    names = {f.__name__ for f in theirs[torch] if getattr(pyaten, f.__name__, None) is not None}
    ours_names = {f.__name__ for f in ours[pyaten]}
    missing = sorted(names - ours_names)
    assert len(missing) <= len(names) // 50, missing


def test_as_subclass_is_seen_by_no_mode():
    def program(lib, classes):
        _, plain, recorder = classes
        dispatch_module = (torch.utils._python_dispatch if lib is torch
                           else pyaten.utils._python_dispatch)
        seen = []

        class Logging(dispatch_module.TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                seen.append(str(func))
                return func(*args, **(kwargs or {}))

        x = lib.ones(2)
        with Logging(), recorder("tf", seen):
            y = x.as_subclass(plain)
        return seen, _kind(y)

    assert _run_both(program)[1] == _run_both(program)[0] == ([], "Plain")


# --- every fast path with a mode on gives the result it gives without ------------------------

FAST_CALLS = {
    "add": lambda lib, a, b: lib.add(a, b),
    "add alpha": lambda lib, a, b: lib.add(a, b, alpha=2),
    "mul number": lambda lib, a, b: lib.mul(a, 2.0),
    "method": lambda lib, a, b: a.sub(b),
    "in-place": lambda lib, a, b: a.clone().add_(b),
    "dunder": lambda lib, a, b: a + 1,
    "reflected": lambda lib, a, b: 3 * a,
    "unary dunder": lambda lib, a, b: -a,
    "sum dim": lambda lib, a, b: lib.sum(a, dim=1),
    "sum keepdim": lambda lib, a, b: a.sum(1, keepdim=True),
    "view ints": lambda lib, a, b: a.view(4, 1),
    "transpose": lambda lib, a, b: a.transpose(0, 1),
    "cat": lambda lib, a, b: lib.cat([a, b], dim=1),
    "clamp": lambda lib, a, b: lib.clamp(a, min=0.0, max=2.0),
    "softmax": lambda lib, a, b: lib.softmax(a, dim=-1),
    "zeros": lambda lib, a, b: lib.zeros(2, 3),
    "index": lambda lib, a, b: a[1],
    "linear": lambda lib, a, b: lib.nn.functional.linear(a, b),
    "max dim": lambda lib, a, b: lib.max(a, 1).values,
}


@pytest.mark.parametrize("name", list(FAST_CALLS))
def test_fast_paths_with_a_mode_on(name):
    a = pyaten.tensor([[1.0, -2.0], [3.0, 4.0]])
    b = pyaten.tensor([[0.5, 1.0], [1.0, -1.0]])
    plain = FAST_CALLS[name](pyaten, a, b)
    seen = []
    _, _, recorder = _classes(pyaten)
    with recorder("m", seen):
        moded = FAST_CALLS[name](pyaten, a, b)
    assert seen, "the mode saw no call"
    assert type(moded) is type(plain) and moded.dtype == plain.dtype
    np.testing.assert_array_equal(_values(moded), _values(plain))
    # and torch's mode sees the same first call
    t_seen = []
    _, _, t_recorder = _classes(torch)
    ta, tb = torch.tensor(a.tolist()), torch.tensor(b.tolist())
    with t_recorder("m", t_seen):
        FAST_CALLS[name](torch, ta, tb)
    assert seen[0] == t_seen[0]


def test_a_mode_belongs_to_its_thread():
    import threading

    seen = []
    _, _, recorder = _classes(pyaten)
    results = []
    started, finish = threading.Event(), threading.Event()

    def other():
        started.wait(timeout=30)
        results.append(pyaten.add(pyaten.ones(2), 1).tolist())
        finish.set()

    worker = threading.Thread(target=other, daemon=True)
    worker.start()
    with recorder("m", seen):
        started.set()
        assert finish.wait(timeout=30)
    worker.join(timeout=30)
    assert results == [[2.0, 2.0]]
    assert seen == []
    assert not pyaten.core.torch_function.ACTIVE


# --- handler order, as a property of the argument classes ------------------------------------


def _hierarchy(lib, seen):
    """A(Tensor), B(A), E(B), C(Tensor), D(C): every handler records itself and refuses."""
    def make(name, base):
        def handler(cls, func, types, args=(), kwargs=None):
            seen.append((cls.__name__, tuple(t.__name__ for t in types)))
            return NotImplemented

        return type(name, (base,), {"__torch_function__": classmethod(handler)})

    a = make("A", lib.Tensor)
    b = make("B", a)
    e = make("E", b)
    c = make("C", lib.Tensor)
    d = make("D", c)
    return {"A": a, "B": b, "C": c, "D": d, "E": e, "T": lib.Tensor}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from("ABCDET"), min_size=1, max_size=5))
def test_handler_order_follows_pytorch(names):
    outcome = {}
    for label, lib in LIBS.items():
        seen = []
        classes = _hierarchy(lib, seen)
        tensors = [lib.ones(1).as_subclass(classes[n]) if n != "T" else lib.ones(1)
                   for n in names]
        try:
            lib.cat(tensors)
            error = None
        except TypeError as exc:
            error = _normalise(str(exc))
        outcome[label] = (seen, error)
    assert outcome["pyaten"] == outcome["torch"]
