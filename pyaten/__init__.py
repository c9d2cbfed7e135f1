"""pyaten: PyTorch's operator system, rebuilt in Python."""

__version__ = "0.1.0"

# --- tensor core (issue 5): Tensor, dtypes, devices, promotion, creation, interop
from pyaten.core import *  # noqa: E402,F401,F403
