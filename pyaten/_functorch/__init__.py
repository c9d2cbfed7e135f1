"""pyaten._functorch: torch._functorch's introspection at its paths (docs/func.md, "Levels").

`levels` holds the one level stack every transform is numbered on; `pyfunctorch` its
interpreters (`retrieve_current_functorch_interpreter`); `_C_functorch` the functions
torch exposes as `torch._C._functorch` (also reachable as `pyaten._C._functorch`).
"""

# the transforms first: levels.py stands on their vmap stack, and they import levels.py
import pyaten.func  # noqa: E402, F401
