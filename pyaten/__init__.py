"""pyaten: PyTorch's operator system, rebuilt in Python."""

__version__ = "0.1.0"
