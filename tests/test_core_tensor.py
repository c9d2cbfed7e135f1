"""Tensor data model vs PyTorch: construction and inference, NumPy sharing, conversions,
devices, views and version counters, resize, generators, DLPack round trips."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import torch
import torch._prims_common
from _helpers import DTYPE_NAMES
from _helpers import dtype_name as name
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
from pyaten.core.views import (
    as_strided_view,
    empty_tensor,
    resize_tensor_,
    select_view,
)


def same_error(torch_fn, ours_fn) -> None:
    with pytest.raises(Exception) as expected:
        torch_fn()
    with pytest.raises(type(expected.value)) as got:
        ours_fn()
    assert str(got.value) == str(expected.value)


# ---- pyaten.tensor ---------------------------------------------------------------------

DATA = [
    [[1, 2], [3, 4]],
    [1, 2.5],
    [True, False],
    [True, 2],
    [1, 1j],
    [[[]]],
    [],
    [[], []],
    3,
    2.5,
    True,
    1 - 2j,
    (1, 2),
    [np.float64(1.0)],
    [np.int32(3), 4],
    np.int16(3),
    [np.float32(1.0), 2.5],
    np.arange(6, dtype=np.int32).reshape(2, 3),
    np.zeros((2, 0)),
    [[1.5, -2.0], [np.float16(2), 1]],
]


@pytest.mark.parametrize("data", DATA, ids=range(len(DATA)))
def test_tensor_inference_matches_torch(data) -> None:
    t = torch.tensor(data)
    p = pyaten.tensor(data)
    assert name(p.dtype) == name(t.dtype)
    assert p.shape == tuple(t.shape)
    assert p.tolist() == t.tolist()


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_tensor_with_dtype(dtype) -> None:
    data = [[0, 1.5, 2.25], [3, 100.75, 0.5]]
    t = torch.tensor(data, dtype=getattr(torch, dtype))
    p = pyaten.tensor(data, dtype=getattr(pyaten, dtype))
    assert p.dtype is getattr(pyaten, dtype)
    assert p.tolist() == t.tolist()


RAGGED = [[1, [2]], [[1, 2], [3]], [[1, 2], 3], [1, "a"], [[1], [2, 3]], [None], [2**63]]
RANGE = [
    ([300], "uint8"),
    ([-1], "uint8"),
    ([-255], "uint8"),
    ([-256], "uint8"),
    ([-2.25], "uint8"),
    ([300.5], "int8"),
    ([2**40], "int32"),
    ([1e300], "float32"),
    ([1e300], "int64"),
    ([float("nan")], "int64"),
    ([1 + 1j], "float32"),
    ([True, 2.5], "bool"),
    ([2.9, -2.9], "int16"),
    ([2**63], "float32"),
    ([2**64], "uint8"),
    ([-(2**63) - 1], "bool"),
    ([2**63], "int64"),
]


@pytest.mark.parametrize("data,dtype", RANGE, ids=range(len(RANGE)))
def test_tensor_value_range_matches_torch(data, dtype) -> None:
    try:
        t = torch.tensor(data, dtype=getattr(torch, dtype))
    except (RuntimeError, TypeError, ValueError) as exc:
        with pytest.raises(type(exc)) as info:
            pyaten.tensor(data, dtype=getattr(pyaten, dtype))
        assert str(info.value) == str(exc)
        return
    assert pyaten.tensor(data, dtype=getattr(pyaten, dtype)).tolist() == t.tolist()


@pytest.mark.parametrize("data", RAGGED, ids=range(len(RAGGED)))
def test_tensor_errors_match_torch(data) -> None:
    same_error(lambda: torch.tensor(data), lambda: pyaten.tensor(data))


def test_tensor_requires_grad_and_device() -> None:
    p = pyaten.tensor([1.0, 2.0], requires_grad=True)
    assert p.requires_grad and p.is_leaf and p.grad is None and p.grad_fn is None
    same_error(
        lambda: torch.tensor([1, 2], requires_grad=True),
        lambda: pyaten.tensor([1, 2], requires_grad=True),
    )
    m = pyaten.tensor([1.0, 2.0], device="meta")
    assert m.is_meta and m.shape == (2,) and m.untyped_storage().data is None


# ---- NumPy -------------------------------------------------------------------------------


def test_from_numpy_shares_memory_both_ways() -> None:
    a = np.arange(12.0).reshape(3, 4)[:, ::2]
    p = pyaten.from_numpy(a)
    t = torch.from_numpy(a)
    assert p.stride() == t.stride() and p.shape == tuple(t.shape)
    a[0, 0] = 42
    assert p.tolist() == t.tolist()
    p.numpy()[1, 1] = -1
    assert a[1, 1] == -1
    assert np.shares_memory(np.asarray(p), a)


def test_from_numpy_errors_match_torch() -> None:
    for bad in (np.arange(4.0)[::-1], np.zeros(2, dtype=">f4")):
        same_error(lambda b=bad: torch.from_numpy(b), lambda b=bad: pyaten.from_numpy(b))


def test_numpy_refusals_match_torch() -> None:
    same_error(
        lambda: torch.zeros(2, requires_grad=True).numpy(),
        lambda: pyaten.tensor([0.0, 0.0], requires_grad=True).numpy(),
    )
    same_error(
        lambda: torch.zeros(2, device="meta").numpy(),
        lambda: empty_tensor((2,), pyaten.float32, pyaten.device("meta")).numpy(),
    )


# ---- Python conversions -------------------------------------------------------------------

CONVERSIONS = [
    ("item", lambda x: x.item()),
    ("bool", bool),
    ("int", int),
    ("float", float),
    ("index", lambda x: [10, 20, 30][x]),
    ("len", len),
    ("iter", lambda x: [v.tolist() for v in x]),
    ("complex", complex),
]

VALUES = [[2.5], [[3]], 7, [True], [], [1, 2], 0.0, [[1.5, 2.5]], 1 + 2j]


@pytest.mark.parametrize("what,fn", CONVERSIONS, ids=[c[0] for c in CONVERSIONS])
@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_conversions_match_torch(what, fn, value) -> None:
    t = torch.tensor(value)
    p = pyaten.tensor(value)
    try:
        expected = fn(t)
    except Exception as exc:  # noqa: BLE001 - mirroring whatever torch raises
        with pytest.raises(type(exc)) as info:
            fn(p)
        assert str(info.value) == str(exc)
        return
    assert fn(p) == expected


def test_metadata_accessors_match_torch() -> None:
    t = torch.zeros(2, 3, 4).permute(2, 0, 1)[1:]
    base = pyaten.tensor(np.zeros((2, 3, 4), np.float32))
    p = as_strided_view(base, tuple(t.shape), t.stride(), t.storage_offset())
    assert p.size() == t.size() and p.stride() == t.stride()
    assert repr(p.shape) == repr(t.shape).replace("torch", "pyaten")
    for d in range(-3, 3):
        assert p.size(d) == t.size(d) and p.stride(d) == t.stride(d)
    assert p.dim() == t.dim() and p.numel() == t.numel() and p.ndim == t.ndim
    assert p.is_contiguous() == t.is_contiguous()
    assert p.storage_offset() == t.storage_offset()
    assert p.element_size() == t.element_size() and p.nbytes == t.nbytes
    same_error(lambda: t.size(3), lambda: p.size(3))
    same_error(lambda: torch.tensor(1.0).size(0), lambda: pyaten.tensor(1.0).size(0))
    assert p.get_device() == t.get_device() and p.is_cpu and not p.is_meta


@pytest.mark.parametrize(
    "sizes,strides",
    [
        ((2, 3), (3, 1)),
        ((2, 3), (1, 2)),
        ((1, 3), (7, 1)),
        ((3, 1), (1, 9)),
        ((0, 3), (5, 7)),
        ((2, 2), (0, 1)),
        ((2, 3, 4, 5), (60, 1, 15, 3)),
        ((4,), (2,)),
    ],
)
def test_contiguity_matches_torch(sizes, strides) -> None:
    t = torch.empty(200).as_strided(sizes, strides)
    p = as_strided_view(pyaten.tensor(np.zeros(200, np.float32)), sizes, strides, 0)
    assert p.is_contiguous() == t.is_contiguous()
    assert p.is_contiguous(pyaten.channels_last) == t.is_contiguous(
        memory_format=torch.channels_last
    )
    assert (
        p.is_non_overlapping_and_dense()
        == torch._prims_common.is_non_overlapping_and_dense_or_false(t)
    )


# ---- views, version counter, resize --------------------------------------------------------


def test_views_share_storage_and_version_counter() -> None:
    base = pyaten.tensor([[1.0, 2.0], [3.0, 4.0]])
    row = select_view(base, 0, 1)
    col = as_strided_view(row, (2,), (2,), 0)
    assert row._base is base and col._base is base
    row.numpy()[0] = 30.0
    assert base.tolist() == [[1.0, 2.0], [30.0, 4.0]] and col.tolist() == [1.0, 30.0]
    assert base._version == 0
    col._bump_version()
    assert base._version == row._version == 1
    detached = base.data
    assert detached._version == 0 and detached.untyped_storage() is base.untyped_storage()


def test_resize_grows_storage_and_views_see_new_bytes() -> None:
    t = pyaten.tensor([1.0, 2.0])
    alias = as_strided_view(t, (2,), (1,), 0)
    alias.numpy()  # cache a NumPy view of the old buffer
    resize_tensor_(t, (3, 2))
    assert t.shape == (3, 2) and t.stride() == (2, 1) and t.untyped_storage().nbytes == 24
    t.numpy()[0, 0] = 9.0
    assert alias.tolist() == [9.0, 2.0]
    frozen = pyaten.from_numpy(np.zeros(2))
    same_error(
        lambda: torch.from_numpy(np.zeros(2)).resize_(5),
        lambda: resize_tensor_(frozen, (5,)),
    )


def test_requires_grad_rules_match_torch() -> None:
    same_error(
        lambda: torch.tensor(1).requires_grad_(),
        lambda: pyaten.tensor(1).requires_grad_(),
    )

    class _Node:
        def name(self) -> str:
            return "MulBackward0"

    t = torch.tensor([1.0], requires_grad=True) * 2
    p = pyaten.tensor([1.0])
    p.grad_fn = _Node()
    same_error(
        lambda: setattr(t, "requires_grad", False), lambda: setattr(p, "requires_grad", False)
    )
    assert not p.is_leaf


# ---- devices -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["cpu", "meta", "cuda:0", "cuda", "cpu:1", "foo", "cuda:-1", "cuda:x", "CPU"]
)
def test_device_parsing_matches_torch(text) -> None:
    try:
        t = torch.device(text)
    except RuntimeError as exc:
        with pytest.raises(RuntimeError) as info:
            pyaten.device(text)
        assert str(info.value) == str(exc)
        return
    p = pyaten.device(text)
    assert (p.type, p.index, str(p), repr(p)) == (t.type, t.index, str(t), repr(t))
    assert p == pyaten.device(p.type, p.index) and hash(p) == hash(pyaten.device(text))


# ---- generators ---------------------------------------------------------------------------


def test_generator_seeding_and_state() -> None:
    g = pyaten.Generator()
    assert g.initial_seed() == torch.Generator().initial_seed()
    assert g.manual_seed(3) is g and g.initial_seed() == 3
    first = g.numpy_generator.random(4)
    state = g.get_state()
    assert state.dtype is pyaten.uint8
    second = g.numpy_generator.random(4)
    g.set_state(state)
    assert np.array_equal(g.numpy_generator.random(4), second)
    g.manual_seed(3)
    assert np.array_equal(g.numpy_generator.random(4), first)
    g.manual_seed(-1)
    assert g.initial_seed() == torch.Generator().manual_seed(-1).initial_seed()
    same_error(
        lambda: torch.Generator().manual_seed(2**64), lambda: pyaten.Generator().manual_seed(2**64)
    )
    same_error(
        lambda: torch.Generator().manual_seed(1.5), lambda: pyaten.Generator().manual_seed(1.5)
    )
    assert pyaten.manual_seed(7) is pyaten.default_generator
    assert pyaten.initial_seed() == 7
    with pytest.raises(TypeError, match="RNG state"):
        g.set_state(pyaten.tensor([1.0]))


# ---- DLPack ------------------------------------------------------------------------------

DL_DTYPES = [getattr(torch, name) for name in DTYPE_NAMES]


@pytest.mark.parametrize("dtype", DL_DTYPES, ids=str)
def test_dlpack_round_trip_with_torch(dtype) -> None:
    t = (torch.arange(12).reshape(3, 4).t()[1:] * 3 - 5).to(dtype)
    p = pyaten.from_dlpack(t)
    assert p.data_ptr() == t.data_ptr() and p.stride() == t.stride()
    assert name(p.dtype) == name(t.dtype) and p.tolist() == t.tolist()
    back = torch.from_dlpack(p)
    assert back.data_ptr() == t.data_ptr() and back.stride() == t.stride()
    assert back.dtype == t.dtype and torch.equal(back, t)


def test_dlpack_round_trip_with_numpy_and_writes_through() -> None:
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    p = pyaten.from_dlpack(a)
    p.numpy()[0, 0] = 100
    assert a[0, 0] == 100
    back = np.from_dlpack(p)
    assert np.shares_memory(back, a)
    t = torch.zeros(3)
    pyaten.from_dlpack(t).numpy()[1] = 5.0
    assert t.tolist() == [0.0, 5.0, 0.0]
    assert p.__dlpack_device__() == (1, 0)


def test_dlpack_refuses_requires_grad_like_torch() -> None:
    same_error(
        lambda: torch.zeros(2, requires_grad=True).__dlpack__(),
        lambda: pyaten.tensor([0.0, 0.0], requires_grad=True).__dlpack__(),
    )


def test_pickle_dtype_and_device() -> None:
    assert pickle.loads(pickle.dumps(pyaten.bfloat16)) is pyaten.bfloat16
    assert pickle.loads(pickle.dumps(pyaten.device("cuda:1"))) == pyaten.device("cuda:1")
    assert math.isclose(pyaten.tensor([0.1]).item(), 0.1, rel_tol=1e-7)


def test_deepcopy_and_pickle() -> None:
    import copy

    t = pyaten.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    view = as_strided_view(t, (2,), (2,), 0)
    t_copy, view_copy = copy.deepcopy([t, view])
    t_copy.numpy(force=True)[0, 0] = 9.0
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert view_copy.tolist() == [9.0, 3.0] and t_copy.requires_grad
    restored = pickle.loads(pickle.dumps(view))
    assert restored.tolist() == [1.0, 3.0] and restored.dtype is pyaten.float32

    class _Node:
        def name(self) -> str:
            return "MulBackward0"

    nonleaf = pyaten.tensor([1.0])
    nonleaf.grad_fn = _Node()
    same_error(
        lambda: copy.deepcopy(torch.tensor([1.0], requires_grad=True) * 2),
        lambda: copy.deepcopy(nonleaf),
    )


_leaf = st.one_of(
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.complex_numbers(max_magnitude=1e3, allow_nan=False),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(_leaf, min_size=3, max_size=3), min_size=0, max_size=4),
    st.sampled_from([None, "int64", "float64", "bool", "complex128", "int32", "float16"]),
)
def test_tensor_from_random_nested_lists(data, dtype) -> None:
    td = None if dtype is None else getattr(torch, dtype)
    pd = None if dtype is None else getattr(pyaten, dtype)
    try:
        t = torch.tensor(data, dtype=td)
    except (RuntimeError, TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            pyaten.tensor(data, dtype=pd)
        return
    p = pyaten.tensor(data, dtype=pd)
    assert name(p.dtype) == name(t.dtype) and p.shape == tuple(t.shape)
    assert p.tolist() == t.tolist()


def test_from_numpy_zero_dim_and_readonly_share_memory() -> None:
    a = np.array(5.0)
    t = pyaten.from_numpy(a)
    a[()] = 7.0
    assert t.item() == 7.0 == torch.from_numpy(a).item()
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        frozen = pyaten.from_numpy(ro)
    assert np.shares_memory(frozen.numpy(), ro)
    assert pyaten.tensor(torch.tensor([[1, 2]])).tolist() == [[1, 2]]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 12)), min_size=0, max_size=5),
)
def test_layout_predicates_match_torch_on_random_strides(dims) -> None:
    sizes = tuple(d[0] for d in dims)
    strides = tuple(d[1] for d in dims)
    t = (
        torch.empty(0).as_strided(sizes, strides)
        if 0 in sizes
        else torch.empty(1 + sum((s - 1) * st_ for s, st_ in zip(sizes, strides))).as_strided(
            sizes, strides
        )
    )
    p = as_strided_view(pyaten.tensor(np.zeros(200, np.float32)), sizes, strides, 0)
    assert p.is_contiguous() == t.is_contiguous()
    assert (
        p.is_non_overlapping_and_dense()
        == torch._prims_common.is_non_overlapping_and_dense_or_false(t)
    )
    for fmt in ("channels_last", "channels_last_3d"):
        if len(sizes) == (4 if fmt == "channels_last" else 5):
            assert p.is_contiguous(getattr(pyaten, fmt)) == t.is_contiguous(
                memory_format=getattr(torch, fmt)
            )


def test_plugin_device_tensors_in_a_fresh_process() -> None:
    # Registering a backend name is process-global, so this runs in its own interpreter.
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import numpy as np
        import pyaten
        from pyaten.core.storage import register_allocator
        from pyaten.dispatch.keys import backend_keyset_bits, register_backend_name

        register_backend_name("npu")
        sizes = []
        register_allocator("npu", lambda n: (sizes.append(n), np.zeros(n, np.uint8))[1])
        t = pyaten.tensor([1.0, 2.0], device="npu:0")
        assert t._keyset == backend_keyset_bits("npu") and sizes == [8]
        assert repr(t) == "tensor([1., 2.], device='npu:0')", repr(t)
        assert t.tolist() == [1.0, 2.0] and pyaten.Generator("npu").device.type == "npu"
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "ok", result.stderr


def test_legacy_constructor_matches_torch() -> None:
    for args in [([1, 2],), ((2, 3),), (2, 3), (), ([[1.5]],)]:
        t = torch.Tensor(*args)
        p = pyaten.Tensor(*args)
        assert p.shape == tuple(t.shape) and name(p.dtype) == name(t.dtype)
        if t.numel() and args and isinstance(args[0], (list, tuple)):
            assert p.tolist() == t.tolist()


@pytest.mark.parametrize("new_shape", [(3, 2), (2, 3), (4, 4), (0,), (1,)])
def test_resize_matches_torch(new_shape) -> None:
    t = torch.arange(6.0).reshape(2, 3).t()
    p = mirror_like(t)
    t.resize_(new_shape)
    resize_tensor_(p, new_shape)
    assert p.shape == tuple(t.shape) and p.stride() == t.stride()
    assert p.untyped_storage().nbytes >= t.untyped_storage().nbytes() or t.numel() == 0
    if t.numel() <= 6:
        assert p.tolist() == t.tolist()


def mirror_like(t: torch.Tensor) -> pyaten.Tensor:
    base = pyaten.tensor(t.untyped_storage().tolist(), dtype=pyaten.uint8)
    values = pyaten.tensor(np.frombuffer(bytes(base.tolist()), dtype=np.float32))
    return as_strided_view(values, tuple(t.shape), t.stride(), t.storage_offset())


def test_make_subclass_matches_torch() -> None:
    class Param(pyaten.Tensor):
        pass

    class TParam(torch.Tensor):
        pass

    data = pyaten.tensor([1.0, 2.0])
    p = pyaten.Tensor._make_subclass(Param, data, True)
    tp = torch.Tensor._make_subclass(TParam, torch.tensor([1.0, 2.0]), True)
    assert type(p) is Param and p.requires_grad == tp.requires_grad and p.is_leaf
    assert p.data_ptr() == data.data_ptr()
    data._bump_version()
    assert p._version == 1
    assert repr(p) == "Param([1., 2.], requires_grad=True)"
    same_error(
        lambda: torch.Tensor._make_subclass(TParam, torch.tensor([1]), True),
        lambda: pyaten.Tensor._make_subclass(Param, pyaten.tensor([1]), True),
    )


GRADS = [
    ((3,), "float32", "cpu"),
    ((2,), "float64", "cpu"),
    ((2,), "float32", "meta"),
    ((3,), "float64", "meta"),
    ((2,), "int64", "cpu"),
    ((2,), "bfloat16", "cpu"),
    ((2,), "float32", "cpu"),
]


@pytest.mark.parametrize("shape,dtype,device", GRADS)
def test_grad_assignment_checks_match_torch(shape, dtype, device) -> None:
    t = torch.zeros(2, requires_grad=True)
    p = pyaten.tensor([0.0, 0.0], requires_grad=True)
    tg = torch.zeros(shape, dtype=getattr(torch, dtype), device=device)
    pg = empty_tensor(shape, getattr(pyaten, dtype), pyaten.device(device))
    try:
        t.grad = tg
    except RuntimeError as exc:
        with pytest.raises(RuntimeError) as info:
            p.grad = pg
        assert str(info.value) == str(exc)
        return
    p.grad = pg
    assert p.grad is pg
    del p.grad
    assert p.grad is None
    same_error(lambda: setattr(t, "grad", 5), lambda: setattr(p, "grad", 5))


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3), min_size=1, max_size=3).filter(lambda s: 0 in s),
    strides=st.lists(st.integers(0, 4), min_size=3, max_size=3),
    offset=st.integers(0, 20),
)
def test_empty_view_with_offset_past_storage_end(sizes, strides, offset):
    # An empty view needs no storage, so its offset may point anywhere (torch allows it).
    strides = strides[: len(sizes)]
    t = torch.ones(3).as_strided(sizes, strides, offset)
    p = pyaten.ones(3).as_strided(sizes, strides, offset)
    assert p.storage_offset() == t.storage_offset()
    assert p.numpy().shape == t.numpy().shape
    assert p.tolist() == t.tolist()
    for fn in (lambda x: x.clone(), lambda x: x + 1, lambda x: x.sum(), lambda x: x.contiguous()):
        r_t, r_p = fn(t), fn(p)
        assert tuple(r_p.shape) == tuple(r_t.shape) and r_p.tolist() == r_t.tolist()


@pytest.mark.parametrize("grad_dtype", ["float64", "int64", "float16", "complex64"])
def test_grad_assignment_with_wrong_dtype_matches_torch(grad_dtype):
    messages = []
    for lib in (pyaten, torch):
        t = lib.ones(2)
        with pytest.raises(RuntimeError) as info:
            t.grad = lib.ones(2, dtype=getattr(lib, grad_dtype))
        messages.append(str(info.value))
    assert messages[0] == messages[1]
