"""pyaten._inductor: the default backend of `pyaten.compile` (docs/compile.md).

A captured graph's pointwise chains become generated loops (scheduler.py groups them,
lowering.py writes each operator as a scalar expression; cloops.py writes the graph's loops,
and its max pools, in C and caches the shared library on disk where a C compiler is found,
codegen.py writes Numba loops otherwise); every other node calls its kernel directly, and
loop outputs reuse pooled buffers (runner.py). With neither, the graph runs its kernels
directly, unfused.
"""

from .codegen import cache_dir, numba_available
from .runner import CompiledGraph, compile_graph

__all__ = ["CompiledGraph", "cache_dir", "compile_graph", "numba_available"]
