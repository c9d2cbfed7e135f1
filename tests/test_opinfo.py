"""PyTorch's own OpInfo sample inputs, run through pyaten and torch.

`torch.testing._internal.common_methods_invocations.op_db` describes each operator with sample
inputs chosen by PyTorch's developers (broadcasting, scalars, keyword arguments, edge values).
Every OpInfo of the pointwise, reduction and scan surface whose name pyaten has runs here in
float32 and int64: the result, or the error, must be torch's.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from _helpers import assert_same, run_both, to_pyaten

import pyaten

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

# The pointwise, reduction and scan surface that OpInfo covers (names as OpInfo spells them;
# variants such as "div" with variant_test_name "floor_rounding" are included).
SURFACE = frozenset("""
abs neg positive sign sgn signbit ceil floor round trunc frac exp exp2 expm1 log log2 log10
log1p sqrt rsqrt square reciprocal sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh
sigmoid logit erf erfc erfinv lgamma digamma polygamma mvlgamma i0 sinc deg2rad rad2deg
nan_to_num isfinite isinf isnan isneginf isposinf isreal angle conj conj_physical resolve_conj
resolve_neg real imag bitwise_not logical_not clamp clamp_min clamp_max
add sub rsub mul div true_divide floor_divide remainder fmod pow float_power atan2 hypot
copysign nextafter ldexp logaddexp logaddexp2 maximum minimum fmax fmin eq ne lt le gt ge
logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor bitwise_left_shift
bitwise_right_shift gcd lcm heaviside xlogy lerp addcmul addcdiv where isclose allclose equal
polar complex
sum nansum prod mean nanmean std var std_mean var_mean amax amin aminmax max min argmax argmin
all any count_nonzero logsumexp norm dist median nanmedian mode kthvalue quantile nanquantile
cumsum cumprod cummax cummin logcumsumexp diff trace softmax log_softmax
""".split())

DTYPES = (torch.float32, torch.int64)
# Among equal values PyTorch's selection picks an unspecified index: compare values only.
INDEX_OF_TIES_UNSPECIFIED = frozenset({"mode", "kthvalue", "median", "nanmedian"})
# OpInfo variants that call what pyaten does not have yet, with the reason.
NOT_YET: dict[tuple[str, str], str] = {}


def _cases():
    cases = []
    for info in op_db:
        if info.name not in SURFACE or not hasattr(pyaten, info.name):
            continue
        if info.op is not getattr(torch, info.name, None):
            continue  # OpInfo calls a lambda with its own argument order (polygamma, where)
        if (info.name, info.variant_test_name) in NOT_YET:
            continue
        for dtype in DTYPES:
            if dtype in info.supported_dtypes("cpu") or dtype is torch.float32:
                label = info.name + (f".{info.variant_test_name}" if info.variant_test_name
                                     else "")
                cases.append(pytest.param(info, dtype, id=f"{label}-{str(dtype)[6:]}"))
    return cases


def _outcome(info, sample, dtype):
    """Run one sample in both; compare outcomes. Returns False when torch itself refuses."""
    args = (to_pyaten(sample.input), *to_pyaten(tuple(sample.args)))
    kwargs = to_pyaten(dict(sample.kwargs))
    ours_fn = getattr(pyaten, info.name)
    pair = run_both(lambda: ours_fn(*args, **kwargs),
                    lambda: info.op(sample.input, *sample.args, **sample.kwargs))
    if pair is None:
        return False
    ours, theirs = pair
    if info.name in INDEX_OF_TIES_UNSPECIFIED and isinstance(theirs, tuple):
        ours, theirs = ours[0], theirs[0]
    if isinstance(theirs, torch.Tensor) and theirs.dtype in (torch.float32, torch.complex64):
        assert_same(ours, theirs, rtol=1e-4, atol=1e-5)
    else:
        assert_same(ours, theirs)
    return True


@pytest.mark.parametrize("info,dtype", _cases())
def test_opinfo_samples(info, dtype) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = list(info.sample_inputs("cpu", dtype, requires_grad=False))
    for sample in samples[:12]:  # the first dozen: the shapes, broadcasting and keywords
        _outcome(info, sample, dtype)
