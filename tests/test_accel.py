"""The compiled accelerator (pyaten/core/accel.py, Note: the accelerator) against its pure-Python
reference: `new_row_major`, and the structured fast functions of `fastpath.unary`/`binary`,
compared slot by slot on the same inputs (values, dtype, strides, versions, storage sharing,
declining with None, errors); and that it loaded where it could be built."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
from pyaten.core import accel, broadcast
from pyaten.core import dtypes as dt
from pyaten.core.device import CPU
from pyaten.core.stub import DispatchStub
from pyaten.core.tensor import Tensor
from pyaten.native import fastpath
from pyaten.native.runtime import wrapped_number

needs_accel = pytest.mark.skipif(accel.ACCEL is None, reason="the accelerator is not loaded")

_DTYPES = [d for d in dt.ALL_DTYPES]
_SHAPES = [(), (0,), (1,), (4, 4), (2, 0, 3), (3, 1, 2), (1, 1, 1, 5)]


def _can_build() -> bool:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    header = os.path.join(sysconfig.get_paths()["include"], "Python.h")
    return shutil.which(compiler) is not None and os.path.exists(header)


def test_the_accelerator_loaded_where_it_can_be_built():
    if accel.DISABLED:
        assert accel.ACCEL is None
        pytest.skip("PYATEN_NO_ACCEL is set: the pure-Python path is under test")
    if not _can_build():
        pytest.skip("no C compiler or Python headers: the pure-Python path is expected")
    assert accel.ACCEL is not None, (
        f"pyaten._accel did not load ({accel.LOAD_ERROR}); rebuild it with "
        "`pip install -e . --no-deps --no-build-isolation`"
    )
    assert broadcast.new_row_major is accel.ACCEL.new_row_major
    assert isinstance(fastpath.REGISTERED["add.Tensor"], accel.ACCEL.FastFunction)


def test_no_accel_keeps_the_pure_python_path():
    code = (
        "import pyaten, types\n"
        "from pyaten.core import accel, broadcast\n"
        "from pyaten.native import fastpath\n"
        "assert accel.ACCEL is None and accel.DISABLED\n"
        "assert broadcast.new_row_major is broadcast.new_row_major_reference\n"
        "assert all(isinstance(f, types.FunctionType) for f in fastpath.REGISTERED.values())\n"
        "a = pyaten.ones(4, 4)\n"
        "assert (a + a).tolist() == [[2.0] * 4] * 4\n"
    )
    env = {**os.environ, "PYATEN_NO_ACCEL": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# --- new_row_major --------------------------------------------------------------------------

_PLAIN_SLOTS = ("_sizes", "_strides", "_offset", "_dtype", "_device", "_keyset", "_base",
                "_requires_grad", "grad_fn", "_grad", "_hooks", "retains_grad", "output_nr",
                "_wrapped_number", "_grad_acc", "_fw_grad")


def assert_same_tensor_layout(ours: Tensor, ref: Tensor) -> None:
    """Two fresh tensors are alike in every slot; their NumPy views alike in every property."""
    assert type(ours) is type(ref)
    assert (ours._vc is None) == (ref._vc is None) and ours._version == ref._version
    for name in _PLAIN_SLOTS:
        assert getattr(ours, name) == getattr(ref, name), name
        assert type(getattr(ours, name)) is type(getattr(ref, name)), name
    s, r = ours._storage, ref._storage
    assert type(s) is type(r)
    assert (s.nbytes, s.device, s.resizable) == (r.nbytes, r.device, r.resizable)
    assert type(s.nbytes) is int
    if r.data is None:  # Meta: no bytes
        assert s.data is None and ours._np is None
        return
    assert s.data.dtype == r.data.dtype and s.data.shape == r.data.shape
    if ref._np is None:
        assert ours._np is None
        return
    view, expected = ours._np, ref._np
    assert view.base is s.data
    assert (view.shape, view.strides, view.dtype) == (expected.shape, expected.strides,
                                                      expected.dtype)
    assert view.flags == expected.flags
    assert ours.__dict__ == {}


@needs_accel
@pytest.mark.parametrize("dtype", _DTYPES, ids=str)
@pytest.mark.parametrize("sizes", _SHAPES, ids=str)
def test_new_row_major_matches_the_reference(dtype, sizes):
    ours = broadcast.new_row_major(sizes, dtype, CPU)
    ref = broadcast.new_row_major_reference(sizes, dtype, CPU)
    assert ours._vc is None  # made on first use, as the reference's
    assert_same_tensor_layout(ours, ref)
    ours._numpy()[...] = 0  # the view writes the storage's bytes
    assert not ours._storage.data.any()


@needs_accel
def test_new_row_major_other_devices_and_errors_go_to_the_reference():
    meta = pyaten.device("meta")
    ours = broadcast.new_row_major((2, 3), dt.float32, meta)
    assert ours.device == meta and ours._storage.data is None and ours.stride() == (3, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reference's once-only ComplexHalf warning
        half = broadcast.new_row_major((2,), dt.complex32, CPU)
    assert half.dtype is dt.complex32 and half._numpy().shape == (2,)
    with pytest.raises(RuntimeError) as ours_error:
        broadcast.new_row_major((2**40, 2**40), dt.float32, CPU)
    with pytest.raises(RuntimeError) as ref_error:
        broadcast.new_row_major_reference((2**40, 2**40), dt.float32, CPU)
    assert str(ours_error.value) == str(ref_error.value)
    with pytest.raises(TypeError):
        broadcast.new_row_major((2,), dt.float32)


@needs_accel
def test_new_row_major_results_work_as_tensors():
    t = broadcast.new_row_major((2, 3), dt.float32, CPU)
    t.fill_(1.5)
    assert t._version == 1
    assert (t * 2).tolist() == [[3.0] * 3] * 2
    assert t.t().is_contiguous() is False and t.view(6).tolist() == [1.5] * 6
    t.requires_grad_(True)
    (t * t).sum().backward()
    assert t.grad.tolist() == [[3.0] * 3] * 2


# --- the fast functions ---------------------------------------------------------------------


def _loop(x, out):  # a unary loop that is not a ufunc (as relu's)
    return np.negative(x, out=out)


_STUB = DispatchStub("accel_test_stub")
_STUB.register("cpu")(lambda op: None)

_UNARY = {
    "exp": (np.exp, _STUB, fastpath.FLOATS | fastpath.COMPLEX, None),
    "neg_loop": (_loop, None, fastpath.DIRECT - {dt.uint8}, None),
    "isnan": (np.isnan, _STUB, fastpath.INEXACT, dt.bool),
}
_BINARY = {
    "add": (np.add, _STUB, fastpath.DIRECT, None, True),
    "mul": (np.multiply, _STUB, fastpath.DIRECT, None, False),
    "lt": (np.less, _STUB, fastpath.DIRECT, dt.bool, False),
    "div": (np.true_divide, _STUB, fastpath.FLOATS | fastpath.COMPLEX, None, False),
}


def _pair_unary(name):
    fn, stub, dtypes, out_dtype = _UNARY[name]
    kernels = stub._kernels if stub is not None else {}
    ours = fastpath.unary(fn, stub, dtypes, out_dtype)
    ref = fastpath.unary_reference(fn, kernels, kernels.get("cpu"), dtypes & fastpath.DIRECT,
                                   out_dtype)
    return ours, ref


def _pair_binary(name):
    fn, stub, dtypes, out_dtype, alpha = _BINARY[name]
    ours = fastpath.binary(fn, stub, dtypes, out_dtype, alpha)
    ref = fastpath.binary_reference(fn, stub._kernels, stub._kernels.get("cpu"),
                                    dtypes & fastpath.DIRECT, out_dtype)
    if alpha:
        ref = tuple(fastpath._alpha_one(f) for f in ref)
    return ours, ref


class _Sub(Tensor):
    pass


def _tensor(values: np.ndarray, dtype, layout: str) -> Tensor:
    """A tensor of `values` in `layout`: row-major, transposed, a row-major-ordered slice,
    expanded (stride 0), offset, a subclass instance, requiring grad, conjugated."""
    base = pyaten.tensor(values.tolist(), dtype=dtype) if values.ndim else pyaten.tensor(
        values.item(), dtype=dtype)
    if layout == "transposed" and base.dim() == 2:
        return base.t().contiguous().t()
    if layout == "sliced" and base.dim() >= 1:
        wide = pyaten.cat([base, base], dim=-1)
        return wide[..., : base.shape[-1]]
    if layout == "expanded" and base.dim() >= 1:
        return base[..., :1].expand(*base.shape)
    if layout == "offset" and base.dim() >= 1:
        return pyaten.cat([base.reshape(-1)[:1], base.reshape(-1)])[1:].view(base.shape)
    if layout == "subclass":
        return base.as_subclass(_Sub)
    if layout == "grad" and (dtype.is_floating_point or dtype.is_complex):
        return base.requires_grad_(True)
    if layout == "conj" and dtype.is_complex:
        return base.conj()
    return base


_LAYOUTS = ["plain", "transposed", "sliced", "expanded", "offset", "subclass", "grad", "conj"]
_ALL = [d for d in dt.ALL_DTYPES if d is not dt.complex32]


def _values(draw_seed: int, shape: tuple, dtype) -> np.ndarray:
    rng = np.random.default_rng(draw_seed)
    raw = rng.normal(size=shape) * 5
    if dtype is dt.bool:
        return raw > 0
    if dtype.is_complex:
        return raw + 1j * rng.normal(size=shape)
    if not dtype.is_floating_point:
        return np.abs(raw).astype(np.int64) % 100
    return raw


def _snapshot(t: Tensor):
    return (t._version, t._numpy().copy() if t._storage.data is not None else None)


def _compare(ours_fn, ref_fn, make_args):
    """Run both functions on equal, separately made inputs; compare everything."""
    ours_args, ref_args = make_args(), make_args()
    try:
        ref = ref_fn(*ref_args)
    except Exception as error:  # noqa: BLE001 - the same error class is the requirement
        with pytest.raises(type(error)):
            ours_fn(*ours_args)
        return
    ours = ours_fn(*ours_args)
    if ref is None:
        assert ours is None
        for a, b in zip(ours_args, ref_args):
            if isinstance(a, Tensor):  # declining touches nothing
                assert a._version == b._version
        return
    assert ours is not None
    for a, b in zip(ours_args, ref_args):
        if isinstance(a, Tensor):
            assert a._version == b._version
            np.testing.assert_array_equal(a._numpy(), b._numpy())
            assert a._numpy().tobytes() == b._numpy().tobytes()
    inplace_ref = [i for i, a in enumerate(ref_args) if a is ref]
    inplace_ours = [i for i, a in enumerate(ours_args) if a is ours]
    assert inplace_ref == inplace_ours  # in place: returns self, its storage shared
    assert ours.dtype is ref.dtype and ours.shape == ref.shape
    assert ours.stride() == ref.stride() and ours.storage_offset() == ref.storage_offset()
    assert type(ours) is type(ref) and ours._keyset == ref._keyset
    assert ours.requires_grad == ref.requires_grad and ours._version == ref._version
    np.testing.assert_array_equal(ours._numpy(), ref._numpy())
    assert ours._numpy().tobytes() == ref._numpy().tobytes()  # signed zeros, NaN bits
    if not inplace_ref:
        assert_same_tensor_layout(ours, ref)


@needs_accel
@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(_UNARY)),
    dtype=st.sampled_from(_ALL),
    shape=st.sampled_from([(), (3,), (2, 3), (2, 1, 4)]),
    layout=st.sampled_from(_LAYOUTS),
    inplace=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_unary_fast_functions_match_the_reference(name, dtype, shape, layout, inplace, seed):
    (functional, inplace_fn), (ref_functional, ref_inplace) = _pair_unary(name)
    ours, ref = (inplace_fn, ref_inplace) if inplace else (functional, ref_functional)
    values = _values(seed, shape, dtype)
    _compare(ours, ref, lambda: (_tensor(values, dtype, layout),))


def _operand(kind: str, values, dtype, layout):
    if kind == "tensor":
        return _tensor(values, dtype, layout)
    if kind == "same":
        return _tensor(values, dtype, "plain")
    if kind == "float":
        return wrapped_number(2.5)
    if kind == "int":
        return wrapped_number(3)
    if kind == "bool":
        return wrapped_number(True)
    if kind == "other dtype":
        other_dtype = dt.float64 if dtype is not dt.float64 else dt.float32
        return _tensor(np.real(values).astype(np.float64), other_dtype, "plain")
    if kind == "broadcast":
        return pyaten.ones(1, dtype=dtype)
    return 2.5  # a plain Python number: not a tensor


@needs_accel
@settings(max_examples=120, deadline=None)
@given(
    name=st.sampled_from(sorted(_BINARY)),
    dtype=st.sampled_from(_ALL),
    shape=st.sampled_from([(), (3,), (2, 3), (2, 1, 4)]),
    layout=st.sampled_from(_LAYOUTS),
    other=st.sampled_from(["tensor", "same", "float", "int", "bool", "other dtype",
                           "broadcast", "number"]),
    inplace=st.booleans(),
    alpha=st.sampled_from([1, 2, True, 1.0]),
    seed=st.integers(0, 2**16),
)
def test_binary_fast_functions_match_the_reference(name, dtype, shape, layout, other, inplace,
                                                    alpha, seed):
    (functional, inplace_fn), (ref_functional, ref_inplace) = _pair_binary(name)
    ours, ref = (inplace_fn, ref_inplace) if inplace else (functional, ref_functional)
    values = _values(seed, shape, dtype)
    takes_alpha = _BINARY[name][4]

    def make():
        self = _tensor(values, dtype, layout)
        args = (self, _operand(other, values, dtype, layout))
        return args + (alpha,) if takes_alpha else args

    _compare(ours, ref, make)


@needs_accel
def test_fast_functions_in_place_on_itself_and_on_a_shared_storage():
    (_, ours), (_, ref) = _pair_binary("mul")
    for fn in (ours, ref):
        t = pyaten.arange(6, dtype=pyaten.float32)
        assert fn(t, t) is t and t.tolist() == [0.0, 1.0, 4.0, 9.0, 16.0, 25.0]
        assert t._version == 1
        assert fn(t[:3], t[3:]) is None  # one storage: the general path's overlap rules
        view = t.view(2, 3)
        assert fn(view, pyaten.ones(2, 3)) is view and t._version == 2  # the shared counter


@needs_accel
def test_fast_functions_honour_a_replaced_stub_kernel():
    stub = DispatchStub("accel_test_replaced")
    stub.register("cpu")(lambda op: None)
    functional, _ = fastpath.unary(np.exp, stub, fastpath.FLOATS)
    add, _ = fastpath.binary(np.add, stub, fastpath.FLOATS)
    a = pyaten.ones(3)
    assert functional(a) is not None and add(a, a) is not None
    stub.register("cpu")(lambda op: None)  # another loop now: the general path's
    assert functional(a) is None and add(a, a) is None


@needs_accel
def test_fast_functions_errors_and_quiet_floating_point():
    (functional, _), _ = _pair_binary("div")
    with pytest.raises(TypeError):
        functional(pyaten.ones(2))
    with pytest.raises(TypeError):
        functional(pyaten.ones(2), pyaten.ones(2), out=None)
    zero = pyaten.zeros(2)
    with np.errstate(all="raise"):  # pyaten's results are silent, as PyTorch's
        result = functional(pyaten.ones(2), zero)
    assert result.tolist() == [float("inf")] * 2
    assert functional.__name__ == np.true_divide.__name__ and "divide" in repr(functional)

    def failing(x, out):
        raise ValueError("boom")

    broken, _ = fastpath.unary(failing, None, fastpath.FLOATS)
    with pytest.raises(ValueError, match="boom"):
        broken(pyaten.ones(2))
    assert pyaten.exp(pyaten.zeros(2)).tolist() == [1.0, 1.0]  # the quiet context was left


@needs_accel
def test_registered_fast_functions_are_the_accelerated_ones():
    c_functions = [n for n, f in fastpath.REGISTERED.items()
                   if isinstance(f, accel.ACCEL.FastFunction)]
    for name in ("add.Tensor", "add_.Tensor", "mul.Tensor", "exp", "exp_", "sigmoid", "lt.Tensor"):
        assert name in c_functions
    a = pyaten.tensor([[1.0, -2.0], [3.0, 4.0]])
    with pyaten.explain() as trace:  # tracing goes the general way, seeing every step
        result = pyaten.add(a, a)
    assert "aten::add.Tensor" in str(trace) and "AutogradCPU" in str(trace)
    assert result.tolist() == [[2.0, -4.0], [6.0, 8.0]]


# --- Tensor._make and Tensor._make_view -----------------------------------------------------


@needs_accel
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_make_matches_the_reference(device):
    from pyaten.core.tensor import make_reference

    source = pyaten.ones(2, 3, device=device)
    args = (source._storage, (3, 2), (1, 3), 0, dt.float64, source.device)
    ours, ref = Tensor._make(*args), make_reference(*args)
    assert ours._vc is None and ref._vc is None and ours._storage is ref._storage
    assert ours._np is None and ours.__dict__ == {}
    assert_same_tensor_layout(ours, ref)
    with pytest.raises(TypeError):
        Tensor._make(*args[:5])
    with pytest.raises(AttributeError):
        Tensor._make(*args[:5], "not a device")


@needs_accel
def test_make_view_matches_the_reference():
    from pyaten.core.tensor import make_view_reference

    for make_base in (lambda: pyaten.arange(6.0), lambda: pyaten.arange(6.0).view(2, 3),
                      lambda: pyaten.arange(6.0).as_subclass(_Sub),
                      lambda: pyaten.tensor([1 + 2j, 3j] * 3).conj(),
                      lambda: pyaten.arange(6.0).requires_grad_(True)):
        base, ref_base = make_base(), make_base()
        ours = Tensor._make_view(base, (3,), (2,), 1)
        ref = make_view_reference(ref_base, (3,), (2,), 1)
        assert type(ours) is type(ref) and ours._keyset == ref._keyset
        assert ours._vc is base._vc and ref._vc is ref_base._vc  # the counter shared
        assert (ours._base is base._base or ours._base is base) and (
            (ours._base is base) == (ref._base is ref_base))
        assert ours.tolist() == ref.tolist() and ours.stride() == ref.stride()
        again = Tensor._make_view(ours, (2,), (2,), 1)  # a view of a view: the root base
        assert again._base is ours._base and again._vc is base._vc
        if not ours.requires_grad:
            ours.add_(1)
        assert base._version == ours._version


@needs_accel
def test_quiet_and_array_match_the_reference():
    assert fastpath.quiet is accel.ACCEL.quiet and fastpath.array is accel.ACCEL.array
    x = np.array([1.0, 0.0, -1.0], np.float32)
    for quiet in (fastpath.quiet, fastpath.quiet_reference):
        with np.errstate(all="raise"):
            assert np.isinf(quiet(np.divide, x, np.float32(0))[:1]).all()
    for run_quiet in (fastpath.run_quiet, fastpath.run_quiet_reference):
        out = np.empty(3, np.float32)
        with np.errstate(all="raise"):
            run_quiet(np.log, x, out=out)
        assert np.isnan(out[2]) and out[1] == -np.inf
    with pytest.raises(TypeError):
        fastpath.quiet()
    with pytest.raises(ValueError, match="operands could not be broadcast"):
        fastpath.quiet(np.add, x, np.ones(2, np.float32))
    assert fastpath.quiet(np.add, x, x).tolist() == [2.0, 0.0, -2.0]  # the context was left
    t = pyaten.arange(4.0).view(2, 2)
    for array in (fastpath.array, fastpath.array_reference):
        view = array(t)
        assert view is t._np and view.base is t._storage.data
    t.t()  # a view; resizing the storage invalidates the cached array
    t._storage.resize_(64)
    assert fastpath.array(t).base is t._storage.data
    with pytest.raises(AttributeError):
        fastpath.array(3)


@needs_accel
def test_a_stale_build_is_reported_not_used():
    code = (
        "import glob, importlib.util, os, sys\n"
        "where = importlib.util.find_spec('pyaten').submodule_search_locations[0]\n"
        "path = glob.glob(os.path.join(where, '_accel*'))[0]\n"
        "spec = importlib.util.spec_from_file_location('pyaten._accel', path)\n"
        "stale = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(stale)\n"
        "stale.VERSION = -1  # as a build of another csrc/accel.c\n"
        "sys.modules['pyaten._accel'] = stale\n"
        "import pyaten\n"
        "from pyaten.core import accel, broadcast\n"
        "assert accel.ACCEL is None and 'rebuild it' in accel.LOAD_ERROR, accel.LOAD_ERROR\n"
        "assert broadcast.new_row_major is broadcast.new_row_major_reference\n"
        "a = pyaten.ones(2)\n"
        "assert (a + a).tolist() == [2.0, 2.0]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
