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


# --- libstdc++'s std::sort, std::nth_element and std::partial_sort, step for step ----------------
#
# Note: ties in sort and topk. PyTorch's CPU `sort(stable=False)` runs libstdc++'s `std::sort`
# (introsort: median-of-three quicksort down to slices of 16, heapsort past a depth of
# 2*log2(n), then one insertion sort) on (value, index) pairs compared by value only, NaN
# largest; `topk` runs `std::partial_sort` when 64*k <= n, else `std::nth_element` and, when
# sorted, `std::sort` of the first k-1. Which index ends where among equal values follows from
# the algorithm's swaps, so rows with ties replay it here (`stl_sort`, `stl_topk`); rows whose
# values are all distinct have one answer, which NumPy finds faster. The functions below work
# on lists or NumPy arrays, and are compiled with Numba when it is installed.

_JITTED: list[str] = []  # compiled together on first use (numba's import costs ~1 s)
_COMPILED: list[bool] = []


def _jit(function):
    _JITTED.append(function.__name__)
    return function


def _compile() -> None:
    """Replace each loop below by its Numba-compiled form, once (they call one another by
    their global names, so all are swapped before the first call); without Numba they stay
    Python."""
    if _COMPILED:
        return
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is an optional dependency
        _COMPILED.append(False)
        return
    module = globals()
    for name in _JITTED:
        module[name] = numba.njit(cache=True, nogil=True)(module[name])
    _COMPILED.append(True)


@_jit
def _before(a, b, desc):
    """PyTorch's comparator: a sorts before b (NaN is the largest value)."""
    if desc:
        return (a != a and b == b) or a > b
    return (a == a and b != b) or a < b


@_jit
def _swap(keys, idx, i, j):
    keys[i], keys[j] = keys[j], keys[i]
    idx[i], idx[j] = idx[j], idx[i]


@_jit
def _linear_insert(keys, idx, last, desc):
    key, val = keys[last], idx[last]
    nxt = last - 1
    while _before(key, keys[nxt], desc):
        keys[last], idx[last] = keys[nxt], idx[nxt]
        last = nxt
        nxt -= 1
    keys[last], idx[last] = key, val


@_jit
def _insertion_sort(keys, idx, first, last, desc):
    for i in range(first + 1, last):
        if _before(keys[i], keys[first], desc):
            key, val = keys[i], idx[i]
            for j in range(i, first, -1):
                keys[j], idx[j] = keys[j - 1], idx[j - 1]
            keys[first], idx[first] = key, val
        else:
            _linear_insert(keys, idx, i, desc)


@_jit
def _partition_pivot(keys, idx, first, last, desc):
    """Median of (first+1, middle, last-1) moved to `first`, then Hoare's unguarded partition
    of [first+1, last) around it; returns the cut."""
    a, b, c = first + 1, first + (last - first) // 2, last - 1
    if _before(keys[a], keys[b], desc):
        if _before(keys[b], keys[c], desc):
            _swap(keys, idx, first, b)
        elif _before(keys[a], keys[c], desc):
            _swap(keys, idx, first, c)
        else:
            _swap(keys, idx, first, a)
    elif _before(keys[a], keys[c], desc):
        _swap(keys, idx, first, a)
    elif _before(keys[b], keys[c], desc):
        _swap(keys, idx, first, c)
    else:
        _swap(keys, idx, first, b)
    lo, hi = first + 1, last
    while True:
        while _before(keys[lo], keys[first], desc):
            lo += 1
        hi -= 1
        while _before(keys[first], keys[hi], desc):
            hi -= 1
        if not lo < hi:
            return lo
        _swap(keys, idx, lo, hi)
        lo += 1


