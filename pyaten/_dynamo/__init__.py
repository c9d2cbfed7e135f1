"""pyaten._dynamo: `pyaten.compile`'s capture, guards, cache and report (PyTorch's
`torch._dynamo` names: `reset`, `explain`, `list_backends`, `config`); docs/compile.md."""

from . import config
from .backends import list_backends
from .capture import is_compiling
from .eval_frame import (
    CompiledFunction,
    OptimizedModule,
    compile,
    compile_report,
    mark_dynamic,
    maybe_mark_dynamic,
    reset,
)
from .exc import InvalidBackend, Unsupported
from .explain import ExplainOutput, explain

__all__ = ["CompiledFunction", "ExplainOutput", "InvalidBackend", "OptimizedModule",
           "Unsupported", "compile",
           "compile_report", "config", "explain", "is_compiling", "list_backends", "mark_dynamic",
           "maybe_mark_dynamic", "reset"]
