"""Suite-wide settings.

Hypothesis draws its examples from a seed derived from each test (`derandomize`), so a run of
the suite is reproducible: CI sees the examples a developer saw. Exploring fresh examples is
one flag away: `HYPOTHESIS_PROFILE=explore pytest ...`.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("reproducible", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "reproducible"))

# The graph cache on disk (docs/compile.md) would let a capture written by an earlier run
# stand in for a test's capture run; tests/test_graph_cache.py turns it on where it tests it.
os.environ.setdefault("PYATEN_FX_GRAPH_CACHE", "0")
