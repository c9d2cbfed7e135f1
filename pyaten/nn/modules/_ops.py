"""The generated operator bindings the modules call (`ops.empty`, `ops.linalg.qr`)."""

from pyaten.nn._bindings import ops

__all__ = ["ops"]
