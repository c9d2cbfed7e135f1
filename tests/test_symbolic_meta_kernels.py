"""Meta kernels that follow a symbolic size instead of pinning it: `arange` with size bounds,
the padding kernels, and `interpolate` by an exact scale or a size read from the input. Each
function is compiled with `dynamic=True` and run on three sizes: one capture serves them all,
and every result equals eager pyaten's and PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pyaten


def _arange_plus(m, x):
    return m.arange(x.shape[1]) + x


def _arange_step(m, x):
    return m.arange(2, x.shape[0] * 2, 3).float().sum() + x


def _arange_down(m, x):
    return m.arange(x.shape[0] + 4, 0, -2).float()


def _pad_constant(m, x):
    return m.nn.functional.pad(x, (1, 2)) * 2


def _pad_negative(m, x):
    return m.nn.functional.pad(x, (-1, 3, 2, 0), value=1.5)


def _pad_reflect(m, x):
    return m.nn.functional.pad(x.unsqueeze(0), (2, 1), mode="reflect") + 1


def _pad_replicate(m, x):
    return m.nn.functional.pad(x.unsqueeze(0), (1, 3), mode="replicate") - 1


def _upsample_by_two(m, x):
    return m.nn.functional.interpolate(x.unsqueeze(0), scale_factor=2.0)


def _upsample_by_one_and_a_half(m, x):
    return m.nn.functional.interpolate(x.unsqueeze(0), scale_factor=1.5, mode="linear")


def _downsample_by_half(m, x):
    return m.nn.functional.interpolate(x.unsqueeze(0), scale_factor=0.5, mode="nearest")


def _upsample_to_a_size(m, x):
    return m.nn.functional.interpolate(x.unsqueeze(0), size=x.shape[-1] * 3, mode="linear",
                                       align_corners=True)


CASES = [_arange_plus, _arange_step, _arange_down, _pad_constant, _pad_negative,
         _pad_reflect, _pad_replicate, _upsample_by_two, _upsample_by_one_and_a_half,
         _downsample_by_half, _upsample_to_a_size]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_compile_dynamic_captures_once_and_matches_eager_and_torch(case) -> None:  # noqa: ANN001
    def fn(x):  # noqa: ANN001, ANN202
        return case(pyaten, x)

    compiled = pyaten.compile(fn, dynamic=True)
    rng = np.random.default_rng(0)
    for rows in (6, 9, 14):
        values = rng.standard_normal((rows, rows + 5)).astype(np.float32)
        x = pyaten.tensor(values)
        got, eager, want = compiled(x), fn(x), case(torch, torch.tensor(values))
        assert tuple(got.shape) == tuple(eager.shape) == tuple(want.shape)
        assert got.dtype == eager.dtype
        np.testing.assert_allclose(got.numpy(), eager.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    assert compiled.report.captures == 1, compiled.report.guard_failures
    assert compiled.report.compiled_calls == 2


def test_an_inexact_scale_still_specializes_and_stays_correct() -> None:
    def fn(x):  # noqa: ANN001, ANN202
        return pyaten.nn.functional.interpolate(x.unsqueeze(0), scale_factor=0.7)

    compiled = pyaten.compile(fn, dynamic=True)
    for cols in (7, 10):
        x = pyaten.randn(3, cols)
        got = compiled(x)
        want = torch.nn.functional.interpolate(torch.tensor(x.numpy()).unsqueeze(0),
                                               scale_factor=0.7)
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy())
    assert compiled.report.captures == 2  # floor(n * 0.7) is read with the hint


def test_arange_with_symbolic_bounds_keeps_its_errors() -> None:
    compiled = pyaten.compile(lambda x: pyaten.arange(x.shape[0], 0), dynamic=True)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent"):
        compiled(pyaten.randn(5))


@pytest.mark.parametrize("exponent", ["arange", "tensor of the input"])
def test_a_symbolic_size_to_a_tensor_power_keeps_the_integer_dtype(exponent) -> None:
    # `n ** tensor` with a symbolic size n: Tensor.__rpow__ takes n as an int (an int64
    # result for int64 exponents), never as a float
    def case(m, x):  # noqa: ANN001, ANN202
        power = m.arange(3) if exponent == "arange" else x * 0 + 2
        return x.shape[0] ** power

    compiled = pyaten.compile(lambda x: case(pyaten, x), dynamic=True)
    for n in (3, 5, 7):
        got = compiled(pyaten.arange(n))
        want = case(torch, torch.arange(n))
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        assert got.tolist() == want.tolist()
