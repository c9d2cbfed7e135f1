"""Autocast and GradScaler against PyTorch 2.13 (pyaten/amp/, docs/amp.md).

Every operator of each CPU policy list runs under `autocast("cpu", dtype)` for both lower
precision dtypes in pyaten and in torch on the same inputs (through `ops.aten.<op>.<overload>`,
so the call reaches the AutocastCPU slot in both), and the outputs must agree in dtype and,
within the dtype's tolerance, in values. Then: mixed inputs, integer inputs, nesting,
disabled regions, no_grad, backward, an MLP trained with GradScaler, GradScaler's skipped
step, bad input, the weight cast cache, explain/trace, the policy table itself.
"""

from __future__ import annotations

import threading
import warnings
import zlib

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
from pyaten.amp import autocast_kernels

LOWER = ["bfloat16", "float16"]
TOL = {"bfloat16": 3e-2, "float16": 1e-2, "float32": 1e-4}


# -- inputs: specs materialised the same in both libraries ------------------------------------


class Spec:
    """A tensor argument: NumPy values, made a floating tensor of the case's input dtype
    (`floating`), or kept as is (integer indices and targets)."""

    def __init__(self, values: np.ndarray, floating: bool = True) -> None:
        self.values = values
        self.floating = floating


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


class Inputs:
    def __init__(self, name: str) -> None:
        self.rng = _rng(name)

    def f(self, *shape: int) -> Spec:
        return Spec(self.rng.standard_normal(shape).astype(np.float32))

    def pos(self, *shape: int) -> Spec:
        return Spec(self.rng.uniform(0.5, 2.0, shape).astype(np.float32))

    def unit(self, *shape: int) -> Spec:
        return Spec(self.rng.uniform(0.1, 0.9, shape).astype(np.float32))

    def sign(self, *shape: int) -> Spec:
        return Spec(np.where(self.rng.random(shape) < 0.5, -1.0, 1.0).astype(np.float32))

    def spd(self, n: int) -> Spec:
        a = self.rng.standard_normal((n, n))
        return Spec((a @ a.T + n * np.eye(n)).astype(np.float32))

    def well(self, n: int) -> Spec:
        return Spec((self.rng.standard_normal((n, n)) + 3 * np.eye(n)).astype(np.float32))

    def lower_tri(self, n: int) -> Spec:
        a = np.tril(self.rng.uniform(0.5, 1.0, (n, n))) + np.eye(n)
        return Spec(a.astype(np.float32))

    def idx(self, high: int, *shape: int) -> Spec:
        return Spec(self.rng.integers(0, high, shape).astype(np.int64), floating=False)

    def ints(self, values: list, dtype: type = np.int64) -> Spec:
        return Spec(np.array(values, dtype=dtype), floating=False)


def _make(lib, value, dtype: str):
    if isinstance(value, Spec):
        if value.floating:
            t = torch.from_numpy(value.values.copy()).to(getattr(torch, dtype))
            if lib is torch:
                return t
            return pyaten.from_numpy(t.float().numpy()).to(getattr(pyaten, dtype))
        return lib.from_numpy(value.values.copy())
    if isinstance(value, list):
        return [_make(lib, v, dtype) for v in value]
    return value


def _lu(x: Inputs, n: int) -> tuple[Spec, Spec]:
    lu, pivots = torch.linalg.lu_factor(torch.from_numpy(x.well(n).values))
    return Spec(lu.numpy()), Spec(pivots.numpy(), floating=False)


def _pool_indices(x: Inputs) -> list:
    values = torch.from_numpy(x.f(1, 1, 4, 4).values)
    pooled, indices = torch.nn.functional.max_pool2d(values, 2, return_indices=True)
    return [Spec(pooled.numpy()), Spec(indices.numpy(), floating=False), [4, 4]]


def _pool3d_indices(x: Inputs) -> list:
    values = torch.from_numpy(x.f(1, 1, 4, 4, 4).values)
    pooled, indices = torch.nn.functional.max_pool3d(values, 2, return_indices=True)
    return [Spec(pooled.numpy()), Spec(indices.numpy(), floating=False), [4, 4, 4], [2, 2, 2],
            [0, 0, 0]]


# (overload, argument builder, compare values). Sign-ambiguous decompositions compare dtype
# and shape only.
LOWER_PRECISION_CASES = [
    ("conv1d", lambda x: [x.f(1, 2, 5), x.f(3, 2, 2), x.f(3), [1], [0], [1], 1]),
    ("conv1d.padding", lambda x: [x.f(1, 2, 5), x.f(3, 2, 3), x.f(3), [1], "same", [1], 1]),
    ("conv2d", lambda x: [x.f(1, 2, 4, 4), x.f(3, 2, 2, 2), x.f(3), [1, 1], [0, 0], [1, 1], 1]),
    (
        "conv2d.padding",
        lambda x: [x.f(1, 2, 4, 4), x.f(3, 2, 3, 3), None, [1, 1], "same", [1, 1], 1],
    ),
    (
        "conv3d",
        lambda x: [x.f(1, 1, 3, 3, 3), x.f(2, 1, 2, 2, 2), x.f(2), [1] * 3, [0] * 3, [1] * 3, 1],
    ),
    (
        "conv3d.padding",
        lambda x: [x.f(1, 1, 3, 3, 3), x.f(2, 1, 3, 3, 3), None, [1] * 3, "same", [1] * 3, 1],
    ),
    ("bmm", lambda x: [x.f(2, 3, 4), x.f(2, 4, 5)]),
    ("mm", lambda x: [x.f(3, 4), x.f(4, 5)]),
    ("linalg_vecdot", lambda x: [x.f(3, 4), x.f(3, 4), {"dim": -1}]),
    ("baddbmm", lambda x: [x.f(2, 3, 5), x.f(2, 3, 4), x.f(2, 4, 5), {"beta": 0.5}]),
    ("addmm", lambda x: [x.f(3, 5), x.f(3, 4), x.f(4, 5), {"alpha": 2}]),
    ("addbmm", lambda x: [x.f(3, 5), x.f(2, 3, 4), x.f(2, 4, 5)]),
    ("linear", lambda x: [x.f(3, 4), x.f(5, 4), x.f(5)]),
    ("matmul", lambda x: [x.f(3, 4), x.f(4, 5)]),
    (
        "conv_transpose1d",
        lambda x: [x.f(1, 2, 5), x.f(2, 3, 2), x.f(3), [1], [0], [0], 1, [1]],
    ),
    (
        "conv_transpose2d.input",
        lambda x: [x.f(1, 2, 3, 3), x.f(2, 3, 2, 2), x.f(3), [1, 1], [0, 0], [0, 0], 1, [1, 1]],
    ),
    (
        "conv_transpose3d.input",
        lambda x: [
            x.f(1, 1, 2, 2, 2),
            x.f(1, 2, 2, 2, 2),
            None,
            [1] * 3,
            [0] * 3,
            [0] * 3,
            1,
            [1] * 3,
        ],
    ),  # fmt: skip
    ("prelu", lambda x: [x.f(2, 3), x.f(3)]),
    (
        "scaled_dot_product_attention",
        lambda x: [x.f(1, 2, 3, 4), x.f(1, 2, 3, 4), x.f(1, 2, 3, 4)],
    ),
]

