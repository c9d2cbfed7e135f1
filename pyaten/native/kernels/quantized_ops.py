"""Operators on quantized tensors (filled in below)."""
