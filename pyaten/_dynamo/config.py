"""Settings of `pyaten.compile` (PyTorch's `torch._dynamo.config` names)."""

from __future__ import annotations

import os

# Captures kept per compiled function (one per guard set); past it calls run eagerly.
cache_size_limit = 8
recompile_limit = cache_size_limit

# Captured graphs kept on disk across processes (pyaten/_dynamo/graph_cache.py); PyTorch's
# `torch._inductor.config.fx_graph_cache`, its default from `PYATEN_FX_GRAPH_CACHE` ("0": off)
# as torch's from `TORCHINDUCTOR_FX_GRAPH_CACHE`.
fx_graph_cache = os.environ.get("PYATEN_FX_GRAPH_CACHE", "1") != "0"
