"""`nn.utils.rnn.pad_sequence`: a batch from sequences of different lengths."""

from __future__ import annotations

from collections.abc import Iterable

from pyaten.core.tensor import Tensor
from pyaten.nn.modules._ops import ops

__all__ = ["pad_sequence"]


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
