"""pyaten.fft against torch.fft: every transform over shapes, dims, `n`/`s`, the three norm
modes, all 12 dtypes (refused ones compared by error), out=, strides and the conj bit, Meta
shapes/dtypes/strides, the frequency factories, fftshift, and PyTorch's OpInfo samples."""

from __future__ import annotations

import functools
from functools import partial

import numpy as np
import pytest
import torch
from _helpers import (
    DTYPE_NAMES,
    assert_same,
    assert_same_outcome,
    from_torch,
    opinfo_samples,
    run_both,
    sample_arguments,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
import pyaten.fft

ONE_DIM = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
TWO_DIM = ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2")
N_DIM = ("fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn")
TRANSFORMS = ONE_DIM + TWO_DIM + N_DIM
# ops whose input must be real (the rest take complex too)
REAL_ONLY = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
TOL = {"rtol": 1e-4, "atol": 1e-4}


def pair(shape, dtype: str = "float32", seed: int = 0):
    """The same values as a pyaten and a torch tensor."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) * 2
    if dtype.startswith("complex"):
        values = values + 1j * rng.standard_normal(shape)
    if dtype == "bool":
        t = torch.from_numpy(np.asarray(values > 0))
    else:
        t = torch.from_numpy(np.asarray(values)).to(getattr(torch, dtype))
    return from_torch(t), t


def call(module, name: str, *args, **kwargs):
    return getattr(module.fft, name)(*args, **kwargs)


def check(name: str, ours, theirs, strides: bool = True, **kwargs) -> None:
    """Run `name` in both; same values, dtype, shape, strides and conj bit, or same error."""
    got = run_both(lambda: call(pyaten, name, ours, **kwargs),
                   lambda: call(torch, name, theirs, **kwargs))
    if got is None:
        return
    a, b = got
    # an empty result's strides come from its input's (NumPy's, for torch.from_numpy)
    assert_same(a, b, **TOL, strides=strides and b.numel() > 0)
    assert a.is_conj() == b.is_conj(), (a.is_conj(), b.is_conj())


# --- values over shapes, dims, n and norm ------------------------------------------------------

SHAPES_1D = [(), (1,), (5,), (8,), (3, 4), (2, 3, 5), (0, 4)]
KWARGS_1D = [
    {}, {"dim": 0}, {"dim": -2}, {"n": 7}, {"n": 3}, {"n": 1}, {"n": 0}, {"n": -1},
    {"norm": "ortho"}, {"norm": "forward"}, {"norm": "backward"}, {"norm": "bad"},
    {"n": 6, "dim": 0, "norm": "forward"}, {"dim": 3},
]


@pytest.mark.parametrize("name", ONE_DIM)
@pytest.mark.parametrize("shape", SHAPES_1D, ids=str)
def test_one_dim_transforms(name, shape) -> None:
    for dtype in ("float32", "complex128"):
        ours, theirs = pair(shape, dtype)
        for kwargs in KWARGS_1D:
            check(name, ours, theirs, **kwargs)


SHAPES_ND = [(), (5,), (3, 4), (2, 3, 5), (4, 0, 3), (2, 1, 6)]
KWARGS_ND = [
    {}, {"dim": (0,)}, {"dim": (0, -1)}, {"dim": (-1, 0)}, {"s": (4,)}, {"s": (3, 6)},
    {"s": (-1, 3)}, {"s": (2, -1), "dim": (-1, 0)}, {"s": (0, 3)}, {"s": (3, 3, 3, 3)},
    {"dim": (0, 0)}, {"dim": (0, 5)}, {"s": (3, 3), "dim": (0,)}, {"dim": ()},
    {"norm": "ortho"}, {"norm": "forward"}, {"norm": "nope"}, {"s": (5, 6), "norm": "forward"},
]


@pytest.mark.parametrize("name", TWO_DIM + N_DIM)
@pytest.mark.parametrize("shape", SHAPES_ND, ids=str)
def test_multi_dim_transforms(name, shape) -> None:
    for dtype in ("float64", "complex64"):
        ours, theirs = pair(shape, dtype)
        for kwargs in KWARGS_ND:
            if name.endswith("2") and "dim" not in kwargs and len(shape) < 2:
                kwargs = {**kwargs}  # default dims (-2, -1): torch's IndexError, compared
            check(name, ours, theirs, **kwargs)


@pytest.mark.parametrize("name", TRANSFORMS)
def test_non_contiguous_inputs(name) -> None:
    """Transposed and strided inputs: the result's layout follows PyTorch's permutation."""
    base = torch.randn(4, 6, 5, dtype=torch.float64)
    if name not in REAL_ONLY:
        base = base + 1j * torch.randn(4, 6, 5, dtype=torch.float64)
    ours_base = from_torch(base)
    views = [
        (lambda m: m.transpose(0, 2), {}),
        (lambda m: m.transpose(0, 1), {"dim": 0} if name in ONE_DIM else {"dim": (0, 2)}),
        (lambda m: m[:, ::2], {}),
        (lambda m: m.permute(2, 0, 1), {"dim": -2} if name in ONE_DIM else {"dim": (1, 0)}),
    ]
    for view, kwargs in views:
        check(name, view(ours_base), view(base), **kwargs)


# --- the 12 dtypes --------------------------------------------------------------------------


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_every_dtype(name, dtype) -> None:
    """Integers and bool promote to the default float dtype; float16/bfloat16 are refused on
    CPU ("Unsupported dtype Half"); complex input to a real-input op is refused."""
    ours, theirs = pair((3, 4), dtype)
    check(name, ours, theirs)


def test_default_dtype_decides_integer_promotion() -> None:
    ours, theirs = pair((6,), "int32")
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    pyaten.set_default_dtype(pyaten.float64)
    try:
        check("rfft", ours, theirs)
        check("irfft", ours, theirs)
    finally:
        torch.set_default_dtype(previous)
        pyaten.set_default_dtype(pyaten.float32)


# --- out= ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("out_dtype", ["float32", "float64", "complex64", "complex128", "int64"])
def test_out_variant(name, out_dtype) -> None:
    if name == "ihfftn":
        pytest.skip("PyTorch 2.13 leaves out= unwritten for a one-dim ihfftn; see below")
    dtype = "float32" if name in REAL_ONLY else "complex64"
    ours, theirs = pair((3, 4), dtype)
    for size in ((0,), (3, 4), (2, 2)):
        out_ours = pyaten.zeros(size, dtype=getattr(pyaten, out_dtype))
        out_theirs = torch.zeros(size, dtype=getattr(torch, out_dtype))
        got = run_both(partial(call, pyaten, name, ours, out=out_ours),
                       partial(call, torch, name, theirs, out=out_theirs))
        if got is not None:
            assert got[0] is out_ours
            assert_same(out_ours, out_theirs, **TOL)


def test_ihfftn_out_is_written() -> None:
    """torch.fft.ihfftn(x, dim=(d,), out=o) leaves o as it was (2.13 swaps the arguments of
    conj_physical_out); pyaten writes the transform, as ihfft does."""
    ours, theirs = pair((3, 4))
    out = pyaten.zeros((3, 3), dtype=pyaten.complex64)
    pyaten.fft.ihfftn(ours, dim=(1,), out=out)
    assert_same(out, torch.fft.ihfft(theirs), **TOL)
    out2 = pyaten.zeros((0,), dtype=pyaten.complex64)
    out_t = torch.zeros((0,), dtype=torch.complex64)
    pyaten.fft.ihfftn(ours, out=out2)
    torch.fft.ihfftn(theirs, out=out_t)
    assert_same(out2, out_t, **TOL)


# --- Meta ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64", "float32", "complex128"])
def test_meta(name, dtype) -> None:
    """Shapes, dtypes (float16 -> complex32 on Meta, as PyTorch allows) and strides."""
    kwargs_list = [{}, {"norm": "ortho"}]
    kwargs_list.append({"dim": 0, "n": 5} if name in ONE_DIM else {"dim": (0, 2), "s": (3, 7)})
    for kwargs in kwargs_list:
        for shape, transpose in (((4, 6, 5), False), ((4, 6, 5), True)):
            ours = pyaten.empty(shape, dtype=getattr(pyaten, dtype), device="meta")
            theirs = torch.empty(shape, dtype=getattr(torch, dtype), device="meta")
            if transpose:
                ours, theirs = ours.transpose(0, 2), theirs.transpose(0, 2)
            # torch's Meta strides of c2r/r2c differ from its CPU's; pyaten's Meta gives the
            # CPU layout (checked below), so only shapes and dtypes are compared here
            check(name, ours, theirs, strides=False, **kwargs)


@pytest.mark.parametrize("name", TRANSFORMS)
def test_meta_matches_cpu_layout(name) -> None:
    ours, _ = pair((4, 6, 5), "float64" if name in REAL_ONLY else "complex128")
    meta = ours.to("meta")
    for kwargs in ({}, {"dim": 1} if name in ONE_DIM else {"dim": (2, 0)}):
        cpu_result = call(pyaten, name, ours, **kwargs)
        meta_result = call(pyaten, name, meta, **kwargs)
        assert meta_result.shape == cpu_result.shape
        assert meta_result.stride() == cpu_result.stride()
        assert meta_result.dtype == cpu_result.dtype


# --- the primitives ------------------------------------------------------------------------


PRIMITIVES = [
    ("_fft_c2c", "complex64", ([1], 0, True)), ("_fft_c2c", "complex128", ([0, 1], 1, False)),
    ("_fft_c2c", "complex64", ([], 2, True)), ("_fft_c2c", "float32", ([1], 0, True)),
    ("_fft_r2c", "float32", ([1], 2, True)), ("_fft_r2c", "float64", ([0, 1], 0, False)),
    ("_fft_r2c", "complex64", ([1], 0, True)), ("_fft_r2c", "float16", ([1], 0, True)),
    ("_fft_c2r", "complex64", ([1], 0, 6)), ("_fft_c2r", "complex128", ([0, 1], 2, 7)),
    ("_fft_c2r", "float32", ([1], 0, 6)),
]


@pytest.mark.parametrize(("name", "dtype", "args"), PRIMITIVES)
def test_primitives(name, dtype, args) -> None:
    ours, theirs = pair((4, 4), dtype)
    assert_same_outcome(lambda: getattr(pyaten.ops.aten, name)(ours, *args),
                        lambda: getattr(torch.ops.aten, name)(theirs, *args), **TOL,
                        strides=True)
    meta_ours, meta_theirs = ours.to("meta"), theirs.to("meta")
    if dtype != "float16" and not (dtype.startswith("float") != (name == "_fft_r2c")):
        assert_same_outcome(lambda: getattr(pyaten.ops.aten, name)(meta_ours, *args),
                            lambda: getattr(torch.ops.aten, name)(meta_theirs, *args),
                            strides=True, message=False)


def test_primitive_out_casts_like_copy() -> None:
    ours, theirs = pair((4, 4))
    out_ours, out_theirs = pyaten.empty(0, dtype=pyaten.complex128), torch.empty(0,
                                                                               dtype=torch.complex128)
    pyaten.ops.aten._fft_r2c.out(ours, [1], 0, True, out=out_ours)
    torch.ops.aten._fft_r2c.out(theirs, [1], 0, True, out=out_theirs)
    assert_same(out_ours, out_theirs)


# --- frequencies ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("dtype", [None, *DTYPE_NAMES])
def test_frequencies(name, dtype) -> None:
    for n, d in ((0, 1.0), (1, 1.0), (5, 1.0), (6, 0.1), (7, -2.5), (4, 0.0), (-1, 1.0)):
        kw_ours = {} if dtype is None else {"dtype": getattr(pyaten, dtype)}
        kw_theirs = {} if dtype is None else {"dtype": getattr(torch, dtype)}
        ours_fn, theirs_fn = getattr(pyaten.fft, name), getattr(torch.fft, name)
        assert_same_outcome(partial(ours_fn, n, d, **kw_ours),
                            partial(theirs_fn, n, d, **kw_theirs))
        if dtype is not None and dtype.startswith("complex"):
            continue  # pyaten's Meta arange refuses complex; torch's accepts it
        assert_same_outcome(partial(ours_fn, n, d=d, device="meta", **kw_ours),
                            partial(theirs_fn, n, d=d, device="meta", **kw_theirs))


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_out(name) -> None:
    for dtype in ("float64", "int32", "complex64"):
        out_ours = pyaten.empty(3, dtype=getattr(pyaten, dtype))
        out_theirs = torch.empty(3, dtype=getattr(torch, dtype))
        assert_same_outcome(partial(getattr(pyaten.fft, name), 8, 0.5, out=out_ours),
                            partial(getattr(torch.fft, name), 8, 0.5, out=out_theirs))


# --- fftshift / ifftshift ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts(name) -> None:
    for shape in ((), (5,), (4, 5), (0, 3), (2, 3, 4)):
        ours, theirs = pair(shape, "float32")
        for kwargs in ({}, {"dim": 0}, {"dim": (-1,)}, {"dim": (0, -1)}, {"dim": 5}):
            assert_same_outcome(partial(call, pyaten, name, ours, **kwargs),
                                partial(call, torch, name, theirs, **kwargs))


# --- the namespace -------------------------------------------------------------------------


def test_namespace() -> None:
    import importlib

    module = importlib.import_module("pyaten.fft")
    assert pyaten.fft is module
    assert pyaten.fft.rfft.__module__ == "pyaten.fft"
    assert set(module.__all__) >= set(TRANSFORMS) | {"fftfreq", "rfftfreq", "fftshift",
                                                     "ifftshift"}
    ours, theirs = pair((4,))
    assert_same(pyaten.ops.aten.fft_rfft(ours), torch.ops.aten.fft_rfft(theirs), **TOL)
    with pytest.raises(TypeError, match="fft_fft"):
        pyaten.fft.fft(ours, bad=1)


# --- PyTorch's OpInfo samples ---------------------------------------------------------------


@functools.cache
def _op_infos() -> list:
    from torch.testing._internal.common_methods_invocations import op_db

    return [info for info in op_db if info.name.startswith("fft.")]


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_opinfo_samples(dtype) -> None:
    checked = 0
    for info in _op_infos():
        if getattr(torch, dtype) not in info.dtypes:
            continue
        ours_fn = getattr(pyaten.fft, info.name[4:])
        samples = opinfo_samples(info, getattr(torch, dtype))
        for sample in samples:
            theirs, ours, kwargs = sample_arguments(sample)
            got = run_both(partial(ours_fn, *ours, **kwargs),
                           partial(info.op, *theirs, **sample.kwargs))
            if got is not None:
                assert_same(*got, rtol=1e-4, atol=1e-4)
            checked += 1
    assert checked > 30


# --- hypothesis: any shape, dim and n -------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    name=st.sampled_from(ONE_DIM),
    n=st.one_of(st.none(), st.integers(1, 9)),
    dim=st.integers(-3, 2),
    norm=st.sampled_from([None, "forward", "backward", "ortho"]),
    seed=st.integers(0, 100),
)
def test_property_one_dim(shape, name, n, dim, norm, seed) -> None:
    dtype = "float64" if name in REAL_ONLY else "complex128"
    ours, theirs = pair(tuple(shape), dtype, seed)
    # strides of size-1 dims are not compared: PyTorch orders tied strides its own way
    check(name, ours, theirs, strides=False, n=n, dim=dim, norm=norm)
