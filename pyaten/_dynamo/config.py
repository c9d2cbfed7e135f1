"""Settings of `pyaten.compile` (PyTorch's `torch._dynamo.config` names)."""

from __future__ import annotations

# Captures kept per compiled function (one per guard set); past it calls run eagerly.
cache_size_limit = 8
recompile_limit = cache_size_limit
