"""What PyTorch programs reach for besides operators, against torch: legacy tensor types and
`type()` strings, NumPy keyword aliases, NumPy's ufuncs on tensors, threads and settings,
finfo/iinfo, new_tensor/apply_, testing.assert_close, linalg.LinAlgError, pyaten.onnx, the
short dispatcher error and the CLI's width."""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
import pyaten.onnx
import pyaten.testing
from pyaten.cli import main

MODULES = (torch, pyaten)


def _builtin_class(exc: BaseException) -> str:
    # pyaten's ArgumentParseError is a TypeError, torch's _LinAlgError a RuntimeError.
    return next(c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins")


def outcome(fn):
    """("ok", value) or (exception class, message), torch's and pyaten's names made one;
    a tensor's float values rounded to float32's precision (kernels may differ in the ulp)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = fn()
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        text = str(exc).replace("pyaten.core.tensor.Tensor", "torch.Tensor")
        return _builtin_class(exc), text.replace("pyaten.", "torch.")
    if isinstance(value, (torch.Tensor, pyaten.Tensor)):
        values = np.asarray(value.detach().tolist())
        if values.dtype.kind in "fc":
            values = np.round(values.astype(np.complex128 if values.dtype.kind == "c"
                                            else np.float64), 5)
        return "tensor", str(value.dtype).split(".")[-1], tuple(value.shape), values.tolist()
    return "ok", value


def same(call) -> None:
    assert outcome(lambda: call(pyaten)) == outcome(lambda: call(torch))


# -- legacy tensor types --------------------------------------------------------------------

LEGACY = {
    "type_float": lambda m: m.ones(2).type(),
    "type_int8": lambda m: m.ones(2, dtype=m.int8).type(),
    "type_bfloat16": lambda m: m.ones(2, dtype=m.bfloat16).type(),
    "type_bool": lambda m: m.ones(2, dtype=m.bool).type(),
    "type_meta": lambda m: m.ones(2, device="meta").type(),
    "to_legacy_class": lambda m: m.ones(2).type(m.LongTensor).type(),
    "to_legacy_string": lambda m: m.ones(2).type("torch.IntTensor"),
    "to_bad_string": lambda m: m.ones(2).type("float"),
    "construct_sizes": lambda m: tuple(m.FloatTensor(2, 3).shape),
    "construct_size": lambda m: tuple(m.DoubleTensor(m.Size([2, 1])).shape),
    "construct_data": lambda m: m.LongTensor([1.5, 2.0]),
    "construct_empty": lambda m: m.FloatTensor(),
    "construct_bool": lambda m: m.BoolTensor([1, 0]),
    "construct_half": lambda m: m.HalfTensor([1.0]),
    "construct_numpy": lambda m: m.FloatTensor(np.zeros(2)),
    "construct_tensor": lambda m: m.FloatTensor(m.ones(2)),
    "construct_number": lambda m: m.FloatTensor(2.5),
    "construct_meta": lambda m: m.FloatTensor([1.0], device="meta"),
    "isinstance": lambda m: isinstance(m.ones(2), m.FloatTensor),
    "isinstance_other_dtype": lambda m: isinstance(m.ones(2, dtype=m.int64), m.FloatTensor),
    "isinstance_parameter": lambda m: isinstance(m.nn.Parameter(m.ones(1)), m.FloatTensor),
    "isinstance_meta": lambda m: isinstance(m.ones(1, device="meta"), m.FloatTensor),
    "class_repr": lambda m: repr(m.FloatTensor),
    "class_dtype": lambda m: str(m.ShortTensor.dtype).split(".")[-1],
    "class_is_cuda": lambda m: m.ByteTensor.is_cuda,
    "class_name": lambda m: (m.CharTensor.__name__, m.CharTensor.__module__),
    "not_a_tensor_subclass": lambda m: issubclass(m.FloatTensor, m.Tensor),
    "module_type": lambda m: m.nn.Linear(2, 2).type(m.DoubleTensor).weight.dtype == m.float64,
    "storage_nbytes": lambda m: m.ones(2, 3).untyped_storage().nbytes(),
}


@pytest.mark.parametrize("name", sorted(LEGACY))
def test_legacy_tensor_types_as_torch(name: str) -> None:
    same(LEGACY[name])


# -- NumPy keyword aliases ------------------------------------------------------------------

ALIASES = {
    "sum_axis_keepdims": lambda m, t: t.sum(axis=0, keepdims=True),
    "sum_a_axis": lambda m, t: m.sum(a=t, axis=1),
    "cat_axis": lambda m, t: m.cat([t, t], axis=1),
    "stack_axis": lambda m, t: m.stack([t, t], axis=0),
    "argmax_axis": lambda m, t: t.argmax(axis=1),
    "max_axis": lambda m, t: tuple(m.max(t, axis=1)),
    "max_keepdims": lambda m, t: m.max(t, 1, keepdims=True)[0],
    "mean_axis_tuple": lambda m, t: t.mean(axis=(0, 1)),
    "std_axis": lambda m, t: t.std(axis=0),
    "cumsum_axis": lambda m, t: t.cumsum(axis=0),
    "softmax_axis": lambda m, t: m.softmax(t, axis=1),
    "topk_axis": lambda m, t: m.topk(t, 1, axis=1)[0],
    "unsqueeze_axis": lambda m, t: t.unsqueeze(axis=0),
    "any_axis": lambda m, t: t.any(axis=0),
    "exp_x": lambda m, t: m.exp(x=t),
    "add_x1_x2": lambda m, t: m.add(x1=t, x2=t),
    "mul_other_x2": lambda m, t: m.mul(t, x2=t),
    "positional_and_alias": lambda m, t: t.sum(0, axis=1),
    "name_and_alias": lambda m, t: t.sum(dim=0, axis=1),
    "input_given_twice": lambda m, t: m.sum(t, x=t),
    "unknown_keyword": lambda m, t: m.sum(t, ax=1),
    "no_alias_for_dims": lambda m, t: t.flip(axis=0),
    "functional_softmax": lambda m, t: m.nn.functional.softmax(t, axis=1),
}


@pytest.mark.parametrize("name", sorted(ALIASES))
def test_numpy_keywords_as_torch(name: str) -> None:
    call = ALIASES[name]
    result = outcome(lambda: call(pyaten, pyaten.arange(6.0).reshape(2, 3)))
    expected = outcome(lambda: call(torch, torch.arange(6.0).reshape(2, 3)))
    if result[0] == "ok":  # tuples of tensors
        result = ("ok", [outcome(lambda v=v: v) for v in result[1]])
        expected = ("ok", [outcome(lambda v=v: v) for v in expected[1]])
    if result[0] == "TypeError":  # the first line: the signatures listed after it differ
        result, expected = (r[:1] + (r[1].split("\n")[0],) for r in (result, expected))
    assert result == expected


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_axis_is_dim_for_reductions(shape, data) -> None:
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    keep = data.draw(st.booleans())
    values = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    for op in ("sum", "mean", "amax", "argmin", "prod"):
        ours = getattr(pyaten.from_numpy(values), op)(axis=dim, keepdims=keep)
        theirs = getattr(torch.from_numpy(values), op)(axis=dim, keepdims=keep)
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


# -- NumPy's ufuncs on tensors ----------------------------------------------------------------

UFUNCS = {
    "exp": lambda m: np.exp(m.tensor([1.0, 2.0])),
    "exp_int": lambda m: np.exp(m.tensor([1, 2])),
    "isnan_bool_as_uint8": lambda m: np.isnan(m.tensor([1.0, float("nan")])),
    "add_scalar": lambda m: np.add(m.tensor([1.0, 2.0]), 1),
    "sqrt_0d": lambda m: np.sqrt(m.tensor(4.0)),
    "maximum": lambda m: np.maximum(m.tensor([1.0, 5.0]), m.tensor([3.0, 2.0])),
    "modf": lambda m: [outcome(lambda v=v: v) for v in np.modf(m.tensor([1.5, 2.25]))],
    "numpy_scalar_times_tensor": lambda m: np.float32(2) * m.tensor([1.0, 2.0]),
    "np_sum_refused": lambda m: np.sum(m.tensor([1.0, 2.0])),
    "np_max_refused": lambda m: np.max(m.tensor([1.0, 2.0])),
    "np_argmax": lambda m: np.argmax(m.tensor([1.0, 2.0])),
    "np_transpose": lambda m: np.transpose(m.ones(2, 3)).shape,
    "np_clip": lambda m: np.clip(m.tensor([-1.0, 2.0]), 0, 1),
    "np_cumsum": lambda m: np.cumsum(m.tensor([1.0, 2.0])),
    "priority": lambda m: m.ones(1).__array_priority__,
    "requires_grad": lambda m: np.exp(m.ones(1, requires_grad=True)),
}


@pytest.mark.parametrize("name", sorted(UFUNCS))
def test_numpy_ufuncs_return_tensors_as_torch(name: str) -> None:
    same(UFUNCS[name])


# -- threads and settings ---------------------------------------------------------------------

@contextlib.contextmanager
def restored_threads():
    saved = [(m.get_num_threads(), m.are_deterministic_algorithms_enabled(),
              m.is_deterministic_algorithms_warn_only_enabled()) for m in MODULES]
    try:
        yield
    finally:
        for m, (threads, mode, warn_only) in zip(MODULES, saved, strict=True):
            m.set_num_threads(threads)
            m.use_deterministic_algorithms(mode, warn_only=warn_only)


SETTINGS = {
    "threads_default": lambda m: m.get_num_threads(),
    "threads_set": lambda m: (m.set_num_threads(1), m.get_num_threads()),
    "threads_zero": lambda m: m.set_num_threads(0),
    "threads_bool": lambda m: (m.set_num_threads(True), m.get_num_threads()),
    "threads_negative": lambda m: m.set_num_threads(-2),
    "threads_float": lambda m: m.set_num_threads(1.5),
    "threads_str": lambda m: m.set_num_threads("2"),
    "interop_default": lambda m: m.get_num_interop_threads(),
    "interop_zero": lambda m: m.set_num_interop_threads(0),
    "deterministic_default": lambda m: m.are_deterministic_algorithms_enabled(),
    "deterministic_on": lambda m: (m.use_deterministic_algorithms(True, warn_only=True),
                                   m.are_deterministic_algorithms_enabled(),
                                   m.is_deterministic_algorithms_warn_only_enabled(),
                                   m.get_deterministic_debug_mode()),
    "deterministic_debug_mode": lambda m: (m.set_deterministic_debug_mode("error"),
                                           m.are_deterministic_algorithms_enabled(),
                                           m.get_deterministic_debug_mode()),
    "deterministic_bad_mode": lambda m: m.use_deterministic_algorithms(1),
    "deterministic_bad_warn_only": lambda m: m.use_deterministic_algorithms(True, warn_only=1),
}


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_settings_as_torch(name: str) -> None:
    with restored_threads():
        same(SETTINGS[name])


def test_set_num_threads_limits_the_blas_pool() -> None:
    from threadpoolctl import threadpool_info

    with restored_threads():
        pyaten.set_num_threads(1)
        pools = [p for p in threadpool_info() if p["user_api"] == "blas"]
        assert pools and all(p["num_threads"] == 1 for p in pools)
        x = pyaten.randn(64, 64)
        np.testing.assert_allclose((x @ x).numpy(), x.numpy() @ x.numpy(), rtol=1e-4, atol=1e-4)


def test_set_num_threads_sets_numba_when_imported() -> None:
    numba = pytest.importorskip("numba")
    with restored_threads():
        pyaten.set_num_threads(1)
        assert numba.get_num_threads() == 1


# -- finfo / iinfo ------------------------------------------------------------------------------

FLOATS = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")
INTS = ("uint8", "int8", "int16", "int32", "int64")


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_as_torch(name: str) -> None:
    ours, theirs = pyaten.finfo(getattr(pyaten, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name", INTS)
def test_iinfo_as_torch(name: str) -> None:
    ours, theirs = pyaten.iinfo(getattr(pyaten, name)), torch.iinfo(getattr(torch, name))
    assert (ours.bits, ours.min, ours.max, ours.dtype) == \
        (theirs.bits, theirs.min, theirs.max, theirs.dtype)
    assert repr(ours) == repr(theirs)


TYPE_INFO_ERRORS = {
    "finfo_int": lambda m: m.finfo(m.int32),
    "iinfo_float": lambda m: m.iinfo(m.float32),
    "iinfo_bool": lambda m: m.iinfo(m.bool),
    "finfo_str": lambda m: m.finfo("float32"),
    "finfo_default": lambda m: m.finfo().dtype,
    "finfo_none": lambda m: m.finfo(None),
    "finfo_equal": lambda m: m.finfo(m.float32) == m.finfo(m.float32),
    "finfo_readonly": lambda m: setattr(m.finfo(m.float32), "eps", 1.0),
}


@pytest.mark.parametrize("name", sorted(TYPE_INFO_ERRORS))
def test_type_info_errors_as_torch(name: str) -> None:
    same(TYPE_INFO_ERRORS[name])


# -- Tensor methods -----------------------------------------------------------------------------

METHODS = {
    "new_tensor": lambda m: m.ones(3).new_tensor([1, 2]),
    "new_tensor_dtype": lambda m: m.ones(3).new_tensor([1, 2], dtype=m.int64),
    "new_tensor_scalar": lambda m: m.ones(3, dtype=m.float64).new_tensor(3),
    "new_tensor_requires_grad": lambda m: m.ones(3).new_tensor([1.0], requires_grad=True)
    .requires_grad,
    "new_tensor_from_tensor": lambda m: m.ones(3, requires_grad=True).new_tensor(m.ones(2))
    .requires_grad,
    "apply_float": lambda m: m.ones(3).apply_(lambda x: x * 2),
    "apply_int_truncates": lambda m: m.arange(3).apply_(lambda x: x * 2.7),
    "apply_bool": lambda m: m.tensor([True, False]).apply_(lambda x: not x),
    "apply_complex": lambda m: m.ones(2, dtype=m.complex64).apply_(lambda v: v * 1j),
    "apply_zero_dim": lambda m: m.tensor(2.0).apply_(lambda v: v + 1),
    "is_pinned_device": lambda m: m.ones(2).is_pinned("cuda"),
    "apply_view": lambda m: (lambda t: (t[0:1].apply_(lambda x: 5), t)[1])(m.ones(2)),
    "apply_requires_grad": lambda m: m.ones(2, requires_grad=True).apply_(lambda x: x),
    "apply_not_callable": lambda m: m.ones(2).apply_(1),
    "apply_returns_str": lambda m: m.ones(2).apply_(lambda x: "a"),
    "apply_returns_none": lambda m: m.ones(2).apply_(lambda x: None),
    "is_inference": lambda m: m.ones(2).is_inference(),
    "inference_mode_enabled": lambda m: m.is_inference_mode_enabled(),
}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_tensor_methods_as_torch(name: str) -> None:
    same(METHODS[name])


# -- testing.assert_close -----------------------------------------------------------------------

def _close_cases(m):
    t, nan, inf = m.tensor, float("nan"), float("inf")
    return {
        "float": lambda: (t([1.0, 2.0, 3.0]), t([1.0, 2.1, 3.0])),
        "int": lambda: (t([1, 2, 3]), t([1, 3, 3])),
        "shape": lambda: (m.ones(2), m.ones(3)),
        "dtype": lambda: (m.ones(2), m.ones(2, dtype=m.float64)),
        "scalars": lambda: (1.0, 1.1),
        "ints": lambda: (1, 2),
        "sequence_item": lambda: ([m.ones(1), m.zeros(1)], [m.ones(1), m.ones(1)]),
        "nan": lambda: (t([nan]), t([nan])),
        "inf_signs": lambda: (t([inf]), t([-inf])),
        "matrix": lambda: (m.ones(2, 2), m.eye(2)),
        "mapping": lambda: ({"a": m.ones(1)}, {"a": m.zeros(1)}),
        "bool": lambda: (t([True]), t([False])),
        "zero_dim": lambda: (t(1.0), t(2.0)),
        "complex": lambda: (t([1 + 1j]), t([1 + 2j])),
        "half": lambda: (m.ones(2, dtype=m.float16), m.ones(2, dtype=m.float16) * 1.01),
        "stride": lambda: (m.ones(2, 3), m.ones(3, 2).t()),
        "tensor_and_list": lambda: (m.ones(2), [1.0, 1.0]),
        "tensor_and_float": lambda: (t(1.0), 1.0),
        "close_enough": lambda: (t([0.0]), t([1e-6])),
        "sequence_types": lambda: ((m.ones(1),), [m.ones(1)]),
    }


@pytest.mark.parametrize("name", sorted(_close_cases(torch)))
@pytest.mark.parametrize("options", [
    {}, {"rtol": 0.1, "atol": 0.1}, {"check_dtype": False}, {"check_stride": True},
    {"equal_nan": True}, {"msg": "custom"}, {"msg": lambda s: "X" + s}, {"rtol": 0},
])
def test_assert_close_as_torch(name: str, options: dict) -> None:
    ours = outcome(lambda: pyaten.testing.assert_close(*_close_cases(pyaten)[name](), **options))
    theirs = outcome(lambda: torch.testing.assert_close(*_close_cases(torch)[name](), **options))
    assert ours == theirs


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.floats(-1e3, 1e3, width=32), min_size=1, max_size=6),
       noise=st.lists(st.floats(-2.0 ** -10, 2.0 ** -10, width=32), min_size=6, max_size=6))
def test_assert_close_messages_on_random_values(values, noise) -> None:
    actual = np.array(values, np.float32)
    expected = actual + np.array(noise[: len(values)], np.float32)
    outcomes = [outcome(lambda m=m: m.testing.assert_close(m.from_numpy(actual),
                                                           m.from_numpy(expected)))
                for m in MODULES]
    assert outcomes[0] == outcomes[1]


# -- linalg.LinAlgError, onnx ----------------------------------------------------------------

def test_linalg_errors_are_lin_alg_errors_as_torch() -> None:
    assert issubclass(pyaten.linalg.LinAlgError, RuntimeError)
    for m in MODULES:
        with pytest.raises(m.linalg.LinAlgError) as info:
            m.linalg.inv(m.zeros(2, 2))
        assert "singular" in str(info.value)
    same(lambda m: m.linalg.cholesky(-m.eye(2)))


def test_onnx_imports_and_refuses_to_export() -> None:
    assert pyaten.onnx.is_in_onnx_export() is torch.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="pyaten cannot export ONNX"):
        pyaten.onnx.export(pyaten.nn.Linear(2, 2), (pyaten.ones(1, 2),), "model.onnx")


def test_attention_modules_at_torch_paths() -> None:
    from pyaten.nn.modules.activation import MultiheadAttention
    from pyaten.nn.modules.linear import NonDynamicallyQuantizableLinear

    assert MultiheadAttention is pyaten.nn.MultiheadAttention
    layer = NonDynamicallyQuantizableLinear(3, 2)
    assert isinstance(layer, pyaten.nn.Linear) and layer(pyaten.ones(1, 3)).shape == (1, 2)
    assert MultiheadAttention(4, 2).out_proj.__class__.__name__ == \
        torch.nn.MultiheadAttention(4, 2).out_proj.__class__.__name__


# -- the dispatcher's short error and the CLI -------------------------------------------------

def test_could_not_run_is_short_with_the_details_one_attribute_away(monkeypatch) -> None:
    with pytest.raises(NotImplementedError) as info:
        pyaten.ones(2, device="mps")
    short, details = str(info.value), info.value.details
    assert "selective/custom build" not in short and len(short.splitlines()) <= 4
    assert "lib.impl('empty.memory_format', fn, 'MPS')" in short
    assert "selective/custom build" in details and "CPU: registered at" in details
    monkeypatch.setenv("PYATEN_DISPATCH_ERRORS", "full")
    with pytest.raises(NotImplementedError) as info:
        pyaten.ones(2, device="mps")
    assert str(info.value) == info.value.details


def _cli(*argv: str) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue().splitlines()


@pytest.mark.parametrize("columns", [72, 80, 120])
def test_cli_output_fits_columns(monkeypatch, columns: int) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    for argv in (["dispatch", "add.Tensor"], ["explain", "torch.ones(2) * 2"]):
        lines = _cli(*argv)
        too_wide = [line for line in lines if len(line) > columns]
        assert not too_wide, (argv, too_wide)


def test_cli_defaults_to_80_columns_off_a_terminal(monkeypatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    lines = _cli("dispatch", "mm")
    assert max(len(line) for line in lines) <= 80
    assert max(len(line) for line in lines) > 70  # wrapped at 80, not narrower


def test_explain_takes_torch_prefixed_expressions() -> None:
    text = "\n".join(_cli("explain", "torch.add(torch.ones(2), 1)"))
    assert "aten::add.Tensor" in text and "tensor([2., 2.])" in text
    program = ("import torch; import torch.nn.functional as F; from torch import nn; "
               "F.relu(nn.Identity()(-torch.ones(2)))")
    text = "\n".join(_cli("explain", program))
    assert "aten::relu" in text and "tensor([0., 0.])" in text


# -- a training script written for PyTorch, run on both -----------------------------------------

def _training_script(torch_like) -> list[str]:
    nn = torch_like.nn
    device = torch_like.device("cuda" if torch_like.cuda.is_available() else "cpu")
    torch_like.cuda.manual_seed_all(0)
    torch_like.backends.cudnn.benchmark = False
    use_amp = torch_like.cuda.is_available()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = torch_like.cuda.amp.GradScaler(enabled=use_amp)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    for p in model.parameters():
        nn.init.constant_(p, 0.1)
    opt = torch_like.optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    x = torch_like.from_numpy(rng.standard_normal((16, 4)).astype(np.float32)).to(device)
    y = torch_like.LongTensor(rng.integers(0, 3, 16)).to(device)
    printed = []
    for step in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch_like.cuda.amp.autocast(enabled=use_amp):
                loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        printed.append(f"{step} {loss.item():.5f} {loss.type()} {tuple(x.sum(axis=0).shape)}")
    return printed


def test_a_pytorch_training_script_prints_the_same() -> None:
    with restored_flags():
        assert _training_script(pyaten) == _training_script(torch)


@contextlib.contextmanager
def restored_flags():
    # torch's own test helpers (imported by the OpInfo tests in the same worker) freeze the
    # flags (`disable_global_flags`): allow setting them here, as torch's tests do.
    saved = [m.backends.cudnn.benchmark for m in MODULES]
    with getattr(torch.backends, "__allow_nonbracketed_mutation")():
        try:
            yield
        finally:
            for m, value in zip(MODULES, saved, strict=True):
                m.backends.cudnn.benchmark = value