FP32_CASES = [
    ("avg_pool3d", lambda x: [x.f(1, 1, 4, 4, 4), [2, 2, 2], [], [0, 0, 0], False, True, None]),
    ("binary_cross_entropy", lambda x: [x.unit(4), x.unit(4), None, 1]),
    ("grid_sampler", lambda x: [x.f(1, 1, 4, 4), x.unit(1, 3, 3, 2), 0, 0, False]),
    ("polar", lambda x: [x.pos(3), x.f(3)]),
    ("prod", lambda x: [x.pos(4)]),
    ("prod.dim_int", lambda x: [x.pos(3, 4), 1, False]),
    ("quantile", lambda x: [x.f(8), x.unit(2), None, False]),
    ("quantile.scalar", lambda x: [x.f(8), 0.3, None, False, {"interpolation": "lower"}]),
    ("nanquantile", lambda x: [x.f(8), x.unit(2), None, False]),
    ("nanquantile.scalar", lambda x: [x.f(8), 0.3, None, False]),
    ("cdist", lambda x: [x.f(3, 4), x.f(5, 4), 2.0, None]),
    ("grid_sampler_2d", lambda x: [x.f(1, 1, 4, 4), x.unit(1, 3, 3, 2), 0, 0, False]),
    ("grid_sampler_3d", lambda x: [x.f(1, 1, 3, 3, 3), x.unit(1, 2, 2, 2, 3), 0, 0, False]),
    ("trace", lambda x: [x.f(3, 3)]),
    ("view_as_complex", lambda x: [x.f(3, 2)]),
    ("cholesky", lambda x: [x.spd(3), False]),
    ("cholesky_inverse", lambda x: [x.lower_tri(3), False]),
    ("cholesky_solve", lambda x: [x.f(3, 2), x.lower_tri(3), False]),
    ("inverse", lambda x: [x.well(3)]),
    ("lu_solve", lambda x: [x.f(3, 2), *_lu(x, 3)]),
    ("orgqr", lambda x: [x.f(3, 3), x.unit(3)]),
    ("geqrf", lambda x: [x.f(3, 3)]),
    ("ormqr", lambda x: [x.f(3, 3), x.unit(3), x.f(3, 2), True, False]),
    ("triangular_solve", lambda x: [x.f(3, 2), x.lower_tri(3), False, False, False]),
    ("_lu_with_info", lambda x: [x.well(3), True, True]),
    ("pinverse", lambda x: [x.well(3), 1e-15]),
    ("max_pool3d", lambda x: [x.f(1, 1, 4, 4, 4), [2, 2, 2], [], [0, 0, 0], [1, 1, 1], False]),
    ("max_unpool2d", _pool_indices),
    ("max_unpool3d", _pool3d_indices),
    ("adaptive_avg_pool3d", lambda x: [x.f(1, 1, 4, 4, 4), [2, 2, 2]]),
    ("adaptive_max_pool3d", lambda x: [x.f(1, 1, 4, 4, 4), [2, 2, 2]]),
    ("fractional_max_pool2d", lambda x: [x.f(1, 1, 6, 6), [2, 2], [3, 3], x.unit(1, 1, 2)]),
    ("fractional_max_pool3d",
     lambda x: [x.f(1, 1, 5, 5, 5), [2, 2, 2], [3, 3, 3], x.unit(1, 1, 3)]),
    ("fake_quantize_per_tensor_affine", lambda x: [x.f(6), 0.1, 3, 0, 255]),
    ("stft", lambda x: [x.f(32), 8, 2, None, x.unit(8), False, None, True]),
    ("stft.center", lambda x: [x.f(32), 8, 2, None, x.unit(8), True, "reflect", False, None,
                               True]),
    ("reflection_pad1d", lambda x: [x.f(1, 2, 5), [1, 2]]),
    ("reflection_pad2d", lambda x: [x.f(1, 1, 4, 4), [1, 1, 2, 1]]),
    ("replication_pad1d", lambda x: [x.f(1, 2, 5), [1, 2]]),
    ("replication_pad2d", lambda x: [x.f(1, 1, 4, 4), [1, 1, 2, 1]]),
    ("replication_pad3d", lambda x: [x.f(1, 1, 3, 3, 3), [1, 1, 1, 1, 1, 1]]),
    ("mse_loss", lambda x: [x.f(4, 3), x.f(4, 3), 1]),
    ("cosine_embedding_loss", lambda x: [x.f(3, 4), x.f(3, 4), x.sign(3), 0.0, 1]),
    ("nll_loss", lambda x: [x.f(3, 4), x.idx(4, 3), None, 1, -100]),
    ("nll_loss2d", lambda x: [x.f(2, 3, 4, 4), x.idx(3, 2, 4, 4), None, 1, -100]),
    ("hinge_embedding_loss", lambda x: [x.f(5), x.sign(5), 1.0, 1]),
    ("poisson_nll_loss", lambda x: [x.f(5), x.pos(5), True, False, 1e-8, 1]),
    ("smooth_l1_loss", lambda x: [x.f(5), x.f(5), 1, 1.0]),
    ("cross_entropy_loss", lambda x: [x.f(3, 4), x.idx(4, 3), None, 1, -100, 0.0]),
    ("l1_loss", lambda x: [x.f(5), x.f(5), 1]),
    ("huber_loss", lambda x: [x.f(5), x.f(5), 1, 1.0]),
    ("margin_ranking_loss", lambda x: [x.f(5), x.f(5), x.sign(5), 0.0, 1]),
    ("soft_margin_loss", lambda x: [x.f(5), x.sign(5), 1]),
    ("triplet_margin_loss", lambda x: [x.f(3, 4), x.f(3, 4), x.f(3, 4), 1.0, 2.0, 1e-6, False, 1]),
    ("multi_margin_loss", lambda x: [x.f(3, 4), x.idx(4, 3), 1, 1.0, None, 1]),
    (
        "ctc_loss.IntList",
        lambda x: [x.f(5, 2, 4), x.ints([[1, 2, 3], [2, 3, 0]]), [5, 5], [3, 2], 0, 1, False],
    ),
    (
        "ctc_loss.Tensor",
        lambda x: [
            x.f(5, 2, 4),
            x.ints([[1, 2, 3], [2, 3, 0]]),
            x.ints([5, 5]),
            x.ints([3, 2]),
            0,
            1,
            False,
        ],
    ),  # fmt: skip
    ("kl_div", lambda x: [x.f(5), x.unit(5), 1]),
    ("multilabel_margin_loss", lambda x: [x.f(2, 4), x.ints([[3, 0, -1, 1], [1, 2, 3, -1]]), 1]),
    ("binary_cross_entropy_with_logits", lambda x: [x.f(5), x.unit(5), None, None, 1]),
    ("fft_fft", lambda x: [x.f(8), None, -1, None]),
    ("fft_ifft", lambda x: [x.f(8), None, -1, None]),
    ("fft_fft2", lambda x: [x.f(4, 4), None, [-2, -1], None]),
    ("fft_ifft2", lambda x: [x.f(4, 4), None, [-2, -1], None]),
    ("fft_fftn", lambda x: [x.f(4, 4), None, None, None]),
    ("fft_ifftn", lambda x: [x.f(4, 4), None, None, None]),
    ("fft_rfft", lambda x: [x.f(8), None, -1, None]),
    ("fft_irfft", lambda x: [x.f(5), None, -1, None]),
    ("fft_rfft2", lambda x: [x.f(4, 4), None, [-2, -1], None]),
    ("fft_irfft2", lambda x: [x.f(4, 3), None, [-2, -1], None]),
    ("fft_rfftn", lambda x: [x.f(4, 4), None, None, None]),
    ("fft_irfftn", lambda x: [x.f(4, 3), None, None, None]),
    ("fft_hfft", lambda x: [x.f(5), None, -1, None]),
    ("fft_ihfft", lambda x: [x.f(8), None, -1, None]),
    ("linalg_cond", lambda x: [x.well(3), None]),
    ("linalg_cond.p_str", lambda x: [x.well(3), "fro"]),
    ("linalg_matrix_rank", lambda x: [x.well(3), 1e-5, False]),
    ("linalg_matrix_rank.tol_tensor", lambda x: [x.well(3), x.unit(1), False]),
    ("linalg_matrix_rank.atol_rtol_tensor", lambda x: [x.well(3)]),
    ("linalg_matrix_rank.atol_rtol_float", lambda x: [x.well(3), {"atol": 1e-3}]),
    ("linalg_solve", lambda x: [x.well(3), x.f(3, 2)]),
    ("linalg_cholesky", lambda x: [x.spd(3)]),
    ("linalg_svdvals", lambda x: [x.f(3, 4)]),
    ("linalg_eigvals", lambda x: [x.spd(3)]),
    ("linalg_eigvalsh", lambda x: [x.spd(3), "L"]),
    ("linalg_inv", lambda x: [x.well(3)]),
    ("linalg_householder_product", lambda x: [x.f(3, 3), x.unit(3)]),
    ("linalg_tensorinv", lambda x: [Spec(np.eye(4, dtype=np.float32).reshape(4, 2, 2) * 2), 1]),
    ("linalg_tensorsolve", lambda x: [Spec(np.eye(4, dtype=np.float32) * 2), x.f(4), None]),
    ("qr", lambda x: [x.f(3, 3), True], False),
    ("svd", lambda x: [x.f(3, 3), True, True], False),
    (
        "multilabel_margin_loss_forward",
        lambda x: [x.f(2, 4), x.ints([[3, 0, -1, 1], [1, 2, 3, -1]]), 1],
    ),  # fmt: skip
    ("linalg_qr", lambda x: [x.f(3, 3), "reduced"], False),
    ("linalg_cholesky_ex", lambda x: [x.spd(3)]),
    ("linalg_svd", lambda x: [x.f(3, 3), True], False),
    ("linalg_eig", lambda x: [x.spd(3)], False),
    ("linalg_eigh", lambda x: [x.spd(3), "L"], False),
    ("linalg_lstsq", lambda x: [x.f(4, 3), x.f(4, 2), None], False),
    ("linalg_inv_ex", lambda x: [x.well(3)]),
]

