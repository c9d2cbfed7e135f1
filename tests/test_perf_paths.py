"""The per-call fast paths give what the general path gives, and batched registration builds the
tables unbatched registration builds.

Tracing turns every fast path off (bindings, TensorIterator same-shape checks, dispatcher
shortcuts), so a result computed inside `trace()` is the general path's result: the two must
agree bit for bit, in dtype, sizes and strides, and both must agree with PyTorch.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from _helpers import FakeTensor, noop_kernel
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
from pyaten.dispatch import dump_table, registry, trace
from pyaten.dispatch.keys import KEY_BY_NAME
from pyaten.schema import parse

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"]
_counter = itertools.count()

BINARY = {
    "add": lambda lib, a, b: lib.add(a, b),
    "sub": lambda lib, a, b: lib.sub(a, b),
    "mul": lambda lib, a, b: lib.mul(a, b),
    "mul_scalar": lambda lib, a, b: lib.mul(a, 2),
    "add_alpha": lambda lib, a, b: lib.add(a, b, alpha=2),
    "eq": lambda lib, a, b: lib.eq(a, b),
    "lt": lambda lib, a, b: lib.lt(a, b),
    "div": lambda lib, a, b: lib.div(a, b),
    "add_": lambda lib, a, b: a.clone().add_(b),
    "mul_": lambda lib, a, b: a.clone().mul_(b),
    "sigmoid": lambda lib, a, b: lib.sigmoid(a),
    "neg": lambda lib, a, b: lib.neg(a),
    "sum": lambda lib, a, b: lib.sum(a),
    "mm": lambda lib, a, b: lib.mm(a.reshape(a.shape[0], -1), b.reshape(-1, a.shape[0])),
}


def _outcome(fn):
    try:
        return fn()
    except Exception as exc:  # the kind of error is part of the outcome
        return type(exc)


def _same(fast, slow) -> None:
    if isinstance(fast, type) or isinstance(slow, type):
        assert fast is slow
        return
    assert fast.dtype == slow.dtype
    assert tuple(fast.shape) == tuple(slow.shape)
    assert fast.stride() == slow.stride()
    f, s = fast.numpy(), slow.numpy()
    if f.dtype.kind in "fc":
        assert np.array_equal(f, s, equal_nan=True)
    else:
        assert np.array_equal(f, s)


def _torch_matches(ours, theirs) -> None:
    if isinstance(ours, type) or isinstance(theirs, type):
        assert isinstance(ours, type) and isinstance(theirs, type)
        return
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    expected = theirs.float().numpy() if theirs.dtype == torch.bfloat16 else theirs.numpy()
    got = ours.numpy().astype(expected.dtype) if theirs.dtype == torch.bfloat16 else ours.numpy()
    if expected.dtype.kind in "fc":
        tol = 1e-2 if theirs.dtype in (torch.float16, torch.bfloat16) else 1e-5
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


@settings(max_examples=60, deadline=None)
@given(
    op=st.sampled_from(sorted(BINARY)),
    dtype=st.sampled_from(DTYPES),
    n=st.integers(1, 4),
    m=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_fast_path_equals_general_path_and_torch(op, dtype, n, m, seed) -> None:
    rng = np.random.default_rng(seed)
    low = 0 if dtype in ("uint8", "bool") else -3
    values_a = rng.integers(low, 4, size=(n, m)).astype(np.float64)
    values_b = rng.integers(1, 4, size=(n, m)).astype(np.float64)  # no division by zero
    td = getattr(torch, dtype)
    ta, tb = torch.tensor(values_a).to(td), torch.tensor(values_b).to(td)
    pd_ = getattr(pyaten, dtype)
    pa = pyaten.tensor(values_a.tolist(), dtype=pd_)
    pb = pyaten.tensor(values_b.tolist(), dtype=pd_)
    fn = BINARY[op]
    fast = _outcome(lambda: fn(pyaten, pa, pb))
    with trace():
        slow = _outcome(lambda: fn(pyaten, pa, pb))
    _same(fast, slow)
    _torch_matches(fast, _outcome(lambda: fn(torch, ta, tb)))


# Layouts around the row-major shortcut's edge (pyaten.core.broadcast): broadcasting,
# transposed and expanded operands, 0-d and 1-d tensors, Python numbers, in place.
LAYOUTS = {
    "row": lambda lib, a: a[0],
    "column": lambda lib, a: a[:, :1],
    "transposed": lambda lib, a: a.t(),
    "expanded": lambda lib, a: a[:1].expand(a.shape[0], a.shape[1]),
    "strided_1d": lambda lib, a: a.reshape(-1)[::2],
    "expanded_1d": lambda lib, a: a[0, :1].expand(a.shape[1]),
    "zero_dim": lambda lib, a: a[0, 0].clone(),
    "number": lambda lib, a: 2,
    "same": lambda lib, a: a.clone(),
}
SHORTCUT_OPS = {
    "add": lambda lib, a, b: lib.add(a, b),
    "mul": lambda lib, a, b: lib.mul(b, a),
    "div": lambda lib, a, b: lib.div(a, b),
    "lt": lambda lib, a, b: lib.lt(a, b),
    "add_": lambda lib, a, b: a.add_(b),
    "add_self": lambda lib, a, b: b.add_(b) if not isinstance(b, int) else a.add_(a),
    "neg_": lambda lib, a, b: b.neg_() if not isinstance(b, int) else a.neg_(),
}


@settings(max_examples=80, deadline=None)
@given(
    op=st.sampled_from(sorted(SHORTCUT_OPS)),
    layout=st.sampled_from(sorted(LAYOUTS)),
    dtype=st.sampled_from(["float32", "int64", "float16"]),
    n=st.integers(1, 3),
    m=st.integers(1, 4),
)
def test_shortcut_layouts_equal_general_path_and_torch(op, layout, dtype, n, m) -> None:
    values = np.arange(1, n * m + 1, dtype=np.float64).reshape(n, m)

    def run(lib, tracing: bool = False):
        a = lib.tensor(values.tolist(), dtype=getattr(lib, dtype))
        b = LAYOUTS[layout](lib, lib.tensor(values.tolist(), dtype=getattr(lib, dtype)))
        if not tracing:
            return _outcome(lambda: SHORTCUT_OPS[op](lib, a, b))
        with trace():
            return _outcome(lambda: SHORTCUT_OPS[op](lib, a, b))

    fast = run(pyaten)
    _same(fast, run(pyaten, tracing=True))
    _torch_matches(fast, run(torch))


@pytest.mark.parametrize("op", ["add_self", "neg_"])
def test_inplace_on_an_expanded_1d_tensor_raises_as_in_torch(op) -> None:
    def run(lib):
        a = lib.ones(2, 3)
        return _outcome(lambda: SHORTCUT_OPS[op](lib, a, lib.zeros(1).expand(3)))

    assert run(pyaten) is run(torch) is RuntimeError


def test_quiet_floating_point_in_threads_nested_calls_and_after() -> None:
    """Kernels give inf/nan silently from any thread, quiet calls nest, and the caller's
    NumPy error state is left as it was (Note: quiet floating point)."""
    import warnings
    from concurrent.futures import ThreadPoolExecutor

    from pyaten.native.structured import quiet_call

    def work(_: int) -> list:
        for _ in range(50):
            result = pyaten.div(pyaten.ones(3), pyaten.zeros(3))
            inner = quiet_call(lambda: quiet_call(np.divide, np.ones(2), np.zeros(2)))
        assert inner.tolist() == [np.inf, np.inf]
        return result.tolist()

    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a NumPy RuntimeWarning in a kernel fails the test
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(work, range(8)))
        assert work(0) == [np.inf] * 3
    assert results == [[np.inf] * 3] * 8
    assert np.geterr() == before
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        np.divide(np.ones(1), np.zeros(1))  # the caller's own state still applies to it


def test_fast_path_after_trace_keeps_version_and_aliasing() -> None:
    a = pyaten.ones(3, 3)
    b = pyaten.ones(3, 3)
    version = a._version
    assert a.add_(b) is a
    assert a._version == version + 1
    with trace():
        a.add_(b)
    assert a._version == version + 2
    out = pyaten.add(a, b)
    assert out.data_ptr() not in (a.data_ptr(), b.data_ptr())
    assert out.is_contiguous()


def _define(name: str) -> list:
    schema = parse(f"perf_batch::{name}(Tensor self) -> Tensor")
    handles = [registry.define(schema, debug="test")]
    for key in ("CPU", "CompositeImplicitAutograd", "AutogradCPU"):
        handles.append(registry.register_kernel(f"perf_batch::{name}", KEY_BY_NAME[key],
                                                noop_kernel, debug=f"test {key}"))
    return handles


def test_batch_builds_the_tables_unbatched_registration_builds() -> None:
    plain_name, batched_name = f"plain{next(_counter)}", f"batched{next(_counter)}"
    handles = _define(plain_name)
    try:
        with registry.batch():
            handles += _define(batched_name)
            with registry.batch():  # nested blocks: the outer one rebuilds
                pass
        plain = dump_table(f"perf_batch::{plain_name}")
        batched = dump_table(f"perf_batch::{batched_name}")
        assert plain == batched
        entry = registry.get_operator(f"perf_batch::{batched_name}")
        assert entry.call(FakeTensor()) is None  # the batched table serves calls
    finally:
        for handle in reversed(handles):
            handle.remove()
    assert registry.get_operator(f"perf_batch::{batched_name}") is None


def test_batch_rebuilds_even_when_the_block_raises() -> None:
    name = f"raises{next(_counter)}"
    handles: list = []
    try:
        with pytest.raises(ValueError), registry.batch():
            handles += _define(name)
            raise ValueError("stop")
        assert dump_table(f"perf_batch::{name}")["CPU"] != "[missing]"
        assert registry.get_operator(f"perf_batch::{name}").call(FakeTensor()) is None
    finally:
        for handle in reversed(handles):
            handle.remove()


# --- convolution: the (N, G, C*K, L) columns and the channels-last columns ------------------
# (Note: channels-last columns, in pyaten/native/kernels/conv.py): one group and at least 8
# input channels take the channels-last GEMMs; both paths against PyTorch, forward and the
# three gradients, over 1-3 spatial dims, strides, paddings, dilations, groups and
# transposed convolutions.
CONV_CASES = [
    # (channels in, channels out, spatial, kernel, stride, padding, dilation, groups)
    (3, 5, (9,), (3,), (1,), (1,), (1,), 1),
    (8, 6, (9,), (3,), (2,), (0,), (2,), 1),
    (4, 8, (6, 7), (3, 3), (1, 1), (1, 1), (1, 1), 1),
    (12, 10, (6, 7), (3, 2), (2, 1), (1, 0), (1, 2), 1),
    (16, 8, (5, 5), (3, 3), (1, 1), (1, 1), (1, 1), 2),
    (9, 4, (4, 5, 3), (2, 3, 2), (1, 2, 1), (1, 0, 1), (1, 1, 1), 1),
]


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("case", CONV_CASES)
def test_convolution_paths_match_torch_forward_and_backward(case, transposed) -> None:
    cin, cout, spatial, kernel, stride, padding, dilation, groups = case
    rng = np.random.default_rng(len(spatial) * 100 + cin)
    x = rng.standard_normal((2, cin, *spatial)).astype(np.float64)
    if transposed:
        w = rng.standard_normal((cin, cout // groups, *kernel))
    else:
        w = rng.standard_normal((cout, cin // groups, *kernel))
    b = rng.standard_normal(cout)
    output_padding = [0] * len(spatial)
    results = []
    for lib, make in ((pyaten, pyaten.from_numpy), (torch, torch.from_numpy)):
        xt, wt, bt = (make(a.copy()).requires_grad_(True) for a in (x, w, b))
        y = lib.ops.aten.convolution(xt, wt, bt, list(stride), list(padding), list(dilation),
                                     transposed, output_padding, groups)
        grad = make(np.linspace(-1, 1, int(np.prod(tuple(y.shape)))).reshape(tuple(y.shape)))
        y.backward(grad)
        results.append([t.detach().numpy() for t in (y, xt.grad, wt.grad, bt.grad)])
    for ours, theirs in zip(*results):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9)


# --- sigmoid: one SciPy pass for small inputs, PyTorch's formula in four in-place passes for
# large ones (pyaten/native/kernels/unary.py): both against PyTorch and the general path.
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [7, 2047, 2048, 5000])
def test_sigmoid_small_and_large_paths_match_torch(dtype, n) -> None:
    values = (np.random.default_rng(n).standard_normal(n) * 8).astype(dtype)
    values[:3] = [0.0, 100.0, -100.0]
    ours = pyaten.sigmoid(pyaten.from_numpy(values.copy()))
    with trace():
        general = pyaten.sigmoid(pyaten.from_numpy(values.copy()))
    np.testing.assert_array_equal(ours.numpy(), general.numpy())
    theirs = torch.sigmoid(torch.from_numpy(values.copy())).numpy()
    np.testing.assert_allclose(ours.numpy(), theirs, rtol=5e-7 if dtype == "float32" else 1e-15,
                               atol=0)
    out = pyaten.empty(n, dtype=getattr(pyaten, dtype))
    pyaten.sigmoid(pyaten.from_numpy(values.copy()), out=out)
    np.testing.assert_array_equal(out.numpy(), ours.numpy())
