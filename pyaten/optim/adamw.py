"""`pyaten.optim.adamw.AdamW`, where PyTorch keeps it (the class lives beside Adam)."""

from pyaten.optim.adam import AdamW

__all__ = ["AdamW"]
