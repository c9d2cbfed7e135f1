"""pyaten.signal.windows against torch.signal.windows: PyTorch's OpInfo samples, lengths,
both symmetries, parameters, dtypes, gradients and errors."""

from __future__ import annotations

import warnings

import pytest
import torch
from _helpers import assert_same, assert_same_outcome, to_pyaten

import pyaten
import pyaten.signal.windows as ours_windows

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

NAMES = ("bartlett blackman cosine exponential gaussian general_cosine general_hamming hamming "
         "hann kaiser nuttall").split()
EXTRA = {"general_cosine": {"a": [0.46, 0.23, 0.31]}}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("M", [0, 1, 2, 5, 8])
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows_match_torch(name, M, sym, dtype):
    kwargs = dict(EXTRA.get(name, {}), sym=sym)
    theirs = getattr(torch.signal.windows, name)(M, dtype=getattr(torch, dtype), **kwargs)
    ours = getattr(ours_windows, name)(M, dtype=getattr(pyaten, dtype), **kwargs)
    assert_same(ours, theirs, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("info", [i for i in op_db if i.name.startswith("signal.windows.")],
                         ids=lambda i: i.name)
def test_opinfo_samples_match_torch(info):
    name = info.name.rpartition(".")[2]
    for sample in info.sample_inputs("cpu", torch.float64):
        kwargs = to_pyaten(dict(sample.kwargs))
        assert_same_outcome(
            lambda s=sample, k=kwargs: getattr(ours_windows, name)(s.input, *s.args, **k),
            lambda s=sample: info.op(s.input, *s.args, **s.kwargs), rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("make", [
    lambda w, m: w.exponential(6, center=1.5, tau=2.0, sym=False),
    lambda w, m: w.gaussian(7, std=0.7),
    lambda w, m: w.kaiser(9, beta=4.0, sym=False),
    lambda w, m: w.general_hamming(6, alpha=0.3),
    lambda w, m: w.hann(4, requires_grad=True),
    lambda w, m: w.hann(-1),
    lambda w, m: w.hann(4, dtype=m.int64),
    lambda w, m: w.exponential(4, tau=0.0),
    lambda w, m: w.exponential(4, center=1.0),
    lambda w, m: w.gaussian(4, std=-1.0),
    lambda w, m: w.kaiser(4, beta=-1.0),
    lambda w, m: w.general_cosine(4, a=[]),
    lambda w, m: w.general_cosine(4, a=3),
])
def test_parameters_and_errors_match_torch(make):
    assert_same_outcome(lambda: make(ours_windows, pyaten), lambda: make(torch.signal.windows,
                                                                         torch),
                        rtol=1e-6, atol=1e-6)


def test_reached_as_torch_signal_windows_is():
    assert pyaten.signal.windows is ours_windows
    assert ours_windows.hann(5, requires_grad=True).requires_grad
