"""pyaten.utils: tools built on the public layers (the `explain` call tracer)."""


def __getattr__(name: str) -> object:
    """`pyaten.utils.data` is imported on first use (docs/data.md)."""
    if name == "data":
        import pyaten.utils.data as data

        return data
    raise AttributeError(f"module 'pyaten.utils' has no attribute {name!r}", name=name)
