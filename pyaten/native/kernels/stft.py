"""`stft` and `istft`: `CompositeImplicitAutograd` over the FFT primitives, as PyTorch writes
them (aten/src/ATen/native/SpectralOps.cpp), so their gradients and Meta results come from
the operators they call.

`stft.center` pads the signal by n_fft // 2 on both sides (`pad`, with `pad_mode`) and calls
`stft`, which cuts the (batch, length) signal into a strided view of frames
(batch, n_frames, n_fft) with `unfold` (PyTorch's `as_strided`: the same view), multiplies it
by the window (zero-padded to n_fft, centred) and transforms the last dim with `_fft_r2c`
(real input, one-sided by default) or `_fft_c2c`; the result is (batch, freq, n_frames).

`istft` inverts it by overlap-add: `_fft_c2r` (or `_fft_c2c` with return_complex) of every
frame, times the window, summed into the signal with `unfold_backward`; the same sum of the
squared window (the envelope) divides it, after PyTorch's check that the envelope is nowhere
below 1e-11 (the "window overlap add min" error: the frames do not cover the signal).

The argument errors repeat the call as PyTorch prints it (`stft(torch.FloatTensor[28],
n_fft=8, ...) : expected ...`), so they are built by `_describe_stft` / `_describe_istft`.
"""

from __future__ import annotations

import warnings

from pyaten.core.tensor import Tensor
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native

_WARNED: set[str] = set()  # PyTorch's TORCH_WARN_ONCE: each warning once per process

_STFT_NO_WINDOW = (
    "A window was not provided. A rectangular window will be applied,which is known to cause "
    "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
    "recommended to reduce spectral leakage.To suppress this warning and use a rectangular "
    "window, explicitly set `window=torch.ones(n_fft, device=<device>)`."
)
_ISTFT_NO_WINDOW = (
    "A window was not provided. A rectangular window will be applied.Please provide the same "
    "window used by stft to make the inversion lossless.To suppress this warning and use a "
    "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`."
)
_REAL_DEPRECATED = (
    "stft with return_complex=False is deprecated. In a future pytorch release, stft will "
    "return complex tensors for all inputs, and return_complex=False will raise an error.\n"
    "Note: you can still call torch.view_as_real on the complex output to recover the old "
    "return format."
)
_LENGTH_PADDED = (
    "The length of signal is shorter than the length parameter. Result is being padded with "
    "zeros in the tail. Please check your center and hop_length settings."
)


def _warn_once(message: str) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, UserWarning, stacklevel=3)


def _type_text(t: Tensor) -> str:
    """ATen's `Tensor::toString()`: the legacy name where one exists (`torch.FloatTensor`),
    else the backend type (`CPUComplexFloatType`)."""
    if t._dtype.is_complex:
        return f"CPU{t._dtype.scalar_name}Type"
    return f"torch.{t._dtype.scalar_name}Tensor"


def _shape(t: Tensor) -> str:
    return "[" + ", ".join(str(s) for s in t._sizes) + "]"


def _flag(value) -> str:
    return "None" if value is None else str(int(value))


def _window_text(window: Tensor | None) -> str:
    return "None" if window is None else f"{_type_text(window)}{{{_shape(window)}}}"


def _describe_stft(self, n_fft, hop, win, window, normalized, onesided, return_complex,
                   align) -> str:
    return (f"stft({_type_text(self)}{_shape(self)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={_window_text(window)}, normalized={int(normalized)}, "
            f"onesided={_flag(onesided)}, return_complex={_flag(return_complex)}, "
            f"align_to_window={_flag(align)}) ")


def _describe_istft(self, n_fft, hop, win, window, center, normalized, onesided, length,
                    return_complex) -> str:
    return (f"istft({_type_text(self)}{_shape(self)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={_window_text(window)}, center={int(center)}, "
            f"normalized={int(normalized)}, onesided={_flag(onesided)}, "
            f"length={'None' if length is None else length}, "
            f"return_complex={int(return_complex)}) ")


def _same_device(op: str, self: Tensor, window: Tensor | None) -> None:
    if window is not None and window._device != self._device:
        raise RuntimeError(
            f"{op} input and window must be on the same device but got self on "
            f"{self._device} and window on {window._device}")


