"""Which index `kthvalue` reports among equal values: PyTorch's CPU quickselect, step for step.

Note: ties in kthvalue. Among several elements equal to the k-th smallest, PyTorch's CPU
kernel reports the one its quickselect (Sedgewick's partitioning with a median-of-three pivot,
from TH; NaN sorts above every number) leaves at position k-1. That position depends on the
algorithm's swaps, not on a rule such as "first occurrence", so it is replayed here. A row whose
k-th value occurs once needs no replay: NumPy's partition finds the value and its only index.
"""

from __future__ import annotations

import math

import numpy as np


def _greater_or_nan(x: float, y: float) -> bool:
    return (math.isnan(x) and not math.isnan(y)) or x > y


def quick_select_index(row: list, k: int) -> int:
    """The original index of what PyTorch's quickselect leaves at position `k` of `row`."""
    values = list(row)
    order = list(range(len(values)))
    gt = _greater_or_nan

    def swap(a: int, b: int) -> None:
        values[a], values[b] = values[b], values[a]
        order[a], order[b] = order[b], order[a]

    left, right = 0, len(values) - 1
    while right > left:
        if right == left + 1:
            if gt(values[left], values[right]):
                swap(left, right)
            break
        swap((left + right) >> 1, left + 1)  # median of three: values[left] is the pivot
        if gt(values[left + 1], values[right]):
            swap(left + 1, right)
        if gt(values[left], values[right]):
            swap(left, right)
        if gt(values[left + 1], values[left]):
            swap(left + 1, left)
        i, j, pivot = left + 1, right, values[left]
        while True:
            i += 1
            while gt(pivot, values[i]):
                i += 1
            j -= 1
            while gt(values[j], pivot):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(left, j)
        if j <= k:
            left = i
        if j >= k:
            right = j - 1
    return order[k]


def kth_smallest(rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The `k`-th smallest (0-based) of each row of `rows` (last axis) and the index PyTorch
    reports for it."""
    flat = rows.reshape(-1, rows.shape[-1])
    keyed = flat.astype(np.float64) if flat.dtype == np.bool_ else flat
    values = np.empty(flat.shape[0], flat.dtype)
    indices = np.empty(flat.shape[0], np.int64)
    kth = np.partition(keyed, k, axis=-1)[:, k] if flat.size else np.empty(0, keyed.dtype)
    for r in range(flat.shape[0]):
        v = kth[r]
        row = keyed[r]
        matches = np.flatnonzero(np.isnan(row) if _is_nan(v) else row == v)
        if len(matches) == 1:
            indices[r] = matches[0]
        else:
            indices[r] = quick_select_index(row.tolist(), k)
        values[r] = flat[r, indices[r]]
    return values.reshape(rows.shape[:-1]), indices.reshape(rows.shape[:-1])


def _is_nan(v: object) -> bool:
    return isinstance(v, (float, np.floating)) and math.isnan(v)
