"""Two NumPy-level speed-ups and their contracts: `family.select` is `np.where` bit for bit,
and `keep_freed_memory` (Note: freed memory kept) honours its opt-out."""

from __future__ import annotations

import ctypes.util
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyaten.native import family

DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8, np.int32,
          np.int64, np.uint8, np.bool_, np.complex64]


@settings(max_examples=60, deadline=None)
@given(dtype=st.sampled_from(DTYPES), size=st.integers(0, 9000), seed=st.integers(0, 2**16),
       b_scalar=st.booleans(), specials=st.booleans())
def test_select_equals_where_bit_for_bit(dtype, size, seed, b_scalar, specials):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(size) * 4).astype(dtype)
    b = np.zeros((), dtype) if b_scalar else (rng.standard_normal(size) * 4).astype(dtype)
    if specials and np.dtype(dtype).kind == "f" and size > 3:
        a[:4] = [np.nan, np.inf, -np.inf, -0.0]
    condition = rng.random(size) < 0.5
    ours, theirs = family.select(condition, a, b), np.where(condition, a, b)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert ours.tobytes() == theirs.tobytes()


def test_select_broadcasts_the_condition():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 64, 16)).astype(np.float32)
    condition = rng.random((8, 1, 16)) < 0.5
    assert family.select(condition, a, np.float32(2)).tobytes() == \
        np.where(condition, a, np.float32(2)).tobytes()


@pytest.mark.skipif(not sys.platform.startswith("linux") or not ctypes.util.find_library("c"),
                    reason="glibc's mallopt")
@pytest.mark.parametrize("setting, expected", [("1", "True"), ("0", "False")])
def test_keep_freed_memory_and_its_opt_out(setting, expected):
    code = "from pyaten.core.memory import keep_freed_memory; print(keep_freed_memory())"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, env={"PYATEN_KEEP_FREED_MEMORY": setting}, timeout=600)
    assert result.stdout.strip() == expected