# --- stft -------------------------------------------------------------------------------------


def _check_aligned_frames(signal: Tensor, n_frames: int, n_fft: int, hop: int) -> None:
    """With align_to_window PyTorch counts the frames of the unpadded signal; when n_fft -
    win_length is odd the last frame can end one element past the padded signal, and its
    `as_strided` view then fails. The same error here (the padded signal is contiguous)."""
    batch, padded = signal._sizes
    if (n_frames - 1) * hop + n_fft <= padded:
        return
    item = signal.element_size()
    need = item * (1 + (batch - 1) * padded + (n_frames - 1) * hop + n_fft - 1)
    raise RuntimeError(
        f"setStorage: sizes [{batch}, {n_frames}, {n_fft}], strides [{padded}, {hop}, 1], "
        f"storage offset 0, and itemsize {item} requiring a storage size of {need} are out of "
        f"bounds for storage of size {item * batch * padded}")



@native
def stft(self: Tensor, n_fft: int, hop_length=None, win_length=None, window=None,
         normalized: bool = False, onesided=None, return_complex=None,
         align_to_window=None) -> Tensor:
    a = _aten()
    if window is None:
        _warn_once(_STFT_NO_WINDOW)
    _same_device("stft", self, window)
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    complex_out = return_complex
    if complex_out is None:
        complex_out = self._dtype.is_complex or (window is not None and window._dtype.is_complex)
    if not complex_out:
        if return_complex is None:
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and will "
                "further require that return_complex=True in a future PyTorch release.")
        _warn_once(_REAL_DEPRECATED)

    def error(text: str) -> RuntimeError:
        return RuntimeError(_describe_stft(self, n_fft, hop, win, window, normalized, onesided,
                                           return_complex, align_to_window) + text)

    if not (self._dtype.is_floating_point or self._dtype.is_complex):
        raise error(": expected a tensor of floating point or complex values")
    if self.dim() not in (1, 2):
        raise error(": expected a 1D or 2D tensor")
    signal = a.unsqueeze.default(self, 0) if self.dim() == 1 else self
    length = signal._sizes[1]
    if n_fft <= 0 or n_fft > length:
        # (PyTorch's message prints win_length after "n_fft=")
        raise error(f": expected 0 < n_fft < {length}, but got n_fft={win}")
    if hop <= 0:
        raise error(f": expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise error(f": expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window._sizes[0] != win):
        raise error(f": expected a 1D window tensor of size equal to win_length={win}, but got "
                    f"window with size {_shape(window)}")
    full_window = window
    if win < n_fft:
        left = (n_fft - win) // 2
        if window is None:  # ATen: ones of the input's dtype in the middle of n_fft
            window = a.ones.default([win], dtype=self._dtype, device=self._device)
        full_window = a.constant_pad_nd.default(window, [left, n_fft - win - left], 0)
        if align_to_window:
            # frames start where the window starts: the signal padded by the window's offset
            signal = a.constant_pad_nd.default(signal, [left, left], 0)
            _check_aligned_frames(signal, 1 + (length - win) // hop, n_fft, hop)
    frames = a.unfold.default(signal, 1, n_fft, hop)  # (batch, n_frames, n_fft), a view
    if full_window is not None:
        frames = a.mul.Tensor(frames, full_window)
    complex_fft = frames._dtype.is_complex
    one_sided = (not complex_fft) if onesided is None else onesided
    norm = 1 if normalized else 0
    if complex_fft:
        if one_sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = a._fft_c2c.default(frames, [2], norm, True)
    else:
        out = a._fft_r2c.default(frames, [2], norm, one_sided)
    out = a.transpose.int(out, 1, 2)
    if self.dim() == 1:
        out = a.squeeze.dim(out, 0)
    return out if complex_out else a.view_as_real.default(out)


@native
def stft_center(self: Tensor, n_fft: int, hop_length=None, win_length=None, window=None,
                center: bool = True, pad_mode: str = "reflect", normalized: bool = False,
                onesided=None, return_complex=None, align_to_window=None) -> Tensor:
    a = _aten()
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false.")
    signal = self
    if center:
        # the signal viewed as at least 3-d (what `pad` wants), padded on its last dim
        sizes = list(self._sizes)
        extra = max(3, len(sizes)) - len(sizes)
        half = n_fft // 2
        padded = a.pad.default(a.view.default(self, [1] * extra + sizes), [half, half],
                               pad_mode, None)
        signal = a.view.default(padded, list(padded._sizes[extra:]))
    return a.stft.default(signal, n_fft, hop_length, win_length, window, normalized, onesided,
                          return_complex, align_to_window)


# --- istft ------------------------------------------------------------------------------------


@native
def istft(self: Tensor, n_fft: int, hop_length=None, win_length=None, window=None,
          center: bool = True, normalized: bool = False, onesided=None, length=None,
          return_complex: bool = False) -> Tensor:
    a = _aten()
    if window is None:
        _warn_once(_ISTFT_NO_WINDOW)
    _same_device("istft", self, window)
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not self._dtype.is_complex:
        raise RuntimeError(
            "istft requires a complex-valued input tensor matching the output from stft with "
            "return_complex=True.")

    def error(text: str) -> RuntimeError:
        return RuntimeError(_describe_istft(self, n_fft, hop, win, window, center, normalized,
                                            onesided, length, return_complex) + text)

    spectrum = a.resolve_conj.default(self)
    dims = self.dim() + 1  # PyTorch counts the dims of view_as_real(self)
    if self.dim() < 2:
        a.view_as_real.default(spectrum).size(-3)  # PyTorch reads that size: its IndexError
    n_frames = self.size(-1)
    fft_size = self.size(-2)
    if self.numel() == 0:
        raise error(": input tensor cannot be empty.")
    if dims not in (3, 4):
        raise error(f": expected a tensor with 3 or 4 dimensions, but got {dims}")
    one_sided = fft_size != n_fft if onesided is None else onesided
    if one_sided and n_fft // 2 + 1 != fft_size:
        raise error(": expected the frequency dimension (3rd to the last) of the input tensor "
                    f"to match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not one_sided and n_fft != fft_size:
        raise error(": expected the frequency dimension (3rd to the last) of the input tensor "
                    f"to match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop <= win:
        raise error(": expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise error(": expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window._sizes[0] != win):
        raise error(": Invalid window shape. window has to be 1D and length of `win_length`")
    full_window = window
    if full_window is None:
        full_window = a.ones.default([win], dtype=self._dtype.to_real(), device=self._device)
    if win != n_fft:
        left = (n_fft - win) // 2
        full_window = a.constant_pad_nd.default(full_window, [left, n_fft - win - left], 0)
    if dims == 3:
        spectrum = a.unsqueeze.default(spectrum, 0)
    spectrum = a.transpose.int(spectrum, 1, 2)  # (channel, n_frames, fft_size)
    norm = 1 if normalized else 2
    if return_complex:
        if one_sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = a._fft_c2c.default(spectrum, [2], norm, False)
    else:
        if window is not None and window._dtype.is_complex:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not one_sided:
            spectrum = a.slice.Tensor(spectrum, -1, 0, n_fft // 2 + 1, 1)
        frames = a._fft_c2r.default(spectrum, [2], norm, n_fft)
    expected = n_fft + hop * (n_frames - 1)
    frames = a.mul.Tensor(frames, a.view.default(full_window, [1, 1, n_fft]))
    signal = a.unfold_backward.default(frames, [frames._sizes[0], expected], 1, n_fft, hop)
    squared = a.expand.default(a.pow.Tensor_Scalar(full_window, 2), [1, n_frames, n_fft], False)
    envelope = a.unfold_backward.default(squared, [1, expected], 1, n_fft, hop)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = -(n_fft // 2) if center else expected
    signal = a.slice.Tensor(signal, 1, start, end, 1)
    envelope = a.slice.Tensor(envelope, 1, start, end, 1)
    if envelope._device.type != "meta":
        lowest = a.lt.Scalar(a.min.default(a.abs.default(envelope)), 1e-11)
        if lowest.item():
            raise error("window overlap add min: 1\n[ CPUBoolType{} ]")
    signal = a.div.Tensor(signal, envelope)
    if dims == 3:
        signal = a.squeeze.dim(signal, 0)
    if end > expected:
        _warn_once(_LENGTH_PADDED)
        signal = a.constant_pad_nd.default(signal, [0, end - expected], 0)
    return signal
