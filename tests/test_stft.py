"""stft and istft against PyTorch: every argument (n_fft, hop_length, win_length, window,
center, pad_mode, normalized, onesided, return_complex, align_to_window, length), real and
complex signals, batched and not, values, dtypes, shapes and strides; the OpInfo samples and
their gradients; Meta; and PyTorch's errors word for word.
"""

from __future__ import annotations

import itertools
import warnings

import hypothesis.strategies as st
import pytest
import torch
from _grad_helpers import check_grads, check_opinfo_grads, opinfo_grad_cases
from _helpers import assert_same, compare_samples, from_torch, same_error
from hypothesis import given, settings

import pyaten

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _signal(*shape, dtype=torch.float64, seed=0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        return torch.randn(*shape, dtype=dtype, generator=g)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)


def _window(kind: str | None, n: int, dtype=torch.float64) -> torch.Tensor | None:
    if kind is None:
        return None
    if kind == "hann":
        return torch.hann_window(n, dtype=dtype)
    return torch.ones(n, dtype=dtype) * 0.5


def _both(fn_name: str, x: torch.Tensor, window, *args, **kwargs):
    expected = getattr(torch, fn_name)(x, *args, window=window, **kwargs)
    actual = getattr(pyaten, fn_name)(from_torch(x), *args,
                                      window=None if window is None else from_torch(window),
                                      **kwargs)
    return actual, expected


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_stft_matches_torch(data) -> None:
    n_fft = data.draw(st.integers(4, 12))  # below 4 the default hop_length is 0
    win = data.draw(st.one_of(st.none(), st.integers(1, n_fft)))
    hop = data.draw(st.one_of(st.none(), st.integers(1, 5)))
    center = data.draw(st.booleans())
    pad_mode = data.draw(st.sampled_from(["reflect", "constant", "replicate", "circular"]))
    kind = data.draw(st.sampled_from([None, "hann", "flat"]))
    dtype = data.draw(st.sampled_from([torch.float32, torch.float64, torch.complex64,
                                       torch.complex128]))
    batch = data.draw(st.sampled_from([(), (3,)]))
    length = data.draw(st.integers(n_fft, n_fft + 20))
    x = _signal(*batch, length, dtype=dtype, seed=length)
    window = _window(kind, n_fft if win is None else win, dtype=x.real.dtype)
    complex_in = dtype.is_complex
    onesided = data.draw(st.sampled_from([None, False] if complex_in else [None, True, False]))
    return_complex = data.draw(st.sampled_from([True] if complex_in else [True, False]))
    kwargs = dict(hop_length=hop, win_length=win, center=center, pad_mode=pad_mode,
                  normalized=data.draw(st.booleans()), onesided=onesided,
                  return_complex=return_complex)
    if not center and win is not None and data.draw(st.booleans()):
        kwargs["align_to_window"] = data.draw(st.booleans())
    try:
        expected = torch.stft(x, n_fft, window=window, **kwargs)
    except RuntimeError:  # e.g. align_to_window's last frame past the signal: the same error
        same_error(lambda: _both("stft", x, window, n_fft, **kwargs),
                   lambda: torch.stft(x, n_fft, window=window, **kwargs))
        return
    actual, expected = _both("stft", x, window, n_fft, **kwargs)
    assert_same(actual, expected, strides=True)


@pytest.mark.parametrize("onesided", [None, False])
@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("normalized", [False, True])
def test_istft_inverts_as_torch(onesided, center, normalized) -> None:
    for n_fft, hop, win, kind in [(16, 4, None, "hann"), (16, 4, 12, "hann"), (10, 3, None, None),
                                  (8, 8, None, "flat")]:
        x = _signal(2, 60)
        window = _window(kind, n_fft if win is None else win)
        spec = torch.stft(x, n_fft, hop, win, window, center=center, normalized=normalized,
                          onesided=onesided, return_complex=True)
        for length in (None, 40, 60, 70):
            kwargs = dict(hop_length=hop, win_length=win, center=center, normalized=normalized,
                          onesided=onesided, length=length)
            try:
                expected = torch.istft(spec, n_fft, window=window, **kwargs)
            except RuntimeError:
                same_error(lambda s=spec, w=window, k=kwargs, n=n_fft: pyaten.istft(
                    from_torch(s), n, window=None if w is None else from_torch(w), **k),
                    lambda s=spec, w=window, k=kwargs, n=n_fft: torch.istft(s, n, window=w, **k))
                continue
            actual = pyaten.istft(from_torch(spec), n_fft,
                                  window=None if window is None else from_torch(window), **kwargs)
            assert_same(actual, expected)


def test_istft_complex_output_and_single_signal() -> None:
    x = _signal(50, dtype=torch.complex128)
    window = torch.hann_window(12, dtype=torch.float64)
    spec = torch.stft(x, 12, 3, window=window, return_complex=True)
    actual, expected = _both("istft", spec, window, 12, 3, return_complex=True)
    assert_same(actual, expected)
    real = torch.stft(x.real, 12, 3, window=window, return_complex=True)
    actual, expected = _both("istft", real, window, 12, 3, length=47)
    assert_same(actual, expected)
    assert_same(pyaten.istft(from_torch(real.conj()), 12, 3, window=from_torch(window)),
                torch.istft(real.conj(), 12, 3, window=window))


