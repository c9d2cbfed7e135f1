"""pyaten: PyTorch's operator system, rebuilt in Python."""

__version__ = "0.1.0"

# --- dispatcher (issue 4): keys, tables, Library, dump_table / explain / trace
import pyaten.dispatch as dispatch  # noqa: E402,F401
import pyaten.library as library  # noqa: E402,F401

# --- tensor core (issue 5): Tensor, dtypes, devices, promotion, creation, interop
from pyaten.core import *  # noqa: E402,F401,F403


# --- generated API (issue 6): pyaten.add, Tensor.add, operators, pyaten.ops handles
def _load_generated_api() -> None:
    import pyaten.ops
    from pyaten.native.loader import load

    globals().update(load().functions)
    globals()["ops"] = pyaten.ops


_load_generated_api()

# --- operators (engineer F): PyTorch's hand-bound Tensor.to / .cpu() / .float() ...
from pyaten.native.kernels.copy import attach_tensor_conversions as _attach_conversions  # noqa: E402

_attach_conversions()

# --- explain (issue 13): `with pyaten.explain() as ex: ...; print(ex)`
from pyaten.utils.explain import explain  # noqa: E402,F401
