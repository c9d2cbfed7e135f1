"""pyaten.utils: tools built on the public layers (the `explain` call tracer)."""