def test_methods_and_real_output() -> None:
    x = _signal(3, 30, dtype=torch.float32)
    w = torch.hamming_window(8)
    expected = x.stft(8, window=w, return_complex=False)
    actual = from_torch(x).stft(8, window=from_torch(w), return_complex=False)
    assert_same(actual, expected, strides=True)
    spec = x.stft(8, window=w, return_complex=True)
    assert_same(from_torch(spec).istft(8, window=from_torch(w)), spec.istft(8, window=w))
    # a float32 signal and a float64 window: promoted as PyTorch promotes
    assert_same(pyaten.stft(from_torch(x), 8, window=from_torch(w.double()), return_complex=True),
                torch.stft(x, 8, window=w.double(), return_complex=True))


def test_operator_overloads_match_torch() -> None:
    x = _signal(40)
    w = torch.hann_window(10, dtype=torch.float64)
    for name, args in [("default", (10, 3, None, w, False, None, True, None)),
                       ("center", (10, 3, None, w, True, "constant", False, None, True, None))]:
        ours = [from_torch(a) if isinstance(a, torch.Tensor) else a for a in args]
        assert_same(getattr(pyaten.ops.aten.stft, name)(from_torch(x), *ours),
                    getattr(torch.ops.aten.stft, name)(x, *args))


def test_meta_matches_torch() -> None:
    for kwargs in (dict(return_complex=True), dict(return_complex=False, center=False),
                   dict(return_complex=True, onesided=False, normalized=True)):
        t = torch.stft(torch.empty(2, 50, device="meta"), 16, 4,
                       window=torch.empty(16, device="meta"), **kwargs)
        p = pyaten.stft(pyaten.empty(2, 50, device="meta"), 16, 4,
                        window=pyaten.empty(16, device="meta"), **kwargs)
        assert p.device.type == "meta"
        assert (tuple(p.shape), p.stride(), str(p.dtype).split(".")[-1]) == (
            tuple(t.shape), t.stride(), str(t.dtype).split(".")[-1])


def test_gradients_match_torch() -> None:
    x = _signal(2, 30)
    w = torch.hann_window(8, dtype=torch.float64).requires_grad_(False)

    def ours(a, win):
        return pyaten.stft(a, 8, 3, window=win, return_complex=True).abs()

    def theirs(a, win):
        return torch.stft(a, 8, 3, window=win, return_complex=True).abs()

    check_grads(ours, theirs, [x, w])
    spec = torch.stft(x, 8, 2, window=w, return_complex=True)
    check_grads(lambda s, win: pyaten.istft(s, 8, 2, window=win),
                lambda s, win: torch.istft(s, 8, 2, window=win), [spec, w])


@pytest.mark.parametrize("info", opinfo_grad_cases(frozenset({"stft", "istft"})))
def test_opinfo_samples_and_gradients_match_torch(info) -> None:
    fn = getattr(pyaten, info.name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = list(itertools.islice(info.sample_inputs("cpu", torch.float64), 12))
    compare_samples(fn, info.op, samples)
    check_opinfo_grads(info, second_order=False, limit=4)


def _errors():
    x = lambda m: m.ones(20)  # noqa: E731
    w = lambda m, n=8: m.ones(n)  # noqa: E731

    def spec(m, **kwargs):
        t = torch.stft(torch.arange(20.0), 8, window=torch.hann_window(8), return_complex=True,
                       **kwargs)
        return t if m is torch else from_torch(t)

    return [
        lambda m: m.stft(x(m), 8),
        lambda m: m.stft(x(m).int(), 8, return_complex=True),
        lambda m: m.stft(m.ones(2, 2, 20), 8, return_complex=True),
        lambda m: m.stft(x(m), 30, return_complex=True, center=False),
        lambda m: m.stft(x(m), 0, return_complex=True, center=False),
        lambda m: m.stft(x(m), 8, 0, return_complex=True),
        lambda m: m.stft(x(m), 8, 2, 9, return_complex=True),
        lambda m: m.stft(x(m), 8, 2, 6, window=w(m), return_complex=True),
        lambda m: m.stft(x(m), 8, window=w(m).to(m.complex64), onesided=True,
                         return_complex=True),
        lambda m: m.stft(x(m), 8, window=w(m), return_complex=True, pad_mode="zzz"),
        lambda m: m.stft(x(m).half(), 8, window=w(m).half(), return_complex=True),
        lambda m: m.stft(m.ones(2, 3), 8, window=w(m), return_complex=True),
        lambda m: m.ops.aten.stft.center(x(m), 8, center=True, return_complex=True,
                                         align_to_window=True),
        lambda m: m.istft(spec(m), 8, window=m.tensor(torch.hann_window(8).tolist()),
                          center=False),
        lambda m: m.stft(m.ones(4), 4, 1, 1, center=False, return_complex=True,
                         align_to_window=True),
        lambda m: m.istft(x(m), 8, window=w(m)),
        lambda m: m.istft(spec(m), 10, window=w(m)),
        lambda m: m.istft(spec(m), 8, window=w(m), onesided=False),
        lambda m: m.istft(spec(m), 8, 9, window=w(m)),
        lambda m: m.istft(spec(m), 8, 2, 9, window=w(m)),
        lambda m: m.istft(spec(m), 8, 2, 6, window=w(m)),
        lambda m: m.istft(spec(m)[None, None], 8, window=w(m)),
        lambda m: m.istft(spec(m)[:0], 8, window=w(m)),
        lambda m: m.istft(spec(m)[0], 8, window=w(m)),
        lambda m: m.istft(spec(m), 8, window=w(m), return_complex=True),
        lambda m: m.istft(spec(m), 8, window=w(m).to(m.complex64), onesided=True),
        lambda m: m.istft(spec(m), 8, window=m.zeros(8)),
    ]


@pytest.mark.parametrize("case", range(len(_errors())))
def test_errors_match_torch(case) -> None:
    build = _errors()[case]
    same_error(lambda: build(pyaten), lambda: build(torch))
