"""Tensor subclasses and modes at PyTorch's `torch._subclasses` paths: `fake_tensor`."""