PROMOTE_CASES = [
    ("stack", lambda x: [[x.f(2, 3), Spec(x.f(2, 3).values, floating=False)], 0]),
    ("cat", lambda x: [[x.f(2, 3), Spec(x.f(2, 3).values, floating=False)], 0]),
    (
        "index_copy",
        lambda x: [x.f(4, 3), 0, x.ints([2, 0]), Spec(x.f(2, 3).values, floating=False)],
    ),
]


def _rows(cases: list) -> list:
    return [(c[0], c[1], c[2] if len(c) > 2 else True) for c in cases]


def _aten(lib, overload: str):
    name, _, over = overload.partition(".")
    return getattr(getattr(lib.ops.aten, name), over or "default")


def _flat(out) -> list:
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _numpy(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        t = t.detach()
        return (t.to(torch.complex128) if t.is_complex() else t.double()).numpy()
    t = t.detach()
    return (t.to(pyaten.complex128) if t.is_complex() else t.to(pyaten.float64)).numpy()


def _run_both(overload: str, build, input_dtype: str, autocast_dtype: str) -> tuple:
    inputs = build(Inputs(overload))
    kwargs = inputs.pop() if inputs and isinstance(inputs[-1], dict) else {}
    results = []
    for lib in (torch, pyaten):
        args = [_make(lib, a, input_dtype) for a in inputs]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autocast("cpu", dtype=getattr(lib, autocast_dtype)):
                results.append(_aten(lib, overload)(*args, **kwargs))
    return results[0], results[1]


def _compare(expected, actual, tol: float, values: bool) -> None:
    expected, actual = _flat(expected), _flat(actual)
    assert len(expected) == len(actual)
    for e, a in zip(expected, actual):
        if not isinstance(e, torch.Tensor):
            assert e == a
            continue
        assert str(a.dtype).split(".")[-1] == str(e.dtype).split(".")[-1]
        assert tuple(a.shape) == tuple(e.shape)
        if values:
            np.testing.assert_allclose(_numpy(a), _numpy(e), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", LOWER)
@pytest.mark.parametrize("overload,build,values", _rows(LOWER_PRECISION_CASES))
def test_lower_precision_list(overload, build, values, dtype):
    # float32 inputs: computed in the autocast dtype.
    expected, actual = _run_both(overload, build, "float32", dtype)
    assert _flat(expected)[0].dtype == getattr(torch, dtype)
    _compare(expected, actual, TOL[dtype], values)


@pytest.mark.parametrize("dtype", LOWER)
@pytest.mark.parametrize("overload,build,values", _rows(FP32_CASES))
def test_fp32_list(overload, build, values, dtype):
    # lower precision inputs: computed in float32.
    expected, actual = _run_both(overload, build, dtype, dtype)
    _compare(expected, actual, TOL["float32"] * 100, values)


@pytest.mark.parametrize("dtype", LOWER)
@pytest.mark.parametrize("overload,build,values", _rows(PROMOTE_CASES))
def test_promote_list(overload, build, values, dtype):
    # One lower precision input and one float32 input: computed in float32.
    inputs = build(Inputs(overload))
    results = []
    for lib in (torch, pyaten):
        args = []
        for a in inputs:
            if isinstance(a, list):
                args.append([_make(lib, a[0], dtype), _make(lib, Spec(a[1].values), "float32")])
            elif isinstance(a, Spec) and not a.floating and a.values.dtype == np.float32:
                args.append(_make(lib, Spec(a.values), "float32"))
            else:
                args.append(_make(lib, a, dtype))
        with lib.autocast("cpu", dtype=getattr(lib, dtype)):
            results.append(_aten(lib, overload)(*args))
    assert results[0].dtype == torch.float32
    _compare(results[0], results[1], TOL[dtype], values)
    # All inputs in the autocast dtype: they stay in it.
    expected, actual = _run_both(overload, lambda x: _all_floating(build(x)), dtype, dtype)
    assert expected.dtype == getattr(torch, dtype)
    _compare(expected, actual, TOL[dtype], values)


def _all_floating(args: list) -> list:
    def fix(a):
        if isinstance(a, list):
            return [fix(v) for v in a]
        if isinstance(a, Spec) and a.values.dtype == np.float32:
            return Spec(a.values)
        return a

    return [fix(a) for a in args]


# -- the table is PyTorch's ------------------------------------------------------------------


def test_policy_table_lists_pytorchs_autocast_cpu_registrations():
    rows = [r for r in autocast_kernels.read_policy_table() if r.device_type == "cpu"]
    names = sorted(r.operator for r in rows)
    assert len(names) == len(set(names))
    expected = torch._C._dispatch_get_registrations_for_dispatch_key("AutocastCPU")
    assert names == sorted(expected)


def test_every_declared_listed_operator_is_tested():
    tested = {c[0] for c in LOWER_PRECISION_CASES + FP32_CASES + PROMOTE_CASES}
    rows = [r for r in autocast_kernels.read_policy_table() if r.device_type == "cpu"]
    declared = {
        r.operator.split("::", 1)[1]
        for r in rows
        if pyaten.dispatch.get_operator(r.operator) is not None
    }
    assert declared <= tested, sorted(declared - tested)


def test_explain_names_the_policy_line():
    assert pyaten.dispatch.dump_table("aten::mm")["AutocastCPU"] == "AutocastCPU"
    text = str(pyaten.dispatch.explain("aten::mm"))
    assert "autocast_lower_precision_fp_mm" in text
    row = {r.operator: r for r in autocast_kernels.read_policy_table()}["aten::mm"]
    assert f"autocast_policy.yaml:{row.line}" in text
    with open(autocast_kernels.POLICY_FILE) as f:
        assert f.read().splitlines()[row.line - 1].strip() == "- mm"
    # an unlisted operator falls through the key, as in PyTorch
    assert pyaten.dispatch.dump_table("aten::add.Tensor")["AutocastCPU"] == "fallthrough"
    assert "AutocastCPU: fallthrough" in torch._C._dispatch_dump_table("aten::add.Tensor")


# -- the region: state, nesting, disabled, threads -------------------------------------------


def _pair(shape, dtype="float32", seed=0, requires_grad=False):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    t = torch.from_numpy(values.copy()).to(getattr(torch, dtype))
    p = pyaten.from_numpy(t.float().numpy()).to(getattr(pyaten, dtype))
    if requires_grad:
        t.requires_grad_(True)
        p.requires_grad_(True)
    return p, t


def _dtype(x) -> str:
    return str(x.dtype).split(".")[-1]


def _same_dtypes(program) -> None:
    """`program(lib, tensors)` gives a list of tensors; dtypes must agree with torch's."""
    a, ta = _pair((3, 4), seed=1)
    b, tb = _pair((4, 5), seed=2)
    expected = program(torch, ta, tb)
    actual = program(pyaten, a, b)
    assert [_dtype(x) for x in actual] == [_dtype(x) for x in expected]


def test_nested_and_disabled_regions():
    def program(lib, a, b):
        out = []
        with lib.autocast("cpu"):
            out.append(lib.mm(a, b))
            with lib.autocast("cpu", enabled=False):
                out.append(lib.mm(a, b))
                out.append(lib.mm(out[0].float(), out[0].t().float()))
                with lib.autocast("cpu", dtype=lib.float16):
                    out.append(lib.mm(a, b))
                out.append(lib.mm(a, b))
            out.append(lib.mm(a, b))
            out.append(lib.mm(out[0], out[0].t().float()))  # mixed bfloat16 / float32 inputs
        out.append(lib.mm(a, b))
        return out

    _same_dtypes(program)
    assert not pyaten.is_autocast_enabled("cpu")
    assert pyaten.get_autocast_dtype("cpu") == pyaten.bfloat16


def _state(lib) -> tuple:
    return lib.is_autocast_enabled("cpu"), _dtype_name(lib.get_autocast_dtype("cpu"))


def test_state_queries_follow_torch():
    for lib in (torch, pyaten):
        states = []
        with lib.autocast("cpu", dtype=lib.float16):
            states.append(_state(lib))
            with lib.autocast("cpu", enabled=False):
                states.append(_state(lib))
        states.append(_state(lib))
        if lib is torch:
            expected = states
    assert states == expected
    for device in ["cpu", "cuda", "xpu", "mps", "hpu", "privateuseone"]:
        assert pyaten.amp.is_autocast_available(device) == torch.amp.is_autocast_available(device)
        expected_dtype = _dtype_name(torch.get_autocast_dtype(device))
        assert _dtype_name(pyaten.get_autocast_dtype(device)) == expected_dtype
    assert pyaten.amp.is_autocast_available("meta") is False


def _dtype_name(dtype) -> str:
    return str(dtype).split(".")[-1]


def test_integer_and_float64_inputs_are_left_alone():
    def program(lib, a, b):
        ia, ib = a.to(lib.int64), b.to(lib.int64)
        da, db = a.double(), b.double()
        with lib.autocast("cpu"):
            return [lib.mm(ia, ib), lib.mm(da, db), lib.cat([ia, ia]), lib.cat([da, a.bfloat16()])]

    _same_dtypes(program)


def test_unlisted_operators_keep_their_dtypes():
    def program(lib, a, b):
        with lib.autocast("cpu"):
            h = lib.mm(a, b)
            return [h + 1, lib.relu(h), h.sum(), lib.exp(a), h * a.sum()]

    _same_dtypes(program)


def test_autocast_is_thread_local():
    seen = []

    def worker():
        seen.append((pyaten.is_autocast_enabled("cpu"), _dtype(pyaten.mm(a, a))))

    a = pyaten.ones(2, 2)
    with pyaten.autocast("cpu"):
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(timeout=30)
        assert _dtype(pyaten.mm(a, a)) == "bfloat16"
    assert seen == [(False, "float32")]


def test_decorator_and_exceptions_restore_state():
    @pyaten.autocast("cpu")
    def f(a):
        return pyaten.mm(a, a)

    a = pyaten.ones(2, 2)
    assert f(a).dtype == pyaten.bfloat16
    assert f.__name__ == "f"
    with pytest.raises(ValueError, match="boom"):
        with pyaten.autocast("cpu", dtype=pyaten.float16):
            raise ValueError("boom")
    assert not pyaten.is_autocast_enabled("cpu")
    assert pyaten.get_autocast_dtype("cpu") == pyaten.bfloat16
    assert pyaten.mm(a, a).dtype == pyaten.float32
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pyaten.cpu.amp.autocast():
            assert pyaten.mm(a, a).dtype == pyaten.bfloat16
        with pyaten.amp.autocast("cpu"):
            assert pyaten.mm(a, a).dtype == pyaten.bfloat16


def test_cpu_amp_names_are_deprecated_as_in_torch():
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        pyaten.cpu.amp.autocast()
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.GradScaler\(args...\)` is deprecated"):
        pyaten.cpu.amp.GradScaler()


# -- autograd ----------------------------------------------------------------------------------


def test_autocast_inside_no_grad():
    def program(lib, a, b):
        with lib.no_grad(), lib.autocast("cpu"):
            out = lib.mm(a.requires_grad_(), b)
        return [out, lib.tensor(float(out.requires_grad))]

    _same_dtypes(program)
    a, _ = _pair((2, 2), requires_grad=True)
    with pyaten.no_grad(), pyaten.autocast("cpu"):
        assert not pyaten.mm(a, a).requires_grad


def test_backward_gives_gradients_in_the_parameters_dtype():
    grads = {}
    for lib in (torch, pyaten):
        w, tw = _pair((4, 5), seed=3, requires_grad=True)
        x, tx = _pair((3, 4), seed=4)
        b, tb = _pair((5,), seed=5, requires_grad=True)
        w, x, b = (tw, tx, tb) if lib is torch else (w, x, b)
        with lib.autocast("cpu"):
            h = lib.mm(x, w)
            loss = lib.nn.functional.mse_loss(h + b, lib.zeros(3, 5))
        assert _dtype(h) == "bfloat16" and _dtype(loss) == "float32"
        loss.backward()
        grads[lib] = (w.grad, b.grad)
    for expected, actual in zip(grads[torch], grads[pyaten]):
        assert _dtype(actual) == _dtype(expected) == "float32"
        np.testing.assert_allclose(_numpy(actual), _numpy(expected), rtol=3e-2, atol=3e-2)


def test_weight_casts_are_cached_until_the_outermost_region_exits():
    w, _ = _pair((4, 4), requires_grad=True)
    x, _ = _pair((4, 4))
    with pyaten.autocast("cpu"):
        with pyaten.dispatch.trace() as t:
            pyaten.mm(x, w)
            pyaten.mm(x, w)
        with pyaten.autocast("cpu", enabled=False):
            pass
        assert len(autocast_kernels._CACHE) == 1  # an inner exit keeps the cache
    assert len(autocast_kernels._CACHE) == 0
    casts = [n for node in t.nodes for n in node.notes if n["kind"] == "autocast_cast"]
    # x is not a leaf weight (no grad): cast each time; w cast once, then found in the cache
    assert [(c["argument"], c["cached"]) for c in casts] == [
        ("self", False),
        ("mat2", False),
        ("self", False),
        ("mat2", True),
    ]
    with pyaten.autocast("cpu", cache_enabled=False):
        pyaten.mm(x, w)
        assert len(autocast_kernels._CACHE) == 0


def test_trace_shows_the_autocast_kernel_and_its_casts():
    a = pyaten.ones(2, 2)
    with pyaten.dispatch.trace() as t:
        with pyaten.autocast("cpu"):
            pyaten.mm(a, a)
    node = t.nodes[0]
    assert node.key == "AutocastCPU"
    assert node.kernel == "autocast_lower_precision_fp_mm"
    assert "autocast_policy.yaml" in node.registered_at
    assert [c.operator for c in node.children] == ["aten::_to_copy"] * 2 + ["aten::mm"]
    text = str(t)
    assert "note autocast: policy=lower_precision_fp, dtype=pyaten.bfloat16" in text
    assert "note autocast_cast: argument=self, src=pyaten.float32, dst=pyaten.bfloat16" in text


# -- custom_fwd / custom_bwd --------------------------------------------------------------------


def _custom_function(lib):
    class MyMM(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu", cast_inputs=lib.float32)
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a.mm(b)

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad.mm(b.t()), a.t().mm(grad)

    return MyMM


def test_custom_fwd_casts_inputs_and_custom_bwd_keeps_the_state():
    results = {}
    for lib in (torch, pyaten):
        a, ta = _pair((2, 3), seed=6, requires_grad=True)
        b, tb = _pair((3, 2), seed=7, requires_grad=True)
        a, b = (ta, tb) if lib is torch else (a, b)
        with lib.autocast("cpu"):
            out = _custom_function(lib).apply(a.bfloat16(), b)
        out.sum().backward()
        results[lib] = [out, a.grad, b.grad]
    assert [_dtype(x) for x in results[pyaten]] == [_dtype(x) for x in results[torch]]
    for e, a in zip(results[torch], results[pyaten]):
        np.testing.assert_allclose(_numpy(a), _numpy(e), rtol=2e-2, atol=2e-2)


# -- bad input ---------------------------------------------------------------------------------


def _error(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - compared with torch's
            return type(e).__name__, str(e).replace("torch", "pyaten")
    return None


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.autocast("foo"),
        lambda lib: lib.autocast(1),
        lambda lib: lib.autocast("meta"),
        lambda lib: lib.autocast("meta", dtype=lib.float16),
        lambda lib: lib.autocast("cpu")(3),
        lambda lib: lib.get_autocast_dtype(3),
        lambda lib: lib.set_autocast_dtype("cpu", 3),
        lambda lib: lib.is_autocast_enabled("foo"),
        lambda lib: lib.amp.custom_fwd(device_type=1),
        lambda lib: lib.autocast("cpu", dtype="x").__enter__(),
    ],
)
def test_bad_arguments_raise_as_torch(call):
    expected = _error(lambda: call(torch))
    assert expected is not None
    assert _error(lambda: call(pyaten)) == expected


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_unsupported_dtype_warns_and_disables_as_torch(dtype):
    for lib in (torch, pyaten):
        with pytest.warns(UserWarning) as record:
            with lib.autocast("cpu", dtype=getattr(lib, dtype)):
                enabled = lib.is_autocast_enabled("cpu")
                current = _dtype_name(lib.get_autocast_dtype("cpu"))
        message = str(record[0].message).replace("torch", "pyaten")
        if lib is torch:
            expected = (message, enabled, current)
    assert (message, enabled, current) == expected
    assert "CPU Autocast only supports dtypes of pyaten.bfloat16, pyaten.float16" in message


def test_cuda_autocast_warns_and_disables_as_a_cpu_build():
    for lib in (torch, pyaten):
        with pytest.warns(UserWarning, match="CUDA is not available"):
            with lib.autocast("cuda"):
                assert not lib.is_autocast_enabled("cuda")


# -- GradScaler ----------------------------------------------------------------------------------


def _mlp(lib, seed: int = 0):
    rng = np.random.default_rng(seed)
    model = lib.nn.Sequential(
        lib.nn.Linear(6, 16), lib.nn.ReLU(), lib.nn.Linear(16, 16), lib.nn.Tanh(),
        lib.nn.Linear(16, 3),
    )  # fmt: skip
    with lib.no_grad():
        for p in model.parameters():
            values = rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.4
            p.copy_(lib.from_numpy(values))
    return model


def _train(lib, steps: int, inject_inf_at: int | None = None, **scaler_args):
    model = _mlp(lib)
    rng = np.random.default_rng(1)
    x = lib.from_numpy(rng.standard_normal((8, 6)).astype(np.float32))
    y = lib.from_numpy(rng.integers(0, 3, 8).astype(np.int64))
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = lib.amp.GradScaler("cpu", **scaler_args)
    losses, scales, steps_taken = [], [], []
    for step in range(steps):
        optimizer.zero_grad()
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out = model(x)
            loss = lib.nn.functional.cross_entropy(out, y)
        assert _dtype(out) == "bfloat16" and _dtype(loss) == "float32"
        scaler.scale(loss).backward()
        if step == inject_inf_at:
            model[0].weight.grad[0, 0] = float("inf")
        before = model[2].weight.detach().clone()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
        scales.append(scaler.get_scale())
        steps_taken.append(not bool((model[2].weight == before).all()))
    return losses, scales, steps_taken, scaler.state_dict()


def test_mlp_trained_under_autocast_with_grad_scaler_matches_torch():
    expected = _train(torch, 6, growth_interval=2)
    actual = _train(pyaten, 6, growth_interval=2)
    np.testing.assert_allclose(actual[0], expected[0], rtol=2e-2, atol=2e-2)
    assert actual[1:] == expected[1:]
    assert expected[0][-1] < expected[0][0]  # it trains


def test_grad_scaler_skips_a_step_with_an_injected_inf_as_torch():
    expected = _train(torch, 5, inject_inf_at=2, init_scale=1024.0, growth_interval=2)
    actual = _train(pyaten, 5, inject_inf_at=2, init_scale=1024.0, growth_interval=2)
    assert actual[2] == expected[2] == [True, True, False, True, True]
    assert actual[1] == expected[1]  # scale: grown, backed off at the inf, grown again
    assert actual[3] == expected[3]
    np.testing.assert_allclose(actual[0], expected[0], rtol=2e-2, atol=2e-2)


def test_grad_scaler_state_dict_round_trip():
    for lib in (torch, pyaten):
        scaler = lib.amp.GradScaler("cpu", init_scale=8.0, growth_interval=3)
        scaler.scale(lib.ones(()))
        state = scaler.state_dict()
        other = lib.amp.GradScaler("cpu")
        other.load_state_dict(state)
        if lib is torch:
            expected = (state, other.state_dict())
    assert (state, other.state_dict()) == expected
    disabled = pyaten.amp.GradScaler("cpu", enabled=False)
    assert disabled.state_dict() == {} and disabled.get_scale() == 1.0
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        pyaten.amp.GradScaler("cpu").load_state_dict({})


def _misuse(lib, what: str):
    p = lib.nn.Parameter(lib.ones(2))
    optimizer = lib.optim.SGD([p], lr=0.1)
    scaler = lib.amp.GradScaler("cpu")
    scaler.scale((p * 2).sum()).backward()
    if what == "unscale twice":
        scaler.unscale_(optimizer)
        scaler.unscale_(optimizer)
    elif what == "unscale after step":
        scaler.step(optimizer)
        scaler.unscale_(optimizer)
    elif what == "step twice":
        scaler.step(optimizer)
        scaler.step(optimizer)
    elif what == "closure":
        scaler.step(optimizer, closure=lambda: None)
    elif what == "update before scale":
        lib.amp.GradScaler("cpu").update()
    elif what == "bad growth factor":
        lib.amp.GradScaler("cpu", growth_factor=1.0)
    elif what == "fp16 gradients":
        p.grad = p.grad.half()
        scaler.unscale_(optimizer)


@pytest.mark.parametrize(
    "what",
    [
        "unscale twice", "unscale after step", "step twice", "closure", "update before scale",
        "bad growth factor", "fp16 gradients",
    ],
)  # fmt: skip
def test_grad_scaler_misuse_raises_as_torch(what):
    expected = _error(lambda: _misuse(torch, what))
    assert expected is not None
    assert _error(lambda: _misuse(pyaten, what)) == expected


def test_cuda_grad_scaler_disables_itself_as_a_cpu_build():
    for lib in (torch, pyaten):
        with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
            scaler = lib.amp.GradScaler()
        assert not scaler.is_enabled()


# -- the two operators ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("bad", [None, "inf", "-inf", "nan"])
def test_foreach_non_finite_check_and_unscale_matches_torch(dtype, bad):
    results = []
    for lib in (torch, pyaten):
        first = _pair((3, 4), dtype, seed=8)[0 if lib is pyaten else 1]
        second = _pair((5,), "float32", seed=9)[0 if lib is pyaten else 1]
        if bad is not None:
            first[1, 2] = float(bad)
        found = lib.zeros(())
        lib._amp_foreach_non_finite_check_and_unscale_([first, second], found, lib.full((), 0.25))
        results.append([first, second, found])
    for e, a in zip(*results):
        assert _dtype(a) == _dtype(e)
        np.testing.assert_array_equal(_numpy(a), _numpy(e))


@pytest.mark.parametrize(
    "tracker,found,interval",
    [(0, 0.0, 3), (2, 0.0, 3), (5, 1.0, 3), (0, 0.0, 1), (0, float("nan"), 2)],
)
def test_update_scale_matches_torch(tracker, found, interval):
    results = []
    for lib in (torch, pyaten):
        scale = lib.full((), 64.0)
        growth = lib.full((), tracker, dtype=lib.int32)
        out = lib._amp_update_scale_(scale, growth, lib.full((), found), 2.0, 0.5, interval)
        assert out is scale
        results.append((scale.item(), growth.item()))
    assert results[1] == results[0]
    big = pyaten.full((), 2.0**127)
    pyaten._amp_update_scale_(
        big, pyaten.ones((), dtype=pyaten.int32), pyaten.zeros(()), 4.0, 0.5, 2
    )
    assert big.item() == 2.0**127  # a grown scale that would overflow is not taken


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib._amp_foreach_non_finite_check_and_unscale_(
            [lib.ones(2)], lib.zeros((), dtype=lib.float64), lib.ones(())
        ),
        lambda lib: lib._amp_foreach_non_finite_check_and_unscale_(
            [lib.ones(2)], lib.zeros(2), lib.ones(())
        ),
        lambda lib: lib._amp_foreach_non_finite_check_and_unscale_(
            [lib.ones(2)], lib.zeros(()), lib.ones(2)
        ),
        lambda lib: lib._amp_foreach_non_finite_check_and_unscale_(
            [lib.ones(2, dtype=lib.int32)], lib.zeros(()), lib.ones(())
        ),
        lambda lib: lib._amp_update_scale_(
            lib.ones(()), lib.zeros((), dtype=lib.int64), lib.zeros(()), 2.0, 0.5, 2
        ),
        lambda lib: lib._amp_update_scale_(
            lib.ones(2), lib.zeros((), dtype=lib.int32), lib.zeros(()), 2.0, 0.5, 2
        ),
        lambda lib: lib._amp_update_scale_(
            lib.ones((), dtype=lib.float64), lib.zeros((), dtype=lib.int32), lib.zeros(()), 2.0,
            0.5, 2,
        ),
    ],
)  # fmt: skip
def test_amp_operator_errors_match_torch(call):
    expected = _error(lambda: call(torch))
    assert expected is not None
    assert _error(lambda: call(pyaten)) == expected


def test_amp_operators_have_meta_kernels():
    for lib in (torch, pyaten):
        m = lib.empty((), device="meta")
        tracker = lib.empty((), dtype=lib.int32, device="meta")
        out = lib._amp_update_scale_(m, tracker, m, 2.0, 0.5, 2)
        assert out is m
        lib._amp_foreach_non_finite_check_and_unscale_([lib.empty(3, device="meta")], m, m)


# -- a plug-in device opts in ----------------------------------------------------------------


def test_a_plugin_device_autocasts_after_opting_in():
    import sys
    from pathlib import Path

    from pyaten import backends

    already = "openreg" in backends.devices()
    try:
        import pyaten_openreg
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "extensions" / "openreg"))
        import pyaten_openreg
    if "openreg" not in backends.devices():
        pyaten_openreg.register()
    before = pyaten.dispatch.dump_table("aten::add.Tensor").get("AutocastPrivateUse1")
    try:
        with pytest.raises(RuntimeError, match="unsupported autocast device_type 'openreg'"):
            pyaten.autocast("openreg", dtype=pyaten.float16)
        handle = pyaten.amp.register_autocast_device("openreg")
        try:
            a = pyaten.randn(3, 4).to("openreg")
            b = pyaten.randn(4, 5).to("openreg")
            with pyaten.autocast("openreg", dtype=pyaten.bfloat16):
                assert pyaten.mm(a, b).dtype == pyaten.bfloat16
                assert (a + 1).dtype == pyaten.float32  # unlisted: falls through
                assert pyaten.mm(a.cpu(), b.cpu()).dtype == pyaten.float32  # CPU: not on
            with pyaten.autocast("openreg"):  # PyTorch's PrivateUse1 default: float16
                assert pyaten.mm(a, b).dtype == pyaten.float16
            with pytest.warns(UserWarning, match="openreg Autocast only supports"):
                pyaten.autocast("openreg", dtype=pyaten.float64)
            table = pyaten.dispatch.dump_table("aten::add.Tensor")
            assert table["AutocastPrivateUse1"] == "fallthrough"
        finally:
            handle.remove()
        assert pyaten.dispatch.dump_table("aten::add.Tensor").get("AutocastPrivateUse1") == before
        assert not pyaten.amp.is_autocast_available("openreg")
    finally:
        if not already:
            pyaten_openreg.unregister()


def _train_demo_cnn(lib, steps: int = 4):
    from pyaten.commands.demo import build_model, load_split

    images, labels, _, _ = load_split(0)
    model = build_model(lib.nn)
    rng = np.random.default_rng(2)
    with lib.no_grad():
        for p in model.parameters():
            values = rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.3
            p.copy_(lib.from_numpy(values))
    optimizer = lib.optim.SGD(model.parameters(), lr=0.05)
    scaler = lib.amp.GradScaler("cpu")
    losses = []
    for step in range(steps):
        x = lib.from_numpy(images[step * 32 : (step + 1) * 32].copy())
        y = lib.from_numpy(labels[step * 32 : (step + 1) * 32].copy())
        optimizer.zero_grad()
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out = model(x)
            loss = lib.nn.functional.cross_entropy(out, y)
        assert _dtype(out) == "bfloat16"
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    return losses, scaler.get_scale()


def test_demo_cnn_trained_under_autocast_matches_torch():
    expected_losses, expected_scale = _train_demo_cnn(torch)
    losses, scale = _train_demo_cnn(pyaten)
    np.testing.assert_allclose(losses, expected_losses, rtol=3e-2, atol=3e-2)
    assert scale == expected_scale


def _public_api_dtypes(lib) -> dict[str, str]:
    """Dtypes of what a model calls (functions, methods, modules) under autocast."""
    F = lib.nn.functional
    rng = np.random.default_rng(0)

    def make(*shape):
        return lib.from_numpy(rng.standard_normal(shape).astype(np.float32))

    x, w, q, img, k = (
        make(2, 3, 4),
        make(5, 4),
        make(1, 2, 3, 4),
        make(1, 2, 5, 5),
        make(3, 2, 3, 3),
    )
    target = lib.from_numpy(np.array([1, 0], dtype=np.int64))
    out = {}
    with lib.autocast("cpu"):
        h = out["linear"] = F.linear(x, w)
        out["matmul"] = lib.matmul(x, w.t())
        out["@"] = x @ w.t()
        out["Tensor.mm"] = x[0].mm(w.t())
        out["sdpa"] = F.scaled_dot_product_attention(q, q, q)
        c = out["conv2d"] = F.conv2d(img, k)
        out["nn.Conv2d"] = lib.nn.Conv2d(2, 3, 3)(img)
        out["nn.Linear"] = lib.nn.Linear(4, 3)(x)
        out["layer_norm"] = F.layer_norm(x, (4,))
        out["softmax"] = F.softmax(h, -1)
        out["cross_entropy"] = F.cross_entropy(h[0, :2], target)
        out["mse_loss"] = F.mse_loss(h, h)
        out["binary_cross_entropy"] = F.binary_cross_entropy(lib.sigmoid(h), lib.sigmoid(h))
        out["MultiheadAttention"] = lib.nn.MultiheadAttention(4, 2, batch_first=True)(x, x, x)[0]
        out["einsum"] = lib.einsum("bij,kj->bik", x, w)
        out["prod"] = lib.prod(h)
        out["cat"] = lib.cat([h, x.sum(-1, keepdim=True).expand(2, 3, 5)])
        out["norm"] = lib.norm(h)
        out["cdist"] = lib.cdist(h, h)
        out["avg_pool2d"] = F.avg_pool2d(c, 2)
        out["interpolate"] = F.interpolate(c, scale_factor=2)
        out["tensordot"] = lib.tensordot(x, w, dims=([2], [1]))
        out["baddbmm"] = lib.baddbmm(lib.zeros(2, 3, 3), x, x.transpose(1, 2))
    return {name: _dtype(t) for name, t in out.items()}


def test_public_api_under_autocast_gives_torchs_dtypes():
    assert _public_api_dtypes(pyaten) == _public_api_dtypes(torch)


# -- property: any mix of input dtypes gives torch's dtype (or torch's error) --------------------

_MIX = ["float32", "bfloat16", "float16", "float64", "int64"]


@settings(max_examples=40, deadline=None)
@given(
    op=st.sampled_from(["mm", "cat", "stack", "addmm", "prod", "mse_loss"]),
    dtypes=st.lists(st.sampled_from(_MIX), min_size=3, max_size=3),
    autocast_dtype=st.sampled_from(LOWER),
    n=st.integers(1, 4),
)
def test_any_dtype_mix_matches_torch(op, dtypes, autocast_dtype, n):
    def program(lib):
        values = np.arange(n * n, dtype=np.float32).reshape(n, n) / 7 + 1
        a, b, c = (lib.from_numpy(values).to(getattr(lib, d)) for d in dtypes)
        with lib.autocast("cpu", dtype=getattr(lib, autocast_dtype)):
            if op == "mm":
                return lib.mm(a, b)
            if op == "cat":
                return lib.cat([a, b, c])
            if op == "stack":
                return lib.stack([a, b])
            if op == "addmm":
                return lib.addmm(c, a, b)
            if op == "prod":
                return lib.prod(a)
            return lib.nn.functional.mse_loss(a, b)

    def outcome(lib):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return _dtype(program(lib))
        except (RuntimeError, TypeError, ValueError, NotImplementedError) as e:
            return type(e).__name__

    assert outcome(pyaten) == outcome(torch)


# -- the two policies CPU does not use (a plug-in's table may) ---------------------------------


def test_fp32_set_opt_dtype_and_fp32_append_dtype_policies(tmp_path):
    table = tmp_path / "policy.yaml"
    table.write_text(
        "dev:\n"
        "  fp32_set_opt_dtype:\n"
        "    - softmax.int\n"
        "    - sum\n"
        "  fp32_append_dtype:\n"
        "    - norm.Scalar -> norm.ScalarOpt_dtype\n"
    )
    rows = {r.operator: r for r in autocast_kernels.read_policy_table(str(table))}
    assert rows["aten::norm.Scalar"].target == "norm.ScalarOpt_dtype"
    assert rows["aten::softmax.int"].line == 3
    bit = autocast_kernels.AUTOCAST_BITS["cpu"]

    def kernel(name):
        row = rows[name]
        cpu_row = autocast_kernels.PolicyRow("cpu", row.operator, row.policy, row.line, row.target)
        return autocast_kernels.make_kernel(cpu_row, bit)

    x, tx = _pair((3, 4), "bfloat16", seed=10)
    with pyaten.autocast("cpu"):
        softmax = kernel("aten::softmax.int")(x, 1, None)
        kept = kernel("aten::softmax.int")(x, 1, pyaten.bfloat16)  # an explicit dtype is kept
        ints = kernel("aten::sum")(x.long(), None)  # not eligible: the dtype is not set
        norm = kernel("aten::norm.Scalar")(x, 2)
    expected = [
        torch.softmax(tx, 1, dtype=torch.float32),
        torch.softmax(tx, 1),
        tx.long().sum(),
        torch.norm(tx, 2, dtype=torch.float32),
    ]
    for e, a in zip(expected, [softmax, kept, ints, norm]):
        assert _dtype(a) == _dtype(e)
        np.testing.assert_allclose(_numpy(a), _numpy(e), rtol=1e-2, atol=1e-2)


def test_a_table_with_an_unknown_policy_is_refused(tmp_path):
    table = tmp_path / "policy.yaml"
    table.write_text("cpu:\n  fp64:\n    - mm\n")
    with pytest.raises(ValueError, match=r"policy.yaml:2: unknown autocast policy 'fp64'"):
        autocast_kernels.read_policy_table(str(table))


def test_a_dispatch_mode_sees_the_casts_as_in_torch():
    import torch.utils._python_dispatch as torch_dispatch

    import pyaten.utils._python_dispatch as pyaten_dispatch

    def seen(lib, module):
        calls = []

        class Log(module.TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                calls.append(str(func))
                return func(*args, **(kwargs or {}))

        a, w = lib.ones(2, 2), lib.ones(2, 2, requires_grad=True)
        with lib.autocast("cpu"), Log():
            lib.mm(a, w)
            lib.mm(a, w) + 1  # w's cast now comes from the cache
        return calls

    expected = seen(torch, torch_dispatch)
    assert expected.count("aten._to_copy.default") == 3
    assert seen(pyaten, pyaten_dispatch) == expected


def test_a_plugin_manifest_opts_into_autocast(tmp_path, monkeypatch) -> None:
    """`autocast: cpu` in a plug-in device's manifest registers the CPU policy lists on its
    AutocastPrivateUse1 key; unregistering the device removes them."""
    import sys
    from pathlib import Path

    from pyaten import backends

    try:
        import pyaten_openreg
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "extensions" / "openreg"))
        import pyaten_openreg
    was_registered = "openreg" in backends.devices()
    if was_registered:
        pyaten_openreg.unregister()
    before = pyaten.dispatch.dump_table("aten::mm").get("AutocastPrivateUse1")
    manifest = tmp_path / "openreg.yaml"
    manifest.write_text(pyaten_openreg.MANIFEST.read_text() + "autocast: cpu\n")
    monkeypatch.setattr(pyaten_openreg, "MANIFEST", manifest)
    pyaten_openreg.register()
    try:
        assert pyaten.amp.is_autocast_available("openreg")
        a = pyaten.randn(3, 4).to("openreg")
        b = pyaten.randn(4, 5).to("openreg")
        with pyaten.autocast("openreg", dtype=pyaten.bfloat16):
            assert pyaten.mm(a, b).dtype == pyaten.bfloat16
        assert pyaten.dispatch.dump_table("aten::mm")["AutocastPrivateUse1"] != before
    finally:
        pyaten_openreg.unregister()
    assert pyaten.dispatch.dump_table("aten::mm").get("AutocastPrivateUse1") == before
    if was_registered:
        monkeypatch.undo()
        pyaten_openreg.register()


def test_manifest_autocast_key_is_checked() -> None:
    from pyaten.declarations.backend import read_backend_yaml

    text = "backend: PrivateUse1\ncpp_namespace: x\nsupported: []\nautocast: cpu\n"
    _, diagnostics = read_backend_yaml(text, "bad.yaml", [])
    assert any("'autocast' is for plug-in devices" in str(d) for d in diagnostics)
    text = "backend: toydev\ncpp_namespace: x\nsupported: []\nautocast: [cpu]\n"
    _, diagnostics = read_backend_yaml(text, "bad.yaml", [])
    assert any("'autocast' names the device type" in str(d) for d in diagnostics)
    _, diagnostics = read_backend_yaml(text.replace("[cpu]", "cpu"), "ok.yaml", [])
    assert not [d for d in diagnostics if d.severity == "error"]
