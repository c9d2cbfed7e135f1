"""The structured fast path (Note: the structured fast path, pyaten/native/fastpath.py) gives
what the general path gives: every registered fast function against the same call with
tracing on (which turns every fast path off), and against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pyaten
from pyaten.dispatch import trace
from pyaten.native import fastpath

DTYPES = ["float32", "float64", "int64", "int32", "uint8", "complex64", "bool", "float16"]

_RNG = np.random.default_rng(7)


def _values(dtype: str, shape: tuple) -> np.ndarray:
    if dtype == "bool":
        return _RNG.integers(0, 2, shape).astype(bool)
    if dtype.startswith("complex"):
        return (_RNG.standard_normal(shape) + 1j * _RNG.standard_normal(shape)).astype(dtype)
    if dtype in ("int64", "int32"):
        return _RNG.integers(-50, 50, shape).astype(dtype)
    if dtype == "uint8":
        return _RNG.integers(1, 200, shape).astype(dtype)
    # some values outside every function's domain (log of negatives, overflowing exp)
    values = _RNG.standard_normal(shape) * 3
    values.flat[0] = 100.0
    values.flat[1] = -0.0
    return values.astype(dtype)


def _handle(name: str):
    base, _, overload = name.partition(".")
    packet = getattr(pyaten.ops.aten, base)
    return getattr(packet, overload or "default")


def _tensor_arity(name: str) -> int:
    return str(_handle(name)._schema).split("->")[0].count("Tensor")


def _general(fn, *args):
    with trace():
        return fn(*args)


def _same(a, b) -> None:
    assert a.dtype == b.dtype
    assert tuple(a.shape) == tuple(b.shape)
    assert a.stride() == b.stride()
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def _call(fn, *args):
    try:
        return fn(*args), None
    except Exception as error:  # noqa: BLE001 - compared below
        return None, error


def _outcome_equal(fast, general) -> None:
    (value, error), (ref_value, ref_error) = fast, general
    if ref_error is not None or error is not None:
        assert type(error) is type(ref_error), (error, ref_error)
        assert str(error) == str(ref_error)
        return
    _same(value, ref_value)


def _exists(name: str) -> bool:
    # A row's in-place fast function is made whether or not the YAML declares the variant
    # (`logaddexp2_` is not): then no wrapper calls it.
    try:
        _handle(name)
    except AttributeError:
        return False
    return True


FUNCTIONAL = sorted(n for n in fastpath.REGISTERED if n.partition(".")[0][-1] != "_")
INPLACE = sorted(n for n in fastpath.REGISTERED if n.partition(".")[0][-1] == "_" and _exists(n))


def test_the_registry_names_every_family():
    for name in ("add.Tensor", "sub_.Tensor", "mul.Tensor", "div.Tensor", "exp", "tanh_",
                 "sigmoid", "maximum", "neg"):
        assert name in fastpath.REGISTERED


@pytest.mark.parametrize("name", FUNCTIONAL)
@pytest.mark.parametrize("dtype", DTYPES)
def test_functional_fast_equals_general(name, dtype):
    handle = _handle(name)
    arity = _tensor_arity(name)
    args = [pyaten.tensor(_values(dtype, (3, 5))) for _ in range(arity)]
    _outcome_equal(_call(handle, *args), _call(_general, handle, *args))
    if arity == 2:
        number = 2.5 if dtype.startswith(("float", "complex")) else 3
        left = args[0]
        _outcome_equal(
            _call(lambda: getattr(pyaten, name.partition(".")[0])(left, number)),
            _call(_general, lambda: getattr(pyaten, name.partition(".")[0])(left, number)),
        )


@pytest.mark.parametrize("name", INPLACE)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex64"])
def test_inplace_fast_equals_general(name, dtype):
    handle = _handle(name)
    arity = _tensor_arity(name)
    values = [_values(dtype, (4, 3)) for _ in range(arity)]
    fast_args = [pyaten.tensor(v) for v in values]
    general_args = [pyaten.tensor(v) for v in values]
    fast = _call(handle, *fast_args)
    general = _call(_general, handle, *general_args)
    _outcome_equal(fast, general)
    if fast[1] is None:
        assert fast[0] is fast_args[0]
        assert fast_args[0]._version == general_args[0]._version == 1
        _same(fast_args[0], general_args[0])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_fast_results_match_torch(dtype):
    a, b = _values(dtype, (4, 4)), _values(dtype, (4, 4))
    b[b == 0] = 1
    pa, pb = pyaten.tensor(a), pyaten.tensor(b)
    ta, tb = torch.tensor(a), torch.tensor(b)
    for ours, theirs in (
        (pyaten.add(pa, pb), torch.add(ta, tb)),
        (pyaten.sub(pa, pb), torch.sub(ta, tb)),
        (pyaten.mul(pa, pb), torch.mul(ta, tb)),
        (pyaten.relu(pa), torch.relu(ta)),
        (pyaten.maximum(pa, pb), torch.maximum(ta, tb)),
    ):
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    if dtype != "int32":
        np.testing.assert_allclose(pyaten.sigmoid(pa).numpy(), torch.sigmoid(ta).numpy(),
                                   rtol=2e-7 if dtype == "float32" else 1e-15)
        np.testing.assert_allclose(pyaten.mul(pa, 0.1).numpy(), torch.mul(ta, 0.1).numpy(),
                                   rtol=0)


def test_declined_cases_take_the_general_path():
    a = pyaten.ones(4, 4)
    t = a.t()  # not row-major
    add = fastpath.REGISTERED["add.Tensor"]
    assert add(a, a, 1) is not None
    assert add(a, t, 1) is None
    assert add(a, a, 2) is None  # alpha other than 1
    assert fastpath.REGISTERED["exp"](t) is None
    assert add(a, pyaten.ones(4), 1) is None  # broadcasting
    assert add(a, pyaten.ones(4, 4, dtype=pyaten.float64), 1) is None
    assert fastpath.REGISTERED["exp"](pyaten.ones(4, dtype=pyaten.float16)) is None
    assert fastpath.REGISTERED["exp"](pyaten.ones(4, dtype=pyaten.int64)) is None  # promotes
    half = pyaten.ones(8)
    assert fastpath.REGISTERED["add_.Tensor"](half[:4], half[4:], 1) is None  # one storage
    np.testing.assert_array_equal((a + t).numpy(), np.full((4, 4), 2.0, np.float32))


def test_a_replaced_stub_kernel_is_honoured():
    from pyaten.native.kernels.binary import add_stub

    original = add_stub.kernel("cpu")
    calls = []

    def loop(op, alpha):
        calls.append(alpha)
        original(op, alpha)

    add_stub.register("cpu", loop)
    try:
        assert fastpath.REGISTERED["add.Tensor"](pyaten.ones(2), pyaten.ones(2), 1) is None
        result = pyaten.add(pyaten.ones(2), pyaten.ones(2))
    finally:
        add_stub.register("cpu", original)
    assert calls == [1]
    np.testing.assert_array_equal(result.numpy(), [2.0, 2.0])


def test_floating_point_warnings_stay_quiet():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        big = pyaten.full((4,), 1e30)
        assert np.isinf(pyaten.mul(big, big).numpy()).all()
        assert np.isnan(pyaten.log(pyaten.full((3,), -1.0)).numpy()).all()
        assert np.isinf(pyaten.exp(pyaten.full((3,), 1000.0)).numpy()).all()


def test_autograd_through_fast_paths():
    a = pyaten.ones(3, 3, requires_grad=True)
    b = pyaten.full((3, 3), 2.0)
    (pyaten.exp(a) * b + a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.e + 1, rtol=1e-6)


REDUCTIONS = sorted(n for n in fastpath.REGISTERED
                    if n.partition(".")[0] in ("sum", "amax", "amin", "prod", "max", "min"))


def test_reductions_have_fast_functions():
    assert "sum.dim_IntList" in REDUCTIONS


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "int64"])
@pytest.mark.parametrize("dim", [None, [1], [0, 1], [-1], []])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduction_fast_equals_general(name, dtype, dim, keepdim):
    handle = _handle(name)
    schema = str(handle._schema)
    if "dim" not in schema.split("->")[0]:
        pytest.skip("an all-dims overload")
    x = pyaten.tensor(_values(dtype, (3, 5)))
    args = (x, dim, keepdim)
    for _ in range(2):  # the first call makes the shape's plan, the second takes the fast path
        _outcome_equal(_call(handle, *args), _call(_general, handle, *args))


def test_reduction_fast_path_is_taken_and_declines():
    x = pyaten.tensor(_values("float32", (3, 5)))
    fast = fastpath.REGISTERED["sum.dim_IntList"]
    pyaten.sum(x, dim=1)
    assert fast(x, [1], False, None) is not None
    assert fast(x, [1], False, pyaten.float64) is None  # a dtype= conversion
    assert fast(pyaten.ones(2, 3, dtype=pyaten.int32), [1], False, None) is None  # promotes


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("transposed", [False, True])
def test_mm_and_addmm_fast_equal_general_and_torch(dtype, transposed):
    a, b = _values(dtype, (4, 3)), _values(dtype, (3, 5))
    bias = _values(dtype, (5,))
    pa, pb, pbias = pyaten.tensor(a), pyaten.tensor(b), pyaten.tensor(bias)
    if transposed:
        pb = pyaten.tensor(np.ascontiguousarray(b.T)).t()
    assert fastpath.REGISTERED["mm"](pa, pb) is not None
    _outcome_equal(_call(pyaten.mm, pa, pb), _call(_general, pyaten.mm, pa, pb))
    _outcome_equal(_call(pyaten.addmm, pbias, pa, pb), _call(_general, pyaten.addmm, pbias, pa, pb))
    np.testing.assert_allclose(pyaten.addmm(pbias, pa, pb).numpy(),
                               torch.addmm(torch.tensor(bias), torch.tensor(a),
                                           torch.tensor(b)).numpy(), rtol=1e-5, atol=1e-5)
    assert fastpath.REGISTERED["addmm"](pbias, pa, pb, 2, 1) is None  # beta 2
    assert fastpath.REGISTERED["mm"](pa, pa) is None  # 4x3 @ 4x3: the general path's error


def test_generated_wrappers_try_their_fast_function():
    import sys

    module = sys.modules["pyaten._generated.native_functions"]
    assert "fast_wrapper_CPU_add_Tensor" in module.wrapper_CPU_add_Tensor.__code__.co_names
    assert "fast_wrapper_CPU_exp_" in module.wrapper_CPU_exp_.__code__.co_names
    # out= wrappers and Meta wrappers never take it
    assert not any(n.startswith("fast_") for n in module.wrapper_CPU_add_out.__code__.co_names)
    assert not any(n.startswith("fast_") for n in module.wrapper_Meta_add_Tensor.__code__.co_names)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_fast_equals_general(dtype, dim):
    parts = [pyaten.tensor(_values(dtype, (2, 3))), pyaten.tensor(_values(dtype, (2, 3)))]
    assert fastpath.REGISTERED["cat"](parts, dim) is not None
    _outcome_equal(_call(pyaten.cat, parts, dim), _call(_general, pyaten.cat, parts, dim))
    mixed = [parts[0], pyaten.tensor(_values("float64", (2, 3)))]
    assert fastpath.REGISTERED["cat"](mixed, dim) is None  # promotion: the general path
    torch_parts = [torch.tensor(p.numpy()) for p in parts]
    np.testing.assert_array_equal(pyaten.cat(parts, dim).numpy(),
                                  torch.cat(torch_parts, dim).numpy())


@pytest.mark.parametrize("name", ["_softmax", "_log_softmax"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, dim", [((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -2), ((6,), 0)])
def test_softmax_fast_equals_general_and_torch(name, dtype, shape, dim):
    x = pyaten.tensor(_values(dtype, shape))
    handle = _handle(name)
    assert fastpath.REGISTERED[name](x, dim, False) is not None
    _outcome_equal(_call(handle, x, dim, False), _call(_general, handle, x, dim, False))
    theirs = getattr(torch, name)(torch.tensor(x.numpy()), dim, False)
    np.testing.assert_allclose(handle(x, dim, False).numpy(), theirs.numpy(), rtol=1e-5,
                               atol=1e-6)
    assert fastpath.REGISTERED[name](x, 5, False) is None  # out of range: the general error


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, scalar", [("lerp", 0.25), ("lerp", 0.75), ("addcmul", 1),
                                          ("addcmul", -0.5), ("addcdiv", 1), ("addcdiv", 3)])
def test_scalar_operand_ops_fast_equal_general_and_torch(dtype, name, scalar):
    values = [_values(dtype, (4, 6)) for _ in range(3)]
    values[2][0, 0] = 0.0  # addcdiv's division by zero: inf, silently
    arity = 2 if name == "lerp" else 3
    ours = [pyaten.tensor(v) for v in values[:arity]]
    key = "lerp.Scalar" if name == "lerp" else name

    def call(*tensors):
        if name == "lerp":
            return pyaten.lerp(*tensors, scalar)
        return getattr(pyaten, name)(*tensors, value=scalar)

    fast = fastpath.REGISTERED[key](*ours, scalar)
    assert fast is not None
    _outcome_equal((fast, None), _call(_general, call, *ours))
    if name == "lerp":
        theirs = torch.lerp(*(torch.tensor(v) for v in values[:2]), scalar)
    else:
        theirs = getattr(torch, name)(*(torch.tensor(v) for v in values), value=scalar)
    np.testing.assert_allclose(fast.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)
    # in place, as optimizers call them: the same values in self, its version bumped once
    target, reference = ours[0].clone(), ours[0].clone()
    method = name + "_"
    args = (scalar,) if name == "lerp" else ()
    kwargs = {} if name == "lerp" else {"value": scalar}
    assert getattr(target, method)(*ours[1:], *args, **kwargs) is target
    with trace():
        getattr(reference, method)(*ours[1:], *args, **kwargs)
    _same(target, reference)
    assert target._version == reference._version == 1
    # declined: a tensor weight, mixed dtypes, an operand sharing self's memory
    other = ours[1].float() if dtype == "float64" else ours[1].double()
    assert fastpath.REGISTERED[key](ours[0], other, *ours[2:], scalar) is None
    whole = pyaten.tensor(_values(dtype, (8, 6)))
    assert fastpath.REGISTERED[key.replace(name, name + "_")](
        whole[:4], whole[4:], *ours[2:], scalar
    ) is None


# Slices of row-major tensors ("row-major ordered", fastpath.row_major_ordered): the fast
# functions take them and give the general path's result (a row-major one, as PyTorch's).
_SLICES = {
    "chunk": lambda t: t[:, 2:5],
    "every other": lambda t: t[::2, ::2],
    "size-1 dim": lambda t: t[1:2, 1:4],
}


@pytest.mark.parametrize("name", FUNCTIONAL)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("layout", sorted(_SLICES))
def test_functional_fast_equals_general_on_slices(name, dtype, layout):
    handle = _handle(name)
    arity = _tensor_arity(name)
    cut = _SLICES[layout]
    args = [cut(pyaten.tensor(_values(dtype, (6, 8)))) for _ in range(arity)]
    if arity == 2:  # one slice and one row-major operand of its shape
        args[1] = args[1].contiguous()
    _outcome_equal(_call(handle, *args), _call(_general, handle, *args))


@pytest.mark.parametrize("layout", sorted(_SLICES))
def test_slices_take_the_fast_path_and_match_torch(layout):
    cut = _SLICES[layout]
    values = _values("float32", (6, 8))
    ours, theirs = cut(pyaten.tensor(values)), cut(torch.tensor(values))
    assert fastpath.REGISTERED["exp"](ours) is not None
    assert fastpath.REGISTERED["mul.Tensor"](ours, ours.contiguous()) is not None
    for op in ("exp", "sigmoid", "tanh", "neg"):
        ours_result, theirs_result = getattr(pyaten, op)(ours), getattr(torch, op)(theirs)
        assert ours_result.stride() == theirs_result.stride()
        np.testing.assert_allclose(ours_result.numpy(), theirs_result.numpy(), rtol=1e-6)
    product = pyaten.mul(ours, ours.contiguous())
    assert product.stride() == torch.mul(theirs, theirs.contiguous()).stride()
    base = pyaten.tensor(values)
    view = cut(base)
    view.mul_(2.0)  # in place through the fast path: the base sees it
    expected = values.copy()
    cut(expected)[...] *= 2
    np.testing.assert_array_equal(base.numpy(), expected)


def test_layouts_that_are_not_row_major_ordered_are_declined():
    a = pyaten.ones(4, 6)
    assert not fastpath.row_major_ordered((4, 6), (1, 4))  # transposed
    assert not fastpath.row_major_ordered((4, 6), (0, 1))  # expanded
    assert not fastpath.row_major_ordered((4, 6), (3, 1))  # overlapping rows
    assert fastpath.row_major_ordered((4, 1, 6), (6, 99, 1))  # a size-1 dim's stride
    assert fastpath.REGISTERED["exp"](a.t()) is None
    assert fastpath.REGISTERED["exp"](a[:, :1].expand(4, 6)) is None


# --- the direct call (Note: the direct call, in pyaten/native/gen_support.py) ----------------
# A binding calls the operator's fast function itself when its tensors are plain CPU tensors
# and nothing is active; anything else goes through the dispatcher. Each call below is made
# directly, through the dispatcher (tracing on), and with each mode, subclass or kernel that
# must take the dispatcher's path.
_DIRECT_CALLS = {
    "add": lambda lib, a, b: lib.add(a, b),
    "a + b": lambda lib, a, b: a + b,
    "a * 2.0": lambda lib, a, b: a * 2.0,
    "mul(a, 2)": lambda lib, a, b: lib.mul(a, 2),
    "a.add(b)": lambda lib, a, b: a.add(b),
    "a.mul(0.5)": lambda lib, a, b: a.mul(0.5),
    "exp": lambda lib, a, b: lib.exp(a),
    "a.exp()": lambda lib, a, b: a.exp(),
    "sigmoid": lambda lib, a, b: lib.sigmoid(a),
    "relu": lambda lib, a, b: lib.relu(a),
    "mm": lambda lib, a, b: lib.mm(a, b),
    "sum": lambda lib, a, b: lib.sum(a),
    "a.sum()": lambda lib, a, b: a.sum(),
    "a > b": lambda lib, a, b: a > b,
    "maximum": lambda lib, a, b: lib.maximum(a, b),
    # typed positional fast paths
    "sum(a, 1)": lambda lib, a, b: lib.sum(a, 1),
    "a.sum(0)": lambda lib, a, b: a.sum(0),
    "linear(a, b, bias)": lambda lib, a, b: lib.nn.functional.linear(a, b, b[0]),
    "linear(a, b, None)": lambda lib, a, b: lib.nn.functional.linear(a, b, None),
    "clamp(a, 0)": lambda lib, a, b: lib.clamp(a, 0),
    # single-keyword fast paths
    "sum(a, dim=1)": lambda lib, a, b: lib.sum(a, dim=1),
    "softmax(a, dim=1)": lambda lib, a, b: lib.softmax(a, dim=1),
    "a.add(b, alpha=2)": lambda lib, a, b: a.add(b, alpha=2),
    "add(a, b, alpha=2)": lambda lib, a, b: lib.add(a, b, alpha=2),
}


def _generated_module():
    import sys

    return sys.modules[pyaten.exp.__globals__["__name__"]]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "float16"])
@pytest.mark.parametrize("name", sorted(_DIRECT_CALLS))
def test_direct_call_equals_dispatcher_path_and_torch(name, dtype):
    call = _DIRECT_CALLS[name]
    values = [_values(dtype, (4, 4)) for _ in range(2)]
    ours = [pyaten, *(pyaten.tensor(v) for v in values)]
    direct = _call(call, *ours)
    direct = _call(call, *ours)  # the second call: the operator's cache is filled
    _outcome_equal(direct, _call(_general, call, *ours))
    theirs = _call(call, torch, *[torch.tensor(v) for v in values])
    if direct[1] is None and theirs[1] is None:
        assert str(direct[0].dtype).split(".")[1] == str(theirs[0].dtype).split(".")[1]
        assert direct[0].stride() == theirs[0].stride()
        np.testing.assert_allclose(direct[0].numpy().astype(np.float64),
                                   theirs[0].numpy().astype(np.float64), rtol=1e-3)
    else:
        assert type(direct[1]) is type(theirs[1]), (direct[1], theirs[1])


def test_direct_call_is_taken_for_plain_tensors():
    module = _generated_module()
    a = pyaten.ones(3, 3)
    pyaten.exp(a)
    pyaten.exp(a)
    assert module.D_exp.fast is fastpath.REGISTERED["exp"]
    assert module.D_exp.check(module.E_exp) is fastpath.REGISTERED["exp"]
    # in-place and view operators keep the dispatcher's path: their bindings have no direct
    # call to test for
    assert not hasattr(module, "D_exp_") and not hasattr(module, "D_t")
    assert "D_exp_" not in module.exp_.__code__.co_names


@pytest.mark.filterwarnings("ignore:Warning only once")
def test_direct_call_honours_a_kernel_registered_later():
    from pyaten.library import Library

    a = pyaten.ones(2, 2)
    pyaten.exp(a)
    with Library("aten", "IMPL") as lib:
        lib.impl("exp", lambda x: pyaten.zeros(2, 2) + 7, "CPU")
        assert pyaten.exp(a).tolist() == [[7.0, 7.0], [7.0, 7.0]]
        assert pyaten.exp(a).tolist() == [[7.0, 7.0], [7.0, 7.0]]
    np.testing.assert_allclose(pyaten.exp(a).numpy(), np.full((2, 2), np.e), rtol=1e-6)
    with Library("aten", "IMPL") as lib:
        lib.impl("exp", lambda x: pyaten.zeros(2, 2) - 1, "AutogradCPU")
        assert pyaten.exp(a).tolist() == [[-1.0, -1.0], [-1.0, -1.0]]


def test_direct_call_leaves_modes_subclasses_and_grad_to_the_dispatcher():
    import pyaten.utils._python_dispatch as pd

    seen = []

    class Log(pd.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    a, b = pyaten.ones(2, 2), pyaten.ones(2, 2)
    pyaten.add(a, b)
    with Log():
        pyaten.add(a, b)
        a * 2.0
        a.exp()
    assert seen == ["aten.add.Tensor", "aten.mul.Tensor", "aten.exp.default"]

    class Sub(pyaten.Tensor):
        pass

    sub = a.as_subclass(Sub)
    assert type(pyaten.exp(sub)) is Sub  # the subclass's own path (torch keeps the class)
    assert type(sub + b) is Sub

    w = pyaten.ones(2, 2, requires_grad=True)
    out = pyaten.mul(w, b)
    assert out.grad_fn is not None
    out.sum().backward()
    assert w.grad.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    with pyaten.no_grad():
        assert pyaten.mul(w, b).grad_fn is None
    bias = pyaten.ones(2, requires_grad=True)  # only an optional argument requires grad
    pyaten.nn.functional.linear(a, b, bias).sum().backward()
    assert bias.grad.tolist() == [2.0, 2.0]
    assert pyaten.sum(w, 1).grad_fn is not None
    assert pyaten.sum(w, dim=1).grad_fn is not None
    assert pyaten.add(a, w, alpha=2).grad_fn is not None

    with pyaten.autocast("cpu", dtype=pyaten.bfloat16):
        assert pyaten.mm(a, b).dtype == pyaten.bfloat16  # autocast's kernel ran

    fw = pyaten.autograd.forward_ad
    with fw.dual_level():
        dual = fw.make_dual(pyaten.ones(2), pyaten.full((2,), 3.0))
        tangent = fw.unpack_dual(pyaten.exp(dual)).tangent
    assert tangent.tolist() == pytest.approx([3 * np.e, 3 * np.e])

    z = pyaten.tensor([1 + 2j, 3 - 1j]).conj()  # the conjugate bit: resolved by its fallback
    assert pyaten.exp(z).numpy() == pytest.approx(np.exp(np.array([1 - 2j, 3 + 1j])))


def test_direct_calls_can_be_turned_off_with_the_same_results():
    from pyaten.native.gen_support import set_direct_calls

    module = _generated_module()
    a, b = pyaten.tensor(_values("float32", (3, 4))), pyaten.tensor(_values("float32", (3, 4)))
    on = [pyaten.add(a, b), a * 2.0, pyaten.exp(a), pyaten.add(a, b)]
    assert module.D_add_Tensor.fast is not None
    previous = set_direct_calls(False)
    try:
        off = [pyaten.add(a, b), a * 2.0, pyaten.exp(a), pyaten.add(a, b)]
        assert module.D_add_Tensor.fast is None and module.D_exp.fast is None
    finally:
        set_direct_calls(previous)
    for x, y in zip(on, off):
        _same(x, y)
    pyaten.add(a, b)
    assert module.D_add_Tensor.fast is not None
