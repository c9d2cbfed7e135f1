"""`pyaten.utils.tensorboard.SummaryWriter`: TensorBoard event files, as PyTorch writes them
(scalars, histograms, images, text, the model's graph). Needs the `tensorboard` package
(`pip install tensorboard`), as PyTorch's does; docs/profiler.md, "TensorBoard"."""

try:
    import tensorboard  # noqa: F401
except ImportError as error:  # the message PyTorch gives
    raise ImportError(
        "TensorBoard logging requires TensorBoard version 1.15 or above"
    ) from error

from pyaten.utils.tensorboard.writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "SummaryWriter"]
