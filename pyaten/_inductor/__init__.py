"""pyaten._inductor: the default backend of `pyaten.compile` (docs/compile.md).

A captured graph's pointwise chains become generated Numba loops (scheduler.py groups them,
lowering.py writes each operator as a scalar expression, codegen.py writes and caches the
loop); every other node calls its kernel directly, and loop outputs reuse pooled buffers
(runner.py). Without Numba the graph runs its kernels directly, unfused.
"""

from .codegen import cache_dir, numba_available
from .runner import CompiledGraph, compile_graph

__all__ = ["CompiledGraph", "cache_dir", "compile_graph", "numba_available"]
