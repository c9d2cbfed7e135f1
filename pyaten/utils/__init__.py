"""pyaten.utils: tools built on the public layers (the `explain` call tracer)."""


def __getattr__(name: str) -> object:
    """`pyaten.utils.data` (docs/data.md) and `pyaten.utils.checkpoint`
    (docs/checkpointing.md) are imported on first use."""
    if name == "data":
        import pyaten.utils.data as data

        return data
    if name == "checkpoint":
        import pyaten.utils.checkpoint as checkpoint

        return checkpoint
    raise AttributeError(f"module 'pyaten.utils' has no attribute {name!r}", name=name)
