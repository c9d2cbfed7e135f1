"""Settings of `pyaten.compile` (PyTorch's `torch._dynamo.config` names)."""

from __future__ import annotations

# Captures kept per compiled function (one per guard set); past it calls run eagerly.
cache_size_limit = 8
recompile_limit = cache_size_limit

# Captured graphs kept on disk across processes (pyaten/_dynamo/graph_cache.py); PyTorch's
# `torch._inductor.config.fx_graph_cache`. `PYATEN_FX_GRAPH_CACHE=0` turns it off too.
fx_graph_cache = True
