"""nn.functional functions with a parameter named as themselves (`pad(input, pad)`,
`threshold(input, threshold, value)`) hand themselves to `__torch_function__` handlers, not
the argument, as PyTorch's do; F.pad under functionalize with a mode active, against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pyaten
from pyaten.overrides import TorchFunctionMode


def _recording_mode(base):
    class Record(base):
        def __init__(self):
            super().__init__()
            self.funcs = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.funcs.append(func)
            return func(*args, **(kwargs or {}))

    return Record()


@pytest.mark.parametrize(("name", "args"), [
    ("pad", ((1, 2),)),
    ("threshold", (0.5, -1.0)),
])
def test_handlers_get_the_function_as_torch(name, args):
    array = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    results = []
    for P, mode in ((torch, _recording_mode(torch.overrides.TorchFunctionMode)),
                    (pyaten, _recording_mode(TorchFunctionMode))):
        fn = getattr(P.nn.functional, name)
        x = P.tensor(array.copy())
        with mode:
            out = fn(x, *args)
        assert mode.funcs[-1] is fn
        results.append(out.numpy())
    np.testing.assert_allclose(results[1], results[0])


@pytest.mark.parametrize("mode_name", ["constant", "reflect", "replicate", "circular"])
def test_pad_under_functionalize_with_a_mode_matches_torch(mode_name):
    array = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    results = []
    for P, mode in ((torch, _recording_mode(torch.overrides.TorchFunctionMode)),
                    (pyaten, _recording_mode(TorchFunctionMode))):
        def f(x, P=P):
            y = x * 1
            y.add_(1)
            return P.nn.functional.pad(y, (1, 2), mode=mode_name)

        with mode:
            out = P.func.functionalize(f)(P.tensor(array.copy()))
        results.append((out.shape, out.numpy()))
    assert tuple(results[1][0]) == tuple(results[0][0])
    np.testing.assert_allclose(results[1][1], results[0][1])