@_jit
def _adjust_heap(keys, idx, first, hole, length, key, val, desc):
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _before(keys[first + child], keys[first + child - 1], desc):
            child -= 1
        keys[first + hole], idx[first + hole] = keys[first + child], idx[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        keys[first + hole], idx[first + hole] = keys[first + child - 1], idx[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and _before(keys[first + parent], key, desc):
        keys[first + hole], idx[first + hole] = keys[first + parent], idx[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    keys[first + hole], idx[first + hole] = key, val


@_jit
def _pop_heap(keys, idx, first, last, result, desc):
    key, val = keys[result], idx[result]
    keys[result], idx[result] = keys[first], idx[first]
    _adjust_heap(keys, idx, first, 0, last - first, key, val, desc)


@_jit
def _heap_select(keys, idx, first, middle, last, desc):
    length = middle - first
    if length >= 2:
        parent = (length - 2) // 2
        while True:
            _adjust_heap(keys, idx, first, parent, length, keys[first + parent],
                         idx[first + parent], desc)
            if parent == 0:
                break
            parent -= 1
    for i in range(middle, last):
        if _before(keys[i], keys[first], desc):
            _pop_heap(keys, idx, first, middle, i, desc)


@_jit
def _sort_heap(keys, idx, first, last, desc):
    while last - first > 1:
        last -= 1
        _pop_heap(keys, idx, first, last, last, desc)


@_jit
def _log2(n):
    depth = 0
    while n > 1:
        n >>= 1
        depth += 1
    return depth


@_jit
def _stl_sort(keys, idx, first, last, desc):
    """std::sort of keys[first:last] (idx moved alongside)."""
    if last - first < 2:
        return
    # the recursion of __introsort_loop as a stack: its slices are disjoint, so their order
    # of processing does not change the result
    stack = [(first, last, 2 * _log2(last - first))]
    while len(stack) > 0:
        lo, hi, depth = stack.pop()
        while hi - lo > 16:
            if depth == 0:
                _heap_select(keys, idx, lo, hi, hi, desc)
                _sort_heap(keys, idx, lo, hi, desc)
                break
            depth -= 1
            cut = _partition_pivot(keys, idx, lo, hi, desc)
            stack.append((cut, hi, depth))
            hi = cut
    if last - first > 16:
        _insertion_sort(keys, idx, first, first + 16, desc)
        for i in range(first + 16, last):
            _linear_insert(keys, idx, i, desc)
    else:
        _insertion_sort(keys, idx, first, last, desc)


@_jit
def _stl_nth_element(keys, idx, first, nth, last, desc):
    if first == last or nth == last:
        return
    depth = 2 * _log2(last - first)
    while last - first > 3:
        if depth == 0:
            _heap_select(keys, idx, first, nth + 1, last, desc)
            _swap(keys, idx, first, nth)
            return
        depth -= 1
        cut = _partition_pivot(keys, idx, first, last, desc)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(keys, idx, first, last, desc)


@_jit
def _stl_topk(keys, k, largest, sorted_):  # noqa: A002
    """The indices ATen's topk reports for one row (`keys` is reordered in place)."""
    n = len(keys)
    idx = np.arange(n)
    if k * 64 <= n:
        _heap_select(keys, idx, 0, k, n, largest)
        _sort_heap(keys, idx, 0, k, largest)
    else:
        _stl_nth_element(keys, idx, 0, k - 1, n, largest)
        if sorted_:
            _stl_sort(keys, idx, 0, k - 1, largest)
    return idx[:k].copy()


# Elements replayed in Python before the loops are compiled: a program that meets a few small
# tied rows never pays Numba's import and compilation (about 2 s, once per process).
_PYTHON_BUDGET = [20_000]


def _maybe_compile(size: int) -> None:
    if _COMPILED:
        return
    if _PYTHON_BUDGET[0] >= size:
        _PYTHON_BUDGET[0] -= size
        return
    _compile()


def stl_sort(keys: np.ndarray, idx: np.ndarray, first: int, last: int, desc: bool) -> None:
    """std::sort of keys[first:last] with `idx` moved alongside (PyTorch's comparator)."""
    _maybe_compile(last - first)
    _stl_sort(keys, idx, first, last, desc)


def stl_topk(keys: np.ndarray, k: int, largest: bool, sorted_: bool) -> np.ndarray:
    """The indices ATen's topk reports for one row (`keys` is reordered in place)."""
    _maybe_compile(len(keys))
    return _stl_topk(keys, k, largest, sorted_)


def has_ties(ordered_rows: np.ndarray) -> np.ndarray:
    """Which rows of an already sorted array hold two equal values (two NaNs count as equal)."""
    if ordered_rows.shape[-1] < 2:
        return np.zeros(ordered_rows.shape[:-1], dtype=bool)
    same = ordered_rows[..., 1:] == ordered_rows[..., :-1]
    if ordered_rows.dtype.kind == "f":
        same |= np.isnan(ordered_rows[..., 1:]) & np.isnan(ordered_rows[..., :-1])
    return same.any(axis=-1)
