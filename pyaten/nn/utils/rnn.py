"""`nn.utils.rnn`: batches of sequences of different lengths, padded (`pad_sequence`) or
packed (`PackedSequence`, `pack_padded_sequence`, `pad_packed_sequence`, `pack_sequence`)
the way the recurrent layers accept them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

from pyaten.core import float16, float32, float64, int64, tensor
from pyaten.core.tensor import Tensor
from pyaten.nn.modules._ops import ops

__all__ = [
    "PackedSequence", "invert_permutation", "pack_padded_sequence", "pack_sequence",
    "pad_packed_sequence", "pad_sequence", "unpack_sequence", "unpad_sequence",
]


def pad_sequence(
    sequences: Tensor | Iterable[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack sequences of shape (L_i, *) into (max L, B, *) (or (B, max L, *) with
    batch_first), filling with `padding_value` after (or, padding_side="left", before) each
    sequence. The result has the first sequence's dtype and trailing shape."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError(
            "pad_sequence: Expected iterable for input sequences, but got arg of type: "
            f"{type(sequences)}"
        )
    sequences = list(sequences)
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    first = sequences[0]
    longest = max(s.size(0) for s in sequences)
    batch = (len(sequences), longest) if batch_first else (longest, len(sequences))
    out = ops.full(
        (*batch, *first.shape[1:]), padding_value, dtype=first.dtype, device=first.device
    )
    for i, seq in enumerate(sequences):
        length = seq.size(0)
        start = longest - length if padding_side == "left" else 0
        steps = slice(start, start + length)
        if batch_first:
            out[i, steps] = seq
        else:
            out[steps, i] = seq
    return out


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedFields):
    """Sequences of a batch interleaved time step by time step: `data` holds step 0 of every
    sequence, then step 1 of those still running, ...; `batch_sizes[t]` counts the sequences
    at step t. `sorted_indices` maps the packed order back to the caller's batch order."""

    def __new__(
        cls,
        data: Any,
        batch_sizes: Tensor | None = None,
        sorted_indices: Tensor | None = None,
        unsorted_indices: Tensor | None = None,
    ) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence((data, batch_sizes), sorted_indices)
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """`data` converted as by `Tensor.to`; self when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self) -> PackedSequence:
        return self.to(device="cpu")

    def double(self) -> PackedSequence:
        return self.to(dtype=float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=float16)

    @property
    def is_cuda(self) -> bool:
        return False


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a 1-D permutation of 0..n-1 (None stays None)."""
    if permutation is None:
        return None
    inverse = np.empty(permutation.numel(), dtype=np.int64)
    inverse[np.asarray(permutation.tolist(), dtype=np.int64)] = np.arange(permutation.numel())
    return tensor(inverse.tolist(), dtype=int64)


def _batch_sizes(lengths: list[int], batch: int) -> list[int]:
    """How many sequences (sorted longest first) are still running at each step."""
    if len(lengths) != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
            f"(batch_size={batch})"
        )
    if lengths and lengths[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in "
            "'lengths' that is <= 0"
        )
    if any(a < b for a, b in zip(lengths, lengths[1:])):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
            "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
            "pack_sequence to sidestep this requirement if you do not need ONNX "
            "exportability."
        )
    return [sum(1 for n in lengths if n > t) for t in range(lengths[0] if lengths else 0)]


def pack_padded_sequence(
    input: Tensor,
    lengths: Tensor | list[int],
    batch_first: bool = False,
    enforce_sorted: bool = True,
) -> PackedSequence:
    """Pack a padded (T, B, *) batch (or (B, T, *) with batch_first) whose sequence b has
    `lengths[b]` steps. With enforce_sorted=False the batch is sorted longest first here."""
    sizes = [int(n) for n in (lengths.tolist() if isinstance(lengths, Tensor) else lengths)]
    sorted_indices = None
    if not enforce_sorted:
        order = sorted(range(len(sizes)), key=lambda b: -sizes[b])
        sizes = [sizes[b] for b in order]
        sorted_indices = tensor(order, dtype=int64)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.shape[0], input.shape[1]
    batch_sizes = _batch_sizes(sizes, batch)
    # one gather: row t * B + b of the (T * B, *) view, for each running (t, b) in step order
    rows = [t * batch + b for t, running in enumerate(batch_sizes) for b in range(running)]
    flat = input.reshape(steps * batch, *input.shape[2:])
    data = flat.index_select(0, tensor(rows, dtype=int64))
    return PackedSequence(data, tensor(batch_sizes, dtype=int64), sorted_indices)


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """The inverse of `pack_padded_sequence`: the padded batch (in the caller's original
    order) and each sequence's length as an int64 tensor."""
    batch_sizes = [int(n) for n in sequence.batch_sizes.tolist()]
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{steps}"
            )
        steps = total_length
    data = sequence.data
    batch = batch_sizes[0]
    # the padded (T, B) grid as one gather from data plus a last row of padding
    padding = ops.full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    source = ops.cat([data, padding], 0)
    pad_row = data.shape[0]
    rows = np.full((steps, batch), pad_row, dtype=np.int64)
    offset = 0
    for t, running in enumerate(batch_sizes):
        rows[t, :running] = np.arange(offset, offset + running)
        offset += running
    if batch_first:
        rows = rows.T
    padded = source.index_select(0, tensor(rows.reshape(-1).tolist(), dtype=int64))
    padded = padded.reshape(*rows.shape, *data.shape[1:])
    lengths = [sum(1 for running in batch_sizes if running > b) for b in range(batch)]
    lengths_t = tensor(lengths, dtype=int64)
    if sequence.unsorted_indices is not None:
        unsorted = sequence.unsorted_indices
        padded = padded.index_select(0 if batch_first else 1, unsorted)
        lengths_t = lengths_t.index_select(0, unsorted)
    return padded, lengths_t


def unpad_sequence(
    padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False
) -> list[Tensor]:
    """The sequences of a padded batch, each cut to its length."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[: int(n)] for seq, n in zip(padded_sequences, lengths.tolist())]


def pack_sequence(sequences: list[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of (L_i, *) sequences: `pad_sequence` then `pack_padded_sequence`."""
    lengths = [s.size(0) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a PackedSequence holds, in the caller's original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
